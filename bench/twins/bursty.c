/* bursty: a server that works in bursts. Each burst takes sixteen
 * 16 KiB buffers, fills each with a request's data, combines them into
 * a digest, and frees all sixteen.
 * A pool should win big: the 256 KiB freed at the end of a burst lies
 * at the top of the heap, above glibc's trim threshold (128 KiB), so
 * glibc returns it to the kernel and the next burst faults its pages in
 * again; the pool keeps the sixteen buffers (one in the thread's private
 * slot, fifteen in the CPU's deque).
 * Twin: burst_buf takes buffers from a vpool, burst_done puts them. */
// site: burst_buf
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define NBUF 16
#define BUFSZ (16 << 10)

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static uint64_t *burst_buf(void)
{
#ifdef TWIN
	uint64_t *b = tw_get(&pool, BUFSZ);
#else
	uint64_t *b = malloc(BUFSZ);
#endif
	TW_ALLOC(BUFSZ);
	if (!b)
		abort();
	tw_sink = b;
	return b;
}

TW_SITE static void burst_done(uint64_t *b)
{
	TW_FREE(BUFSZ);
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 12000;
	uint64_t rng = 0x0123456789abcdefULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		uint64_t *bufs[NBUF];
		for (int i = 0; i < NBUF; i++) {
			bufs[i] = burst_buf();
			uint64_t seed = tw_rand(&rng);
			for (size_t k = 0; k < BUFSZ / 8; k++)
				bufs[i][k] = seed + k * 0x9e3779b97f4a7c15ULL;
		}
		uint64_t d = 0;
		for (size_t k = 0; k < BUFSZ / 8; k += 8)
			for (int i = 0; i < NBUF; i++)
				d ^= bufs[i][(k + (size_t)i) % (BUFSZ / 8)];
		sum = tw_mix(sum, d);
		for (int i = 0; i < NBUF; i++)
			burst_done(bufs[i]);
	}
	printf("bursty %ld bursts checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
