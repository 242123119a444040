// lru (C++17): an LRU cache in front of a slow store, mixing long and
// short lives. 3072 entries, each a std::list node (the recency order)
// indexed by a std::unordered_map, holding a value of 512 B-7 KiB
// (log-uniform by key) loaded from the "store" (generated, every byte
// written) on a miss. Each request asks for a key drawn with a skew
// (about 70 % hits, which allocate nothing but move the entry to the
// front); a miss loads the value (the site), and once the cache is full
// evicts the least recently used entry, freeing its value, list node and
// map node. Every request also builds a short-lived reply (a std::string
// of a header and the value's first 64-1024 bytes) and drops it.
// Unlike cache.c (random eviction of 8192 slots) the objects freed are
// the OLDEST, so the heap's holes are where the long-lived values were,
// and the replies land among them.
// Twin: what a hand-pooler does with the values: five pools by size
// class (512 B << 0..4, the request rounded up), an evicted value goes
// back to its class's pool and the next load of that class takes it
// (through cxxshim.c, one call a load and one an eviction).
// site: value_new
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <unordered_map>

#include "twbase.h"

#ifdef TWIN
extern "C" {
void twcxx_cls_init(void);
void *twcxx_cls_get(unsigned c, size_t n);
void twcxx_cls_put(unsigned c, void *p, size_t n);
}
#endif

struct Entry {
	uint32_t key;
	uint32_t len;
	unsigned char *val;
};

static const unsigned CAP = 3072;

/* The size class a hand-pooler would use: 512 << c >= n. */
static unsigned class_of(size_t n)
{
	unsigned c = 0;
	while (((size_t)512 << c) < n)
		c++;
	return c;
}

static size_t value_len(uint32_t key)
{
	uint64_t s = key * 0x9e3779b97f4a7c15ULL;
	unsigned e = (unsigned)(tw_rand(&s) % 3584);	/* 512 * 2^(0..3.5) */
	return (size_t)(512.0 * __builtin_exp2((double)e / 1024.0));
}

/* A value loaded from the store: the site. */
TW_SITE static unsigned char *value_new(uint32_t key, size_t len)
{
#ifdef TWIN
	auto *v = static_cast<unsigned char *>(twcxx_cls_get(class_of(len), len));
#else
	auto *v = static_cast<unsigned char *>(malloc(len));
#endif
	if (!v)
		abort();
	uint64_t s = key | 1;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w = tw_rand(&s);
		memcpy(v + i, &w, 8);
	}
	for (size_t i = len & ~(size_t)7; i < len; i++)
		v[i] = (unsigned char)key;
	return v;
}

TW_SITE static void value_free(unsigned char *v, size_t len)
{
#ifdef TWIN
	twcxx_cls_put(class_of(len), v, len);
#else
	(void)len;
	free(v);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1500000;
	uint64_t rng = 0x1badb002deadbeefULL, sum = 0;
	std::list<Entry> order;
	std::unordered_map<uint32_t, std::list<Entry>::iterator> index;
	index.reserve(CAP * 2);
#ifdef TWIN
	twcxx_cls_init();
#endif
	for (long r = 0; r < n; r++) {
		/* skewed keys over 12288: a third of the key space fits */
		uint64_t x = tw_rand(&rng);
		uint32_t key = (uint32_t)((x % 12288) * ((x >> 24) % 12288) / 12288);
		if ((x >> 50) % 4 == 0)
			key = (uint32_t)((x >> 8) % 12288);
		Entry *e;
		auto it = index.find(key);
		if (it != index.end()) {
			order.splice(order.begin(), order, it->second);
			e = &order.front();
		} else {
			if (order.size() == CAP) {
				Entry &old = order.back();
				value_free(old.val, old.len);
				index.erase(old.key);
				order.pop_back();
			}
			size_t len = value_len(key);
			order.push_front(Entry{ key, (uint32_t)len, value_new(key, len) });
			index.emplace(key, order.begin());
			e = &order.front();
		}
		/* the reply: a header and a prefix of the value */
		size_t part = 64 + (size_t)((x >> 30) % 961);
		if (part > e->len)
			part = e->len;
		std::string reply = "HTTP/1.1 200 OK\r\nX-Key: " + std::to_string(e->key) + "\r\n\r\n";
		reply.append(reinterpret_cast<const char *>(e->val), part);
		uint64_t h = reply.size();
		for (size_t i = 0; i + 8 <= reply.size(); i += 32) {
			uint64_t w;
			memcpy(&w, reply.data() + i, 8);
			h = tw_mix(h, w);
		}
		sum = tw_mix(sum, h);
		tw_sink = &reply[0];
	}
	printf("lru %ld requests %zu cached checksum %016llx\n", n, order.size(),
	       (unsigned long long)sum);
	return 0;
}
