/* unwinder.c, unwinder_own.c: an allocation under n frames of ours, each
 * with a pad of stack (new stack pages for the unwinder to check), kept
 * by a volatile sink (GCC drops a malloc/free pair otherwise). */
#include <stdlib.h>

static void *volatile sink;

static __attribute__((noinline)) int deep(int n)
{
	volatile char pad[600];
	pad[0] = (char)n;
	if (n)
		return deep(n - 1) + pad[0];
	sink = malloc(100);
	free(sink);
	return 0;
}
