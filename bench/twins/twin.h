/* twin.h: what the programs of bench/twins share. Each program is one
 * file built twice: plain (malloc and free at its pooled site) and, with
 * -DTWIN, its hand-pooled twin, where that site's objects come from
 * pool/vpool.h. Everything in this header that is not the pool itself
 * (the cycle pacing) is compiled only into the twin; the plain program
 * gets the checksum helpers and nothing else.
 *
 * Cycle pacing: the twin calls vpool_cycle() where Go's garbage
 * collector would run with GOGC=100, the pace `allocprof advise`'s
 * default --gc=gogc:100 models: a cycle right after the allocation that
 * brings the heap (live bytes at the last cycle plus every byte allocated
 * since, reallocs at their new size) to max(2 x live at the last cycle,
 * 4 MiB). The bytes counted are those the PLAIN program allocates: a
 * pool hit counts its request as if malloc had served it, so the twin's
 * cycles fall where the model of the plain program's trace puts them.
 * Every allocation the program makes is reported with TW_ALLOC / TW_FREE
 * / TW_REALLOC (no-ops in the plain build). A program whose threads
 * allocate or free defines TW_THREADED before including this. */
#ifndef TWIN_H
#define TWIN_H

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "twbase.h"

#ifdef TWIN
#include "vpool.h"

#ifndef TW_MAX_POOLS
#define TW_MAX_POOLS 8
#endif
static struct vpool *tw_pools[TW_MAX_POOLS];
static unsigned tw_npools;
/* Bytes; threads share them. The goal and the live bytes at the last
 * cycle are written only by the thread that holds tw_gc_lock. */
static _Atomic long long tw_live, tw_since, tw_live_at_cycle, tw_goal = 4 << 20;
static atomic_int tw_gc_lock;
static unsigned long tw_cycles;

static void tw_release(void *obj, void *ctx)
{
	(void)ctx;
	free(obj);
}

/* A pool whose dropped objects go to release, cycled with the others. */
static inline void tw_pool_init_release(struct vpool *p, void (*release)(void *, void *))
{
	if (tw_npools == TW_MAX_POOLS || vpool_init(p, 0, release, NULL) < 0) {
		fputs("twin: cannot make a pool\n", stderr);
		exit(1);
	}
	tw_pools[tw_npools++] = p;
}

/* A pool whose dropped objects are freed. */
static inline void tw_pool_init(struct vpool *p)
{
	tw_pool_init_release(p, tw_release);
}

/* A cycle of every pool, when the heap has reached the goal: rare, out of
 * line (cold), so that what runs at every allocation is the compare of
 * tw_gc_check alone. */
__attribute__((noinline, cold)) static void tw_gc_cycle(void)
{
	if (atomic_exchange(&tw_gc_lock, 1))
		return;		/* another thread is cycling */
	if (tw_live_at_cycle + atomic_load(&tw_since) >= tw_goal) {
		for (unsigned i = 0; i < tw_npools; i++)
			vpool_cycle(tw_pools[i]);
		tw_cycles++;
		tw_live_at_cycle = atomic_load(&tw_live);
		atomic_store(&tw_since, 0);
		long long goal = 2 * tw_live_at_cycle;
		tw_goal = goal < 4 << 20 ? 4 << 20 : goal;
	}
	atomic_store(&tw_gc_lock, 0);
}

/* Inlined into every allocation of a twin (always_inline: clang 14 kept
 * the whole check out of line, a call per allocation that cost
 * ordbook's twin ~30 ms; README, "Session 20: clang and rustc"). */
__attribute__((always_inline)) static inline void tw_gc_check(void)
{
	if (atomic_load_explicit(&tw_live_at_cycle, memory_order_relaxed) +
		    atomic_load_explicit(&tw_since, memory_order_relaxed) <
	    atomic_load_explicit(&tw_goal, memory_order_relaxed))
		return;
	tw_gc_cycle();
}

/* The counters' additions. One thread: a relaxed load and store, plain
 * moves (a lock-prefixed add per allocation would be billed to the pool:
 * tens of milliseconds in tinynodes). Threads (TW_THREADED): each counts
 * in its own variables and adds them to the shared ones once it has
 * allocated or freed 64 KiB (one lock-prefixed add per 64 KiB, not three
 * per message: those cost prodcons' twin 90 ms of CPU, a third of what
 * its pool saved in a variant of it); the cycles then come up to
 * 2 x 64 KiB late, under 3 % of the 4 MiB the smallest goal is. */
#define TW_ADD_(v, n)                                                                          \
	atomic_store_explicit(&(v), atomic_load_explicit(&(v), memory_order_relaxed) + (n),    \
			      memory_order_relaxed)

#ifdef TW_THREADED
#define TW_FOLD (64 << 10)
static _Thread_local long long tw_t_live, tw_t_since;

static inline void tw_fold(void)
{
	atomic_fetch_add_explicit(&tw_live, tw_t_live, memory_order_relaxed);
	atomic_fetch_add_explicit(&tw_since, tw_t_since, memory_order_relaxed);
	tw_t_live = tw_t_since = 0;
}

__attribute__((always_inline)) static inline void tw_gc_alloc(size_t n)
{
	tw_t_live += (long long)n;
	tw_t_since += (long long)n;
	if (tw_t_since < TW_FOLD && tw_t_live < TW_FOLD)
		return;
	tw_fold();
	tw_gc_check();
}

__attribute__((always_inline)) static inline void tw_gc_free(size_t n)
{
	tw_t_live -= (long long)n;
	if (tw_t_live <= -TW_FOLD)
		tw_fold();
}
#else
__attribute__((always_inline)) static inline void tw_gc_alloc(size_t n)
{
	TW_ADD_(tw_live, (long long)n);
	TW_ADD_(tw_since, (long long)n);
	tw_gc_check();
}

__attribute__((always_inline)) static inline void tw_gc_free(size_t n)
{
	TW_ADD_(tw_live, -(long long)n);
}
#endif

/* A block of at least n bytes from pool p, else from malloc. A pooled
 * block too small for the request (its capacity is malloc_usable_size)
 * is freed and a new one allocated: the model's "small hit". */
static inline void *tw_get(struct vpool *p, size_t n)
{
	void *b = vpool_get(p);
	if (b && malloc_usable_size(b) >= n)
		return b;
	free(b);
	return malloc(n);
}

/* TWIN_VERBOSE=1 in the environment: the number of cycles on stderr at
 * exit (to set beside advise's gc.cycles for the plain program). */
__attribute__((destructor)) static void tw_report(void)
{
	if (getenv("TWIN_VERBOSE"))
		fprintf(stderr, "twin: %lu cycles\n", tw_cycles);
}

#define TW_ALLOC(n) tw_gc_alloc(n)
#define TW_FREE(n) tw_gc_free(n)
#define TW_REALLOC(old, n) (TW_FREE(old), tw_gc_alloc(n))
#else
#define TW_ALLOC(n) ((void)0)
#define TW_FREE(n) ((void)0)
#define TW_REALLOC(old, n) ((void)0)
#endif

#endif
