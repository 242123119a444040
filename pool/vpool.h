/* vpool.h: a victim-cache object pool for C (C11) and C++ (C++17 and
 * later), after Go's sync.Pool; the pool `allocprof advise` means, and the
 * one `allocprof calibrate` prices. Header-only: C11 atomics (std::atomic
 * in C++) and POSIX threads.
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
 * destroy only once no other thread uses the pool.
 *
 * Under `allocprof record`, a pool not on a thread's stack registers with
 * the sampler (weak symbols: nothing happens without it), which lists
 * what the pool holds at the exit in the trace: advise then counts those
 * objects as the pool's, not as results the program never freed. */
#ifndef VPOOL_H
#define VPOOL_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __cplusplus
#include <atomic>
#include <new>
#include <sched.h>
#define VPOOL_ATOMIC_(T) std::atomic<T>
#define VPOOL_ALIGNAS_(n) alignas(n)
#define VPOOL_STD_ std::
#else
#include <stdatomic.h>
#define VPOOL_ATOMIC_(T) _Atomic(T)
#define VPOOL_ALIGNAS_(n) _Alignas(n)
#define VPOOL_STD_
#endif
#define VPOOL_RELAXED_ VPOOL_STD_ memory_order_relaxed
/* The private slot's lookup inlined and its making out of line, whichever
 * compiler: clang 14 called vpool_local_ at every Get and Put where gcc
 * inlined it (bench/twins' tinynodes: 38 instructions more a node). */
#if defined(__GNUC__) || defined(__clang__)
#define VPOOL_HOT_ __attribute__((always_inline))
#define VPOOL_COLD_ __attribute__((noinline, cold, unused))
#else
#define VPOOL_HOT_
#define VPOOL_COLD_
#endif

/* allocprof's sampler (liballocprof.so, preloaded by `allocprof record`)
 * defines these; without it they are NULL and nothing happens. A pool
 * registers itself so that the objects it holds when the program ends
 * are known as the pool's, not as blocks the program never freed (advise
 * would say the site's objects escape). */
#ifdef __cplusplus
extern "C" {
#endif
void allocprof_pool_register(void *pool, void (*each)(void *pool, void (*fn)(void *obj, void *ctx),
							  void *ctx)) __attribute__((weak));
void allocprof_pool_unregister(void *pool) __attribute__((weak));
#ifdef __cplusplus
}
#endif

/* glibc's (a GNU extension: declared here so that the header needs no
 * _GNU_SOURCE before the first include); it reads the CPU from rseq.
 * C++ compilers define _GNU_SOURCE, and <sched.h> declares it then. */
#if defined(__cplusplus) && !defined(__USE_GNU)
extern "C" int sched_getcpu(void) noexcept;
#elif !defined(__cplusplus)
int sched_getcpu(void);
#endif

struct vpool_deque {		/* a ring: the head is the newest end */
	void **slot;
	size_t cap, first, n;	/* slot[first] is the oldest */
};

struct vpool_shard {
	VPOOL_ALIGNAS_(64) VPOOL_ATOMIC_(int) lock;	/* guards the two deques */
	VPOOL_ATOMIC_(size_t) count;	/* objects in the deques, for skipping */
	struct vpool_deque cur, old;
};

struct vpool;

struct vpool_local {		/* one thread's private slot */
	void *obj;
	unsigned gen;		/* the cycle count when obj was Put */
	struct vpool *pool;
	struct vpool_local *next, *prev;	/* the pool's list (for allocprof) */
};

struct vpool {
	VPOOL_ATOMIC_(unsigned) gen;	/* cycles so far */
	struct vpool_shard *sh;
	unsigned n;
	pthread_key_t key;	/* struct vpool_local of the thread */
	void (*release)(void *obj, void *ctx);
	void *ctx;
	/* Registered with allocprof's sampler: the threads' slots are
	 * listed, under their own lock. */
	int registered;
	VPOOL_ATOMIC_(int) locals_lock;
	struct vpool_local *locals;
};

/* The locks are held for a few loads and stores. A waiter spins, with the
 * CPU's pause hint, for about as long as that takes a few times over; past
 * that the holder has most likely been preempted (more threads than CPUs,
 * or a loaded machine), and spinning on would burn the waiter's time slice
 * while the holder waits for a CPU: it yields instead. (A plain spin made
 * a two-thread producer/consumer twice as slow in CPU time on a loaded
 * two-CPU machine.) */
#define VPOOL_SPINS_ 128

static inline void vpool_relax_(unsigned *spins)
{
	if (++*spins < VPOOL_SPINS_) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield" ::: "memory");
#endif
	} else {
		sched_yield();
	}
}

static inline void vpool_spin_lock_(VPOOL_ATOMIC_(int) *lock)
{
	unsigned spins = 0;
	while (VPOOL_STD_ atomic_exchange_explicit(lock, 1, VPOOL_STD_ memory_order_acquire))
		while (VPOOL_STD_ atomic_load_explicit(lock, VPOOL_RELAXED_))
			vpool_relax_(&spins);
}

