/* The compactor's plan for a trace of several threads (plan.c): a replay
 * that finds which blocks another thread ends, which blocks must keep
 * their address, and the runs that give the events their new quanta.
 * Internal to trace/compact/. */
#ifndef AP_COMPACT_PLAN_H
#define AP_COMPACT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_trace_enc.h"
#include "ap_util.h"

/* A bit per allocation of a thread. */
struct bits {
	uint64_t *w;
	size_t n; /* words */
};

static inline bool bits_get(const struct bits *b, uint64_t i)
{
	return i / 64 < b->n && (b->w[i / 64] >> (i % 64) & 1);
}

/* A FREE (or realloc) of one thread that ends another thread's block:
 * the thread's FREE records are counted (`ordinal`), and this one names
 * allocation `index` of thread plan[`plan`]. */
struct xfree {
	uint64_t ordinal, index;
	uint32_t plan;
	/* the block, for the frees resolved: its stack, size, and whether
	 * the replay found it temporary */
	uint32_t stack;
	bool temporary;
	uint64_t size;
};

/* A run: a thread's events that no other thread's event comes between,
 * in the merged order. Its events are written in a quantum of their own
 * (see rewrite.c, coarse_q); struct thread_plan keeps one record per run,
 * as varints: `n` (its events), flags (RUN_HEAD: its first quantum is the
 * last of the event before it, of another thread; RUN_TAIL: its last
 * quantum is the first of the event after it), vm - the thread's last
 * run's vm, then qh - (vm - 1) with RUN_HEAD, qt - vm and vt - vm with
 * RUN_TAIL. */
#define RUN_HEAD 1u
#define RUN_TAIL 2u
struct run {
	uint64_t to; /* the thread's events up to and with the run */
	uint64_t vm, qh, qt, vt;
	unsigned flags;
};

/* What the replay (compact_plan) found for one thread of several. */
struct thread_plan {
	uint32_t tid;
	struct bits keep;   /* its allocations that keep their address */
	struct bits xfreed; /* those another thread ends */
	struct xfree *x;    /* its FREEs of other threads' blocks, in order */
	size_t nx, x_alloc;
	uint8_t *runs;		  /* its runs (struct run), in order */
	size_t nruns, runs_alloc; /* (bytes) */
};

/* The thread's next run, from byte *pos of pl->runs: *run (zero before
 * the first) becomes it, *pos moves past it. false when there is none. */
static inline bool plan_run_next(const struct thread_plan *pl, size_t *pos, struct run *run)
{
	if (!pl || *pos >= pl->nruns)
		return false;
	const uint8_t *at = pl->runs + *pos, *end = pl->runs + pl->nruns;
	uint64_t n = 0, f = 0, d = 0, qh = 0, qt = 0, vt = 0;
	ap_get_uv(&at, end, &n);
	ap_get_uv(&at, end, &f);
	ap_get_uv(&at, end, &d);
	if (f & RUN_HEAD)
		ap_get_uv(&at, end, &qh);
	if (f & RUN_TAIL) {
		ap_get_uv(&at, end, &qt);
		ap_get_uv(&at, end, &vt);
	}
	*pos = (size_t)(at - pl->runs);
	run->to += n;
	run->vm += d;
	run->flags = (unsigned)f;
	run->qh = run->vm - 1 + qh;
	run->qt = run->vm + qt;
	run->vt = run->vm + vt;
	return true;
}

/* The plan for the trace at `path` (whose `size` bytes are at `data`,
 * mapped by the caller; NULL: read from path alone): its events matched as
 * every report matches them (ap_replay): *plan gets one thread_plan per
 * thread of the trace (*nplan of them, in the reader's thread order),
 * which the caller frees with compact_plan_free. `quantum` is the trace's
 * time quantum (ns) and `step` its time step in quanta: the runs are
 * planned only when step > 1. When no address is named by two threads
 * (most programs), one pass over `data` finds what the replay would
 * (plan.c, "the plan without the replay"); else, or with
 * ALLOCPROF_TEST_REPLAY_PLAN set (tests compare the two), the replay.
 * Returns 0, or -1 with err set ("<path>: <why>"): the trace does not
 * read, its events do not (a corrupt chunk), or it changed while it was
 * read (then *plan is set all the same). */
int compact_plan(const char *path, const uint8_t *data, size_t size, uint64_t quantum,
		 uint64_t step, struct thread_plan **plan, size_t *nplan, struct ap_error *err);
/* Frees what compact_plan made (NULL is fine). */
void compact_plan_free(struct thread_plan *plan, size_t nplan);

#endif
