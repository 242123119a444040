/* The advisor's measured pass (ap_advise_measure in ap_advise.h): picks the
 * sites worth measuring, has the measured replay (ap_measure.h) time them,
 * and judges them again from what it measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "advise-int.h"

/* A site is measured when the model's generous expectation (50 ns an
 * allocation or realloc avoided, a page fault's worth a 4 KiB) reaches
 * this share of the recorded run's CPU time, recording included (up to
 * four times the program's own under --all): a hundredth of the 1 % a
 * pool must save to be advised, or a few hundredths. */
#define MEASURE_FLOOR 1e-4
/* ...and this much at least, whatever the run: a replay's rounds of a
 * site whose generous expectation is a few microseconds measure its
 * noise, and a short process of a shell script or a build (sh, a
 * compiler's driver: a 512-byte block reused once) took 1-2.6 s of
 * advise each, 6 s of 28 on four `gcc -c`. */
#define MEASURE_FLOOR_NS 20e3

struct cand {
	size_t i;
	double score;
};

static int cand_cmp(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Where a pool can hit at all: the model's replay found hits, and nothing
 * structural (objects kept, born elsewhere, too uncertain) rules it out. */
static bool worth_measuring(const struct ap_advise_site *s)
{
	switch (s->verdict) {
	case AP_VERDICT_ESCAPES:
	case AP_VERDICT_ELSEWHERE:
	case AP_VERDICT_UNSURE:
		return false;
	default:
		return s->r.gets - s->r.misses >= 1;
	}
}

/* A replay stopped by ap_events_stop made a script of part of the run. */
static struct ap_script *stopped(const struct ap_trace *t, struct ap_script *sc, struct ap_error *err)
{
	if (sc && __atomic_load_n(&t->events_stop, __ATOMIC_RELAXED)) {
		ap_script_free(sc);
		snprintf(err->msg, sizeof(err->msg), "stopped");
		return NULL;
	}
	return sc;
}

int ap_advise_touch_env(double *share)
{
	const char *env = getenv("ALLOCPROF_REPLAY_TOUCH");
	*share = -1;
	if (!env || !*env)
		return 0;
	char *end;
	double set = strtod(env, &end);
	if (*end || !(set >= 0 && set <= 1))
		return -1;
	*share = set;
	return 1;
}

/* ALLOCPROF_REPLAY_TOUCH=S (0 to 1): that share of each block written, not
 * fitted (=1: every page, as before the fit); -1 when not set (the
 * commands refuse a bad value before any work: ap_view_touch_check). */
static double touch_set(void)
{
	double share;
	return ap_advise_touch_env(&share) > 0 ? share : -1;
}

/* Whether the share written will be fitted (fit_touch), from a replay of
 * the whole run touching every page that faulted `all` times: a run of
 * one thread whose recorded faults are known, and a replay faulting far
 * more than it. */
static bool touch_fits(const struct ap_advice *a, const struct ap_script *sc, double all)
{
	return a->has_program_minflt && ap_script_threads(sc) == 1 && touch_set() < 0 &&
	       ap_advise_touch_fit(0, all, (double)a->program_minflt) < 1;
}

void ap_advise_budget_words(char d[AP_ADVISE_BUDGET_WORDS], const struct ap_advice *a, double budget_ns)
{
	char b[32], r[32];
	ap_advise_format_duration(b, sizeof(b), budget_ns);
	if (a->measure_budget_run_ns <= 0) {
		snprintf(d, AP_ADVISE_BUDGET_WORDS, "--measure-time %s", b);
		return;
	}
	ap_advise_format_duration(r, sizeof(r), a->measure_budget_run_ns);
	snprintf(d, AP_ADVISE_BUDGET_WORDS, "this process's share of --measure-time (%s of %s)", b, r);
}

uint64_t ap_advise_sleep_max(double budget_ns, unsigned rounds, size_t sites, unsigned fit_runs)
{
	if (budget_ns <= 0)
		return 0;
	size_t want = sites < AP_MEASURE_FIT_SITES ? sites : AP_MEASURE_FIT_SITES;
	double runs = (double)(rounds > 1 ? rounds : 1) * (double)(want + 1) + 1 + fit_runs;
	double ns = AP_SLEEP_BUDGET_SHARE * budget_ns / runs;
	return ns >= 1 ? (uint64_t)ns : 1;
}

uint64_t ap_advise_budget_events(uint64_t ev, double run_ns, double budget_ns, unsigned rounds,
				 size_t sites, unsigned fit_runs)
{
	if (budget_ns <= 0 || ev <= AP_MEASURE_MIN_EVENTS || run_ns <= 0)
		return ev;
	size_t want = sites < AP_MEASURE_FIT_SITES ? sites : AP_MEASURE_FIT_SITES;
	double runs = (double)(rounds > 1 ? rounds : 1) * (double)(want + 1) + fit_runs;
	double per_run = budget_ns / runs;
	if (run_ns <= per_run)
		return ev;
	uint64_t keep = (uint64_t)((double)ev * per_run / run_ns);
	if (keep < AP_MEASURE_MIN_EVENTS)
		keep = AP_MEASURE_MIN_EVENTS;
	return keep < ev ? keep : ev;
}

/* The stacks' kinds to build the script of, and how many (the sites
 * themselves in a map made by hand). */
#define KINDS(m) ((m)->kind_of_stack ? (m)->kind_of_stack : (m)->site_of_stack)
#define NKINDS(m) ((m)->kind_of_stack ? (m)->nkinds : (m)->nsites)

/* The share of the budget a script cut to fit it keeps unplanned. */
#define BUDGET_SLACK 0.15

static double mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One replay of the baseline says what a run takes (*probe: its cost,
 * *probed: whether it was made, of the whole script; *run_ns: its wall
 * time, scaled to the script returned). If min_rounds rounds of the
 * baseline and the first AP_MEASURE_FIT_SITES candidates, the replays
 * that fit the share of each block written (AP_TOUCH_FIT_RUNS), and the
 * baseline's under the sampler and the runner's probes
 * (AP_MEASURE_REC_RUNS, AP_MEASURE_REC_NS, AP_MEASURE_PROBE_NS), would not fit in what
 * the probe left of the budget, the script is made again of the run's
 * first events, as many as fit (AP_MEASURE_MIN_EVENTS at least): a budget
 * of seconds then buys a measurement of part of a long run, not a wait of
 * minutes for a few sites or none. The probe itself is stopped at the
 * budget's end (mo->deadline_ns). Returns the script to measure (sc, or
 * the shorter one, sc freed), or NULL with err set. */
