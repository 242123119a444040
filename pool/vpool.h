/* vpool.h: a victim-cache object pool for C (C11), after Go's sync.Pool;
 * the pool `allocprof advise` means, and the one `allocprof calibrate`
 * prices. Header-only, C11 atomics, no dependencies beyond glibc (C++
 * programs: include it from a C file, or port its forty lines of logic
 * to std::atomic).
 *
 * The pool keeps objects of one kind (one pool per allocation site that
 * advise names). Per CPU it has a private slot, taken and filled with one
 * atomic instruction, and a shared deque under a spinlock: Put fills the
 * private slot, or pushes on its CPU's deque; Get takes the private slot,
 * else pops its own deque's newest, else steals another CPU's oldest,
 * else looks in the victim (below), else returns NULL and the caller
 * allocates. Go's Ps are the CPUs here (sched_getcpu).
 *
 * vpool_cycle() is Go's garbage collection as far as the pool is
 * concerned: what the previous cycle set aside (the victim) is released,
 * and what the pool holds becomes the victim, still handed out by Get
 * until the next cycle. So an object Put and not taken again lives
 * through one cycle and is released at the second. Call it periodically,
 * for instance every few MiB allocated (advise's --gc=gogc:N) or every
 * D of time (--gc=interval:D); never calling it makes a plain free list
 * that keeps what it was given.
 *
 * A cap (advise's "pool with cap N") is the caller's: do not Put objects
 * whose capacity is above N; release them instead. Objects come back as
 * they were Put: reset them before use.
 *
 * Usage:
 *	static struct vpool bufs;
 *	vpool_init(&bufs, 0, free_buf, NULL);       once; 0: one shard per CPU
 *	struct buf *b = vpool_get(&bufs);
 *	if (!b) b = new_buf();
 *	...
 *	vpool_put(&bufs, b);
 *	vpool_cycle(&bufs);                          now and then
 *	vpool_destroy(&bufs);                        releases everything held
 *
 * Thread safety: get, put and cycle may run concurrently on any threads. */
#ifndef VPOOL_H
#define VPOOL_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's (a GNU extension: declared here so that the header needs no
 * _GNU_SOURCE before the first include); it reads the CPU from rseq. */
int sched_getcpu(void);

struct vpool_deque {		/* a ring: head is the newest end */
	void **slot;
	size_t cap, first, n;	/* slot[first] is the oldest */
};

struct vpool_shard {
	_Alignas(64) void *_Atomic priv;	/* the private slot */
	void *_Atomic old_priv;			/* the victim's private slot */
	atomic_int lock;			/* guards the two deques */
	atomic_size_t count;			/* objects in the deques, for skipping */
	struct vpool_deque cur, old;
};

struct vpool {
	struct vpool_shard *sh;
	unsigned n;
	void (*release)(void *obj, void *ctx);
	void *ctx;
};

static inline void vpool_lock_(struct vpool_shard *s)
{
	while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&s->lock, memory_order_relaxed))
			;
}

static inline void vpool_unlock_(struct vpool_shard *s)
{
	atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static inline unsigned vpool_cpu_(const struct vpool *p)
{
	int c = sched_getcpu();
	return c < 0 ? 0 : (unsigned)c % p->n;
}

/* Initializes an empty pool of `nshards` shards (0: one per CPU);
 * `release` (with ctx) frees objects the pool drops. Returns 0, or -1 if
 * out of memory. */
static inline int vpool_init(struct vpool *p, unsigned nshards, void (*release)(void *, void *),
			     void *ctx)
{
	if (!nshards) {
		long n = sysconf(_SC_NPROCESSORS_CONF);
		nshards = n > 0 ? (unsigned)n : 1;
	}
	p->sh = aligned_alloc(64, ((nshards * sizeof(*p->sh) + 63) / 64) * 64);
	if (!p->sh)
		return -1;
	memset(p->sh, 0, nshards * sizeof(*p->sh));
	p->n = nshards;
	p->release = release;
	p->ctx = ctx;
	return 0;
}

static inline int vpool_push_(struct vpool_deque *d, void *x)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		void **s = malloc(cap * sizeof(*s));
		if (!s)
			return -1;
		for (size_t i = 0; i < d->n; i++)
			s[i] = d->slot[(d->first + i) % d->cap];
		free(d->slot);
		d->slot = s;
		d->cap = cap;
		d->first = 0;
	}
	d->slot[(d->first + d->n++) % d->cap] = x;
	return 0;
}

