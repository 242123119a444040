/* The replay (ap_replay.h): matches every FREE and realloc of a trace to
 * its block, in one place, and calls the consumers back. */
#include "ap_replay.h"
#include "ap_hash.h"
#include "replay_ends.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* How many events ahead ap_replay prefetches map slots. */
#define PREFETCH_AHEAD 16
/* From how many map slots on (12 B each: 192 KiB, most of a core's L2) it does. */
#define PREFETCH_MIN_SLOTS (16u << 10)

/* A live block, as the map keeps it (32 bytes: a program can have tens of
 * millions live); its weight follows from its size (block_out). */
struct rblock {
	uint64_t addr, size;
	uint32_t stack;		/* 0: unsampled */
	uint32_t obj;		/* NONE: the old block of a join, its object gone on */
	uint32_t next;		/* next older block at the address, or free-list link */
	uint32_t proc;		/* its process in a whole run (0 otherwise) */
};

/* addr -> most recent live block (ap_hash.h's map; the blocks at one
 * address are a list through `next`). The block of the last ALLOC waits
 * in `held`, not yet in the map, until the next event: most blocks are
 * freed by the event right after the one that made them (heaptrack's
 * temporary allocations), and those then never touch the map. */
struct rmap {
	struct ap_u64map map;
	uint32_t held;		/* NONE, or the last ALLOC's block, not in the map */
	struct rblock *blocks;
	size_t nblocks, blocks_alloc;
	uint32_t free_blocks;
	uint32_t *free_objs;	/* object ids to reuse */
	size_t nfree_objs, free_objs_alloc;
	uint32_t nobj;		/* ids handed out so far */
};

/* The held block goes into the map. */
static inline void map_settle(struct rmap *m)
{
	if (m->held == NONE)
		return;
	uint32_t b = m->held;
	m->held = NONE;
	m->blocks[b].next = ap_u64map_push(&m->map, m->blocks[b].addr, b);
}

/* A new block, the most recent at its address: held (map_settle). The
 * caller fills it in place (a copy made from fields just stored would
 * wait on them: the loads do not forward from the narrower stores). */
static inline struct rblock *map_push(struct rmap *m)
{
	map_settle(m);
	uint32_t b;
	if (m->free_blocks != NONE) {
		b = m->free_blocks;
		m->free_blocks = m->blocks[b].next;
	} else {
		AP_ALLOC_GROW(m->blocks, m->nblocks + 1, m->blocks_alloc);
		b = (uint32_t)m->nblocks++;
	}
	m->held = b;
	return &m->blocks[b];
}

/* Ends the most recent live block at addr: returns it (valid until the
 * next map_push), or NULL if none. */
static inline struct rblock *map_pop(struct rmap *m, uint64_t addr)
{
	uint32_t b = m->held;
	if (b != NONE && m->blocks[b].addr == addr) {
		m->held = NONE;
	} else {
		map_settle(m);
		struct ap_u64map_slot *s = ap_u64map_find(&m->map, addr);
		if (!s)
			return NULL;
		b = s->val;
		ap_u64map_pop(&m->map, s, m->blocks[b].next);
	}
	m->blocks[b].next = m->free_blocks;
	m->free_blocks = b;
	return &m->blocks[b];
}

/* A block as the consumers see it. */
static inline struct ap_replay_block block_out(const struct ap_trace *t, const struct rblock *r,
					       bool temporary)
{
	return (struct ap_replay_block){
	    .addr = r->addr,
	    .size = r->size,
	    .stack = r->stack,
	    .w = !r->stack ? 0 : t->rate <= 1 ? 1.0 : ap_trace_weight(t, r->size),
	    .obj = r->obj,
	    .temporary = temporary,
	};
}

static uint32_t obj_new(struct rmap *m)
{
	if (m->nfree_objs)
		return m->free_objs[--m->nfree_objs];
	return m->nobj++;
}

