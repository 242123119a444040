/* The compactor's plan for a trace of several threads (plan.h): one
 * replay of the trace, as every report replays it, that finds which FREE
 * ends which thread's block, which blocks must keep their address, and
 * the runs of each thread that give its events their new quanta. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "ap_hash.h"
#include "ap_replay.h"
#include "ap_trace.h"

static void bits_set(struct bits *b, uint64_t i)
{
	if (i / 64 >= b->n) {
		size_t n = b->n ? b->n : 64;
		while (i / 64 >= n)
			n *= 2;
		b->w = ap_xrealloc(b->w, n * sizeof(*b->w));
		memset(b->w + b->n, 0, (n - b->n) * sizeof(*b->w));
		b->n = n;
	}
	b->w[i / 64] |= 1ull << (i % 64);
}

/* A replay consumer: the allocations of each thread (counted in its own
 * order, as the compactor counts them) and, per object, the thread and
 * index of its current block. A FREE or realloc by another thread is
 * noted (struct xfree): that thread's record names the block by (tid,
 * index). An allocation keeps its address (its keep bit) when another
 * thread's record names its address in the quantum of its allocation or
 * of its free: the reader's merge orders the threads' events within a
 * quantum by what addresses are live (a block freed and its address
 * taken by another thread), and an anonymous block would no longer tell
 * it. */
struct blk {
	uint32_t thread;
	uint64_t index;
};

struct shared_scan {
	uint64_t *nalloc;	  /* per thread index */
	uint64_t *nfrees;	  /* per thread index: its FREE records so far */
	struct thread_plan *plan; /* per thread index */
	struct blk *obj;	  /* per object id: its current block */
	size_t obj_alloc;
	/* the addresses named in the current quantum: the last record's
	 * thread and block (thread UINT32_MAX: a FREE that ended none) */
	uint64_t quantum;
	struct ap_u64map seen;
	struct {
		uint64_t addr;
		uint32_t thread;
		struct blk b;
	} * rec;
	size_t nrec, rec_alloc;
	/* the runs (struct run, coarse_q): every thread's events so far and
	 * its last run's vm; the current run's thread (UINT32_MAX: none yet),
	 * first event, flags, qh and vm; the last event's quantum, and the
	 * new quantum of it and of the run's last event before the current
	 * quantum; whether a time went back (then no run is written) */
	uint64_t *nev, *last_vm;
	uint32_t run_thread;
	uint64_t run_from, run_qh, run_vm;
	unsigned run_flags;
	uint64_t last_q, last_v, before_v;
	bool back;
	uint64_t tq, step; /* the trace's quantum (ns), the compactor's step */
};

static void scan_mark(struct shared_scan *s, struct blk b)
{
	if (b.thread != UINT32_MAX)
		bits_set(&s->plan[b.thread].keep, b.index);
}

/* Thread `thread`'s record names addr, for block b, at time ts. */
static void scan_named(struct shared_scan *s, uint64_t ts, uint64_t addr, uint32_t thread,
		       struct blk b)
{
	if (ts != s->quantum) {
		for (size_t k = 0; k < s->nrec; k++)
			ap_u64map_delete(&s->seen, ap_u64map_find(&s->seen, s->rec[k].addr));
		s->nrec = 0;
		s->quantum = ts;
	}
	bool made;
	struct ap_u64map_slot *sl = ap_u64map_slot_of(&s->seen, addr, &made);
	if (made) {
		AP_ALLOC_GROW(s->rec, s->nrec + 1, s->rec_alloc);
		sl->val = (uint32_t)s->nrec++;
	} else if (s->rec[sl->val].thread != thread) {
		scan_mark(s, s->rec[sl->val].b);
		scan_mark(s, b);
	}
	s->rec[sl->val].addr = addr;
	s->rec[sl->val].thread = thread;
	s->rec[sl->val].b = b;
}

static void scan_began(struct shared_scan *s, const struct ap_event *e, uint32_t obj)
{
	AP_ALLOC_GROW(s->obj, (size_t)obj + 1, s->obj_alloc);
	s->obj[obj] = (struct blk){e->thread, s->nalloc[e->thread]++};
	scan_named(s, e->ts, e->addr, e->thread, s->obj[obj]);
}

static void scan_ended(struct shared_scan *s, const struct ap_event *e,
		       const struct ap_replay_block *ended)
{
	uint64_t addr = ended->addr;
	uint32_t obj = ended->obj;
	uint64_t ord = s->nfrees[e->thread]++;
	struct blk b = s->obj[obj];
	if (b.thread != e->thread) {
		struct thread_plan *pl = &s->plan[e->thread];
		bits_set(&s->plan[b.thread].xfreed, b.index);
		AP_ALLOC_GROW(pl->x, pl->nx + 1, pl->x_alloc);
		pl->x[pl->nx++] = (struct xfree){ord,	      b.index,		b.thread,
						 ended->stack, ended->temporary, ended->size};
	}
	scan_named(s, e->ts, addr, e->thread, b);
}

/* The current run ends before an event (of another thread) in quantum
 * qn (UINT64_MAX: the trace's end). */
