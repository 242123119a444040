/* strbuild: a string builder grown by realloc. Each request builds a
 * text of 10 to 4000 "key=value;" records (up to 80 KiB) in a buffer that starts at
 * 64 bytes and doubles by realloc, hashes it, and frees it.
 * A pool should win: a pooled buffer keeps the capacity it grew to, so
 * the twin skips the malloc and nearly all the reallocs (and their
 * copies) of each request.
 * Twin: sb_new takes a buffer from a vpool, sb_free puts it back. */
// site: sb_new
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

struct sb {
	char *s;
	size_t len, cap;
};

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static void sb_new(struct sb *b)
{
#ifdef TWIN
	b->s = vpool_get(&pool);
	b->cap = b->s ? malloc_usable_size(b->s) : 64;
	if (!b->s)
		b->s = malloc(64);
#else
	b->s = malloc(64);
	b->cap = 64;
#endif
	TW_ALLOC(64);
	if (!b->s)
		abort();
	b->len = 0;
	b->s[0] = 0;
}

/* The buffer doubles until it holds need bytes. */
TW_SITE static void sb_grow(struct sb *b, size_t need)
{
	size_t cap = b->cap;
	while (cap < need) {
		cap *= 2;
#ifndef TWIN
		TW_REALLOC(cap / 2, cap);
#endif
	}
	char *s = realloc(b->s, cap);
	if (!s)
		abort();
	b->s = s;
	b->cap = cap;
}

/* Appends "key=XXXXXXXX;" (v in hex). */
static void sb_add(struct sb *b, const char *key, size_t kl, uint32_t v)
{
	static const char hex[] = "0123456789abcdef";
	if (b->len + kl + 11 > b->cap)
		sb_grow(b, b->len + kl + 11);
	char *p = b->s + b->len;
	memcpy(p, key, kl);
	p += kl;
	*p++ = '=';
	for (int i = 28; i >= 0; i -= 4)
		*p++ = hex[(v >> i) & 15];
	*p++ = ';';
	*p = 0;
	b->len = (size_t)(p - b->s);
}

TW_SITE static void sb_free(struct sb *b)
{
#ifdef TWIN
	/* The cycle pacing counts the reallocs the plain program made: its
	 * buffer doubled from 64 bytes until it held len + 1. */
	size_t pcap = 64;
	for (; pcap < b->len + 1; pcap *= 2)
		TW_REALLOC(pcap, 2 * pcap);
	TW_FREE(pcap);
	vpool_put(&pool, b->s);
#else
	free(b->s);
#endif
	b->s = NULL;
}

int main(int argc, char **argv)
{
	static const char *keys[] = { "id", "name", "offset", "length", "checksum", "owner", "t" };
	static const size_t klen[] = { 2, 4, 6, 6, 8, 5, 1 };
	long n = argc > 1 ? atol(argv[1]) : 60000;
	uint64_t rng = 88172645463325252ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		struct sb b;
		sb_new(&b);
		tw_sink = b.s;
		unsigned recs = 10 + (unsigned)(tw_rand(&rng) % 4000);
		uint32_t v = (uint32_t)tw_rand(&rng);
		for (unsigned i = 0; i < recs; i++)
			sb_add(&b, keys[i % 7], klen[i % 7], v + i * 2654435761u);
		uint64_t h = b.len;
		for (size_t i = 0; i < b.len; i += 61)
			h = h * 31 + (unsigned char)b.s[i];
		sum = tw_mix(sum, h);
		sb_free(&b);
	}
	printf("strbuild %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
