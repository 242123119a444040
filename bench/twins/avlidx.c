/* avlidx: a per-request index in an AVL tree. Each request (a batch of
 * 32-2048 records, log-uniform, with keys drawn from a space of 2^20, a
 * fifth of them repeated) builds an AVL tree keyed by record id: a
 * 48-byte node per distinct key (key, value, two children, height),
 * malloc'd at the insert, rebalanced by rotations on the way up; then
 * answers twice as many point lookups and one range count, and tears the
 * tree down in post-order (every node freed, children before parents).
 * Unlike mapchurn.cpp (std::map's red-black nodes, libstdc++'s code) and
 * jsonnodes.c (a parse tree freed in its own order), this is the tree a
 * C programmer writes: recursive insert, the nodes freed bottom-up.
 * A pool should LOSE: tcache and the fastbins serve 48-byte blocks in a
 * few ns; a pool serves one node from its private slot and the rest
 * through the CPU's locked deque.
 * Twin: node_new takes nodes from a vpool, the teardown puts them back. */
// site: node_new
// libs: -lm
#include <stdint.h>
#include <stdlib.h>

#include "twin.h"

struct node {
	uint32_t key;
	int height;
	uint64_t value;
	struct node *l, *r;
	uint64_t stamp;
};

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct node *node_new(uint32_t key, uint64_t value)
{
#ifdef TWIN
	struct node *n = tw_get(&pool, sizeof(struct node));
#else
	struct node *n = malloc(sizeof(struct node));
#endif
	TW_ALLOC(sizeof(struct node));
	if (!n)
		abort();
	n->key = key;
	n->value = value;
	n->l = n->r = NULL;
	n->height = 1;
	n->stamp = value ^ key;
	return n;
}

static void node_free(struct node *n)
{
	TW_FREE(sizeof(struct node));
#ifdef TWIN
	vpool_put(&pool, n);
#else
	free(n);
#endif
}

static int ht(const struct node *n) { return n ? n->height : 0; }

static void fix(struct node *n)
{
	int a = ht(n->l), b = ht(n->r);
	n->height = 1 + (a > b ? a : b);
}

static struct node *rot_right(struct node *n)
{
	struct node *l = n->l;
	n->l = l->r;
	l->r = n;
	fix(n);
	fix(l);
	return l;
}

static struct node *rot_left(struct node *n)
{
	struct node *r = n->r;
	n->r = r->l;
	r->l = n;
	fix(n);
	fix(r);
	return r;
}

static struct node *balance(struct node *n)
{
	fix(n);
	int bf = ht(n->l) - ht(n->r);
	if (bf > 1) {
		if (ht(n->l->l) < ht(n->l->r))
			n->l = rot_left(n->l);
		return rot_right(n);
	}
	if (bf < -1) {
		if (ht(n->r->r) < ht(n->r->l))
			n->r = rot_right(n->r);
		return rot_left(n);
	}
	return n;
}

static struct node *insert(struct node *n, uint32_t key, uint64_t value)
{
	if (!n)
		return node_new(key, value);
	if (key < n->key)
		n->l = insert(n->l, key, value);
	else if (key > n->key)
		n->r = insert(n->r, key, value);
	else {
		n->value += value;
		return n;
	}
	return balance(n);
}

static const struct node *find(const struct node *n, uint32_t key)
{
	while (n && n->key != key)
		n = key < n->key ? n->l : n->r;
	return n;
}

static unsigned long count_range(const struct node *n, uint32_t lo, uint32_t hi)
{
	if (!n)
		return 0;
	if (n->key < lo)
		return count_range(n->r, lo, hi);
	if (n->key > hi)
		return count_range(n->l, lo, hi);
	return 1 + count_range(n->l, lo, hi) + count_range(n->r, lo, hi);
}

static void destroy(struct node *n)
{
	if (!n)
		return;
	destroy(n->l);
	destroy(n->r);
	node_free(n);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 8000;
	uint64_t rng = 0x0a1b2c3d4e5f6071ULL, sum = 0;
	uint32_t keys[2048];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long q = 0; q < n; q++) {
		/* 32 * 2^(0..6): log-uniform 32-2048 records */
		unsigned m = (unsigned)(32.0 * __builtin_exp2((double)(tw_rand(&rng) % 6000) / 1000.0));
		struct node *root = NULL;
		for (unsigned i = 0; i < m; i++) {
			uint64_t r = tw_rand(&rng);
			keys[i] = i && (r & 7) < 2 ? keys[(r >> 3) % i] : (uint32_t)(r >> 40) & 0xfffff;
			root = insert(root, keys[i], r >> 8);
		}
		for (unsigned i = 0; i < 2 * m; i++) {
			uint64_t r = tw_rand(&rng);
			const struct node *f = find(root, r & 1 ? keys[(r >> 1) % m] : (uint32_t)(r >> 40) & 0xfffff);
			sum = tw_mix(sum, f ? f->value : 0);
		}
		uint32_t lo = (uint32_t)tw_rand(&rng) & 0xfffff;
		sum = tw_mix(sum, count_range(root, lo, lo + 0x10000));
		destroy(root);
	}
	printf("avlidx %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
