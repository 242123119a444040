/* The pool advisor: replays each allocation site's allocations and frees
 * through the pool model (ap_pool.h, docs/pool-model.md) and judges, per site,
 * whether a sync.Pool-style pool would pay. Also the cost model measured on
 * this machine (cost.c). The result is a plain model; cli/cmd-advise.c
 * renders it as text or JSON.
 *
 * How a trace becomes pool operations (docs/pool-model.md §6):
 * - An object is born by an allocation (ALLOC, or the ALLOC half of a
 *   realloc that does not continue a tracked block) and belongs to the site
 *   of its birth for life. Its birth is a Get by its thread on P = cpu %
 *   procs of the pool of that site (a vpool.h pool: ap_pool.h,
 *   AP_POOL_VPOOL); its free is a Put by the freeing thread on the P of
 *   the freeing CPU; a realloc of it is a growth of the same object, not
 *   a Get. A thread exits after its last record: every pool releases its
 *   private slot.
 * - Objects carry a capacity. A Get that hits takes the pooled object's
 *   capacity: if that is at least the request, the allocation is avoided
 *   (a "full hit"); if not (a "small hit"), the program still allocates the
 *   request's size and the capacity becomes that size. A growth to a size
 *   within the capacity is an avoided realloc; beyond it, a real one that
 *   raises the capacity. Objects never freed escape: they are Gets only.
 * - Cycles (docs/pool-model.md §4): `gogc:N`, a cycle when live bytes after
 *   the last cycle plus bytes allocated since reach max(live*(1+N/100),
 *   4 MiB*N/100) (Go's heapMinimum scales with GOGC), with live bytes replayed from the whole trace (weighted when
 *   sampled), placed right after the allocation that reaches the goal; or
 *   `interval:D`, every D from the trace's start, placed before the first
 *   event later than it. Computed once, shared by every site's pool.
 *   Operations and cycles are ordered by where they fall in the run (the
 *   bytes allocated before them, then the merged stream), never by time
 *   alone: event times are quantized.
 * - A single-threaded trace is replayed on P 0.
 *
 * Sampled traces (rate > 1) are replayed from a reconstruction, and every
 * number they give is an estimate:
 * - A sampled object is followed from its first sample (a sampled ALLOC,
 *   or a sampled realloc not continuing a tracked block) to its free. It
 *   stands for w objects, w the sample weight of its last block, only if
 *   that last block is itself a sample (else it stands for none): every
 *   object's last block is sampled on its own, so this counts objects
 *   without bias also when a growth chain has several sampled blocks. (w
 *   is rounded at random, fixed seed, so the sum is unbiased.) The w
 *   copies have its first sampled size, its growths, its lifetime and its
 *   CPUs.
 * - The copies are spread evenly over the stretch of the run (bytes
 *   allocated, and time) between the previous sampled birth at the same
 *   site and this one (the first sample of a site uses the site's mean
 *   stretch, or the whole run over w when it is the only one), the last
 *   copy at the sample itself, each shifted with its growths and free.
 *   A sampled growth's own stretch beyond its own bytes ((w - 1) x size)
 *   is taken out of the copies' lives: it stands for allocation mostly
 *   before the object was born; and a copy lives the expected life given
 *   the number of other samples in the sample's life (lives_estimate in
 *   advise.c, docs/pool-model.md §6).
 *   This keeps the site's rate of requests against the cycles and each
 *   object's lifetime, which is what decides hits. A sampled allocation
 *   comes at the end of the stretch it stands for.
 * - A growth chain is known from its first sampled block on: the
 *   reallocs before it are not seen, so with growth chains of small
 *   blocks the reallocs and bytes avoided are underestimated (the objects,
 *   Gets and hits are not), and a chain whose birth was not sampled
 *   belongs to the site where such chains are born when a sample saw one
 *   born there and grow at its site (`adopted`), else to the site of its
 *   first sampled realloc (`seen_growing`).
 * - The relative uncertainty of a site's counts is 1/sqrt(samples at the
 *   site) for small objects, less for big ones (every block above the
 *   rate is sampled): sqrt(sum of w(w-1)) / sum of w, reported as
 *   `rel_error`. */
#ifndef AP_ADVISE_H
#define AP_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_measure.h"
#include "ap_pool.h"
#include "ap_trace.h"
#include "ap_util.h"

/* ---- cost model (cost.c) ---- */

/* Costs in ns by size class; values between classes are interpolated on a
 * log scale of size, beyond the ends the end values are used (first-touch
 * cost grows with the size, so it is extrapolated linearly). */
#define AP_COST_MAX_CLASSES 32
#define AP_COST_ROUNDS 5	/* whole-table rounds of a measurement */
struct ap_cost_table {
	size_t n;
	uint64_t size[AP_COST_MAX_CLASSES];
	double malloc_free_ns[AP_COST_MAX_CLASSES];	/* malloc(size) + free */
	double pool_ns[AP_COST_MAX_CLASSES];		/* pool get + put */
	/* A get and a put through the CPU's shared deque, under its lock
	 * (the private slot taken): what a hit from the deque costs, and a
	 * steal or a victim's. 0: not known (a table from before it was
	 * measured): such hits are priced at pool_ns. */
	double pool_shared_ns[AP_COST_MAX_CLASSES];
	/* Touching every page of a fresh block minus the same for a reused
	 * one: what a pool saves in page faults. */
	double first_touch_ns[AP_COST_MAX_CLASSES];
	/* A measured table: each value is the median of `rounds` whole-table
	 * rounds (those within the plausible bounds, docs/json.md); a
	 * value's spread is half the interquartile range of its rounds over
	 * the median, and `spread` is the median of the values' spreads
	 * (malloc+free at every size, the pool's up to 4 KiB where it is
	 * measured, first touch where it is not 0). A table from a file
	 * without them (ALLOCPROF_TEST_COSTS's): measured_at 0, rounds 0,
	 * spreads -1. */
	int64_t measured_at;		/* Unix time */
	unsigned rounds;
	double spread;
	double malloc_free_spread[AP_COST_MAX_CLASSES], pool_spread[AP_COST_MAX_CLASSES];
	double first_touch_spread[AP_COST_MAX_CLASSES], pool_shared_spread[AP_COST_MAX_CLASSES];
};

