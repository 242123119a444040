/* vpool.h: a victim-cache object pool for C (C11), after Go's sync.Pool;
 * the pool `allocprof advise` means, and the one `allocprof calibrate`
 * prices. Header-only: C11 atomics and POSIX threads (C++ programs:
 * include it from a C file, or port its logic to std::atomic).
 *
 * The pool keeps objects of one kind (one pool per allocation site that
 * advise names). Each thread has a private slot, taken and filled with
 * plain loads and stores (Go's per-P private slot: a P runs one goroutine
 * at a time, a thread is one thread); per CPU there is a shared deque
 * under a spinlock. Put fills the thread's private slot, or pushes on its
 * CPU's deque; Get takes the private slot, else pops its CPU's deque's
 * newest, else steals another CPU's oldest, else looks in the victim
 * (below), else returns NULL and the caller allocates.
 *
 * vpool_cycle() is Go's garbage collection as far as the pool is
 * concerned: what the previous cycle set aside (the victim) is released,
 * and what the pool holds becomes the victim, still handed out by Get
 * until the next cycle. So an object Put and not taken again lives
 * through one cycle and is released at the second. (An object in a
 * thread's private slot ages the same way, but is released when that
 * thread next uses the pool, or exits.) Call it periodically: every few
 * MiB allocated is what advise's --gc=gogc:N models, every D of time
 * --gc=interval:D; never calling it makes a plain free list that keeps
 * what it is given.
 *
 * A cap (advise's "pool with cap N") is the caller's: do not Put objects
 * whose capacity is above N; release them instead. Objects come back as
 * they were Put: reset them before use.
 *
 * Usage:
 *	static struct vpool bufs;
 *	vpool_init(&bufs, 0, free_buf, NULL);       once; 0: a deque per CPU
 *	struct buf *b = vpool_get(&bufs);
 *	if (!b) b = new_buf();
 *	...
 *	vpool_put(&bufs, b);
 *	vpool_cycle(&bufs);                          now and then
 *	vpool_destroy(&bufs);                        when no thread uses it
 *
 * Thread safety: get, put and cycle may run concurrently on any threads;
 * destroy only once no other thread uses the pool. */
#ifndef VPOOL_H
#define VPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's (a GNU extension: declared here so that the header needs no
 * _GNU_SOURCE before the first include); it reads the CPU from rseq. */
int sched_getcpu(void);

struct vpool_deque {		/* a ring: the head is the newest end */
	void **slot;
	size_t cap, first, n;	/* slot[first] is the oldest */
};

struct vpool_shard {
	_Alignas(64) atomic_int lock;	/* guards the two deques */
	atomic_size_t count;		/* objects in the deques, for skipping */
	struct vpool_deque cur, old;
};

struct vpool;

struct vpool_local {		/* one thread's private slot */
	void *obj;
	unsigned gen;		/* the cycle count when obj was Put */
	struct vpool *pool;
};

struct vpool {
	atomic_uint gen;	/* cycles so far */
	struct vpool_shard *sh;
	unsigned n;
	pthread_key_t key;	/* struct vpool_local of the thread */
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
	if (c < 0)
		return 0;
	return (unsigned)c < p->n ? (unsigned)c : (unsigned)c % p->n;	/* no division as a rule */
}

static inline void vpool_drop_(struct vpool *p, void *obj)
{
	if (p->release)
		p->release(obj, p->ctx);
}

/* At thread exit: what the thread's private slot holds goes. */
static inline void vpool_local_free_(void *arg)
{
	struct vpool_local *l = arg;
	if (l->obj)
		vpool_drop_(l->pool, l->obj);
	free(l);
}

/* Initializes an empty pool with `nshards` deques (0: one per CPU);
 * `release` (with ctx) frees objects the pool drops, and may be NULL.
 * Returns 0, or -1 if out of memory or out of thread keys. */
static inline int vpool_init(struct vpool *p, unsigned nshards, void (*release)(void *, void *),
			     void *ctx)
{
	if (!nshards) {
		long n = sysconf(_SC_NPROCESSORS_CONF);
		nshards = n > 0 ? (unsigned)n : 1;
	}
	p->sh = aligned_alloc(64, nshards * sizeof(*p->sh));
	if (!p->sh)
		return -1;
	if (pthread_key_create(&p->key, vpool_local_free_)) {
		free(p->sh);
		return -1;
	}
	memset(p->sh, 0, nshards * sizeof(*p->sh));
	atomic_init(&p->gen, 0);
	p->n = nshards;
	p->release = release;
	p->ctx = ctx;
	return 0;
}

