/* testdata/bigalloc: more than 1 GiB allocated in total, by 1.8 M calls from
 * three call sites with known totals, freeing as it goes (a window of live
 * blocks per site), for the sampled-accuracy test. Expected values:
 * bigalloc.expected.json.
 *   200000 rounds; each round:
 *     8 x small_object()   malloc(32)        1600000 calls,   51200000 bytes
 *     1 x mid_buffer()     malloc(4096)       200000 calls,  819200000 bytes
 *   and every 782nd round (0, 782, ..., 199410):
 *     1 x big_buffer()     malloc(1048576)       256 calls,  268435456 bytes
 *   Totals: 1800256 allocs, 1138835456 bytes (1.06 GiB).
 * Each site keeps a ring of live blocks (64 small, 64 mid, 8 big) and frees
 * a slot's previous block when it reuses the slot; the rings stay live at
 * exit: 136 blocks, 64*32 + 64*4096 + 8*1048576 = 8652800 bytes in use,
 * 1800256 - 136 = 1800120 frees.
 * Blocks are touched at both ends only: the test is about the allocator
 * calls, not about memory bandwidth. */
#include <stdlib.h>

#include "tdutil.h"

#define ROUNDS 200000
#define SMALL_PER_ROUND 8
#define BIG_EVERY 782
#define SMALL_RING 64
#define MID_RING 64
#define BIG_RING 8

static void *small_ring[SMALL_RING], *mid_ring[MID_RING], *big_ring[BIG_RING];

__attribute__((noinline)) static void *small_object(unsigned i)
{
	void *p = malloc(32);
	td_touch(p, 32, (unsigned char)i);
	return p;
}

__attribute__((noinline)) static void *mid_buffer(unsigned i)
{
	void *p = malloc(4096);
	td_touch(p, 4096, (unsigned char)i);
	return p;
}

__attribute__((noinline)) static void *big_buffer(unsigned i)
{
	void *p = malloc(1048576);
	td_touch(p, 1048576, (unsigned char)i);
	return p;
}

static void put(void **ring, unsigned slots, unsigned long n, void *p)
{
	free(ring[n % slots]); /* free(NULL) on the first lap: no event */
	ring[n % slots] = p;
}

int main(void)
{
	unsigned long nsmall = 0, nmid = 0, nbig = 0;
	unsigned long long bytes = 0;
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned k = 0; k < SMALL_PER_ROUND; k++) {
			put(small_ring, SMALL_RING, nsmall++, small_object(r + k));
			bytes += 32;
		}
		put(mid_ring, MID_RING, nmid++, mid_buffer(r));
		bytes += 4096;
		if (r % BIG_EVERY == 0) {
			put(big_ring, BIG_RING, nbig++, big_buffer(r));
			bytes += 1048576;
		}
	}
	td_say("bigalloc: %lu allocations, %llu bytes\n", nsmall + nmid + nbig, bytes);
	return 0;
}
