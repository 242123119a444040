/* idle: a server that is idle most of the time. Each request waits
 * 1 ms (a sleep: the wall time is mostly this, the CPU time small),
 * then takes four 64 KiB buffers, decodes a request into them, answers
 * with a digest, and frees them.
 * A pool should win on CPU time, not wall time: the 256 KiB freed at
 * the top of the heap is above glibc's trim threshold (128 KiB), so each
 * request faults its buffers' pages in again; the pool keeps them.
 * Judged by the wall time the saving looks small; by CPU time it is
 * most of the program's work.
 * Twin: req_buf takes buffers from a vpool, req_done puts them. */
// site: req_buf
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "twin.h"

#define NBUF 4
#define BUFSZ (64 << 10)

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static unsigned char *req_buf(void)
{
#ifdef TWIN
	unsigned char *b = tw_get(&pool, BUFSZ);
#else
	unsigned char *b = malloc(BUFSZ);
#endif
	TW_ALLOC(BUFSZ);
	if (!b)
		abort();
	tw_sink = b;
	return b;
}

TW_SITE static void req_done(unsigned char *b)
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
	long n = argc > 1 ? atol(argv[1]) : 800;
	uint64_t rng = 0xfeedfacef00dbabeULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		unsigned char *bufs[NBUF];
		for (int i = 0; i < NBUF; i++) {
			bufs[i] = req_buf();
			memset(bufs[i], (int)(tw_rand(&rng) & 255), BUFSZ);
			for (size_t k = 0; k < BUFSZ; k += 4096)
				bufs[i][k + (k >> 12) % 4096] ^= (unsigned char)k;
		}
		uint64_t d = 0;
		for (int i = 0; i < NBUF; i++)
			for (size_t k = 0; k < BUFSZ; k += 512)
				d = d * 131 + bufs[i][k];
		sum = tw_mix(sum, d);
		for (int i = 0; i < NBUF; i++)
			req_done(bufs[i]);
	}
	printf("idle %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
