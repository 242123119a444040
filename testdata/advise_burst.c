/* advise testdata: bursts of 16 buffers of 16 KiB, taken together, filled
 * and freed together. 256 KiB freed at once tops glibc's trim threshold
 * (128 KiB): each burst's free gives the heap's top back to the kernel and
 * the next burst faults every page in again. A pool keeps the 16 buffers:
 * it saves the page faults, which a cost table of malloc+free times does
 * not see (the measured replay does: tests/advise, measured burst).
 * usage: advise_burst [BURSTS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define NBUF 16
#define BUF_SIZE (16 * 1024)

static uint32_t burst(unsigned r)
{
	char *b[NBUF];
	for (unsigned i = 0; i < NBUF; i++) {
		b[i] = malloc(BUF_SIZE); /* SITE: advise_burst */
		memset(b[i], (int)(r + i), BUF_SIZE);
	}
	uint32_t sum = 0;
	for (unsigned i = 0; i < NBUF; i++) {
		sum += (uint8_t)b[i][(r * 7919u) % BUF_SIZE];
		free(b[i]);
	}
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += burst(r);
	td_say("advise_burst: %u bursts, checksum %u\n", n, sum);
	return 0;
}
