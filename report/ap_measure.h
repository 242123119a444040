/* The measured replay: what a pool at a site saves, timed on this
 * machine's real allocator and the real pool (pool/vpool.h), not priced
 * from a cost table (docs/pool-model.md, "The measured replay").
 *
 * From an --all trace, ap_script_build writes the program's allocation
 * sequence as a replay script (measure/script.h): every malloc-family
 * call with its size, realloc chains and frees, in the recorded order, one
 * runner thread per recorded thread with the order across threads kept
 * where a block passes from one to another, and the pool's cycles where
 * the model puts them. ap_measure then runs it in child processes
 * (`allocprof-replay`): once with malloc alone (the baseline) and once per
 * job with that job's site served by a vpool, interleaved and repeated
 * until every saving has a tight interval or the time budget is spent. A
 * run's CPU time (every thread's, user and system), minor faults and peak
 * RSS are the runner's own, counted around the replay only. */
#ifndef AP_MEASURE_H
#define AP_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_trace.h"
#include "ap_util.h"

struct ap_script;
struct ap_replay_join;

/* The most the replay that builds a script (ap_script_build) holds for
 * the blocks live at once: python3 building a JSON of 1.15 M items, 16 M
 * blocks live at the end, held 1.1 GB of them and 512 MB of ops on the
 * first 32 M events, where the walk of its model takes 200 MB. A replay
 * that keeps the live map (a trace whose frees are not resolved) holds
 * about AP_MEASURE_LIVE_BLOCK_MAP bytes a live block: its block and its
 * slots in the map as it doubles, ~120, and the object's entry in the
 * builder's store, kept whole by its address (a raw python3 trace, `record
 * --compress-level 0`, cut at 838 K blocks: 158 MB of advise's before the
 * store, 171 MB with it). One of a resolved trace holds none of them but
 * the object's place in the store, 4 bytes in a page of its thread's
 * allocations, and the slot it frees for the next: ~16 bytes (python3's
 * JSON at 4.66 M blocks live: 206 MB more than at 838 K, 181 MB of it the
 * ops). Its bound counts AP_MEASURE_LIVE_BLOCK a block all the same, 2 M
 * blocks: cut at 4.66 M (12 Mi events), that JSON's replay took 1-2 s a
 * run, the default budget measured one site of six instead of all six,
 * the runner held 728 MB and advise 281 MB; at 2 M, 10.5 % of the run
 * measured (4.3 % at 838 K), every site, 286 and 134 MB (bench/README.md,
 * session 28). */
#define AP_MEASURE_LIVE_BYTES (UINT64_C(96) << 20)
#define AP_MEASURE_LIVE_BLOCK 48
#define AP_MEASURE_LIVE_BLOCK_MAP 136

/* Builds the script of t's events: site_of_stack (t->nstacks entries,
 * UINT32_MAX for none) names each birth's site; cycles (ascending
 * positions in the merged stream, as ap_advise_cycles gives them) are
 * where the pool cycles. With more than max_events events (0: no limit),
 * the script is of the first max_events, or of fewer where the replay
 * that builds it would hold more than AP_MEASURE_LIVE_BYTES for its live
 * blocks (ap_script_events says how many, ap_script_cut_bytes whether
 * that bound cut it). The time a program of one thread was off its CPU
 * is slept at its longest gaps, AP_RS_SLEEP_TOTAL_NS at most in all
 * (or ALLOCPROF_REPLAY_SLEEP's), and sleep_max at most when it is not 0
 * (a budget's share: ap_advise_sleep_max), the naps shortened alike.
 * Returns NULL with err set when t is sampled (a sampled trace
 * does not hold the sequence), or when its replay would need more than
 * half the memory available. */
struct ap_script *ap_script_build(const struct ap_trace *t, const uint32_t *site_of_stack,
				  size_t nsites, const struct ap_replay_join *joins, size_t njoins,
				  const double *cycles, size_t ncycles, uint64_t max_events,
				  uint64_t sleep_max, struct ap_error *err);
/* The time off its CPU the script's naps would have slept without
 * sleep_max (ap_script_sleep_ns: what they sleep). */
uint64_t ap_script_sleep_wanted_ns(const struct ap_script *s);
void ap_script_free(struct ap_script *s);
/* The script was built by kinds (ap_site_map.kind_of_stack, nkinds of
 * them, the first nsites the sites): the runner's jobs of a site pool
 * every kind of it (site_of_kind). */
void ap_script_set_kinds(struct ap_script *s, const uint32_t *site_of_kind, size_t nkinds, size_t nsites);
/* Ops in the script, and its size in bytes. */
uint64_t ap_script_ops(const struct ap_script *s);
uint64_t ap_script_bytes(const struct ap_script *s);
uint64_t ap_script_events(const struct ap_script *s);
bool ap_script_cut_bytes(const struct ap_script *s);
/* The most blocks live at once that bound allows its builder:
 * AP_MEASURE_LIVE_BYTES / AP_MEASURE_LIVE_BLOCK for a resolved trace,
 * / AP_MEASURE_LIVE_BLOCK_MAP for any other. */
