/* The victim-cache pool model: docs/pool-model.md §1-4 and §9, the order of
 * Get and Put of pool/vpool.h or of Go's sync.Pool on flat arrays and
 * ring-buffer deques, with no allocation in steady state (shard arrays are
 * recycled between primary, victim and spare; a deque's ring only grows).
 * A vpool keeps its current deques in the primary array and those of
 * before the last cycle in the victim array, both always there; its
 * private slots are the threads'. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ap_pool.h"
#include "ap_util.h"

/* One P's part of a shard array. The deque holds ring[tail..head) (free
 * running counters, masked): the head is the newest end. */
struct shard {
	struct ap_pool_obj priv;
	bool has_priv;
	uint32_t head, tail, ringcap;	/* ringcap: 0 or a power of two */
	struct ap_pool_obj *ring;
};

struct shards {
	struct shard *sh;
	unsigned size, alloc;
	uint64_t nobjs, bytes;
};

#define NO_ARRAY (-1)

/* vpool: one thread's private slot. */
struct tslot {
	struct ap_pool_obj obj;
	uint64_t gen;		/* the cycle count when obj was Put */
	bool has;
};

struct ap_pool {
	enum ap_pool_kind kind;
	struct shards arr[3];
	int primary, victim;	/* index into arr, or NO_ARRAY */
	unsigned victim_size;	/* 0: skip the victim */
	unsigned nprocs;
	uint64_t max_keep;
	/* vpool */
	uint64_t gen;		/* cycles so far */
	struct tslot *ts;	/* by thread */
	uint32_t nts;

	bool started;
	uint64_t t0, tlast;
	double held_integral;	/* sum of held_bytes * dt */
	struct ap_pool_stats st;
};

struct ap_pool *ap_pool_new(enum ap_pool_kind kind, unsigned nprocs, uint64_t max_keep)
{
	struct ap_pool *pool = ap_xcalloc(1, sizeof(*pool));
	pool->kind = kind;
	ap_pool_reset(pool, nprocs, max_keep);
	return pool;
}

void ap_pool_free(struct ap_pool *pool)
{
	if (!pool)
		return;
	for (int i = 0; i < 3; i++) {
		for (unsigned j = 0; j < pool->arr[i].alloc; j++)
			free(pool->arr[i].sh[j].ring);
		free(pool->arr[i].sh);
	}
	free(pool->ts);
	free(pool);
}

static struct shards *new_primary(struct ap_pool *pool);

void ap_pool_reset(struct ap_pool *pool, unsigned nprocs, uint64_t max_keep)
{
	assert(nprocs >= 1);
	for (int i = 0; i < 3; i++)
		pool->arr[i].nobjs = pool->arr[i].bytes = 0;
	pool->primary = pool->victim = NO_ARRAY;
	pool->victim_size = 0;
	pool->nprocs = nprocs;
	pool->max_keep = max_keep;
	pool->started = false;
	pool->t0 = pool->tlast = 0;
	pool->held_integral = 0;
	memset(&pool->st, 0, sizeof(pool->st));
	pool->gen = 0;
	for (uint32_t i = 0; i < pool->nts; i++)
		pool->ts[i].has = false;
	if (pool->kind == AP_POOL_VPOOL) {
		/* The deques are there from the start and stay: the current
		 * ones in a primary, the old ones in a victim. */
		new_primary(pool);
		pool->victim = pool->primary;
		new_primary(pool);
		pool->victim_size = nprocs;
	}
}

void ap_pool_set_procs(struct ap_pool *pool, unsigned nprocs)
{
	assert(nprocs >= 1 && pool->kind == AP_POOL_SYNCPOOL);
	pool->nprocs = nprocs;
}

unsigned ap_pool_procs(const struct ap_pool *pool)
{
	return pool->nprocs;
}

uint64_t ap_pool_held_objects(const struct ap_pool *pool)
{
	return pool->st.held_objects;
}

const char *ap_pool_src_name(enum ap_pool_src src)
{
	static const char *const names[AP_POOL_NSRC] = {
		"miss", "private", "shared", "stolen", "victim",
	};
	return (unsigned)src < AP_POOL_NSRC ? names[src] : "?";
}

/* Accumulates held bytes over the time since the last operation. */
static inline void advance(struct ap_pool *pool, uint64_t t)
{
	if (__builtin_expect(!pool->started, 0)) {
		pool->started = true;
		pool->t0 = pool->tlast = t;
		return;
	}
	if (t > pool->tlast) {
		pool->held_integral += (double)pool->st.held_bytes * (double)(t - pool->tlast);
		pool->tlast = t;
	}
}

