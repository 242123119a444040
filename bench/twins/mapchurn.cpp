// mapchurn (C++17, clang++): tiny nodes in a std::map. Each request
// counts 16-1024 words (log-uniform) drawn from a vocabulary of 4096
// into a std::map<uint32_t, uint32_t> (word id -> count): a 40-byte
// red-black tree node per distinct word (malloc'd through std::allocator
// and operator new), then drops the words seen once (erase: a node freed
// mid-request), sums the tree in order and destroys it (every node freed).
// Unlike tinynodes.c (lists of sixteen 32-byte nodes) and jsonnodes.c
// (a tree of C structs), the nodes are libstdc++'s, made and freed by
// std::map's own code instantiated in this program.
// A pool should LOSE: tcache serves 48-byte chunks in a few ns, and a
// tree freed whole puts all but one node through vpool's locked deque.
// Twin: the C++ way to pool a container's nodes: std::map with an
// allocator whose single-object allocate/deallocate take the node from a
// vpool and put it back (through cxxshim.c's pool of blocks).
// The site is count_words (the inserts; allocprof skips std::'s frames
// and operator new).
// site: count_words
// cxx: clang++
// cc: clang
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>

#include "twbase.h"

#ifdef TWIN
extern "C" {
void twcxx_init(void);
void *twcxx_get(size_t n);
void twcxx_put(void *p, size_t n);
}

template <class T> struct PoolAlloc {
	using value_type = T;
	PoolAlloc() = default;
	template <class U> PoolAlloc(const PoolAlloc<U> &) {}
	T *allocate(size_t n)
	{
		void *p = n == 1 ? twcxx_get(sizeof(T)) : malloc(n * sizeof(T));
		if (!p)
			throw std::bad_alloc();
		return static_cast<T *>(p);
	}
	void deallocate(T *p, size_t n)
	{
		if (n == 1)
			twcxx_put(p, sizeof(T));
		else
			free(p);
	}
	template <class U> bool operator==(const PoolAlloc<U> &) const { return true; }
	template <class U> bool operator!=(const PoolAlloc<U> &) const { return false; }
};
using Counts = std::map<uint32_t, uint32_t, std::less<uint32_t>,
			PoolAlloc<std::pair<const uint32_t, uint32_t>>>;
#else
using Counts = std::map<uint32_t, uint32_t>;
#endif

/* One request's words counted: the site. */
TW_SITE static void count_words(Counts &m, uint64_t *rng, unsigned words)
{
	for (unsigned i = 0; i < words; i++) {
		/* a skewed vocabulary: small ids are common */
		uint64_t r = tw_rand(rng);
		uint32_t id = (uint32_t)((r % 4096) * ((r >> 20) % 4096) / 4096);
		m[id]++;
	}
}

TW_SITE static uint64_t digest(Counts &m)
{
	for (auto it = m.begin(); it != m.end();)
		if (it->second == 1)
			it = m.erase(it);
		else
			++it;
	uint64_t h = m.size();
	for (const auto &kv : m)
		h = tw_mix(h, (uint64_t)kv.first << 20 | kv.second);
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 60000;
	uint64_t rng = 0x7777aaaa12345678ULL, sum = 0;
#ifdef TWIN
	twcxx_init();
#endif
	for (long r = 0; r < n; r++) {
		/* 16 * 2^(0..6): log-uniform 16-1024 words */
		unsigned e = (unsigned)(tw_rand(&rng) % 6144);
		unsigned words = (unsigned)(16.0 * __builtin_exp2((double)e / 1024.0));
		Counts m;
		count_words(m, &rng, words);
		sum = tw_mix(sum, digest(m));
	}
	printf("mapchurn %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
