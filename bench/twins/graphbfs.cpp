/* graphbfs (C++17, clang++): breadth-first queries on a graph, as a
 * routing or recommendation service answers them. The graph (50,000
 * nodes, 4-12 edges each, mostly local with a few long links) is built
 * once into compressed rows; each query starts at a random node and
 * walks breadth-first until it has seen 64-16,384 nodes (log-uniform) or
 * run out, with a std::vector<bool> of the graph's size for the nodes
 * seen (6.1 KiB, zeroed) and a std::deque<uint32_t> for the frontier
 * (libstdc++: a 64-byte map and 512-byte chunks, a new chunk every 128
 * nodes pushed and the old ones freed as the front passes them); it
 * returns how many nodes it saw and the sum of their depths.
 * The site is bfs(): the vector's block and the deque's map and chunks
 * (libstdc++'s code, inlined into bfs or called from it).
 * Twin: what a C++ engineer does once the profile shows it: the query's
 * scratch (the vector and the deque) kept in a pool of scratch objects
 * (cxxshim.c's object pool), the vector assign()ed false (its block
 * kept), the deque clear()ed (libstdc++ keeps its map and one chunk). */
// site: bfs
// cxx: clang++
// cc: clang
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

#include "twbase.h"

#define NODES 50000

static std::vector<uint32_t> row, col;

#ifdef TWIN
#include "cxxshim.h"

struct Scratch {
	std::vector<bool> seen;
	std::deque<uint32_t> q;
};
static void scratch_delete(void *p)
{
	delete static_cast<Scratch *>(p);
}
#endif

struct Result {
	uint64_t seen, depth_sum;
};

TW_SITE static Result bfs(uint32_t src, uint64_t limit)
{
#ifdef TWIN
	Scratch *s = static_cast<Scratch *>(twcxx_obj_get());
	if (!s)
		s = new Scratch;
	s->seen.assign(NODES, false);
	s->q.clear();
	std::vector<bool> &seen = s->seen;
	std::deque<uint32_t> &q = s->q;
	/* the pacing: the plain program's vector, map and first chunk */
	twcxx_alloced((NODES + 63) / 64 * 8 + 64 + 512);
#else
	std::vector<bool> seen(NODES, false);
	std::deque<uint32_t> q;
#endif
	Result r = {0, 0};
	seen[src] = true;
	q.push_back(src);
	q.push_back(0);	/* depth */
	while (!q.empty() && r.seen < limit) {
		uint32_t v = q.front();
		q.pop_front();
		uint32_t d = q.front();
		q.pop_front();
		r.seen++;
		r.depth_sum += d;
		for (uint32_t e = row[v]; e < row[v + 1]; e++) {
			uint32_t w = col[e];
			if (!seen[w]) {
				seen[w] = true;
				q.push_back(w);
				q.push_back(d + 1);
			}
		}
	}
#ifdef TWIN
	twcxx_freed((NODES + 63) / 64 * 8 + 64 + 512);
	twcxx_obj_put(s);
#endif
	return r;
}

int main(int argc, char **argv)
{
	long queries = argc > 1 ? atol(argv[1]) : 4000;
	uint64_t rng = 0x62f5b0c4a1e9d377ULL, sum = 0;
	row.resize(NODES + 1);
	for (uint32_t v = 0; v < NODES; v++) {
		row[v] = (uint32_t)col.size();
		unsigned deg = 4 + (unsigned)(tw_rand(&rng) % 9);
		for (unsigned k = 0; k < deg; k++) {
			uint64_t r = tw_rand(&rng);
			uint32_t w = (r & 15) == 0 ? (uint32_t)((r >> 8) % NODES)
						   : (uint32_t)((v + NODES + (r >> 8) % 41 - 20) % NODES);
			col.push_back(w);
		}
	}
	row[NODES] = (uint32_t)col.size();
#ifdef TWIN
	twcxx_obj_init(scratch_delete);
#endif
	for (long q = 0; q < queries; q++) {
		uint64_t r = tw_rand(&rng);
		uint64_t limit = (uint64_t)(64.0 * std::exp2((double)(r % 8192) / 1024.0));
		Result res = bfs((uint32_t)((r >> 20) % NODES), limit);
		sum = tw_mix(sum, tw_mix(res.seen, res.depth_sum));
	}
	printf("graphbfs %ld queries checksum %016llx\n", queries, (unsigned long long)sum);
	return 0;
}