/* An object more in array a (NULL: in a vpool thread's private slot). */
static inline void held_add(struct ap_pool *pool, struct shards *a, uint64_t cap)
{
	if (a) {
		a->nobjs++;
		a->bytes += cap;
	}
	pool->st.held_objects++;
	pool->st.held_bytes += cap;
	if (pool->st.held_bytes > pool->st.peak_held_bytes)
		pool->st.peak_held_bytes = pool->st.held_bytes;
	if (pool->st.held_objects > pool->st.peak_held_objects)
		pool->st.peak_held_objects = pool->st.held_objects;
}

static inline void held_sub(struct ap_pool *pool, struct shards *a, uint64_t cap)
{
	if (a) {
		a->nobjs--;
		a->bytes -= cap;
	}
	pool->st.held_objects--;
	pool->st.held_bytes -= cap;
}

/* Forgets everything array a holds (its memory is kept for reuse). */
static void drop_array(struct ap_pool *pool, struct shards *a)
{
	pool->st.held_objects -= a->nobjs;
	pool->st.held_bytes -= a->bytes;
	a->nobjs = a->bytes = 0;
}

/* A new empty primary of nprocs shards in whichever array is free. */
static struct shards *new_primary(struct ap_pool *pool)
{
	int i = 0;
	while (i == pool->primary || i == pool->victim)
		i++;
	struct shards *a = &pool->arr[i];
	if (a->alloc < pool->nprocs) {
		a->sh = ap_xrealloc(a->sh, pool->nprocs * sizeof(*a->sh));
		memset(a->sh + a->alloc, 0, (pool->nprocs - a->alloc) * sizeof(*a->sh));
		a->alloc = pool->nprocs;
	}
	a->size = pool->nprocs;
	for (unsigned j = 0; j < a->size; j++) {
		a->sh[j].has_priv = false;
		a->sh[j].head = a->sh[j].tail = 0;
	}
	a->nobjs = a->bytes = 0;
	pool->primary = i;
	return a;
}

/* Go's pin(): the primary, replaced by a new empty one when missing or when
 * p is not below its size (what the old one held is lost). */
__attribute__((cold, noinline)) static struct shards *pin_slow(struct ap_pool *pool, unsigned p)
{
	if (pool->primary != NO_ARRAY) {
		struct shards *a = &pool->arr[pool->primary];
		pool->st.lost_pchange += a->nobjs;
		pool->st.lost_pchange_bytes += a->bytes;
		drop_array(pool, a);
		pool->primary = NO_ARRAY;
	}
	return new_primary(pool);
}

static inline struct shards *pin(struct ap_pool *pool, unsigned p)
{
	if (__builtin_expect(pool->primary != NO_ARRAY, 1)) {
		struct shards *a = &pool->arr[pool->primary];
		if (__builtin_expect(p < a->size, 1))
			return a;
	}
	return pin_slow(pool, p);
}

/* Doubles the ring of a full deque (its objects keep their order). */
__attribute__((cold, noinline)) static void ring_grow(struct shard *s)
{
	uint32_t ncap = s->ringcap ? s->ringcap * 2 : 8;
	struct ap_pool_obj *ring = ap_xmalloc(ncap * sizeof(*ring));
	uint32_t n = s->head - s->tail;
	for (uint32_t k = 0; k < n; k++)
		ring[k] = s->ring[(s->tail + k) & (s->ringcap - 1)];
	free(s->ring);
	s->ring = ring;
	s->ringcap = ncap;
	s->tail = 0;
	s->head = n;
}

static inline void push_head(struct shard *s, uint64_t id, uint64_t cap)
{
	if (__builtin_expect(s->head - s->tail == s->ringcap, 0))
		ring_grow(s);
	s->ring[s->head & (s->ringcap - 1)] = (struct ap_pool_obj){ id, cap };
	s->head++;
}

static inline bool pop_head(struct shard *s, struct ap_pool_obj *out)
{
	if (s->head == s->tail)
		return false;
	s->head--;
	*out = s->ring[s->head & (s->ringcap - 1)];
	return true;
}

static inline bool pop_tail(struct shard *s, struct ap_pool_obj *out)
{
	if (s->head == s->tail)
		return false;
	*out = s->ring[s->tail & (s->ringcap - 1)];
	s->tail++;
	return true;
}

/* vpool: thread's slot, made on first use. */
static inline struct tslot *tslot(struct ap_pool *pool, uint32_t thread)
{
	if (__builtin_expect(thread >= pool->nts, 0)) {
		uint32_t n = pool->nts ? pool->nts : 4;
		while (n <= thread)
			n *= 2;
		pool->ts = ap_xrealloc(pool->ts, n * sizeof(*pool->ts));
		memset(pool->ts + pool->nts, 0, (n - pool->nts) * sizeof(*pool->ts));
		pool->nts = n;
	}
	return &pool->ts[thread];
}

