// An aligned `new` that a library of the program serves itself
// (aligned_own_lib.cpp: no C library call), then an unrelated
// posix_memalign of the same alignment: the sampler, which notes an
// aligned new's request for the aligned allocation under it, must not
// give that request to this one.
//
// By construction, with argument N (the e2e test runs 100; 0 is the
// baseline, whose libstdc++ start-up allocations cancel): N x
// posix_memalign(64, 150), freed; the N objects of 128 bytes come from
// the library's arena, not from malloc.
#include <cstdlib>
#include <new>
#include <unistd.h>

struct alignas(64) Obj {
	char b[128];
};

void *volatile sink;

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	for (int i = 0; i < n; i++) {
		Obj *o = new Obj;
		sink = o;
		void *p = nullptr;
		if (posix_memalign(&p, 64, 150))
			return 1;
		sink = p;
		free(p);
		delete o;
	}
	return write(1, "done\n", 5) == 5 ? 0 : 1;
}
