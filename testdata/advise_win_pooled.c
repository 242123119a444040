/* advise testdata: advise_win.c with its buffers from the pool advise
 * means (pool/vpool.h): what `advise` predicts for advise_win, measured
 * (tests/advise for the allocations, bench/advise-time.sh for the time).
 * usage: advise_win_pooled [REQUESTS [keep]]: with `keep`, the pool is
 * not destroyed at the end, as a program's static pool often is not: its
 * buffer is the pool's at exit, not one the program never freed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"
#include "vpool.h"

#define BUF_SIZE (32 * 1024)

static struct vpool bufs;

static void buf_free(void *b, void *ctx)
{
	(void)ctx;
	free(b);
}

static char *buf_get(void)
{
	char *b = vpool_get(&bufs);
	if (!b)
		b = malloc(BUF_SIZE); /* SITE: advise_win_pooled */
	td_sink = b;
	return b;
}

static void buf_put(char *b)
{
	vpool_put(&bufs, b);
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
	if (vpool_init(&bufs, 0, buf_free, NULL) < 0)
		return 1;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	if (!(argc > 2 && !strcmp(argv[2], "keep")))
		vpool_destroy(&bufs);
	td_say("advise_win_pooled: %u requests, checksum %u\n", n, sum);
	return 0;
}