static struct ap_script *fit_budget(struct ap_advice *a, const struct ap_trace *t,
				    const struct ap_site_map *m, const double *cyc, size_t ncyc,
				    const struct ap_measure_opts *mo, size_t nc, uint64_t sleep_max,
				    struct ap_script *sc, struct ap_run_cost *probe, bool *probed,
				    double *run_ns, double built_ns, struct ap_error *err)
{
	uint64_t ev = ap_script_events(sc);
	*probed = false;
	*run_ns = 0;
	if (mo->budget_ns <= 0)
		return sc;
	if (mo->deadline_ns > 0 && mono_ns() >= mo->deadline_ns) {
		char d[AP_ADVISE_BUDGET_WORDS], b[32];
		ap_advise_budget_words(d, a, mo->budget_ns);
		ap_advise_format_duration(b, sizeof(b), built_ns);
		snprintf(err->msg, sizeof(err->msg),
			 "%s spent making the replay's script of the "
			 "run's %llu events (%s): a longer --measure-time measures it", d,
			 (unsigned long long)ev, b);
		ap_script_free(sc);
		return NULL;
	}
	if (ev <= AP_MEASURE_MIN_EVENTS)
		return sc;
	struct ap_measure_opts po = *mo;
	po.min_rounds = po.max_rounds = 1;
	po.sampler = NULL;
	po.progress = NULL;
	po.stop = &t->events_stop;
	po.touch = 1;	/* (the fit's first replay: fit_touch) */
	po.kill_at_deadline = true;
	struct ap_measure_cut cut;
	po.cut = &cut;
	struct ap_run_cost prec;
	struct ap_measured none;
	struct ap_error e2;
	double t0 = mono_ns();
	if (ap_measure(sc, NULL, 0, &po, &none, probe, &prec, &e2) < 0) {
		if (!cut.killed)
			return sc;	/* the measurement proper will say what fails */
		char d[AP_ADVISE_BUDGET_WORDS], b[32];
		ap_advise_budget_words(d, a, mo->budget_ns);
		ap_advise_format_duration(b, sizeof(b), built_ns);
		a->budget_probe_killed = true;
		snprintf(err->msg, sizeof(err->msg),
			 "%s spent before one replay of the run's "
			 "%llu events ended (stopped there; making its script took %s of it): a "
			 "longer --measure-time measures it", d, (unsigned long long)ev, b);
		ap_script_free(sc);
		return NULL;
	}
	double run = mono_ns() - t0;
	*probed = true;
	*run_ns = run;
	unsigned fit_runs = touch_fits(a, sc, probe->minflt) ? AP_TOUCH_FIT_RUNS : 0;
	/* What the probe left, less what a run does not scale, and less the
	 * making of the shorter script (as long as the first's was, for its
	 * share of the events), with BUDGET_SLACK kept for runs that take
	 * longer than the probe said (prodcons at 15 s: the first of the
	 * shorter script's took 2.3 times its share of the probe, on a CPU
	 * shared with other work). */
	double probes = (ap_script_threads(sc) > 1 ? AP_MEASURE_PROBES : 0) +
			(probe->minflt >= AP_MEASURE_FAULT_PROBE_MIN ? AP_MEASURE_PROBES : 0);
	double left = mo->deadline_ns - mono_ns() - probes * AP_MEASURE_PROBE_NS -
		      (mo->sampler ? AP_MEASURE_REC_NS : 0);
	unsigned runs = fit_runs + (mo->sampler ? AP_MEASURE_REC_RUNS : 0);
	uint64_t keep = ap_advise_budget_events(ev, run, left > 0 ? left : 1, mo->min_rounds, nc, runs);
	if (keep >= ev)
		return sc;
	left = (left - built_ns * (double)keep / (double)ev) * (1 - BUDGET_SLACK);
	keep = ap_advise_budget_events(ev, run, left > 0 ? left : 1, mo->min_rounds, nc, runs);
	struct ap_script *s2 = ap_script_build(t, KINDS(m), NKINDS(m), a->joins, a->njoins, cyc,
					       ncyc, keep, sleep_max, err);
	if (s2)
		ap_script_set_kinds(s2, m->site_of_kind, m->nkinds, m->nsites);
	s2 = stopped(t, s2, err);
	if (!s2)
		return NULL;
	ap_script_free(sc);
	a->measure_full_run_ns = run;
	a->measure_probe_events = ev;
	*run_ns = run * (double)ap_script_events(s2) / (double)ev;
	return s2;
}

double ap_advise_touch_between(double fa, double faults_a, double fb, double faults_b, double prog)
{
	if (!(faults_b > faults_a))
		return fb;
	double f = fa + (fb - fa) * (prog - faults_a) / (faults_b - faults_a);
	return f < fa ? fa : f > fb ? fb : f;
}

