/* mtbuf: per-thread request buffers. Four threads serve requests on
 * their own: each takes a buffer of 2 to 16 KiB (log-uniform), writes a
 * header and a quarter of it, checksums what it wrote and frees the
 * buffer; no object moves between threads.
 * A pool should help: these sizes are above tcache's 1 KiB, so glibc
 * serves them from the thread's arena bins (unsorted, small and large
 * bins: sorting, splitting and coalescing) under the arena's lock; the
 * pool hands a thread back the block its CPU last put.
 * Twin: buf_new takes buffers from a vpool, buf_free puts them.
 * Threaded: run.sh runs it unpinned. */
// site: buf_new
// threaded
// libs: -lm
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_THREADED 1
#include "twin.h"

#define THREADS 4

#ifdef TWIN
static struct vpool pool;
#endif

static long nreq;
static uint64_t sums[THREADS];

TW_SITE static unsigned char *buf_new(size_t n)
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

TW_SITE static void buf_free(unsigned char *b, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

static void *serve(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (id + 1), sum = 0;
	for (long r = 0; r < nreq; r++) {
		unsigned e = (unsigned)(tw_rand(&rng) % 3072);
		size_t n = (size_t)(2048.0 * __builtin_exp2((double)e / 1024.0));
		unsigned char *b = buf_new(n);
		size_t w = n / 4;
		memset(b, (int)(r & 255), 64);
		for (size_t i = 64; i < w; i += 8)
			b[i] = (unsigned char)tw_rand(&rng);
		uint64_t s = n;
		for (size_t i = 0; i < w; i += 64)
			s = s * 31 + b[i];
		sum = tw_mix(sum, s);
		buf_free(b, n);
	}
	sums[id] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nreq = argc > 1 ? atol(argv[1]) : 400000;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	pthread_t t[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, serve, (void *)(uintptr_t)i))
			abort();
	uint64_t sum = 0;
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		sum = tw_mix(sum, sums[i]);
	}
	printf("mtbuf %ld requests x %d threads checksum %016llx\n", nreq, THREADS,
	       (unsigned long long)sum);
	return 0;
}
