/* The pool advisor's replay: trace events to per-site pool operations
 * (exactly with --all, from a reconstruction when sampled; ap_advise.h says
 * how), the collection cycles, and the per-site results the verdicts are
 * made from (advise_verdict.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ap_advise.h"
#include "advise-int.h"

void ap_advise_options_init(struct ap_advise_options *o)
{
	memset(o, 0, sizeof(*o));
	o->gc_mode = AP_GC_GOGC;
	o->gogc = 100;
	o->seed = 1;
}

int ap_advise_parse_gc(const char *s, struct ap_advise_options *o)
{
	if (!strncmp(s, "gogc:", 5)) {
		char *end;
		unsigned long long n = strtoull(s + 5, &end, 10);
		if (end == s + 5 || *end || n == 0)
			return -1;
		o->gc_mode = AP_GC_GOGC;
		o->gogc = n;
		return 0;
	}
	if (!strncmp(s, "interval:", 9)) {
		uint64_t ns;
		if (ap_parse_duration(s + 9, &ns) < 0 || ns == 0)
			return -1;
		o->gc_mode = AP_GC_INTERVAL;
		o->interval_ns = ns;
		return 0;
	}
	return -1;
}

/* ---- address map: addr -> uint32, open addressing, linear probing ---- */

/* Addresses are never 0: key 0 marks an empty entry. */
struct amap_ent {
	uint64_t key;
	uint32_t val;
};
struct amap {
	struct amap_ent *e;	/* key and value side by side: one cache miss */
	size_t cap, n;		/* cap: a power of two, 2^(64 - shift) */
	unsigned shift;
};

static void amap_init(struct amap *m)
{
	m->cap = 1024;
	m->shift = 64 - 10;
	m->n = 0;
	m->e = ap_xcalloc(m->cap, sizeof(*m->e));
}

static void amap_release(struct amap *m)
{
	free(m->e);
}

/* Fibonacci hashing of the address without its low 4 bits (malloc
 * aligns to 16): the top bits of the product, as many as the mask has. */
static inline size_t amap_hash(const struct amap *m, uint64_t k)
{
	return (size_t)(((k >> 4) * 0x9e3779b97f4a7c15ull) >> m->shift);
}

static void amap_grow(struct amap *m)
{
	struct amap_ent *old = m->e;
	size_t ocap = m->cap;
	m->cap *= 2;
	m->shift--;
	m->e = ap_xcalloc(m->cap, sizeof(*m->e));
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key) {
			size_t j = amap_hash(m, old[i].key);
			while (m->e[j].key)
				j = (j + 1) & (m->cap - 1);
			m->e[j] = old[i];
		}
	free(old);
}

/* Sets addr -> v (a newer block at a live address replaces the older). */
static inline void amap_put(struct amap *m, uint64_t addr, uint32_t v)
{
	if (2 * (m->n + 1) > m->cap)
		amap_grow(m);
	size_t mask = m->cap - 1, j = amap_hash(m, addr);
	while (m->e[j].key && m->e[j].key != addr)
		j = (j + 1) & mask;
	if (!m->e[j].key)
		m->n++;
	m->e[j].key = addr;
	m->e[j].val = v;
}

/* Removes addr; returns its value, or UINT32_MAX if absent. */
static inline uint32_t amap_take(struct amap *m, uint64_t addr)
{
	size_t mask = m->cap - 1, j = amap_hash(m, addr);
	while (m->e[j].key != addr) {
		if (!m->e[j].key)
			return UINT32_MAX;
		j = (j + 1) & mask;
	}
	uint32_t v = m->e[j].val;
	/* Backward-shift deletion keeps probe chains intact. */
	size_t hole = j;
	for (size_t k = (j + 1) & mask; m->e[k].key; k = (k + 1) & mask) {
		size_t home = amap_hash(m, m->e[k].key);
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			m->e[hole] = m->e[k];
			hole = k;
		}
	}
	m->e[hole].key = 0;
	m->n--;
	return v;
}

/* ---- cycles ---- */

static uint64_t trace_end(const struct ap_trace *t)
{
	uint64_t end = t->end_ns;
	if (t->nev && t->ev[t->nev - 1].ts > end)
		end = t->ev[t->nev - 1].ts;
	return end;
}

static double ev_weight(const struct ap_trace *t, const struct ap_event *e)
{
	return t->rate <= 1 ? 1.0 : ap_trace_weight(t, e->size);
}

/* ---- cycles: interval ---- */

/* The cycles at start + k * interval (k >= 1) before the trace's end that
 * can change a pool, for a replay of operations at the `n` times (in the
 * replay's order) at `ts`, `stride` bytes apart: the trace's events, or a
 * sampled trace's reconstruction. A cycle applies before the operations
 * later than it, so between two operations only the first two count:
 * nothing reaches a pool in between, and two cycles empty it (the second
 * drops what the first moved to the victim cache). The rest are left out,
 * which keeps --gc=interval:1ns to a few entries per operation; *total is
 * how many cycles there are in all. */