double ap_cost_malloc_free(const struct ap_cost_table *c, uint64_t size);
double ap_cost_pool(const struct ap_cost_table *c, uint64_t size);
double ap_cost_first_touch(const struct ap_cost_table *c, uint64_t size);

/* The columns at once (one search of the table): the same values;
 * pool_shared_ns is pool_ns where the table does not know it. */
struct ap_cost_point {
	double malloc_free_ns, pool_ns, first_touch_ns, pool_shared_ns;
};
void ap_cost_all(const struct ap_cost_table *c, uint64_t size, struct ap_cost_point *out);

/* Measures the table on this machine (AP_COST_ROUNDS rounds, about 2 s),
 * with its time and spread. Never fails. */
void ap_cost_measure(struct ap_cost_table *c);

/* Reads / writes the JSON form of the table (docs/json.md). Reading takes
 * a regular file only (no symbolic link, FIFO or device: it never waits),
 * and every value within the plausible bounds; a table without its date
 * and spread has measured_at 0. Writing goes to a file beside `path`
 * renamed over it. Return 0, or -1 with err. */
int ap_cost_load(const char *path, struct ap_cost_table *c, struct ap_error *err);
int ap_cost_save(const char *path, const struct ap_cost_table *c, struct ap_error *err);

/* The cache file: $XDG_CACHE_HOME/allocprof/costs.json, or
 * ~/.cache/allocprof/costs.json. Returns a malloc'd path, or NULL when
 * neither variable is set, or HOME is not a directory (not made). */
char *ap_cost_cache_path(void);

/* The table `advise` and the tui use: the file ALLOCPROF_TEST_COSTS names
 * (as it is), else the cache if it loads and has its date, else measured
 * now and saved to the cache: `measuring(ctx, cache path or NULL, why)`
 * is called first (it takes a few seconds), `why` NULL when there was no
 * cache, else the one line that says why the cache was not used.
 * Returns 0, or -1 with err set when ALLOCPROF_TEST_COSTS names a file
 * that cannot be read or is implausible. A cache that cannot be written
 * is not an error: *save_err (if not NULL) is set to why, else left
 * empty. */
int ap_cost_get(struct ap_cost_table *c,
		void (*measuring)(void *ctx, const char *cache, const char *why), void *ctx,
		struct ap_error *err, struct ap_error *save_err);

/* ---- replay ---- */

enum ap_gc_mode { AP_GC_GOGC, AP_GC_INTERVAL };

struct ap_advise_options {
	unsigned procs;			/* 0: the trace's CPU count */
	enum ap_gc_mode gc_mode;
	uint64_t gogc;			/* N of gogc:N (default 100) */
	uint64_t interval_ns;		/* D of interval:D */
	uint64_t max_keep;		/* cap to evaluate (0: find one when capacities are skewed) */
	double min_share;		/* sites below this share (0..1) of alloc_space are left out */
	const struct ap_cost_table *costs;	/* required */
	uint64_t seed;			/* reconstruction of sampled traces */
};

/* Sets the defaults: gogc:100, everything else 0. */
void ap_advise_options_init(struct ap_advise_options *o);

/* Parses "gogc:N" or "interval:D" into o. Returns 0 or -1. */
int ap_advise_parse_gc(const char *s, struct ap_advise_options *o);

enum ap_verdict {
	AP_VERDICT_POOL,
	AP_VERDICT_POOL_CAP,
	AP_VERDICT_SIZE_CLASSES,
	AP_VERDICT_TOO_RARE,
	AP_VERDICT_TOO_SMALL,
	AP_VERDICT_ESCAPES,
	AP_VERDICT_LITTLE_GAIN,
	AP_VERDICT_UNSURE,		/* too few samples to judge */
	AP_VERDICT_ELSEWHERE,		/* no pool here: its objects are judged at another site */
	AP_VERDICT_COSTS_MORE,		/* the pool costs more than malloc (measured, or by the
					 * cost model where not measured) */
	AP_VERDICT_NOISE,		/* measured: the difference is within the noise */
	AP_VERDICT_FAULTS,		/* measured, but the saving is page faults the
					 * replay made and the recorded run did not */
	AP_VERDICT_LARGER,		/* measured, but the pool hands blocks much larger
					 * than asked for, and holds megabytes more */
};

/* What the pool did at one site in one replay. Counts are estimates in a
 * sampled trace (scaled by the reconstruction). */
