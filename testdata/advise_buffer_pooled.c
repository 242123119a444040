/* advise testdata: advise_buffer.c with a hand-written pool of buffers that
 * keep the capacity they grew to (tests/advise compares the allocations it
 * saves with what advise predicts for advise_buffer). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

struct buf {
	char *p;
	size_t len, cap;
};

static struct buf pool[16];
static unsigned npool;

static __attribute__((noinline)) void buf_init(struct buf *b)
{
	if (npool) {
		*b = pool[--npool];
		b->len = 0;
		return;
	}
	b->p = malloc(16);
	b->len = 0;
	b->cap = 16;
}

static void buf_release(struct buf *b)
{
	if (npool < 16)
		pool[npool++] = *b;
	else
		free(b->p);
}

static __attribute__((noinline)) void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
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
	for (int i = 0; i < 128; i++)
		buf_add(&b, piece, sizeof(piece));
	td_sink = b.p;
	uint32_t sum = (uint8_t)b.p[req % b.len] + (uint32_t)b.len;
	buf_release(&b);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++)
		sum += handle(r);
	while (npool)
		free(pool[--npool].p);
	td_say("advise_buffer_pooled: %u requests, checksum %u\n", n, sum);
	return 0;
}
