/* packets (C++17): per-request objects made with `new`. Each request
 * makes four Packet objects (12 KiB each: a header and a payload array)
 * with new, fills and parses them, and deletes them when the response
 * is done: the site is handle(), where `new Packet` is (allocprof skips
 * operator new and names the caller).
 * A pool should help a little: 12 KiB is above tcache's range, so glibc
 * serves each from its bins and merges it back into the top chunk on
 * delete (48 KiB at the top stays below the trim threshold: no page
 * faults); the pool saves that malloc/free pair per object.
 * Twin: Packet has a class-specific operator new/delete that takes
 * packets from a vpool, the C++ way to hand-pool a class. vpool.h did
 * not compile as C++ then, so the twin reaches it through cxxshim.c (a C
 * file), one function call per Get or Put (README: "vpool.h and C++"). */
// site: handle
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include "twbase.h"

#ifdef TWIN
extern "C" {
void twcxx_init(void);
void *twcxx_get(size_t n);
void twcxx_put(void *p, size_t n);
}
#endif

struct Packet {
	uint32_t kind, len;
	uint64_t id;
	uint32_t words[3068];
#ifdef TWIN
	static void *operator new(size_t n)
	{
		void *p = twcxx_get(n);
		if (!p)
			throw std::bad_alloc();
		return p;
	}
	static void operator delete(void *p, size_t n)
	{
		twcxx_put(p, n);
	}
#endif
};

TW_SITE static uint64_t handle(uint64_t *rng)
{
	std::unique_ptr<Packet> pk[4];
	for (auto &p : pk) {
		p.reset(new Packet);
		tw_sink = p.get();
		p->id = tw_rand(rng);
		p->kind = (uint32_t)(p->id & 7);
		p->len = 1024 + (uint32_t)(p->id % 2044);
		for (uint32_t i = 0; i < p->len; i++)
			p->words[i] = (uint32_t)(p->id >> (i & 31)) + i;
	}
	uint64_t h = 0;
	for (auto &p : pk)
		for (uint32_t i = 0; i < p->len; i += 4)
			h = h * 1099511628211ULL + p->words[i] + p->kind;
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 150000;
	uint64_t rng = 0x31415926535897ULL, sum = 0;
#ifdef TWIN
	twcxx_init();
#endif
	for (long r = 0; r < n; r++)
		sum ^= handle(&rng) + (sum << 6) + (sum >> 2);
	std::printf("packets %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