struct ap_replay_result {
	double gets;
	double hits[AP_POOL_NSRC];	/* by source; hits[AP_POOL_MISS] = misses */
	double misses;
	double small_hits;		/* hits whose object was too small */
	double allocs_avoided, alloc_bytes_avoided;	/* full hits */
	/* The capacity of the objects those full hits handed out, summed:
	 * over alloc_bytes_avoided, how much larger than the requests the
	 * pool's blocks are (a pooled object keeps the largest size it
	 * reached, and a hit too small is dropped for one of the request's
	 * size, so with sizes that vary the pool keeps the big ones). */
	double hit_cap_bytes;
	double reallocs, reallocs_avoided, realloc_bytes_avoided;
	double bytes_avoided;		/* alloc_bytes_avoided + realloc_bytes_avoided */
	double escaped;			/* objects never freed (and not in a pool at exit) */
	/* Objects a pool of pool/vpool.h held when the program ended (END's
	 * `pooled`, written by the sampler): the program already pools
	 * them; they do not escape. Counted in the first replay. */
	double pooled_at_exit;
	double puts;
	double dropped_cap;		/* Puts dropped by the cap */
	double lost_cycle, lost_pchange;
	double lost_exit;		/* released from private slots at their thread's exit */
	double peak_held_bytes, mean_held_bytes;
	/* The held peak in steady state: up to the site's last request
	 * (ap_pool_stats.peak_held_bytes_to_last_get), leaving out what only
	 * the frees after it (a teardown) make the pool hold. */
	double steady_peak_held_bytes;
	double time_saved_ns;		/* by the cost model; negative: the pool costs */
	double hit_rate;		/* (hits) / gets */
	/* Collection cycles between consecutive requests: over `gaps`
	 * requests after the first, `gap_cycles` cycles fell in between, and
	 * `far_gaps` of them came two or more cycles after the one before
	 * (the pool is empty then, whatever it held). */
	double gaps, gap_cycles, far_gaps;
};

/* Why a site's free list (ap_advise_site.fl) was measured or not. */
enum ap_fl_state {
	AP_FL_NOT_MEASURED,	/* the site's vpool was not measured either */
	AP_FL_MEASURED,		/* fl holds it */
	AP_FL_CROSSES,		/* its objects cross threads (ap_advise_handed) */
	AP_FL_BUDGET,		/* --measure-time left it out (vpool's first) */
};
/* Its JSON name (freelist_why): "crosses threads", "budget", "not
 * measured"; NULL when measured. */
const char *ap_fl_why(enum ap_fl_state st);

