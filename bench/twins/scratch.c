/* scratch: a scratch buffer with a result that must be allocated. Each
 * request takes a scratch buffer of 4 to 64 KiB (log-uniform), fills it
 * with samples, counts them into a histogram in it and finds the
 * distinct values; the result (a 32-512 byte summary) is allocated and
 * kept in a ring of the last 256 results, freed when it is replaced.
 * A pool should help a little at the scratch site: glibc serves these
 * sizes from its bins (above tcache's 1 KiB) and the top of the heap
 * stays below the trim threshold; the pool saves the malloc/free pair,
 * but hands out buffers smaller than the request now and then (a small
 * hit: freed and allocated anew). The result site cannot be pooled: its
 * objects outlive the request.
 * Twin: scratch_new takes the buffer from a vpool, scratch_free puts it. */
// site: scratch_new
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static uint32_t *scratch_new(size_t n)
{
#ifdef TWIN
	uint32_t *b = tw_get(&pool, n);
#else
	uint32_t *b = malloc(n);
#endif
	TW_ALLOC(n);
	if (!b)
		abort();
	tw_sink = b;
	return b;
}

TW_SITE static void scratch_free(uint32_t *b, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

TW_SITE static uint32_t *result_new(size_t n)
{
	uint32_t *r = malloc(n * sizeof(*r));
	TW_ALLOC(n * sizeof(*r));
	if (!r)
		abort();
	tw_sink = r;
	return r;
}

int main(int argc, char **argv)
{
	static uint32_t *ring[256];
	static size_t ringn[256];
	long n = argc > 1 ? atol(argv[1]) : 150000;
	uint64_t rng = 0xdeadbeefcafef00dULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		/* 4 KiB * 2^(0..4): log-uniform 4-64 KiB */
		unsigned e = (unsigned)(tw_rand(&rng) % 4096);
		size_t bytes = (size_t)(4096.0 * __builtin_exp2((double)e / 1024.0));
		bytes &= ~(size_t)3;
		size_t words = bytes / 4, half = words / 2;
		uint32_t *b = scratch_new(bytes);
		/* samples in the first half, a histogram of 1/4 in the second */
		uint32_t mask = (uint32_t)(half / 2 - 1);
		for (size_t i = 0; i < half; i++)
			b[i] = (uint32_t)tw_rand(&rng) & mask & 255;
		memset(b + half, 0, (half / 2) * sizeof(*b));
		for (size_t i = 0; i < half; i++)
			b[half + (b[i] & mask)]++;
		size_t distinct = 0;
		for (size_t i = 0; i < half / 2 && i < 256; i++)
			distinct += b[half + i] != 0;
		size_t rn = 8 + distinct / 2;
		uint32_t *res = result_new(rn);
		for (size_t i = 0; i < rn; i++)
			res[i] = b[half + i];
		scratch_free(b, bytes);
		unsigned slot = (unsigned)(r & 255);
		if (ring[slot]) {
			for (size_t i = 0; i < ringn[slot]; i++)
				sum = tw_mix(sum, ring[slot][i]);
			TW_FREE(ringn[slot] * sizeof(uint32_t));
			free(ring[slot]);
		}
		ring[slot] = res;
		ringn[slot] = rn;
	}
	for (unsigned i = 0; i < 256; i++) {
		if (ring[i]) {
			sum = tw_mix(sum, ring[i][0]);
			free(ring[i]);
		}
	}
	printf("scratch %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