/* The calling thread's private slot, made on first use (NULL: out of
 * memory; the pool then works from its deques alone). */
static inline struct vpool_local *vpool_local_(struct vpool *p)
{
	struct vpool_local *l = pthread_getspecific(p->key);
	if (!l && (l = calloc(1, sizeof(*l)))) {
		l->pool = p;
		if (pthread_setspecific(p->key, l)) {
			free(l);
			l = NULL;
		}
	}
	return l;
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

/* The deques, from CPU c: its own newest, others' oldest; then the
 * victim's, oldest first. */
static inline void *vpool_get_shared_(struct vpool *p, unsigned c)
{
	void *x = NULL;
	for (int victim = 0; victim < 2 && !x; victim++)
		for (unsigned k = 0; k < p->n && !x; k++) {
			struct vpool_shard *q = &p->sh[(c + k) % p->n];
			if (!atomic_load_explicit(&q->count, memory_order_relaxed))
				continue;
			vpool_lock_(q);
			x = victim ? vpool_pop_tail_(&q->old)
			    : k    ? vpool_pop_tail_(&q->cur)
				   : vpool_pop_head_(&q->cur);
			if (x)
				atomic_fetch_sub_explicit(&q->count, 1, memory_order_relaxed);
			vpool_unlock_(q);
		}
	return x;
}

/* An object, or NULL when the pool has none: then allocate one. */
static inline void *vpool_get(struct vpool *p)
{
	struct vpool_local *l = vpool_local_(p);
	if (l && l->obj) {
		void *x = l->obj;
		l->obj = NULL;
		/* Put in this cycle or the one before (the victim's): a hit.
		 * Older: the second cycle since has dropped it. */
		if (atomic_load_explicit(&p->gen, memory_order_relaxed) - l->gen <= 1)
			return x;
		vpool_drop_(p, x);
	}
	return vpool_get_shared_(p, vpool_cpu_(p));
}

/* Gives obj (not NULL) to the pool. */
static inline void vpool_put(struct vpool *p, void *obj)
{
	struct vpool_local *l = vpool_local_(p);
	unsigned gen = atomic_load_explicit(&p->gen, memory_order_relaxed);
	if (l && l->obj && gen - l->gen > 1) {
		vpool_drop_(p, l->obj);
		l->obj = NULL;
	}
	if (l && !l->obj) {
		l->obj = obj;
		l->gen = gen;
		return;
	}
	struct vpool_shard *s = &p->sh[vpool_cpu_(p)];
	vpool_lock_(s);
	int rc = vpool_push_(&s->cur, obj);
	if (!rc)
		atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	vpool_unlock_(s);
	if (rc)
		vpool_drop_(p, obj);	/* out of memory: drop it */
}

/* A cycle: the victim is released, what the pool holds becomes it. */
static inline void vpool_cycle(struct vpool *p)
{
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_relaxed);
	for (unsigned c = 0; c < p->n; c++) {
		struct vpool_shard *s = &p->sh[c];
		vpool_lock_(s);
		struct vpool_deque dead = s->old;
		for (size_t i = 0; i < dead.n; i++)
			vpool_drop_(p, dead.slot[(dead.first + i) % dead.cap]);
		s->old = s->cur;
		s->cur = (struct vpool_deque){ dead.slot, dead.cap, 0, 0 };
		atomic_store_explicit(&s->count, s->old.n, memory_order_relaxed);
		vpool_unlock_(s);
	}
}

/* Releases everything the pool holds (the calling thread's private slot
 * included; other threads' went when they exited) and its memory. */
static inline void vpool_destroy(struct vpool *p)
{
	struct vpool_local *l = pthread_getspecific(p->key);
	if (l) {
		pthread_setspecific(p->key, NULL);
		vpool_local_free_(l);
	}
	vpool_cycle(p);
	vpool_cycle(p);
	for (unsigned c = 0; c < p->n; c++) {
		free(p->sh[c].cur.slot);
		free(p->sh[c].old.slot);
	}
	pthread_key_delete(p->key);
	free(p->sh);
	p->sh = NULL;
}

#endif
