/* bench/attach_loop.c: malloc(64) then free, N pairs, timed (CPU time of
 * the thread, not wall time: the machine may be shared) by the program
 * itself once it reads a line on stdin (so that `record -p` can attach
 * first); prints "ns_per_pair X". Usage: attach_loop N. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
	char c;
	while (read(0, &c, 1) == 1 && c != '\n')
		;
	double t0 = now();
	unsigned long sum = 0;
	for (unsigned long i = 0; i < n; i++) {
		unsigned char *p = malloc(64);
		p[0] = (unsigned char)i;
		sum += p[0];
		free(p);
	}
	sink += sum;
	printf("ns_per_pair %.2f\n", (now() - t0) / (double)n);
	return 0;
}
