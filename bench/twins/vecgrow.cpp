/* vecgrow (C++17): a request handler that collects values into a
 * std::vector. Each request gathers 20-3000 64-bit values (ids of
 * matching records, say) with push_back into a std::vector<uint64_t> that
 * starts empty and grows as libstdc++ grows it: to twice its capacity from
 * 1, blocks of 8, 16, 32, ... 32768 bytes, each new one copied into and
 * the old one freed (an inlined template: the program's own call of
 * operator new). It then sums and mixes the values, as a reply would, and
 * drops the vector. The site is collect().
 * A pool should help: up to 13 blocks a request, the larger ones from
 * glibc's bins (the top of the heap stays below the trim threshold); a
 * pool of vectors, each reused with its capacity kept, saves the
 * allocations and the copies of each growth.
 * Twin: what a C++ engineer does to pool it: collect() takes a
 * std::vector from a vpool of them (through cxxshim.c, one call a
 * request), clear()s it (the capacity stays), fills it as plain does and
 * puts it back; a vector the pool's cycles drop is deleted. */
// site: collect
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

static void vector_delete(void *p)
{
	delete static_cast<std::vector<uint64_t> *>(p);
}

/* The capacity the plain program's vector would have (libstdc++ doubles
 * it from 1): the pacing counts the blocks plain allocates and frees, in
 * plain's order, once the vector is filled. Not at each push_back: that
 * check in the loop cost the twin 11 ms under gcc and 34 ms under clang
 * (README, "Session 20: clang and rustc"), and the counts are the same
 * either way (the pooled vector is out of the pool while it fills, so a
 * cycle during the loop or after it is the same to the pool). */
static size_t plain_cap;

static void plain_grew(size_t size)
{
	while (size > plain_cap) {
		size_t cap = plain_cap ? 2 * plain_cap : 1;
		twcxx_alloced(cap * sizeof(uint64_t));
		if (plain_cap)
			twcxx_freed(plain_cap * sizeof(uint64_t));
		plain_cap = cap;
	}
}
#define TW_GREW(v) plain_grew((v).size())
#else
#define TW_GREW(v) ((void)0)
#endif

/* One request: the site. */
TW_SITE static uint64_t collect(uint64_t *rng)
{
#ifdef TWIN
	auto *pooled = static_cast<std::vector<uint64_t> *>(twcxx_obj_get());
	if (!pooled)
		pooled = new std::vector<uint64_t>;
	pooled->clear();	/* the capacity stays */
	plain_cap = 0;
	std::vector<uint64_t> &v = *pooled;
#else
	std::vector<uint64_t> v;
#endif
	tw_sink = &v;
	uint64_t x = tw_rand(rng);
	unsigned n = 20 + (unsigned)(x % 2981);
	uint64_t y = x;
	for (unsigned i = 0; i < n; i++) {
		y = y * 6364136223846793005ULL + 1442695040888963407ULL;
		v.push_back(y >> 7);
	}
	TW_GREW(v);
	uint64_t h = v.size();
	for (uint64_t e : v)
		h = tw_mix(h, e);
#ifdef TWIN
	if (plain_cap)
		twcxx_freed(plain_cap * sizeof(uint64_t));	/* the plain vector's destructor */
	twcxx_obj_put(pooled);
#endif
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	uint64_t rng = 0x2545f4914f6cdd1dULL, sum = 0;
#ifdef TWIN
	twcxx_obj_init(vector_delete);
#endif
	for (long r = 0; r < n; r++)
		sum = tw_mix(sum, collect(&rng));
	std::printf("vecgrow %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
