/* attach_futex.c: a program whose every thread waits in a futex (the main
 * thread in pthread_join, the worker in sem_wait), the one place where
 * record -p has to make its calls (tests/record/attach.py, "futex").
 * SIGUSR1 posts the semaphore (sem_post is async-signal-safe): the worker
 * then allocates N blocks at worker_site, frees them and ends, and the
 * program prints "worker N" and "joined" and exits 0. Usage:
 * attach_futex N. */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static sem_t go;
static long n;

__attribute__((noinline)) static void *worker_site(size_t k)
{
	void *p = malloc(k);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}

static void on_usr1(int sig)
{
	(void)sig;
	sem_post(&go);
}

static void *worker(void *arg)
{
	while (sem_wait(&go) != 0)
		;
	for (long i = 0; i < n; i++)
		free(worker_site(32 + (size_t)(i % 100)));
	printf("worker %ld\n", n);
	return arg;
}

int main(int argc, char **argv)
{
	n = argc > 1 ? atol(argv[1]) : 1000;
	pthread_t t;
	sem_init(&go, 0, 0);
	signal(SIGUSR1, on_usr1);
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	printf("ready\n");
	fflush(stdout);
	pthread_join(t, NULL);
	printf("joined\n");
	return 0;
}
