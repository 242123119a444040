/* ctxgraph: a request context that is a small object graph (a server's
 * per-request state). Per request ctx_new mallocs a struct ctx (632 B,
 * the item pointers inline) and, at five more lines of its own, a
 * header table of 1 to 4 KiB (log-uniform), a body buffer of 4 to 64 KiB
 * (log-uniform), 8 to 64 items of 48 bytes (uniform), allocated one by
 * one, and two strings of 16 to 200 bytes (a method and a path,
 * uniform): 13 to 69 blocks a request. The request fills them all (the
 * header table and body every byte, the items' fields, the strings),
 * a handler reads them (the checksum) and ctx_free frees them together.
 * glibc serves the items and strings from tcache and the fastbins and
 * small bins, the header table and body from its bins and the top of
 * the heap (far below the trim threshold).
 * Twin: what a hand-pooler does with such a graph: a vpool of whole
 * contexts. A pooled ctx keeps its header table, body and strings with
 * their capacities and the items it has allocated; ctx_new takes one
 * (a miss: a struct of no buffers), replaces a buffer too small for the
 * request (free, malloc of the request's size) and allocates the items
 * it lacks; ctx_free puts it back whole. A ctx the pool drops is freed
 * with all it holds. */
// site: ctx_new
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

/* The program's own work, the same code at the same alignment in plain
 * and twin (a loop's placement across a 64-byte line moved one of
 * bigbuild's loops by 20 % on an AMD EPYC). */
#define TW_WORK __attribute__((noinline, aligned(64)))

#define MAXITEMS 64

struct item {			/* 48 bytes */
	uint64_t key, val;
	uint32_t kind, flags;
	char tag[24];
};

struct ctx {
	long id;
	unsigned char *hdr, *body;
	char *method, *path;
	size_t hdr_len, body_len, method_len, path_len;
	unsigned nitems;
	struct item *items[MAXITEMS];
	/* the twin's (in the plain program too, so that both count the
	 * same size): a pooled ctx's capacities, and its allocated items,
	 * items[0 .. items_alloc) */
	size_t hdr_cap, body_cap, method_cap, path_cap;
	unsigned items_alloc;
};

static unsigned char src[1 << 16];

#ifdef TWIN
static struct vpool pool;

static void ctx_release(void *obj, void *ctx)
{
	struct ctx *c = obj;
	(void)ctx;
	free(c->hdr);
	free(c->body);
	free(c->method);
	free(c->path);
	for (unsigned i = 0; i < c->items_alloc; i++)
		free(c->items[i]);
	free(c);
}

/* A pooled buffer of at least n bytes: *p kept, or replaced. */
static void *tw_buf(void *p, size_t *cap, size_t n)
{
	if (p && *cap >= n)
		return p;
	free(p);
	p = malloc(n);
	if (!p)
		abort();
	*cap = malloc_usable_size(p);
	return p;
}
#endif

TW_SITE static struct ctx *ctx_new(long id, size_t hl, size_t bl, unsigned ni, size_t ml, size_t pl)
{
#ifdef TWIN
	struct ctx *c = vpool_get(&pool);
	if (!c) {
		c = malloc(sizeof(*c));
		if (!c)
			abort();
		memset(c, 0, sizeof(*c));
	}
	c->hdr = tw_buf(c->hdr, &c->hdr_cap, hl);
	c->body = tw_buf(c->body, &c->body_cap, bl);
	for (; c->items_alloc < ni; c->items_alloc++) {
		c->items[c->items_alloc] = malloc(sizeof(struct item));
		if (!c->items[c->items_alloc])
			abort();
	}
	c->method = tw_buf(c->method, &c->method_cap, ml);
	c->path = tw_buf(c->path, &c->path_cap, pl);
#else
	struct ctx *c = malloc(sizeof(*c));
	if (!c)
		abort();
	c->hdr = malloc(hl);
	c->body = malloc(bl);
	for (unsigned i = 0; i < ni; i++) {
		c->items[i] = malloc(sizeof(struct item));
		if (!c->items[i])
			abort();
	}
	c->method = malloc(ml);
	c->path = malloc(pl);
	if (!c->hdr || !c->body || !c->method || !c->path)
		abort();
#endif
	TW_ALLOC(sizeof(*c));
	TW_ALLOC(hl);
	TW_ALLOC(bl);
	for (unsigned i = 0; i < ni; i++)
		TW_ALLOC(sizeof(struct item));
	TW_ALLOC(ml);
	TW_ALLOC(pl);
	c->id = id;
	c->hdr_len = hl, c->body_len = bl, c->nitems = ni, c->method_len = ml, c->path_len = pl;
	tw_sink = c;
	return c;
}

