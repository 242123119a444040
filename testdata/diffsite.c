/* testdata for allocprof diff: site_a makes 1000 blocks of 64 bytes and
 * site_b 500 * FACTOR blocks of 256 bytes, each freed at once; recorded
 * with FACTOR 1 and 2, the only difference is site_b's 500 blocks
 * (128,000 bytes). usage: diffsite [FACTOR] */
#include <stdlib.h>

#include "tdutil.h"

static __attribute__((noinline)) void site_a(void)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(64);
		td_touch(p, 64, (unsigned char)i);
		free(p);
	}
}

static __attribute__((noinline)) void site_b(int factor)
{
	for (int i = 0; i < 500 * factor; i++) {
		char *p = malloc(256);
		td_touch(p, 256, (unsigned char)i);
		free(p);
	}
}

int main(int argc, char **argv)
{
	int factor = argc > 1 ? atoi(argv[1]) : 1;
	site_a();
	site_b(factor);
	td_say("diffsite: factor %d\n", factor);
	return 0;
}