static inline void obj_release(struct rmap *m, uint32_t obj)
{
	AP_ALLOC_GROW(m->free_objs, m->nfree_objs + 1, m->free_objs_alloc);
	m->free_objs[m->nfree_objs++] = obj;
}

/* Per thread: the old block of a realloc whose FREE half was just seen,
 * and the block of the thread's last event if that was an allocation. */
struct pending {
	struct ap_replay_block b;
	size_t i;
	struct ap_event e;	/* a copy: the batch it came in may be gone */
	bool set;
	uint64_t last_addr;
	uint32_t last_obj;
	bool last_alloc;
};

/* (one consumer, the common case, without the loop) */
#define EACH(c, nc, op, ...)                                                 \
	do {                                                                 \
		if ((nc) == 1) {                                             \
			if ((c)->ops->op)                                    \
				(c)->ops->op((c)->ctx, __VA_ARGS__);         \
			break;                                               \
		}                                                            \
		for (size_t k_ = 0; k_ < (nc); k_++)                         \
			if ((c)[k_].ops->op)                                 \
				(c)[k_].ops->op((c)[k_].ctx, __VA_ARGS__);   \
	} while (0)

/* A realloc's FREE half that no ALLOC half followed: a free after all,
 * handed over at event `at`. */
static inline void pending_free(struct pending *p, const struct ap_replay_consumer *c, size_t nc,
				size_t at)
{
	p->set = false;
	p->b.at = at;
	EACH(c, nc, free, p->i, &p->e, &p->b);
}

static void pending_flush(struct rmap *m, struct pending *p, const struct ap_replay_consumer *c,
			  size_t nc, size_t at)
{
	if (!p->set)
		return;
	pending_free(p, c, nc, at);
	obj_release(m, p->b.obj);
}

/* FREE e ended block b: a free (true), or the FREE half of a realloc,
 * which waits for its ALLOC half. */
static inline bool block_ended(struct pending *p, const struct ap_replay_consumer *c, size_t nc,
			       size_t i, const struct ap_event *e, struct ap_replay_block *b)
{
	b->at = i;
	if (e->flags & AP_EVF_FROM_REALLOC) {
		p->b = *b;
		p->i = i;
		p->e = *e;
		p->set = true;
		return false;
	}
	EACH(c, nc, free, i, e, b);
	return true;
}

/* A FREE that found no block: inherited or unmatched. */
static void no_block(const struct ap_trace *t, const struct ap_replay_consumer *c, size_t nc,
		     size_t i, const struct ap_event *e)
{
	if (!ap_replay_inherited(t, e)) {
		EACH(c, nc, unmatched, i, e);
		return;
	}
	for (size_t k = 0; k < nc; k++)
		if (c[k].ops->inherited)
			c[k].ops->inherited(c[k].ctx, i, e);
		else if (c[k].ops->unmatched)
			c[k].ops->unmatched(c[k].ctx, i, e);
}

/* Process p ended: its blocks still live go to the consumers' exited,
 * and stay in the map for live_at_end. */
static void exit_process(struct rmap *m, const struct ap_trace *t,
			 const struct ap_replay_consumer *c, size_t nc, uint32_t p)
{
	map_settle(m);
	for (size_t s = 0; s <= m->map.mask; s++)
		for (uint32_t b = m->map.slot[s].val; b != NONE; b = m->blocks[b].next) {
			if (m->blocks[b].obj == NONE || m->blocks[b].proc != p)
				continue;
			struct ap_replay_block out = block_out(t, &m->blocks[b], false);
			EACH(c, nc, exited, &out);
		}
}

/* Process p's image was replaced by exec: its blocks still live go to
 * the consumers' exec_dropped, out of the map. */
