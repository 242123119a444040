/* testdata/reload_a.c: libreloada.so (tests/e2e/reload.sh). */
#include <stdlib.h>

#include "tdutil.h"

unsigned long reload_work(unsigned n);

unsigned long reload_work(unsigned n)
{
	unsigned long sum = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned char *p = malloc(100 + i % 7); /* SITE:reload_a */
		td_sink = p;
		p[0] = (unsigned char)i;
		sum += p[0];
		free(p);
	}
	return sum;
}
