/* Internals shared by the advisor's files (advise.c, advise_verdict.c,
 * advise_sites.c); not part of the public API. */
#ifndef AP_ADVISE_INT_H
#define AP_ADVISE_INT_H

#include <stdint.h>

#include "ap_advise.h"
#include "ap_replay.h"

/* Sizes of a site: a weighted histogram with 4 buckets per power of two,
 * with the smallest size seen in each bucket and the largest overall, so
 * that quantiles and the maximum are sizes that occurred. */
#define SIZE_BUCKETS 256
struct size_hist {
	double w[SIZE_BUCKETS];
	double lo[SIZE_BUCKETS];	/* smallest size seen in the bucket */
	double total, sum, max;
	/* by e: the weight of sizes in (2^(e-1), 2^e], 2^e the power of two
	 * a request rounds up to (e 0: sizes 0 and 1) */
	double pow2_w[65];
};
double size_bucket_value(unsigned b);
/* The smallest size of the bucket holding quantile q (0 when empty). */
double size_hist_quantile(const struct size_hist *h, double q);
/* Power-of-two size classes for requests of h rounded up to their class
 * (ap_advise_site.round_classes): the class holding the largest size and
 * the three below it, each twice the one before (fewer when the largest
 * is under 64 bytes); a request below the first is rounded up to it.
 * Returns how many (0: none), and in *ratio the bytes the classes hand
 * out for h's requests over the bytes asked. */
size_t advise_round_classes(const struct size_hist *h, uint64_t *classes, double *ratio);

/* What the verdict needs beyond the replay results. */
struct site_facts {
	struct size_hist req;	/* request sizes, one per object born */
	struct size_hist cap;	/* capacities of freed objects (largest size reached) */
};

/* The model's generous expectation of what a pool saves at a site, in ns:
 * 50 ns an allocation or realloc avoided, and a page fault's worth (1 ns
 * a byte, ~1 us a 4 KiB page) for every byte it avoids allocating, as if
 * glibc had given every such page back to the system. An upper end for
 * what the cost model cannot see (page faults after a heap trim): which
 * sites are worth a measured replay, and whether a small estimate can be
 * trusted to be small. */
static inline double advise_generous_ns(const struct ap_replay_result *r)
{
	return 50 * (r->allocs_avoided + r->reallocs_avoided) + r->bytes_avoided / 4;
}

/* Fills site->verdict, verdict_text and reasons. */
void advise_judge(const struct ap_advice *a, struct ap_advise_site *site,
		  const struct site_facts *f, const struct ap_advise_options *o);

/* The cap to evaluate for a site with these capacities, or 0 when they are
 * not skewed. */
uint64_t advise_pick_cap(const struct site_facts *f, double gets);
/* Whether the site's cap, replayed, cut the pool's held bytes enough to be
 * the pool to build (CAP_GAIN) and kept its hits. */
bool advise_cap_pays(const struct ap_advise_site *s);
/* Whether the pool measured at s (m, against the baseline's runs base)
 * hands blocks LARGER_RATIO times the size asked for or more, over
 * LARGER_MIN_BYTES or more of memory above the baseline's peak, in a
 * replay that wrote every page of them (not fitted to a prefix): where
 * how much of its blocks the program goes through decides
 * (advise_verdict.c). */
bool advise_larger_shape(const struct ap_advice *a, const struct ap_advise_site *s,
			 const struct ap_measured *m, const struct ap_run_cost *base);

/* Whether s's requests rounded up to power-of-two classes
 * (ap_advise_site.round_classes) would be handed blocks not much larger
 * than asked (under LARGER_RATIO times), its objects do not grow, and the
 * model did not shape classes of its own: a pool of them is measured
 * beside one pool that hands much larger blocks (advise_measure.c). */
bool advise_round_fits(const struct ap_advise_site *s);
/* Whether the pool of rounded-up classes measured beside one pool that
 * hands blocks much larger than asked (advise_larger_shape, what would
 * leave the verdict open) pays, a line a page (the rule of a pool's
 * verdict): it is then measured again written whole (advise_measure.c). */