static void drop_process(struct rmap *m, const struct ap_trace *t,
			 const struct ap_replay_consumer *c, size_t nc, uint32_t p)
{
	map_settle(m);
	/* the keys first: a deletion moves other slots */
	uint64_t *keys = NULL;
	size_t nk = 0, ka = 0;
	for (size_t s = 0; s <= m->map.mask; s++) {
		uint32_t b = m->map.slot[s].val;
		if (b != NONE && m->blocks[b].proc == p) {
			AP_ALLOC_GROW(keys, nk + 1, ka);
			keys[nk++] = m->map.slot[s].key;
		}
	}
	for (size_t k = 0; k < nk; k++) {
		struct ap_u64map_slot *s;
		while ((s = ap_u64map_find(&m->map, keys[k])) && m->blocks[s->val].proc == p) {
			uint32_t b = s->val;
			ap_u64map_pop(&m->map, s, m->blocks[b].next);
			struct ap_replay_block out = block_out(t, &m->blocks[b], false);
			if (out.obj != NONE) {
				EACH(c, nc, exec_dropped, &out);
				obj_release(m, out.obj);
			}
			m->blocks[b].next = m->free_blocks;
			m->free_blocks = b;
		}
	}
	free(keys);
}

/* ---- a resolved trace: live blocks counted, not kept ---------------- */

/* The blocks live of one (process, stack, size). */
struct lcount {
	uint64_t size;
	uint32_t stack, proc;
	int64_t n; /* (below 0 only in a trace that frees a block twice) */
};

/* Counts per (process, stack, size), in the order first seen; `at`: per
 * stack, the entry it used last (most sites allocate one size). The last
 * allocation is held, not counted, until the next event (`held`, of
 * thread `hthread`): as with the live map, most blocks are freed by the
 * next event (temporary), and those then never look their count up. */
struct rlive {
	struct ap_index ix;
	struct lcount *e;
	size_t n, alloc;
	uint32_t *at;
	size_t nstacks;
	bool has_held;
	uint32_t hthread;
	struct lcount held;
};

static bool lcount_is(const void *ctx, uint32_t entry, const void *key)
{
	const struct lcount *a = &((const struct rlive *)ctx)->e[entry], *b = key;
	return a->size == b->size && a->stack == b->stack && a->proc == b->proc;
}

/* The count of blocks of stack and size in process proc. */
static inline struct lcount *rlive_of(struct rlive *L, uint32_t proc, uint32_t stack,
				      uint64_t size)
{
	uint32_t *at = stack < L->nstacks ? &L->at[stack] : NULL;
	if (at && *at < L->n) {
		struct lcount *x = &L->e[*at];
		if (x->size == size && x->stack == stack && x->proc == proc)
			return x;
	}
	struct lcount key = {size, stack, proc, 0};
	uint64_t h = ap_hash_u64(size * 0x9e3779b97f4a7c15ull ^ ((uint64_t)proc << 32 | stack));
	bool added;
	uint32_t k = ap_index_add(&L->ix, h, lcount_is, L, &key, (uint32_t)L->n, &added);
	if (added) {
		AP_ALLOC_GROW(L->e, L->n + 1, L->alloc);
		L->e[L->n++] = key;
	}
	if (at)
		*at = k;
	return &L->e[k];
}

/* The held allocation is counted. */
static inline void rlive_settle(struct rlive *L)
{
	if (!L->has_held)
		return;
	L->has_held = false;
	rlive_of(L, L->held.proc, L->held.stack, L->held.size)->n++;
}

/* A block as the consumers see it, from a resolved trace: `addr` the
 * identity the event names it by. */
static inline struct ap_replay_block block_of(const struct ap_trace *t, bool all, uint64_t addr,
					      uint32_t stack, uint64_t size, bool temporary)
{
	return (struct ap_replay_block){
	    .addr = addr,
	    .size = size,
	    .stack = stack,
	    .w = !stack ? 0 : all ? 1.0 : ap_trace_weight(t, size),
	    .obj = UINT32_MAX,
	    .temporary = temporary,
	};
}

