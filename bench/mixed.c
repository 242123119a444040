/* bench/mixed.c: mixed sizes with a window of live objects. Each step frees
 * one random slot of a 4096-slot window and refills it: mostly 16..527
 * bytes, 1 in 64 a 4..64 KiB buffer. Usage: mixed N. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 4096

static void *win[WINDOW];

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000000;
	uint64_t x = 88172645463325252ull;
	unsigned long sum = 0;
	for (unsigned long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned k = (unsigned)(x % WINDOW);
		size_t size = (x >> 20) % 64 == 0 ? 4096 + (x >> 32) % 61440 : 16 + (x >> 40) % 512;
		free(win[k]);
		unsigned char *p = malloc(size);
		p[0] = (unsigned char)i;
		p[size - 1] = 1;
		sum += p[0];
		win[k] = p;
	}
	for (unsigned k = 0; k < WINDOW; k++)
		free(win[k]);
	printf("mixed: %lu steps, checksum %lu\n", n, sum);
	return 0;
}
