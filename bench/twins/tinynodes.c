/* tinynodes: tiny list nodes. Each request builds a list of sixteen
 * 32-byte nodes, sums it and frees it.
 * 1,000,000 requests by default: 32 million events, under the 33,554,432
 * that advise's measured replay takes.
 * A pool should LOSE: glibc's per-thread cache (tcache) already keeps
 * these blocks (up to 7 per size; the rest come from the fastbins) at a
 * few nanoseconds a malloc/free; vpool's private slot holds one object
 * and the other fifteen go through the CPU's deque under its lock and
 * sched_getcpu, which costs more than the allocation it saves.
 * Twin: node_new takes nodes from a vpool, node_free puts them. */
// site: node_new
#include <stdint.h>
#include <stdlib.h>

#include "twin.h"

struct node {
	struct node *next;
	uint64_t key, val, pad;
};

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct node *node_new(uint64_t key, struct node *next)
{
#ifdef TWIN
	struct node *n = vpool_get(&pool);
	if (!n)
		n = malloc(sizeof(*n));
#else
	struct node *n = malloc(sizeof(*n));
#endif
	TW_ALLOC(sizeof(*n));
	if (!n)
		abort();
	n->next = next;
	n->key = key;
	n->val = key * 2654435761u;
	n->pad = 0;
	return n;
}

TW_SITE static void node_free(struct node *n)
{
	TW_FREE(sizeof(*n));
#ifdef TWIN
	vpool_put(&pool, n);
#else
	free(n);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	uint64_t rng = 0x5555aaaa3333ccccULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		struct node *head = NULL;
		uint64_t base = tw_rand(&rng);
		for (int i = 0; i < 16; i++)
			head = node_new(base + (uint64_t)i, head);
		tw_sink = head;
		uint64_t s = 0;
		for (struct node *p = head; p; p = p->next)
			s += p->val ^ p->key;
		sum = tw_mix(sum, s);
		while (head) {
			struct node *next = head->next;
			node_free(head);
			head = next;
		}
	}
	printf("tinynodes %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
