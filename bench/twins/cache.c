/* cache: a cache mixing long and short lives. Each request decodes into
 * a temporary object of 1 to 4 KiB and frees it at the end; one request
 * in four also stores a copy (1 to 4 KiB as well) in a cache of 8192
 * entries, evicting a random old entry: the temporaries are allocated
 * among long-lived neighbours of the same sizes.
 * A pool should win on fragmentation: glibc places each temporary in a
 * hole between cached entries (sizes above tcache's range: the unsorted
 * bin is sorted, chunks split and coalesced at every request); the pool
 * hands back one block, big enough for most requests, again and again.
 * Twin: tmp_new takes the temporary from a vpool, tmp_free puts it back;
 * the cache entries (entry_new) are the plain program's. */
// site: tmp_new
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define SLOTS 8192

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static unsigned char *tmp_new(size_t n)
{
#ifdef TWIN
	unsigned char *t = tw_get(&pool, n);
#else
	unsigned char *t = malloc(n);
#endif
	TW_ALLOC(n);
	if (!t)
		abort();
	tw_sink = t;
	return t;
}

TW_SITE static void tmp_free(unsigned char *t, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, t);
#else
	free(t);
#endif
}

TW_SITE static unsigned char *entry_new(size_t n)
{
	unsigned char *e = malloc(n);
	TW_ALLOC(n);
	if (!e)
		abort();
	tw_sink = e;
	return e;
}

int main(int argc, char **argv)
{
	static unsigned char *slot[SLOTS];
	static size_t slotn[SLOTS];
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	uint64_t rng = 0x1111222233334444ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		size_t len = 1024 + tw_rand(&rng) % 3073;
		unsigned char *t = tmp_new(len);
		uint64_t v = tw_rand(&rng);
		for (size_t k = 0; k < len; k += 256)
			t[k] = (unsigned char)(v >> (k & 56));
		t[len - 1] = (unsigned char)r;
		uint64_t h = len;
		for (size_t k = 0; k < len; k += 256)
			h = h * 131 + t[k];
		h = h * 131 + t[len - 1];
		if ((v & 3) == 0) {
			unsigned s = (unsigned)(tw_rand(&rng) % SLOTS);
			if (slot[s]) {
				sum = tw_mix(sum, slot[s][0] + slot[s][slotn[s] - 1]);
				TW_FREE(slotn[s]);
				free(slot[s]);
			}
			size_t en = 1024 + (v >> 8) % 3073;
			slot[s] = entry_new(en);
			slotn[s] = en;
			slot[s][0] = t[0];
			slot[s][en - 1] = (unsigned char)h;
		}
		sum = tw_mix(sum, h);
		tmp_free(t, len);
	}
	for (unsigned s = 0; s < SLOTS; s++)
		free(slot[s]);
	printf("cache %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
