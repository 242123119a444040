/* attach_unwplugin.c: a plugin that links libunwind.so.8 and unwinds on
 * every call of its site (tests/record/attach.py, 'shared'): a program
 * that uses libunwind itself while the sampler is attached, and after. */
#include <libunwind.h>
#include <stdlib.h>

void *attach_plugin_site(size_t n);

void *attach_plugin_site(size_t n)
{
	void *pcs[32];
	if (unw_backtrace(pcs, 32) < 2)
		abort(); /* at least this function and its caller */
	void *p = calloc(1, n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}
