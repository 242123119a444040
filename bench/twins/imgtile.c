/* imgtile: a huge-ish zeroed work area per request. Each request renders
 * a band of an image tile: it takes a tile buffer of 1-12 MiB
 * (log-uniform; rows of 4 KiB, one byte a pixel) from calloc (tile_new),
 * writes a band of 1/8 to 1/4 of its rows (at a random place), runs a
 * vertical 5-tap blur over the band and two rows either side of it,
 * which reads the four zero rows above and below the band (the program
 * relies on calloc for those), and keeps a small result (64-256 B of
 * column-block sums, malloc'd) in a ring of the last 64; the tile is
 * freed.
 * A pool should win: the first tiles are above glibc's mmap threshold
 * (fresh zeroed mappings, faulted in page by page where written); each
 * free of one raises the threshold to its size, so within a few requests
 * every tile comes from the heap, where calloc must clear the whole of it
 * (4.4 MiB on average) for the ~20 % the request writes and reads. The
 * pool hands back the same (largest) buffer, and only the zero rows the
 * blur reads need clearing.
 * Twin: tile_new takes the buffer from a vpool (tw_get: one too small is
 * freed and a new one malloc'd) and clears the four rows either side of
 * the band, as a hand-pooler must (calloc cleared them in plain);
 * tile_free puts it back. The results are the plain program's.
 * Not the twin: -DTWIN -DTWIN_ZERO_ALL clears the whole tile at every
 * Get, as a pool that stands in for calloc without knowing what the
 * program reads must (what advise's replay and `allocprof try` do; README,
 * "Session 20: clang and rustc"). */
// site: tile_new
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define ROW 4096
#define RING 64
#define TAPS 2 /* rows read either side of an output row */

#ifdef TWIN
static struct vpool pool;
#endif

/* A tile of `rows` rows, zero at least in the rows [y0 - 2 TAPS, y0) and
 * [y1, y1 + 2 TAPS) around the band [y0, y1) (plain: zero everywhere). */
TW_SITE static uint8_t *tile_new(size_t rows, size_t y0, size_t y1)
{
#ifdef TWIN
	uint8_t *t = tw_get(&pool, rows * ROW);
#ifdef TWIN_ZERO_ALL
	if (t)
		memset(t, 0, rows * ROW);
	(void)y0;
	(void)y1;
#else
	if (t) {
		size_t a = y0 < 2 * TAPS ? 0 : y0 - 2 * TAPS;
		size_t b = y1 + 2 * TAPS > rows ? rows : y1 + 2 * TAPS;
		memset(t + a * ROW, 0, (y0 - a) * ROW);
		memset(t + y1 * ROW, 0, (b - y1) * ROW);
	}
#endif
#else
	uint8_t *t = calloc(rows, ROW);
	(void)y0;
	(void)y1;
#endif
	TW_ALLOC(rows * ROW);
	if (!t)
		abort();
	tw_sink = t;
	return t;
}

TW_SITE static void tile_free(uint8_t *t, size_t rows)
{
	TW_FREE(rows * ROW);
	(void)rows;
#ifdef TWIN
	vpool_put(&pool, t);
#else
	free(t);
#endif
}

TW_SITE static uint32_t *result_new(size_t n)
{
	uint32_t *r = malloc(n * sizeof(*r));
	TW_ALLOC(n * sizeof(*r));
	if (!r)
		abort();
	tw_sink = r;
	return r;
}

/* One output row of the blur, added to acc (restrict: GCC vectorizes it
 * at -O2 without alias checks). */
static inline void blur_row(uint32_t *restrict acc, const uint8_t *restrict m2,
			    const uint8_t *restrict m1, const uint8_t *restrict c0,
			    const uint8_t *restrict p1, const uint8_t *restrict p2)
{
	for (size_t x = 0; x < ROW; x++)
		acc[x] += (uint32_t)(m2[x] + 4 * m1[x] + 6 * c0[x] + 4 * p1[x] + p2[x]) >> 4;
}

int main(int argc, char **argv)
{
	static uint32_t *ring[RING];
	static size_t ringn[RING];
	static uint32_t acc[ROW];
	long n = argc > 1 ? atol(argv[1]) : 2000;
	uint64_t rng = 0x1a2b3c4d5e6f7788ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		/* 1 MiB * 12^(e/4096): log-uniform 1-12 MiB, in whole rows */
		unsigned e = (unsigned)(tw_rand(&rng) % 4096);
		size_t rows = (size_t)(256.0 * __builtin_pow(12.0, (double)e / 4096.0));
		size_t band = rows / 8 + (size_t)(tw_rand(&rng) % (rows / 8 + 1));
		size_t y0 = (size_t)(tw_rand(&rng) % (rows - band + 1)), y1 = y0 + band;
		uint8_t *t = tile_new(rows, y0, y1);
		/* render the band: every pixel of its rows */
		uint64_t seed = tw_rand(&rng);
		for (size_t y = y0; y < y1; y++) {
			uint64_t v = seed ^ (y * 0x9e3779b97f4a7c15ULL);
			uint64_t *p = (uint64_t *)(t + y * ROW);
			for (size_t k = 0; k < ROW / 8; k++)
				p[k] = (v + k * 0x0101010101010101ULL) & 0x3f3f3f3f3f3f3f3fULL;
		}
		/* blur the band and TAPS rows either side (reading the zero
		 * rows beyond), summing the output per column */
		size_t a = y0 < TAPS ? 0 : y0 - TAPS;
		size_t b = y1 + TAPS > rows ? rows : y1 + TAPS;
		memset(acc, 0, sizeof(acc));
		for (size_t y = a; y < b; y++) {
			const uint8_t *m2 = t + (y >= 2 ? y - 2 : y) * ROW;
			const uint8_t *m1 = t + (y >= 1 ? y - 1 : y) * ROW;
			const uint8_t *c0 = t + y * ROW;
			const uint8_t *p1 = t + (y + 1 < rows ? y + 1 : y) * ROW;
			const uint8_t *p2 = t + (y + 2 < rows ? y + 2 : y) * ROW;
			blur_row(acc, m2, m1, c0, p1, p2);
		}
		tile_free(t, rows);
		/* the result: sums of 16-64 column blocks */
		size_t rn = 16 + (size_t)(seed % 49);
		uint32_t *res = result_new(rn);
		for (size_t i = 0; i < rn; i++) {
			uint32_t s = 0;
			for (size_t x = i * (ROW / rn); x < (i + 1) * (ROW / rn); x++)
				s += acc[x];
			res[i] = s;
		}
		unsigned slot = (unsigned)(r % RING);
		if (ring[slot]) {
			for (size_t i = 0; i < ringn[slot]; i++)
				sum = tw_mix(sum, ring[slot][i]);
			TW_FREE(ringn[slot] * sizeof(uint32_t));
			free(ring[slot]);
		}
		ring[slot] = res;
		ringn[slot] = rn;
	}
	for (unsigned i = 0; i < RING; i++) {
		if (ring[i]) {
			sum = tw_mix(sum, ring[i][0]);
			TW_FREE(ringn[i] * sizeof(uint32_t));
			free(ring[i]);
		}
	}
	printf("imgtile %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
