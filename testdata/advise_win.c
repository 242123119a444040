/* advise testdata: a request loop that allocates, uses and frees a 32 KiB
 * buffer per request. Expected verdict: pool (tests/advise). The
 * hand-pooled twin is advise_win_pooled.c. usage: advise_win [REQUESTS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define BUF_SIZE (32 * 1024)

static uint32_t handle(unsigned req)
{
	char *buf = malloc(BUF_SIZE); /* SITE: advise_win */
	td_sink = buf;
	memset(buf, (int)(req & 0xff), 4096);
	uint32_t sum = 0;
	for (size_t i = 0; i < BUF_SIZE; i += 512)
		sum += (uint8_t)buf[i & 4095];
	free(buf);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 4000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	td_say("advise_win: %u requests, checksum %u\n", n, sum);
	return 0;
}