static uint64_t *interval_cycles(const struct ap_trace *t, const struct ap_advise_options *o,
				 const uint64_t *ts, size_t n, size_t stride, size_t *ncyc,
				 uint64_t *total)
{
	uint64_t *cyc = NULL;
	size_t nc = 0, alloc = 0;
	uint64_t end = trace_end(t), start = t->start_ns, iv = o->interval_ns;
	uint64_t from = start; /* cycles at or after this time are next */
	for (size_t i = 0; i <= n; i++) {
		uint64_t at = i < n ? *(const uint64_t *)((const char *)ts + i * stride) : end;
		if (at > end)
			at = end;
		if (at <= from && i < n)
			continue;
		/* the first cycle at or after `from` */
		uint64_t k = (from - start) / iv + ((from - start) % iv != 0);
		if (!k)
			k = 1;
		for (int j = 0; j < 2; j++, k++) {
			if (k > (UINT64_MAX - start) / iv || start + k * iv >= at)
				break;
			AP_ALLOC_GROW(cyc, nc + 1, alloc);
			cyc[nc++] = start + k * iv;
		}
		from = at;
	}
	*ncyc = nc;
	*total = end > start ? (end - start - 1) / iv : 0;
	return cyc;
}

/* ---- size histogram ---- */

unsigned size_bucket(uint64_t size)
{
	if (size < 4)
		return (unsigned)size;
	unsigned b = 63 - (unsigned)__builtin_clzll(size);
	unsigned sub = (unsigned)((size >> (b - 2)) & 3);
	unsigned idx = b * 4 + sub;
	return idx < SIZE_BUCKETS ? idx : SIZE_BUCKETS - 1;
}

double size_bucket_value(unsigned idx)
{
	if (idx < 4)
		return idx;
	/* The bucket's lower bound: exact for powers of two and for sizes a
	 * quarter step apart. */
	unsigned b = idx / 4, sub = idx % 4;
	return ldexp(1.0 + sub / 4.0, (int)b);
}

/* ---- replay ---- */

struct site_run {		/* one site in one replay pass */
	struct ap_pool *pool;
	size_t nc;		/* next cycle to apply */
	bool active;
	double scale;		/* sampled: estimated objects per replayed one */
	struct ap_replay_result r;
};

struct replay {
	const struct ap_trace *t;
	const struct ap_advise_options *o;
	unsigned procs;
	uint64_t *cyc;		/* cycle times; gogc: appended while matching */
	size_t ncyc, cyc_alloc;
	uint64_t ncyc_all;	/* interval: cycles in all (cyc: those that matter) */
	uint64_t t_end;
	struct site_run *runs;
	size_t nsites;
	double mf[65], pl[65], ft[65];	/* costs by power of two of the size */
	uint64_t ops;
};

static inline unsigned pow2_bucket(uint64_t size)
{
	return size ? 63 - (unsigned)__builtin_clzll(size) : 0;
}

static void costs_by_bucket(struct replay *rp)
{
	for (unsigned b = 0; b < 65; b++) {
		uint64_t s = b >= 63 ? UINT64_MAX / 2 : (uint64_t)1 << b;
		s += s / 2;
		rp->mf[b] = ap_cost_malloc_free(rp->o->costs, s);
		rp->pl[b] = ap_cost_pool(rp->o->costs, s);
		rp->ft[b] = ap_cost_first_touch(rp->o->costs, s);
	}
}

/* Applies the cycles before ts to the site's pool. An empty pool cannot
 * change by a cycle, so it skips ahead at once. */
static void catch_up_slow(struct replay *rp, struct site_run *s, uint64_t ts)
{
	while (s->nc < rp->ncyc && rp->cyc[s->nc] < ts) {
		if (!ap_pool_held_objects(s->pool)) {
			size_t lo = s->nc, hi = rp->ncyc;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (rp->cyc[mid] < ts)
					lo = mid + 1;
				else
					hi = mid;
			}
			s->nc = lo;
			return;
		}
		ap_pool_cycle(s->pool, rp->cyc[s->nc]);
		s->nc++;
	}
}

static inline void catch_up(struct replay *rp, struct site_run *s, uint64_t ts)
{
	if (__builtin_expect(s->nc < rp->ncyc, 0) && rp->cyc[s->nc] < ts)
		catch_up_slow(rp, s, ts);
}

/* The P of a CPU: cpu % procs, without a division in the usual case. */
static inline unsigned cpu_p(const struct replay *rp, unsigned cpu)
{
	return __builtin_expect(cpu < rp->procs, 1) ? cpu : cpu % rp->procs;
}

/* An allocation at the site: returns the object's capacity. (Gets, hits,
 * misses, Puts and drops are the pool's own counts: runs_finish.) */
