/* mtscratch: per-thread scratch buffers in glibc's thread arenas. Four
 * threads serve requests on their own: each takes a scratch buffer of 64
 * to 480 KiB (log-uniform), writes a quarter of it, reads it back into a
 * digest, frees it, and allocates a small result (32 to 256 B) kept in
 * a ring of the thread's last 64 results; nothing moves between threads.
 * The threads' blocks live in glibc's non-main arenas (heaps of their
 * own, grown by mprotect and trimmed by shrink_heap's madvise, not by
 * brk as the main arena's top is). Above the mmap threshold (128 KiB at
 * first) the first buffers are fresh mappings; their frees raise the
 * threshold (and the trim threshold to twice it) for every arena.
 * Twin: scr_new takes buffers from one vpool the threads share,
 * scr_free puts them (tw_get: a pooled buffer too small is freed and
 * replaced). Threaded: run.sh runs it unpinned unless -P. */
// site: scr_new
// threaded
// libs: -lm
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_THREADED 1
#include "twin.h"

#define THREADS 4
#define RING 64

#ifdef TWIN
static struct vpool pool;
#endif

static long nreq;
static uint64_t sums[THREADS];

TW_SITE static uint64_t *scr_new(size_t n)
{
#ifdef TWIN
	uint64_t *b = tw_get(&pool, n);
#else
	uint64_t *b = malloc(n);
#endif
	TW_ALLOC(n);
	if (!b)
		abort();
	tw_sink = b;
	return b;
}

TW_SITE static void scr_free(uint64_t *b, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

TW_SITE static unsigned char *result_new(size_t n)
{
	unsigned char *r = malloc(n);
	TW_ALLOC(n);
	if (!r)
		abort();
	tw_sink = r;
	return r;
}

static void *serve(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x6a09e667f3bcc909ULL * (id + 1), sum = 0;
	unsigned char *ring[RING] = { 0 };
	size_t ringn[RING] = { 0 };
	for (long r = 0; r < nreq; r++) {
		/* 64 KiB * 2^(0 .. log2 7.5): log-uniform 64-480 KiB */
		unsigned e = (unsigned)(tw_rand(&rng) % 2977);
		size_t n = (size_t)(65536.0 * __builtin_exp2((double)e / 1024.0)) & ~(size_t)7;
		uint64_t *b = scr_new(n);
		size_t w = n / 4 / 8;	/* a quarter, in words */
		uint64_t x = tw_rand(&rng);
		for (size_t i = 0; i < w; i++)
			b[i] = x, x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t s = n;
		for (size_t i = 0; i < w; i += 16)
			s = s * 31 + b[i];
		scr_free(b, n);
		size_t rl = 32 + (size_t)(s % 225);
		unsigned char *res = result_new(rl);
		memset(res, (int)(s & 255), rl);
		unsigned slot = (unsigned)(r % RING);
		if (ring[slot]) {
			sum = tw_mix(sum, ring[slot][0] + ringn[slot]);
			TW_FREE(ringn[slot]);
			free(ring[slot]);
		}
		ring[slot] = res;
		ringn[slot] = rl;
		sum = tw_mix(sum, s);
	}
	for (unsigned i = 0; i < RING; i++)
		if (ring[i]) {
			TW_FREE(ringn[i]);
			free(ring[i]);
		}
	sums[id] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nreq = argc > 1 ? atol(argv[1]) : 20000;
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
	printf("mtscratch %ld requests x %d threads checksum %016llx\n", nreq, THREADS,
	       (unsigned long long)sum);
	return 0;
}
