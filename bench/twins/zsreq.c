/* zsreq: per-request compression contexts of libzstd, and results that
 * must be allocated. Each request compresses a 2-32 KiB generated record
 * batch (log-uniform) at level 3 with a context made for it
 * (ZSTD_createCCtx_advanced with zs_alloc/zs_free as its allocator),
 * freed after (ZSTD_freeCCtx): zstd allocates the context and, at the
 * first compression, one workspace sized for the input (window, hash and
 * chain tables: ~150 KiB-1.2 MiB by size). The compressed bytes are then
 * copied into a result of their exact size, malloc'd and kept in a ring
 * of the last 128 results (a reply queue), freed when replaced.
 * Unlike zstream (zlib, five blocks a request, the top of the heap
 * trimmed after each), the workspace's size follows the input, and the
 * results kept between them pin the heap where they fall.
 * Twin: zs_alloc takes blocks from two vpools (the context's small block,
 * and workspaces: a pooled one too small is freed and a new one made,
 * tw_get), zs_free puts them back; the results are malloc'd as in plain. */
// site: zs_alloc
// libs: -lzstd -lm
#define ZSTD_STATIC_LINKING_ONLY
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "twin.h"

#ifdef TWIN
static struct vpool small, big;
#define ZS_SMALL (16 << 10)
#endif

TW_SITE static void *zs_alloc(void *opaque, size_t n)
{
	struct tw_sized *b = opaque;
#ifdef TWIN
	void *p = tw_get(n <= ZS_SMALL ? &small : &big, n);
#else
	void *p = malloc(n);
#endif
	TW_ALLOC(n);
	tw_sized_add(b, p, n);
	return p;
}

TW_SITE static void zs_free(void *opaque, void *p)
{
	struct tw_sized *b = opaque;
	if (!p)
		return;
	size_t n = tw_sized_take(b, p);
	(void)n;	/* (plain: no pacing) */
	TW_FREE(n);
#ifdef TWIN
	vpool_put(n <= ZS_SMALL ? &small : &big, p);
#else
	free(p);
#endif
}

/* The kept result: its own allocation, not the site's. */
TW_SITE static uint8_t *result_new(const uint8_t *src, size_t n)
{
	uint8_t *r = malloc(n);
	TW_ALLOC(n);
	if (!r)
		abort();
	memcpy(r, src, n);
	return r;
}

int main(int argc, char **argv)
{
	static uint8_t in[32 << 10], out[40 << 10];
	static uint8_t *ring[128];
	static size_t ringlen[128];	/* (the twin's pacing counts the frees) */
	long n = argc > 1 ? atol(argv[1]) : 12000;
	uint64_t rng = 0x2befcafe600dd00dULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&small);
	tw_pool_init(&big);
#endif
	for (long r = 0; r < n; r++) {
		/* 2 KiB * 2^(0..4): log-uniform 2-32 KiB of records */
		unsigned e = (unsigned)(tw_rand(&rng) % 4096);
		size_t len = (size_t)(2048.0 * __builtin_exp2((double)e / 1024.0)), k = 0;
		while (k + 24 <= len) {
			uint64_t x = tw_rand(&rng);
			/* a record: an id that counts up, a small value, a tag */
			uint32_t rec[6] = { (uint32_t)r, (uint32_t)k, (uint32_t)(x % 1000), (uint32_t)(x >> 40) & 0xff,
					    0x54414721u, (uint32_t)(x % 7) };
			memcpy(in + k, rec, 24);
			k += 24;
		}
		struct tw_sized blocks;
		memset(&blocks, 0, sizeof(blocks));
		ZSTD_customMem mem = { zs_alloc, zs_free, &blocks };
		ZSTD_CCtx *c = ZSTD_createCCtx_advanced(mem);
		if (!c)
			abort();
		size_t got = ZSTD_compressCCtx(c, out, sizeof(out), in, k, 3);
		if (ZSTD_isError(got))
			abort();
		ZSTD_freeCCtx(c);
		unsigned slot = (unsigned)(r % 128);
		if (ring[slot])
			TW_FREE(ringlen[slot]);
		free(ring[slot]);
		ring[slot] = result_new(out, got);
		ringlen[slot] = got;
		uint64_t h = got;
		for (size_t i = 0; i < got; i += 29)
			h = tw_mix(h, ring[slot][i]);
		sum = tw_mix(sum, h);
	}
	for (unsigned i = 0; i < 128; i++)
		free(ring[i]);
	(void)ringlen;	/* (plain: no pacing) */
	printf("zsreq %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
