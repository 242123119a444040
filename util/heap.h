/* A binary min-heap of (ts, id) keys: the k-way merges' (trace/order.c,
 * the threads of a trace; trace/run.c, the processes of a run). Keys are
 * ordered by ts, then by id, so that ties go to the lower id; ids are
 * distinct in a heap, which makes the order total: the keys come out the
 * same way whatever order they went in. The caller owns the array (room
 * for every key it pushes); static inline, as the merges' hot path. */
#ifndef AP_HEAP_H
#define AP_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ap_heap_key {
	uint64_t ts;
	size_t id;
};

static inline bool ap_heap_less(const struct ap_heap_key *a, const struct ap_heap_key *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->id < b->id);
}

/* Moves h[i] down to its place among h[0, n) (after h[i] grew, or to
 * build a heap: ap_heap_make). */
static inline void ap_heap_down(struct ap_heap_key *h, size_t n, size_t i)
{
	struct ap_heap_key x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && ap_heap_less(&h[c + 1], &h[c]))
			c++;
		if (!ap_heap_less(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Adds x to the heap h[0, *n). */
static inline void ap_heap_push(struct ap_heap_key *h, size_t *n, struct ap_heap_key x)
{
	size_t k = (*n)++;
	while (k && ap_heap_less(&x, &h[(k - 1) / 2])) {
		h[k] = h[(k - 1) / 2];
		k = (k - 1) / 2;
	}
	h[k] = x;
}

/* Takes the least key out of the heap h[0, *n), which is not empty. */
static inline struct ap_heap_key ap_heap_pop(struct ap_heap_key *h, size_t *n)
{
	struct ap_heap_key top = h[0];
	h[0] = h[--*n];
	ap_heap_down(h, *n, 0);
	return top;
}

/* Makes h[0, n), in any order, a heap. */
static inline void ap_heap_make(struct ap_heap_key *h, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		ap_heap_down(h, n, i);
}

#endif
