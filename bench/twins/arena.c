/* arena: an arena that already pools. Each request parses into a
 * per-request arena that bump-allocates its nodes from 64 KiB chunks; on
 * release the arena keeps up to 8 free chunks for the next request and
 * frees the rest. Most requests need 1 to 3 chunks, one in 64 needs 10
 * to 16: chunks are malloc'd only then (a few per hundred requests).
 * A pool should gain nothing: the arena already reuses its chunks; the
 * pool only catches the few chunks freed after a big request until the
 * next one, while the work is in the nodes.
 * Twin: arena_chunk takes chunks from a vpool when the arena's own list
 * is empty, and chunks beyond the arena's 8 go to the vpool, not free. */
// site: arena_chunk
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define CHUNK (64 << 10)
#define KEEP 8

struct chunk {
	struct chunk *next;
	size_t used;
	unsigned char mem[];
};

static struct chunk *spare;	/* the arena's own free list */
static unsigned nspare;

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct chunk *arena_chunk(void)
{
	struct chunk *c = spare;
	if (c) {
		spare = c->next;
		nspare--;
	} else {
#ifdef TWIN
		c = tw_get(&pool, CHUNK);
#else
		c = malloc(CHUNK);
#endif
		TW_ALLOC(CHUNK);
		if (!c)
			abort();
		tw_sink = c;
	}
	c->next = NULL;
	c->used = 0;
	return c;
}

struct arena {
	struct chunk *cur;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!a->cur || a->cur->used + n > CHUNK - sizeof(struct chunk)) {
		struct chunk *c = arena_chunk();
		c->next = a->cur;
		a->cur = c;
	}
	void *p = a->cur->mem + a->cur->used;
	a->cur->used += n;
	return p;
}

static void arena_release(struct arena *a)
{
	while (a->cur) {
		struct chunk *c = a->cur;
		a->cur = c->next;
		if (nspare < KEEP) {
			c->next = spare;
			spare = c;
			nspare++;
			continue;
		}
		TW_FREE(CHUNK);
#ifdef TWIN
		vpool_put(&pool, c);
#else
		free(c);
#endif
	}
}

struct node {
	struct node *left, *right;
	uint64_t key;
	uint32_t len;
	char text[];
};

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 15000;
	uint64_t rng = 0x7777666655554444ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		struct arena a = { NULL };
		unsigned nodes = (tw_rand(&rng) & 63) ? 300 + (unsigned)(tw_rand(&rng) % 1500)
						       : 8000 + (unsigned)(tw_rand(&rng) % 5000);
		struct node *root = NULL;
		for (unsigned i = 0; i < nodes; i++) {
			uint32_t len = 16 + (uint32_t)(tw_rand(&rng) % 96);
			struct node *x = arena_alloc(&a, sizeof(*x) + len);
			x->key = tw_rand(&rng);
			x->len = len;
			memset(x->text, (int)(x->key & 255), len);
			x->left = x->right = NULL;
			struct node **at = &root;	/* a binary search tree, 16 levels at most */
			for (int d = 0; *at && d < 16; d++)
				at = x->key < (*at)->key ? &(*at)->left : &(*at)->right;
			if (!*at)
				*at = x;
		}
		uint64_t h = 0;
		for (struct node *p = root; p; p = p->left)
			h = tw_mix(h, p->key + p->text[p->len - 1]);
		sum = tw_mix(sum, h);
		arena_release(&a);
	}
	printf("arena %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
