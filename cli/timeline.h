/* The model of `allocprof timeline` and of the TUI's timeline view:
 * in-use bytes over N equal stretches of time, the whole program and its
 * top call sites (by what they held at the peak), from one replay of the
 * trace (trace/ap_replay.h). The renderers are in render.h. */
#ifndef AP_TIMELINE_H
#define AP_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_advise.h"
#include "views.h"

/* The call sites a timeline shows on their own: chosen once per trace,
 * whatever the number of buckets. */
struct ap_timeline_sites {
	struct ap_site_map m;
	size_t shown;		  /* sites shown; the others are "(other sites)" */
	char **names;		  /* shown names (owned by m) */
	uint32_t *slot_of_stack;  /* stack -> 0..shown-1, or shown: the rest */
};

/* The at most `nsites` sites of the trace of `v` that held the most at
 * the peak (v->values' peak_space), those holding nothing left out.
 * Never fails. */
void ap_timeline_sites_init(struct ap_timeline_sites *s, const struct ap_view *v, size_t nsites);
void ap_timeline_sites_release(struct ap_timeline_sites *s);

struct ap_timeline {
	const struct ap_trace *t;
	const uint32_t *slot_of_stack;	/* of the sites */
	char *const *names;		/* of the sites: nsites names */
	size_t nsites, nbuckets;
	uint64_t start, span;
	double live, *live_site;	/* while replaying: now */
	double *max;			/* per bucket: highest total */
	double *at_max;			/* per bucket x (nsites + 1): the split then */
	double *last;			/* per bucket x (nsites + 1): the split at its end */
	bool *seen;			/* the bucket had an event */
	size_t peak_bucket;
	double peak;			/* the highest in-use bytes of the run */
};

/* Replays `t` into `nbuckets` (at least 1) stretches of its run, split by
 * the sites `s` (which must outlive T). Never fails. */
void ap_timeline_init(struct ap_timeline *T, const struct ap_trace *t,
		      const struct ap_timeline_sites *s, size_t nbuckets);
void ap_timeline_release(struct ap_timeline *T);

/* The end of bucket b, in seconds from the start of the run. */
double ap_timeline_bucket_time(const struct ap_timeline *T, size_t b);

#endif
