/* advise testdata: a growing buffer (the bytes.Buffer pattern): each
 * request appends 100 pieces of 300 bytes to a buffer that starts empty and
 * doubles by realloc from 64 bytes, then frees it. A pool would hand out a
 * buffer that already grew, so the doublings happen once. Expected verdict:
 * pool, with the reallocs avoided. Twin: advise_grow_pooled.c.
 * usage: advise_grow [REQUESTS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

struct buf {
	char *p;
	size_t len, cap;
};

static void grow(struct buf *b, size_t need)
{
	if (b->len + need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + need)
		cap *= 2;
	b->p = realloc(b->p, cap); /* SITE: advise_grow */
	b->cap = cap;
}

static uint32_t handle(unsigned req)
{
	struct buf b = { NULL, 0, 0 };
	char piece[300];
	memset(piece, (int)(req & 0x7f), sizeof(piece));
	for (int i = 0; i < 100; i++) {
		grow(&b, sizeof(piece));
		memcpy(b.p + b.len, piece, sizeof(piece));
		b.len += sizeof(piece);
	}
	td_sink = b.p;
	uint32_t sum = (uint8_t)b.p[b.len - 1] + (uint32_t)b.len;
	free(b.p);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	td_say("advise_grow: %u requests, checksum %u\n", n, sum);
	return 0;
}
