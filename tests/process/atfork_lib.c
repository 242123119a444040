/* tests/process/atfork_lib.c: a library that registers fork handlers
 * from its constructor, as gRPC and others do, and allocates in all three
 * (issue 24). Its constructor runs before the sampler's, so these are
 * registered first unless the sampler puts its own in front. Each
 * allocation is kept in a global: none can be optimised away. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void *volatile atfork_lib_keep[4];
static int forks;

__attribute__((noinline)) static void lib_prepare(void)
{
	atfork_lib_keep[0] = malloc(101);
	memset(atfork_lib_keep[0], 1, 101);
}

__attribute__((noinline)) static void lib_parent(void)
{
	free(atfork_lib_keep[0]);
	atfork_lib_keep[0] = NULL;
	atfork_lib_keep[1] = malloc(102);
	memset(atfork_lib_keep[1], 2, 102);
	forks++;
}

__attribute__((noinline)) static void lib_child(void)
{
	free(atfork_lib_keep[0]); /* the parent's block: a free of the child's */
	atfork_lib_keep[0] = NULL;
	atfork_lib_keep[2] = malloc(103);
	memset(atfork_lib_keep[2], 3, 103);
}

__attribute__((constructor)) static void lib_init(void)
{
	pthread_atfork(lib_prepare, lib_parent, lib_child);
}

int atfork_lib_forks(void);
int atfork_lib_forks(void)
{
	return forks;
}