/* The blocks of process p (every process: UINT32_MAX) still live, out:
 * to exec_dropped if `dropped` or the process ended by exec, else to
 * live_at_end. */
static void rlive_out(struct rlive *L, const struct ap_trace *t,
		      const struct ap_replay_consumer *c, size_t nc, uint32_t p, bool dropped)
{
	rlive_settle(L);
	for (size_t k = 0; k < L->n; k++) {
		struct lcount *x = &L->e[k];
		if (p != UINT32_MAX && x->proc != p)
			continue;
		struct ap_replay_block out = block_of(t, t->rate <= 1, 0, x->stack, x->size, false);
		bool gone = dropped || ap_replay_exec_ended(t, x->proc);
		for (; x->n > 0; x->n--)
			for (size_t j = 0; j < nc; j++)
				if (gone && c[j].ops->exec_dropped)
					c[j].ops->exec_dropped(c[j].ctx, &out);
				else if (c[j].ops->live_at_end)
					c[j].ops->live_at_end(c[j].ctx, &out);
	}
}

/* Process p ended: its live blocks to the consumers' exited, counted
 * still (live_at_end takes them at the end). */
static void rlive_exited(struct rlive *L, const struct ap_trace *t,
			 const struct ap_replay_consumer *c, size_t nc, uint32_t p)
{
	rlive_settle(L);
	for (size_t k = 0; k < L->n; k++) {
		const struct lcount *x = &L->e[k];
		if (x->proc != p)
			continue;
		struct ap_replay_block out = block_of(t, t->rate <= 1, 0, x->stack, x->size, false);
		for (int64_t n = x->n; n > 0; n--)
			EACH(c, nc, exited, &out);
	}
}

/* The thread's process in a whole run (0 otherwise). */
static inline uint32_t proc_of(const struct ap_trace *t, const struct ap_event *e)
{
	return t->nprocs && e->thread < t->nthreads ? t->threads[e->thread].proc : 0;
}

/* Event i, e, of a resolved trace, on the thread whose pending state is
 * p: replay_one's rules, the block a FREE ends read from it; `counts`
 * (a constant): the live blocks are counted, for live_at_end and
 * exec_dropped (a replay whose consumers take neither needs no count). */
static inline __attribute__((always_inline)) void
replay_resolved(struct rlive *L, struct pending *p, const struct ap_trace *t,
		const struct ap_replay_consumer *c, size_t nc, size_t i, const struct ap_event *e,
		bool counts, bool all)
{
	if (e->type == AP_EV_FREE) {
		if (p->set)
			pending_free(p, c, nc, i);
		if (!(e->flags & AP_EVF_RESOLVED)) {
			no_block(t, c, nc, i, e);
			return;
		}
		/* the thread's last allocation, if it is the held one: the
		 * last event made it */
		if (!counts) {
		} else if (L->has_held && (e->flags & AP_EVF_TEMPORARY) && L->hthread == e->thread &&
			   L->held.stack == e->stack && L->held.size == e->size) {
			L->has_held = false;
		} else {
			rlive_settle(L);
			rlive_of(L, proc_of(t, e), e->stack, e->size)->n--;
		}
		struct ap_replay_block b =
		    block_of(t, all, e->addr, e->stack, e->size, (e->flags & AP_EVF_TEMPORARY) != 0);
		block_ended(p, c, nc, i, e, &b);
		return;
	}
	if (e->type != AP_EV_ALLOC)
		return;
	bool grows = (e->flags & AP_EVF_REALLOC) && p->set;
	if (!grows && p->set)
		pending_free(p, c, nc, i);
	uint32_t stack = (e->flags & AP_EVF_SAMPLED) ? e->stack : 0;
	if (counts) {
		rlive_settle(L);
		L->has_held = true;
		L->hthread = e->thread;
		L->held = (struct lcount){e->size, stack, proc_of(t, e), 0};
	}
	struct ap_replay_block b = block_of(t, all, e->addr, stack, e->size, false);
	if (grows) {
		p->set = false;
		EACH(c, nc, grow, i, e, &p->b, &b);
		return;
	}
	EACH(c, nc, alloc, i, e, &b);
}

