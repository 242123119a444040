/* The pool advisor's replay: trace events to per-site pool operations
 * (exactly with --all, from a reconstruction when sampled; ap_advise.h says
 * how), the collection cycles, and the per-site results the verdicts are
 * made from (advise_verdict.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ap_advise.h"
#include "ap_hash.h"
#include "ap_replay.h"
#include "advise-int.h"
#include "search.h"

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
		/* digits only: strtoull takes "-5" as 2^64 - 5, and a sign or
		 * blank before it */
		if (s[5] < '0' || s[5] > '9')
			return -1;
		errno = 0;
		unsigned long long n = strtoull(s + 5, &end, 10);
		if (*end || n == 0 || errno == ERANGE)
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

/* ---- where in the run: positions ---- */

/* A point of the run, for ordering pool operations against cycles: `v`,
 * the bytes allocated before it (weighted in a sampled trace, where a
 * sampled allocation stands for the stretch of allocation it was drawn
 * from and comes at the stretch's end), then `tb`, its place in the merged
 * event stream (event i at i). Pool operations are replayed in this order;
 * a cycle applies to the operations after it. Volume, not time, because a
 * gogc cycle is made by allocation, and times are quantized (thousands of
 * cycles can fall in one clock tick); and because the copies of a sample
 * in the reconstruction are spread over the volume it stands for. */
struct pos {
	double v, tb;
};

static inline bool pos_lt(struct pos a, struct pos b)
{
	return a.v < b.v || (a.v == b.v && a.tb < b.tb);
}

static inline struct pos pos_minus(struct pos a, double dv)
{
	return (struct pos){ a.v - dv, a.tb };
}

/* ---- cycles ---- */

struct cyc {
	struct pos pos;
	uint64_t cum;		/* cycles up to and including this one */
};

struct cycles {
	struct cyc *c;
	size_t n, alloc;
	uint64_t count;
};

/* k cycles in a row at pos. Only two are kept: the second already empties
 * the pool (primary and victim), so a third changes nothing but the count. */
static void cycles_add(struct cycles *cs, struct pos pos, uint64_t k)
{
	uint64_t keep = k < 2 ? k : 2;
	for (uint64_t j = 0; j < keep; j++) {
		AP_ALLOC_GROW(cs->c, cs->n + 1, cs->alloc);
		cs->c[cs->n].pos = pos;
		cs->c[cs->n].cum = cs->count + (j + 1 == keep ? k : j + 1);
		cs->n++;
	}
	cs->count += k;
}

/* Interval cycles: every D from the trace's start, each at the position
 * before the first event later than it. */
struct interval_clock {
	uint64_t next, every;	/* every == 0: not interval mode */
};

/* The cycles due before an event at ts, placed at pos. */
static inline void interval_before(struct interval_clock *ic, struct cycles *cs, uint64_t ts,
				   struct pos pos)
{
	if (!ic->every || ts <= ic->next)
		return;
	uint64_t k = (ts - 1 - ic->next) / ic->every + 1;
	cycles_add(cs, pos, k);
	ic->next += k * ic->every;
}

static double ev_weight(const struct ap_trace *t, const struct ap_event *e)
{
	return t->rate <= 1 ? 1.0 : ap_trace_weight(t, e->size);
}

/* ---- size histogram ---- */

static inline unsigned size_bucket(uint64_t size)
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

static inline void size_hist_add(struct size_hist *h, uint64_t size, double w)
{
	unsigned b = size_bucket(size);
	if (!h->w[b] || (double)size < h->lo[b])
		h->lo[b] = (double)size;
	h->w[b] += w;
	h->total += w;
	h->sum += w * (double)size;
	h->pow2_w[size <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(size - 1)] += w;
	if ((double)size > h->max)
		h->max = (double)size;
}

size_t advise_round_classes(const struct size_hist *h, uint64_t *classes, double *ratio)
{
	*ratio = 0;
	if (!(h->total > 0) || !(h->sum > 0) || !(h->max >= 1))
		return 0;
	uint64_t max = (uint64_t)h->max;
	unsigned top = max <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(max - 1);
	/* (8 bytes at least: glibc's blocks are 16-byte units) */
	unsigned low = top >= 6 ? top - 3 : 3;
	if (top < low)
		top = low;
	size_t n = 0;
	for (unsigned e = low; e <= top; e++)
		classes[n++] = (uint64_t)1 << e;
	double given = 0;
	for (unsigned e = 0; e <= 64; e++)
		if (h->pow2_w[e] > 0)
			given += h->pow2_w[e] * ldexp(1.0, (int)(e > low ? e : low));
	*ratio = given / h->sum;
	return n;
}

double size_hist_quantile(const struct size_hist *h, double q)
{
	double acc = 0;
	for (unsigned b = 0; b < SIZE_BUCKETS && h->total > 0; b++) {
		acc += h->w[b];
		if (h->w[b] > 0 && acc >= q * h->total)
			return h->lo[b];
	}
	return 0;
}

/* ---- costs ---- */

/* The cost model at the sizes a run meets, direct-mapped by size: sizes
 * vary from one allocation to the next, and a look-up costs a search of
 * the table and three log2. Slot k starts with key k + 1, a size that
 * does not map to it. */
#define COST_MEMO 1024u
struct cost_memo {
	const struct ap_cost_table *t;
	uint64_t key[COST_MEMO];
	struct ap_cost_point v[COST_MEMO];
};

static struct cost_memo *cost_memo_new(const struct ap_cost_table *t)
{
	struct cost_memo *mm = ap_xmalloc(sizeof(*mm));
	mm->t = t;
	for (uint64_t k = 0; k < COST_MEMO; k++)
		mm->key[k] = k + 1;
	return mm;
}

static inline const struct ap_cost_point *cost_at(struct cost_memo *mm, uint64_t size)
{
	unsigned k = (unsigned)size & (COST_MEMO - 1);
	if (mm->key[k] != size) {
		ap_cost_all(mm->t, size, &mm->v[k]);
		mm->key[k] = size;
	}
	return &mm->v[k];
}

/* ---- replay ---- */

struct site_run {		/* one site in one replay pass */
	struct ap_pool *pool;
	size_t nc;		/* cycle entries before the last operation */
	bool active;
	bool had_get;
	uint64_t prev_get_cum;	/* cycles before the previous Get */
	double scale;		/* sampled: estimated objects per replayed one */
	struct ap_replay_result r;
};

struct replay {
	const struct ap_trace *t;
	const struct ap_advise_options *o;
	unsigned procs;
	bool one_p;		/* every event on P 0 */
	struct cycles cyc;	/* gogc: appended while matching */
	uint64_t t_end;
	double vol_end;		/* the volume clock at the end (struct pos) */
	struct site_run *runs;
	size_t nsites;
	uint64_t ops;
	struct cost_memo *costs;
	/* glibc's mmap threshold as the run moved it: a request at or above
	 * it is a fresh mapping, whose pages fault in at the first write (the
	 * cost table's first touch); below it, the heap's pages are mostly
	 * there already, and what they cost is for the measured replay to
	 * see. Starts at glibc's 128 KiB; a free of a block above it (up to
	 * 32 MiB) raises it to that block, as free() does. */
	uint64_t mmap_thr;
	/* Growth by copy (ap_advise_joins): allocations that continue an
	 * object, as a realloc does. */
	const struct ap_replay_join *joins;
	size_t njoins;
};

#define MMAP_THRESHOLD_START (UINT64_C(128) << 10)
#define MMAP_THRESHOLD_MAX (UINT64_C(32) << 20)

/* The first touch a fresh block of `size` costs: 0 below the mmap
 * threshold. */
static inline double fresh_ns(const struct replay *rp, const struct ap_cost_point *c, uint64_t size)
{
	return size >= rp->mmap_thr ? c->first_touch_ns : 0;
}

/* Applies the cycles before pos to the site's pool. An empty pool cannot
 * change by a cycle, so it skips ahead at once. */
static void catch_up_slow(struct replay *rp, struct site_run *s, struct pos pos, uint64_t ts)
{
	const struct cyc *c = rp->cyc.c;
	while (s->nc < rp->cyc.n && pos_lt(c[s->nc].pos, pos)) {
		if (!ap_pool_held_objects(s->pool)) {
			size_t lo = s->nc, hi = rp->cyc.n;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (pos_lt(c[mid].pos, pos))
					lo = mid + 1;
				else
					hi = mid;
			}
			s->nc = lo;
			return;
		}
		ap_pool_cycle(s->pool, ts);
		s->nc++;
	}
}

static inline void catch_up(struct replay *rp, struct site_run *s, struct pos pos, uint64_t ts)
{
	if (__builtin_expect(s->nc < rp->cyc.n, 0) && pos_lt(rp->cyc.c[s->nc].pos, pos))
		catch_up_slow(rp, s, pos, ts);
}

