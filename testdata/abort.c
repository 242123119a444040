/* testdata/abort: allocates a known amount, then calls abort(): the process
 * dies of SIGABRT (a shell reports status 134). The trace it leaves must be
 * readable (flagged truncated, or ending with reason "fatal signal").
 * Expected values: abort.expected.json.
 *   50 x malloc(64), 20 of them freed, and 1 x malloc(10000), kept:
 *   51 allocs, 13200 bytes, 20 frees; 31 blocks, 11920 bytes at the abort. */
#include <stdlib.h>

#include "tdutil.h"

static void *blocks[50];

__attribute__((noinline)) static void *alloc_n(size_t size, unsigned i)
{
	void *p = malloc(size);
	td_touch(p, size, (unsigned char)i);
	return p;
}

int main(void)
{
	for (unsigned i = 0; i < 50; i++)
		blocks[i] = alloc_n(64, i);
	void *big = alloc_n(10000, 1);
	for (unsigned i = 0; i < 20; i++)
		free(blocks[i]);
	td_sink = big;
	td_say("abort: 51 blocks allocated, aborting\n");
	abort();
}
