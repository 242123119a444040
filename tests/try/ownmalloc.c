/* ownmalloc: a program with a malloc of its own (fakemalloc.c linked in,
 * and exported: -rdynamic) that allocates at one site. */
#include <stdio.h>
#include <stdlib.h>

static void *volatile sink;

__attribute__((noipa)) static void *site(size_t n)
{
	void *p = malloc(n);
	sink = p;
	return p;
}

int main(void)
{
	for (int i = 0; i < 1000; i++)
		free(site(4096));
	puts("ownmalloc done");
	return 0;
}
