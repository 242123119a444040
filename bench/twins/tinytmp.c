/* tinytmp: a tiny temporary, made and freed at once. Each request
 * formats 20-420 numbers into a line (the way Rust's `s.push_str(&n.to_string())`
 * or C++'s `line += std::to_string(n)` do): every number is written into
 * a block of its own length (1-3 bytes), copied into the line and freed
 * before the next is made, so one block is live at a time.
 * 40,000 requests by default: 8.8 million blocks, 17.6 million events.
 * A pool should gain NOTHING worth having: glibc's per-thread cache
 * (tcache) hands the same chunk back at once, and vpool's private slot
 * does the same at about the same cost; the replay measures the pool
 * about 2 ns a request cheaper (3-4 % of this run), which is why advise
 * wants 5 ns a call avoided before it says pool
 * (report/advise_verdict.c, MIN_SAVE_PER_CALL).
 * Twin: num_new takes the number's block from a vpool, num_free puts it. */
// site: num_new
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#ifdef TWIN
static struct vpool pool;
#endif

/* The decimal digits of v in a block of their own; *len: how many. */
TW_SITE static char *num_new(unsigned v, size_t *len)
{
	char tmp[16];
	int n = snprintf(tmp, sizeof(tmp), "%u", v);
#ifdef TWIN
	char *p = tw_get(&pool, (size_t)n);
#else
	char *p = malloc((size_t)n);
#endif
	TW_ALLOC((size_t)n);
	if (!p)
		abort();
	memcpy(p, tmp, (size_t)n);
	*len = (size_t)n;
	return p;
}

TW_SITE static void num_free(char *p, size_t len)
{
	TW_FREE(len);
	(void)len;
#ifdef TWIN
	vpool_put(&pool, p);
#else
	free(p);
#endif
}

int main(int argc, char **argv)
{
	long reqs = argc > 1 ? atol(argv[1]) : 40000;
	uint64_t sum = 0;
	static char line[4096];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long i = 0; i < reqs; i++) {
		size_t n = 20 + (size_t)(i * 7919) % 400, off = 0;
		for (size_t k = 0; k < n; k++) {
			size_t len;
			char *s = num_new((unsigned)((k * 31 + (size_t)i) % 1000), &len);
			memcpy(line + off, s, len);
			off += len;
			line[off++] = ';';
			num_free(s, len);
		}
		tw_sink = line;
		sum = tw_mix(sum, off + (unsigned char)line[off / 2]);
	}
	printf("tinytmp %ld requests checksum %016llx\n", reqs, (unsigned long long)sum);
	return 0;
}
