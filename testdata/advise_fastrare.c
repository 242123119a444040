/* advise testdata: a rare site in a fast program. The program churns
 * through 64 KiB blocks (64 of them fill Go's 4 MiB minimum heap goal, so a
 * gogc cycle falls every 64 or so), and once every 12,800 of them (about
 * 200 cycles) it needs a 32 KiB scratch buffer. The whole run takes a few
 * milliseconds, so thousands of cycles fall between two clock ticks of the
 * trace. A pool would be empty at every scratch request: verdict
 * no: too rare. usage: advise_fastrare [REQUESTS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

static __attribute__((noinline)) uint32_t churn(unsigned i)
{
	char *b = malloc(64 * 1024);
	td_touch(b, 64, (unsigned char)i);
	uint32_t v = (uint8_t)b[0];
	free(b);
	return v;
}

static __attribute__((noinline)) uint32_t scratch(unsigned req)
{
	char *b = malloc(32 * 1024); /* SITE: advise_fastrare */
	td_touch(b, 32 * 1024, (unsigned char)req);
	uint32_t v = (uint8_t)b[32 * 1024 - 1];
	free(b);
	return v;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++) {
		sum += scratch(r);
		for (unsigned i = 0; i < 12800; i++)
			sum += churn(i);
	}
	td_say("advise_fastrare: %u requests, checksum %u\n", n, sum);
	return 0;
}
