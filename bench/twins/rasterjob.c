/* rasterjob: an image pipeline's work area per job. Each job decodes a
 * frame of 2-8 MiB (log-uniform; 4-byte pixels, rows of 1024-2048
 * pixels) into a malloc'd work area, every pixel written (the decoder
 * expands a run-length stream), runs a horizontal 3-tap blur over every
 * row in place and a luminance histogram over every pixel, stores a
 * 256-bin summary (a malloc'd 1 KiB result, kept in a ring of 32: the
 * job's output), and frees the work area.
 * Unlike huge.c and bigmat.cpp (64 MiB and 36-48 MiB: above glibc's
 * largest mmap threshold, a fresh mapping every time) and imgtile.c
 * (calloc: cleared every time), these sizes are below 32 MiB: the first
 * frees of mapped areas raise glibc's mmap threshold to the largest size
 * freed (and its trim threshold to twice that), after which the areas
 * come from the heap and stay, except that the first jobs still fault
 * their pages in. A pool should save a little: the mappings of the first
 * jobs, and a malloc/free pair a job beside ~5 MiB of pixels written and
 * read twice.
 * Twin: frame_new takes an area from a vpool (one too small is freed and
 * replaced, as tw_get does), frame_free puts it back. Built with clang. */
// site: frame_new
// cc: clang
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define RING 32

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static uint32_t *frame_new(size_t bytes)
{
#ifdef TWIN
	uint32_t *f = tw_get(&pool, bytes);
#else
	uint32_t *f = malloc(bytes);
#endif
	TW_ALLOC(bytes);
	if (!f)
		abort();
	return f;
}

TW_SITE static void frame_free(uint32_t *f, size_t bytes)
{
	TW_FREE(bytes);
#ifdef TWIN
	vpool_put(&pool, f);
#else
	(void)bytes;
	free(f);
#endif
}

/* The "decoder": runs of 1-64 pixels of one colour from the PRNG. */
static void decode(uint32_t *px, size_t n, uint64_t *rng)
{
	size_t i = 0;
	while (i < n) {
		uint64_t r = tw_rand(rng);
		size_t run = 1 + (r & 63);
		uint32_t c = (uint32_t)(r >> 32);
		if (run > n - i)
			run = n - i;
		for (size_t k = 0; k < run; k++)
			px[i + k] = c + (uint32_t)k * 0x010101u;
		i += run;
	}
}

static void blur_rows(uint32_t *px, size_t w, size_t h)
{
	for (size_t y = 0; y < h; y++) {
		uint32_t *row = px + y * w, prev = row[0];
		for (size_t x = 1; x + 1 < w; x++) {
			uint32_t cur = row[x];
			row[x] = ((prev >> 2 & 0x3f3f3f3fu) + (cur >> 1 & 0x7f7f7f7fu) +
				  (row[x + 1] >> 2 & 0x3f3f3f3fu));
			prev = cur;
		}
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 120;
	uint64_t rng = 0x9a11e77e5eed0001ULL, sum = 0;
	uint32_t *ring[RING] = {0};
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long j = 0; j < n; j++) {
		/* 2 MiB * 2^(0..2): log-uniform 2-8 MiB */
		size_t want = (size_t)(2097152.0 * __builtin_exp2((double)(tw_rand(&rng) % 2000) / 1000.0));
		size_t w = 1024 + (size_t)(tw_rand(&rng) % 1025);
		size_t h = want / 4 / w, bytes = w * h * 4;
		uint32_t *px = frame_new(bytes);
		decode(px, w * h, &rng);
		blur_rows(px, w, h);
		uint32_t *hist = malloc(256 * sizeof *hist);
		TW_ALLOC(256 * sizeof *hist);
		if (!hist)
			abort();
		memset(hist, 0, 256 * sizeof *hist);
		for (size_t i = 0; i < w * h; i++) {
			uint32_t p = px[i];
			hist[((p & 255) * 77 + (p >> 8 & 255) * 150 + (p >> 16 & 255) * 29) >> 8]++;
		}
		frame_free(px, bytes);
		if (ring[j % RING]) {
			TW_FREE(256 * sizeof *hist);
			free(ring[j % RING]);
		}
		ring[j % RING] = hist;
		for (int b = 0; b < 256; b++)
			sum = tw_mix(sum, hist[b]);
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	printf("rasterjob %ld jobs checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
