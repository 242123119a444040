/* advise testdata: bursts of 16 buffers of 16 KiB, taken together, filled
 * and freed together. 256 KiB freed at once tops glibc's trim threshold
 * (128 KiB): each burst's free gives the heap's top back to the kernel and
 * the next burst faults every page in again. A pool keeps the 16 buffers:
 * it saves the page faults, which a cost table of malloc+free times does
 * not see (the measured replay does: tests/advise, measured burst).
 * With WRITE_KIB, each buffer's first WRITE_KIB KiB are written, not all of
 * it; with PAIRS, each burst also makes and frees that many 24-byte blocks
 * (tcache's: a run of many events, whose replay advise's budget cuts:
 * tests/advise, measured burst prefixfit).
 * usage: advise_burst [BURSTS [WRITE_KIB [PAIRS]]] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define NBUF 16
#define BUF_SIZE (16 * 1024)

__attribute__((noinline)) static uint32_t pairs(unsigned n)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < n; i++) {
		char *p = malloc(24);
		td_sink = p;
		p[0] = (char)i;
		sum += (uint8_t)p[0];
		free(p);
	}
	return sum;
}

static uint32_t burst(unsigned r, size_t written)
{
	char *b[NBUF];
	for (unsigned i = 0; i < NBUF; i++) {
		b[i] = malloc(BUF_SIZE); /* SITE: advise_burst */
		memset(b[i], (int)(r + i), written);
	}
	uint32_t sum = 0;
	for (unsigned i = 0; i < NBUF; i++) {
		sum += (uint8_t)b[i][(r * 7919u) % written];
		free(b[i]);
	}
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
	size_t written = argc > 2 ? (size_t)atoi(argv[2]) * 1024 : BUF_SIZE;
	unsigned np = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
	if (written < 1 || written > BUF_SIZE)
		written = BUF_SIZE;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += burst(r, written) + pairs(np);
	td_say("advise_burst: %u bursts, checksum %u\n", n, sum);
	return 0;
}