/* vpool: a private object Put two cycles ago or more has been released
 * by the second (vpool_get/vpool_put find it so and release it). */
static inline bool tslot_aged(const struct ap_pool *pool, const struct tslot *ts)
{
	return pool->gen - ts->gen > 1;
}

static inline void tslot_release_aged(struct ap_pool *pool, struct tslot *ts)
{
	ts->has = false;
	held_sub(pool, NULL, ts->obj.cap);
	pool->st.lost_cycle++;
	pool->st.lost_cycle_bytes += ts->obj.cap;
}

/* vpool_put: the thread's private slot (after releasing an aged-out
 * object in it), else the head of its CPU's current deque. */
static void vpool_put(struct ap_pool *pool, uint32_t thread, unsigned p, uint64_t id,
		      uint64_t cap)
{
	struct tslot *ts = tslot(pool, thread);
	if (ts->has && tslot_aged(pool, ts))
		tslot_release_aged(pool, ts);
	if (!ts->has) {
		ts->obj = (struct ap_pool_obj){ id, cap };
		ts->gen = pool->gen;
		ts->has = true;
		held_add(pool, NULL, cap);
		return;
	}
	struct shards *a = &pool->arr[pool->primary];
	push_head(&a->sh[p], id, cap);
	held_add(pool, a, cap);
}

bool ap_pool_put(struct ap_pool *pool, uint32_t thread, unsigned p, uint64_t t, uint64_t id,
		 uint64_t cap)
{
	assert(p < pool->nprocs);
	advance(pool, t);
	pool->st.puts++;
	if (id == AP_POOL_NIL) {
		pool->st.dropped_nil++;
		return false;
	}
	if (pool->max_keep && cap > pool->max_keep) {
		pool->st.dropped_cap++;
		pool->st.dropped_cap_bytes += cap;
		return false;
	}
	if (pool->kind == AP_POOL_VPOOL) {
		vpool_put(pool, thread, p, id, cap);
		return true;
	}
	struct shards *a = pin(pool, p);
	struct shard *s = &a->sh[p];
	if (!s->has_priv) {
		s->priv = (struct ap_pool_obj){ id, cap };
		s->has_priv = true;
	} else {
		push_head(s, id, cap);
	}
	held_add(pool, a, cap);
	return true;
}

/* Go's getSlow(): steal from the other Ps' tails, then the victim. */
static enum ap_pool_src get_slow(struct ap_pool *pool, struct shards *a,
				 unsigned p, struct ap_pool_obj *out)
{
	for (unsigned i = 0; i < a->size; i++) {
		unsigned q = (p + i + 1) % a->size;
		if (pop_tail(&a->sh[q], out)) {
			held_sub(pool, a, out->cap);
			return AP_POOL_STOLEN;
		}
	}
	if (pool->victim == NO_ARRAY || p >= pool->victim_size)
		return AP_POOL_MISS;
	struct shards *v = &pool->arr[pool->victim];
	if (v->sh[p].has_priv) {
		*out = v->sh[p].priv;
		v->sh[p].has_priv = false;
		held_sub(pool, v, out->cap);
		return AP_POOL_VICTIM;
	}
	for (unsigned i = 0; i < pool->victim_size; i++) {
		unsigned q = (p + i) % pool->victim_size;
		if (pop_tail(&v->sh[q], out)) {
			held_sub(pool, v, out->cap);
			return AP_POOL_VICTIM;
		}
	}
	/* Later Gets skip the victim: what other Ps' private slots still hold
	 * is unreachable (still held until the next cycle drops it). */
	pool->victim_size = 0;
	pool->st.lost_pchange += v->nobjs;
	pool->st.lost_pchange_bytes += v->bytes;
	return AP_POOL_MISS;
}

/* vpool_get: the thread's private slot (if it has not aged out), else
 * the current deques (its CPU's newest, then the others' oldest from the
 * next CPU on), else the old deques (oldest first, from its CPU on). */
