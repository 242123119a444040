/* advise testdata: the bytes.Buffer pattern. Each request builds its reply
 * in a buffer that starts at 16 bytes and doubles by realloc up to 2 KiB
 * (7 reallocs), then frees it. The request's first allocation is tiny, but
 * what a pool keeps is the buffer at the 2 KiB it grew to, and with it the
 * reallocs: verdict pool, at the birth site. Twin: advise_buffer_pooled.c.
 * usage: advise_buffer [REQUESTS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

struct buf {
	char *p;
	size_t len, cap;
};

static __attribute__((noinline)) void buf_init(struct buf *b)
{
	b->p = malloc(16); /* SITE: advise_buffer */
	b->len = 0;
	b->cap = 16;
}

static __attribute__((noinline)) void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap); /* GROWS: advise_buffer */
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static uint32_t handle(unsigned req)
{
	struct buf b;
	buf_init(&b);
	char piece[16];
	memset(piece, 'a' + (int)(req % 26), sizeof(piece));
	for (int i = 0; i < 128; i++)	/* 2 KiB: 16 -> 32 -> ... -> 2048 */
		buf_add(&b, piece, sizeof(piece));
	td_sink = b.p;
	uint32_t sum = (uint8_t)b.p[req % b.len] + (uint32_t)b.len;
	free(b.p);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	td_say("advise_buffer: %u requests, checksum %u\n", n, sum);
	return 0;
}
