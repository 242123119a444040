/* util/heap.h: keys pushed in random order (many equal times, so that
 * ties fall to the ids) come out sorted by (ts, id), pop after pop, and
 * the same from ap_heap_make over an unsorted array; a top key that grows
 * in place (the merges' "its next event") moves down to its place; the
 * heap property holds after every step. */
#include <stdlib.h>

#include "ap_check.h"
#include "heap.h"

static uint64_t rng = 2463534242ull;

static int key_cmp(const void *a, const void *b)
{
	const struct ap_heap_key *x = a, *y = b;
	return ap_heap_less(x, y) ? -1 : ap_heap_less(y, x);
}

static int is_heap(const struct ap_heap_key *h, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (ap_heap_less(&h[i], &h[(i - 1) / 2]))
			return 0;
	return 1;
}

#define N 2000

int main(void)
{
	static struct ap_heap_key keys[N], h[N], want[N];
	for (size_t n = 0; n <= N; n = n ? n * 3 : 1) {
		for (size_t i = 0; i < n; i++)
			keys[i] = (struct ap_heap_key){ap_test_next(&rng) % 16, i};
		/* ids distinct, times mostly shared: shuffle, sort for the reference */
		for (size_t i = n; i > 1; i--) {
			size_t j = ap_test_next(&rng) % i;
			struct ap_heap_key x = keys[i - 1];
			keys[i - 1] = keys[j];
			keys[j] = x;
		}
		for (size_t i = 0; i < n; i++)
			want[i] = keys[i];
		qsort(want, n, sizeof(*want), key_cmp);

		/* push each, pop each */
		size_t nh = 0;
		for (size_t i = 0; i < n; i++) {
			ap_heap_push(h, &nh, keys[i]);
			CHECK(is_heap(h, nh), "n %zu: not a heap after push %zu", n, i);
		}
		for (size_t i = 0; i < n; i++) {
			struct ap_heap_key k = ap_heap_pop(h, &nh);
			CHECK(k.ts == want[i].ts && k.id == want[i].id,
			      "n %zu: pop %zu gave (%llu, %zu), want (%llu, %zu)", n, i,
			      (unsigned long long)k.ts, k.id, (unsigned long long)want[i].ts,
			      want[i].id);
			CHECK(nh == n - i - 1 && is_heap(h, nh), "n %zu: after pop %zu", n, i);
		}

		/* made from an unsorted array */
		for (size_t i = 0; i < n; i++)
			h[i] = keys[i];
		ap_heap_make(h, n);
		CHECK(is_heap(h, n), "n %zu: ap_heap_make", n);
		nh = n;
		for (size_t i = 0; i < n; i++) {
			struct ap_heap_key k = ap_heap_pop(h, &nh);
			CHECK(k.ts == want[i].ts && k.id == want[i].id, "n %zu: made, pop %zu", n,
			      i);
		}
	}

	/* a stream's next event: the top grows in place and moves down */
	struct ap_heap_key s[4];
	size_t ns = 0;
	ap_heap_push(s, &ns, (struct ap_heap_key){5, 2});
	ap_heap_push(s, &ns, (struct ap_heap_key){5, 0});
	ap_heap_push(s, &ns, (struct ap_heap_key){7, 1});
	ap_heap_push(s, &ns, (struct ap_heap_key){3, 3});
	CHECK(s[0].ts == 3 && s[0].id == 3, "least first: (%llu, %zu)", (unsigned long long)s[0].ts,
	      s[0].id);
	s[0].ts = 7; /* stream 3's next is at 7: after (5,0), (5,2), (7,1) */
	ap_heap_down(s, ns, 0);
	size_t order[4], k = 0;
	while (ns)
		order[k++] = ap_heap_pop(s, &ns).id;
	CHECK(order[0] == 0 && order[1] == 2 && order[2] == 1 && order[3] == 3,
	      "order %zu %zu %zu %zu, want 0 2 1 3", order[0], order[1], order[2], order[3]);
	return failures ? 1 : 0;
}