struct ap_advise_site {
	char *name;		/* "func file:line", or the stack's frames */
	char *function, *file;	/* file may be NULL */
	int line;
	/* The allocations are a system library's (libc, libstdc++, ld.so,
	 * any module under a system library directory): the site is the
	 * program's frame that called it, and `via` names the library
	 * function called ("opendir"); NULL when the site is the program's
	 * own allocation. */
	char *via;
	bool rust;		/* the site's frame is Rust code */
	double alloc_objects, alloc_space;	/* the site's allocations (weighted) */
	double share;		/* of the trace's alloc_space */
	/* Of the trace's alloc_space, what this site's objects account for
	 * over their lives: their requests and every realloc of them,
	 * wherever it is (the bytes a pool here could save). */
	double life_share;
	uint64_t samples;	/* sampled objects seen (== objects with --all) */
	/* Sampled traces, the errors of the figures (all 0 with --all):
	 * rel_error, the relative standard error of the object count, is
	 * that of every count of `r` and `rc` (gets, hits, misses, small
	 * hits, allocations, reallocs and bytes avoided, escaped, Puts,
	 * drops, losses) and of time_saved_ns; hit_rate_error is the
	 * absolute standard error of the hit rate (the copies of a sample
	 * share its fate: sqrt(h(1-h)/samples)). Held bytes (peak, steady,
	 * mean) come from the reconstruction's timing, with no error that
	 * can be stated: held_known is false for them (advise does not show
	 * them) unless the site is `exact`. */
	double rel_error;
	double hit_rate_error;
	/* Sampled, but every block here is far above the sampling rate
	 * (rel_error under 0.5%): each one was sampled, its figures are
	 * those of --all, and the few samples are all there is. */
	bool exact;
	bool held_known;
	double mean_size, p50_size, p90_size, max_size;	/* of requests (max: the real one) */
	/* Capacities: the largest size each freed object reached (its request,
	 * or what it grew to by realloc): what a pool would hold. */
	double p50_cap, p90_cap, max_cap;
	double reallocs_per_object;	/* reallocs of its objects, per object */
	/* Of those, the share that were growths by copy (ap_advise_joins):
	 * the program grew its objects by hand (libstdc++'s std::string).
	 * Counted with the reallocs everywhere; the texts say "growth" and
	 * how (ap_advise_growth_noun, ap_advise_growth_how). A site where no
	 * object is born: the share of the growths made here. */
	double copy_share;
	/* What one object's life costs through malloc (its allocation, first
	 * touch and reallocs) and through the pool (get + put), by the cost
	 * model; mean over the site's objects. */
	double life_cost_ns, pool_cost_ns;
	double mean_gap_ns;	/* mean time between requests (0: one request) */
	double mean_life_ns;	/* mean lifetime of freed objects */
	double cross_thread_share; /* of its freed objects: freed by another thread than made them */
	/* Measured: the page faults the baseline replay made beyond the
	 * recorded run's (and the pooled replay's), and what they cost at
	 * the runner's price of one, scaled to the whole run, when taken off
	 * the saving (0: none taken; advise_verdict.c, FAULTS_MORE,
	 * EXCESS_SHARE, and the ramp from the run's faults to EXCESS_MORE
	 * times them); the cost's range, from the fewest and the most the
	 * baseline's and the pooled replay's runs made (taken off the
	 * interval's upper and lower end) */
	double excess_faults, excess_faults_ns;
	double excess_faults_ns_lo, excess_faults_ns_hi;
	double calloc_share;	/* --all: of its objects, born by calloc (a pooled one is not cleared) */
	double aligned_share;	/* --all: of its objects, born aligned (posix_memalign, aligned_alloc) */
	double shrink_share;	/* --all: of its objects' reallocs, those that made them smaller */
	/* Growth across sites: the site where most of this site's objects grow
	 * by realloc (grows_at, NULL if none), and the site where most of the
	 * objects that grow here are born (born_at, NULL if none or unknown).
	 * Sampled: objects first seen here in a realloc (their birth was not
	 * sampled) are `seen_growing` (weighted), and born_at names the birth
	 * site the samples that saw one show. */
	char *grows_at, *born_at;
	double born_share;	/* of the objects that grow here, the share born at born_at */
	/* Their site ids (site_id's; UINT32_MAX: none). */
	uint32_t grows_site, born_site;
	double seen_growing;
	double adopted;		/* sampled: objects first seen growing elsewhere, judged here */
	uint64_t births_seen;	/* sampled: objects whose first sample is here, counted or not */
	uint64_t suggest_rate;	/* AP_VERDICT_UNSURE: a --rate that would decide (0: --all) */
	struct ap_replay_result r;	/* with max_keep (or none) */
	bool capped;		/* a replay with a cap was made */
	uint64_t cap;		/* the cap of `rc` */
	struct ap_replay_result rc;	/* replay with cap (when capped) */
	uint64_t classes[4];	/* size classes, when verdict is SIZE_CLASSES */
	size_t nclasses;
	/* ... with requests rounded up to their class (the runner's and
	 * try's round-up): classes a measured replay found to pay where one
	 * pool hands blocks much larger than asked (advise_round_wins) */
	bool round_up;
	/* Power-of-two classes for the site's requests rounded up
	 * (advise_round_classes: the largest request's and three below it),
	 * and the bytes they would hand out over the bytes asked. */
	uint64_t round_classes[4];
	size_t nround_classes;
	double round_ratio;
	/* A pool of round_classes with requests rounded up, measured beside
	 * the one pool where that one hands blocks much larger than asked
	 * (larger_shape_likely): round_state says whether, and `rm` holds it
	 * (scaled as `m` is). Where it pays and its blocks are not much
	 * larger than asked, it is the verdict's (advise_round_wins): `m`
	 * and `rm` change places, round_up is set. */
	enum ap_fl_state round_state;
	struct ap_measured rm;
	/* Those classes measured again with their blocks written and read
	 * whole (round_whole: rmw, against its baseline rmw_base), where a
	 * line a page found them paying: what decides whether they win. */
	bool round_whole;
	struct ap_measured rmw;
	struct ap_run_cost rmw_base;
	uint32_t site_id;	/* its index in the site map */
	/* The measured replay (ap_advise_measure): when `measured`, the
	 * verdict comes from `m`, the CPU time the pool saved with its
	 * interval; r.time_saved_ns stays the cost model's estimate. */
	bool measured;
	struct ap_measured m;
	/* Measured again with the site's blocks written and read whole, every
	 * byte, in both variants (ap_measure_opts.whole_site), where the pool
	 * hands blocks much larger than asked for over megabytes more memory
	 * (advise_larger_shape): when `whole_measured`, `mw` (scaled as `m`
	 * is) and its baseline's runs `mw_base`. */
	bool whole_measured;
	struct ap_measured mw;
	struct ap_run_cost mw_base;
	/* A free list of each thread's own at the site (a LIFO of its
	 * spares, no cycles: the runner's --free-list), measured in the same
	 * rounds as the vpool `m` for a site whose objects stay in their
	 * thread (not ap_advise_handed), with vpool's cap or classes: `fl`,
	 * scaled and priced for the baseline's excess faults as `m` is
	 * (fl_excess_faults, fl_excess_faults_ns). Printed beside vpool's
	 * saving, never a verdict: the verdict is vpool's, the pool advise
	 * and `allocprof try` give. When not measured, fl_state says why.
	 * At a Rust site whose objects stay in their thread (own_list) the
	 * two change places: a Rust program's pool is its own (a Vec of
	 * spares, a Vec<String> kept and cleared: pool/vpool.h is C), so
	 * `m` (the verdict's, measured first) is the free list's and `fl`
	 * (fl_state, fl_excess_*) vpool's, beside it. */
	bool own_list;
	enum ap_fl_state fl_state;
	struct ap_measured fl;
	double fl_excess_faults, fl_excess_faults_ns;
	/* The pool the measured replay served the site with, as the model
	 * shaped it: AP_VERDICT_POOL, _POOL_CAP (cap) or _SIZE_CLASSES
	 * (classes); kept when the measurement's verdict says no pool or
	 * unsure, so that try pools the site as advise measured it. */
	enum ap_verdict shape;
	enum ap_verdict verdict;
	char *verdict_text;	/* "pool", "pool with cap 64KiB", "size classes 1KiB, 64KiB", ... */
	char *reasons;		/* one or two sentences */
};


/* Objects freed on another thread than the one that made them, from this
 * share of a site's freed objects on: "handed" between threads. The
 * program's own waits then move with a pool, by what no replay tells
 * (advise_verdict.c, WAIT_MOVE), and a free list of each thread's own
 * gets few of them back: none is measured there (ap_fl_state). */
#define AP_HANDED_SHARE 0.1
static inline bool ap_advise_handed(const struct ap_advise_site *s)
{
	return s->cross_thread_share >= AP_HANDED_SHARE;
}

/* Whether the site's objects are ones that grow by copy: most of their
 * growths are, and they grow (half a growth an object or more; a site
 * where none is born: its growths made here). Their pool is of the
 * objects, each keeping its capacity, not of their blocks (a git site of
 * 12,866 objects, 6 of them grown by copy, is not). */
static inline bool ap_advise_by_copy(const struct ap_advise_site *s)
{
	return s->copy_share >= 0.5 && (s->r.gets <= 0 || s->reallocs_per_object >= 0.5);
}