static inline uint64_t r_get(struct replay *rp, struct site_run *s, uint64_t ts,
			     unsigned cpu, uint64_t size)
{
	catch_up(rp, s, ts);
	struct ap_replay_result *r = &s->r;
	struct ap_pool_obj o;
	unsigned b = pow2_bucket(size);
	enum ap_pool_src src = ap_pool_get(s->pool, cpu_p(rp, cpu), ts, &o);
	if (src == AP_POOL_MISS) {
		r->time_saved_ns -= rp->pl[b];
		return size;
	}
	if (o.cap >= size) {
		r->allocs_avoided++;
		r->alloc_bytes_avoided += (double)size;
		r->time_saved_ns += rp->mf[b] + rp->ft[b] - rp->pl[b];
		return o.cap;
	}
	r->small_hits++;
	r->time_saved_ns -= rp->pl[b];
	return size;
}

/* A realloc of an object of capacity *cap to size. */
static inline void r_grow(struct replay *rp, struct site_run *s, uint64_t size, uint64_t *cap)
{
	s->r.reallocs++;
	if (size <= *cap) {
		s->r.reallocs_avoided++;
		s->r.realloc_bytes_avoided += (double)size;
		s->r.time_saved_ns += rp->mf[pow2_bucket(size)];
	} else {
		*cap = size;
	}
}

static inline void r_put(struct replay *rp, struct site_run *s, uint64_t ts,
			 unsigned cpu, uint64_t cap)
{
	catch_up(rp, s, ts);
	ap_pool_put(s->pool, cpu_p(rp, cpu), ts, 0, cap);
}

struct site_info {		/* facts gathered once */
	struct site_facts f;
	double births, alloc_objects, alloc_space;
	uint64_t samples;
	uint64_t first_ts, last_ts;
	double life_sum, life_w;
};


/* ---- sampled traces: the reconstruction ---- */

/* A sampled object from its first sample on. */
struct srec {
	uint64_t birth, death, size;
	double w;
	uint32_t site, ghead, gtail, k;	/* growths: a list in `growth` */
	uint16_t cpu, dcpu;
	bool freed;
	bool last_sampled;	/* its latest block is a sample (w is that block's weight) */
};

struct sgrowth {
	uint64_t ts, size;
	uint32_t next;
};

enum { OP_GET, OP_GROW, OP_PUT };

struct op {
	uint64_t ts, size;
	uint32_t obj, seq, site;
	uint16_t cpu;
	uint8_t type;
};

struct recon {
	struct srec *rec;
	size_t nrec, rec_alloc;
	struct sgrowth *g;
	size_t ng, g_alloc;
	struct op *ops;
	size_t nops, ops_alloc;
	uint64_t *cap;		/* per clone */
	size_t nclones;
	double *escaped;	/* per site: copies never freed */
};

/* ---- matching: every event to its object, in one place ---- */

/* A live object: slots are reused after an object's free, so there are as
 * many as objects live at once. */
struct obj {
	double w;		/* weight in live bytes (gogc cycles) */
	uint64_t size;		/* its block's size */
	uint64_t cap, birth;	/* exact replay */
	uint32_t site;		/* UINT32_MAX: of no site */
	uint32_t rec;		/* sampled: its record, or UINT32_MAX */
};

enum walk_mode {
	W_CYCLES,		/* the gogc cycles only */
	W_EXACT,		/* --all: replay every site event */
	W_COLLECT,		/* sampled: collect the records of the reconstruction */
};

struct walk {
	enum walk_mode mode;
	const struct ap_trace *t;
	const uint32_t *site_of_stack;	/* NULL: no sites (W_CYCLES) */
	struct replay *rp;	/* cycles go to rp->cyc; W_EXACT replays its runs */
	bool cycles;		/* compute the gogc cycles (rp->cyc empty) */
	double gogc;
	/* First walk only (else NULL): the sites' shares and facts. */
	struct site_info *info;
	struct ap_advice *a;
	struct recon *rc;	/* W_COLLECT */
	bool unsorted;		/* out: an event earlier than the one before */
};