/* A join (ap_replay_join): the new block r, just pushed, continues the
 * object of the live block at addr, which stays in the map without it
 * until its FREE. Returns false when there is no such block. */
static bool join(struct rmap *m, struct pending *p, const struct ap_trace *t,
		 const struct ap_replay_consumer *c, size_t nc, size_t i, const struct ap_event *e,
		 struct rblock *r, uint64_t addr)
{
	struct ap_u64map_slot *s = ap_u64map_find(&m->map, addr);
	if (!s || m->blocks[s->val].obj == NONE)
		return false;
	struct rblock *old = &m->blocks[s->val];
	r->obj = p->last_obj = old->obj;
	struct ap_replay_block ob = block_out(t, old, false), b = block_out(t, r, false);
	old->obj = NONE;
	ob.at = UINT64_MAX;
	EACH(c, nc, grow, i, e, &ob, &b);
	return true;
}

/* Event i, e, on the thread whose pending state is p; jn: its join, or
 * NULL. */
static inline void replay_one(struct rmap *m, struct pending *p, const struct ap_trace *t,
			      const struct ap_replay_consumer *c, size_t nc, size_t i,
			      const struct ap_event *e, const struct ap_replay_join *jn)
{
	if (e->type == AP_EV_FREE) {
		pending_flush(m, p, c, nc, i);
		bool last = p->last_alloc && p->last_addr == e->addr;
		p->last_alloc = false;
		struct rblock *r = map_pop(m, e->addr);
		if (!r) {
			no_block(t, c, nc, i, e);
			return;
		}
		if (r->obj == NONE)	/* joined: its object went on */
			return;
		/* temporary: the block the thread's last event made (not
		 * another thread's, later, at the same address) */
		struct ap_replay_block b = block_out(t, r, last && r->obj == p->last_obj);
		if (block_ended(p, c, nc, i, e, &b))
			obj_release(m, b.obj);
		return;
	}
	if (e->type != AP_EV_ALLOC)
		return;
	p->last_alloc = true;
	p->last_addr = e->addr;
	bool grows = (e->flags & AP_EVF_REALLOC) && p->set;
	if (!grows)
		pending_flush(m, p, c, nc, i);
	struct rblock *r = map_push(m);
	r->addr = e->addr;
	r->size = e->size;
	r->stack = (e->flags & AP_EVF_SAMPLED) ? e->stack : 0;
	r->proc = t->nprocs && e->thread < t->nthreads ? t->threads[e->thread].proc : 0;
	if (grows) {
		p->set = false;
		r->obj = p->last_obj = p->b.obj;
		struct ap_replay_block b = block_out(t, r, false);
		EACH(c, nc, grow, i, e, &p->b, &b);
		return;
	}
	if (jn && join(m, p, t, c, nc, i, e, r, jn->addr))
		return;
	r->obj = p->last_obj = obj_new(m);
	struct ap_replay_block b = block_out(t, r, false);
	EACH(c, nc, alloc, i, e, &b);
}

/* The first consumer that failed (ap_replay_ops.failed): -1 with err set,
 * else 0. */
static int consumers_failed(const struct ap_replay_consumer *c, size_t nc, struct ap_error *err)
{
	for (size_t k = 0; k < nc; k++)
		if (c[k].ops->failed && c[k].ops->failed(c[k].ctx, err) < 0)
			return -1;
	return 0;
}

/* A replay under way (ap_replay, or ap_replay_start's that goes on as the
 * events come). */
