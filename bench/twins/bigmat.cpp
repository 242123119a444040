// bigmat (C++17): a huge zeroed work area per request, above glibc's
// largest mmap threshold. Each request makes a std::vector<float> of
// 36-48 MiB (a grid of 9.4-12.6 M cells, its size by request), value-
// initialised (libstdc++ zeroes it: operator new, then a memset of the
// whole area), scatters 200,000 weighted points into it, sums a strided
// sample of it and drops it.
// Unlike huge.c (a C malloc of a fixed 64 MiB, every page written by the
// program), the area's size varies and it is zeroed by the library:
// every request is a fresh mmap (glibc never raises its mmap threshold
// above 32 MiB), so the kernel zeroes every page as it faults in and the
// memset writes it again, then a munmap.
// Twin: a C++ engineer's pool of work areas: a vpool of vectors (through
// cxxshim.c, one call a request), each reused with assign(n, 0.0f) (the
// capacity kept when it is big enough; zeroed by the program as plain's
// is), put back after the request.
// site: run_request
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "twbase.h"

#ifdef TWIN
extern "C" {
void twcxx_obj_init(void (*del)(void *));
void *twcxx_obj_get(void);
void twcxx_obj_put(void *p);
void twcxx_alloced(size_t n);
void twcxx_freed(size_t n);
}

static void grid_delete(void *p)
{
	delete static_cast<std::vector<float> *>(p);
}
#endif

/* One request: the site (the vector's allocation is here). */
TW_SITE static uint64_t run_request(size_t cells, uint64_t *rng)
{
#ifdef TWIN
	auto *g = static_cast<std::vector<float> *>(twcxx_obj_get());
	if (!g)
		g = new std::vector<float>;
	g->assign(cells, 0.0f);
	twcxx_alloced(cells * sizeof(float));
	std::vector<float> &grid = *g;
#else
	std::vector<float> grid(cells);
#endif
	for (int i = 0; i < 200000; i++) {
		uint64_t x = tw_rand(rng);
		grid[x % cells] += (float)(x >> 54) * 0.25f;
	}
	double s = 0;
	for (size_t k = 0; k < cells; k += 97)
		s += grid[k];
	uint64_t h = (uint64_t)(s * 16.0);
#ifdef TWIN
	twcxx_freed(cells * sizeof(float));
	twcxx_obj_put(g);
#endif
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 40;
	uint64_t rng = 0x9e1f00d5eed0bad1ULL, sum = 0;
#ifdef TWIN
	twcxx_obj_init(grid_delete);
#endif
	for (long r = 0; r < n; r++) {
		/* 36-48 MiB of floats */
		size_t cells = (size_t)(9u << 20) + (size_t)(tw_rand(&rng) % (3u << 20));
		sum = tw_mix(sum, run_request(cells, &rng));
	}
	printf("bigmat %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
