/* testdata/massif_axis: where massif's --time-unit=B clock has its peak
 * (tests/e2e/massif-axis.sh compares timeline's with valgrind's). Odd
 * sizes (massif counts each block rounded up to 16 bytes, and 8 of
 * admin), calloc, realloc chains that move the block (massif counts how
 * much it grew) and reallocs that shrink it in place (massif counts
 * nothing then, and the block keeps its size until it is freed); every
 * block freed, then a second wave of larger blocks, whose end is the
 * peak: its place on the clock counts all of the above. Nothing is freed
 * but by a realloc that moves its block, to blocks no later request of
 * the first wave fits, until the first wave is all freed; valgrind's
 * allocator then carves the second wave out of that space, so that it
 * hands out every block at its rounded size (a reused block could be
 * larger, and massif would count that).
 * usage: massif_axis */
#include <stdlib.h>

#include "tdutil.h"

#define N 400
static char *blk[N];
static size_t len[N];

int main(void)
{
	/* sizes 1 .. 997, odd, ascending: a block freed by a move is never
	 * large enough for a later request (each asks twice its own) */
	for (int i = 0; i < N; i++) {
		len[i] = 1 + (size_t)i * 5 / 2;
		blk[i] = i % 3 ? malloc(len[i]) : calloc(1, len[i]);
		td_touch(blk[i], len[i], (unsigned char)i);
	}
	/* every fourth block grown by realloc, three times, each to twice
	 * plus 100: moves */
	for (int i = 0; i < N; i += 4)
		for (int k = 0; k < 3; k++) {
			len[i] = 2 * len[i] + 100;
			blk[i] = realloc(blk[i], len[i]);
			td_touch(blk[i], len[i], (unsigned char)k);
		}
	/* every seventh block shrunk to a third: in place */
	for (int i = 1; i < N; i += 7) {
		len[i] = len[i] / 3 + 1;
		blk[i] = realloc(blk[i], len[i]);
		td_touch(blk[i], len[i], 1);
	}
	for (int i = 0; i < N; i++)
		free(blk[i]);
	for (int i = 0; i < N; i++) {
		len[i] = 2001 + (size_t)i * 3;
		blk[i] = malloc(len[i]);
		td_touch(blk[i], len[i], 2);
	}
	/* the peak is here */
	for (int i = 0; i < N; i++)
		free(blk[i]);
	return 0;
}
