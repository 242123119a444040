/* Four threads allocate and free in batches of 1,000; after each batch
 * the total of allocations done is printed (and flushed): a SIGKILL at
 * any moment finds at least the last number printed done. `pid N` comes
 * first, for the test to kill this process (not record). With an
 * argument N, the process exits (status 0) once N allocations are done,
 * after printing "done". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BATCH 1000
#define THREADS 4
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long total, stop_at;
static void *volatile keep[THREADS][64];

static void *work(void *arg)
{
	int id = (int)(long)arg;
	for (;;) {
		for (int i = 0; i < BATCH; i++) {
			void *p = malloc(16 + (size_t)(i & 63) * 8);
			void *old = keep[id][i & 63];
			keep[id][i & 63] = p;
			free(old);
		}
		pthread_mutex_lock(&mu);
		total += BATCH;
		printf("%llu\n", total);
		if (stop_at && total >= stop_at) {
			printf("done\n");
			fflush(stdout);
			_exit(0);
		}
		fflush(stdout);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	stop_at = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
