// grpindex (C++17, g++): a per-request group-by index. Each request is a
// batch of 64-2048 events (log-uniform), each a key of 17-37 characters
// (a tenant prefix and a hex id: always above the 15 characters
// std::string keeps inline) and an int value, the key's id drawn from
// n/5 ids (the smaller of two draws: skewed to the low ids; ~18 % of the
// events bring a key not seen before in the request). build_index
// groups them in a std::unordered_map<std::string, std::vector<int>>:
// per event a std::string made from the event's key (a block of its own),
// moved into the map's node when the key is new (a 72-byte node, the
// bucket array grown by rehashing 13, 29, 59, 127, ... pointers) and
// freed at once when it is not, and the value push_back'ed onto the
// key's vector (grown 1, 2, 4, ... ints, a new block and a copy each
// time). The request then reads the index (per key a digest of its
// values, summed over the keys in any order) and destroys it: every
// node, key, vector and the bucket array freed together. Unlike
// wordbatch.cpp (keys of 3-14 letters, inside the strings; no mapped
// blocks), every node here owns two blocks, a key and a vector.
// The site is build_index (libstdc++'s string, hashtable and vector code
// allocates; allocprof names build_index's lines: the key's line, the
// operator[] line (nodes and bucket arrays) and the push_back line).
// Twin: what a C++ engineer does once the profile shows it: the whole
// index pooled per request (a vpool of them, cxxshim.c's object pool,
// one in use at a time): a pooled index keeps its map (the bucket array
// stays), and at the end of a request every node is extract()ed into a
// free list of node handles with its key string and vector; the next
// request looks its keys up through one scratch string (assign()ed, no
// block), and a new key takes a spare node, assigns the key into the
// node's string and clear()s its vector (both keep their capacity): after
// the first requests nothing is allocated but a node, key or vector
// larger than any before. The reader is the same code for both.
// site: build_index
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "twbase.h"

/* The program's own work, the same code at the same alignment in plain
 * and twin (README, session 39: TW_WORK). */
#define TW_WORK __attribute__((noinline, aligned(64)))

using Index = std::unordered_map<std::string, std::vector<int>>;

#define MAXEV 2048

/* A request's events: keys copied into text, as a parser leaves them. */
struct Req {
	size_t n;
	uint32_t off[MAXEV];
	uint8_t len[MAXEV];
	int val[MAXEV];
	char text[MAXEV * 41];
};

static const char *const prefixes[8] = {
	"acme", "globex-eu", "initech.prod", "umbrella-corp-research",
	"hooli/search", "stark:ind", "wayne-enterprises.gotham", "tyrell",
};

#ifdef TWIN
#include "cxxshim.h"

struct Pooled {
	Index m;
	std::vector<Index::node_type> spare;
	std::string key;
};

static void pooled_delete(void *p)
{
	delete static_cast<Pooled *>(p);
}

/* The pacing: the bytes the plain program's index takes (its keys,
 * nodes, bucket arrays and vectors as libstdc++ grows them). */
static size_t plain_live;
static std::__detail::_Prime_rehash_policy plain_policy;
static size_t plain_bkt, plain_elts;

static void plain_alloc(size_t n)
{
	twcxx_alloced(n);
	plain_live += n;
}

static void plain_free(size_t n)
{
	twcxx_freed(n);
	plain_live -= n;
}

