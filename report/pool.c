/* The victim-cache pool model: docs/pool-model.md §1-4 and §9, the order of
 * Get and Put of pool/vpool.h or of Go's sync.Pool on flat arrays and
 * ring-buffer deques (struct deque), with no allocation in steady state
 * (shard arrays are recycled between primary, victim and spare; a deque's
 * rings only grow).
 * A vpool keeps its current deques in the primary array and those of
 * before the last cycle in the victim array, both always there; its
 * private slots are the threads'. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ap_pool.h"
#include "ap_util.h"

/* The longest LEB128 varint of 64 bits. */
#define DEQUE_VARINT_MAX 10

/* A deque of objects: ids and capacities, oldest (tail) to newest
 * (head). The capacities are LEB128 varints in a byte ring (a varint is
 * read from either end: its last byte alone has the high bit clear), and
 * the ids a ring of their own only once one is not 0 (advise's are all
 * 0): a pool advise replays can hold tens of millions of objects (a
 * program that frees its whole heap at the end), which took 16 bytes each
 * and takes one or two now. Counters run free and are masked. */
struct deque {
	uint8_t *b;		/* the varints */
	uint32_t bhead, btail, bcap;	/* bytes; bcap 0 or a power of two */
	uint64_t *ids;		/* NULL: every id 0 */
	uint32_t head, tail, idcap;	/* objects; idcap 0 or a power of two */
};

/* One P's part of a shard array. */
struct shard {
	struct ap_pool_obj priv;
	bool has_priv;
	struct deque q;
};

static inline void deque_clear(struct deque *q)
{
	q->bhead = q->btail = q->head = q->tail = 0;
}

/* Doubles a byte ring that may not have room for one more varint (its
 * bytes keep their order). */
__attribute__((cold, noinline)) static void deque_grow_bytes(struct deque *q)
{
	uint32_t ncap = q->bcap ? q->bcap * 2 : 64;
	uint8_t *b = ap_xmalloc(ncap);
	uint32_t n = q->bhead - q->btail;
	for (uint32_t k = 0; k < n; k++)
		b[k] = q->b[(q->btail + k) & (q->bcap - 1)];
	free(q->b);
	q->b = b;
	q->bcap = ncap;
	q->btail = 0;
	q->bhead = n;
}

/* The ids' ring, made (every id so far 0) or doubled when full. */
__attribute__((cold, noinline)) static void deque_grow_ids(struct deque *q)
{
	uint32_t n = q->head - q->tail;
	uint32_t ncap = q->idcap ? q->idcap : 8;
	while (ncap <= n)
		ncap *= 2;
	uint64_t *ids = ap_xcalloc(ncap, sizeof(*ids));
	for (uint32_t k = 0; q->ids && k < n; k++)
		ids[k] = q->ids[(q->tail + k) & (q->idcap - 1)];
	free(q->ids);
	q->ids = ids;
	q->idcap = ncap;
	q->tail = 0;
	q->head = n;
}

static inline void push_head(struct deque *q, uint64_t id, uint64_t cap)
{
	if (__builtin_expect(q->bcap - (q->bhead - q->btail) < DEQUE_VARINT_MAX, 0))
		deque_grow_bytes(q);
	do {
		uint8_t byte = (uint8_t)(cap & 0x7f);
		cap >>= 7;
		q->b[q->bhead++ & (q->bcap - 1)] = byte | (cap ? 0x80 : 0);
	} while (cap);
	if (__builtin_expect(id != 0 || q->ids, 0)) {
		if (!q->ids || q->head - q->tail == q->idcap)
			deque_grow_ids(q);
		q->ids[q->head & (q->idcap - 1)] = id;
	}
	q->head++;
}

/* The varint from byte counter `at` on; moves `at` past it. */
static inline uint64_t deque_read(const struct deque *q, uint32_t *at)
{
	uint64_t v = 0;
	for (unsigned sh = 0;; sh += 7) {
		uint8_t byte = q->b[(*at)++ & (q->bcap - 1)];
		v |= (uint64_t)(byte & 0x7f) << sh;
		if (!(byte & 0x80))
			return v;
	}
}

static inline bool pop_head(struct deque *q, struct ap_pool_obj *out)
{
	if (q->head == q->tail)
		return false;
	q->head--;
	/* the head varint starts after the last byte before it with the
	 * high bit clear (the one before's end), or at the tail */
	uint32_t start = q->bhead - 1;
	while (start != q->btail && (q->b[(start - 1) & (q->bcap - 1)] & 0x80))
		start--;
	uint32_t at = start;
	out->cap = deque_read(q, &at);
	q->bhead = start;
	out->id = q->ids ? q->ids[q->head & (q->idcap - 1)] : 0;
	return true;
}

static inline bool pop_tail(struct deque *q, struct ap_pool_obj *out)
{
	if (q->head == q->tail)
		return false;
	out->cap = deque_read(q, &q->btail);
	out->id = q->ids ? q->ids[q->tail & (q->idcap - 1)] : 0;
	q->tail++;
	return true;
}

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
		for (unsigned j = 0; j < pool->arr[i].alloc; j++) {
			free(pool->arr[i].sh[j].q.b);
			free(pool->arr[i].sh[j].q.ids);
		}
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
		deque_clear(&a->sh[j].q);
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
	push_head(&a->sh[p].q, id, cap);
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
		push_head(&s->q, id, cap);
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
		if (pop_tail(&a->sh[q].q, out)) {
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
		if (pop_tail(&v->sh[q].q, out)) {
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
	if (pop_head(&a->sh[p].q, out)) {
		held_sub(pool, a, out->cap);
		return AP_POOL_SHARED;
	}
	for (unsigned k = 1; k < n && a->nobjs; k++) {
		if (pop_tail(&a->sh[(p + k) % n].q, out)) {
			held_sub(pool, a, out->cap);
			return AP_POOL_STOLEN;
		}
	}
	for (unsigned k = 0; k < n && v->nobjs; k++) {
		if (pop_tail(&v->sh[(p + k) % n].q, out)) {
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
	} else if (pop_head(&s->q, out)) {
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
		deque_clear(&v->sh[j].q);
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