static enum ap_pool_src vpool_get(struct ap_pool *pool, uint32_t thread, unsigned p,
				  struct ap_pool_obj *out)
{
	struct tslot *ts = tslot(pool, thread);
	if (ts->has) {
		if (!tslot_aged(pool, ts)) {
			*out = ts->obj;
			ts->has = false;
			held_sub(pool, NULL, out->cap);
			/* Put before the last cycle: the victim's, as the
			 * victim private slot of sync.Pool would be. */
			return ts->gen == pool->gen ? AP_POOL_PRIVATE : AP_POOL_VICTIM;
		}
		tslot_release_aged(pool, ts);
	}
	struct shards *a = &pool->arr[pool->primary], *v = &pool->arr[pool->victim];
	unsigned n = a->size;
	if (!a->nobjs && !v->nobjs)
		return AP_POOL_MISS;
	if (pop_head(&a->sh[p], out)) {
		held_sub(pool, a, out->cap);
		return AP_POOL_SHARED;
	}
	for (unsigned k = 1; k < n && a->nobjs; k++) {
		if (pop_tail(&a->sh[(p + k) % n], out)) {
			held_sub(pool, a, out->cap);
			return AP_POOL_STOLEN;
		}
	}
	for (unsigned k = 0; k < n && v->nobjs; k++) {
		if (pop_tail(&v->sh[(p + k) % n], out)) {
			held_sub(pool, v, out->cap);
			return AP_POOL_VICTIM;
		}
	}
	return AP_POOL_MISS;
}

enum ap_pool_src ap_pool_get(struct ap_pool *pool, uint32_t thread, unsigned p, uint64_t t,
			     struct ap_pool_obj *out)
{
	assert(p < pool->nprocs);
	advance(pool, t);
	pool->st.gets++;
	enum ap_pool_src src;
	if (pool->kind == AP_POOL_VPOOL) {
		src = vpool_get(pool, thread, p, out);
		goto counted;
	}
	struct shards *a = pin(pool, p);
	struct shard *s = &a->sh[p];
	if (s->has_priv) {
		*out = s->priv;
		s->has_priv = false;
		held_sub(pool, a, out->cap);
		src = AP_POOL_PRIVATE;
	} else if (pop_head(s, out)) {
		held_sub(pool, a, out->cap);
		src = AP_POOL_SHARED;
	} else {
		src = get_slow(pool, a, p, out);
	}
counted:
	pool->st.peak_held_bytes_to_last_get = pool->st.peak_held_bytes;
	pool->st.hits[src]++;
	if (src == AP_POOL_MISS)
		pool->st.misses++;
	return src;
}

void ap_pool_thread_exit(struct ap_pool *pool, uint32_t thread, uint64_t t)
{
	if (pool->kind != AP_POOL_VPOOL || thread >= pool->nts || !pool->ts[thread].has)
		return;
	advance(pool, t);
	struct tslot *ts = &pool->ts[thread];
	if (tslot_aged(pool, ts)) {
		tslot_release_aged(pool, ts);
		return;
	}
	ts->has = false;
	held_sub(pool, NULL, ts->obj.cap);
	pool->st.lost_exit++;
	pool->st.lost_exit_bytes += ts->obj.cap;
}

/* vpool_cycle: the old deques are released, the current ones become the
 * old, and the current ones are empty. */
static void vpool_cycle(struct ap_pool *pool)
{
	pool->gen++;
	struct shards *v = &pool->arr[pool->victim];
	pool->st.lost_cycle += v->nobjs;
	pool->st.lost_cycle_bytes += v->bytes;
	drop_array(pool, v);
	for (unsigned j = 0; j < v->size; j++)
		v->sh[j].head = v->sh[j].tail = 0;
	int old = pool->victim;
	pool->victim = pool->primary;
	pool->primary = old;
}

void ap_pool_cycle(struct ap_pool *pool, uint64_t t)
{
	advance(pool, t);
	pool->st.cycles++;
	if (pool->kind == AP_POOL_VPOOL) {
		vpool_cycle(pool);
		return;
	}
	if (pool->victim != NO_ARRAY) {
		struct shards *v = &pool->arr[pool->victim];
		/* A disabled victim's remains were counted lost to P changes. */
		if (pool->victim_size) {
			pool->st.lost_cycle += v->nobjs;
			pool->st.lost_cycle_bytes += v->bytes;
		}
		drop_array(pool, v);
	}
	pool->victim = pool->primary;
	pool->victim_size = pool->primary != NO_ARRAY ? pool->arr[pool->primary].size : 0;
	pool->primary = NO_ARRAY;
}

void ap_pool_stats(const struct ap_pool *pool, uint64_t t_end,
		   struct ap_pool_stats *out)
{
	*out = pool->st;
	double integral = pool->held_integral;
	if (pool->started && t_end > pool->tlast)
		integral += (double)pool->st.held_bytes * (double)(t_end - pool->tlast);
	out->mean_held_bytes = 0;
	if (pool->started && t_end > pool->t0)
		out->mean_held_bytes = integral / (double)(t_end - pool->t0);
}
