/* reqarena: a per-request arena freed whole, the way a C server (nginx's
 * ngx_pool_t, Apache's apr_pool_t, a hand-rolled one) handles a request:
 * every object the request makes (its header records, their names and
 * values, a copy of the body) is bump-allocated from the request's arena,
 * which takes 16 KiB chunks from malloc as it fills (an object larger
 * than a quarter of a chunk gets a chunk of its own), and the whole arena
 * is released at the end of the request, chunk by chunk, newest first.
 * A request parses a generated form of 8-512 fields (log-uniform; names
 * of 3-20 characters, values of 1-60), looks a few up, copies a body of
 * 0-24 KiB (log-uniform above 256 B, none in one request of four) and
 * checksums it: 1-5 chunks a request, most often one or two.
 * The arena already pools the request's small objects: malloc sees one
 * call per chunk, a few a request, not one per object. A pool of the
 * chunks saves those few calls; the chunks go back to glibc's bins and
 * the top of the heap, under its trim threshold.
 * Twin: the chunks of the usual size come from a vpool (a hand-pooler
 * keeps the arena's chunks, as nginx keeps nothing and Apache keeps its
 * free list); the chunks of a large object from malloc, as in plain. */
// site: arena_chunk
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define CHUNK (16 << 10)

struct chunk {
	struct chunk *next;
	size_t size, used;
	_Alignas(16) unsigned char mem[];
};

struct arena {
	struct chunk *head;	/* the newest chunk; objects come from it */
	struct chunk *large;	/* chunks of one large object each */
};

#ifdef TWIN
static struct vpool pool;
#endif

/* A chunk with room for n bytes: the site. */
TW_SITE static struct chunk *arena_chunk(size_t n)
{
	size_t size = sizeof(struct chunk) + n;
#ifdef TWIN
	struct chunk *c = size == CHUNK ? tw_get(&pool, size) : malloc(size);
#else
	struct chunk *c = malloc(size);
#endif
	TW_ALLOC(size);
	if (!c)
		abort();
	c->size = n;
	c->used = 0;
	return c;
}

TW_SITE static void arena_chunk_free(struct chunk *c)
{
	size_t size = sizeof(struct chunk) + c->size;
	TW_FREE(size);
	(void)size;
#ifdef TWIN
	if (size == CHUNK) {
		vpool_put(&pool, c);
		return;
	}
#endif
	free(c);
}

static void *arena_alloc(struct arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > CHUNK / 4) {
		struct chunk *c = arena_chunk(n);
		c->next = a->large;
		a->large = c;
		return c->mem;
	}
	if (!a->head || a->head->size - a->head->used < n) {
		struct chunk *c = arena_chunk(CHUNK - sizeof(struct chunk));
		c->next = a->head;
		a->head = c;
	}
	void *p = a->head->mem + a->head->used;
	a->head->used += n;
	return p;
}

static char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

static void arena_release(struct arena *a)
{
	for (struct chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		arena_chunk_free(c);
	}
	for (struct chunk *c = a->large, *next; c; c = next) {
		next = c->next;
		arena_chunk_free(c);
	}
	a->head = a->large = NULL;
}

struct field {
	const char *name, *value;
	size_t nlen, vlen;
	struct field *next;
};

static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789-_";

/* One request, its text generated into buf (a form of name=value&...),
 * parsed into the arena. */
static uint64_t handle(uint64_t *rng, char *buf, unsigned char *body_src)
{
	struct arena a = { 0 };
	/* the form */
	unsigned e = (unsigned)(tw_rand(rng) % 6144);
	unsigned nfields = (unsigned)(8.0 * __builtin_exp2((double)e / 1024.0));
	size_t len = 0;
	for (unsigned i = 0; i < nfields; i++) {
		uint64_t r = tw_rand(rng);
		unsigned nl = 3 + (unsigned)(r % 18), vl = 1 + (unsigned)((r >> 8) % 60);
		for (unsigned k = 0; k < nl; k++)
			buf[len++] = alpha[(r >> (k % 48)) % 26];
		buf[len++] = '=';
		for (unsigned k = 0; k < vl; k++)
			buf[len++] = alpha[(r >> ((k * 7) % 56)) % 38];
		buf[len++] = '&';
	}
	/* parse */
	struct field *first = NULL, **tail = &first;
	size_t i = 0;
	while (i < len) {
		size_t ns = i;
		while (buf[i] != '=')
			i++;
		size_t vs = ++i;
		while (buf[i] != '&')
			i++;
		struct field *f = arena_alloc(&a, sizeof(*f));
		f->nlen = vs - 1 - ns;
		f->vlen = i - vs;
		f->name = arena_strndup(&a, buf + ns, f->nlen);
		f->value = arena_strndup(&a, buf + vs, f->vlen);
		f->next = NULL;
		*tail = f;
		tail = &f->next;
		i++;
	}
	/* the body: none in one request of four, else 256 B-24 KiB */
	uint64_t r = tw_rand(rng);
	size_t blen = 0;
	unsigned char *body = NULL;
	if (r & 3) {
		blen = (size_t)(256.0 * __builtin_exp2((double)((r >> 2) % 6738) / 1024.0));
		body = arena_alloc(&a, blen);
		memcpy(body, body_src + (r >> 20) % 4096, blen);
	}
	/* look some up, checksum what the request holds */
	uint64_t h = nfields;
	for (struct field *f = first; f; f = f->next) {
		if (f->nlen > 12 && f->name[0] == 'a')
			h = tw_mix(h, f->vlen);
		h = tw_mix(h, (uint64_t)(unsigned char)f->value[f->vlen / 2] << 8 | (unsigned char)f->name[0]);
	}
	for (size_t k = 0; k < blen; k += 64)
		h = tw_mix(h, body[k]);
	arena_release(&a);
	return h;
}

int main(int argc, char **argv)
{
	long reqs = argc > 1 ? atol(argv[1]) : 40000;
	uint64_t rng = 0x5eed0a7e4a11c0deULL, sum = 0;
	static char buf[512 * 90];
	static unsigned char body_src[4096 + (24 << 10)];
	for (size_t k = 0; k < sizeof(body_src); k++)
		body_src[k] = (unsigned char)(k * 131 + (k >> 7));
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long q = 0; q < reqs; q++)
		sum = tw_mix(sum, handle(&rng, buf, body_src));
	printf("reqarena %ld requests checksum %016llx\n", reqs, (unsigned long long)sum);
	return 0;
}
