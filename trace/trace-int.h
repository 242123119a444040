/* Shared by the trace/ sources only. */
#ifndef AP_TRACE_INT_H
#define AP_TRACE_INT_H

#include "ap_trace.h"

/* (Re)builds t->map_index, the disjoint lookup index over t->maps that
 * ap_trace_mapping_for searches: each mapping in order cuts what it
 * overlaps out of the ranges of the ones before it. */
void ap_trace_index_maps(struct ap_trace *t);

/* Where a trace's events come from (ap_trace.src): a file the reader
 * checked (file.c) or the traces of a whole run (run.c). A source
 * hands out iterations; `open` returns one's state, which `next` fills
 * batches from (as ap_events_next: -1 with err set when it cannot go on;
 * it is not called again then) and `close` releases. `release` frees the
 * source itself. */
struct ap_evsrc;
struct ap_evsrc_ops {
	void *(*open)(struct ap_evsrc *src);
	ssize_t (*next)(void *state, const struct ap_event **out, struct ap_error *err);
	void (*close)(void *state);
	void (*release)(struct ap_evsrc *src);
	bool (*changed)(const struct ap_evsrc *src); /* ap_trace_changed */
};
struct ap_evsrc {
	const struct ap_evsrc_ops *ops;
};

/* Events an iteration hands out at a time (at most). */
#define AP_EVENTS_BATCH 4096

#endif
