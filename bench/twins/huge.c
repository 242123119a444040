/* huge: a huge work area per request. Each request takes a 64 MiB work
 * area, fills it (every page written), folds a digest out of it, and
 * frees it.
 * A pool should win big: 64 MiB is above glibc's largest mmap threshold
 * (32 MiB), so every malloc is a fresh mmap whose 16384 pages all fault
 * (zeroed by the kernel) when first written, and every free a munmap;
 * the pool keeps one work area, at 64 MiB of resident memory.
 * Twin: work_new takes the area from a vpool, work_done puts it. */
// site: work_new
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define WORK (64UL << 20)

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static uint64_t *work_new(void)
{
#ifdef TWIN
	uint64_t *w = tw_get(&pool, WORK);
#else
	uint64_t *w = malloc(WORK);
#endif
	TW_ALLOC(WORK);
	if (!w)
		abort();
	tw_sink = w;
	return w;
}

TW_SITE static void work_done(uint64_t *w)
{
	TW_FREE(WORK);
#ifdef TWIN
	vpool_put(&pool, w);
#else
	free(w);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 24;
	uint64_t rng = 0x0f0f0f0f12345678ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		uint64_t *w = work_new();
		uint64_t seed = tw_rand(&rng);
		size_t words = WORK / 8;
		for (size_t k = 0; k < words; k++)
			w[k] = seed ^ (k * 0x9e3779b97f4a7c15ULL);
		uint64_t d = 0;
		for (size_t k = 0; k < words; k += 509)
			d += w[k] >> (k & 31);
		sum = tw_mix(sum, d);
		work_done(w);
	}
	printf("huge %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
