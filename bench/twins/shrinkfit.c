/* shrinkfit: a result built in a buffer of its upper bound, then shrunk
 * to fit (what many C parsers and encoders do: allocate the worst case,
 * fill, realloc down). Each request allocates a buffer of 4 to 64 KiB
 * (log-uniform), writes 10 to 90 % of it (the amount drawn per request),
 * reallocs it down to the bytes written and keeps the result in a ring
 * of the last 128 results (freed when replaced, sampled into the
 * checksum).
 * glibc shrinks in place: realloc splits the chunk and frees the tail,
 * which coalesces with a free neighbour or the top; the results, 0.4 to
 * 58 KiB each, live among those holes for 128 requests.
 * Twin: what a hand-pooler does with such a buffer: sf_buf takes the
 * build buffer from a vpool (tw_get: a pooled buffer too small for the
 * bound is freed and replaced), and sf_fit, instead of the realloc,
 * mallocs the result at its exact size, copies the bytes into it and
 * puts the buffer back. So the twin changes three things: no realloc
 * (no split, no freed tail), the result is a fresh malloc of its size,
 * and the written bytes are copied once more (memcpy, 0.4-58 KiB). */
// site: sf_buf
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define RING 128

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static unsigned char *sf_buf(size_t n)
{
#ifdef TWIN
	unsigned char *b = tw_get(&pool, n);
#else
	unsigned char *b = malloc(n);
#endif
	TW_ALLOC(n);
	if (!b)
		abort();
	tw_sink = b;
	return b;
}

/* The result of len bytes built in b (bound bytes). */
TW_SITE static unsigned char *sf_fit(unsigned char *b, size_t bound, size_t len)
{
	TW_REALLOC(bound, len);
	(void)bound;
#ifdef TWIN
	unsigned char *r = malloc(len);
	if (!r)
		abort();
	memcpy(r, b, len);
	vpool_put(&pool, b);
#else
	unsigned char *r = realloc(b, len);
	if (!r)
		abort();
#endif
	tw_sink = r;
	return r;
}

/* Writes len bytes of "output" into b. */
static void build(unsigned char *b, size_t len, uint64_t x)
{
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(b + i, &x, 8);
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	}
	for (; i < len; i++)
		b[i] = (unsigned char)(x >> (8 * (i & 7)));
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000;
	uint64_t rng = 0x243f6a8885a308d3ULL, sum = 0;
	unsigned char *ring[RING] = { 0 };
	size_t ringn[RING] = { 0 };
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		/* 4 KiB * 2^(0..4): log-uniform 4-64 KiB */
		unsigned e = (unsigned)(tw_rand(&rng) % 4096);
		size_t bound = (size_t)(4096.0 * __builtin_exp2((double)e / 1024.0));
		/* 10-90 % of it */
		size_t len = bound / 10 + (size_t)(tw_rand(&rng) % (bound * 8 / 10 + 1));
		unsigned char *b = sf_buf(bound);
		build(b, len, tw_rand(&rng));
		unsigned char *res = sf_fit(b, bound, len);
		unsigned slot = (unsigned)(r % RING);
		if (ring[slot]) {
			uint64_t h = ringn[slot];
			for (size_t i = 0; i < ringn[slot]; i += 61)
				h = h * 31 + ring[slot][i];
			sum = tw_mix(sum, h);
			TW_FREE(ringn[slot]);
			free(ring[slot]);
		}
		ring[slot] = res;
		ringn[slot] = len;
	}
	for (int i = 0; i < RING; i++)
		if (ring[i]) {
			sum = tw_mix(sum, ring[i][ringn[i] - 1]);
			TW_FREE(ringn[i]);
			free(ring[i]);
		}
	printf("shrinkfit %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
