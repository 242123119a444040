/* testdata/libctoralloc.so: a library whose constructor allocates before
 * the sampler's constructor has run (a program's own libraries are
 * initialized before a preloaded one: LLVM's and gnutls' static
 * constructors do this in clang and cmake). In its constructor:
 *   1800 x malloc(16 + i % 64)  kept, freed later by ctor_main
 *    200 x calloc(1, 40)        freed at once, in the constructor
 *    100 x realloc growth       one block grown 100 times (64 -> 6464), kept
 * Totals from the constructor: 2100 allocs + 100 reallocs (each an alloc
 * and a free, as valgrind counts them). The 1800 come through two calls
 * that are not inlined (ctor_init -> ctor_fill -> ctor_make): their stacks
 * are the constructor's, as valgrind gives them (tests/e2e/ctor-stacks.sh). */
#include <stdlib.h>

#define CTOR_N 1800

void *ctor_blocks[CTOR_N];
void *ctor_grown;
unsigned ctor_count(void);

__attribute__((noinline)) static void *ctor_make(unsigned i)
{
	unsigned char *p = malloc(16 + i % 64);
	if (p)
		p[0] = (unsigned char)i;
	return p;
}

__attribute__((noinline)) static void ctor_fill(void)
{
	for (unsigned i = 0; i < CTOR_N; i++)
		ctor_blocks[i] = ctor_make(i);
	__asm__ volatile("" ::: "memory"); /* not a tail call: its own frame */
}

__attribute__((constructor)) static void ctor_init(void)
{
	ctor_fill();
	for (unsigned i = 0; i < 200; i++) {
		void *volatile q = calloc(1, 40);
		free(q);
	}
	for (unsigned i = 1; i <= 100; i++) {
		void *q = realloc(ctor_grown, 64 + 64 * i);
		if (q)
			ctor_grown = q;
	}
}

unsigned ctor_count(void)
{
	return CTOR_N;
}