/* The P of a CPU: cpu % procs, without a division in the usual case. */
static inline unsigned cpu_p(const struct replay *rp, unsigned cpu)
{
	if (rp->one_p)
		return 0;
	return __builtin_expect(cpu < rp->procs, 1) ? cpu : cpu % rp->procs;
}

/* An allocation at the site: returns the object's capacity. (Gets, hits,
 * misses, Puts and drops are the pool's own counts: runs_finish.) */
static inline __attribute__((always_inline)) uint64_t
r_get(struct replay *rp, struct site_run *s, struct pos pos, uint64_t ts, uint32_t thread,
      unsigned cpu, uint64_t size)
{
	catch_up(rp, s, pos, ts);
	struct ap_replay_result *r = &s->r;
	uint64_t cum = s->nc ? rp->cyc.c[s->nc - 1].cum : 0;
	if (s->had_get) {
		r->gaps++;
		r->gap_cycles += (double)(cum - s->prev_get_cum);
		if (cum - s->prev_get_cum >= 2)
			r->far_gaps++;
	}
	s->had_get = true;
	s->prev_get_cum = cum;
	struct ap_pool_obj o;
	const struct ap_cost_point *c = cost_at(rp->costs, size);
	enum ap_pool_src src = ap_pool_get(s->pool, thread, cpu_p(rp, cpu), ts, &o);
	if (src == AP_POOL_MISS) {
		r->time_saved_ns -= c->pool_ns;
		return size;
	}
	/* A hit from the private slot costs a get and a put of it; one
	 * through a deque (shared, stolen, the victim's) takes its lock. */
	double pool_ns = src == AP_POOL_PRIVATE ? c->pool_ns : c->pool_shared_ns;
	if (o.cap >= size) {
		r->allocs_avoided++;
		r->alloc_bytes_avoided += (double)size;
		r->hit_cap_bytes += (double)o.cap;
		r->time_saved_ns += c->malloc_free_ns + fresh_ns(rp, c, size) - pool_ns;
		return o.cap;
	}
	r->small_hits++;
	r->time_saved_ns -= pool_ns;
	return size;
}

/* A realloc of an object of capacity *cap to size. */
static inline void r_grow(struct replay *rp, struct site_run *s, uint64_t size, uint64_t *cap)
{
	s->r.reallocs++;
	if (size <= *cap) {
		s->r.reallocs_avoided++;
		s->r.realloc_bytes_avoided += (double)size;
		s->r.time_saved_ns += cost_at(rp->costs, size)->malloc_free_ns;
	} else {
		*cap = size;
	}
}

static inline void r_put(struct replay *rp, struct site_run *s, struct pos pos, uint64_t ts,
			 uint32_t thread, unsigned cpu, uint64_t cap)
{
	catch_up(rp, s, pos, ts);
	ap_pool_put(s->pool, thread, cpu_p(rp, cpu), ts, 0, cap);
}

/* A thread's exit (after its last event): every pool releases what its
 * private slot holds. */
static void r_exit(struct replay *rp, struct pos pos, uint64_t ts, uint32_t thread)
{
	for (size_t i = 0; i < rp->nsites; i++) {
		struct site_run *s = &rp->runs[i];
		if (!s->active)
			continue;
		catch_up(rp, s, pos, ts);
		ap_pool_thread_exit(s->pool, thread, ts);
	}
}

struct site_info {		/* facts gathered once */
	struct site_facts f;
	double births, alloc_objects, alloc_space;
	double reallocs;	/* of the site's objects */
	double copies;		/* of them, growths by copy (ap_replay_join) */
	double grown_here, copied_here;	/* growths made at the site, by copy */
	double life_cost;	/* their lives' cost through malloc (weighted sum) */
	double life_space;	/* their lives' bytes: requests and reallocs (weighted) */
	double seen_growing;	/* sampled: objects first seen in a realloc here */
	double adopted;		/* sampled: objects first seen growing elsewhere, born here */
	uint64_t births_seen;	/* sampled: records started here, replayed or not */
	double w2;		/* sampled: sum of w(w-1) of the counted records */
	uint64_t samples;
	uint64_t first_ts, last_ts;
	double life_sum, life_w;
	double cross;		/* of the freed: by another thread than made them (weighted) */
	double callocs;		/* --all: births by calloc */
	double aligned;		/* --all: births by posix_memalign, aligned_alloc, memalign */
	double shrinks;		/* --all: of its objects' reallocs, those that made them smaller */
};

/* What an object's birth and growth cost through malloc. */
static inline void info_birth(struct site_info *si, const struct replay *rp, uint64_t size, double w)
{
	const struct ap_cost_point *c = cost_at(rp->costs, size);
	si->life_cost += w * (c->malloc_free_ns + fresh_ns(rp, c, size));
	si->life_space += w * (double)size;
	si->births += w;
	size_hist_add(&si->f.req, size, w);
}

static void info_growth(struct site_info *si, struct cost_memo *costs, uint64_t size,
			double w)
{
	si->life_cost += w * cost_at(costs, size)->malloc_free_ns;
	si->life_space += w * (double)size;
	si->reallocs += w;
}

/* ---- growth across sites: (birth site, growth site) -> weight ---- */

struct links {
	struct ap_u64map m;	/* (birth + 1) << 32 | (growth + 1) -> index */
	uint64_t *key;
	double *w;
	size_t n, alloc;
};

static void links_add(struct links *l, uint32_t birth, uint32_t growth, double w)
{
	uint64_t key = ((uint64_t)birth + 1) << 32 | ((uint64_t)growth + 1);
	uint32_t k = ap_u64map_get(&l->m, key);
	if (k == AP_U64MAP_NONE) {
		if (l->n + 1 > l->alloc) {
			l->alloc = l->alloc ? 2 * l->alloc : 16;
			l->key = ap_xrealloc(l->key, l->alloc * sizeof(*l->key));
			l->w = ap_xrealloc(l->w, l->alloc * sizeof(*l->w));
		}
		k = (uint32_t)l->n++;
		l->key[k] = key;
		l->w[k] = 0;
	}
	l->w[k] += w;
	ap_u64map_put(&l->m, key, k);
}

/* For every site, the partner site of the heaviest link where it is the
 * birth site (grows[]) and where it is the growth site (born[]);
 * UINT32_MAX when it has none. */
static void links_best(const struct links *l, size_t nsites, uint32_t *grows, uint32_t *born)
{
	double *gw = ap_xcalloc(nsites ? nsites : 1, sizeof(*gw));
	double *bw = ap_xcalloc(nsites ? nsites : 1, sizeof(*bw));
	for (size_t s = 0; s < nsites; s++)
		grows[s] = born[s] = UINT32_MAX;
	for (size_t i = 0; i < l->n; i++) {
		uint32_t b = (uint32_t)(l->key[i] >> 32) - 1, g = (uint32_t)l->key[i] - 1;
		if (l->w[i] > gw[b]) {
			gw[b] = l->w[i];
			grows[b] = g;
		}
		if (l->w[i] > bw[g]) {
			bw[g] = l->w[i];
			born[g] = b;
		}
	}
	free(gw);
	free(bw);
}

/* Of the objects that grow at site g, the share (by weight) born at b. */
static double links_born_share(const struct links *l, uint32_t g, uint32_t b)
{
	double all = 0, at = 0;
	for (size_t i = 0; i < l->n; i++) {
		if ((uint32_t)l->key[i] - 1 != g)
			continue;
		all += l->w[i];
		if ((uint32_t)(l->key[i] >> 32) - 1 == b)
			at += l->w[i];
	}
	return all > 0 ? at / all : 0;
}

/* ---- sampled traces: the reconstruction ---- */

/* A sampled object from its first sample on. Positions are in the merged
 * event stream (the clock cycles are placed on). */
struct srec {
	uint64_t birth, death, size;	/* times; size: the first sampled block's */
	uint64_t maxsize;		/* the largest size it reached */
	struct pos bpos, dpos;
	/* What its own sampled growths moved the volume clock beyond their
	 * own bytes: growths and free are placed that much earlier. */
	double excess;
	/* Sampled allocations of others during its life: the volume clock's
	 * count at its birth, its own sampled growths, and the count in its
	 * life once freed. */
	uint64_t nb, nown, npts;
	double w;
	uint32_t site, ghead, gtail, k;	/* growths: a list in `growth` */
	uint16_t cpu, dcpu;
	uint32_t thread, dthread;	/* of its birth and of its free */
	bool freed;
	bool last_sampled;	/* its latest block is a sample (w is that block's weight) */
	bool seen_growing;	/* first seen in a realloc: its birth was not sampled */
	bool adopted;		/* seen growing, replayed at the site where such are born */
};

struct sgrowth {
	uint64_t ts, size;
	struct pos pos;
	uint32_t next;
};

enum { OP_GET, OP_GROW, OP_PUT, OP_EXIT };

struct op {
	struct pos pos;
	uint64_t ts, size;
	uint32_t obj, seq, site;	/* OP_EXIT: every site */
	uint16_t cpu;
	uint32_t thread;
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
	uint64_t nsampled;	/* sampled allocations in the trace */
};

