/* A library whose constructor starts a thread that allocates and frees
 * without pause (as gRPC's and some runtimes' do): it runs while the
 * sampler starts (ap_init comes after the program's libraries'
 * constructors), and the blocks it gets then are the program's. The
 * thread keeps the last 1024 blocks; ctor_thread_stop() joins it and
 * frees them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int stop;
static pthread_t th;
static void *keep[1024];

static void *churn(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; !atomic_load(&stop); i++) {
		size_t n = 24 + (i % 7) * 8;
		char *p = malloc(n);
		if (!p)
			abort();
		memset(p, 1, n);
		free(keep[i % 1024]);
		keep[i % 1024] = p;
	}
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	if (pthread_create(&th, NULL, churn, NULL))
		abort();
}

void ctor_thread_stop(void);
void ctor_thread_stop(void)
{
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	for (int i = 0; i < 1024; i++)
		free(keep[i]);
}
