/* What a program can see of the malloc it runs on: malloc_usable_size of
 * blocks from each entry point of the family, and the mallinfo2 of its
 * heap in use. Under libc_malloc_debug.so with MALLOC_CHECK_=3 (a user's
 * LD_PRELOAD) the blocks are malloc-check's: malloc(10) has 10 usable
 * bytes, not glibc's 24. A run under record must print the same. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	void *m = malloc(10), *c = calloc(1, 10), *r = realloc(malloc(5), 20);
	void *a = memalign(64, 10), *al = aligned_alloc(64, 64), *pm = NULL;
	if (posix_memalign(&pm, 32, 10))
		return 1;
	printf("malloc %zu calloc %zu realloc %zu memalign %zu aligned_alloc %zu "
	       "posix_memalign %zu\n", malloc_usable_size(m), malloc_usable_size(c),
	       malloc_usable_size(r), malloc_usable_size(a), malloc_usable_size(al),
	       malloc_usable_size(pm));
	free(m);
	free(c);
	free(r);
	free(a);
	free(al);
	free(pm);
	return 0;
}
