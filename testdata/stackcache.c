/* The cases the sampler's stack cache must tell apart (sampler/stacks.h,
 * "the stack cache"): the same return address at the same stack pointer under
 * different callers, recursion (the same call site at many depths),
 * threads whose stacks reuse the same addresses one after the other, and
 * realloc and calloc through the same machinery. Every count is known by
 * construction; tests/e2e/stackcache.sh checks the stacks of a recording
 * against them, and against a recording with the cache off.
 *
 * Built with -fno-inline, -fno-ipa-icf (via_a and via_b are the same code)
 * and -fno-optimize-sibling-calls: every function here is a frame of its
 * own. */
#include <pthread.h>
#include <stdlib.h>

#include "tdutil.h"

#define NOINLINE __attribute__((noinline, noclone))
#define ROUNDS 1000
#define DEPTH 12

/* One call site, reached along many paths. */
static NOINLINE void *leaf(size_t n)
{
	void *p = malloc(n);
	td_sink = p;
	return p;
}

/* via_a and via_b have the same frame, so leaf sees the same return
 * address and the same stack pointer whichever main calls. */
static NOINLINE void via_a(void)
{
	free(leaf(24));
}

static NOINLINE void via_b(void)
{
	free(leaf(24));
}

/* The same call of leaf at DEPTH different depths. */
static NOINLINE void rec(int d)
{
	free(leaf(40));
	if (d > 1)
		rec(d - 1);
}

/* realloc and calloc from one place each, alternately from two callers. */
static NOINLINE void grow(void)
{
	char *p = calloc(1, 8);
	for (size_t n = 16; n <= 256; n *= 2)
		p = realloc(p, n);
	td_sink = p;
	free(p);
}

static NOINLINE void grow_a(void)
{
	grow();
}

static NOINLINE void grow_b(void)
{
	grow();
}

static void *thread_a(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++)
		via_a();
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++)
		via_b();
	return NULL;
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		via_a();
		via_b();
		via_b();
	}
	for (int i = 0; i < ROUNDS; i++)
		rec(DEPTH);
	for (int i = 0; i < ROUNDS; i++) {
		if (i % 3)
			grow_a();
		else
			grow_b();
	}
	/* one thread after the other: glibc hands the second the first's
	 * stack (and the sampler the first's buffer) */
	for (int i = 0; i < 4; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, i % 2 ? thread_b : thread_a, NULL) ||
		    pthread_join(t, NULL))
			return 1;
	}
	td_say("stackcache: done\n");
	return 0;
}
