/* bigscratch (clang): a 64-256 KiB scratch buffer per request under an
 * otherwise small heap. A request is a batch of 2,048-8,192 records of
 * 32 bytes (log-uniform: 64-256 KiB), generated into a static input
 * array, sorted by its key (under 2^17) with an LSD radix sort of two
 * 9-bit passes, the second back into the input; the scratch buffer the sort
 * needs (as large as the batch, every byte written) is malloc'd at the
 * start of the request and freed at its end. Then the request walks the
 * sorted batch (distinct keys, the median, a digest) and keeps a result
 * of 64-256 bytes in a ring of 64: the only other blocks on the heap.
 * What glibc does with it: above 128 KiB the first scratch buffers are
 * fresh mappings; freeing one raises the mmap threshold to its size and
 * the trim threshold to twice that, after which the buffers come from
 * the top of the heap, and a freed one is the top again.
 * Twin: a hand-pooler's fixed buffers: the scratch buffers come from a
 * vpool, all of 256 KiB (the largest batch), put back after the sort. */
// site: scratch_new
// cc: clang
// libs: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define MAXREC 8192

struct rec {
	uint32_t key, id;
	uint64_t a, b, c;
};

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct rec *scratch_new(size_t n)
{
#ifdef TWIN
	struct rec *s = tw_get(&pool, MAXREC * sizeof(struct rec));
#else
	struct rec *s = malloc(n * sizeof(struct rec));
#endif
	TW_ALLOC(n * sizeof(struct rec));
	if (!s)
		abort();
	return s;
}

TW_SITE static void scratch_free(struct rec *s, size_t n)
{
	TW_FREE(n * sizeof(struct rec));
	(void)n;
#ifdef TWIN
	vpool_put(&pool, s);
#else
	free(s);
#endif
}

static void radix_pass(const struct rec *src, struct rec *dst, size_t n, unsigned shift)
{
	size_t count[512 + 1];
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++)
		count[((src[i].key >> shift) & 511) + 1]++;
	for (size_t k = 1; k <= 512; k++)
		count[k] += count[k - 1];
	for (size_t i = 0; i < n; i++)
		dst[count[(src[i].key >> shift) & 511]++] = src[i];
}

static struct rec input[MAXREC];

int main(int argc, char **argv)
{
	long reqs = argc > 1 ? atol(argv[1]) : 15000;
	uint64_t rng = 0xb16c5c7a7c4ULL, sum = 0;
	char *ring[64] = { 0 };
	size_t ringn[64] = { 0 };
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long q = 0; q < reqs; q++) {
		unsigned e = (unsigned)(tw_rand(&rng) % 2048);
		size_t n = (size_t)(2048.0 * __builtin_exp2((double)e / 1024.0));
		for (size_t i = 0; i < n; i++) {
			uint64_t r = tw_rand(&rng);
			input[i].key = (uint32_t)(r >> 40) % 100000;
			input[i].id = (uint32_t)i;
			input[i].a = r;
			input[i].b = r >> 7;
			input[i].c = (uint64_t)q;
		}
		struct rec *s = scratch_new(n);
		radix_pass(input, s, n, 0);
		radix_pass(s, input, n, 9);
		scratch_free(s, n);
		uint64_t h = n, distinct = 1;
		for (size_t i = 1; i < n; i++) {
			if (input[i].key < input[i - 1].key)
				abort();
			distinct += input[i].key != input[i - 1].key;
			h = tw_mix(h, input[i].id);
		}
		/* the result, kept in a ring of 64 */
		size_t rn = 64 + (size_t)(h % 193);
		unsigned slot = (unsigned)(q % 64);
		if (ring[slot]) {
			sum = tw_mix(sum, (uint64_t)(unsigned char)ring[slot][rn % ringn[slot]]);
			TW_FREE(ringn[slot]);
			free(ring[slot]);
		}
		ring[slot] = malloc(rn);
		TW_ALLOC(rn);
		if (!ring[slot])
			abort();
		memset(ring[slot], (int)(distinct & 255), rn);
		ring[slot][0] = (char)input[n / 2].key;
		ringn[slot] = rn;
		sum = tw_mix(sum, tw_mix(h, distinct));
	}
	for (unsigned k = 0; k < 64; k++)
		free(ring[k]);
	printf("bigscratch %ld requests checksum %016llx\n", reqs, (unsigned long long)sum);
	return 0;
}
