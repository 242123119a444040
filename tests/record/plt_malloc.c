/* A non-PIE program that takes malloc's and free's addresses in its code:
 * the executable then holds canonical PLT entries for them (undefined
 * symbols with an address), which a lookup of "malloc" finds first. Its
 * malloc is still the C library's: the sampler must not say it is the
 * program's own (tests/record/durable.sh, ownmalloc). */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile alloc_fn)(size_t);
void (*volatile free_fn)(void *);

int main(void)
{
	alloc_fn = malloc;
	free_fn = free;
	for (int i = 0; i < 100; i++)
		free_fn(alloc_fn(100));
	puts("plt_malloc: done");
	return 0;
}
