/* bench/loop64.c: the tight loop, malloc(64) then free, N pairs in total on
 * T threads (N/T each). Usage: loop64 N [T]. The cost of one malloc/free
 * pair is all there is, so it shows a profiler's fast path. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long per_thread;
static volatile unsigned long sink;

static void *loop(void *arg)
{
	unsigned long sum = 0;
	for (unsigned long i = 0; i < per_thread; i++) {
		unsigned char *p = malloc(64);
		p[0] = (unsigned char)i;
		sum += p[0];
		free(p);
	}
	sink += sum;
	return arg;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
	unsigned t = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1;
	if (t < 1 || t > 64)
		t = 1;
	per_thread = n / t;
	pthread_t th[64];
	for (unsigned i = 1; i < t; i++)
		pthread_create(&th[i], NULL, loop, NULL);
	loop(NULL);
	for (unsigned i = 1; i < t; i++)
		pthread_join(th[i], NULL);
	printf("loop64: %lu pairs on %u thread(s)\n", per_thread * t, t);
	return 0;
}
