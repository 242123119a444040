/* testdata/dtor_lib: a library with a 200-entry registry, allocated by its
 * constructor and freed by its destructor (tests/record: the frees made in
 * a library's destructor, after the program's exit path, are counted). */
#include <stdlib.h>

#include "tdutil.h"

#define NREG 200
static void *registry[NREG];

__attribute__((constructor)) static void reg_init(void)
{
	for (unsigned i = 0; i < NREG; i++) {
		registry[i] = malloc(48);
		td_touch(registry[i], 48, (unsigned char)i);
	}
}

__attribute__((destructor)) static void reg_fini(void)
{
	for (unsigned i = 0; i < NREG; i++)
		free(registry[i]);
}

/* Called by dtor_main, so that the program really links this library. */
void *dtor_lib_get(unsigned i);
void *dtor_lib_get(unsigned i)
{
	return registry[i % NREG];
}
