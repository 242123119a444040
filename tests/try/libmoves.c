/* A program that the library alone moves, as bench/twins' chan is moved
 * (its threads switch less often when each allocator call costs a few ns
 * more, and it runs 10 % cheaper with try's library and nothing pooled):
 * here deterministically, by doing work only when try's library is not
 * there (ALLOCPROF_TRY unset). Its output is the same either way. With
 * LIBMOVES_LOG set, each run appends "library" or "program" to that file.
 *
 * usage: libmoves [SPIN]   (SPIN: iterations of work, default 100000000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) char *item_new(size_t n)
{
	char *p = malloc(n);	/* not a tail call: the site is this line */
	if (p)
		p[0] = 1;
	return p;
}

int main(int argc, char **argv)
{
	unsigned long spin = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000000UL;
	int under = getenv("ALLOCPROF_TRY") != NULL;
	const char *log = getenv("LIBMOVES_LOG");
	if (log) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "%s\n", under ? "library" : "program");
			fclose(f);
		}
	}
	unsigned long sum = 0;
	for (int i = 0; i < 20000; i++) {
		char *p = item_new(256 + (size_t)(i % 64));
		if (!p)
			return 1;
		memset(p, i & 0xff, 16);
		sum += (unsigned char)p[3];
		free(p);
	}
	if (!under) {
		volatile unsigned long x = 0;
		for (unsigned long i = 0; i < spin; i++)
			x += i;
	}
	printf("%lu\n", sum);
	return 0;
}
