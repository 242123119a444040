/* A process whose main thread ends by pthread_exit while another thread
 * runs on (its leader a zombie, its maps empty). Without an argument the
 * main thread exits at once; with "late" it first says "ready" and waits
 * for a line on standard input. The worker says "gone" once the main
 * thread has gone, then makes N allocations of 4321 bytes at
 * worker_site for each line "N" it reads (answering "ok N"), and ends
 * with status 0 when its standard input does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_t main_thread;

static __attribute__((noinline)) void *worker_site(void)
{
	void *p = malloc(4321);
	__asm__ volatile("" : : "r"(p) : "memory"); /* kept: GCC drops a malloc/free pair */
	return p;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_join(main_thread, NULL); /* the main thread has exited */
	printf("gone\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		long n = strtol(line, NULL, 10);
		for (long i = 0; i < n; i++)
			free(worker_site());
		printf("ok %ld\n", n);
		fflush(stdout);
	}
	exit(0);
}

int main(int argc, char **argv)
{
	main_thread = pthread_self();
	if (argc > 1 && !strcmp(argv[1], "late")) {
		char line[64];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}