/* Site events of an object, by mode. */
static inline void obj_birth(struct walk *w, struct obj *ob, const struct ap_event *e)
{
	if (w->mode == W_EXACT) {
		struct replay *rp = w->rp;
		struct site_info *si = w->info ? &w->info[ob->site] : NULL;
		ob->birth = e->ts;
		ob->cap = e->size;
		struct site_run *s = &rp->runs[ob->site];
		if (s->active)
			ob->cap = r_get(rp, s, e->ts, e->cpu, e->size);
		if (si) {
			if (!si->samples)
				si->first_ts = e->ts;
			si->last_ts = e->ts;
			si->samples++;
			si->births += 1;
			si->f.hist[size_bucket(e->size)] += 1;
		}
		return;
	}
	/* W_COLLECT: the objects born by a sampled allocation. */
	if (!(e->flags & AP_EVF_SAMPLED)) {
		ob->rec = UINT32_MAX;
		return;
	}
	struct recon *rc = w->rc;
	AP_ALLOC_GROW(rc->rec, rc->nrec + 1, rc->rec_alloc);
	struct srec *r = &rc->rec[rc->nrec];
	*r = (struct srec){ .birth = e->ts, .size = e->size, .w = ev_weight(w->t, e),
			    .site = ob->site, .ghead = UINT32_MAX, .gtail = UINT32_MAX,
			    .cpu = e->cpu, .last_sampled = true };
	ob->rec = (uint32_t)rc->nrec++;
}

static inline void obj_grow(struct walk *w, struct obj *ob, const struct ap_event *e)
{
	if (w->mode == W_EXACT) {
		struct site_run *s = &w->rp->runs[ob->site];
		if (s->active)
			r_grow(w->rp, s, e->size, &ob->cap);
		return;
	}
	if (ob->rec == UINT32_MAX)
		return;
	struct recon *rc = w->rc;
	struct srec *r = &rc->rec[ob->rec];
	r->last_sampled = e->flags & AP_EVF_SAMPLED;
	if (r->last_sampled)
		r->w = ev_weight(w->t, e);
	AP_ALLOC_GROW(rc->g, rc->ng + 1, rc->g_alloc);
	rc->g[rc->ng] = (struct sgrowth){ e->ts, e->size, UINT32_MAX };
	if (r->gtail == UINT32_MAX)
		r->ghead = (uint32_t)rc->ng;
	else
		rc->g[r->gtail].next = (uint32_t)rc->ng;
	r->gtail = (uint32_t)rc->ng++;
}

static inline void obj_put(struct walk *w, struct obj *ob, const struct ap_event *e)
{
	if (w->mode == W_EXACT) {
		struct site_run *s = &w->rp->runs[ob->site];
		if (s->active)
			r_put(w->rp, s, e->ts, e->cpu, ob->cap);
		if (w->info) {
			w->info[ob->site].life_sum += (double)(e->ts - ob->birth);
			w->info[ob->site].life_w += 1;
		}
		return;
	}
	if (ob->rec == UINT32_MAX)
		return;
	struct srec *r = &w->rc->rec[ob->rec];
	r->freed = true;
	r->death = e->ts;
	r->dcpu = e->cpu;
	if (!r->last_sampled)
		return;		/* not replayed (recon_build) */
	w->info[r->site].life_sum += r->w * (double)(e->ts - r->birth);
	w->info[r->site].life_w += r->w;
}

/* One pass over the trace in order: matches every FREE and realloc to its
 * object by address (an ALLOC starts an object, unless it is the ALLOC
 * half of a realloc whose FREE half just ended a tracked one: then it
 * continues that object), and hands each object's birth, growths and free
 * to the mode. On the way: the gogc cycles from the weighted live bytes
 * (a cycle found at an event applies to pool operations after its time,
 * so the replay of a trace in time order can run in the same pass), and
 * with `info` the sites' shares of allocation (pprof's way: each sampled
 * allocation, reallocs included, at the site of its own stack). */
