/* Threads made one after the other (a thread per request): each
 * allocates three blocks, frees them and exits. argv[1]: how many
 * (default 2,000). */
#include <pthread.h>
#include <stdlib.h>

static void *work(void *arg)
{
	void *volatile a = malloc(32), *volatile b = malloc(200), *volatile c = malloc(1000);
	free(a);
	free(b);
	free(c);
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, work, NULL) != 0)
			return 1;
		pthread_join(t, NULL);
	}
	return 0;
}