static void add_op(struct recon *rc, struct pos pos, uint64_t ts, uint64_t size, uint32_t obj,
		   uint32_t site, uint16_t cpu, uint32_t thread, uint8_t type);

/* ---- matching: every event to its object, in one place ---- */

enum walk_mode {
	W_CYCLES,		/* the cycles only */
	W_EXACT,		/* --all: replay every site event */
	W_COLLECT,		/* sampled: collect the records of the reconstruction */
};

struct walk {
	enum walk_mode mode;
	const struct ap_trace *t;
	const uint32_t *site_of_stack;	/* NULL: no sites (W_CYCLES) */
	struct replay *rp;	/* cycles go to rp->cyc; W_EXACT replays its runs */
	bool cycles;		/* compute the cycles (rp->cyc empty) */
	double gogc;		/* 1 + N/100 of gogc:N; 0: interval cycles */
	double heap_min;	/* gogc: the smallest goal, 4 MiB * N/100 (Go's heapMinimum) */
	uint64_t interval_ns;
	/* First walk only (else NULL): the sites' shares and facts. */
	struct site_info *info;
	struct links *links;
	struct ap_advice *a;
	struct recon *rc;	/* W_COLLECT */
	uint64_t nsampled;	/* W_COLLECT: sampled allocations so far */
	/* First walk of a resolved trace: the growth chains found in its
	 * own pass (walk_folded), else NULL. */
	struct advise_chains *chains;
};

static inline uint32_t event_site(const struct walk *w, const struct ap_event *e)
{
	return w->site_of_stack && e->stack < w->t->nstacks ? w->site_of_stack[e->stack]
							     : UINT32_MAX;
}

