/* testdata/dlopen_main: dlopens libdlalloc.so after start (path in argv[1])
 * and calls dlalloc_work(n) (n in argv[2], default 1000) in it.
 * Expected values: dlopen_main.expected.json. dlopen itself allocates
 * (link map, search paths, scope arrays) by amounts that depend on the
 * library's path, so the expectation is a difference: the totals of
 * `dlopen_main LIB 1000` minus those of `dlopen_main LIB 0`, which does the
 * same dlopen and calls dlalloc_work(0), which allocates nothing. The
 * difference is what the library allocates by construction:
 *   1000 x malloc(48), 500 freed, and calloc(1000, 8) kept:
 *   1001 allocs, 56000 bytes, 500 frees; 501 blocks, 32000 bytes at exit.
 * The library stays loaded to the end (no dlclose), so its mapping is valid
 * for every event. */
#include <dlfcn.h>
#include <stdlib.h>

#include "tdutil.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		td_say("usage: dlopen_main LIBRARY [N]\n");
		return 2;
	}
	unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1000;
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		td_say("dlopen_main: cannot load the library\n");
		return 1;
	}
	unsigned long (*work)(unsigned) = (unsigned long (*)(unsigned))dlsym(lib, "dlalloc_work");
	if (!work) {
		td_say("dlopen_main: dlalloc_work not found\n");
		return 1;
	}
	unsigned long sum = work(n);
	td_say("dlopen_main: library allocated %u items, checksum %lu\n", n, sum);
	return 0;
}