/* A growth of the site's objects, as the texts name it: "realloc" where
 * none was by copy, else "growth" (a plural adds "s" to either). */
static inline const char *ap_advise_growth_noun(const struct ap_advise_site *s)
{
	return s->copy_share > 0 ? "growth" : "realloc";
}

/* How they grew, after "by": "realloc", "copy" (nine in ten or more) or
 * "realloc and by copy". */
static inline const char *ap_advise_growth_how(const struct ap_advise_site *s)
{
	return s->copy_share >= 0.9 ? "copy" : s->copy_share > 0.1 ? "realloc and by copy" : "realloc";
}

/* The pool advise means at s: its verdict's kind when that is a pool,
 * else the shape the measured replay served it with. */
static inline enum ap_verdict ap_advise_site_shape(const struct ap_advise_site *s)
{
	return s->verdict == AP_VERDICT_POOL_CAP || s->verdict == AP_VERDICT_SIZE_CLASSES ? s->verdict
	       : s->verdict == AP_VERDICT_POOL ? AP_VERDICT_POOL
					       : s->shape;
}

/* The CPU time a pool at s saves, as advise ranks it and its JSON says:
 * the measured replay's median when s was measured, else the model's. */
static inline double ap_advise_site_saved_ns(const struct ap_advise_site *s)
{
	return s->measured ? s->m.saved_ns : s->r.time_saved_ns;
}

/* vpool's measurement at a measured site (what `allocprof try`, which
 * pools with pool/vpool.h, compares with): `m`, or at an own_list site
 * `fl` when it was measured; NULL when none was. */
static inline const struct ap_measured *ap_advise_site_vpool(const struct ap_advise_site *s)
{
	if (!s->measured)
		return NULL;
	if (!s->own_list)
		return &s->m;
	return s->fl_state == AP_FL_MEASURED ? &s->fl : NULL;
}

/* How the measured replay's CPUs were chosen (ap_advise_replay_cpus). */
enum ap_replay_cpus_from {
	AP_RCPUS_UNKNOWN,	/* the trace does not say: as many as advise may use */
	AP_RCPUS_RECORDED,	/* the recorded run's, HEADER allowed_cpus */
	AP_RCPUS_ASKED,		/* --replay-cpus N */
	AP_RCPUS_ALL,		/* --replay-cpus all */
};
/* --replay-cpus all */
#define AP_REPLAY_CPUS_ALL UINT32_MAX

/* An object graph (struct ap_graph) measured pooled whole: its root's
 * objects with the blocks of its members' sites that they own, as the
 * runner's --graph pools them (docs/pool-model.md, "Object graphs").
 * Sites are site ids (ap_advise_site.site_id: ap_advise_site_by_id). */
struct ap_advise_graph {
	uint32_t root;
	size_t nmembers;
	uint32_t members[AP_GRAPH_MAX_MEMBERS];	/* the most born first */
	uint64_t root_births;
	uint64_t member_births[AP_GRAPH_MAX_MEMBERS];	/* owned (by a root, or by a member) */
	/* The script's kinds of the members (ap_site_map.kind_of_stack);
	 * where a member's blocks are of the root's own line, what the line
	 * called for the root's and for theirs (root_via, member_via[]: a
	 * vector's growth and its strings' construction), else NULL. */
	uint32_t member_kinds[AP_GRAPH_MAX_MEMBERS];
	char *root_via, *member_via[AP_GRAPH_MAX_MEMBERS];
	bool measured;
	struct ap_measured m;
	/* The baseline's page faults beyond the recorded run's and the
	 * pooled replay's taken off m's saving (as a site's are), and their
	 * price; 0: none. */
	double excess_faults, excess_faults_ns;
	/* AP_VERDICT_POOL, _COSTS_MORE, _NOISE or _FAULTS (measured); the
	 * text */
	enum ap_verdict verdict;
	char *reasons;
};

