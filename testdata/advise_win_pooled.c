/* advise testdata: advise_win.c with a hand-written free list of buffers:
 * what `advise` predicts for advise_win, measured (tests/advise). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define BUF_SIZE (32 * 1024)

static void *free_list[16];
static unsigned nfree;

static char *buf_get(void)
{
	return nfree ? free_list[--nfree] : malloc(BUF_SIZE);
}

static void buf_put(char *b)
{
	if (nfree < 16)
		free_list[nfree++] = b;
	else
		free(b);
}

static uint32_t handle(unsigned req)
{
	char *buf = buf_get();
	td_sink = buf;
	memset(buf, (int)(req & 0xff), 4096);
	uint32_t sum = 0;
	for (size_t i = 0; i < BUF_SIZE; i += 512)
		sum += (uint8_t)buf[i & 4095];
	buf_put(buf);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 4000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	while (nfree)
		free(free_list[--nfree]);
	td_say("advise_win_pooled: %u requests, checksum %u\n", n, sum);
	return 0;
}