/* Site events of an object, by mode. */
static inline void obj_birth(struct walk *w, struct advise_obj *ob, const struct ap_event *e, struct pos pos,
			     bool seen_growing)
{
	if (w->mode == W_EXACT) {
		struct replay *rp = w->rp;
		struct site_info *si = w->info ? &w->info[ob->site] : NULL;
		ob->birth = e->ts;
		ob->cap = e->size;
		ob->thread = e->thread;
		struct site_run *s = &rp->runs[ob->site];
		if (s->active)
			ob->cap = r_get(rp, s, pos, e->ts, e->thread, e->cpu, e->size);
		if (si) {
			if (!si->samples)
				si->first_ts = e->ts;
			si->last_ts = e->ts;
			si->samples++;
			info_birth(si, rp, e->size, 1);
			si->callocs += e->kind == AP_KIND_CALLOC;
			si->aligned += e->kind == AP_KIND_ALIGNED;
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
	if (w->info && !seen_growing)
		w->info[ob->site].births_seen++;
	struct srec *r = &rc->rec[rc->nrec];
	*r = (struct srec){ .birth = e->ts, .bpos = pos, .size = e->size, .maxsize = e->size,
			    .w = ev_weight(w->t, e),
			    .site = ob->site, .ghead = UINT32_MAX, .gtail = UINT32_MAX,
			    .nb = w->nsampled,
			    .cpu = e->cpu, .thread = e->thread, .last_sampled = true,
			    .seen_growing = seen_growing };
	ob->rec = (uint32_t)rc->nrec++;
}

static inline void obj_grow(struct walk *w, struct advise_obj *ob, const struct ap_event *e, struct pos pos)
{
	if (w->mode == W_EXACT) {
		struct site_run *s = &w->rp->runs[ob->site];
		if (s->active)
			r_grow(w->rp, s, e->size, &ob->cap);
		if (w->info) {
			info_growth(&w->info[ob->site], w->rp->costs, e->size, 1);
			w->info[ob->site].copies += !(e->flags & AP_EVF_REALLOC);
		}
		return;
	}
	if (ob->rec == UINT32_MAX)
		return;
	struct recon *rc = w->rc;
	struct srec *r = &rc->rec[ob->rec];
	if (e->size > r->maxsize)
		r->maxsize = e->size;
	r->last_sampled = e->flags & AP_EVF_SAMPLED;
	if (r->last_sampled) {
		r->w = ev_weight(w->t, e);
		/* A sampled growth moves the clock by the stretch of
		 * allocation it stands for, w * size: mostly bytes allocated
		 * before the object was born (a stretch is the sampling
		 * rate's, the object's life often a small part of it). Its
		 * own bytes are in its life; the rest would stretch the life
		 * of every copy over the whole stretch, and copies spread over
		 * it would all be live at once: the pool would hold w of them
		 * (a growing buffer's held bytes 17x too high, its mean 150x). */
		r->excess += (r->w - 1) * (double)e->size;
		r->nown++;
	}
	pos.v -= r->excess;
	AP_ALLOC_GROW(rc->g, rc->ng + 1, rc->g_alloc);
	rc->g[rc->ng] = (struct sgrowth){ e->ts, e->size, pos, UINT32_MAX };
	if (r->gtail == UINT32_MAX)
		r->ghead = (uint32_t)rc->ng;
	else
		rc->g[r->gtail].next = (uint32_t)rc->ng;
	r->gtail = (uint32_t)rc->ng++;
}

static inline void obj_put(struct walk *w, struct advise_obj *ob, const struct ap_event *e, struct pos pos)
{
	if (w->mode == W_EXACT) {
		struct site_run *s = &w->rp->runs[ob->site];
		if (s->active)
			r_put(w->rp, s, pos, e->ts, e->thread, e->cpu, ob->cap);
		if (w->info) {
			struct site_info *si = &w->info[ob->site];
			si->life_sum += (double)(e->ts - ob->birth);
			si->life_w += 1;
			si->cross += ob->thread != e->thread;
			size_hist_add(&si->f.cap, ob->maxsize, 1);
		}
		return;
	}
	if (ob->rec == UINT32_MAX)
		return;
	struct srec *r = &w->rc->rec[ob->rec];
	r->freed = true;
	r->death = e->ts;
	r->dpos = pos;
	r->dpos.v -= r->excess;
	r->npts = w->nsampled - r->nb - r->nown;
	r->dcpu = e->cpu;
	r->dthread = e->thread;
}

/* The replay's consumer (ap_replay.h: the replay matches every FREE and
 * realloc to its object, an ALLOC starts an object unless it is the ALLOC
 * half of a realloc of a tracked block): hands each object's birth,
 * growths and free to the mode, each at its position (struct pos). On the
 * way: the cycles (gogc from the weighted live bytes, right after the
 * allocation that reaches the goal; interval before the first event past
 * each time), and with `info` the sites' shares of allocation (pprof's
 * way: each sampled allocation, reallocs included, at the site of its own
 * stack) and the links between birth and growth sites. */
struct walk_state {
	struct walk *w;
	struct advise_obj *objs;	/* by the replay's object id */
	size_t nobjs;
	double live, live_at_cycle, since, goal, vol;
	struct interval_clock ic;
	/* Thread exits (several threads, not W_CYCLES): records each thread
	 * has still to make; after its last one it exits, as far as the pools
	 * know (vpool.h releases its private slots then). */
	uint64_t *left;
	bool exit_pending;
	uint32_t exit_thread;
	size_t exit_i;
	uint64_t exit_ts;
	/* The replay of a resolved --all trace keeps no live map: the objects
	 * are the store's, by their latest block's id (advise-int.h), and
	 * the walk applies the joins and counts each site's objects live,
	 * which the live map's blocks at the end gave before (NULL: the
	 * replay keeps the map, and objs[] is by its object ids). */
	struct advise_objs *store;
	/* The last object kept waits here, out of the store, until the
	 * next: most blocks are freed by the event right after the one that
	 * made them (temporary allocations), and those never reach it (nor
	 * the work of finding what it keeps of them). */
	bool has_held;
	struct held {
		uint64_t id, size;
		uint32_t stack, thread;
		struct advise_obj ob;
	} held;
	double *site_live;	/* per site: objects born there and live */
	const struct ap_replay_join *joins;
	size_t njoins, next_join;
};

static inline struct advise_obj *ws_obj(struct walk_state *S, uint32_t id)
{
	if (id >= S->nobjs) {
		size_t n = S->nobjs ? S->nobjs : 1024;
		while (n <= id)
			n *= 2;
		S->objs = ap_xrealloc(S->objs, n * sizeof(*S->objs));
		memset(S->objs + S->nobjs, 0, (n - S->nobjs) * sizeof(*S->objs));
		S->nobjs = n;
	}
	return &S->objs[id];
}

/* Every event: the interval cycles due before it (S->ic is set only
 * when the walk computes interval cycles). */
static inline void ws_event(struct walk_state *S, size_t i, const struct ap_event *e)
{
	if (__builtin_expect(S->ic.every != 0, 0))
		interval_before(&S->ic, &S->w->rp->cyc, e->ts, (struct pos){ S->vol, (double)i - 0.5 });
}

/* An allocation (a birth or a growth): its weight in the shares and the
 * volume clock; returns its position. */
static inline struct pos ws_allocated(struct walk_state *S, size_t i, const struct ap_event *e,
			       const struct ap_replay_block *b)
{
	struct walk *w = S->w;
	if (e->flags & AP_EVF_SAMPLED) {
		double sp = b->w * (double)e->size;
		S->since += sp;
		S->vol += sp;
		w->nsampled++;
		if (w->info) {
			uint32_t site = event_site(w, e);
			w->a->total_alloc_objects += b->w;
			w->a->total_alloc_space += sp;
			if (site != UINT32_MAX) {
				w->info[site].alloc_objects += b->w;
				w->info[site].alloc_space += sp;
			}
		}
	}
	return (struct pos){ S->vol, (double)i };
}

/* After an allocation: the object is live with its block, and a gogc
 * cycle falls right after the one that reaches the goal. */
static inline void ws_live(struct walk_state *S, size_t i, struct advise_obj *ob, const struct ap_event *e,
		    double wt)
{
	struct walk *w = S->w;
	ob->w = wt;
	S->live += wt * (double)e->size;
	if (w->cycles && w->gogc && S->live_at_cycle + S->since >= S->goal) {
		cycles_add(&w->rp->cyc, (struct pos){ S->vol, (double)i + 0.5 }, 1);
		S->live_at_cycle = S->live;
		S->since = 0;
		S->goal = S->live_at_cycle * w->gogc;
		if (S->goal < w->heap_min)
			S->goal = w->heap_min;
	}
}

/* ---- the objects of a resolved trace (S->store) ---- */

/* Whether a vpool held the block at addr when the program ended (END's
 * `pooled`). */
static bool pooled_at_exit(const struct ap_trace *t, uint64_t addr)
{
	size_t lo = ap_lower_bound(t->pooled, t->npooled, sizeof(*t->pooled), 0, addr);
	return lo < t->npooled && t->pooled[lo] == addr;
}


/* What a block of a resolved trace says of its object (advise_objs_set):
 * its stack's site and weight, its size as the largest size and the
 * capacity, the thread that allocated it. */
static inline struct advise_obj obj_of_block(const struct walk_state *S, uint32_t stack,
					     uint64_t size, uint32_t thread)
{
	const struct walk *w = S->w;
	return (struct advise_obj){
		.w = stack ? 1.0 : 0.0,	/* (--all only) */
		.cap = size,
		.maxsize = size,
		.site = w->site_of_stack && stack < w->t->nstacks ? w->site_of_stack[stack]
								 : UINT32_MAX,
		.thread = thread,
	};
}

/* The held object goes into the store: whole where it is not what its
 * block says, or where END's pooled list names the block (ws_end_kept). */
static void ws_settle(struct walk_state *S)
{
	if (!S->has_held)
		return;
	S->has_held = false;
	const struct walk *w = S->w;
	const struct held *h = &S->held;
	const struct advise_obj *ob = &h->ob;
	struct advise_obj d = obj_of_block(S, h->stack, h->size, h->thread);
	/* (a capacity no pool uses is no difference) */
	bool cap_used = ob->site != UINT32_MAX && w->rp->runs[ob->site].active;
	bool whole = ob->w != d.w || (cap_used && ob->cap != d.cap) || ob->maxsize != d.maxsize ||
		     ob->site != d.site || ob->thread != d.thread ||
		     (w->t->npooled && pooled_at_exit(w->t, h->id));
	advise_objs_set(S->store, h->id, ob, h->thread, whole);
}

/* Object ob's latest block is b, allocated by event e: held. */
static inline void ws_keep(struct walk_state *S, const struct ap_event *e,
			   const struct ap_replay_block *b, const struct advise_obj *ob)
{
	ws_settle(S);
	S->has_held = true;
	S->held = (struct held){ b->addr, b->size, b->stack, e->thread, *ob };
}

/* The live object whose latest block is `id` (of stack and size), out of
 * the store: false when none is (the old block of a join). */
static inline bool ws_take(struct walk_state *S, uint64_t id, uint32_t stack, uint64_t size,
			   struct advise_obj *ob)
{
	if (S->has_held) {
		if (S->held.id == id) {
			S->has_held = false;
			*ob = S->held.ob;
			return true;
		}
		ws_settle(S);
	}
	struct advise_obj got;
	switch (advise_objs_take(S->store, id, &got)) {
	case AP_OBJS_NONE:
		return false;
	case AP_OBJS_WHOLE:
		*ob = got;
		return true;
	default:
		*ob = obj_of_block(S, stack, size, got.thread);
		ob->birth = got.birth;
		return true;
	}
}

static void ws_grown(struct walk_state *S, size_t i, const struct ap_event *e,
		     struct advise_obj *ob, uint64_t old_size, const struct ap_replay_block *b);

/* A growth by copy at event i (ap_replay_join), which a replay without
 * the live map leaves to the walk: the new block b continues the object
 * of the join's old block, if it is live; true when it did. */
static bool ws_joined(struct walk_state *S, size_t i, const struct ap_event *e,
		      const struct ap_replay_block *b)
{
	const struct ap_replay_join *jn = advise_join_at(S->joins, S->njoins, &S->next_join, i);
	struct advise_obj ob;
	if (!jn || !ws_take(S, jn->addr, jn->stack, jn->size, &ob))
		return false;
	ws_grown(S, i, e, &ob, jn->size, b);
	ws_keep(S, e, b, &ob);
	return true;
}

static void ws_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct walk_state *S = ctx;
	ws_event(S, i, e);
	if (S->store && S->njoins && ws_joined(S, i, e, b))
		return;
	struct pos pos = ws_allocated(S, i, e, b);
	struct advise_obj *ob;
	if (S->store) {
		/* made where ws_keep would copy it: held (the one held
		 * before goes into the store first) */
		ws_settle(S);
		S->has_held = true;
		S->held.id = b->addr;
		S->held.size = b->size;
		S->held.stack = b->stack;
		S->held.thread = e->thread;
		ob = &S->held.ob;
		*ob = (struct advise_obj){ .cap = e->size, .birth = e->ts, .thread = e->thread };
	} else {
		ob = ws_obj(S, b->obj);
	}
	ob->site = event_site(S->w, e);
	ob->maxsize = e->size;
	if (ob->site != UINT32_MAX)
		obj_birth(S->w, ob, e, pos, (e->flags & AP_EVF_REALLOC) != 0);
	ws_live(S, i, ob, e, b->w);
	if (S->store && ob->site != UINT32_MAX)
		S->site_live[ob->site]++;
}

/* A block of `size` went back to glibc: a free of a block above the
 * mmap threshold (up to 32 MiB) raises it to that block, as free() does. */
static inline void ws_freed(struct replay *rp, uint64_t size)
{
	if (size >= rp->mmap_thr && size <= MMAP_THRESHOLD_MAX)
		rp->mmap_thr = size + 1;
}

/* Object ob grew from a block of old_size to b, by event e (a realloc's
 * ALLOC half, or a growth by copy). */
static void ws_grown(struct walk_state *S, size_t i, const struct ap_event *e,
		     struct advise_obj *ob, uint64_t old_size, const struct ap_replay_block *b)
{
	S->live -= ob->w * (double)old_size;
	struct pos pos = ws_allocated(S, i, e, b);
	/* An unsampled block continuing a tracked chain weighs what the
	 * chain did, in live bytes. */
	double wt = (e->flags & AP_EVF_SAMPLED) ? b->w : ob->w;
	if (e->size > ob->maxsize)
		ob->maxsize = e->size;
	/* a growth by copy frees the old block (a realloc that moves a
	 * mapped block remaps it) */
	if (!(e->flags & AP_EVF_REALLOC))
		ws_freed(S->w->rp, old_size);
	if (ob->site != UINT32_MAX) {
		uint32_t site = event_site(S->w, e);
		obj_grow(S->w, ob, e, pos);
		if (S->w->links && site != UINT32_MAX && site != ob->site)
			links_add(S->w->links, ob->site, site, wt);
		/* (--all: a sampled trace counts its reallocs by the samples'
		 * reconstruction, with other weights) */
		if (S->w->info && S->w->mode == W_EXACT && e->size < old_size)
			S->w->info[ob->site].shrinks += 1;
		if (S->w->info && site != UINT32_MAX) {
			S->w->info[site].grown_here += wt;
			S->w->info[site].copied_here += (e->flags & AP_EVF_REALLOC) ? 0 : wt;
		}
	}
	ws_live(S, i, ob, e, wt);
}

static void ws_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		    const struct ap_replay_block *b)
{
	struct walk_state *S = ctx;
	ws_event(S, i, e);
	if (!S->store) {
		ws_grown(S, i, e, ws_obj(S, b->obj), old->size, b);
		return;
	}
	struct advise_obj ob;
	/* (the old block is live: the compactor matched it) */
	if (!ws_take(S, old->addr, old->stack, old->size, &ob)) {
		ob = obj_of_block(S, old->stack, old->size, e->thread);
		ob.birth = e->ts;
	}
	ws_grown(S, i, e, &ob, old->size, b);
	ws_keep(S, e, b, &ob);
}