TW_SITE static void ctx_free(struct ctx *c)
{
	TW_FREE(sizeof(*c));
	TW_FREE(c->hdr_len);
	TW_FREE(c->body_len);
	for (unsigned i = 0; i < c->nitems; i++)
		TW_FREE(sizeof(struct item));
	TW_FREE(c->method_len);
	TW_FREE(c->path_len);
#ifdef TWIN
	vpool_put(&pool, c);
#else
	free(c->hdr);
	free(c->body);
	for (unsigned i = 0; i < c->nitems; i++)
		free(c->items[i]);
	free(c->method);
	free(c->path);
	free(c);
#endif
}

/* The request fills its context. */
TW_WORK static void ctx_fill(struct ctx *c, uint64_t *rng)
{
	/* the header table: 32-byte entries (a name and a value) */
	for (size_t k = 0; k + 32 <= c->hdr_len; k += 32) {
		memcpy(c->hdr + k, src + tw_rand(rng) % (sizeof(src) - 32), 32);
		c->hdr[k] = (unsigned char)(k >> 5);
	}
	memset(c->hdr + (c->hdr_len & ~(size_t)31), ':', c->hdr_len & 31);
	/* the body: received in pieces of up to 4 KiB */
	for (size_t k = 0; k < c->body_len; k += 4096) {
		size_t l = c->body_len - k < 4096 ? c->body_len - k : 4096;
		memcpy(c->body + k, src + tw_rand(rng) % (sizeof(src) - 4096), l);
	}
	for (unsigned i = 0; i < c->nitems; i++) {
		struct item *it = c->items[i];
		uint64_t v = tw_rand(rng);
		it->key = v ^ (uint64_t)c->id;
		it->val = v >> 7;
		it->kind = (uint32_t)(v & 15);
		it->flags = (uint32_t)(v >> 60);
		memcpy(it->tag, src + (v >> 20) % (sizeof(src) - 24), 23);
		it->tag[23] = 0;
	}
	memcpy(c->method, src + tw_rand(rng) % (sizeof(src) - 200), c->method_len - 1);
	c->method[c->method_len - 1] = 0;
	memcpy(c->path, src + tw_rand(rng) % (sizeof(src) - 200), c->path_len - 1);
	c->path[c->path_len - 1] = 0;
}

/* A handler reads it. */
TW_WORK static uint64_t ctx_handle(const struct ctx *c)
{
	uint64_t h = (uint64_t)c->id, w;
	for (size_t k = 0; k + 8 <= c->hdr_len; k += 8) {
		memcpy(&w, c->hdr + k, 8);
		h += w ^ (w >> 13);
	}
	for (size_t k = 0; k + 8 <= c->body_len; k += 8) {
		memcpy(&w, c->body + k, 8);
		h += w ^ (w >> 11);
	}
	for (unsigned i = 0; i < c->nitems; i++) {
		const struct item *it = c->items[i];
		h = tw_mix(h, it->key + it->val + it->kind + it->flags + (unsigned char)it->tag[i % 23]);
	}
	h = tw_mix(h, strlen(c->method) * 131 + strlen(c->path));
	return h;
}

/* One request of the run's: its sizes drawn, its context made, filled,
 * handled and freed; returns the handler's checksum. */
static uint64_t ctx_request(long r, uint64_t *rng)
{
	/* 1 KiB * 2^(0..2), 4 KiB * 2^(0..4): log-uniform */
	unsigned e1 = (unsigned)(tw_rand(rng) % 2048), e2 = (unsigned)(tw_rand(rng) % 4096);
	size_t hl = (size_t)(1024.0 * __builtin_exp2((double)e1 / 1024.0));
	size_t bl = (size_t)(4096.0 * __builtin_exp2((double)e2 / 1024.0));
	unsigned ni = 8 + (unsigned)(tw_rand(rng) % 57);
	size_t ml = 16 + (size_t)(tw_rand(rng) % 185), pl = 16 + (size_t)(tw_rand(rng) % 185);
	struct ctx *c = ctx_new(r, hl, bl, ni, ml, pl);
	ctx_fill(c, rng);
	uint64_t h = ctx_handle(c);
	ctx_free(c);
	return h;
}

/* The run's source bytes, drawn from rng, and the twin's pool. */
static void ctx_setup(uint64_t *rng)
{
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(' ' + 1 + tw_rand(rng) % 94);
#ifdef TWIN
	tw_pool_init_release(&pool, ctx_release);
#endif
}

#ifndef CTXGRAPH_NO_MAIN
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	uint64_t rng = 0x510e527fade682d1ULL, sum = 0;
	ctx_setup(&rng);
	for (long r = 0; r < n; r++)
		sum = tw_mix(sum, ctx_request(r, &rng));
	printf("ctxgraph %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
#endif
