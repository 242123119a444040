/* Workload for bench/top.sh: N allocations (and as many frees) from 2^DEPTH
 * distinct call stacks. rec() picks one of two call lines per level from
 * the bits of `path`, so every path is its own stack of return addresses.
 * Built at -O0 so the two calls are not merged and no call is a tail call.
 * Every block is 64 bytes: with varied sizes (16..1039, or 8 size classes)
 * heaptrack 1.4's heaptrack_interpret spun here for minutes, growing past
 * 12 GB, from about 100 k allocations on; sizes do not matter to `top`.
 * usage: top-stacks NALLOCS [DEPTH] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 256
#define BATCH 16

static void *slots[WINDOW];
static uint64_t rng = 88172645463325252ULL;
static unsigned long made;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void leaf(void)
{
	for (int i = 0; i < BATCH; i++) {
		uint64_t r = next();
		size_t k = r % WINDOW;
		free(slots[k]);
		slots[k] = malloc(64);
		made++;
	}
}

static void rec(int depth, unsigned path)
{
	if (depth == 0) {
		leaf();
		return;
	}
	if (path & 1)
		rec(depth - 1, path >> 1);
	else
		rec(depth - 1, path >> 1);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000000;
	int depth = argc > 2 ? atoi(argv[2]) : 14;
	while (made < n)
		rec(depth, (unsigned)next() & ((1u << depth) - 1));
	for (int k = 0; k < WINDOW; k++)
		free(slots[k]);
	printf("%lu allocations\n", made);
	return 0;
}
