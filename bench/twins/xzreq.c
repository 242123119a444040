/* xzreq: per-request compression streams through liblzma (xz). Each
 * request compresses a 8-48 KiB generated text (log-uniform) with
 * lzma_easy_encoder at preset 0, its allocator set to xz_alloc/xz_free:
 * liblzma's encoder allocates its state, a 1.2 MiB dictionary window and
 * hash chains (about 1.5 MiB in a handful of blocks) and lzma_end frees
 * them.
 * Unlike zstream (zlib's 4 x 64 KiB), the blocks are bigger than glibc's
 * first mmap threshold (128 KiB): the first are fresh mappings, each free
 * of one raises the threshold, then they come from the heap, and a free
 * of 1.5 MiB at its top is far above the trim threshold.
 * Twin: xz_alloc takes blocks from a pool per block size (liblzma asks
 * for the same few sizes every request: a hand-pooler keys them by
 * size), xz_free puts them back. */
// site: xz_alloc
// libs: -llzma -lm
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* liblzma asks for 14 sizes. */
#define TW_MAX_POOLS 16
#include "twin.h"

#ifdef TWIN
/* One pool per block size seen, up to TW_MAX_POOLS; others use malloc. */
static struct vpool pools[TW_MAX_POOLS];
static size_t pool_size[TW_MAX_POOLS];
static unsigned npools;

static struct vpool *pool_for(size_t n)
{
	for (unsigned i = 0; i < npools; i++)
		if (pool_size[i] == n)
			return &pools[i];
	if (npools == TW_MAX_POOLS)
		return NULL;
	tw_pool_init(&pools[npools]);
	pool_size[npools] = n;
	return &pools[npools++];
}
#endif

TW_SITE static void *xz_alloc(void *opaque, size_t nmemb, size_t size)
{
	struct tw_sized *b = opaque;
	size_t n = nmemb * size;
#ifdef TWIN
	struct vpool *pl = pool_for(n);
	void *p = pl ? tw_get(pl, n) : malloc(n);
#else
	void *p = malloc(n);
#endif
	TW_ALLOC(n);
	tw_sized_add(b, p, n);
	return p;
}

TW_SITE static void xz_free(void *opaque, void *p)
{
	struct tw_sized *b = opaque;
	if (!p)
		return;
	size_t n = tw_sized_take(b, p);
	(void)n;	/* (plain: no pacing) */
	TW_FREE(n);
#ifdef TWIN
	struct vpool *pl = pool_for(n);
	if (pl)
		vpool_put(pl, p);
	else
		free(p);
#else
	free(p);
#endif
}

int main(int argc, char **argv)
{
	static const char *words[] = { "lzma", "xz", "dictionary", "match", "finder", "hash",
					"chain", "literal", "range", "coder", "preset", "request" };
	static uint8_t in[48 << 10], out[64 << 10];
	long n = argc > 1 ? atol(argv[1]) : 700;
	uint64_t rng = 0x5eed5eed12345678ULL, sum = 0;
	for (long r = 0; r < n; r++) {
		/* 8-48 KiB, log-uniform. */
		unsigned e = (unsigned)(tw_rand(&rng) % 2648);	/* log2(6) * 1024 */
		size_t len = (size_t)(8192.0 * __builtin_exp2((double)e / 1024.0)), k = 0;
		while (k < len) {
			const char *w = words[tw_rand(&rng) % 12];
			size_t wl = strlen(w);
			if (k + wl + 1 > len)
				break;
			memcpy(in + k, w, wl);
			k += wl;
			in[k++] = (tw_rand(&rng) & 7) ? ' ' : '\n';
		}
		struct tw_sized blocks;
		memset(&blocks, 0, sizeof(blocks));
		lzma_allocator al = { xz_alloc, xz_free, &blocks };
		lzma_stream s = LZMA_STREAM_INIT;
		s.allocator = &al;
		if (lzma_easy_encoder(&s, 0, LZMA_CHECK_CRC32) != LZMA_OK)
			abort();
		s.next_in = in;
		s.avail_in = k;
		s.next_out = out;
		s.avail_out = sizeof(out);
		if (lzma_code(&s, LZMA_FINISH) != LZMA_STREAM_END)
			abort();
		sum = tw_mix(sum, s.total_out);
		for (size_t i = 0; i < s.total_out; i += 61)
			sum = tw_mix(sum, out[i]);
		lzma_end(&s);
	}
	printf("xzreq %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
