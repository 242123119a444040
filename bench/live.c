/* bench/live.c: a heap of many small blocks, all live at once: N blocks
 * (default 20 M) from two call sites (one of four sizes, one of one
 * size) kept in an array, then freed in the order made. The trace is
 * small (the events repeat), the peak is N live blocks: what a report
 * that keeps every live block pays for (bench/live.sh). Built with
 * $CC -O2 by bench/live.sh; the blocks are stored, so the compiler keeps
 * every malloc and free. usage: live [N] */
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) void *node(size_t i)
{
	char *p = malloc(16 + (i & 3) * 8);
	if (!p)
		abort();
	p[0] = (char)i;
	return p;
}

static __attribute__((noinline)) void *leaf(size_t i)
{
	char *p = malloc(40);
	if (!p)
		abort();
	p[0] = (char)i;
	return p;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
	void **keep = malloc((n ? n : 1) * sizeof(*keep));
	if (!keep)
		return 1;
	for (size_t i = 0; i < n; i++)
		keep[i] = i % 2 ? node(i) : leaf(i);
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += *(unsigned char *)keep[i];
		free(keep[i]);
	}
	free(keep);
	printf("live: %zu blocks, checksum %u\n", n, sum);
	return 0;
}
