/* testdata/threads: 4 threads, each a known number of allocations of its own
 * size; half of each thread's blocks are freed by the thread itself, most of
 * the other half by the next thread (cross-thread frees), 10 per thread kept.
 * Expected values: threads.expected.json.
 *   thread t (0..3) allocates PER_THREAD blocks of 32*(t+1) bytes,
 *   frees the first half itself, and after a barrier frees blocks
 *   [half, PER_THREAD - KEEP) of thread (t+3)%4.
 * With PER_THREAD = 2000, KEEP = 10: 8000 allocs, 2000*32*(1+2+3+4) = 640000
 * bytes, 4*(1000+990) = 7960 frees; at exit 40 blocks, 10*32*10 = 3200 bytes.
 * `threads 0` creates and joins the same threads and allocates nothing: the
 * baseline that holds what glibc itself allocates per thread: its dynamic
 * thread vector, one calloc per thread, whose size depends on the number of
 * loaded modules with TLS (a preloaded library adds to it), kept with the
 * cached thread stack after the join and freed only by __libc_freeres, which
 * valgrind runs at exit and a normal exit does not. */
#include <pthread.h>
#include <stdlib.h>

#include "tdutil.h"

#define NTHREADS 4
#define MAX_PER_THREAD 4096
#define KEEP 10

static unsigned per_thread = 2000;
static void *blocks[NTHREADS][MAX_PER_THREAD];
static pthread_barrier_t barrier;
static unsigned long sums[NTHREADS];

__attribute__((noinline)) static void *thread_alloc(size_t size, unsigned i)
{
	void *p = malloc(size);
	td_touch(p, size, (unsigned char)i);
	return p;
}

static void *worker(void *arg)
{
	unsigned t = (unsigned)(unsigned long)arg;
	size_t size = 32 * (t + 1);
	unsigned half = per_thread / 2;
	for (unsigned i = 0; i < per_thread; i++)
		blocks[t][i] = thread_alloc(size, i);
	for (unsigned i = 0; i < half; i++) {
		sums[t] += ((unsigned char *)blocks[t][i])[0];
		free(blocks[t][i]);
	}
	pthread_barrier_wait(&barrier);
	/* Cross-thread: free what the previous thread allocated. */
	unsigned from = (t + NTHREADS - 1) % NTHREADS;
	for (unsigned i = half; i + KEEP < per_thread; i++) {
		sums[t] += ((unsigned char *)blocks[from][i])[0];
		free(blocks[from][i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		per_thread = (unsigned)strtoul(argv[1], NULL, 10);
	if (per_thread > MAX_PER_THREAD || (per_thread && per_thread < 2 * KEEP)) {
		td_say("threads: per-thread count must be 0 or %u..%u\n", 2 * KEEP, MAX_PER_THREAD);
		return 2;
	}
	pthread_t th[NTHREADS];
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (unsigned t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(unsigned long)t) != 0) {
			td_say("threads: pthread_create failed\n");
			return 1;
		}
	unsigned long sum = 0;
	for (unsigned t = 0; t < NTHREADS; t++) {
		pthread_join(th[t], NULL);
		sum += sums[t];
	}
	pthread_barrier_destroy(&barrier);
	td_say("threads: %u threads, %u allocations, checksum %lu\n", NTHREADS,
	       NTHREADS * per_thread, sum);
	return 0;
}