static void walk_events(struct walk *w)
{
	const struct ap_trace *t = w->t;
	struct replay *rp = w->rp;
	struct amap m;
	amap_init(&m);
	struct obj *objs = NULL;
	uint32_t *freel = NULL;
	size_t nobjs = 0, objs_alloc = 0, nfree = 0;
	/* Per thread: the object whose realloc FREE half was just seen. */
	uint32_t *pending = ap_xmalloc((t->nthreads + 1) * sizeof(*pending));
	for (size_t i = 0; i <= t->nthreads; i++)
		pending[i] = UINT32_MAX;
	double live = 0, live_at_cycle = 0, since = 0;
	const double floor4m = 4.0 * 1024 * 1024;
	double goal = floor4m;
	uint64_t prev_ts = 0;
	bool unsorted = false;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		unsorted |= e->ts < prev_ts;
		prev_ts = e->ts;
		if (e->type == AP_EV_FREE) {
			uint32_t k = amap_take(&m, e->addr);
			if (k == UINT32_MAX)
				continue;
			struct obj *ob = &objs[k];
			live -= ob->w * (double)ob->size;
			if (e->flags & AP_EVF_FROM_REALLOC) {
				pending[e->thread] = k;
				continue;
			}
			freel[nfree++] = k;
			if (ob->site != UINT32_MAX)
				obj_put(w, ob, e);
			continue;
		}
		if (e->type != AP_EV_ALLOC)
			continue;
		uint32_t k = pending[e->thread];
		pending[e->thread] = UINT32_MAX;
		double wt = 0;
		uint32_t site = w->site_of_stack && e->stack < t->nstacks ?
					w->site_of_stack[e->stack] : UINT32_MAX;
		if (e->flags & AP_EVF_SAMPLED) {
			wt = ev_weight(t, e);
			since += wt * (double)e->size;
			if (w->info) {
				w->a->total_alloc_objects += wt;
				w->a->total_alloc_space += wt * (double)e->size;
				if (site != UINT32_MAX) {
					w->info[site].alloc_objects += wt;
					w->info[site].alloc_space += wt * (double)e->size;
				}
			}
		}
		struct obj *ob;
		if ((e->flags & AP_EVF_REALLOC) && k != UINT32_MAX) {
			/* A growth of the object: same slot, same site. */
			ob = &objs[k];
			if (!(e->flags & AP_EVF_SAMPLED))
				wt = ob->w;
			if (ob->site != UINT32_MAX)
				obj_grow(w, ob, e);
		} else {
			if (nfree) {
				k = freel[--nfree];
			} else {
				if (nobjs == objs_alloc) {
					/* The free list never holds more slots than exist. */
					AP_ALLOC_GROW(objs, nobjs + 1, objs_alloc);
					freel = ap_xrealloc(freel, objs_alloc * sizeof(*freel));
				}
				k = (uint32_t)nobjs++;
			}
			ob = &objs[k];
			ob->site = site;
			if (site != UINT32_MAX)
				obj_birth(w, ob, e);
		}
		ob->w = wt;
		ob->size = e->size;
		live += wt * (double)e->size;
		amap_put(&m, e->addr, k);
		if (w->cycles && live_at_cycle + since >= goal) {
			AP_ALLOC_GROW(rp->cyc, rp->ncyc + 1, rp->cyc_alloc);
			rp->cyc[rp->ncyc++] = e->ts;
			live_at_cycle = live;
			since = 0;
			goal = live_at_cycle * w->gogc;
			if (goal < floor4m)
				goal = floor4m;
		}
	}
	/* The objects still live at the end escape. */
	if (w->mode == W_EXACT)
		for (size_t j = 0; j < m.cap; j++) {
			if (!m.e[j].key)
				continue;
			uint32_t site = objs[m.e[j].val].site;
			if (site != UINT32_MAX && rp->runs[site].active)
				rp->runs[site].r.escaped++;
		}
	w->unsorted = unsorted;
	free(objs);
	free(pending);
	free(freel);
	amap_release(&m);
}

uint64_t *ap_advise_cycles(const struct ap_trace *t, const struct ap_advise_options *o,
			   size_t *n)
{
	uint64_t total;
	if (o->gc_mode == AP_GC_INTERVAL)
		return interval_cycles(t, o, t->nev ? &t->ev[0].ts : NULL, t->nev,
				       sizeof(*t->ev), n, &total);
	struct replay rp = { .t = t, .o = o };
	struct walk w = { .mode = W_CYCLES, .t = t, .rp = &rp, .cycles = true,
			  .gogc = 1.0 + (double)o->gogc / 100.0 };
	walk_events(&w);
	*n = rp.ncyc;
	return rp.cyc;
}

/* Objects replayed per site at most; a site over it replays its first
 * samples only and scales (the rate and lifetimes stay as recorded). */
#define SITE_BUDGET 2000000u

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void add_op(struct recon *rc, uint64_t ts, uint64_t size, uint32_t obj,
		   uint32_t site, uint16_t cpu, uint8_t type)
{
	AP_ALLOC_GROW(rc->ops, rc->nops + 1, rc->ops_alloc);
	rc->ops[rc->nops] = (struct op){ ts, size, obj, (uint32_t)rc->nops, site, cpu, type };
	rc->nops++;
}