double ap_advise_touch_fit(double line, double all, double prog)
{
	/* (first lines alone faulting as often as the run: what the replay
	 * faults more is not what it writes) */
	if (!(all > AP_TOUCH_FIT_MORE * prog + AP_TOUCH_FIT_SLACK) || !(line < prog))
		return 1;
	return ap_advise_touch_between(0, line, 1, all, prog);
}

double ap_advise_run_faults(double prog, double share, bool one_thread, double all_part,
			    double all_whole)
{
	if (!(share < 1))
		return prog;
	if (one_thread && all_part > 0 && all_whole > 0)
		return all_part < all_whole ? prog * all_part / all_whole : prog;
	return share > 0 ? prog * share : prog;
}

double ap_advise_prog_faults(const struct ap_advice *a)
{
	if (!a->has_program_minflt)
		return 0;
	double part = a->touch_faults_all > 0 ? a->touch_faults_all
		      : a->touch_share >= 1   ? a->base.minflt
					      : 0;
	return ap_advise_run_faults((double)a->program_minflt, a->measure_share, a->script_threads == 1,
				    part, a->measure_probe_faults);
}

/* The share of each block's pages the replay touches, fitted to the
 * recorded run's page faults for a script of one thread (the replay of
 * threads trims where their interleaving decides, not where the program
 * wrote: bench/twins' relay): a baseline replay touching every page (the
 * budget's probe of the whole run when there was one: probe), and when
 * it faults far more than the run, one touching first lines. A script of
 * the run's first events (the budget cut it) is fitted to the recorded
 * run's faults in the share the probe of the whole run says those events
 * make (ap_advise_run_faults): the faults of a run's start, the
 * program's and the runner's, do not scale with its events, and a heap
 * built early faults early (bench/twins' cache). Sets a->touch_share (1
 * when not fitted) and *touch. */
static void fit_touch(struct ap_advice *a, const struct ap_trace *t, const struct ap_script *sc,
		      const struct ap_measure_opts *mo, const struct ap_run_cost *probe, double run_ns,
		      double *touch)
{
	a->touch_share = *touch = 1;
	double set = touch_set();
	if (set >= 0) {
		a->touch_share = *touch = set;
		return;
	}
	/* (cut to AP_MEASURE_MAX_EVENTS with no probe of the whole run: the
	 * recorded run's faults cannot be split) */
	bool part = a->measure_share < 1;
	if (!a->has_program_minflt || ap_script_threads(sc) != 1 || (part && !probe) ||
	    (probe && !touch_fits(a, sc, probe->minflt)))
		return;
	struct ap_measure_opts po = *mo;
	po.min_rounds = po.max_rounds = 1;
	po.sampler = NULL;
	po.progress = NULL;
	po.stop = &t->events_stop;
	/* (each replay within the budget: one that would end past it is not
	 * made, and the share stays as fitted so far, said so) */
	po.run_ns = run_ns;
	struct ap_measure_cut cut = { 0 };
	po.cut = &cut;
	struct ap_run_cost all, line, rec;
	struct ap_measured none;
	struct ap_error e2;
	po.touch = 1;
	if (probe && !part) {
		all = *probe;	/* (the probe was this replay) */
	} else if (ap_measure(sc, NULL, 0, &po, &none, &all, &rec, &e2) < 0) {
		a->budget_fit = cut.rounds_cut;
		return;	/* the measurement proper will say what fails */
	}
	double prog = ap_advise_run_faults((double)a->program_minflt, a->measure_share, true, all.minflt,
					   part ? probe->minflt : 0);
	a->touch_faults_all = all.minflt;
	a->touch_faults_run = prog;
	if (ap_advise_touch_fit(0, all.minflt, prog) >= 1)
		return;	/* (not more than the run: no second replay) */
	po.touch = 0;
	if (ap_measure(sc, NULL, 0, &po, &none, &line, &rec, &e2) < 0) {
		a->budget_fit = cut.rounds_cut;
		return;
	}
	a->touch_faults_line = line.minflt;
	double f = ap_advise_touch_fit(line.minflt, all.minflt, prog);
	/* Faults are not linear in the share (a block from the heap may
	 * reuse pages another one faulted in): one step more, between the
	 * share and the end on the run's side of it, when a replay at the
	 * share is more than AP_TOUCH_FIT_NEAR off the run. */
	struct ap_run_cost mid;
	po.touch = f;
	if (f > 0 && f < 1 && ap_measure(sc, NULL, 0, &po, &none, &mid, &rec, &e2) == 0 &&
	    fabs(mid.minflt - prog) > AP_TOUCH_FIT_NEAR * prog)
		f = mid.minflt < prog ? ap_advise_touch_between(f, mid.minflt, 1, all.minflt, prog)
				      : ap_advise_touch_between(0, line.minflt, f, mid.minflt, prog);
	else if (f > 0 && f < 1)
		a->budget_fit |= cut.rounds_cut;
	a->touch_share = *touch = f;
}

unsigned ap_advise_replay_cpus(struct ap_advice *a, const struct ap_trace *t, unsigned asked,
			       unsigned here)
{
	unsigned want;
	a->recorded_cpus = t->allowed_cpus <= AP_MAX_CPUS ? (unsigned)t->allowed_cpus : 0;
	a->replay_cpus_here = here ? here : 1;
	if (asked == AP_REPLAY_CPUS_ALL) {
		a->replay_cpus_from = AP_RCPUS_ALL;
		want = a->replay_cpus_here;
	} else if (asked) {
		a->replay_cpus_from = AP_RCPUS_ASKED;
		a->replay_cpus_asked = want = asked;
	} else if (a->recorded_cpus) {
		a->replay_cpus_from = AP_RCPUS_RECORDED;
		want = a->recorded_cpus;
	} else {
		a->replay_cpus_from = AP_RCPUS_UNKNOWN;
		want = a->replay_cpus_here;
	}
	a->replay_cpus = want < a->replay_cpus_here ? want : a->replay_cpus_here;
	return a->replay_cpus < a->replay_cpus_here ? a->replay_cpus : 0;
}

