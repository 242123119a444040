/* bigbuild: a big output built per request in a buffer grown by realloc
 * (a report, an export, a response body assembled in memory). Each
 * request appends pieces of 256 to 4095 bytes until its output reaches
 * 1 to 16 MiB (log-uniform); the buffer starts at 4 KiB and doubles by
 * realloc when a piece does not fit (a piece is smaller than the buffer,
 * so one realloc is one doubling: 8 to 12 a request). Every
 * appended byte is written (8-byte words of a generator), the output is
 * checksummed (every word read) and the buffer freed.
 * In glibc (2.36) the buffer crosses the mmap threshold (128 KiB at the
 * start): the first outputs grow into fresh mappings (mremap), and each
 * free of a mapped one raises the threshold to its size (and the trim
 * threshold to twice that), up to 16 MiB after a few requests; from then
 * on a buffer grows in place at the top of the heap, whose pages stay
 * (the top is below the trim threshold).
 * Twin: ob_new takes the buffer from a vpool with the capacity it
 * reached (malloc_usable_size; a miss mallocs 4 KiB), grown by the same
 * realloc doubling when too small; ob_free puts it back. */
// site: ob_new
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

/* The program's own work, the same code at the same alignment in plain
 * and twin (a loop's placement across a 64-byte line moved one of
 * bigbuild's loops by 20 % on an AMD EPYC). */
#define TW_WORK __attribute__((noinline, aligned(64)))

struct ob {
	unsigned char *p;
	size_t len, cap;
};

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static void ob_new(struct ob *b)
{
#ifdef TWIN
	b->p = vpool_get(&pool);
	b->cap = b->p ? malloc_usable_size(b->p) : 4096;
	if (!b->p)
		b->p = malloc(4096);
#else
	b->p = malloc(4096);
	b->cap = 4096;
#endif
	TW_ALLOC(4096);
	if (!b->p)
		abort();
	b->len = 0;
	tw_sink = b->p;
}

/* The buffer doubles until it holds need bytes: one realloc. */
TW_SITE static void ob_grow(struct ob *b, size_t need)
{
	size_t cap = b->cap;
	while (cap < need)
		cap *= 2;
	unsigned char *p = realloc(b->p, cap);
	if (!p)
		abort();
	b->p = p;
	b->cap = cap;
	tw_sink = p;
}

/* Appends n bytes (a multiple of 8): words of a generator from seed. */
TW_WORK static uint64_t ob_add(struct ob *b, size_t n, uint64_t seed)
{
	if (b->len + n > b->cap)
		ob_grow(b, b->len + n);
	unsigned char *q = b->p + b->len;
	for (size_t k = 0; k < n; k += 8) {
		memcpy(q + k, &seed, 8);
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	}
	b->len += n;
	return seed;
}

/* The output's checksum: every word. */
TW_WORK static uint64_t ob_sum(const struct ob *b)
{
	uint64_t x = 0;
	for (size_t k = 0; k < b->len; k += 8) {
		uint64_t w;
		memcpy(&w, b->p + k, 8);
		x += w ^ (w >> 17);
	}
	return tw_mix(b->len, x);
}

TW_SITE static void ob_free(struct ob *b)
{
#ifdef TWIN
	/* The cycle pacing counts the reallocs the plain program made: its
	 * buffer doubled from 4 KiB until it held len bytes. */
	size_t pcap = 4096;
	for (; pcap < b->len; pcap *= 2)
		TW_REALLOC(pcap, 2 * pcap);
	TW_FREE(pcap);
	vpool_put(&pool, b->p);
#else
	free(b->p);
#endif
	b->p = NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400;
	uint64_t rng = 0x3c6ef372fe94f82bULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		/* 1 MiB * 2^(0..4): log-uniform 1-16 MiB, in 8-byte words */
		unsigned e = (unsigned)(tw_rand(&rng) % 4096);
		size_t total = (size_t)((double)(1u << 20) * __builtin_exp2((double)e / 1024.0));
		total &= ~(size_t)7;
		struct ob b;
		ob_new(&b);
		uint64_t seed = tw_rand(&rng);
		while (b.len < total) {
			size_t piece = (256 + (size_t)(tw_rand(&rng) % 3840)) & ~(size_t)7;
			if (piece > total - b.len)
				piece = total - b.len;
			seed = ob_add(&b, piece, seed);
		}
		uint64_t h = ob_sum(&b);
		ob_free(&b);
		sum = tw_mix(sum, h);
	}
	printf("bigbuild %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
