/* testdata/reload_b.c: libreloadb.so (tests/e2e/reload.sh): other code
 * at the addresses of libreloada.so's. */
#include <stdlib.h>

#include "tdutil.h"

unsigned long reload_work(unsigned n);

static unsigned long scale(unsigned long v)
{
	return v * 3 + 1;
}

__attribute__((noinline)) static unsigned long b_blocks(unsigned n)
{
	unsigned long sum = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned char *p = malloc(200 + i % 3); /* SITE:reload_b */
		td_sink = p;
		p[1] = (unsigned char)i;
		sum += scale(p[1]);
		free(p);
	}
	return sum;
}

unsigned long reload_work(unsigned n)
{
	return b_blocks(n);
}