struct ap_replay_run {
	const struct ap_trace *t;
	const struct ap_replay_consumer *c;
	size_t nc;
	struct rmap m;
	struct pending *pend;	/* per thread, and one for a thread out of range */
	size_t npend;		/* threads pend has room for (the last slot aside) */
	bool each_event, can_fail;
	struct ap_replay_end *ex;
	size_t nex, next_ex;
	size_t base;		/* the index of the next event */
	bool resolved;		/* a resolved trace, no consumer asks for blocks */
	bool counts;		/* a consumer takes blocks live at the end or dropped */
	const struct ap_replay_join *joins;	/* (not with `resolved`) */
	size_t njoins, next_join;
	struct rlive L;		/* then: the live counts */
};

struct ap_replay_run *ap_replay_start(const struct ap_trace *t, const struct ap_replay_consumer *c,
				      size_t nc)
{
	struct ap_replay_run *r = ap_xcalloc(1, sizeof(*r));
	r->t = t;
	r->c = c;
	r->nc = nc;
	r->m = (struct rmap){ .held = NONE, .free_blocks = NONE };
	ap_u64map_init(&r->m.map, 512);
	r->npend = t->nthreads;
	r->pend = ap_xcalloc(r->npend + 1, sizeof(*r->pend));
	bool drops = nc > 0, exits = false;
	r->resolved = t->resolved;
	for (size_t k = 0; k < nc; k++) {
		r->each_event |= c[k].ops->event != NULL;
		drops &= c[k].ops->exec_dropped != NULL;
		exits |= c[k].ops->exited != NULL;
		r->can_fail |= c[k].ops->failed != NULL;
		r->resolved &= !c[k].ops->blocks;
		r->counts |= c[k].ops->live_at_end || c[k].ops->exec_dropped || c[k].ops->exited;
	}
	if (r->resolved) {
		size_t n = t->nstacks ? t->nstacks : 1;
		r->L.nstacks = t->nstacks;
		r->L.at = ap_xmalloc(n * sizeof(*r->L.at));
		memset(r->L.at, 0xff, n * sizeof(*r->L.at));
	}
	r->nex = drops || exits ? ap_replay_ends_of(t, drops, exits, &r->ex) : 0;
	return r;
}

/* Following a trace, threads come: their pending state. */
static void pend_grow(struct ap_replay_run *r, size_t nthreads)
{
	if (nthreads <= r->npend)
		return;
	r->pend = ap_xrealloc(r->pend, (nthreads + 1) * sizeof(*r->pend));
	r->pend[nthreads] = r->pend[r->npend]; /* the out-of-range slot, last */
	for (size_t k = r->npend; k < nthreads; k++)
		r->pend[k] = (struct pending){0};
	r->npend = nthreads;
}

/* The processes that ended before time ts (ap_replay_ops.exited,
 * exec_dropped); returns the time of the next end (none: UINT64_MAX). */
static uint64_t processes_ended(struct ap_replay_run *r, uint64_t ts)
{
	const struct ap_trace *t = r->t;
	for (; r->next_ex < r->nex && r->ex[r->next_ex].ts < ts; r->next_ex++) {
		const struct ap_replay_end *x = &r->ex[r->next_ex];
		if (!x->exec && r->resolved)
			rlive_exited(&r->L, t, r->c, r->nc, x->proc);
		else if (!x->exec)
			exit_process(&r->m, t, r->c, r->nc, x->proc);
		else if (r->resolved)
			rlive_out(&r->L, t, r->c, r->nc, x->proc, true);
		else
			drop_process(&r->m, t, r->c, r->nc, x->proc);
	}
	return r->next_ex < r->nex ? r->ex[r->next_ex].ts : UINT64_MAX;
}

/* The pending state of e's thread. */
static inline struct pending *pend_of(struct pending *pend, size_t npend, const struct ap_event *e)
{
	return &pend[e->thread <= npend ? e->thread : npend];
}

/* ap_replay_feed of a resolved trace; constants, each loop made for its
 * case: `counts` (see replay_resolved), `each_event` (a consumer takes
 * every event), `ends` (a process's end is still to come). */
