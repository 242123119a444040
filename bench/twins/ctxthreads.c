/* ctxthreads: ctxgraph's requests (a context of a struct, a 1-4 KiB
 * header table, a 4-64 KiB body, 8-64 items of 48 B and two strings,
 * filled, handled and torn down together) served by two threads at once,
 * each its own requests; nothing moves between threads. The items and
 * strings come from glibc's thread arenas and tcache, the buffers from
 * the arenas' bins. Twin: ctxgraph's, one vpool of whole contexts the
 * threads share (a thread's Put goes to its private slot first, so each
 * mostly gets its own back). advise finds the graph in each thread and
 * measures it pooled whole. Threaded: run.sh runs it unpinned unless -P.
 * Session 40. */
// site: ctx_new
// threaded
// libs: -lm -lpthread
#include <pthread.h>

#define TW_THREADED 1
#define CTXGRAPH_NO_MAIN 1
#include "ctxgraph.c"

#define THREADS 2

static long nreq;
static uint64_t sums[THREADS];

static void *serve(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x510e527fade682d1ULL ^ (0x9e3779b97f4a7c15ULL * (k + 1)), sum = 0;
	for (long r = 0; r < nreq; r++)
		sum = tw_mix(sum, ctx_request(r, &rng));
	sums[k] = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	uint64_t rng = 0x510e527fade682d1ULL, sum = 0;
	ctx_setup(&rng);
	nreq = n / THREADS;
	pthread_t t[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, serve, (void *)(uintptr_t)i))
			abort();
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		sum = tw_mix(sum, sums[i]);
	}
	printf("ctxthreads %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
