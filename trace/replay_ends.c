/* The replay's view of a whole run's processes (replay_ends.h). */
#include "replay_ends.h"

#include <stdlib.h>

/* Whether a FREE of addr that found no live block in its process is of a
 * block the process inherited: the process is a forked child (HEADER's
 * parent_trace), whose only blocks it did not allocate are its parent's,
 * live at the fork. (The parent's trace cannot say which: the compactor
 * gives a thread's own blocks identities instead of addresses.) With
 * --all only: a sampled child records no free of a block it did not
 * sample. */
bool ap_replay_inherited(const struct ap_trace *t, const struct ap_event *e)
{
	if (!t->nprocs)
		return t->parent_trace != NULL;
	if (e->thread >= t->nthreads)
		return false;
	uint32_t p = t->threads[e->thread].proc;
	return p < t->nprocs && t->procs[p].forked;
}

/* Whether process p (of a whole run; the trace itself otherwise) ended by
 * exec: its heap went with its image. */
bool ap_replay_exec_ended(const struct ap_trace *t, uint32_t p)
{
	if (!t->nprocs)
		return t->has_end && t->end_reason == AP_END_EXEC;
	return p < t->nprocs && t->procs[p].has_end && t->procs[p].end_reason == AP_END_EXEC;
}

/* Whether process p of a whole run ended for good: its heap went with
 * it (exec's goes with its image: exec_ended; after a detach, a snapshot
 * or a trace that stopped, it runs on). */
static bool exit_ended(const struct ap_trace *t, uint32_t p)
{
	if (p >= t->nprocs || !t->procs[p].has_end)
		return false;
	switch (t->procs[p].end_reason) {
	case AP_END_EXIT:
	case AP_END_UNDERSCORE_EXIT:
	case AP_END_SIGNAL:
	case AP_END_KILLED:
	case AP_END_RAW_EXIT:
	case AP_END_GONE:
		return true;
	default:
		return false;
	}
}

static int exec_end_cmp(const void *a, const void *b)
{
	const struct ap_replay_end *x = a, *y = b;
	return x->ts != y->ts ? (x->ts < y->ts ? -1 : 1) : (x->proc < y->proc ? -1 : x->proc > y->proc);
}

size_t ap_replay_ends_of(const struct ap_trace *t, bool execs, bool exits, struct ap_replay_end **out)
{
	size_t n = 0;
	*out = NULL;
	for (uint32_t p = 0; p < t->nprocs; p++)
		n += (execs && ap_replay_exec_ended(t, p)) || (exits && exit_ended(t, p));
	if (!n)
		return 0;
	*out = ap_xcalloc(n, sizeof(**out));
	n = 0;
	for (uint32_t p = 0; p < t->nprocs; p++) {
		bool ex = execs && ap_replay_exec_ended(t, p);
		if (ex || (exits && exit_ended(t, p)))
			(*out)[n++] = (struct ap_replay_end){ t->procs[p].end_ns, p, ex };
	}
	qsort(*out, n, sizeof(**out), exec_end_cmp);
	return n;
}

