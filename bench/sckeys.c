/* bench/sckeys.c: one malloc/free pair reached with many distinct (return
 * address, stack pointer) keys at the interposed call, in turn: 20 leaf
 * functions (20 return addresses) under 1..DEPTHS levels of recursion (one
 * stack pointer per level), DEPTHS = 20 by default: 400 keys, visited in a
 * cycle. It is the case where the sampler's stack cache can cost more than
 * it saves (bench/stackcache.sh). Build with -fno-inline -fno-ipa-icf
 * -fno-optimize-sibling-calls, so that every leaf stays a function of its
 * own and every call a frame. Usage: sckeys ROUNDS [DEPTHS]. */
#include <stdlib.h>

static void *volatile sink;

#define LEAF(i)                                            \
	__attribute__((noinline)) static void leaf##i(void) \
	{                                                  \
		void *p = malloc(32 + i);                  \
		sink = p;                                  \
		free(p);                                   \
	}
LEAF(0) LEAF(1) LEAF(2) LEAF(3) LEAF(4) LEAF(5) LEAF(6) LEAF(7) LEAF(8) LEAF(9)
LEAF(10) LEAF(11) LEAF(12) LEAF(13) LEAF(14) LEAF(15) LEAF(16) LEAF(17) LEAF(18) LEAF(19)

static void (*const leaves[20])(void) = {
	leaf0, leaf1, leaf2, leaf3, leaf4, leaf5, leaf6, leaf7, leaf8, leaf9,
	leaf10, leaf11, leaf12, leaf13, leaf14, leaf15, leaf16, leaf17, leaf18, leaf19,
};

/* d levels of recursion, then every leaf once */
__attribute__((noinline)) static void rec(int d)
{
	if (d > 0) {
		rec(d - 1);
		sink = &d; /* a frame of its own, not a loop */
		return;
	}
	for (int i = 0; i < 20; i++)
		leaves[i]();
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 5000;
	int depths = argc > 2 ? atoi(argv[2]) : 20;
	for (long r = 0; r < rounds; r++)
		for (int d = 1; d <= depths; d++)
			rec(d);
	return 0;
}