static void ws_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct walk_state *S = ctx;
	struct advise_obj taken, *ob = &taken;
	if (!S->store) {
		ob = ws_obj(S, b->obj);
	} else {
		if (S->has_held && S->held.id == b->addr) {
			/* the one held: read where it is (nothing below
			 * holds another) */
			S->has_held = false;
			ob = &S->held.ob;
		} else if (!ws_take(S, b->addr, b->stack, b->size, &taken)) {
			/* the old block of a join: its object went on (the
			 * live map's replay calls no consumer for it but
			 * `event`) */
			return;
		}
		if (ob->site != UINT32_MAX)
			S->site_live[ob->site]--;
	}
	ws_event(S, i, e);
	S->live -= ob->w * (double)b->size;
	if (ob->site != UINT32_MAX)
		obj_put(S->w, ob, e, (struct pos){ S->vol, (double)i });
	ws_freed(S->w->rp, b->size);
}

static void ws_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	ws_event(ctx, i, e);
}

/* The thread whose last record came before: it exits, right after that
 * record (and a cycle it made). */
static void ws_exit(struct walk_state *S)
{
	struct walk *w = S->w;
	struct pos pos = { S->vol, (double)S->exit_i + 0.75 };
	S->exit_pending = false;
	if (w->mode == W_EXACT) {
		r_exit(w->rp, pos, S->exit_ts, S->exit_thread);
	} else if (w->mode == W_COLLECT) {
		add_op(w->rc, pos, S->exit_ts, 0, 0, UINT32_MAX, 0, (uint32_t)S->exit_thread,
		       OP_EXIT);
	}
}

/* Every event, first: counts its thread's records (a realloc's FREE half
 * is counted with its ALLOC half). */
static void ws_any(void *ctx, size_t i, const struct ap_event *e)
{
	struct walk_state *S = ctx;
	if (S->exit_pending)
		ws_exit(S);
	if (e->flags & AP_EVF_FROM_REALLOC)
		return;
	if (e->thread < S->w->t->nthreads && S->left[e->thread] && !--S->left[e->thread]) {
		S->exit_pending = true;
		S->exit_thread = e->thread;
		S->exit_i = i;
		S->exit_ts = e->ts;
	}
}

/* The objects still live at the end escape, unless a pool holds them:
 * then the program already pools them (and never frees them itself). */
static void ws_end(void *ctx, const struct ap_replay_block *b)
{
	struct walk_state *S = ctx;
	struct walk *w = S->w;
	uint32_t site = ws_obj(S, b->obj)->site;
	if (site == UINT32_MAX || !w->rp->runs[site].active)
		return;
	bool pooled = w->t->npooled && pooled_at_exit(w->t, b->addr);
	if (pooled)
		w->rp->runs[site].r.pooled_at_exit++;
	else if (w->mode == W_EXACT)
		w->rp->runs[site].r.escaped++;
}

/* (blocks: the objects' state, kept by the replay's object ids; the
 * addresses of the blocks live at the end, for END's pooled list) */
static const struct ap_replay_ops walk_ops = {
	.blocks = true,
	.alloc = ws_alloc,
	.grow = ws_grow,
	.free = ws_free,
	.unmatched = ws_unmatched,
	.live_at_end = ws_end,
};

static const struct ap_replay_ops walk_ops_exits = {
	.blocks = true,
	.event = ws_any,
	.alloc = ws_alloc,
	.grow = ws_grow,
	.free = ws_free,
	.unmatched = ws_unmatched,
	.live_at_end = ws_end,
};

/* A resolved trace's: no live map (S->store), no blocks at the end
 * (ws_end_kept). */
static const struct ap_replay_ops walk_ops_resolved = {
	.alloc = ws_alloc,
	.grow = ws_grow,
	.free = ws_free,
	.unmatched = ws_unmatched,
};

static const struct ap_replay_ops walk_ops_resolved_exits = {
	.event = ws_any,
	.alloc = ws_alloc,
	.grow = ws_grow,
	.free = ws_free,
	.unmatched = ws_unmatched,
};

/* ws_end for an object the store kept whole: one a pool held at exit is
 * the pool's, not an escape. */
static void ws_end_kept(void *ctx, uint64_t id, const struct advise_obj *ob)
{
	struct walk_state *S = ctx;
	struct walk *w = S->w;
	if (ob->site == UINT32_MAX || !w->rp->runs[ob->site].active ||
	    !pooled_at_exit(w->t, id))
		return;
	w->rp->runs[ob->site].r.pooled_at_exit++;
	S->site_live[ob->site]--;
}

/* The end of a walk without the live map: the objects still live escape,
 * unless a pool holds them (ws_end). */
static void ws_end_store(struct walk_state *S)
{
	struct walk *w = S->w;
	ws_settle(S);
	if (!w->site_of_stack)
		return;
	if (w->t->npooled)
		advise_objs_each_kept(S->store, ws_end_kept, S);
	if (w->mode != W_EXACT)
		return;
	for (size_t s = 0; s < w->rp->nsites; s++)
		if (w->rp->runs[s].active)
			w->rp->runs[s].r.escaped += S->site_live[s];
}

/* Whether a walk of t replays without the live map: a resolved --all
 * trace (a sampled one's map holds its samples only).
 * ALLOCPROF_TEST_ADVISE_BLOCKS=1 keeps the map, to compare. */
static bool resolved_walk(const struct ap_trace *t, enum walk_mode mode)
{
	const char *env = getenv("ALLOCPROF_TEST_ADVISE_BLOCKS");
	return t->resolved && t->rate <= 1 && mode != W_COLLECT && !(env && !strcmp(env, "1"));
}

static bool walk_resolved(const struct walk *w)
{
	return resolved_walk(w->t, w->mode);
}

/* The events a folded walk holds back at most (40 bytes each) while a
 * thread that allocated stays quiet; beyond, the joins are found by a
 * pass of their own, as for a trace of more threads than FOLD_THREADS
 * (whose horizon would cost more to find than the pass). */
#define FOLD_HELD (1u << 18)
#define FOLD_THREADS 4096

/* Events held back (walk_folded): n of them from held[head]. */
struct held_events {
	struct ap_event *ev;
	size_t head, n, cap;
};

static void held_add(struct held_events *h, const struct ap_event *ev, size_t n)
{
	if (!n)
		return;
	if (h->head && h->head + h->n + n > h->cap) {
		memmove(h->ev, h->ev + h->head, h->n * sizeof(*h->ev));
		h->head = 0;
	}
	AP_ALLOC_GROW(h->ev, h->head + h->n + n, h->cap);
	memcpy(h->ev + h->head + h->n, ev, n * sizeof(*ev));
	h->n += n;
}

/* Feeds the first n held events. */
static int held_feed(struct held_events *h, struct ap_replay_run *run, size_t n,
		     struct ap_error *err)
{
	if (!n)
		return 0;
	int rc = ap_replay_feed(run, h->ev + h->head, n, err);
	h->head = (h->n -= n) ? h->head + n : 0;
	return rc;
}

/* The replay of a resolved trace whose growth chains (rp->joins) are
 * found in the same pass, from the same events: a join at event i is
 * known once its thread's next event has been seen (with one thread,
 * event i + 1), so the walk is given the events before the chains'
 * horizon and the rest wait for the next batch; the walk sees the events
 * in their order, each with the joins up to it (S->joins). A thread
 * quiet for more than FOLD_HELD events after an allocation has the
 * joins found by a pass of their own, and the walk goes on with them. */
static int walk_folded(const struct ap_trace *t, const struct ap_replay_consumer *c,
		       struct walk_state *S, struct advise_chains *chains, struct ap_error *err)
{
	struct ap_replay_run *run = ap_replay_start(t, c, 1);
	struct ap_events *it = ap_events_open(t);
	struct held_events held = { 0 };
	/* (a test's smaller bound, to take the way a long run takes) */
	const char *env = getenv("ALLOCPROF_TEST_FOLD_HELD");
	size_t most = env && *env ? strtoul(env, NULL, 10) : FOLD_HELD;
	const struct ap_event *ev;
	ssize_t got;
	size_t base = 0;	/* the index of ev[0]; held: the events before it */
	int rc = 0;
	while (rc == 0 && (got = ap_events_next(it, &ev)) > 0) {
		size_t n = (size_t)got;
		advise_chains_events(chains, base, ev, n);
		size_t h = advise_chains_horizon(chains);
		if (h < base + n && held.n + n > most) {
			if (advise_chains_complete(chains, err) < 0) {
				rc = -1;
				break;
			}
			h = SIZE_MAX;
		}
		S->joins = advise_chains_found(chains, &S->njoins);
		/* (h is never before the first event held: a thread pending
		 * then still is, at the same event, or has had its next) */
		size_t first = base - held.n;
		if (h < base) {
			rc = held_feed(&held, run, h - first, err);
			held_add(&held, ev, n);
		} else {
			size_t k = h - base < n ? h - base : n;
			if (held_feed(&held, run, held.n, err) < 0 ||
			    ap_replay_feed(run, ev, k, err) < 0)
				rc = -1;
			held_add(&held, ev + k, n - k);
		}
		base += n;
	}
	if (rc == 0 && got < 0)
		rc = ap_error_set(err, "%s", ap_events_error(it));
	ap_events_close(it);
	if (rc == 0) {
		S->joins = advise_chains_found(chains, &S->njoins);
		rc = held_feed(&held, run, held.n, err);
	}
	free(held.ev);
	if (rc < 0) {
		ap_replay_abandon(run);
		return -1;
	}
	return ap_replay_finish(run, NULL, err);
}

