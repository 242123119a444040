/* testdata for `allocprof flamegraph` (tests/report/flamegraph.py): one
 * allocation of 100 bytes, freed, from a function whose symbol holds what
 * XML cannot take as it is: a byte that is not UTF-8 (0xff), a control
 * character (0x01) and the markup characters < & >. The asm label names
 * the symbol (quoted, so that the assembler takes the bytes); -g names it
 * so in the debug info too. */
#include <stdlib.h>

void *odd_alloc(size_t n) __asm__("\"odd\xff<&>\x01name\"");

__attribute__((noinline)) void *odd_alloc(size_t n)
{
	void *p = malloc(n);
	/* keeps the call a call, not a tail call */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(void)
{
	void *p = odd_alloc(100);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	return 0;
}
