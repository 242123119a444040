/* testdata/reload_main: a plugin unloaded and another loaded at its
 * address. Loads LIB_A (argv[1]), calls its reload_work(100), unloads
 * it; then LIB_B (argv[2]) the same with reload_work(300); then LIB_A
 * again, reload_work(100). Each reload_work(n) makes n blocks at its
 * library's SITE line and frees them. The loader maps a library where
 * the one unloaded before it was, so LIB_B's code runs at the addresses
 * LIB_A's did: its 300 blocks must be LIB_B's (reload_b.c), LIB_A's 200
 * LIB_A's (reload_a.c). Prints whether the three loads had one base
 * (tests/e2e/reload.sh skips where they did not). */
#include <dlfcn.h>
#include <stdlib.h>

#include "tdutil.h"

static unsigned long run(const char *path, unsigned n, void **base)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		td_say("reload_main: cannot load %s\n", path);
		exit(1);
	}
	unsigned long (*work)(unsigned) = (unsigned long (*)(unsigned))dlsym(lib, "reload_work");
	Dl_info info;
	if (!work || !dladdr((void *)work, &info)) {
		td_say("reload_main: no reload_work in %s\n", path);
		exit(1);
	}
	*base = info.dli_fbase;
	unsigned long sum = work(n);
	dlclose(lib);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		td_say("usage: reload_main LIB_A LIB_B\n");
		return 2;
	}
	void *b1, *b2, *b3;
	unsigned long sum = run(argv[1], 100, &b1);
	sum += run(argv[2], 300, &b2);
	sum += run(argv[1], 100, &b3);
	td_say("reload_main: sum %lu, bases %s\n", sum, b1 == b2 && b2 == b3 ? "same" : "differ");
	return 0;
}
