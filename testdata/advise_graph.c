/* advise testdata: an object graph (tests/advise, "graph": advise finds
 * the context owning its header, items and name, and measures them
 * pooled whole).
 *
 * Per request ctx_new makes a context of 296 bytes, a header buffer of
 * 1-2 KiB, 8 to 31 items of 48 bytes and a name of 16-63 bytes; between
 * the items and the name, a scratch buffer of 4 KiB is made, used and
 * freed: born and freed while the context lives, but the name is made
 * after it, so it is not torn down with the context (not a member). The
 * request sums what it wrote and ctx_free frees the header, the items,
 * the name and the context, in that order.
 * usage: advise_graph [REQUESTS]  (default 20000) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define MAXITEMS 32

struct ctx {
	unsigned char *hdr;
	char *name;
	unsigned nitems;
	size_t hdr_len, name_len;
	uint64_t *items[MAXITEMS];
};

static uint64_t sum;

__attribute__((noinline)) static struct ctx *ctx_new(long r)
{
	struct ctx *c = malloc(sizeof(*c)); /* SITE: advise_graph */
	if (!c)
		abort();
	c->hdr_len = 1024 + (size_t)(r * 37 % 1024);
	c->hdr = malloc(c->hdr_len); /* MEMBER1: advise_graph */
	c->nitems = 8 + (unsigned)(r % 24);
	for (unsigned i = 0; i < c->nitems; i++) {
		c->items[i] = malloc(48); /* MEMBER2: advise_graph */
		if (!c->items[i])
			abort();
		memset(c->items[i], (int)i, 48);
	}
	unsigned char *scratch = malloc(4096); /* SCRATCH: advise_graph */
	if (!c->hdr || !scratch)
		abort();
	memset(scratch, (int)r, 4096);
	sum += scratch[r % 4096];
	td_sink = scratch;
	free(scratch);
	c->name_len = 16 + (size_t)(r % 48);
	c->name = malloc(c->name_len); /* MEMBER3: advise_graph */
	if (!c->name)
		abort();
	memset(c->hdr, 'h', c->hdr_len);
	memset(c->name, 'n', c->name_len);
	td_sink = c;
	return c;
}

__attribute__((noinline)) static void ctx_free(struct ctx *c)
{
	free(c->hdr);
	for (unsigned i = 0; i < c->nitems; i++)
		free(c->items[i]);
	free(c->name);
	free(c);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	for (long r = 0; r < n; r++) {
		struct ctx *c = ctx_new(r);
		for (size_t k = 0; k < c->hdr_len; k += 64)
			sum += c->hdr[k];
		for (unsigned i = 0; i < c->nitems; i++)
			sum += c->items[i][i % 6];
		sum += (unsigned char)c->name[c->name_len - 1];
		ctx_free(c);
	}
	td_say("advise_graph: %ld requests, sum %llu\n", n, (unsigned long long)sum);
	return 0;
}