static int op_cmp(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Makes the copies of every sampled object and sorts their operations. */
static void recon_build(struct recon *rc, struct replay *rp, struct site_info *info,
			uint64_t seed)
{
	size_t ns = rp->nsites;
	double *ksum = ap_xcalloc(ns, sizeof(*ksum));
	double *kdone = ap_xcalloc(ns, sizeof(*kdone));
	uint64_t *prev = ap_xcalloc(ns, sizeof(*prev));
	bool *seen = ap_xcalloc(ns, sizeof(*seen));
	uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 0x1234567;
	uint64_t dur = rp->t_end > rp->t->start_ns ? rp->t_end - rp->t->start_ns : 1;
	rc->escaped = ap_xcalloc(ns, sizeof(*rc->escaped));

	for (size_t i = 0; i < rc->nrec; i++) {
		struct srec *r = &rc->rec[i];
		double fl = floor(r->w);
		double u = (double)(rng_next(&rs) >> 11) / 9007199254740992.0;
		if (!r->last_sampled) {
			r->k = 0;	/* stood for by the objects whose last block is a sample */
			continue;
		}
		/* a sample may stand for more objects than a site replays
		 * (a huge rate): the site's scale makes up for the rest */
		double k = fl + (u < r->w - fl);
		if (k < 1)
			k = 1;
		ksum[r->site] += k;
		r->k = k > SITE_BUDGET ? SITE_BUDGET : (uint32_t)k;
		struct site_info *si = &info[r->site];
		if (!si->samples)
			si->first_ts = r->birth;
		si->last_ts = r->birth;
		si->samples++;
		si->births += r->w;
		si->f.hist[size_bucket(r->size)] += r->w;
	}
	for (size_t i = 0; i < rc->nrec; i++) {
		struct srec *r = &rc->rec[i];
		uint32_t s = r->site;
		if (!r->k || (kdone[s] + r->k > SITE_BUDGET && kdone[s] > 0))
			continue;
		struct site_info *si = &info[s];
		uint64_t gap;
		if (seen[s])
			gap = r->birth - prev[s];
		else if (si->samples > 1)
			gap = (si->last_ts - si->first_ts) / (si->samples - 1);
		else
			gap = (uint64_t)((double)dur / r->w);
		seen[s] = true;
		prev[s] = r->birth;
		kdone[s] += r->k;
		for (uint32_t j = 0; j < r->k; j++) {
			uint64_t off = (uint64_t)((double)gap * (double)(r->k - 1 - j) / r->k);
			if (off > r->birth)
				off = r->birth;
			uint32_t obj = (uint32_t)rc->nclones++;
			add_op(rc, r->birth - off, r->size, obj, s, r->cpu, OP_GET);
			for (uint32_t g = r->ghead; g != UINT32_MAX; g = rc->g[g].next)
				add_op(rc, rc->g[g].ts - off, rc->g[g].size, obj, s, 0, OP_GROW);
			if (r->freed)
				add_op(rc, r->death - off, 0, obj, s, r->dcpu, OP_PUT);
			else
				rc->escaped[s]++;
		}
	}
	for (size_t s = 0; s < ns; s++)
		rp->runs[s].scale = kdone[s] > 0 ? ksum[s] / kdone[s] : 1;
	qsort(rc->ops, rc->nops, sizeof(*rc->ops), op_cmp);
	rc->cap = ap_xmalloc((rc->nclones + 1) * sizeof(*rc->cap));
	free(ksum);
	free(kdone);
	free(prev);
	free(seen);
}

static void pass_recon(struct replay *rp, struct recon *rc)
{
	for (size_t i = 0; i < rc->nops; i++) {
		const struct op *op = &rc->ops[i];
		struct site_run *s = &rp->runs[op->site];
		if (!s->active)
			continue;
		if (op->type == OP_GET)
			rc->cap[op->obj] = r_get(rp, s, op->ts, op->cpu, op->size);
		else if (op->type == OP_GROW)
			r_grow(rp, s, op->size, &rc->cap[op->obj]);
		else
			r_put(rp, s, op->ts, op->cpu, rc->cap[op->obj]);
	}
	for (size_t s = 0; s < rp->nsites; s++)
		if (rp->runs[s].active)
			rp->runs[s].r.escaped += rc->escaped[s];
}

static void recon_release(struct recon *rc)
{
	free(rc->rec);
	free(rc->g);
	free(rc->ops);
	free(rc->cap);
	free(rc->escaped);
}

/* ---- the whole run ---- */

static void scale_result(struct ap_replay_result *r, double k)
{
	double *counts[] = {
		&r->gets, &r->misses, &r->small_hits, &r->allocs_avoided,
		&r->alloc_bytes_avoided, &r->reallocs, &r->reallocs_avoided,
		&r->realloc_bytes_avoided, &r->escaped, &r->puts, &r->dropped_cap,
		&r->lost_cycle, &r->lost_pchange, &r->time_saved_ns,
	};
	for (size_t i = 0; i < AP_ARRAY_SIZE(counts); i++)
		*counts[i] *= k;
	for (int i = 0; i < AP_POOL_NSRC; i++)
		r->hits[i] *= k;
}

/* Before a replay of the active sites: empty pools with their caps. */
static void runs_reset(struct replay *rp, const uint64_t *caps)
{
	for (size_t s = 0; s < rp->nsites; s++) {
		struct site_run *run = &rp->runs[s];
		double scale = run->scale;
		memset(&run->r, 0, sizeof(run->r));
		run->scale = scale;
		run->nc = 0;
		if (run->active)
			ap_pool_reset(run->pool, rp->procs, caps[s]);
	}
}

/* After a replay: the pools' statistics into the results. */
static void runs_finish(struct replay *rp)
{
	for (size_t s = 0; s < rp->nsites; s++) {
		struct site_run *run = &rp->runs[s];
		if (!run->active)
			continue;
		struct ap_pool_stats st;
		ap_pool_stats(run->pool, rp->t_end, &st);
		struct ap_replay_result *r = &run->r;
		rp->ops += st.gets + st.puts + (uint64_t)r->reallocs;
		r->gets = (double)st.gets;
		for (int i = 0; i < AP_POOL_NSRC; i++)
			r->hits[i] = (double)st.hits[i];
		r->misses = (double)st.misses;
		r->puts = (double)st.puts;
		r->dropped_cap = (double)st.dropped_cap;
		r->lost_cycle = (double)st.lost_cycle;
		r->lost_pchange = (double)st.lost_pchange;
		r->peak_held_bytes = (double)st.peak_held_bytes;
		r->mean_held_bytes = st.mean_held_bytes;
		if (run->scale != 1)
			scale_result(r, run->scale);
		r->bytes_avoided = r->alloc_bytes_avoided + r->realloc_bytes_avoided;
		double hits = r->gets - r->misses;
		r->hit_rate = r->gets > 0 ? hits / r->gets : 0;
	}
}

/* The first replay. --all: matching, gogc cycles, shares, facts and the
 * replay in one pass over the trace; if its events are not in time order
 * (then a cycle found later may apply to an earlier event), the cycles
 * are computed first and the replay redone. Sampled: one pass collects
 * the reconstruction (and cycles, shares, facts), then its replay. */
static void first_replay(struct replay *rp, const struct ap_site_map *m, struct site_info *info,
			 struct ap_advice *a, struct recon *rc, const uint64_t *caps)
{
	const struct ap_trace *t = rp->t;
	const struct ap_advise_options *o = rp->o;
	bool gogc = o->gc_mode == AP_GC_GOGC;
	if (!gogc && !a->sampled)
		rp->cyc = interval_cycles(t, o, t->nev ? &t->ev[0].ts : NULL, t->nev,
					  sizeof(*t->ev), &rp->ncyc, &rp->ncyc_all);
	struct walk w = { .mode = a->sampled ? W_COLLECT : W_EXACT, .t = t,
			  .site_of_stack = m->site_of_stack, .rp = rp, .cycles = gogc,
			  .gogc = 1.0 + (double)o->gogc / 100.0, .info = info, .a = a, .rc = rc };
	runs_reset(rp, caps);
	walk_events(&w);
	if (!a->sampled && gogc && w.unsorted) {
		memset(info, 0, m->nsites * sizeof(*info));
		a->total_alloc_objects = a->total_alloc_space = 0;
		rp->ncyc = 0;
		rp->ops = 0;
		w.mode = W_CYCLES;
		w.info = NULL;
		w.site_of_stack = NULL;
		walk_events(&w);
		w.mode = W_EXACT;
		w.info = info;
		w.site_of_stack = m->site_of_stack;
		w.cycles = false;
		runs_reset(rp, caps);
		walk_events(&w);
	}
	if (a->sampled) {
		recon_build(rc, rp, info, o->seed);
		/* the replay is of the reconstruction's operations */
		if (!gogc)
			rp->cyc = interval_cycles(t, o, rc->nops ? &rc->ops[0].ts : NULL, rc->nops,
						  sizeof(*rc->ops), &rp->ncyc, &rp->ncyc_all);
		pass_recon(rp, rc);
	}
	runs_finish(rp);
}

/* A replay again, with other caps. */
static void next_replay(struct replay *rp, const struct ap_site_map *m, struct recon *rc,
			const uint64_t *caps)
{
	runs_reset(rp, caps);
	if (rc) {
		pass_recon(rp, rc);
	} else {
		struct walk w = { .mode = W_EXACT, .t = rp->t, .site_of_stack = m->site_of_stack,
				  .rp = rp };
		walk_events(&w);
	}
	runs_finish(rp);
}

struct ap_advice *ap_advise_run(const struct ap_trace *t, const struct ap_site_map *m,
				const struct ap_advise_options *o, struct ap_error *err)
{
	if (!o->costs) {
		ap_error_set(err, "advise: no cost table");
		return NULL;
	}
	struct ap_advice *a = ap_xcalloc(1, sizeof(*a));
	a->rate = t->rate;
	a->sampled = t->rate > 1;
	a->procs = o->procs ? o->procs : (unsigned)(t->cpus ? t->cpus : 1);
	a->gc_mode = o->gc_mode;
	a->gogc = o->gogc;
	a->interval_ns = o->interval_ns;
	a->events = t->nev;

	struct replay rp = { .t = t, .o = o, .procs = a->procs, .nsites = m->nsites };
	rp.t_end = trace_end(t);
	a->duration_ns = rp.t_end > t->start_ns ? rp.t_end - t->start_ns : 0;
	costs_by_bucket(&rp);

	size_t ns = m->nsites;
	struct site_info *info = ap_xcalloc(ns ? ns : 1, sizeof(*info));
	rp.runs = ap_xcalloc(ns ? ns : 1, sizeof(*rp.runs));
	uint64_t *caps = ap_xcalloc(ns ? ns : 1, sizeof(*caps));
	for (size_t s = 0; s < ns; s++) {
		rp.runs[s].pool = ap_pool_new(a->procs, 0);
		rp.runs[s].active = true;
		rp.runs[s].scale = 1;
	}

	struct recon rc = { 0 };
	first_replay(&rp, m, info, a, a->sampled ? &rc : NULL, caps);
	a->cycles = o->gc_mode == AP_GC_INTERVAL ? rp.ncyc_all : rp.ncyc;
	a->mean_cycle_ns = (double)a->duration_ns / (double)(a->cycles + 1);

	a->sites = ap_xcalloc(ns ? ns : 1, sizeof(*a->sites));
	for (size_t s = 0; s < ns; s++) {
		struct ap_advise_site *site = &a->sites[s];
		struct site_info *si = &info[s];
		site->r = rp.runs[s].r;
		site->alloc_objects = si->alloc_objects;
		site->alloc_space = si->alloc_space;
		site->share = a->total_alloc_space > 0 ? si->alloc_space / a->total_alloc_space : 0;
		site->samples = si->samples;
		site->rel_error = a->sampled && si->samples ? 1.0 / sqrt((double)si->samples) : 0;
		site->mean_gap_ns = site->r.gets > 1 ? (double)(si->last_ts - si->first_ts) / (site->r.gets - 1) : 0;
		site->mean_life_ns = si->life_w > 0 ? si->life_sum / si->life_w : 0;
		double tot = 0, acc = 0, sum = 0, max = 0;
		for (unsigned b = 0; b < SIZE_BUCKETS; b++) {
			tot += si->f.hist[b];
			sum += si->f.hist[b] * size_bucket_value(b);
			if (si->f.hist[b] > 0)
				max = size_bucket_value(b);
		}
		for (unsigned b = 0; b < SIZE_BUCKETS && tot > 0; b++) {
			double before = acc;
			acc += si->f.hist[b];
			if (before < 0.5 * tot && acc >= 0.5 * tot)
				site->p50_size = size_bucket_value(b);
			if (before < 0.9 * tot && acc >= 0.9 * tot)
				site->p90_size = size_bucket_value(b);
		}
		site->mean_size = tot > 0 ? sum / tot : 0;
		site->max_size = max;
		/* A cap to evaluate: the one asked for, or one found when the
		 * capacities are skewed. */
		uint64_t cap = o->max_keep ? o->max_keep : advise_pick_cap(&si->f, site->r.gets);
		caps[s] = cap;
		rp.runs[s].active = cap && site->r.gets > 0;
		site->cap = cap;
		site->capped = rp.runs[s].active;
	}
	bool any = false;
	for (size_t s = 0; s < ns; s++)
		any |= rp.runs[s].active;
	if (any) {
		next_replay(&rp, m, a->sampled ? &rc : NULL, caps);
		for (size_t s = 0; s < ns; s++)
			if (rp.runs[s].active)
				a->sites[s].rc = rp.runs[s].r;
	}
	a->pool_ops = rp.ops;

	/* Judge, leave out the small ones, rank. */
	size_t kept = 0;
	for (size_t s = 0; s < ns; s++) {
		struct ap_advise_site *site = &a->sites[s];
		if (site->alloc_objects <= 0 && site->r.gets <= 0)
			continue;
		if (site->share < o->min_share) {
			a->hidden_sites++;
			continue;
		}
		site->name = ap_xstrdup(m->name[s]);
		site->function = ap_xstrdup(m->function[s] ? m->function[s] : m->name[s]);
		site->file = m->file[s] ? ap_xstrdup(m->file[s]) : NULL;
		site->line = m->line[s];
		advise_judge(a, site, &info[s].f, o);
		a->sites[kept++] = *site;
	}
	a->nsites = kept;
	advise_rank(a);

	if (a->sampled)
		recon_release(&rc);
	for (size_t s = 0; s < ns; s++)
		ap_pool_free(rp.runs[s].pool);
	free(rp.runs);
	free(caps);
	free(info);
	free(rp.cyc);
	return a;
}

void ap_advice_free(struct ap_advice *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nsites; i++) {
		free(a->sites[i].name);
		free(a->sites[i].function);
		free(a->sites[i].file);
		free(a->sites[i].verdict_text);
		free(a->sites[i].reasons);
	}
	free(a->sites);
	free(a);
}

void ap_site_map_release(struct ap_site_map *m)
{
	for (size_t i = 0; i < m->nsites; i++) {
		free(m->name[i]);
		free(m->function[i]);
		free(m->file[i]);
	}
	free(m->name);
	free(m->function);
	free(m->file);
	free(m->line);
	free(m->site_of_stack);
	memset(m, 0, sizeof(*m));
}
