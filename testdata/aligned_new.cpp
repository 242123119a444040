// C++'s aligned operator new, recorded at the size the program asked for
// (as valgrind counts it), not at libstdc++'s rounding up to a multiple of
// the alignment that the aligned_alloc under it sees.
//
// By construction, with argument N (the e2e test runs 100; 0 is the
// baseline, whose libstdc++ start-up allocations cancel):
//   new (std::align_val_t(64)) float[100 + i % 7]: N blocks, 4 x that each
//       (N = 100: 41,180 bytes)
//   ::operator new(77, std::align_val_t(128)):        N x 77 bytes
//   ::operator new(33, std::align_val_t(32), nothrow): N x 33 bytes
// 3N allocations, all freed before exit.
#include <cstdlib>
#include <new>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static float *floats(int n)
{
	float *f = new (std::align_val_t(64)) float[n];
	for (int i = 0; i < n; i++)
		f[i] = (float)i;
	return f;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	float sum = 0;
	for (int i = 0; i < n; i++) {
		float *f = floats(100 + i % 7);
		sink = f;
		sum += f[99];
		operator delete[](f, std::align_val_t(64));
		void *r = ::operator new(77, std::align_val_t(128));
		sink = r;
		::operator delete(r, std::align_val_t(128));
		void *q = ::operator new(33, std::align_val_t(32), std::nothrow);
		sink = q;
		::operator delete(q, std::align_val_t(32));
	}
	const char *msg = sum > 0 ? "done\n" : "none\n";
	return write(1, msg, 5) == 5 ? 0 : 1;
}