uint64_t ap_script_live_max(const struct ap_script *s);
/* The recorded threads it replays, a runner thread each. */
unsigned ap_script_threads(const struct ap_script *s);
/* The program's time between its calls that the script's WORK ops spin
 * (the trace's gaps up to AP_GAP_WORK_MAX_NS; 0 without gaps). */
double ap_script_work_ns(const struct ap_script *s);
/* The time the script sleeps where the recorded program was off its CPU
 * (one thread: its wall time less its CPU time, at its longest gaps). */
uint64_t ap_script_sleep_ns(const struct ap_script *s);

/* An object graph (report/measure_graph.c): the blocks of the member
 * sites live inside the root site's, each born after one of them and
 * freed before it by the same thread (GD_SHARE of a member's blocks at
 * least), as a request's context owns its buffers and nodes. The
 * runner's --graph pools the root's objects whole, with them. */
#define AP_GRAPH_MAX_MEMBERS 15
struct ap_graph {
	uint32_t root;
	uint32_t nmembers;
	uint32_t members[AP_GRAPH_MAX_MEMBERS];	/* the most owned, in no order */
	uint64_t root_births;
	uint64_t member_births[AP_GRAPH_MAX_MEMBERS];	/* its blocks its owner site's owned */
};
/* The script's graphs, the most blocks first (*n of them; NULL when none). */
const struct ap_graph *ap_script_graphs(const struct ap_script *s, size_t *n);

/* One measured variant: the site whose objects the pool serves, and the
 * pool's cap (0: none). With free_list, the site's objects are served by
 * a free list of each thread's own instead of a vpool (the runner's
 * --free-list: a LIFO of pointers, no cycles), with the same cap and
 * classes. A job `beside` another (a free list beside vpool, or vpool
 * beside a Rust site's own list) comes after every other (ap_measure),
 * and a budget keeps it only where min_rounds rounds of every variant
 * fit in it twice over: it never takes the other jobs' rounds. */
struct ap_measure_job {
	uint32_t site;
	bool free_list;
	bool beside;
	/* a graph pooled whole: site its root, these its members (the
	 * runner's --graph; one pool, no cap, no classes) */
	const struct ap_graph *graph;
	uint64_t cap;
	/* Size classes (ascending upper sizes; nclasses 0: one pool): a
	 * pool each; round_up: a request a class holds, and its pool has
	 * nothing for, allocated at the class's upper size (the runner's
	 * --round-up), as a hand-pooler rounds requests up to the class. */
	uint64_t classes[4];
	size_t nclasses;
	bool round_up;
};

/* What one variant cost, as medians over its runs; cpus: the CPUs the
 * runner's affinity let it use (0: not said); wakes: how many times its
 * threads were woken by others they were asleep waiting for (the
 * harness's, not the allocator's). */
struct ap_run_cost {
	double cpu_ns, wall_ns, minflt, maxrss_kb, calls, hits, cpus, wakes;
	/* the fewest and the most page faults of one run (the others are
	 * medians): threads whose interleaving decides when glibc trims
	 * fault in two modes, tens of times apart */
	double minflt_lo, minflt_hi;
	/* the page faults a quarter of the runs made or more (the upper
	 * quartile; the median when the modes are rare) */
	double minflt_q3;
	/* the baseline's only: CPU time of one blocking hand-over between
	 * two threads on the replay's CPUs (the runner's switch probe, a
	 * median of three; 0 when not measured: a replay of one thread) */
	double switch_ns;
	/* the baseline's only: CPU time of one page fault of a page given
	 * back and written again (the runner's fault probe, a median of
	 * three; 0 when not measured: a baseline that faulted fewer than a
	 * thousand times) */
	double fault_ns;
};

/* Whether c's runs faulted in modes far apart: the most at least four
 * times the fewest, and a thousand more. */
static inline bool ap_run_faults_vary(const struct ap_run_cost *c)
{
	return c->minflt_hi >= 4 * c->minflt_lo && c->minflt_hi - c->minflt_lo >= 1000;
}

struct ap_measured {
	bool ok;
	unsigned rounds;
	/* CPU time the pool saves: the median of the paired differences
	 * (baseline run less pooled run of the same round), and an interval
	 * for it by the sign test, of confidence `conf` (0.95 from 6 rounds
	 * on; 1 - 2^(1-rounds) below). Negative: the pool costs. */
	double saved_ns, low_ns, high_ns, conf;
	struct ap_run_cost cost;	/* the pooled runs */
};