void ap_advise_replay_cpus_words(const struct ap_advice *a, struct ap_buf *b)
{
	unsigned n = a->replay_cpus, rec = a->recorded_cpus, here = a->replay_cpus_here;
	const char *s = n == 1 ? "" : "s";
	switch (a->replay_cpus_from) {
	case AP_RCPUS_RECORDED:
		if (rec > n)
			ap_buf_addf(b, "replayed on %u CPU%s: the run had %u, %u allowed here", n, s, rec,
				    here);
		else
			ap_buf_addf(b, "replayed on %u CPU%s, as recorded", n, s);
		break;
	case AP_RCPUS_ASKED:
	case AP_RCPUS_ALL:
		if (a->replay_cpus_from == AP_RCPUS_ALL)
			ap_buf_addf(b, "replayed on %u CPU%s (--replay-cpus all", n, s);
		else if (a->replay_cpus_asked > n)
			ap_buf_addf(b, "replayed on %u CPU%s (--replay-cpus %u: %u allowed here", n, s,
				    a->replay_cpus_asked, here);
		else
			ap_buf_addf(b, "replayed on %u CPU%s (--replay-cpus %u", n, s, a->replay_cpus_asked);
		if (rec)
			ap_buf_addf(b, "; the run had %u)", rec);
		else
			ap_buf_addstr(b, "; the trace does not say how many the run had)");
		break;
	case AP_RCPUS_UNKNOWN:
		ap_buf_addf(b, "replayed on %u CPU%s, all allowed here: the trace does not say how many "
			    "the run had", n, s);
		break;
	}
}

/* A site whose pool hands blocks much larger than asked for over
 * megabytes more memory (advise_larger_shape) is measured again, baseline
 * and pool alike, with its blocks written and read whole (every byte, as
 * a program writes and reads a record or a message of the size it asked
 * for): the first measurement writes a line and a byte a page of each,
 * and the memory the larger blocks spread the program's passes over is
 * not in it. bench/twins' relay (records of 1-8 KiB, each filled and
 * checksummed whole; its twin costs 12 % more): a line a page saved 8.6
 * ms, every byte written and read cost 39 ms (bench/twins/README.md,
 * session 30). That measurement becomes the site's (s->m, its baseline
 * s->mw_base), the first kept in s->mw for the text. In what is left of
 * the budget, when a round of both fits in it (the first measurement's
 * runs say how long one takes); else the site stays as measured, and its
 * verdict open (advise_verdict.c, "unsure: larger blocks"). */
/* Written whole, a round takes longer: relay's, 0.79-0.82 s of wall time
 * against 0.19-0.22 for the first measurement's (the baseline 0.29-0.36 s
 * against 0.12-0.14, the pool 0.43-0.53 against 0.07-0.10: session 31). */
#define WHOLE_SLOWER 4

/* Whether the model says s's pool hands blocks much larger than asked
 * for (advise_larger_shape without its measured part, the memory). */
static bool larger_shape_likely(const struct ap_advice *a, const struct ap_advise_site *s)
{
	struct ap_measured m = { .cost = { .maxrss_kb = 1e15 } };
	struct ap_run_cost base = { 0 };
	return advise_larger_shape(a, s, &m, &base);
}

/* A measurement's saving, made on a share of the run, scaled to all of it. */
static void scale_share(const struct ap_advice *a, struct ap_measured *m)
{
	if (a->measure_share > 0 && a->measure_share < 1) {
		m->saved_ns /= a->measure_share;
		m->low_ns /= a->measure_share;
		m->high_ns /= a->measure_share;
	}
}

/* (A site whose free list was measured beside its vpool, fl_job, has it
 * measured again written whole too, in the same rounds, vpool first: the
 * two figures the text puts side by side are of one measurement. One
 * that does not fit is said left out by the budget.) */
/* The jobs (nj, the first the site's) measured with the site's blocks
 * written whole into out, against *base; `round_ns` a round of the first
 * measurement of the site. 1 when measured; 0 when the budget left it
 * out, said in a->budget_whole_*; -1 when it failed. */
static int whole_run(struct ap_advice *a, const struct ap_script *sc, const struct ap_measure_job *jobs,
		     size_t nj, const struct ap_measure_opts *o2, double round_ns, struct ap_measured *out,
		     struct ap_run_cost *base)
{
	struct ap_measure_opts ow = *o2;
	ow.whole_site = jobs[0].site;
	ow.sampler = NULL;
	ow.run_ns = WHOLE_SLOWER * a->base.wall_ns;
	ow.reserve_pairs = 0;
	struct ap_measure_cut cut = { 0 };
	ow.cut = &cut;
	if (ow.deadline_ns > 0) {
		double left = ow.deadline_ns - mono_ns();
		if (left < WHOLE_SLOWER * ow.min_rounds * round_ns) {
			a->budget_whole_left++;
			return 0;
		}
		ow.budget_ns = left;
	}
	struct ap_run_cost rec;
	struct ap_error err = { "" };
	int rc = ap_measure(sc, jobs, nj, &ow, out, base, &rec, &err);
	if (cut.rounds_cut && (rc < 0 || !out[0].ok)) {
		a->budget_whole_left++;
		return 0;
	}
	if (rc < 0 || !out[0].ok)
		return -1;
	if (cut.rounds_cut) {
		if (!a->budget_whole_rounds_cut || cut.rounds < a->budget_whole_rounds)
			a->budget_whole_rounds = cut.rounds;
		a->budget_whole_rounds_cut = true;
		a->budget_rounds_wanted = cut.rounds_wanted;
	}
	for (size_t j = 0; j < nj; j++)
		if (out[j].ok)
			scale_share(a, &out[j]);
	return 1;
}

