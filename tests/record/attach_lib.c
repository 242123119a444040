/* attach_lib.c: a shared library's allocation site for attach_server. */
#include <stdlib.h>

void *attach_lib_site(size_t n);

__attribute__((noinline)) void *attach_lib_site(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}