static inline void *vpool_pop_head_(struct vpool_deque *d)
{
	return d->n ? d->slot[(d->first + --d->n) % d->cap] : NULL;
}

static inline void *vpool_pop_tail_(struct vpool_deque *d)
{
	if (!d->n)
		return NULL;
	void *x = d->slot[d->first];
	d->first = (d->first + 1) % d->cap;
	d->n--;
	return x;
}

/* An object, or NULL when the pool has none: then allocate one. */
static inline void *vpool_get(struct vpool *p)
{
	unsigned c = vpool_cpu_(p);
	struct vpool_shard *s = &p->sh[c];
	void *x = atomic_exchange_explicit(&s->priv, NULL, memory_order_acquire);
	if (x)
		return x;
	for (unsigned k = 0; k < p->n && !x; k++) {	/* own head, then others' tails */
		struct vpool_shard *q = &p->sh[(c + k) % p->n];
		if (!atomic_load_explicit(&q->count, memory_order_relaxed))
			continue;
		vpool_lock_(q);
		x = k ? vpool_pop_tail_(&q->cur) : vpool_pop_head_(&q->cur);
		if (x)
			atomic_fetch_sub_explicit(&q->count, 1, memory_order_relaxed);
		vpool_unlock_(q);
	}
	if (x)
		return x;
	x = atomic_exchange_explicit(&s->old_priv, NULL, memory_order_acquire);
	for (unsigned k = 0; k < p->n && !x; k++) {	/* the victim: oldest first */
		struct vpool_shard *q = &p->sh[(c + k) % p->n];
		if (!atomic_load_explicit(&q->count, memory_order_relaxed))
			continue;
		vpool_lock_(q);
		x = vpool_pop_tail_(&q->old);
		if (x)
			atomic_fetch_sub_explicit(&q->count, 1, memory_order_relaxed);
		vpool_unlock_(q);
	}
	return x;
}

/* Gives obj (not NULL) to the pool. */
static inline void vpool_put(struct vpool *p, void *obj)
{
	struct vpool_shard *s = &p->sh[vpool_cpu_(p)];
	void *none = NULL;
	if (atomic_compare_exchange_strong_explicit(&s->priv, &none, obj, memory_order_release,
						    memory_order_relaxed))
		return;
	vpool_lock_(s);
	int rc = vpool_push_(&s->cur, obj);
	if (!rc)
		atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	vpool_unlock_(s);
	if (rc && p->release)
		p->release(obj, p->ctx);	/* out of memory: drop it */
}

/* A cycle: the victim is released, what the pool holds becomes it. */
static inline void vpool_cycle(struct vpool *p)
{
	for (unsigned c = 0; c < p->n; c++) {
		struct vpool_shard *s = &p->sh[c];
		void *x = atomic_exchange(&s->old_priv, atomic_exchange(&s->priv, NULL));
		if (x && p->release)
			p->release(x, p->ctx);
		vpool_lock_(s);
		struct vpool_deque dead = s->old;
		for (size_t i = 0; i < dead.n && p->release; i++)
			p->release(dead.slot[(dead.first + i) % dead.cap], p->ctx);
		s->old = s->cur;
		s->cur = (struct vpool_deque){ dead.slot, dead.cap, 0, 0 };
		atomic_store_explicit(&s->count, s->old.n, memory_order_relaxed);
		vpool_unlock_(s);
	}
}

/* Releases everything the pool holds and its memory. */
static inline void vpool_destroy(struct vpool *p)
{
	vpool_cycle(p);
	vpool_cycle(p);
	for (unsigned c = 0; c < p->n; c++) {
		free(p->sh[c].cur.slot);
		free(p->sh[c].old.slot);
	}
	free(p->sh);
	p->sh = NULL;
}

#endif