static inline __attribute__((always_inline)) void
feed_resolved(struct ap_replay_run *r, const struct ap_event *ev, size_t n, bool counts,
	      bool each_event, bool ends)
{
	/* (in locals: the consumers' calls would make them loaded again) */
	const struct ap_trace *t = r->t;
	const struct ap_replay_consumer *c = r->c;
	size_t nc = r->nc, npend = r->npend, base = r->base;
	struct pending *pend = r->pend;
	bool all = t->rate <= 1;	/* every block weighs 1 */
	/* the time of the next process's end (none: UINT64_MAX) */
	uint64_t ex_ts = r->next_ex < r->nex ? r->ex[r->next_ex].ts : UINT64_MAX;
	/* (the last event's thread's, looked up again when it changes) */
	uint32_t thread = 0;
	struct pending *p = pend_of(pend, npend, &(struct ap_event){ .thread = 0 });
	for (size_t j = 0; j < n; j++) {
		const struct ap_event *e = &ev[j];
		if (ends && ex_ts < e->ts)
			ex_ts = processes_ended(r, e->ts);
		if (each_event)
			EACH(c, nc, event, base + j, e);
		if (e->thread != thread) {
			thread = e->thread;
			p = pend_of(pend, npend, e);
		}
		replay_resolved(&r->L, p, t, c, nc, base + j, e, counts, all);
	}
}

/* ap_replay_feed with the live map. */
static void feed_mapped(struct ap_replay_run *r, const struct ap_event *ev, size_t n)
{
	const struct ap_trace *t = r->t;
	const struct ap_replay_consumer *c = r->c;
	size_t nc = r->nc, npend = r->npend, base = r->base;
	struct rmap *m = &r->m;
	struct pending *pend = r->pend;
	bool each_event = r->each_event;
	const struct ap_replay_join *joins = r->joins;
	size_t njoins = r->njoins, next_join = r->next_join;
	uint64_t ex_ts = r->next_ex < r->nex ? r->ex[r->next_ex].ts : UINT64_MAX;
	for (size_t j = 0; j < n; j++) {
		const struct ap_event *e = &ev[j];
		size_t i = base + j;
		if (ex_ts < e->ts)
			ex_ts = processes_ended(r, e->ts);
		if (each_event)
			EACH(c, nc, event, i, e);
		/* The map is far bigger than the caches on a long trace, and
		 * each event's probe is a miss: ask for the slot of an event
		 * a few ahead (in this batch) while this one is handled;
		 * then, the slot in the cache by now, the block a FREE
		 * ends. A map that fits in the caches needs none of it. */
		if (m->map.mask >= PREFETCH_MIN_SLOTS) {
			if (j + PREFETCH_AHEAD < n)
				ap_u64map_prefetch(&m->map, ev[j + PREFETCH_AHEAD].addr);
			if (j + PREFETCH_AHEAD / 2 < n &&
			    ev[j + PREFETCH_AHEAD / 2].type == AP_EV_FREE) {
				const struct ap_u64map_slot *ps =
				    ap_u64map_find(&m->map, ev[j + PREFETCH_AHEAD / 2].addr);
				if (ps)
					ap_prefetch(&m->blocks[ps->val]);
			}
		}
		const struct ap_replay_join *jn = NULL;
		if (next_join < njoins && joins[next_join].i <= i) {
			while (next_join < njoins && joins[next_join].i < i)
				next_join++;
			if (next_join < njoins && joins[next_join].i == i)
				jn = &joins[next_join++];
		}
		replay_one(m, pend_of(pend, npend, e), t, c, nc, i, e, jn);
	}
	r->next_join = next_join;
}

