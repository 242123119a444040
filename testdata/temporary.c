/* testdata for temporary allocations (heaptrack's: freed by the thread's
 * next event). Per round of the first loop: p is freed at once (temporary),
 * q is not (r comes between), r is not (the free of q comes between): 1 of
 * 3. Per round of the second: a block grown twice by realloc and freed,
 * each realloc freeing the block allocated just before, and the free the
 * last one: 3 of 3. In all 1000 + 1500 = 2500 of 4500 allocations.
 * Then handover() keeps one 64-byte block from handover_get() and, 1000
 * times, gets the next and frees the one it held: no block is freed by
 * its thread's next event (0 more of 1001), but each of those frees
 * but the first comes right after an allocation of the same stack and
 * size, which is heaptrack's rule: 999 more for heaptrack, 3499 (the
 * first block held was got from another line, another stack).
 * usage: temporary */
#include <stdlib.h>

#include "tdutil.h"

static __attribute__((noinline)) void pairs(void)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(100);
		td_touch(p, 100, 1);
		free(p);
		char *q = malloc(200);
		td_touch(q, 200, 2);
		char *r = malloc(300);
		td_touch(r, 300, 3);
		free(q);
		free(r);
	}
}

static __attribute__((noinline)) void chains(void)
{
	for (int i = 0; i < 500; i++) {
		char *p = malloc(10);
		td_touch(p, 10, 4);
		p = realloc(p, 20);
		td_touch(p, 20, 5);
		p = realloc(p, 40);
		td_touch(p, 40, 6);
		free(p);
	}
}

static __attribute__((noinline)) char *handover_get(void)
{
	char *p = malloc(64);
	td_touch(p, 64, 7);
	return p;
}

static __attribute__((noinline)) void handover(void)
{
	char *held = handover_get();
	for (int i = 0; i < 1000; i++) {
		char *next = handover_get();
		free(held);
		held = next;
	}
	td_touch(held, 64, 8);
	free(held);
}

int main(void)
{
	pairs();
	chains();
	handover();
	td_say("temporary: done\n");
	return 0;
}
