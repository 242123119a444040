/* twbase.h: what the plain and twin programs of bench/twins share, C and
 * C++ alike (twin.h includes it; the C++ programs include it alone, since
 * pool/vpool.h, which twin.h brings into a twin, is C only): the site
 * attribute, a sink, the checksum mix and the PRNG. */
#ifndef TWBASE_H
#define TWBASE_H

#include <stddef.h>
#include <stdint.h>

/* A function that allocates: never inlined, cloned or merged with an
 * identical one (GCC's identical code folding would otherwise make two
 * sites one, and allocprof would name both after either). */
#if defined(__clang__)
#define TW_SITE __attribute__((noinline))
#else
#define TW_SITE __attribute__((noipa))
#endif

/* Pointers stored here escape: the compiler must keep every allocation. */
static void *volatile tw_sink;

static inline uint64_t tw_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

/* A small fast PRNG (xorshift64*), the same sequence in both twins. */
static inline uint64_t tw_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* The blocks a library frees without saying their size (liblzma's and
 * zstd's allocator hooks), with their sizes: what the twin's cycle pacing
 * counts a free as giving back. */
#define TW_SIZED_MAX 32
struct tw_sized {
	void *p[TW_SIZED_MAX];
	size_t n[TW_SIZED_MAX];
};

static inline void tw_sized_add(struct tw_sized *s, void *p, size_t n)
{
	for (int i = 0; i < TW_SIZED_MAX; i++)
		if (!s->p[i]) {
			s->p[i] = p;
			s->n[i] = n;
			return;
		}
}

/* p's size, forgotten; 0 when it was not added. */
static inline size_t tw_sized_take(struct tw_sized *s, void *p)
{
	for (int i = 0; i < TW_SIZED_MAX; i++)
		if (s->p[i] == p) {
			s->p[i] = 0;
			return s->n[i];
		}
	return 0;
}

/* A tokenizer's line (tokens.c, tokarr.c): 20 to 60 words of 4 to 39
 * letters, each followed by a space, into line (64 * 48 bytes at least),
 * their lengths into lens (64 at least); returns the words. */
static inline unsigned tw_token_line(uint64_t *rng, char *line, size_t *lens)
{
	unsigned words = 20 + (unsigned)(tw_rand(rng) % 41);
	size_t at = 0;
	for (unsigned w = 0; w < words; w++) {
		size_t len = 4 + (size_t)(tw_rand(rng) % 36);
		for (size_t k = 0; k < len; k++)
			line[at + k] = (char)('a' + (tw_rand(rng) >> 59));
		lens[w] = len;
		at += len + 1;
		line[at - 1] = ' ';
	}
	return words;
}

#endif
