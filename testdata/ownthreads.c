/* testdata/ownthreads: three threads, each allocating, reallocating and
 * freeing blocks of its own only (random sizes and lifetimes, a tight
 * malloc/free pair among them), as most multi-threaded programs do: the
 * compactor plans such a trace without its replay (trace/compact/plan.c).
 * tools/same-output.sh and tools/same-compact.sh record it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 3
#define STEPS 100000
#define SLOTS 256

static void *work(void *arg)
{
	unsigned seed = (unsigned)(unsigned long)arg;
	void *keep[SLOTS] = {0};
	for (int i = 0; i < STEPS; i++) {
		seed = seed * 1103515245u + 12345u;
		unsigned k = (seed >> 8) % SLOTS;
		if (keep[k] && (seed & 1)) {
			free(keep[k]);
			keep[k] = NULL;
		} else if (keep[k]) {
			keep[k] = realloc(keep[k], 16 + (seed >> 20) % 512);
		} else {
			keep[k] = malloc(16 + (seed >> 16) % 1024);
			memset(keep[k], 1, 8);
		}
		volatile char *t = malloc(64);
		t[0] = 1;
		free((void *)t);
	}
	for (unsigned k = 0; k < SLOTS; k++)
		free(keep[k]);
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];
	for (unsigned long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, work, (void *)(i + 1));
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