struct ap_measure_opts {
	const char *runner;	/* path of allocprof-replay */
	/* liballocprof.so, or NULL: the baseline is also run recorded
	 * (--all) a few times, which tells what recording the run cost
	 * (ap_measure's *recorded). */
	const char *sampler;
	double budget_ns;	/* stop starting runs after this much wall time */
	unsigned min_rounds, max_rounds;
	/* Called after every round (may be NULL). */
	void (*progress)(void *ctx, unsigned round, double elapsed_ns, double budget_ns);
	void *progress_ctx;
	/* When not NULL and nonzero (read atomically between runs), no
	 * further run starts: what is measured by then is kept. */
	const int *stop;
	/* The CPUs the runs may use: the first `cpus` CPUs of the calling
	 * thread's affinity mask, which ap_measure pins the thread to while
	 * it runs them (they inherit it) and restores after. 0, or as many
	 * as the mask has or more: as it is. */
	unsigned cpus;
	/* The share of each new block's bytes, from its start, whose pages
	 * the runner's first write faults in (ALLOCPROF_REPLAY_TOUCH): 1,
	 * every page, the default; advise fits a smaller one to a run that
	 * wrote less of its blocks (ap_advise_touch_fit). */
	double touch;
	/* A site whose blocks the runner writes and reads whole, every byte,
	 * in every variant (ALLOCPROF_REPLAY_WHOLE: measure/runner.c), as a
	 * program writes a record of the size it asked for; -1, the default:
	 * none, each new block's first line and a byte a page written. */
	long whole_site;
	/* When not NULL: nothing is measured, and where a site would have
	 * been, advise says this instead (a run's budget already spent). */
	const char *skip_why;
	/* The end of the budget, CLOCK_MONOTONIC in ns (0: budget_ns from
	 * the call, or none without it): every run the call makes counts
	 * against it (the rounds, the baseline's runs under the sampler,
	 * the runner's probes), and none starts that would end past it by
	 * what a run of its kind took last (a run of the baseline or of a
	 * site; the first of all, run_ns). min_rounds then gives way: what
	 * is measured by then is kept, a site with two rounds at least. */
	double deadline_ns;
	/* Past min_rounds rounds, none starts that would leave less than
	 * this many runs of the baseline and the longest site before
	 * deadline_ns (0: none): time kept for what follows
	 * (advise_measure.c: a site's second measurement, written whole). */
	double reserve_pairs;
	/* What one run of the script is expected to take, wall time (the
	 * budget's probe of it); 0: unknown, the first run starts anyway. */
	double run_ns;
	/* A run that is still going at deadline_ns is killed (the probe of
	 * a script whose length nothing says yet): ap_measure then fails,
	 * err saying so, and cut->killed is set. */
	bool kill_at_deadline;
	/* When not NULL: what the deadline left out, set by ap_measure. */
	struct ap_measure_cut *cut;
};

/* What a deadline (ap_measure_opts.deadline_ns) left out of a call of
 * ap_measure. */
struct ap_measure_cut {
	unsigned rounds_wanted;	/* min_rounds */
	bool rounds_cut;	/* fewer rounds than that made: */
	unsigned rounds;	/* ...these */
	size_t sites;		/* sites left out: not two rounds of them fitted */
	bool recorded;		/* runs under the sampler wanted and not made */
	bool probes;		/* a switch or fault probe wanted and not made */
	bool killed;		/* a run killed at the deadline (kill_at_deadline) */
};


/* What a measurement spends besides its rounds, for a budget to plan
 * with: a run of the baseline under the sampler (what recording costs)
 * takes about AP_MEASURE_REC_RUNS runs and AP_MEASURE_REC_NS more (the
 * sampler's start and end: the demo's 24-26 ms against its 7 ms, traced
 * by strace), and the runner's
 * probes, AP_MEASURE_PROBES of each kind, about AP_MEASURE_PROBE_NS each
 * (80-90 ms here): the switch probe's for a script of two threads or
 * more, the fault probe's for a baseline that faulted
 * AP_MEASURE_FAULT_PROBE_MIN times or more. */
#define AP_MEASURE_REC_RUNS 2
#define AP_MEASURE_REC_NS 1e8
#define AP_MEASURE_PROBES 3
#define AP_MEASURE_PROBE_NS 0.1e9
#define AP_MEASURE_FAULT_PROBE_MIN 1000

/* Sets the defaults: 15 s, 6 to 50 rounds, runner NULL (the caller's),
 * the CPUs as they are, every page touched. */
void ap_measure_opts_init(struct ap_measure_opts *o);

/* Runs the baseline and every job, out[i] for jobs[i] (jobs at the end
 * are left out, out[i].ok false, when min_rounds rounds of all would not
 * fit in the budget: the first round tells how long a run takes; all of
 * them when not two rounds fitted), base for the
 * baseline, *recorded for the baseline under the sampler (all 0 when
 * o->sampler is NULL or those runs failed or did not fit). Rounds go on
 * until every saving's interval is tight, max_rounds, or the next round
 * would end past the budget (o->deadline_ns, or budget_ns from the
 * call); without a budget, min_rounds rounds. Returns 0, or -1 with err set when no run could be made (the
 * runner is missing or fails): then nothing is measured. */
int ap_measure(const struct ap_script *s, const struct ap_measure_job *jobs, size_t n,
	       const struct ap_measure_opts *o, struct ap_measured *out, struct ap_run_cost *base,
	       struct ap_run_cost *recorded, struct ap_error *err);

/* The sign-test interval of the median of d[0..n) (sorted in place):
 * *lo and *hi, and its confidence. Exposed for tests. */
double ap_median_interval(double *d, size_t n, double *lo, double *hi);

#endif
