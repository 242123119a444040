/* midbuf: a request handler with a work buffer of 160 to 800 KiB (its
 * size drawn per request), a quarter of it written and read back, and a
 * small result (32 to 160 bytes) kept in a ring of the last 256 results.
 * Around glibc's mmap threshold: the first buffers are fresh mappings;
 * each free of a mapped one raises the threshold (and the trim threshold
 * to twice that), until buffers come from the heap, whose top the
 * results pin now and then.
 * Twin: mid_buf takes buffers from a vpool, mid_done puts them. */
// site: mid_buf
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define RING 256

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static unsigned char *mid_buf(size_t n)
{
#ifdef TWIN
	unsigned char *b = tw_get(&pool, n);
#else
	unsigned char *b = malloc(n);
#endif
	TW_ALLOC(n);
	if (!b)
		abort();
	tw_sink = b;
	return b;
}

TW_SITE static void mid_done(unsigned char *b, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	uint64_t rng = 0x5151a5a5c3c3e7e7ULL, sum = 0;
	char *ring[RING] = { 0 };
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		size_t sz = (160u << 10) + (size_t)(tw_rand(&rng) % (640u << 10));
		unsigned char *b = mid_buf(sz);
		size_t w = sz / 4;
		uint64_t seed = tw_rand(&rng);
		for (size_t k = 0; k < w; k += 8)
			memcpy(b + k, &seed, 8), seed = seed * 6364136223846793005ULL + 1;
		uint64_t d = sz;
		for (size_t k = 0; k < w; k += 256)
			d = d * 31 + b[k];
		mid_done(b, sz);
		size_t rl = 32 + (size_t)(d % 129);
		char *res = malloc(rl);
		if (!res)
			abort();
		memset(res, (int)(d & 255), rl - 1);
		res[rl - 1] = 0;
		free(ring[r % RING]);
		ring[r % RING] = res;
		sum = tw_mix(sum, d + rl);
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	printf("midbuf %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
