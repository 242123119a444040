/* A server-like program for `allocprof snapshot` (tests/record/snapshot.py):
 * THREADS workers (default 3) each allocate ALLOCS blocks of 48 bytes in
 * worker_alloc and free the first 40 % of them, then wait, their events
 * still in their buffers; main says "ready" and reads a line; then each
 * worker allocates ALLOCS / 2 more blocks of 96 bytes in worker_more, main
 * says "done" and everything ends with exit 0. By construction, a snapshot
 * taken at "ready" has THREADS * ALLOCS calls from worker_alloc, 40 % of
 * them freed, and none from worker_more.
 * usage: snapserver [THREADS [ALLOCS]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int nalloc = 1000;
static pthread_barrier_t ready, go, gone;

__attribute__((noinline)) static void *worker_alloc(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = 1;
	return p;
}

__attribute__((noinline)) static void *worker_more(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = 2;
	return p;
}

static void *worker(void *arg)
{
	void **keep = calloc((size_t)nalloc * 2, sizeof(*keep));
	(void)arg;
	for (int i = 0; i < nalloc; i++)
		keep[i] = worker_alloc(48);
	for (int i = 0; i < nalloc * 4 / 10; i++)
		free(keep[i]);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&go);
	for (int i = 0; i < nalloc / 2; i++)
		keep[nalloc + i] = worker_more(96);
	pthread_barrier_wait(&gone);
	for (int i = nalloc * 4 / 10; i < nalloc + nalloc / 2; i++)
		free(keep[i]);
	free(keep);
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 3;
	if (argc > 2)
		nalloc = atoi(argv[2]);
	if (nthreads < 1 || nthreads > 64 || nalloc < 10)
		return 2;
	pthread_t t[64];
	pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&gone, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	pthread_barrier_wait(&ready);
	printf("ready\n");
	fflush(stdout);
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&gone);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