static void measure_whole(struct ap_advice *a, struct ap_advise_site *s, const struct ap_script *sc,
			  const struct ap_measure_job *job, const struct ap_measure_job *fl_job,
			  const struct ap_measure_opts *o2)
{
	if (!advise_larger_shape(a, s, &s->m, &a->base))
		return;
	struct ap_measure_job both[2] = { *job };
	size_t nj = 1;
	if (fl_job && s->fl_state == AP_FL_MEASURED)
		both[nj++] = *fl_job;
	struct ap_measured out[2] = { { 0 } };
	struct ap_run_cost base;
	if (whole_run(a, sc, both, nj, o2, a->base.wall_ns + s->m.cost.wall_ns, out, &base) <= 0)
		return;
	if (nj == 2 && out[1].ok)
		s->fl = out[1];
	else if (nj == 2)
		s->fl_state = AP_FL_BUDGET;
	s->mw = s->m;
	s->m = out[0];
	s->mw_base = base;
	s->whole_measured = true;
}

/* Size classes rounded up that pay a line a page where one pool's blocks
 * are much larger than asked (advise_round_may_win), measured again
 * written whole: whether they win (advise_round_wins). */
static void measure_round_whole(struct ap_advice *a, struct ap_advise_site *s, const struct ap_script *sc,
				const struct ap_measure_job *job, const struct ap_measure_opts *o2)
{
	if (!advise_round_may_win(a, s))
		return;
	struct ap_measured out = { 0 };
	if (whole_run(a, sc, job, 1, o2, a->base.wall_ns + s->rm.cost.wall_ns, &out, &s->rmw_base) <= 0)
		return;
	s->rmw = out;
	s->round_whole = true;
}

/* Object graphs measured whole, at most: the script's biggest. */
#define MEASURE_GRAPHS 2

/* The site of a script's kind. */
static uint32_t site_of(const struct ap_site_map *m, uint32_t kind)
{
	return kind < m->nsites ? kind : m->kind_of_stack && kind < m->nkinds ? m->site_of_kind[kind] : UINT32_MAX;
}

/* What a kind's site frame called ("" when unknown). */
static const char *callee_of(const struct ap_site_map *m, uint32_t kind)
{
	return m->kind_callee && kind < m->nkinds && m->kind_callee[kind] ? m->kind_callee[kind] : "";
}

/* The script's graphs worth measuring whole (a->graphs, and their
 * script graphs in *g, as many): a root site of the list where the model
 * found hits, members that it lists, owning one member block in two
 * roots at least, and the model's generous expectation of the root's
 * and members' pools together past the floor a site's is held to. */
static size_t pick_graphs(struct ap_advice *a, const struct ap_script *sc, const struct ap_site_map *m,
			  const struct ap_graph **g, size_t max)
{
	size_t nmap = m->nsites;
	if (max > MEASURE_GRAPHS)
		max = MEASURE_GRAPHS;
	size_t ng = 0, n;
	const struct ap_graph *v = ap_script_graphs(sc, &n);
	if (!n)
		return 0;
	size_t *idx = ap_xmalloc((nmap ? nmap : 1) * sizeof(*idx));
	for (size_t k = 0; k < nmap; k++)
		idx[k] = SIZE_MAX;
	for (size_t i = 0; i < a->nsites; i++)
		if (a->sites[i].site_id < nmap)
			idx[a->sites[i].site_id] = i;
	a->graphs = ap_xcalloc(MEASURE_GRAPHS, sizeof(*a->graphs));
	for (size_t k = 0; k < n; k++) {
		/* (the script's graphs are of kinds: a site's blocks told
		 * apart by what its frame called, report/advise_sites.c) */
		const struct ap_graph *gr = &v[k];
		uint32_t rs = site_of(m, gr->root);
		if (rs >= nmap || idx[rs] == SIZE_MAX)
			continue;
		const struct ap_advise_site *root = &a->sites[idx[rs]];
		if (!worth_measuring(root))
			continue;
		struct ap_advise_graph ag = { .root = rs, .root_births = gr->root_births };
		uint64_t owned = 0;
		double score = advise_generous_ns(&root->r);
		bool own_line = false;
		for (uint32_t j = 0; j < gr->nmembers; j++) {
			uint32_t ms = site_of(m, gr->members[j]);
			if (ms >= nmap || idx[ms] == SIZE_MAX)
				continue;
			ag.members[ag.nmembers] = ms;
			ag.member_kinds[ag.nmembers] = gr->members[j];
			ag.member_births[ag.nmembers++] = gr->member_births[j];
			owned += gr->member_births[j];
			if (ms == rs)
				own_line = true;
			else
				score += advise_generous_ns(&a->sites[idx[ms]].r);
		}
		if (!ag.nmembers || 2 * owned < gr->root_births ||
		    score < MEASURE_FLOOR * (double)a->program_cpu_ns || score < MEASURE_FLOOR_NS)
			continue;
		if (ng == max) {
			a->graphs_dropped++;
			continue;
		}
		/* blocks of the root's own line: each kind named by what the
		 * line called */
		if (own_line) {
			ag.root_via = ap_xstrdup(callee_of(m, gr->root));
			for (size_t j = 0; j < ag.nmembers; j++)
				if (ag.members[j] == rs)
					ag.member_via[j] = ap_xstrdup(callee_of(m, ag.member_kinds[j]));
		}
		/* kinds said alike (a string made in a vector's growth and
		 * one made after it) are one member in the text (the runner
		 * keeps them apart: gr) */
		for (size_t j = 1; j < ag.nmembers; j++)
			for (size_t i = 0; i < j; i++) {
				const char *vi = ag.member_via[i] ? ag.member_via[i] : "",
					   *vj = ag.member_via[j] ? ag.member_via[j] : "";
				if (ag.members[i] != ag.members[j] || strcmp(vi, vj))
					continue;
				ag.member_births[i] += ag.member_births[j];
				free(ag.member_via[j]);
				for (size_t q = j + 1; q < ag.nmembers; q++) {
					ag.members[q - 1] = ag.members[q];
					ag.member_kinds[q - 1] = ag.member_kinds[q];
					ag.member_births[q - 1] = ag.member_births[q];
					ag.member_via[q - 1] = ag.member_via[q];
				}
				ag.member_via[--ag.nmembers] = NULL;
				j--;
				break;
			}
		/* the members the most born first */
		for (size_t i = 1; i < ag.nmembers; i++)
			for (size_t j = i; j > 0 && ag.member_births[j] > ag.member_births[j - 1]; j--) {
				uint32_t ts = ag.members[j], tk = ag.member_kinds[j];
				uint64_t tb = ag.member_births[j];
				char *tv = ag.member_via[j];
				ag.members[j] = ag.members[j - 1];
				ag.member_kinds[j] = ag.member_kinds[j - 1];
				ag.member_births[j] = ag.member_births[j - 1];
				ag.member_via[j] = ag.member_via[j - 1];
				ag.members[j - 1] = ts;
				ag.member_kinds[j - 1] = tk;
				ag.member_births[j - 1] = tb;
				ag.member_via[j - 1] = tv;
			}
		g[ng] = gr;
		a->graphs[ng++] = ag;
	}
	free(idx);
	return ng;
}