bool advise_round_may_win(const struct ap_advice *a, const struct ap_advise_site *s);
/* After the measurements, before the site is judged: where it may win
 * and, written whole, still pays, that pool becomes the site's: its
 * measurement written whole in s->m (a line a page in s->mw, the one
 * pool's in s->rm), its classes the verdict's, s->round_up set, and why
 * in s->reasons. */
void advise_round_wins(const struct ap_advice *a, struct ap_advise_site *s);

/* Judges a measured site again from its measurement (s->m). */
void advise_judge_measured(const struct ap_advice *a, struct ap_advise_site *s);
/* Measured, a pool pays where its saving's interval is above zero and
 * the saving this share of the program's CPU time at least. */
#define AP_MIN_SAVE_SHARE 0.01
/* The program's CPU time a measured saving is a share of: the estimate
 * without recording, else the recorded run's, else its wall time. */
double advise_program_cpu_ns(const struct ap_advice *a);
/* "<what> saves 12ms of CPU time (10ms to 14ms, 97% interval), 3.1% of
 * the program's ~390ms ..." */
void advise_saving_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_measured *m,
			 const char *what);
/* A baseline's page faults beyond the recorded run's and a pooled
 * replay's, and their price, taken off a saving (advise_excess_off). */
struct advise_excess {
	double faults, ns, lo_ns, hi_ns;
};
/* Takes the faults of baseline B beyond the recorded run's (prog_faults)
 * off m's saving and interval, into *x, where the runner priced them
 * and, where they are the replay's own (replay_faults), they are less
 * than half the saving: then true. */
bool advise_excess_off(const struct ap_advice *a, const struct ap_run_cost *B, struct ap_measured *m,
		       double prog_faults, bool replay_faults, struct advise_excess *x);
/* Whether B faulted far more than the recorded run and m's pooled runs
 * half as much or less: a saving made of faults the program does not
 * make. */
bool advise_replay_faulted(const struct ap_advice *a, const struct ap_run_cost *B,
			   const struct ap_measured *m, double prog_faults);
/* "; that is the replay's saving less 4.8ms ... for the 48000 page
 * faults its baseline made beyond the recorded run's ..." */
void advise_excess_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_run_cost *B,
			 const struct advise_excess *x);
/* " But the replay without <what> made 50000 page faults a run ...;
 * <what> may save it nothing, or cost it. " (excess: the faults beyond
 * the run's, excess_ns their price, 0 when not priced) */
void advise_replay_faults_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_run_cost *B,
				const struct ap_measured *m, const char *what, double excess, double excess_ns);
/* The verdicts and texts of the object graphs measured whole, the most
 * saved first (advise_graph.c). */
void advise_judge_graphs(struct ap_advice *a);

/* Sorts a->sites: the sites a pool pays at first, measured ones before
 * estimated ones, each by the CPU time saved; then the rest by bytes. */
void advise_rank(struct ap_advice *a);

/* ---- the walk's objects (advise.c) ---- */

/* An object as the advisor's walk keeps it: by the replay's object id
 * with the live map (ids are reused after an object's free), in the store
 * below without it. */
struct advise_obj {
	double w;		/* weight in live bytes (gogc cycles) */
	uint64_t cap, birth;	/* exact replay */
	uint64_t maxsize;	/* the largest size it reached */
	uint32_t site;		/* UINT32_MAX: of no site */
	union {
		uint32_t rec;	/* W_COLLECT: its record, or UINT32_MAX */
		uint32_t thread; /* W_EXACT: the thread that made it */
	};
};

/* The walk's objects on a replay of a resolved trace, which keeps no live
 * map (advise_objs.c). An object is named by the identity of its latest
 * block (ap_event.addr: the anonymous block's, or its address). Most of
 * what the walk knows of it follows from that block, which every FREE
 * carries (its stack and size) and from the identity (the thread that
 * made it): the store keeps only its birth time, 4 bytes in a page of
 * its thread's allocations, and the rest whole only for the objects
 * whose state is not what their block says ("exceptions": grown from
 * another site or by another thread, shrunk, a pool's hit with more room
 * than asked, a block that is not anonymous, one asked to be kept). */
struct advise_objs;

