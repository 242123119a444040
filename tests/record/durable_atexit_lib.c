/* A library whose constructor registers 100 exit handlers, as C++
 * libraries with many globals do (clang, LLVM): registered before
 * __libc_start_main registers the loader's destructor pass, they fill the
 * first 32 slots and three blocks glibc allocates, which it frees while
 * exit() runs, after the sampler wrote END. */
#include <stdlib.h>

int durable_atexit_ran(void);

static volatile int ran;

static void handler(void)
{
	ran++;
}

__attribute__((constructor)) static void many(void)
{
	for (int i = 0; i < 100; i++)
		atexit(handler);
}

int durable_atexit_ran(void)
{
	return ran;
}