void ap_advise_measure(struct ap_advice *a, const struct ap_trace *t, const struct ap_site_map *m,
		       const struct ap_advise_options *o, const struct ap_measure_opts *mo,
		       size_t max_sites)
{
	if (a->sampled) {
		snprintf(a->measure_why, sizeof(a->measure_why),
			 "a sampled trace cannot be replayed: times are the cost model's estimates "
			 "(record with --all to measure them)");
		return;
	}
	struct cand *c = ap_xcalloc(a->nsites ? a->nsites : 1, sizeof(*c));
	size_t nc = 0, below = 0;
	for (size_t i = 0; i < a->nsites; i++) {
		const struct ap_advise_site *s = &a->sites[i];
		if (!worth_measuring(s))
			continue;
		double score = advise_generous_ns(&s->r);
		/* A handful of objects: whatever a replay measures there is
		 * how holding them moves the rest of the heap, not the pool's
		 * work (a Rust program's runtime start-up block, 3 hits: "costs
		 * 2.3ms" in a 156ms run, every time). */
		if (score < MEASURE_FLOOR * (double)a->program_cpu_ns || score < MEASURE_FLOOR_NS) {
			below++;
			continue;
		}
		c[nc].i = i;
		c[nc++].score = score;
	}
	qsort(c, nc, sizeof(*c), cand_cmp);
	if (nc > max_sites)
		nc = max_sites;
	if (!nc) {
		if (max_sites && below)
			snprintf(a->measure_why, sizeof(a->measure_why),
				 "%zu site%s where a pool would reuse objects, none that the model "
				 "expects to save a ten-thousandth of the run and %.0fus", below,
				 below == 1 ? "" : "s", MEASURE_FLOOR_NS / 1e3);
		else
			snprintf(a->measure_why, sizeof(a->measure_why),
				 max_sites ? "no site where a pool would find objects to reuse"
					   : "not asked for (--measure-sites 0)");
		free(c);
		return;
	}
	if (mo->skip_why) {
		snprintf(a->measure_why, sizeof(a->measure_why), "%s", mo->skip_why);
		free(c);
		return;
	}

	/* Every replay from here on is in the budget, and the making of
	 * their script: the probe, the fit, the rounds, the runs under the
	 * sampler, the runner's probes, the second measurement of a site
	 * written whole. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct ap_measure_opts mb = *mo;
	a->measure_budget_ns = mo->budget_ns;
	if (mo->budget_ns > 0 && !(mb.deadline_ns > 0))
		mb.deadline_ns = (double)t0.tv_sec * 1e9 + (double)t0.tv_nsec + mo->budget_ns;
	mo = &mb;
	struct ap_error err = { "" };
	size_t ncyc = 0;
	uint64_t count = 0;
	double *cyc = ap_advise_cycles(t, a->joins, a->njoins, o, &ncyc, &count, &err);
	/* The naps of a program off its CPU (a process waiting on its
	 * children) are slept in every run: within a share of the budget
	 * (ap_advise_sleep_max; the fit's replays counted where there may
	 * be some: one thread, its faults known). */
	uint64_t sleep_max = ap_advise_sleep_max(mo->budget_ns, mo->min_rounds, nc,
						 t->nthreads == 1 && a->has_program_minflt
							 ? AP_TOUCH_FIT_RUNS
							 : 0);
	struct ap_script *sc = !cyc ? NULL
				    : ap_script_build(t, KINDS(m), NKINDS(m), a->joins,
						      a->njoins, cyc, ncyc, AP_MEASURE_MAX_EVENTS,
						      sleep_max, &err);
	if (sc)
		ap_script_set_kinds(sc, m->site_of_kind, m->nkinds, m->nsites);
	sc = stopped(t, sc, &err);
	double built_ns = mono_ns() - ((double)t0.tv_sec * 1e9 + (double)t0.tv_nsec);
	struct ap_run_cost probe;
	bool probed = false;
	double run_ns = 0;
	uint64_t probe_events = sc ? ap_script_events(sc) : 0;
	if (sc)
		sc = fit_budget(a, t, m, cyc, ncyc, mo, nc, sleep_max, sc, &probe, &probed, &run_ns, built_ns,
				&err);
	free(cyc);
	if (!sc) {
		snprintf(a->measure_why, sizeof(a->measure_why), "%s", err.msg);
		free(c);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		a->measure_wall_ns =
			(double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
		return;
	}
	a->script_ops = ap_script_ops(sc);
	a->script_work_ns = ap_script_work_ns(sc);
	a->script_sleep_ns = ap_script_sleep_ns(sc);
	a->script_sleep_wanted_ns = ap_script_sleep_wanted_ns(sc);
	/* A long run is measured on its first events (AP_MEASURE_MAX_EVENTS,
	 * or fewer to keep to the budget): the saving is scaled to the whole
	 * run, and said so. */
	a->measure_share = t->nev ? (double)ap_script_events(sc) / (double)t->nev : 1;
	a->measure_cut_bytes = ap_script_cut_bytes(sc);
	a->measure_live_max = ap_script_live_max(sc);
	/* Every candidate's vpool first (each with its size classes rounded
	 * up after it, where measured), then the free lists of those whose
	 * objects stay in their thread (fl_of[k] the one of candidate k or
	 * 0): a budget that does not fit them all leaves out the jobs at the
	 * end, the free lists before any vpool. */
	/* Object graphs pooled whole go first (jobs[0..ng)): each stands
	 * for several sites, and what it saves the sites' own pools do not
	 * add up to (bench/twins' ctxgraph). */
	const struct ap_graph *gsc[MEASURE_GRAPHS];
	size_t ng = pick_graphs(a, sc, m, gsc, max_sites);
	a->ngraphs = ng;
	struct ap_measure_job *jobs = ap_xcalloc(ng + 3 * nc, sizeof(*jobs));
	struct ap_measured *out = ap_xcalloc(ng + 3 * nc, sizeof(*out));
	/* candidate k's vpool (its job jobs[vp_of[k]]), its size classes
	 * rounded up (rm_of[k]) and its free list (fl_of[k]), or 0 */
	struct ap_measure_job *vj = ap_xcalloc(nc ? nc : 1, sizeof(*vj));
	size_t *vp_of = ap_xcalloc(nc ? nc : 1, sizeof(*vp_of));
	size_t *fl_of = ap_xcalloc(nc ? nc : 1, sizeof(*fl_of));
	size_t *rm_of = ap_xcalloc(nc ? nc : 1, sizeof(*rm_of));
	for (size_t k = 0; k < ng; k++) {
		jobs[k].site = gsc[k]->root;
		jobs[k].graph = gsc[k];
		jobs[k].cap = o->max_keep;
	}
	size_t nj = ng;
	for (size_t k = 0; k < nc; k++) {
		const struct ap_advise_site *s = &a->sites[c[k].i];
		vj[k].site = s->site_id;
		/* the model's cap; or, at a site it did not judge a pool (by
		 * size or cost), the cap that pays: the pool one would build */
		bool cap = s->verdict == AP_VERDICT_POOL_CAP ||
			   (s->verdict != AP_VERDICT_POOL && s->verdict != AP_VERDICT_SIZE_CLASSES &&
			    advise_cap_pays(s));
		vj[k].cap = cap ? s->cap : o->max_keep;
		if (s->verdict == AP_VERDICT_SIZE_CLASSES) {
			vj[k].nclasses = s->nclasses < 4 ? s->nclasses : 4;
			memcpy(vj[k].classes, s->classes, vj[k].nclasses * sizeof(*s->classes));
		}
		/* A Rust site whose objects stay in their thread: its own
		 * free list is the verdict's measurement
		 * (ap_advise_site.own_list), in vpool's place, and vpool
		 * beside it (not a Rust frame's call of a C library: its
		 * blocks are the library's to keep). */
		vj[k].free_list = !ap_advise_handed(s) && s->rust && !s->via;
		vp_of[k] = nj;
		jobs[nj++] = vj[k];
		/* Where one pool would hand blocks much larger than asked (the
		 * model's part of advise_larger_shape), a pool per size class
		 * with requests rounded up to the class, as a hand-pooler
		 * builds one there (bench/twins' lru): the verdict's where it
		 * pays and the one pool's blocks are too large
		 * (advise_round_wins), so measured as the pools are, right
		 * after its site's (a budget that leaves out the jobs at the
		 * end keeps the model's first sites with theirs). */
		if (larger_shape_likely(a, s) && advise_round_fits(s)) {
			jobs[nj] = vj[k];
			jobs[nj].nclasses = s->nround_classes;
			memcpy(jobs[nj].classes, s->round_classes,
			       s->nround_classes * sizeof(*s->round_classes));
			jobs[nj].round_up = true;
			rm_of[k] = nj++;
		}
	}
	/* The free lists beside the pools, where the objects stay in their
	 * thread (a Rust site's: vpool beside its own list). */
	for (size_t k = 0; k < nc; k++)
		if (!ap_advise_handed(&a->sites[c[k].i])) {
			jobs[nj] = vj[k];
			jobs[nj].free_list = !vj[k].free_list;
			jobs[nj].beside = true;
			fl_of[k] = nj++;
		}
	struct ap_measure_opts o2 = *mo;
	o2.stop = &t->events_stop;
	/* (a probe of a script cut to AP_MEASURE_MAX_EVENTS is not one of
	 * the whole run: not fitted then) */
	bool whole = probed && probe_events >= t->nev;
	a->measure_probe_faults = whole ? probe.minflt : 0;
	a->script_threads = ap_script_threads(sc);
	fit_touch(a, t, sc, mo, whole ? &probe : NULL, run_ns, &o2.touch);
	if (mo->budget_ns > 0) {
		double left = mo->deadline_ns - mono_ns();
		o2.budget_ns = left > 0 ? left : 1;
	}
	/* (rounds, the runs under the sampler and the runner's probes as
	 * fit what is left: fewer than min_rounds rounds when it is little,
	 * the header says so) */
	o2.run_ns = run_ns;
	/* A site that may be measured again written whole (measure_whole)
	 * keeps the time of that measurement's rounds for it: rounds past
	 * min_rounds stop short of it (relay at --measure-time 8s: 23
	 * rounds, and none left for the second measurement). Whether it is
	 * one is known once measured (its replay's peak memory); the
	 * model's part is known now. */
	for (size_t k = 0; k < nc && o2.deadline_ns > 0; k++)
		if (larger_shape_likely(a, &a->sites[c[k].i])) {
			o2.reserve_pairs = WHOLE_SLOWER * o2.min_rounds;
			break;
		}
	struct ap_measure_cut cut = { 0 };
	o2.cut = &cut;
	int rc = ap_measure(sc, jobs, nj, &o2, out, &a->base, &a->recorded, &err);
	o2.cut = NULL;
	a->budget_rounds_cut = cut.rounds_cut;
	a->budget_rounds = cut.rounds;
	a->budget_rounds_wanted = cut.rounds_wanted;
	a->budget_recorded = cut.recorded;
	a->budget_probes = cut.probes;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->measure_wall_ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	if (cut.rounds_cut && cut.rounds < 2) {
		/* (a round of each leaves none measured: one difference has no
		 * interval) */
		char d[AP_ADVISE_BUDGET_WORDS], r[32], took[96] = "";
		ap_advise_budget_words(d, a, mo->budget_ns);
		if (rc == 0 || run_ns > 0) {
			ap_advise_format_duration(r, sizeof(r), rc == 0 ? a->base.wall_ns : run_ns);
			snprintf(took, sizeof(took), "a replay of the %llu events measured takes ~%s; ",
				 (unsigned long long)ap_script_events(sc), r);
		}
		snprintf(a->measure_why, sizeof(a->measure_why),
			 "%s spent %s (%stwo rounds of the baseline and a site make a "
			 "measurement): a longer --measure-time measures it", d,
			 cut.rounds ? "after one round" : "before a round", took);
		a->measure_dropped = 0;
	} else if (rc < 0) {
		snprintf(a->measure_why, sizeof(a->measure_why), "%s", err.msg);
	}
	if (rc == 0 && !(cut.rounds_cut && cut.rounds < 2)) {
		for (size_t k = 0; k < ng; k++) {
			if (!out[k].ok) {
				a->graphs_dropped++;
				continue;
			}
			a->graphs[k].measured = true;
			a->graphs[k].m = out[k];
			scale_share(a, &a->graphs[k].m);
		}
		for (size_t k = 0; k < nc; k++) {
			struct ap_advise_site *s = &a->sites[c[k].i];
			if (!out[vp_of[k]].ok) {
				a->measure_dropped++;
				continue;
			}
			s->measured = true;
			s->own_list = vj[k].free_list;
			s->m = out[vp_of[k]];
			scale_share(a, &s->m);
			s->fl_state = !fl_of[k]		 ? AP_FL_CROSSES
				      : out[fl_of[k]].ok ? AP_FL_MEASURED
							 : AP_FL_BUDGET;
			if (s->fl_state == AP_FL_MEASURED) {
				s->fl = out[fl_of[k]];
				scale_share(a, &s->fl);
			}
			s->round_state = !rm_of[k]	     ? AP_FL_NOT_MEASURED
					 : out[rm_of[k]].ok ? AP_FL_MEASURED
							    : AP_FL_BUDGET;
			if (s->round_state == AP_FL_MEASURED) {
				s->rm = out[rm_of[k]];
				scale_share(a, &s->rm);
			}
			a->measured++;
		}
		if (a->program_cpu_ns && a->recorded.cpu_ns > 0) {
			/* Recording measured as costing nothing (noise) takes
			 * nothing off. Measured on part of the run, the cost
			 * and the baseline are scaled to all of it. */
			double share = a->measure_share > 0 && a->measure_share < 1 ? a->measure_share : 1;
			double cost = a->recorded.cpu_ns > a->base.cpu_ns ? a->recorded.cpu_ns - a->base.cpu_ns : 0;
			/* and the program's unwinding, which the replay's one call
			 * site (always in the sampler's stack cache) does not do:
			 * bench/twins' jsonnodes, a recursive parser, recorded at
			 * 2,936 ms of CPU (703 ms native), 1,636 of it unwinding,
			 * its replay at 3.8 times its own without it */
			double est = (double)a->program_cpu_ns - cost / share - (double)a->program_unwind_ns,
			       floor = a->base.cpu_ns / share;
			a->program_cpu_est_ns = (uint64_t)(est > floor ? est : floor);
		}
		/* (classes that win were measured written whole: not again) */
		for (size_t k = 0; k < nc; k++)
			if (out[vp_of[k]].ok && rm_of[k]) {
				measure_round_whole(a, &a->sites[c[k].i], sc, &jobs[rm_of[k]], &o2);
				advise_round_wins(a, &a->sites[c[k].i]);
			}
		for (size_t k = 0; k < nc; k++)
			if (out[vp_of[k]].ok)
				measure_whole(a, &a->sites[c[k].i], sc, &vj[k],
					      fl_of[k] ? &jobs[fl_of[k]] : NULL, &o2);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		a->measure_wall_ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
		for (size_t k = 0; k < nc; k++)
			if (out[vp_of[k]].ok)
				advise_judge_measured(a, &a->sites[c[k].i]);
		advise_rank(a);
	}
	/* (measured or not: a graph left out, or whose measurement failed,
	 * says so) */
	advise_judge_graphs(a);
	ap_script_free(sc);
	free(jobs);
	free(out);
	free(vj);
	free(vp_of);
	free(fl_of);
	free(rm_of);
	free(c);
}