/* Returns 0, or -1 with err set when the replay fails. */
static int walk_events(struct walk *w, struct ap_error *err)
{
	const struct ap_trace *t = w->t;
	struct walk_state S = { .w = w, .goal = w->heap_min };
	w->rp->mmap_thr = MMAP_THRESHOLD_START;
	if (w->cycles && !w->gogc)
		S.ic = (struct interval_clock){ t->start_ns + w->interval_ns, w->interval_ns };
	bool exits = w->mode != W_CYCLES && !w->rp->one_p && t->nthreads > 1;
	if (exits) {
		S.left = ap_xmalloc(t->nthreads * sizeof(*S.left));
		for (size_t k = 0; k < t->nthreads; k++)
			S.left[k] = t->threads[k].events;
	}
	struct ap_replay_consumer c = { exits ? &walk_ops_exits : &walk_ops, &S };
	int rc;
	if (walk_resolved(w)) {
		S.store = advise_objs_new(t->time_quantum_ns);
		S.site_live = ap_xcalloc(w->rp->nsites ? w->rp->nsites : 1, sizeof(*S.site_live));
		S.joins = w->rp->joins;
		S.njoins = w->rp->njoins;
		c.ops = exits ? &walk_ops_resolved_exits : &walk_ops_resolved;
		rc = w->chains ? walk_folded(t, &c, &S, w->chains, err)
			       : ap_replay(t, &c, 1, NULL, err);
		if (rc == 0)
			ws_end_store(&S);
	} else {
		rc = ap_replay_joined(t, w->rp->joins, w->rp->njoins, &c, 1, NULL, err);
	}
	advise_objs_free(S.store);
	free(S.site_live);
	if (rc < 0) {
		free(S.left);
		free(S.objs);
		return -1;
	}
	if (S.exit_pending)
		ws_exit(&S);
	free(S.left);
	if (w->cycles)
		interval_before(&S.ic, &w->rp->cyc, w->rp->t_end,
				(struct pos){ S.vol, (double)t->nev - 0.5 });
	w->rp->vol_end = S.vol;
	free(S.objs);
	return 0;
}

static void walk_cycles_init(struct walk *w, const struct ap_advise_options *o)
{
	w->cycles = true;
	if (o->gc_mode == AP_GC_GOGC) {
		w->gogc = 1.0 + (double)o->gogc / 100.0;
		/* Go's heapMinimum: 4 MiB at GOGC=100, scaled with GOGC
		 * (runtime/mgcpacer.go, defaultHeapMinimum * GOGC / 100). */
		w->heap_min = 4.0 * 1024 * 1024 * (double)o->gogc / 100.0;
	}
	else
		w->interval_ns = o->interval_ns;
}