struct ap_advice {
	bool sampled;		/* rate > 1: results are estimates */
	uint64_t rate;
	unsigned procs;
	enum ap_gc_mode gc_mode;
	uint64_t gogc, interval_ns;
	uint64_t cycles;	/* cycles in the trace */
	bool one_p;		/* a single-threaded trace: every event on P 0 */
	double mean_cycle_ns;	/* trace duration / (cycles + 1) */
	uint64_t duration_ns;
	uint64_t events;	/* trace events replayed */
	uint64_t pool_ops;	/* Get/Put/growth operations replayed */
	double total_alloc_space, total_alloc_objects;
	/* The cost table's measurement (struct ap_cost_table): when (Unix
	 * time, 0: a fixed table of unknown date), in how many rounds, and
	 * its spread (< 0: unknown). */
	int64_t costs_measured_at;
	unsigned costs_rounds;
	double costs_spread;
	size_t hidden_sites;	/* below min_share */
	struct ap_advise_site *sites;	/* ranked: see advise_rank */
	size_t nsites;
	/* Growth by copy (report/advise_chains.c): the allocations of an
	 * --all trace that continue an object the program grew by hand, as
	 * the model replayed them; the measured replay's script joins the
	 * same. */
	struct ap_replay_join *joins;
	size_t njoins;
	/* CPU time of the recorded run (END's cpu_ns: recording included), 0
	 * when the trace does not say. */
	uint64_t program_cpu_ns;
	/* The recorded run's context switches, every thread's (END's nvcsw
	 * and nivcsw; has_switches false: the trace does not say). */
	bool has_switches;
	uint64_t program_switches;
	/* The recorded run's minor page faults (END's minflt, recording
	 * included; has_program_minflt false: the trace does not say). */
	bool has_program_minflt;
	uint64_t program_minflt;
	/* The recorded run's time unwinding stacks (END's unwind_ns; 0: not
	 * said): part of what recording cost the program, which the replay
	 * under the sampler does not show (its one call site stays in the
	 * sampler's stack cache). */
	uint64_t program_unwind_ns;
	/* The measured replay: `measured` sites of the list were measured,
	 * against `base` (the replay through malloc alone); else
	 * measure_why says why none was. */
	size_t measured;
	/* object graphs measured whole (the most saved first), and those
	 * found but not measured (the budget) */
	struct ap_advise_graph *graphs;
	size_t ngraphs, graphs_dropped;
	size_t measure_dropped;	/* candidates left out to keep to the budget */
	/* What --measure-time (measure_budget_ns; 0: none) left out, every
	 * replay counted against it from the script's making on
	 * (ap_advise_measure): rounds (budget_rounds made of the
	 * budget_rounds_wanted), the baseline's runs under the sampler
	 * (what recording cost: budget_recorded), the runner's probes, the
	 * fit of the share of each block written, a site's second
	 * measurement written whole (budget_whole_left sites); or the budget
	 * was spent before the probe of the whole run ended (killed then). */
	double measure_budget_ns;
	/* In a run of several processes measure_budget_ns is this process's
	 * share of --measure-time, which is measure_budget_run_ns (0: not
	 * a share). */
	double measure_budget_run_ns;
	bool budget_rounds_cut, budget_recorded, budget_probes, budget_fit, budget_probe_killed;
	unsigned budget_rounds, budget_rounds_wanted;
	/* The second measurement of the sites written whole, when the
	 * budget cut its rounds: the fewest any of them made. */
	bool budget_whole_rounds_cut;
	unsigned budget_whole_rounds;
	size_t budget_whole_left;
	struct ap_run_cost base;
	/* The baseline replayed under the sampler (--all): what recording
	 * cost on this sequence (cpu_ns 0: not measured). With it, the
	 * program's own CPU time is estimated as the recorded run's less
	 * that cost (program_cpu_est_ns, at least the baseline's). */
	struct ap_run_cost recorded;
	uint64_t program_cpu_est_ns;
	uint64_t script_ops;
	/* The program's own time between its calls the replay spins (the
	 * trace's gaps: ap_script_work_ns), 0 when the calls ran back to
	 * back. */
	double script_work_ns;
	/* The time the replay sleeps where the program was off its CPU
	 * (ap_script_sleep_ns), 0 when it does not. */
	uint64_t script_sleep_ns;
	/* ...and what it would have slept but for the budget's share
	 * (ap_advise_sleep_max) or AP_RS_SLEEP_TOTAL_NS: above
	 * script_sleep_ns, the naps were shortened alike. */
	uint64_t script_sleep_wanted_ns;
	/* The share of the trace's events the replay ran (the first ones):
	 * below 1, the savings are scaled up from it. */
	double measure_share;
	/* When the share was cut to keep to the budget: what one replay of
	 * the first measure_probe_events events (all, or up to
	 * AP_MEASURE_MAX_EVENTS) took (0: not cut so). */
	double measure_full_run_ns;
	uint64_t measure_probe_events;
	/* The share was cut where its replay would hold more than
	 * AP_MEASURE_LIVE_BYTES for its live blocks (ap_script_cut_bytes),
	 * measure_live_max of them (ap_script_live_max). */
	bool measure_cut_bytes;
	uint64_t measure_live_max;
	double measure_wall_ns;
	/* The share of each new block's bytes whose pages the replay's first
	 * write faulted in (ap_measure_opts.touch): 1, all, unless the
	 * replay of a run of one thread faulted far more than the recorded
	 * run (touch_faults_all, a replay touching every page, against
	 * program_minflt): then fitted to it between that and
	 * touch_faults_line, a replay touching each block's first line
	 * (ap_advise_touch_fit). */
	double touch_share;
	double touch_faults_all, touch_faults_line;
	/* The page faults of the budget's probe, a replay of the whole run
	 * writing every page (0: none made of the whole run), and the
	 * threads of the script measured (ap_advise_prog_faults) */
	double measure_probe_faults;
	unsigned script_threads;
	/* ...and the recorded run's faults it was fitted to: program_minflt,
	 * or for a replay of the run's first events their share of it
	 * (ap_advise_run_faults) */
	double touch_faults_run;
	char measure_why[512];
	/* The CPUs the measured replay ran on (ap_advise_replay_cpus):
	 * replay_cpus of them, chosen as replay_cpus_from says; the recorded
	 * run's (HEADER allowed_cpus, 0: not said), and those advise may use
	 * (replay_cpus_here). */
	unsigned replay_cpus, recorded_cpus, replay_cpus_here;
	unsigned replay_cpus_asked;	/* --replay-cpus N (AP_RCPUS_ASKED) */
	enum ap_replay_cpus_from replay_cpus_from;
};

/* The baseline's runs s->m was measured against: its own where it was
 * measured with its blocks written whole (whole_measured), else the
 * advice's. */
static inline const struct ap_run_cost *ap_advise_site_base(const struct ap_advice *a,
							    const struct ap_advise_site *s)
{
	return s->whole_measured ? &s->mw_base : &a->base;
}

/* Which site each stack belongs to. site_of_stack has t->nstacks entries
 * (UINT32_MAX: no site); names describe the nsites sites. */