static void scan_run_end(struct shared_scan *s, uint64_t qn)
{
	uint32_t th = s->run_thread;
	if (th == UINT32_MAX)
		return;
	struct thread_plan *pl = &s->plan[th];
	unsigned f = s->run_flags;
	uint64_t vt = 0;
	if (qn == s->last_q && !((f & RUN_HEAD) && s->last_q == s->run_qh)) {
		/* its last quantum is shared with the next event's: above the
		 * run's earlier ones */
		f |= RUN_TAIL;
		vt = s->last_q - s->last_q % s->step;
		if (vt < s->before_v + 1)
			vt = s->before_v + 1;
		s->last_v = vt;
	}
	AP_ALLOC_GROW(pl->runs, pl->nruns + 5 * AP_VARINT_MAX, pl->runs_alloc);
	uint8_t *p = pl->runs + pl->nruns;
	p += ap_put_uv(p, s->nev[th] - s->run_from);
	p += ap_put_uv(p, f);
	p += ap_put_uv(p, s->run_vm - s->last_vm[th]);
	if (f & RUN_HEAD)
		p += ap_put_uv(p, s->run_qh - (s->run_vm - 1));
	if (f & RUN_TAIL) {
		p += ap_put_uv(p, s->last_q - s->run_vm);
		p += ap_put_uv(p, vt - s->run_vm);
	}
	pl->nruns = (size_t)(p - pl->runs);
	s->last_vm[th] = s->run_vm;
}

/* Every event: the runs, and the new quantum (coarse_q) of each. */
static void scan_event(void *ctx, size_t i, const struct ap_event *e)
{
	struct shared_scan *s = ctx;
	uint64_t q = e->ts / s->tq;
	bool first = s->run_thread == UINT32_MAX;
	if (!first && q < s->last_q)
		s->back = true;
	if (e->thread != s->run_thread) {
		scan_run_end(s, q);
		s->run_thread = e->thread;
		s->run_from = s->nev[e->thread];
		s->run_flags = !first && q == s->last_q ? RUN_HEAD : 0;
		s->run_qh = s->last_q;
		s->run_vm = first ? 0 : s->last_v + 1;
		s->before_v = s->last_v;
	} else if (q != s->last_q) {
		s->before_v = s->last_v;
	}
	uint64_t v = q - q % s->step;
	if ((s->run_flags & RUN_HEAD) && q == s->run_qh)
		v = s->run_vm - 1;
	else if (v < s->run_vm)
		v = s->run_vm;
	s->last_q = q;
	s->last_v = v;
	s->nev[e->thread]++;
}

static void scan_alloc(void *ctx, size_t i, const struct ap_event *e,
		       const struct ap_replay_block *b)
{
	scan_began(ctx, e, b->obj);
}

static void scan_grow(void *ctx, size_t i, const struct ap_event *e,
		      const struct ap_replay_block *old, const struct ap_replay_block *b)
{
	scan_ended(ctx, e, old);
	scan_began(ctx, e, b->obj);
}

static void scan_free(void *ctx, size_t i, const struct ap_event *e,
		      const struct ap_replay_block *b)
{
	scan_ended(ctx, e, b);
}

static void scan_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	struct shared_scan *s = ctx;
	s->nfrees[e->thread]++;
	scan_named(s, e->ts, e->addr, e->thread, (struct blk){UINT32_MAX, 0});
}

int compact_plan(const char *path, uint64_t quantum, uint64_t step, struct thread_plan **plan,
		 size_t *nplan, struct ap_error *err)
{
	struct ap_trace *t;
	struct ap_error e;
	if (ap_trace_read(path, &t, &e, NULL, NULL) < 0)
		return ap_error_set(err, "%s", e.msg);
	struct shared_scan s = {
	    .quantum = UINT64_MAX, .run_thread = UINT32_MAX, .tq = quantum, .step = step};
	s.nalloc = ap_xcalloc(t->nthreads + 1, sizeof(*s.nalloc));
	s.nfrees = ap_xcalloc(t->nthreads + 1, sizeof(*s.nfrees));
	s.nev = ap_xcalloc(t->nthreads + 1, sizeof(*s.nev));
	s.last_vm = ap_xcalloc(t->nthreads + 1, sizeof(*s.last_vm));
	s.plan = ap_xcalloc(t->nthreads + 1, sizeof(*s.plan));
	ap_u64map_init(&s.seen, 64);
	/* (the runs only when coarse_q has a step to round to) */
	const struct ap_replay_ops ops = {.blocks = true,
					  .event = step > 1 ? scan_event : NULL,
					  .alloc = scan_alloc,
					  .grow = scan_grow,
					  .free = scan_free,
					  .unmatched = scan_unmatched};
	struct ap_replay_consumer con = {&ops, &s};
	int rc = ap_replay(t, &con, 1, NULL, err);
	scan_run_end(&s, UINT64_MAX);
	for (size_t k = 0; s.back && k <= t->nthreads; k++)
		s.plan[k].nruns = 0; /* (a time went back: kept, every one) */
	*nplan = t->nthreads;
	*plan = s.plan;
	for (size_t k = 0; k < t->nthreads; k++)
		s.plan[k].tid = t->threads[k].tid;
	int changed = ap_trace_changed(t);
	ap_trace_free(t);
	free(s.nalloc);
	free(s.nfrees);
	free(s.nev);
	free(s.last_vm);
	free(s.obj);
	free(s.rec);
	ap_u64map_release(&s.seen);
	if (rc < 0)
		return -1;
	if (changed)
		return ap_error_set(err, "%s: the trace changed while it was compacted", path);
	return 0;
}

void compact_plan_free(struct thread_plan *plan, size_t nplan)
{
	for (size_t i = 0; plan && i < nplan; i++) {
		free(plan[i].keep.w);
		free(plan[i].xfreed.w);
		free(plan[i].x);
		free(plan[i].runs);
	}
	free(plan);
}
