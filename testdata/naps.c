/* A server asleep most of its time: `naps N MS` makes N requests, each
 * after a sleep of MS milliseconds (default 2), taking a 64 KiB buffer,
 * writing it whole and freeing it. Its wall time is mostly the sleeps,
 * its CPU time small: the time off its CPU that advise's measured replay
 * sleeps (docs/pool-model.md, §9). Prints a checksum of what it wrote. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUFSZ (64 << 10)

/* Where each buffer goes, so the compiler keeps its malloc and free. */
unsigned char *volatile naps_sink;

__attribute__((noinline)) static unsigned char *req_buf(void)
{
	unsigned char *b = malloc(BUFSZ);
	if (!b)
		abort();
	naps_sink = b;
	return b;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	long ms = argc > 2 ? atol(argv[2]) : 2;
	uint64_t sum = 0;
	for (long r = 0; r < n; r++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		unsigned char *b = req_buf();
		memset(b, (int)(r & 255), BUFSZ);
		sum = sum * 131 + b[(r * 4099) % BUFSZ];
		free(b);
	}
	printf("naps %ld checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