struct ap_site_map {
	uint32_t *site_of_stack;
	size_t nsites;
	char **name, **function, **file;
	int *line;
	/* The system library function the site's frame called, whose
	 * allocations these are (e.g. "opendir"), or NULL; may itself be
	 * NULL (a map made by hand). */
	char **via;
	/* Where the site's frame is in each stack: the index in its pcs of
	 * the PC the site's frame came from (0: the call of the allocator
	 * itself); NULL in a map made by hand. allocprof try finds a site's
	 * call instructions with it. */
	uint32_t *pc_of_stack;
	/* The module of a site whose frame has no symbol (its name is
	 * "module+0xoff"), NULL otherwise; NULL in a map made by hand. */
	char **unsym_module;
	/* Whether the site's frame is Rust code (its name demangled as
	 * Rust); NULL in a map made by hand. */
	bool *rust;
	/* The kinds of a site's blocks: its stacks told apart by the
	 * function the site's frame called (a vector's growth and a
	 * string's construction inlined at one line: libstdc++'s
	 * _M_realloc_insert and _M_create, Rust's RawVec and to_string),
	 * for the object graphs, whose members may be blocks of their
	 * root's own line (report/measure_graph.c). Kind s < nsites is site
	 * s's first; a site's others are numbered from nsites on.
	 * kind_of_stack as site_of_stack; site_of_kind and kind_callee (the
	 * function called, "" when none) have nkinds entries. NULL
	 * (nkinds 0) in a map made by hand: the kinds are the sites. */
	uint32_t *kind_of_stack;
	size_t nkinds;
	uint32_t *site_of_kind;
	char **kind_callee;
};

/* The growth by copy in `t` under the site map `m` (report/advise_chains.c:
 * a new block whose thread frees an older block of the same function as
 * its next event, half its size, or less than half at another line):
 * the joins for ap_replay_joined, ascending, in *out (malloc'd; NULL and 0
 * for a sampled trace or a map without functions).
 * ALLOCPROF_GROWTH_BY_COPY=0 in the environment finds none (advise as
 * before, to compare). Returns 0, or -1 with err set when the replay
 * fails. */
struct ap_replay_join;
int ap_advise_joins(const struct ap_trace *t, const struct ap_site_map *m,
		    struct ap_replay_join **out, size_t *n, struct ap_error *err);

/* Replays `t` with the site map `m` and judges every site. Returns NULL
 * with err set on failure (bad options, a replay that failed: ap_replay).
 * The caller frees the result with ap_advice_free(). */
struct ap_advice *ap_advise_run(const struct ap_trace *t, const struct ap_site_map *m,
				const struct ap_advise_options *o, struct ap_error *err);
void ap_advice_free(struct ap_advice *a);

/* The first `shown` sites of a->sites are what the user sees: a verdict
 * among them that says "see SITE" of a site ranked below them (the ranking
 * is by bytes allocated at a site, not by what its objects reach by
 * realloc elsewhere) or left out by --min-share says how to see it
 * ("see SITE (shown with -n 14)"). */
void ap_advise_refer(struct ap_advice *a, size_t shown);

/* Where the cycles the options give for `t` fall in its merged event
 * stream, ascending: a cycle at position p comes after event floor(p) and
 * before event ceil(p) (p = i + 0.5 after event i; -0.5 before the first).
 * gogc cycles fall right after the allocation that reaches the goal;
 * interval cycles before the first event later than their time. Of
 * several cycles in a row at one position only two are listed (a third
 * changes nothing); *count is how many there are; joins: the growth by
 * copy the model saw (ap_advice.joins), or NULL. Exposed for tests. The
 * caller frees the array. NULL with err set when the replay fails. */
double *ap_advise_cycles(const struct ap_trace *t, const struct ap_replay_join *joins, size_t njoins,
			 const struct ap_advise_options *o, size_t *n, uint64_t *count,
			 struct ap_error *err);

/* A measured replay builds its script in memory (16 bytes an op) and
 * replays it per variant and round: a longer run is measured on its first
 * this many events, or fewer (AP_MEASURE_LIVE_BYTES). With 32 M, advise
 * on bench/report.sh's loop64 trace (200 M events) held 534 MB; with
 * this, 218 MB. */
#define AP_MEASURE_MAX_EVENTS (UINT64_C(12) << 20)
/* When one replay of the run takes so long that min_rounds rounds of the
 * baseline and the first AP_MEASURE_FIT_SITES sites would not fit in the
 * budget, the run's first events are replayed, as many as fit, but never
 * fewer than this many. */
#define AP_MEASURE_MIN_EVENTS (UINT64_C(1) << 20)
#define AP_MEASURE_FIT_SITES 2

/* The events of a run to replay when one replay of its ev events took
 * run_ns: all of them, unless `rounds` rounds of the baseline and the
 * first AP_MEASURE_FIT_SITES of `sites` sites, and `fit_runs` replays more
 * (those that fit the share of each block written:
 * AP_TOUCH_FIT_RUNS), would take longer than budget_ns; then as many as
 * fit, AP_MEASURE_MIN_EVENTS at least. Exposed for tests. */
/* The most a script may sleep in all (where the recorded program of one
 * thread was off its CPU: b_naps, report/measure.c) for a budget of
 * budget_ns: AP_SLEEP_BUDGET_SHARE of it over the replays of `rounds`
 * rounds of the baseline and the first AP_MEASURE_FIT_SITES of `sites`
 * sites, the budget's probe and `fit_runs` replays more; 0 without a
 * budget (AP_RS_SLEEP_TOTAL_NS alone). A process that waited on its
 * children slept up to 1 s a run, and `advise --measure-time 1s` of `git
 * repack` took 14 s. Exposed for tests. */
#define AP_SLEEP_BUDGET_SHARE 0.5
/* "--measure-time 2s", or in a run of several processes "this process's
 * share of --measure-time (0.5s of 2s)": budget_ns in a user's words. */