static inline void vpool_lock_(struct vpool_shard *s)
{
	vpool_spin_lock_(&s->lock);
}

static inline void vpool_unlock_(struct vpool_shard *s)
{
	VPOOL_STD_ atomic_store_explicit(&s->lock, 0, VPOOL_STD_ memory_order_release);
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

static inline void vpool_locals_lock_(struct vpool *p)
{
	vpool_spin_lock_(&p->locals_lock);
}

static inline void vpool_locals_unlock_(struct vpool *p)
{
	VPOOL_STD_ atomic_store_explicit(&p->locals_lock, 0, VPOOL_STD_ memory_order_release);
}

/* At thread exit: what the thread's private slot holds goes. */
static inline void vpool_local_free_(void *arg)
{
	struct vpool_local *l = (struct vpool_local *)arg;
	struct vpool *p = l->pool;
	if (p->registered) {
		vpool_locals_lock_(p);
		if (l->prev)
			l->prev->next = l->next;
		else
			p->locals = l->next;
		if (l->next)
			l->next->prev = l->prev;
		vpool_locals_unlock_(p);
	}
	if (l->obj)
		vpool_drop_(p, l->obj);
	free(l);
}

/* For allocprof's sampler, when the program ends: every object the pool
 * holds, to fn (the threads' private slots are read as they are: the
 * program is ending). */
static inline void vpool_each_(void *pool, void (*fn)(void *obj, void *ctx), void *ctx)
{
	struct vpool *p = (struct vpool *)pool;
	for (unsigned c = 0; c < p->n; c++) {
		struct vpool_shard *s = &p->sh[c];
		vpool_lock_(s);
		for (size_t i = 0; i < s->cur.n; i++)
			fn(s->cur.slot[(s->cur.first + i) % s->cur.cap], ctx);
		for (size_t i = 0; i < s->old.n; i++)
			fn(s->old.slot[(s->old.first + i) % s->old.cap], ctx);
		vpool_unlock_(s);
	}
	vpool_locals_lock_(p);
	for (struct vpool_local *l = p->locals; l; l = l->next) {
		void *x = __atomic_load_n(&l->obj, __ATOMIC_RELAXED);
		if (x)
			fn(x, ctx);
	}
	vpool_locals_unlock_(p);
}

/* A pool in the frame of a function that may return without
 * vpool_destroy (a program bug vpool.h cannot see) must not be walked
 * when the program ends: such a pool is not registered. A pool within 8
 * MiB above the current frame is taken to be on this thread's stack. */
static inline int vpool_on_stack_(const void *p)
{
	char here;
	uintptr_t a = (uintptr_t)p, h = (uintptr_t)&here;
	return a > h && a - h < ((uintptr_t)8 << 20);
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
	p->sh = (struct vpool_shard *)aligned_alloc(64, nshards * sizeof(*p->sh));
	if (!p->sh)
		return -1;
	if (pthread_key_create(&p->key, vpool_local_free_)) {
		free(p->sh);
		return -1;
	}
#ifdef __cplusplus
	for (unsigned c = 0; c < nshards; c++)
		new (&p->sh[c]) vpool_shard();		/* zeroed: value-initialized */
	p->gen.store(0, std::memory_order_relaxed);
	p->locals_lock.store(0, std::memory_order_relaxed);
#else
	memset(p->sh, 0, nshards * sizeof(*p->sh));
	atomic_init(&p->gen, 0);
	atomic_init(&p->locals_lock, 0);
#endif
	p->n = nshards;
	p->release = release;
	p->ctx = ctx;
	p->locals = NULL;
	p->registered = allocprof_pool_register && !vpool_on_stack_(p);
	if (p->registered)
		allocprof_pool_register(p, vpool_each_);
	return 0;
}

/* The calling thread's private slot, made (NULL: out of memory; the pool
 * then works from its deques alone). */
VPOOL_COLD_ static struct vpool_local *vpool_local_make_(struct vpool *p)
{
	struct vpool_local *l = (struct vpool_local *)calloc(1, sizeof(*l));
	if (l) {
		l->pool = p;
		if (pthread_setspecific(p->key, l)) {
			free(l);
			return NULL;
		}
		if (p->registered) {
			vpool_locals_lock_(p);
			l->next = p->locals;
			if (l->next)
				l->next->prev = l;
			p->locals = l;
			vpool_locals_unlock_(p);
		}
	}
	return l;
}

/* The calling thread's private slot, made on first use. */
static inline VPOOL_HOT_ struct vpool_local *vpool_local_(struct vpool *p)
{
	struct vpool_local *l = (struct vpool_local *)pthread_getspecific(p->key);
	return l ? l : vpool_local_make_(p);
}

static inline int vpool_push_(struct vpool_deque *d, void *x)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		void **s = (void **)malloc(cap * sizeof(*s));
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

/* Where vpool_get_from found its object (advise's hits_by_source). */
enum vpool_src {
	VPOOL_PRIVATE = 1,	/* this thread's slot, Put in this cycle */
	VPOOL_SHARED,		/* the newest of this CPU's deque */
	VPOOL_STOLEN,		/* the oldest of another CPU's deque */
	VPOOL_VICTIM,		/* what the last cycle set aside (slot or deque) */
};

/* The deques, from CPU c: its own newest, others' oldest; then the
 * victim's, oldest first. *src (when src is not NULL) says which. */
static inline void *vpool_get_shared_(struct vpool *p, unsigned c, int *src)
{
	void *x = NULL;
	for (int victim = 0; victim < 2 && !x; victim++)
		for (unsigned k = 0; k < p->n && !x; k++) {
			struct vpool_shard *q = &p->sh[(c + k) % p->n];
			if (!VPOOL_STD_ atomic_load_explicit(&q->count, VPOOL_RELAXED_))
				continue;
			vpool_lock_(q);
			x = victim ? vpool_pop_tail_(&q->old)
			    : k    ? vpool_pop_tail_(&q->cur)
				   : vpool_pop_head_(&q->cur);
			if (x)
				VPOOL_STD_ atomic_fetch_sub_explicit(&q->count, 1, VPOOL_RELAXED_);
			vpool_unlock_(q);
			if (x && src)
				*src = victim ? VPOOL_VICTIM : k ? VPOOL_STOLEN : VPOOL_SHARED;
		}
	return x;
}

/* vpool_get, and where the object came from in *src (enum vpool_src;
 * untouched when the pool has none). */
static inline void *vpool_get_from(struct vpool *p, int *src)
{
	struct vpool_local *l = vpool_local_(p);
	if (l && l->obj) {
		void *x = l->obj;
		l->obj = NULL;
		/* Put in this cycle or the one before (the victim's): a hit.
		 * Older: the second cycle since has dropped it. */
		unsigned age = VPOOL_STD_ atomic_load_explicit(&p->gen, VPOOL_RELAXED_) - l->gen;
		if (age <= 1) {
			if (src)
				*src = age ? VPOOL_VICTIM : VPOOL_PRIVATE;
			return x;
		}
		vpool_drop_(p, x);
	}
	return vpool_get_shared_(p, vpool_cpu_(p), src);
}

/* An object, or NULL when the pool has none: then allocate one. */
static inline void *vpool_get(struct vpool *p)
{
	return vpool_get_from(p, NULL);
}

/* Gives obj (not NULL) to the pool. */
static inline void vpool_put(struct vpool *p, void *obj)
{
	struct vpool_local *l = vpool_local_(p);
	unsigned gen = VPOOL_STD_ atomic_load_explicit(&p->gen, VPOOL_RELAXED_);
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
		VPOOL_STD_ atomic_fetch_add_explicit(&s->count, 1, VPOOL_RELAXED_);
	vpool_unlock_(s);
	if (rc)
		vpool_drop_(p, obj);	/* out of memory: drop it */
}

/* A cycle: the victim is released, what the pool holds becomes it. */
static inline void vpool_cycle(struct vpool *p)
{
	VPOOL_STD_ atomic_fetch_add_explicit(&p->gen, 1u, VPOOL_RELAXED_);
	for (unsigned c = 0; c < p->n; c++) {
		struct vpool_shard *s = &p->sh[c];
		/* The victim's objects leave under the lock with their ring;
		 * they are released after it, so that Get and Put on other
		 * threads do not wait for as many frees. */
		vpool_lock_(s);
		struct vpool_deque dead = s->old;
		s->old = s->cur;
		s->cur.slot = NULL;
		s->cur.cap = s->cur.first = s->cur.n = 0;
		VPOOL_STD_ atomic_store_explicit(&s->count, s->old.n, VPOOL_RELAXED_);
		vpool_unlock_(s);
		for (size_t i = 0; i < dead.n; i++)
			vpool_drop_(p, dead.slot[(dead.first + i) % dead.cap]);
		/* Its ring becomes the new current one, unless a Put has
		 * made one meanwhile. */
		vpool_lock_(s);
		if (!s->cur.slot && dead.slot) {
			s->cur.slot = dead.slot;
			s->cur.cap = dead.cap;
			dead.slot = NULL;
		}
		vpool_unlock_(s);
		free(dead.slot);
	}
}

/* Releases everything the pool holds (the calling thread's private slot
 * included; other threads' went when they exited) and its memory. */
static inline void vpool_destroy(struct vpool *p)
{
	if (p->registered && allocprof_pool_unregister)
		allocprof_pool_unregister(p);
	struct vpool_local *l = (struct vpool_local *)pthread_getspecific(p->key);
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
