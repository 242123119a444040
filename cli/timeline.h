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

/* What a timeline's replay tells a consumer beside it, per event, with
 * the bucket the event fell in (`allocprof html` keeps per bucket and
 * stack what was allocated and what changed hands): `alloc` for each
 * allocation the trace sampled (a realloc's new block too), its weight
 * in objects and bytes at its stack, as the views' alloc_* count it;
 * `live` for each change of the blocks a stack holds (objects and bytes
 * signed: - when freed, + when made), as their inuse_* count them. */
struct ap_timeline_hook {
	void (*alloc)(void *ctx, size_t bucket, uint32_t stack, double objects, double bytes);
	void (*live)(void *ctx, size_t bucket, uint32_t stack, double objects, double bytes);
	void *ctx;
};

/* massif's --time-unit=B clock (its total_allocs_deallocs_szB), counted
 * from a trace: each allocation and each free moves it by the block's
 * size as valgrind's allocator gives it (the request rounded up to 16
 * bytes; a block a realloc shrank or grew in place keeps the size it
 * had) plus massif's --heap-admin (8 bytes); a realloc that moves the
 * block, by how much that size grew; one in place, not at all. */
struct ap_massif_clock {
	double pos;
	/* the blocks whose size is not their request rounded up (a realloc
	 * kept them in place), by the address their events name them by:
	 * open addressing, `cap` a power of two (0: none yet) */
	struct ap_massif_kept {
		uint64_t addr, usable;
	} *kept;
	size_t nkept, cap;
};

struct ap_timeline {
	const struct ap_trace *t;
	const struct ap_timeline_hook *hook; /* or NULL */
	size_t bucket;			/* while replaying: the last event's */
	const uint32_t *slot_of_stack;	/* of the sites */
	char *const *names;		/* of the sites: nsites names */
	size_t nsites, nbuckets;
	uint64_t start, span;		/* of the run, in ns */
	/* The x axis: time (seconds), or with by_bytes the bytes allocated
	 * since the start, as massif's --time-unit=B (a short run's events
	 * share a few clock ticks; its allocations still tell its story). */
	bool by_bytes;
	double xspan;			/* the whole axis: seconds or bytes */
	struct ap_massif_clock clock;	/* while replaying: by_bytes's x */
	double live, *live_site;	/* while replaying: now */
	double *max;			/* per bucket: highest total */
	double *at_max;			/* per bucket x (nsites + 1): the split then */
	double *last;			/* per bucket x (nsites + 1): the split at its end */
	bool *seen;			/* the bucket had an event */
	size_t peak_bucket;
	double peak;			/* the highest in-use bytes of the run */
	/* where on the x axis it was first reached (seconds from the start,
	 * or bytes allocated and freed by then): the event's own place, the
	 * same whatever the number of buckets (peak_bucket holds it) */
	double peak_x;
	/* while replaying: the variance of `live` as an estimate; then the
	 * standard deviation of `peak` (0 when every allocation is in the
	 * trace), as ap_trace_totals' peak_inuse_space_sd */
	double live_var, peak_sd;
};

/* Replays `t` into `nbuckets` (at least 1) stretches of its run (of time,
 * or of the bytes allocated with `by_bytes`), split by the sites `s`
 * (which must outlive T). Returns 0, or -1 with err set when the replay
 * fails (ap_replay); T is to be released either way. */
AP_MUST_CHECK int ap_timeline_init(struct ap_timeline *T, const struct ap_trace *t,
				   const struct ap_timeline_sites *s, size_t nbuckets,
				   bool by_bytes, struct ap_error *err);
/* The same, telling `hook` (may be NULL) of each event. */
AP_MUST_CHECK int ap_timeline_init_hooked(struct ap_timeline *T, const struct ap_trace *t,
					  const struct ap_timeline_sites *s, size_t nbuckets,
					  bool by_bytes, const struct ap_timeline_hook *hook,
					  struct ap_error *err);
void ap_timeline_release(struct ap_timeline *T);

/* The end of bucket b on the x axis: seconds from the start of the run,
 * or bytes allocated by then. */
double ap_timeline_bucket_x(const struct ap_timeline *T, size_t b);

/* A place on the x axis as the charts label it: "0.0194s", "64MB". */
void ap_timeline_format_x(char *out, size_t len, const struct ap_timeline *T, double x);

#endif