#define AP_ADVISE_BUDGET_WORDS 128
void ap_advise_budget_words(char d[AP_ADVISE_BUDGET_WORDS], const struct ap_advice *a, double budget_ns);
uint64_t ap_advise_sleep_max(double budget_ns, unsigned rounds, size_t sites, unsigned fit_runs);

uint64_t ap_advise_budget_events(uint64_t ev, double run_ns, double budget_ns, unsigned rounds,
				 size_t sites, unsigned fit_runs);

/* Measures, with the measured replay (ap_measure.h), the sites of `a` the
 * model ranks worth measuring (at most max_sites: a pool the model says
 * would hit, largest expected saving first), and judges and ranks them
 * again from what was measured. `runner` is allocprof-replay's path. Never
 * fails: when nothing can be measured (a sampled trace, no candidate, the
 * runner failing), a->measure_why says why and the model's verdicts
 * stand. `m` and `o` are those `a` was made with. */
void ap_advise_measure(struct ap_advice *a, const struct ap_trace *t, const struct ap_site_map *m,
		       const struct ap_advise_options *o, const struct ap_measure_opts *mo,
		       size_t max_sites);

/* Chooses the CPUs the measured replay runs on and notes them in `a`:
 * as many as the recorded run could use (t->allowed_cpus), or `asked`
 * (--replay-cpus: a count, AP_REPLAY_CPUS_ALL, or 0 for the recorded
 * run's), never more than `here` (ap_cpus_here); all of them when
 * the trace does not say. A threaded pool's cost depends on the CPUs its
 * threads share (docs/pool-model.md, §9). Returns the count for
 * ap_measure_opts.cpus: 0 when the replay may use all `here`. */
unsigned ap_advise_replay_cpus(struct ap_advice *a, const struct ap_trace *t, unsigned asked,
			       unsigned here);
/* Appends "replayed on 1 CPU, as recorded" (or what else decided it). */
void ap_advise_replay_cpus_words(const struct ap_advice *a, struct ap_buf *b);

/* The share of its blocks' bytes (from each block's start) a run of one
 * thread wrote, from page faults: a replay touching every page of every
 * new block faulted all times, one touching each block's first line
 * line times, the recorded run prog times (for a replay of the run's
 * first events, the share of them ap_advise_run_faults says).
 * Returns 1 (every page) unless the replay faulted more than
 * AP_TOUCH_FIT_MORE times the run and AP_TOUCH_FIT_SLACK more, and
 * first lines alone fewer times than the run; else the
 * share, by linear interpolation, that makes the replay fault as the run
 * did (0 to 1). In one thread the replay makes the program's calls in the
 * program's order, so glibc maps, trims and reuses the same pages: the
 * faults beyond the program's are pages the replay wrote and the program
 * did not (bench/twins' xzreq: liblzma's 1 MiB dictionary window, of
 * which a request writes its 8-48 KiB). */
#define AP_TOUCH_FIT_MORE 1.5
#define AP_TOUCH_FIT_SLACK 1000
double ap_advise_touch_fit(double line, double all, double prog);
/* ALLOCPROF_REPLAY_TOUCH, the share of each new block the measured
 * replay writes when it is set (not fitted): 1 and *share if it is a
 * number from 0 to 1, 0 if it is not set (*share -1), -1 if it is set to
 * anything else (what advise, try, html and tui refuse). */
int ap_advise_touch_env(double *share);
/* The share between fa and fb at which faults, linear between faults_a
 * at fa and faults_b at fb, are prog (fb when faults_b is not above
 * faults_a). advise refines the fit once with it, from a replay at the
 * fitted share when that faults more than AP_TOUCH_FIT_NEAR of the run
 * off it. */
#define AP_TOUCH_FIT_NEAR 0.1
double ap_advise_touch_between(double fa, double faults_a, double fb, double faults_b, double prog);
/* The fit's replays of the script measured: every page, first lines, and
 * one at the fitted share. */
#define AP_TOUCH_FIT_RUNS 3
/* The recorded run's page faults in the share of its events replayed
 * (share; 1: all of them, prog, the whole run's): for a script of one
 * thread, prog times all_part / all_whole, the faults of a replay of
 * those events touching every page over those of a replay of the whole
 * run touching every page (a heap built early faults early: the share
 * of the faults, not of the events), at most prog; else (no replay of
 * the whole run, or threads, whose replays trim where their interleaving
 * decides, so that one replay of the whole run would decide) prog times
 * the share of the events. The one rule for the fit of the share written
 * (its target) and the verdict's faults beyond the run's. */
double ap_advise_run_faults(double prog, double share, bool one_thread, double all_part,
			    double all_whole);
/* ...for a's measurement (0 when the trace does not say): all_part the
 * fit's replay writing every page, or the baseline's when it wrote every
 * page; all_whole the budget's probe. */
double ap_advise_prog_faults(const struct ap_advice *a);

const char *ap_verdict_name(enum ap_verdict v);
/* The site of a site id (ap_advise_site.site_id), or NULL. */
const struct ap_advise_site *ap_advise_site_by_id(const struct ap_advice *a, uint32_t id);

/* A duration for people: "1.3s", "400ms", "12.5us", "80ns". */
void ap_advise_format_duration(char *out, size_t len, double ns);

/* Builds the site map of `t`: sites are call sites (the frame
 * ap_sym_stack picks: function, file and line; when that frame is in a
 * system library, the nearest caller outside one, named "func file:line
 * (via libfunc)"), or whole stacks with by_stack (named by the call site
 * and a few callers). Never fails. */
struct ap_symbolizer;
void ap_advise_sites(const struct ap_trace *t, struct ap_symbolizer *sym, bool by_stack,
		     struct ap_site_map *out);

void ap_site_map_release(struct ap_site_map *m);

#endif
