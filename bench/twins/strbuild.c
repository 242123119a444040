/* strbuild: a string builder grown by realloc. Each request builds a
 * text of 10 to 1500 "key=value;" records in a buffer that starts at
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
#ifdef TWIN
	size_t pcap;		/* the capacity the plain program would have */
#endif
};

#ifdef TWIN
static struct vpool pool;
#endif

__attribute__((noinline)) static void sb_new(struct sb *b)
{
#ifdef TWIN
	b->s = vpool_get(&pool);
	b->cap = b->s ? malloc_usable_size(b->s) : 64;
	if (!b->s)
		b->s = malloc(64);
	b->pcap = 64;
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

__attribute__((noinline)) static void sb_grow(struct sb *b, size_t need)
{
#ifdef TWIN
	while (b->pcap < need) {	/* the reallocs the plain program makes */
		TW_REALLOC(b->pcap, 2 * b->pcap);
		b->pcap *= 2;
	}
#endif
	if (b->cap >= need)
		return;
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

static void sb_add(struct sb *b, const char *key, uint32_t v)
{
	char num[16];
	int n = 0;
	do
		num[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	size_t kl = strlen(key);
	sb_grow(b, b->len + kl + (size_t)n + 3);
	memcpy(b->s + b->len, key, kl);
	b->len += kl;
	b->s[b->len++] = '=';
	while (n)
		b->s[b->len++] = num[--n];
	b->s[b->len++] = ';';
	b->s[b->len] = 0;
}

__attribute__((noinline)) static void sb_free(struct sb *b)
{
#ifdef TWIN
	TW_FREE(b->pcap);
	vpool_put(&pool, b->s);
#else
	free(b->s);
#endif
	b->s = NULL;
}

int main(int argc, char **argv)
{
	static const char *keys[] = { "id", "name", "offset", "length", "checksum", "owner", "t" };
	long n = argc > 1 ? atol(argv[1]) : 60000;
	uint64_t rng = 88172645463325252ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		struct sb b;
		sb_new(&b);
		tw_sink = b.s;
		unsigned recs = 10 + (unsigned)(tw_rand(&rng) % 1500);
		for (unsigned i = 0; i < recs; i++)
			sb_add(&b, keys[i % 7], (uint32_t)tw_rand(&rng));
		uint64_t h = b.len;
		for (size_t i = 0; i < b.len; i += 7)
			h = h * 31 + (unsigned char)b.s[i];
		sum = tw_mix(sum, h);
		sb_free(&b);
	}
	printf("strbuild %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
