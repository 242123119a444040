/* alnbuf: a SIMD-style work buffer per request. Each request takes a
 * 64-byte aligned buffer of 16 to 192 KiB (log-uniform) from
 * aligned_alloc, writes a quarter of it as 32-bit lanes, reduces them
 * (loops GCC vectorizes), and allocates a small result (32 to 256 B) kept
 * in a ring of the last 256 results.
 * glibc serves aligned_alloc(64, n) by _int_memalign: a malloc of
 * n + 64 + a minimum chunk, the misaligned head (if any) and the tail
 * beyond n split off and freed. Above the mmap threshold (128 KiB at
 * first) the first buffers are fresh mappings; their frees raise the
 * threshold, after which every buffer comes from the heap.
 * Twin: aln_buf takes buffers from a vpool; a miss, or a pooled buffer
 * too small for the request (freed, as tw_get does), is a new
 * aligned_alloc(64, n), so that every buffer is aligned as the plain
 * program's are. */
// site: aln_buf
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define RING 256
#define ALIGN 64

#ifdef TWIN
static struct vpool pool;

/* tw_get with an aligned miss: a pooled block is aligned already. */
static inline void *aln_get(size_t n)
{
	void *b = vpool_get(&pool);
	if (b && malloc_usable_size(b) >= n)
		return b;
	free(b);
	return aligned_alloc(ALIGN, n);
}
#endif

TW_SITE static uint32_t *aln_buf(size_t n)
{
#ifdef TWIN
	uint32_t *b = aln_get(n);
#else
	uint32_t *b = aligned_alloc(ALIGN, n);
#endif
	TW_ALLOC(n);
	if (!b || ((uintptr_t)b & (ALIGN - 1)))
		abort();
	tw_sink = b;
	return b;
}

TW_SITE static void aln_done(uint32_t *b, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

TW_SITE static char *result_new(size_t n)
{
	char *r = malloc(n);
	TW_ALLOC(n);
	if (!r)
		abort();
	tw_sink = r;
	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 120000;
	uint64_t rng = 0x0a11eb0fa11ed00dULL, sum = 0;
	char *ring[RING] = { 0 };
	size_t ringn[RING] = { 0 };
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		/* 16 KiB * 2^(0 .. log2 12): log-uniform 16-192 KiB, 64-byte multiples */
		unsigned e = (unsigned)(tw_rand(&rng) % 3671);
		size_t bytes = (size_t)(16384.0 * __builtin_exp2((double)e / 1024.0));
		bytes = (bytes + ALIGN - 1) & ~(size_t)(ALIGN - 1);
		uint32_t *b = aln_buf(bytes);
		/* a quarter of it as lanes, written then reduced */
		size_t lanes = bytes / 16;
		uint32_t seed = (uint32_t)tw_rand(&rng);
		for (size_t i = 0; i < lanes; i++)
			b[i] = seed + (uint32_t)i * 2654435761u;
		uint32_t acc = 0, xr = 0;
		for (size_t i = 0; i < lanes; i++) {
			acc += b[i] * (b[i] >> 7);
			xr ^= b[i] >> 3;
		}
		uint64_t d = ((uint64_t)acc << 32 | xr) ^ bytes;
		aln_done(b, bytes);
		size_t rl = 32 + (size_t)(d % 225);
		char *res = result_new(rl);
		memset(res, (int)(d & 255), rl - 1);
		res[rl - 1] = 0;
		unsigned slot = (unsigned)(r % RING);
		if (ring[slot]) {
			sum = tw_mix(sum, (unsigned char)ring[slot][0] + ringn[slot]);
			TW_FREE(ringn[slot]);
			free(ring[slot]);
		}
		ring[slot] = res;
		ringn[slot] = rl;
		sum = tw_mix(sum, d);
	}
	for (int i = 0; i < RING; i++)
		if (ring[i]) {
			TW_FREE(ringn[i]);
			free(ring[i]);
		}
	printf("alnbuf %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