double *ap_advise_cycles(const struct ap_trace *t, const struct ap_replay_join *joins, size_t njoins,
			 const struct ap_advise_options *o, size_t *n, uint64_t *count,
			 struct ap_error *err)
{
	struct replay rp = { .t = t, .o = o, .t_end = ap_trace_end_ns(t), .joins = joins,
			     .njoins = njoins };
	struct walk w = { .mode = W_CYCLES, .t = t, .rp = &rp };
	walk_cycles_init(&w, o);
	if (walk_events(&w, err) < 0) {
		free(rp.cyc.c);
		return NULL;
	}
	double *pos = ap_xmalloc((rp.cyc.n ? rp.cyc.n : 1) * sizeof(*pos));
	for (size_t i = 0; i < rp.cyc.n; i++)
		pos[i] = rp.cyc.c[i].pos.tb;
	*n = rp.cyc.n;
	*count = rp.cyc.count;
	free(rp.cyc.c);
	return pos;
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

static void add_op(struct recon *rc, struct pos pos, uint64_t ts, uint64_t size, uint32_t obj,
		   uint32_t site, uint16_t cpu, uint32_t thread, uint8_t type)
{
	AP_ALLOC_GROW(rc->ops, rc->nops + 1, rc->ops_alloc);
	rc->ops[rc->nops] = (struct op){ pos, ts, size, obj, (uint32_t)rc->nops, site, cpu,
					 thread, type };
	rc->nops++;
}

static int op_cmp(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	if (pos_lt(x->pos, y->pos))
		return -1;
	if (pos_lt(y->pos, x->pos))
		return 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A sample's life on the volume clock is the sum of the stretches of the
 * other samples inside it: 0, or about a sampling interval R or more,
 * where the real life took some bytes in between; its copies would all be
 * live for R at once (a site of 64 objects live together, 64 KiB of
 * allocation each life, got ~500 at once) or all for none. The life
 * given to its copies is instead its expected length given the n sample
 * points in it, lives at the site taken as exponential with mean mu:
 * (n + 1) / (1/mu + 1/R), mu from the share f0 of the site's samples with
 * no point in their lives, P(n = 0) = R / (R + mu) (an empirical Bayes
 * estimate; a site whose every life holds points keeps them as they
 * are). Growths move with the life, in proportion. */
static void lives_estimate(struct recon *rc, const struct replay *rp, size_t ns)
{
	if (!rc->nsampled || rp->vol_end <= 0)
		return;
	double R = rp->vol_end / (double)rc->nsampled;
	double *n0 = ap_xcalloc(ns ? ns : 1, sizeof(*n0)), *nf = ap_xcalloc(ns ? ns : 1, sizeof(*nf));
	for (size_t i = 0; i < rc->nrec; i++) {
		const struct srec *r = &rc->rec[i];
		if (!r->k || !r->freed)
			continue;
		nf[r->site] += 1;
		n0[r->site] += r->npts == 0;
	}
	for (size_t i = 0; i < rc->nrec; i++) {
		struct srec *r = &rc->rec[i];
		if (!r->k || !r->freed || !n0[r->site])
			continue;
		double f0 = n0[r->site] / nf[r->site];
		double mu = R * (1 / f0 - 1);
		double life = mu > 0 ? ((double)r->npts + 1) / (1 / mu + 1 / R) : 0;
		double lv = r->dpos.v - r->bpos.v;
		for (uint32_t g = r->ghead; g != UINT32_MAX; g = rc->g[g].next)
			rc->g[g].pos.v = r->bpos.v + (lv > 0 ? (rc->g[g].pos.v - r->bpos.v) * life / lv : 0);
		r->dpos.v = r->bpos.v + life;
	}
	free(n0);
	free(nf);
}

/* Makes the copies of every sampled object and sorts their operations.
 * The copies of a sample are spread evenly over the stretch of the stream
 * (and of time) since the site's previous sample, the last at the sample
 * itself, so that the site's requests keep their rate against the cycles
 * and every copy its lifetime. */
static void recon_build(struct recon *rc, struct replay *rp, struct site_info *info,
			const uint32_t *born, uint64_t seed)
{
	size_t ns = rp->nsites;
	struct cost_memo *costs = rp->costs;
	double *ksum = ap_xcalloc(ns, sizeof(*ksum));
	double *kdone = ap_xcalloc(ns, sizeof(*kdone));
	uint64_t *prev = ap_xcalloc(ns, sizeof(*prev));
	double *prevp = ap_xcalloc(ns, sizeof(*prevp));
	double *firstp = ap_xcalloc(ns, sizeof(*firstp)), *lastp = ap_xcalloc(ns, sizeof(*lastp));
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
		/* A sample may stand for more objects than a site replays (a
		 * huge rate in a damaged trace): the site's scale makes up for
		 * the rest. */
		double k = fl + (u < r->w - fl);
		if (k < 1)
			k = 1;
		r->k = k > SITE_BUDGET ? SITE_BUDGET : (uint32_t)k;
		/* A buffer first seen growing belongs to the pool of the site
		 * where such buffers are born, when a sample saw one born. */
		bool adopted = r->seen_growing && born[r->site] != UINT32_MAX;
		if (adopted) {
			r->site = born[r->site];
			r->adopted = true;
		}
		ksum[r->site] += k;
		struct site_info *si = &info[r->site];
		if (!si->samples) {
			si->first_ts = r->birth;
			firstp[r->site] = r->bpos.v;
		}
		si->last_ts = r->birth;
		lastp[r->site] = r->bpos.v;
		si->samples++;
		si->w2 += r->w * (r->w - 1);
		if (adopted) {
			/* Its birth was not seen: the request and its size are
			 * the site's (below); what was seen is growth. */
			si->births += r->w;
			info_growth(si, costs, r->size, r->w);
		} else {
			info_birth(si, rp, r->size, r->w);
		}
		for (uint32_t g = r->ghead; g != UINT32_MAX; g = rc->g[g].next)
			info_growth(si, costs, rc->g[g].size, r->w);
		if (adopted)
			si->adopted += r->w;
		else if (r->seen_growing)
			si->seen_growing += r->w;
		if (r->freed) {
			si->life_sum += r->w * (double)(r->death - r->birth);
			si->life_w += r->w;
			if (r->dthread != r->thread)
				si->cross += r->w;
			size_hist_add(&si->f.cap, r->maxsize, r->w);
		}
	}
	lives_estimate(rc, rp, ns);
	/* The request size of an adopted buffer: the site's median. */
	uint64_t *req = ap_xcalloc(ns ? ns : 1, sizeof(*req));
	for (size_t s = 0; s < ns; s++)
		req[s] = (uint64_t)size_hist_quantile(&info[s].f.req, 0.5);
	for (size_t i = 0; i < rc->nrec; i++) {
		struct srec *r = &rc->rec[i];
		uint32_t s = r->site;
		if (!r->k || (kdone[s] + r->k > SITE_BUDGET && kdone[s] > 0))
			continue;
		uint64_t birth_size = r->adopted && req[s] && req[s] < r->size ? req[s] : r->size;
		struct site_info *si = &info[s];
		uint64_t gap;
		double gapp;
		if (seen[s]) {
			gap = r->birth - prev[s];
			gapp = r->bpos.v - prevp[s];
		} else if (si->samples > 1) {
			gap = (si->last_ts - si->first_ts) / (si->samples - 1);
			gapp = (lastp[s] - firstp[s]) / (double)(si->samples - 1);
		} else {
			gap = (uint64_t)((double)dur / r->w);
			gapp = rp->vol_end / r->w;
		}
		seen[s] = true;
		prev[s] = r->birth;
		prevp[s] = r->bpos.v;
		kdone[s] += r->k;
		for (uint32_t j = 0; j < r->k; j++) {
			double frac = (double)(r->k - 1 - j) / r->k;
			uint64_t off = (uint64_t)((double)gap * frac);
			double offp = gapp * frac;
			if (off > r->birth)
				off = r->birth;
			if (offp > r->bpos.v)
				offp = r->bpos.v;
			uint32_t obj = (uint32_t)rc->nclones++;
			add_op(rc, pos_minus(r->bpos, offp), r->birth - off, birth_size, obj, s, r->cpu,
			       r->thread, OP_GET);
			if (birth_size != r->size)
				add_op(rc, pos_minus(r->bpos, offp), r->birth - off, r->size, obj, s, 0, 0,
				       OP_GROW);
			for (uint32_t g = r->ghead; g != UINT32_MAX; g = rc->g[g].next)
				add_op(rc, pos_minus(rc->g[g].pos, offp), rc->g[g].ts - off, rc->g[g].size, obj, s, 0,
				       0, OP_GROW);
			if (r->freed)
				add_op(rc, pos_minus(r->dpos, offp), r->death - off, 0, obj, s, r->dcpu,
				       r->dthread, OP_PUT);
			else
				rc->escaped[s]++;
		}
	}
	for (size_t s = 0; s < ns; s++)
		rp->runs[s].scale = kdone[s] > 0 ? ksum[s] / kdone[s] : 1;
	if (rc->nops)
		qsort(rc->ops, rc->nops, sizeof(*rc->ops), op_cmp);
	rc->cap = ap_xmalloc((rc->nclones + 1) * sizeof(*rc->cap));
	free(req);
	free(ksum);
	free(kdone);
	free(prev);
	free(prevp);
	free(firstp);
	free(lastp);
	free(seen);
}

static void pass_recon(struct replay *rp, struct recon *rc)
{
	for (size_t i = 0; i < rc->nops; i++) {
		const struct op *op = &rc->ops[i];
		if (op->type == OP_EXIT) {
			r_exit(rp, op->pos, op->ts, op->thread);
			continue;
		}
		struct site_run *s = &rp->runs[op->site];
		if (!s->active)
			continue;
		if (op->type == OP_GET)
			rc->cap[op->obj] = r_get(rp, s, op->pos, op->ts, op->thread, op->cpu, op->size);
		else if (op->type == OP_GROW)
			r_grow(rp, s, op->size, &rc->cap[op->obj]);
		else
			r_put(rp, s, op->pos, op->ts, op->thread, op->cpu, rc->cap[op->obj]);
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
		&r->alloc_bytes_avoided, &r->hit_cap_bytes, &r->reallocs, &r->reallocs_avoided,
		&r->realloc_bytes_avoided, &r->escaped, &r->puts, &r->dropped_cap,
		&r->lost_cycle, &r->lost_pchange, &r->lost_exit, &r->time_saved_ns,
		&r->pooled_at_exit,
		&r->gaps, &r->gap_cycles, &r->far_gaps,
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
		run->had_get = false;
		run->prev_get_cum = 0;
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
		r->lost_exit = (double)st.lost_exit;
		r->peak_held_bytes = (double)st.peak_held_bytes;
		r->steady_peak_held_bytes = (double)st.peak_held_bytes_to_last_get;
		r->mean_held_bytes = st.mean_held_bytes;
		if (run->scale != 1)
			scale_result(r, run->scale);
		r->bytes_avoided = r->alloc_bytes_avoided + r->realloc_bytes_avoided;
		double hits = r->gets - r->misses;
		r->hit_rate = r->gets > 0 ? hits / r->gets : 0;
	}
}

/* The first replay. --all: matching, cycles, shares, facts and the replay
 * in one pass over the trace (a cycle found at an event applies to the
 * operations after it, which come later in the same pass). Sampled: one
 * pass collects the reconstruction (and cycles, shares, facts), then its
 * replay. Returns 0, or -1 with err set when the replay fails. */
static int first_replay(struct replay *rp, const struct ap_site_map *m, struct site_info *info,
			struct links *links, uint32_t *grows, uint32_t *born, struct ap_advice *a,
			struct recon *rc, const uint64_t *caps, struct advise_chains *chains,
			struct ap_error *err)
{
	struct walk w = { .mode = a->sampled ? W_COLLECT : W_EXACT, .t = rp->t,
			  .site_of_stack = m->site_of_stack, .rp = rp, .info = info,
			  .links = links, .a = a, .rc = rc, .chains = chains };
	walk_cycles_init(&w, rp->o);
	runs_reset(rp, caps);
	int wrc = walk_events(&w, err);
	/* (the chains found in the walk's pass: the joins from here on) */
	if (chains) {
		advise_chains_end(chains, wrc < 0 ? NULL : &a->joins, &a->njoins);
		rp->joins = a->joins;
		rp->njoins = a->njoins;
	}
	if (wrc < 0)
		return -1;
	links_best(links, m->nsites, grows, born);
	if (a->sampled) {
		rc->nsampled = w.nsampled;
		recon_build(rc, rp, info, born, rp->o->seed);
		pass_recon(rp, rc);
	}
	runs_finish(rp);
	return 0;
}

/* A replay again, with other caps (as first_replay returns). */
static int next_replay(struct replay *rp, const struct ap_site_map *m, struct recon *rc,
		       const uint64_t *caps, struct ap_error *err)
{
	runs_reset(rp, caps);
	if (rc) {
		pass_recon(rp, rc);
	} else {
		struct walk w = { .mode = W_EXACT, .t = rp->t, .site_of_stack = m->site_of_stack,
				  .rp = rp };
		if (walk_events(&w, err) < 0)
			return -1;
	}
	runs_finish(rp);
	return 0;
}

/* A site's facts into its public description. */
static void describe_site(struct ap_advise_site *site, const struct site_info *si,
			  const struct ap_advice *a, const struct ap_cost_table *costs)
{
	const struct size_hist *req = &si->f.req, *cap = &si->f.cap;
	site->alloc_objects = si->alloc_objects;
	site->alloc_space = si->alloc_space;
	site->share = a->total_alloc_space > 0 ? si->alloc_space / a->total_alloc_space : 0;
	site->life_share = a->total_alloc_space > 0 ? si->life_space / a->total_alloc_space : 0;
	site->samples = si->samples;
	/* The object count is a sum of sample weights w, each sample taken with
	 * probability 1/w: its variance is the sum of w(w-1) (Horvitz-Thompson),
	 * about births/samples for small objects, and 0 for blocks so big that
	 * every one is sampled. */
	site->rel_error = a->sampled && si->births > 0 ? sqrt(si->w2) / si->births : 0;
	site->exact = a->sampled && site->rel_error < 0.005;
	site->held_known = !a->sampled || site->exact;
	double h = site->r.hit_rate;
	site->hit_rate_error = a->sampled && !site->exact && si->samples > 0 ?
		sqrt(h * (1 - h) / (double)si->samples) : 0;
	site->mean_gap_ns = site->r.gets > 1.5 && si->samples > 1 ?
		(double)(si->last_ts - si->first_ts) / (site->r.gets - 1) : 0;
	site->mean_life_ns = si->life_w > 0 ? si->life_sum / si->life_w : 0;
	site->cross_thread_share = si->life_w > 0 ? si->cross / si->life_w : 0;
	site->calloc_share = si->births > 0 ? si->callocs / si->births : 0;
	site->aligned_share = si->births > 0 ? si->aligned / si->births : 0;
	site->shrink_share = si->reallocs > 0 ? si->shrinks / si->reallocs : 0;
	site->mean_size = req->total > 0 ? req->sum / req->total : 0;
	site->p50_size = size_hist_quantile(req, 0.5);
	site->p90_size = size_hist_quantile(req, 0.9);
	site->max_size = req->max;
	site->p50_cap = size_hist_quantile(cap, 0.5);
	site->p90_cap = size_hist_quantile(cap, 0.9);
	site->max_cap = cap->max;
	site->nround_classes = advise_round_classes(req, site->round_classes, &site->round_ratio);
	site->reallocs_per_object = si->births > 0 ? si->reallocs / si->births : 0;
	site->copy_share = si->reallocs > 0 ? si->copies / si->reallocs
			   : si->grown_here > 0 ? si->copied_here / si->grown_here : 0;
	site->life_cost_ns = si->births > 0 ? si->life_cost / si->births : 0;
	double c = site->p50_cap > 0 ? site->p50_cap : site->p50_size;
	/* A get and a put as this site's hits meet them: through the
	 * private slot or a deque, in the replay's proportion. */
	struct ap_cost_point cp;
	ap_cost_all(costs, (uint64_t)c, &cp);
	double hits = site->r.gets - site->r.hits[AP_POOL_MISS], priv = site->r.hits[AP_POOL_PRIVATE];
	site->pool_cost_ns = hits > 0 ? (priv * cp.pool_ns + (hits - priv) * cp.pool_shared_ns) / hits
				      : cp.pool_ns;
	site->seen_growing = si->seen_growing;
	site->adopted = si->adopted;
	site->births_seen = si->births_seen;
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
	a->procs = o->procs ? o->procs : (unsigned)(t->cpus && t->cpus <= 4096 ? t->cpus : 1);
	a->one_p = t->nthreads <= 1;
	a->gc_mode = o->gc_mode;
	a->gogc = o->gogc;
	a->interval_ns = o->interval_ns;
	a->events = t->nev;
	a->costs_measured_at = o->costs->measured_at;
	a->costs_rounds = o->costs->rounds;
	a->costs_spread = o->costs->spread;
	a->program_cpu_ns = t->cpu_ns;
	a->has_switches = t->has_switches;
	a->program_switches = t->nvcsw + t->nivcsw;
	a->has_program_minflt = t->has_minflt;
	a->program_minflt = t->minflt;
	a->program_unwind_ns = t->unwind_ns;

	/* (before the cost memo: nothing to release if it fails) The
	 * growth chains of a resolved trace are found in the first walk's
	 * own pass (walk_folded); else in a pass of their own. */
	struct advise_chains *chains = NULL;
	if (!a->sampled && t->nthreads <= FOLD_THREADS && resolved_walk(t, W_EXACT))
		chains = advise_chains_new(t, m);
	else if (!a->sampled && ap_advise_joins(t, m, &a->joins, &a->njoins, err) < 0) {
		free(a);
		return NULL;
	}
	struct replay rp = { .t = t, .o = o, .procs = a->procs, .one_p = a->one_p,
			     .nsites = m->nsites, .costs = cost_memo_new(o->costs),
			     .joins = a->joins, .njoins = a->njoins };
	rp.t_end = ap_trace_end_ns(t);
	a->duration_ns = rp.t_end > t->start_ns ? rp.t_end - t->start_ns : 0;

	size_t ns = m->nsites;
	struct site_info *info = ap_xcalloc(ns ? ns : 1, sizeof(*info));
	rp.runs = ap_xcalloc(ns ? ns : 1, sizeof(*rp.runs));
	uint64_t *caps = ap_xcalloc(ns ? ns : 1, sizeof(*caps));
	for (size_t s = 0; s < ns; s++) {
		rp.runs[s].pool = ap_pool_new(AP_POOL_VPOOL, a->procs, 0);
		rp.runs[s].active = true;
		rp.runs[s].scale = 1;
	}

	struct recon rc = { 0 };
	struct links links = { 0 };
	ap_u64map_init(&links.m, 64);
	uint32_t *grows = ap_xmalloc((ns ? ns : 1) * sizeof(*grows));
	uint32_t *born = ap_xmalloc((ns ? ns : 1) * sizeof(*born));
	if (first_replay(&rp, m, info, &links, grows, born, a, a->sampled ? &rc : NULL, caps,
			 chains, err) < 0)
		goto fail;
	a->cycles = rp.cyc.count;
	a->mean_cycle_ns = (double)a->duration_ns / (double)(rp.cyc.count + 1);

	a->sites = ap_xcalloc(ns ? ns : 1, sizeof(*a->sites));
	for (size_t s = 0; s < ns; s++) {
		struct ap_advise_site *site = &a->sites[s];
		site->r = rp.runs[s].r;
		describe_site(site, &info[s], a, o->costs);
		/* A cap to evaluate: the one asked for, or one found when the
		 * capacities are skewed. */
		uint64_t cap = o->max_keep ? o->max_keep : advise_pick_cap(&info[s].f, site->r.gets);
		caps[s] = cap;
		rp.runs[s].active = cap && site->r.gets > 0;
		site->cap = cap;
		site->capped = rp.runs[s].active;
	}
	bool any = false;
	for (size_t s = 0; s < ns; s++)
		any |= rp.runs[s].active;
	if (any) {
		if (next_replay(&rp, m, a->sampled ? &rc : NULL, caps, err) < 0)
			goto fail;
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
		site->site_id = (uint32_t)s;
		site->name = ap_xstrdup(m->name[s]);
		site->function = ap_xstrdup(m->function[s] ? m->function[s] : m->name[s]);
		site->file = m->file[s] ? ap_xstrdup(m->file[s]) : NULL;
		site->line = m->line[s];
		site->via = m->via && m->via[s] ? ap_xstrdup(m->via[s]) : NULL;
		site->rust = m->rust && m->rust[s];
		site->grows_site = grows[s];
		site->born_site = born[s];
		if (grows[s] != UINT32_MAX)
			site->grows_at = ap_xstrdup(m->name[grows[s]]);
		if (born[s] != UINT32_MAX) {
			site->born_at = ap_xstrdup(m->name[born[s]]);
			site->born_share = links_born_share(&links, (uint32_t)s, born[s]);
		}
		advise_judge(a, site, &info[s].f, o);
		a->sites[kept++] = *site;
	}
	a->nsites = kept;
	advise_rank(a);

out:
	recon_release(&rc); /* (all NULL unless sampled) */
	for (size_t s = 0; s < ns; s++)
		ap_pool_free(rp.runs[s].pool);
	ap_u64map_release(&links.m);
	free(links.key);
	free(links.w);
	free(grows);
	free(born);
	free(rp.runs);
	free(caps);
	free(info);
	free(rp.cyc.c);
	free(rp.costs);
	return a;
fail:
	ap_advice_free(a);
	a = NULL;
	goto out;
}

void ap_advice_free(struct ap_advice *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nsites; i++) {
		free(a->sites[i].name);
		free(a->sites[i].function);
		free(a->sites[i].file);
		free(a->sites[i].via);
		free(a->sites[i].grows_at);
		free(a->sites[i].born_at);
		free(a->sites[i].verdict_text);
		free(a->sites[i].reasons);
	}
	free(a->sites);
	for (size_t i = 0; i < a->ngraphs; i++) {
		free(a->graphs[i].reasons);
		free(a->graphs[i].root_via);
		for (size_t j = 0; j < AP_GRAPH_MAX_MEMBERS; j++)
			free(a->graphs[i].member_via[j]);
	}
	free(a->graphs);
	free(a->joins);
	free(a);
}

void ap_site_map_release(struct ap_site_map *m)
{
	for (size_t i = 0; i < m->nsites; i++) {
		free(m->name[i]);
		free(m->function[i]);
		free(m->file[i]);
		if (m->via)
			free(m->via[i]);
		if (m->unsym_module)
			free(m->unsym_module[i]);
	}
	free(m->via);
	free(m->unsym_module);
	free(m->rust);
	for (size_t k = 0; m->kind_callee && k < m->nkinds; k++)
		free(m->kind_callee[k]);
	free(m->kind_callee);
	free(m->kind_of_stack);
	free(m->site_of_kind);
	free(m->name);
	free(m->function);
	free(m->file);
	free(m->line);
	free(m->site_of_stack);
	free(m->pc_of_stack);
	memset(m, 0, sizeof(*m));
}
