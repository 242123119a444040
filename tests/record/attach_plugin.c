/* attach_plugin.c: the allocation site of a module attach_server loads
 * with dlopen while a sampler may be attached. */
#include <stdlib.h>

void *attach_plugin_site(size_t n);

__attribute__((noinline)) void *attach_plugin_site(size_t n)
{
	void *p = calloc(1, n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}