int ap_replay_feed(struct ap_replay_run *r, const struct ap_event *ev, size_t n,
		   struct ap_error *err)
{
	pend_grow(r, r->t->nthreads);
	if (r->resolved) {
		bool ends = r->next_ex < r->nex;
		switch (r->counts << 2 | r->each_event << 1 | ends) {
		case 0: feed_resolved(r, ev, n, false, false, false); break;
		case 1: feed_resolved(r, ev, n, false, false, true); break;
		case 2: feed_resolved(r, ev, n, false, true, false); break;
		case 3: feed_resolved(r, ev, n, false, true, true); break;
		case 4: feed_resolved(r, ev, n, true, false, false); break;
		case 5: feed_resolved(r, ev, n, true, false, true); break;
		case 6: feed_resolved(r, ev, n, true, true, false); break;
		default: feed_resolved(r, ev, n, true, true, true); break;
		}
	} else {
		feed_mapped(r, ev, n);
	}
	r->base += n;
	return r->can_fail ? consumers_failed(r->c, r->nc, err) : 0;
}

int ap_replay_finish(struct ap_replay_run *r, size_t *nobj, struct ap_error *err)
{
	const struct ap_trace *t = r->t;
	const struct ap_replay_consumer *c = r->c;
	size_t nc = r->nc;
	struct rmap *m = &r->m;
	int rc = 0;
	for (size_t k = 0; k <= r->npend; k++)
		pending_flush(m, &r->pend[k], c, nc, r->base - 1);
	if (r->can_fail && (rc = consumers_failed(c, nc, err)) < 0)
		goto out;
	rlive_out(&r->L, t, c, nc, UINT32_MAX, false);
	map_settle(m);
	for (size_t s = 0; s <= m->map.mask; s++)
		for (uint32_t b = m->map.slot[s].val; b != NONE; b = m->blocks[b].next) {
			if (m->blocks[b].obj == NONE)
				continue;
			struct ap_replay_block out = block_out(t, &m->blocks[b], false);
			bool gone = ap_replay_exec_ended(t, m->blocks[b].proc);
			for (size_t k = 0; k < nc; k++)
				if (gone && c[k].ops->exec_dropped)
					c[k].ops->exec_dropped(c[k].ctx, &out);
				else if (c[k].ops->live_at_end)
					c[k].ops->live_at_end(c[k].ctx, &out);
		}
	if (r->can_fail)
		rc = consumers_failed(c, nc, err);
out:
	if (nobj)
		*nobj = m->nobj;
	ap_replay_abandon(r);
	return rc;
}

void ap_replay_abandon(struct ap_replay_run *r)
{
	if (!r)
		return;
	free(r->ex);
	free(r->pend);
	ap_u64map_release(&r->m.map);
	free(r->m.blocks);
	free(r->m.free_objs);
	ap_index_release(&r->L.ix);
	free(r->L.e);
	free(r->L.at);
	free(r);
}

int ap_replay(const struct ap_trace *t, const struct ap_replay_consumer *c, size_t nc, size_t *nobj,
	      struct ap_error *err)
{
	return ap_replay_joined(t, NULL, 0, c, nc, nobj, err);
}

int ap_replay_joined(const struct ap_trace *t, const struct ap_replay_join *joins, size_t njoins,
		     const struct ap_replay_consumer *c, size_t nc, size_t *nobj, struct ap_error *err)
{
	struct ap_replay_run *r = ap_replay_start(t, c, nc);
	if (!r->resolved) {
		r->joins = joins;
		r->njoins = njoins;
	}
	struct ap_events *it = ap_events_open(t);
	const struct ap_event *ev;
	ssize_t got;
	int rc = 0;
	while ((got = ap_events_next(it, &ev)) > 0)
		if ((rc = ap_replay_feed(r, ev, (size_t)got, err)) < 0)
			break;
	if (got < 0)
		rc = ap_error_set(err, "%s", ap_events_error(it));
	ap_events_close(it);
	if (rc < 0) {
		if (nobj)
			*nobj = r->m.nobj;
		ap_replay_abandon(r);
		return -1;
	}
	return ap_replay_finish(r, nobj, err);
}
