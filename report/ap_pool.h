/* The victim-cache pool model (docs/pool-model.md §1-4): pool/vpool.h, the
 * pool advise tells programs to use, or Go's sync.Pool it follows, reduced
 * to which object each Get returns, what the pool holds and what it loses.
 * Driven by get/put/cycle operations (and thread exits); knows nothing of
 * traces. */
#ifndef AP_POOL_H
#define AP_POOL_H

#include <stdbool.h>
#include <stdint.h>

/* Which pool the model is (docs/pool-model.md §11 says how they differ). */
enum ap_pool_kind {
	/* pool/vpool.h: a private slot per thread that ages by the cycle
	 * count and is released at the thread's exit, and per P (CPU) a
	 * deque and the deque of before the last cycle; the number of Ps
	 * never changes. What advise replays. */
	AP_POOL_VPOOL,
	/* Go's sync.Pool: a private slot per P, a primary and a victim
	 * array of shards replaced when the number of Ps grows. The
	 * thread argument is not used. */
	AP_POOL_SYNCPOOL,
};

/* Where a Get found its object. */
enum ap_pool_src {
	AP_POOL_MISS = 0,	/* nothing found: the program allocates (Go: New) */
	AP_POOL_PRIVATE,	/* the private slot (vpool: the thread's; sync.Pool: this P's) */
	AP_POOL_SHARED,		/* head of this P's shared deque */
	AP_POOL_STOLEN,		/* tail of another P's shared deque */
	AP_POOL_VICTIM,		/* the victim cache (private or any deque's tail) */
	AP_POOL_NSRC
};

/* An object as the pool sees it: an identity chosen by the caller and its
 * capacity in bytes. */
struct ap_pool_obj {
	uint64_t id;
	uint64_t cap;
};

/* Put of this id is a Put of nil: dropped (§2.1). */
#define AP_POOL_NIL UINT64_MAX

struct ap_pool_stats {
	uint64_t gets, puts;
	uint64_t hits[AP_POOL_NSRC];	/* hits[AP_POOL_MISS] == misses */
	uint64_t misses;
	uint64_t cycles;
	uint64_t dropped_nil;		/* Puts of nil */
	uint64_t dropped_cap;		/* Puts above max_keep */
	uint64_t dropped_cap_bytes;
	/* Objects dropped with the victim at a cycle. */
	uint64_t lost_cycle, lost_cycle_bytes;
	/* Objects dropped with a primary replaced because a P id was not
	 * below its size, or left in other Ps' victim private slots when a
	 * failed victim search disabled the victim. */
	uint64_t lost_pchange, lost_pchange_bytes;
	/* vpool: objects released with their thread's private slot when it
	 * exited (what had aged out by then counts in lost_cycle). */
	uint64_t lost_exit, lost_exit_bytes;
	uint64_t held_objects, held_bytes;	/* now: primary + victim */
	uint64_t peak_held_objects, peak_held_bytes;
	/* The peak of held bytes up to the last Get: what the pool holds
	 * while it is still in use. Objects Put after the last Get are never
	 * taken again (a program's teardown freeing what it kept live): the
	 * pool holds them only to release them. */
	uint64_t peak_held_bytes_to_last_get;
	/* Time-weighted mean of held bytes between the first operation and
	 * `t_end` of ap_pool_stats(); 0 if no time passed. */
	double mean_held_bytes;
};

struct ap_pool;

/* A new empty pool of the given kind for `nprocs` Ps (≥ 1). max_keep > 0
 * drops Puts of objects whose capacity is above it; 0 keeps everything.
 * Free with ap_pool_free(). */
struct ap_pool *ap_pool_new(enum ap_pool_kind kind, unsigned nprocs, uint64_t max_keep);
void ap_pool_free(struct ap_pool *pool);

/* Empties the pool and zeroes its statistics, keeping its memory and its
 * kind, for the next replay with the given parameters. */
void ap_pool_reset(struct ap_pool *pool, unsigned nprocs, uint64_t max_keep);

/* sync.Pool only: changes the number of Ps (GOMAXPROCS). Nothing happens
 * to the pool until a Get or Put on a P not below the primary's size
 * replaces the primary. (A vpool's number of deques is fixed: reset it.) */
void ap_pool_set_procs(struct ap_pool *pool, unsigned nprocs);
unsigned ap_pool_procs(const struct ap_pool *pool);

/* Get by thread `thread` (any number; vpool: whose private slot) on P p
 * (< the current number of Ps) at time t (any monotonic unit, used only
 * for the mean of held bytes; t never decreases). Returns where the object
 * came from and fills *out, or AP_POOL_MISS (out untouched). */
enum ap_pool_src ap_pool_get(struct ap_pool *pool, uint32_t thread, unsigned p, uint64_t t,
			     struct ap_pool_obj *out);

/* Put of object (id, cap) by thread `thread` on P p at time t. Returns
 * false if the object was dropped (nil, or above max_keep). */
bool ap_pool_put(struct ap_pool *pool, uint32_t thread, unsigned p, uint64_t t, uint64_t id,
		 uint64_t cap);

/* vpool: thread `thread` exited at time t; its private slot's object is
 * released (vpool.h's key destructor). sync.Pool: nothing happens. */
void ap_pool_thread_exit(struct ap_pool *pool, uint32_t thread, uint64_t t);

/* A collection cycle at time t. sync.Pool: the victim is dropped, the
 * primary becomes the victim, and there is no primary until the next Get
 * or Put. vpool: the deques of before the last cycle are dropped, the
 * current ones take their place, and the cycle count goes up (a private
 * object Put two cycles ago or more is released when its thread next
 * uses the pool, or exits). */
void ap_pool_cycle(struct ap_pool *pool, uint64_t t);

/* Statistics so far; the time-weighted mean of held bytes runs to t_end. */
void ap_pool_stats(const struct ap_pool *pool, uint64_t t_end,
		   struct ap_pool_stats *out);

/* Objects the pool holds now (primary + victim; vpool: deques and private
 * slots, aged-out private objects until they are released). */
uint64_t ap_pool_held_objects(const struct ap_pool *pool);

/* Name of a source ("private", "shared", "stolen", "victim", "miss"). */
const char *ap_pool_src_name(enum ap_pool_src src);

#endif
