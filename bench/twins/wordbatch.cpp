// wordbatch (C++17, clang++): a word count rebuilt per batch. Each batch
// (a stream's next 64-4096 tokens, log-uniform, drawn from a vocabulary
// of 20,000 words of 3-14 letters with a Zipf-like skew) is counted in a
// std::unordered_map<std::string, uint32_t>: one node per distinct word
// (56 bytes: the next pointer, the std::string with the word inline, the
// count, the cached hash), the bucket array grown by rehashing as the map
// fills; then the batch's top word and a digest over the counts are
// taken and the map is destroyed (every node and the buckets freed).
// Unlike mapchurn.cpp (std::map<uint32_t, uint32_t>: 48-byte red-black
// nodes, no buckets), the keys are strings (short: libstdc++ keeps up to
// 15 characters inside the string, no block of their own) and the map
// allocates bucket arrays of 13 to ~4,500 pointers as it grows.
// Written expecting a pool to LOSE (tcache serves 64-byte chunks in a few
// ns; a map destroyed whole puts all but one node a pool holds through
// its locked deque), it saves ~5-7 % (README, "Session 29"): a map
// destroyed whole leaves ~1,000 chunks in glibc's fastbins, and the next
// batch's first bucket array above the small bins' range makes malloc
// consolidate them all (6 % of the plain program's instructions).
// Twin: the map with an allocator whose single-object allocate and
// deallocate (the nodes) take and put blocks of a vpool (cxxshim.c's pool
// of blocks); the bucket arrays (n > 1) from malloc, as before.
// The site is count_batch (the inserts; allocprof skips std::'s frames
// and operator new).
// site: count_batch
// cxx: clang++
// cc: clang
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
using Counts = std::unordered_map<std::string, uint32_t, std::hash<std::string>, std::equal_to<std::string>,
				  PoolAlloc<std::pair<const std::string, uint32_t>>>;
#else
using Counts = std::unordered_map<std::string, uint32_t>;
#endif

/* One batch's tokens counted: the site. */
TW_SITE static void count_batch(Counts &m, const std::vector<std::string> &vocab, uint64_t *rng, unsigned tokens)
{
	for (unsigned i = 0; i < tokens; i++) {
		uint64_t r = tw_rand(rng);
		/* skewed: small ranks are common */
		size_t rank = (size_t)((r % 20000) * ((r >> 20) % 20000) / 20000);
		++m[vocab[rank]];
	}
}

TW_SITE static uint64_t digest(const Counts &m)
{
	uint64_t h = m.size();
	std::string_view top;
	uint32_t best = 0;
	for (const auto &kv : m) {
		h += (uint64_t)kv.second * (kv.first.size() + 1) * 0x9e3779b97f4a7c15ULL;	/* order-free */
		if (kv.second > best || (kv.second == best && kv.first < top)) {
			best = kv.second;
			top = kv.first;
		}
	}
	for (char c : top)
		h = tw_mix(h, (uint64_t)c);
	return tw_mix(h, best);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 6000;
	uint64_t rng = 0x3141592653589793ULL, sum = 0;
	std::vector<std::string> vocab;
	vocab.reserve(20000);
	for (int i = 0; i < 20000; i++) {
		uint64_t r = tw_rand(&rng);
		std::string w;
		for (unsigned k = 0, len = 3 + (unsigned)(r % 12); k < len; k++)
			w += (char)('a' + (r >> (8 + 2 * k)) % 26);
		vocab.push_back(std::move(w));
	}
#ifdef TWIN
	twcxx_init();
#endif
	for (long b = 0; b < n; b++) {
		/* 64 * 2^(0..6): log-uniform 64-4096 tokens */
		unsigned tokens = (unsigned)(64.0 * std::exp2((double)(tw_rand(&rng) % 6000) / 1000.0));
		Counts m;
		count_batch(m, vocab, &rng, tokens);
		sum = tw_mix(sum, digest(m));
	}
	printf("wordbatch %ld batches checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