/* The join at event i (ap_replay_join) of a replay without the live map,
 * which leaves the joins to its consumers (the advisor's walk, the
 * measured replay's script builder): joins ascending by `i`, *next the
 * first not yet passed; NULL when none is at i. */
static inline const struct ap_replay_join *advise_join_at(const struct ap_replay_join *joins,
							  size_t n, size_t *next, size_t i)
{
	while (*next < n && joins[*next].i < i)
		(*next)++;
	if (*next >= n || joins[*next].i != i)
		return NULL;
	return &joins[(*next)++];
}

/* Growth by copy found as the events come (advise_chains.c; what
 * ap_advise_joins returns, found by its caller's own pass over a resolved
 * trace): NULL when there is none to find (ap_advise_joins' cases). A
 * join at event i is known once its thread's next event has been given
 * (with one thread, event i + 1), or that thread's events have ended. */
struct advise_chains;
struct advise_chains *advise_chains_new(const struct ap_trace *t, const struct ap_site_map *m);
/* Events base.., n of them, of a resolved trace, in the trace's order. */
void advise_chains_events(struct advise_chains *C, size_t base, const struct ap_event *ev,
			  size_t n);
/* The index of the first event given whose join is not known yet (its
 * thread has had no event since): every join at an event before it has
 * been found. SIZE_MAX: none pending. */
size_t advise_chains_horizon(const struct advise_chains *C);
/* Finds every join of the trace in a pass of its own (for a thread that
 * stays quiet too long): what advise_chains_events would find by the
 * end; the events given later change nothing. Returns 0, or -1 with err
 * set (the events' error). */
int advise_chains_complete(struct advise_chains *C, struct ap_error *err);
/* The joins found so far, ascending by `i` (valid until the next
 * advise_chains_events or advise_chains_complete). */
const struct ap_replay_join *advise_chains_found(const struct advise_chains *C, size_t *n);
/* Frees C (NULL: nothing), its joins to *out, ascending, and *n (out
 * NULL: freed too). */
void advise_chains_end(struct advise_chains *C, struct ap_replay_join **out, size_t *n);

/* `quantum`: the trace's time quantum (births are its multiples). */
struct advise_objs *advise_objs_new(uint64_t quantum);

/* The graph detector of a script's making (measure_graph.c): fed every
 * birth (seq: its op's index in its thread) and every free, in the
 * recorded order; graph_det_finish gives the graphs (*out, malloc'd). */
struct ap_graph;
struct graph_det *graph_det_new(size_t nthreads, size_t nsites);
void graph_det_birth(struct graph_det *g, uint32_t thread, uint32_t slot, uint32_t site, uint64_t seq);
void graph_det_end(struct graph_det *g, uint32_t thread, uint32_t slot);
size_t graph_det_finish(struct graph_det *g, struct ap_graph **out);
void graph_det_free(struct graph_det *g);
void advise_objs_free(struct advise_objs *s);
/* Object ob's latest block is now `id`, which `thread` allocated. The
 * store keeps ob whole when `whole` (the caller found that ob is not what
 * the block says: see above), else its birth and thread only. */
void advise_objs_set(struct advise_objs *s, uint64_t id, const struct advise_obj *ob,
		     uint32_t thread, bool whole);
/* advise_objs_take's answers. */
enum { AP_OBJS_NONE, AP_OBJS_WHOLE, AP_OBJS_BIRTH };
/* The live object whose latest block is `id`, out of the store: into *ob
 * whole (AP_OBJS_WHOLE); or only its birth and thread (AP_OBJS_BIRTH:
 * the rest is what its block says); or AP_OBJS_NONE, *ob untouched, when
 * no object is live there. */
int advise_objs_take(struct advise_objs *s, uint64_t id, struct advise_obj *ob);
/* The pages of anonymous identities the store holds (tests). */
size_t advise_objs_pages(const struct advise_objs *s);
/* Calls fn for each live object kept whole with its block's id. */
void advise_objs_each_kept(const struct advise_objs *s,
			   void (*fn)(void *ctx, uint64_t id, const struct advise_obj *ob),
			   void *ctx);

#endif
