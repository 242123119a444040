/* advise testdata: advise_grow.c with a hand-written free list of buffers
 * that keep the capacity they grew to (tests/advise compares). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

struct buf {
	char *p;
	size_t len, cap;
};

static struct buf free_list[16];
static unsigned nfree;

static struct buf buf_get(void)
{
	if (nfree)
		return free_list[--nfree];
	return (struct buf){ NULL, 0, 0 };
}

static void buf_put(struct buf b)
{
	b.len = 0;
	if (nfree < 16)
		free_list[nfree++] = b;
	else
		free(b.p);
}

static void grow(struct buf *b, size_t need)
{
	if (b->len + need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + need)
		cap *= 2;
	b->p = realloc(b->p, cap);
	b->cap = cap;
}

static uint32_t handle(unsigned req)
{
	struct buf b = buf_get();
	char piece[300];
	memset(piece, (int)(req & 0x7f), sizeof(piece));
	for (int i = 0; i < 100; i++) {
		grow(&b, sizeof(piece));
		memcpy(b.p + b.len, piece, sizeof(piece));
		b.len += sizeof(piece);
	}
	td_sink = b.p;
	uint32_t sum = (uint8_t)b.p[b.len - 1] + (uint32_t)b.len;
	buf_put(b);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	while (nfree)
		free(free_list[--nfree].p);
	td_say("advise_grow_pooled: %u requests, checksum %u\n", n, sum);
	return 0;
}
