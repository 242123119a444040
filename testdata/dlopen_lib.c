/* testdata/libdlalloc.so: a library that dlopen_main loads after start and
 * calls into; its allocations come from call sites inside this library, so
 * they can only be symbolized through a mapping recorded after the dlopen.
 *   dlalloc_work(n): n x malloc(48) from lib_make_item(), n/2 of them freed,
 *   and 1 x calloc(n, 8) from lib_make_table(), kept. */
#include <stdlib.h>

void *dlalloc_items[4096];
void *dlalloc_table;
unsigned long dlalloc_work(unsigned n);

__attribute__((noinline)) static void *lib_make_item(unsigned i)
{
	unsigned char *p = malloc(48);
	if (p) {
		p[0] = (unsigned char)i;
		p[47] = (unsigned char)i;
	}
	return p;
}

__attribute__((noinline)) static void *lib_make_table(unsigned n)
{
	return calloc(n, 8);
}

unsigned long dlalloc_work(unsigned n)
{
	unsigned long sum = 0;
	if (n > 4096)
		n = 4096;
	for (unsigned i = 0; i < n; i++)
		dlalloc_items[i] = lib_make_item(i);
	for (unsigned i = 0; i < n; i += 2) {
		sum += ((unsigned char *)dlalloc_items[i])[47];
		free(dlalloc_items[i]);
		dlalloc_items[i] = NULL;
	}
	if (n)
		dlalloc_table = lib_make_table(n);
	return sum;
}
