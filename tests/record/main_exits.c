/* A process whose main thread ends by pthread_exit while another thread
 * runs on (its leader a zombie, its maps empty): it says "ready" once the
 * main thread has gone, and ends when its standard input does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_t main_thread;

static void *worker(void *arg)
{
	(void)arg;
	pthread_join(main_thread, NULL); /* the main thread has exited */
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		free(malloc(100));
	exit(0);
}

int main(void)
{
	main_thread = pthread_self();
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}