TW_SITE static Pooled *build_index(const Req &rq)
{
	Pooled *p = static_cast<Pooled *>(twcxx_obj_get());
	if (!p)
		p = new Pooled;
	plain_policy = std::__detail::_Prime_rehash_policy();
	plain_bkt = 1, plain_elts = 0;
	for (size_t i = 0; i < rq.n; i++) {
		size_t len = rq.len[i];
		p->key.assign(rq.text + rq.off[i], len);
		plain_alloc(len + 1);
		auto it = p->m.find(p->key);
		if (it == p->m.end()) {
			if (!p->spare.empty()) {
				Index::node_type nh = std::move(p->spare.back());
				p->spare.pop_back();
				nh.key() = p->key;
				nh.mapped().clear();
				it = p->m.insert(std::move(nh)).position;
			} else {
				it = p->m.emplace(p->key, std::vector<int>()).first;
			}
			auto r = plain_policy._M_need_rehash(plain_bkt, plain_elts, 1);
			if (r.first) {
				if (plain_bkt > 1)
					plain_free(plain_bkt * sizeof(void *));
				plain_alloc(r.second * sizeof(void *));
				plain_bkt = r.second;
			}
			plain_elts++;
			plain_alloc(72);
		} else {
			plain_free(len + 1);
		}
		std::vector<int> &v = it->second;
		size_t s = v.size();
		if (s == 0 || (s & (s - 1)) == 0) {	/* plain's vector grows */
			if (s)
				plain_free(s * sizeof(int));
			plain_alloc((s ? 2 * s : 1) * sizeof(int));
		}
		v.push_back(rq.val[i]);
	}
	return p;
}

static void index_done(Pooled *p)
{
	while (!p->m.empty())
		p->spare.push_back(p->m.extract(p->m.begin()));
	twcxx_freed(plain_live);
	plain_live = 0;
	twcxx_obj_put(p);
}
#else
TW_SITE static Index build_index(const Req &rq)
{
	Index m;
	for (size_t i = 0; i < rq.n; i++) {
		std::string key(rq.text + rq.off[i], rq.len[i]);
		std::vector<int> &v = m[std::move(key)];
		v.push_back(rq.val[i]);
	}
	return m;
}
#endif

/* A request's events: 64-2048 (log-uniform), n/5 distinct keys, skewed. */
TW_WORK static void gen_request(uint64_t *rng, Req *rq)
{
	unsigned e = (unsigned)(tw_rand(rng) % 5120);
	size_t n = (size_t)(64.0 * __builtin_exp2((double)e / 1024.0));
	if (n > MAXEV)
		n = MAXEV;
	size_t keys = n / 5 < 4 ? 4 : n / 5;
	uint32_t seed = (uint32_t)tw_rand(rng);
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = tw_rand(rng);
		size_t a = (size_t)(r % keys), b = (size_t)((r >> 32) % keys);
		size_t id = a < b ? a : b;
		const char *pre = prefixes[(id * 7 + seed) % 8];
		int len = snprintf(rq->text + at, 41, "%s/%012llx", pre,
				   (unsigned long long)((id * 0x9e3779b1u) ^ seed));
		rq->off[i] = (uint32_t)at;
		rq->len[i] = (uint8_t)len;
		rq->val[i] = (int)(r >> 40) - (1 << 23);
		at += (size_t)len;
	}
	rq->n = n;
}

/* The reader: per key a digest of its values, summed (any order). */
TW_WORK static uint64_t read_index(const Index &m)
{
	uint64_t sum = m.size();
	for (const auto &kv : m) {
		uint64_t h = kv.first.size();
		for (char c : kv.first)
			h = h * 131 + (unsigned char)c;
		for (int v : kv.second)
			h = tw_mix(h, (uint64_t)(int64_t)v);
		sum += tw_mix(h, kv.second.size());
	}
	return sum;
}

static Req rq;

int main(int argc, char **argv)
{
	long reqs = argc > 1 ? atol(argv[1]) : 6000;
	uint64_t rng = 0x6a09e667f3bcc908ULL, sum = 0, events = 0;
#ifdef TWIN
	twcxx_obj_init(pooled_delete);
#endif
	for (long q = 0; q < reqs; q++) {
		gen_request(&rng, &rq);
		events += rq.n;
#ifdef TWIN
		Pooled *p = build_index(rq);
		sum = tw_mix(sum, read_index(p->m));
		index_done(p);
#else
		{
			Index m = build_index(rq);
			sum = tw_mix(sum, read_index(m));
		}
#endif
	}
	printf("grpindex %ld requests %llu events checksum %016llx\n", reqs, (unsigned long long)events,
	       (unsigned long long)sum);
	return 0;
}
