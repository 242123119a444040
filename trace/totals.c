/* ap_trace_totals: the weighted totals `stats` prints, as a consumer of the
 * replay (ap_replay.h). */
#include "ap_replay.h"
#include "ap_trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct totals {
	struct ap_trace_totals out;	/* (kept here, one load nearer, copied out at the end) */
	bool attached;		/* AP_HFLAG_ATTACHED: the trace starts mid-run */
	/* live_var: the variance of `live` as an estimate (Horvitz-Thompson:
	 * a block of s bytes sampled with weight w adds w(w-1)s^2), at the
	 * peak: peak_var */
	double live, peak, live_var, peak_var;
	/* the variance of inuse_objects: a live sample of weight w adds
	 * w(w-1) (Horvitz-Thompson, as advise's count of objects) */
	double inuse_var;
	/* the last ALLOC event (every one comes to alloc or grow at its own
	 * index): its index + 1 (0: none yet), stack and size, for
	 * heaptrack's rule of temporary allocations */
	uint64_t alloc_at, alloc_size;
	uint32_t alloc_stack;
};

/* Only a trace with gaps has the callback on every event. */
static void t_gap(void *ctx, size_t i, const struct ap_event *e)
{
	struct totals *T = ctx;
	(void)i;
	if (e->gap)
		T->out.gap_ns += ap_gap_work_ns(e->gap);
}

/* heaptrack's rule: the free of b is temporary when the event just before
 * it in the trace's order (the one before index `at`) allocated with b's
 * stack and size, whichever block. */
static inline void t_heaptrack(struct totals *T, const struct ap_replay_block *b, uint64_t at)
{
	if (T->alloc_at && T->alloc_at == at && T->alloc_stack == b->stack &&
	    T->alloc_size == b->size)
		T->out.temporary_heaptrack += b->w;
}

/* the block of an ALLOC event, e, counted */
static inline void t_born(struct totals *T, const struct ap_event *e,
			  const struct ap_replay_block *b)
{
	if (!(e->flags & AP_EVF_SAMPLED))
		return;
	double space = b->w * (double)b->size;
	T->out.alloc_objects += b->w;
	T->out.alloc_space += space;
	T->out.samples++;
	T->live += space;
	T->live_var += ap_trace_block_var(b->w, space);
	if (T->live > T->peak) {
		T->peak = T->live;
		T->peak_var = T->live_var;
	}
}

/* ALLOC event i, e: the last one */
static inline void t_alloc_event(struct totals *T, size_t i, const struct ap_event *e)
{
	T->alloc_at = (uint64_t)i + 1;
	T->alloc_stack = e->stack;
	T->alloc_size = e->size;
}

static void t_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct totals *T = ctx;
	t_alloc_event(T, i, e);
	t_born(T, e, b);
}

/* block b ended */
static inline void t_ended(struct totals *T, const struct ap_replay_block *b)
{
	double space = b->w * (double)b->size;
	T->out.free_objects += b->w;
	if (b->temporary)
		T->out.temporary += b->w;
	T->live -= space;
	T->live_var -= ap_trace_block_var(b->w, space);
}

static void t_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct totals *T = ctx;
	(void)i;
	(void)e;
	/* what came before the event the replay is at (a realloc's FREE
	 * half no ALLOC half followed comes at a later event) */
	t_heaptrack(T, b, b->at);
	t_ended(T, b);
}

static void t_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		   const struct ap_replay_block *b)
{
	/* the realloc's FREE half, right before its ALLOC half (e), freed
	 * old: what came before that half */
	struct totals *T = ctx;
	if (old->at + 1 == i)
		t_heaptrack(T, old, i - 1);
	t_ended(T, old);
	t_alloc_event(T, i, e);
	t_born(T, e, b);
}

static void t_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	struct totals *T = ctx;
	(void)i;
	(void)e;
	if (T->attached)
		T->out.pre_attach_frees++;
	else
		T->out.unmatched_frees++;
}

static void t_inherited(void *ctx, size_t i, const struct ap_event *e)
{
	struct totals *T = ctx;
	(void)i;
	(void)e;
	T->out.inherited_frees++;
}

static void t_exec_dropped(void *ctx, const struct ap_replay_block *b)
{
	struct totals *T = ctx;
	double space = b->w * (double)b->size;
	T->out.exec_dropped_objects += b->w;
	T->out.exec_dropped_space += space;
	T->live -= space;
	T->live_var -= ap_trace_block_var(b->w, space);
}

/* Its process ended: not live on the run's time line from then on (the
 * peak after it), still in use at its exit (t_live). */
static void t_exited(void *ctx, const struct ap_replay_block *b)
{
	struct totals *T = ctx;
	double space = b->w * (double)b->size;
	T->live -= space;
	T->live_var -= ap_trace_block_var(b->w, space);
}

/* What is still live: the blocks left summed, rather than the running
 * difference, which collects rounding error. */
static void t_live(void *ctx, const struct ap_replay_block *b)
{
	struct totals *T = ctx;
	T->out.inuse_objects += b->w;
	T->out.inuse_space += b->w * (double)b->size;
	if (b->w > 1)
		T->inuse_var += b->w * (b->w - 1);
	if (b->w > 0)
		T->out.inuse_samples++;
}

#define TOTALS_OPS                                \
	.alloc = t_alloc, .grow = t_grow, .free = t_free, \
	.unmatched = t_unmatched, .live_at_end = t_live, \
	.exec_dropped = t_exec_dropped, .exited = t_exited, .inherited = t_inherited
static const struct ap_replay_ops totals_ops = { TOTALS_OPS };
static const struct ap_replay_ops totals_gap_ops = { .event = t_gap, TOTALS_OPS };
int ap_trace_totals(const struct ap_trace *t, struct ap_trace_totals *out, struct ap_error *err)
{
	memset(out, 0, sizeof(*out));
	struct totals T = { .attached = (t->flags & AP_HFLAG_ATTACHED) != 0 };
	struct ap_replay_consumer c = { t->ngap_records ? &totals_gap_ops : &totals_ops, &T };
	if (ap_replay(t, &c, 1, NULL, err) < 0)
		return -1;
	*out = T.out;
	out->peak_inuse_space = T.peak;
	out->peak_inuse_space_sd = T.peak_var > 0 ? sqrt(T.peak_var) : 0;
	out->inuse_objects_sd = T.inuse_var > 0 ? sqrt(T.inuse_var) : 0;
	out->events = t->nrecords;
	return 0;
}
