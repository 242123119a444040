/* `allocprof advise`: which allocation sites a pool would pay at, and why
 * or why not (the replay and verdicts are in report/advise*.c; this file
 * parses options, loads the cost table and renders the model). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ap_advise.h"
#include "commands.h"
#include "render.h"
#include "views.h"

enum {
	OPT_MIN_SHARE = AP_VOPT_FIRST_OWN,
	OPT_MAX_KEEP,
	OPT_GC,
	OPT_PROCS,
	OPT_SITE,
	OPT_MEASURE_SITES,
};

static void advise_usage(FILE *f)
{
	fputs("usage: allocprof advise [OPTIONS] TRACE...\n\n"
	      "Replays each allocation site of TRACE through a model of a victim-cache\n"
	      "pool (pool/vpool.h, after Go's sync.Pool) and tells, per\n"
	      "site, whether a pool would pay and why: hits and misses, allocations,\n"
	      "reallocs and bytes avoided, memory the pool would hold, the CPU time it\n"
	      "saves, and a verdict: pool, pool with cap N, size classes, no: costs more,\n"
	      "within noise, unsure: replay faults, unsure: larger blocks,\n"
	      "no: too rare,\n"
	      "no: too small, no: escapes, no: little to gain, unsure: too few samples,\n"
	      "elsewhere.\n"
	      "Not measured, \"no: too small\" is objects up to 256 bytes that do not grow\n"
	      "(glibc's per-thread cache), or up to 1 KiB whose pool would save a request,\n"
	      "over its hits and misses, less than its own get and put (within the cost\n"
	      "model's error); \"no: costs more\" one that would save nothing.\n"
	      "The time is measured: for a trace of every allocation (record --all) the\n"
	      "run's allocation sequence is replayed on this machine's malloc, with and\n"
	      "without a real pool (pool/vpool.h) at each site the model finds worth it,\n"
	      "interleaved and repeated; the saving comes with its interval and decides\n"
	      "the verdict. Sites a pool pays at come first, by measured saving.\n"
	      "Where a site's objects stay in their thread, a free list of each thread's\n"
	      "own spares is measured beside the pool, its saving on a line under the\n"
	      "pool's: not the verdict, which is the pool's (pool/vpool.h, allocprof try);\n"
	      "at a Rust site, whose pool is the program's own (a Vec of spares), the\n"
	      "list is the verdict's and vpool the line beside it.\n"
	      "Objects that own the blocks of other sites (born after them, freed with\n"
	      "them: a request's context and its buffers) are object graphs: the biggest\n"
	      "are measured pooled whole and printed first, lettered (pool whole, no:\n"
	      "costs more, within noise, unsure: replay faults), their sites keeping\n"
	      "their own verdicts.\n"
	      "A sampled trace is replayed from a reconstruction: numbers are estimates,\n"
	      "and times are the cost model's.\n"
	      "A run of several processes (TRACE and its child traces, or several\n"
	      "TRACEs) is advised process by process: a pool does not cross processes.\n\n"
	      "The words, in C terms:\n"
	      "  P        what owns a private slot and a shared list of the pool: in\n"
	      "           vpool.h a thread's slot and a CPU's list; each event runs on\n"
	      "           the P of the CPU it ran on\n"
	      "  cycle    when the pool ages what it holds (Go: a garbage collection;\n"
	      "           vpool.h: vpool_cycle()); an object returned and not taken\n"
	      "           again survives one cycle and is dropped at the second\n"
	      "  private, shared, stolen, victim\n"
	      "           where a hit came from: this thread's slot, this CPU's list,\n"
	      "           another CPU's list, what the last cycle set aside\n\n"
	      "options:\n"
	      "  -n N                 show the top N sites (default 10; 0: all)\n"
	      "  --min-share PCT      leave out sites below PCT% of the bytes allocated\n"
	      "  --max-keep BYTES     evaluate a pool that drops objects above BYTES on Put\n"
	      "                       (default: a cap is found when capacities are skewed)\n"
	      "  --gc=gogc:N          a cycle when the heap reaches max(live*(1+N/100), 4MiB*N/100)\n"
	      "                       (default gogc:100, as Go)\n"
	      "  --gc=interval:D      a cycle every D (e.g. 500ms) from the trace's start\n"
	      "  --procs N            number of Ps (default: the trace's CPU count; a\n"
	      "                       single-threaded trace runs on one)\n"
	      "  --site=callsite      one pool per call site (default)\n"
	      "  --site=stack         one pool per whole stack\n"
	      "  --measure-time D     time budget of the measured replay, every run of it\n"
	      "                       counted (default 15s; it stops sooner once every\n"
	      "                       interval is tight, replays the first part of a run\n"
	      "                       too long for it, and says what it left out; one\n"
	      "                       budget for a run of several processes)\n"
	      "  --measure-sites N    measure at most N sites (default 6), and N object\n"
	      "                       graphs (two at most)\n"
	      "  --replay-cpus N|all  run the measured replay on the first N CPUs advise may\n"
	      "                       use, or on all (default: as many as the recorded run\n"
	      "                       could use, which the trace says: threads that hand\n"
	      "                       objects to each other cost more on CPUs apart)\n"
	      "  --no-measure         no measured replay: times from the cost model\n"
	      "  --drop-frames REGEX  treat functions matching REGEX as allocator wrappers\n"
	      "  --debug-dir DIR      look for separate debug files in DIR too\n"
	      AP_VIEW_NAMES_HELP
	      AP_VIEW_RUN_HELP
	      "  --json               print JSON (see docs/json.md)\n"
	      "  -h, --help           show this help\n\n"
	      "The model, the measured replay and the verdicts: docs/pool-model.md. The\n"
	      "cost model (sampled traces, and the model's first pass) comes from\n"
	      "$XDG_CACHE_HOME/allocprof/costs.json (measured on first use; 'allocprof\n"
	      "calibrate' redoes it), or from the file named by ALLOCPROF_TEST_COSTS.\n", f);
}

static void say_measuring(void *ctx, const char *cache, const char *why)
{
	(void)ctx;
	if (why)
		fprintf(stderr, "allocprof: %s: measuring allocation costs again\n", why);
	else
		fprintf(stderr, "allocprof: measuring allocation costs on this machine once "
				"(cached in %s)\n", cache ? cache : "nowhere: no HOME directory, no XDG_CACHE_HOME");
}

/* The cost table (ap_cost_get). Returns 0 or prints the error and returns
 * -1. */
int ap_advise_load_costs(struct ap_cost_table *c)
{
	struct ap_error err, save_err;
	if (ap_cost_get(c, say_measuring, NULL, &err, &save_err) < 0) {
		ap_print_error(&err);
		return -1;
	}
	if (save_err.msg[0])
		ap_print_error(&save_err);
	return 0;
}

/* "s" unless n is 1 (as printed with %.0f). */
static const char *plural(double n)
{
	return n >= 0.5 && n < 1.5 ? "" : "s";
}

/* What --measure-time left out, every replay counted against it: said
 * line by line under the header's "Measured". */
static void budget_cut_text(const struct ap_advice *a)
{
	char d[AP_ADVISE_BUDGET_WORDS];
	ap_advise_budget_words(d, a, a->measure_budget_ns);
	if (a->budget_rounds_cut)
		printf("  %u round%s, not the %u wanted: %s was spent (an interval "
		       "from fewer rounds is wider and less sure, its confidence shown)\n",
		       a->budget_rounds, plural(a->budget_rounds), a->budget_rounds_wanted, d);
	if (a->budget_recorded)
		printf("  what recording cost not measured: a replay under the sampler did not fit "
		       "in %s (the shares are of the recorded run's CPU time, "
		       "recording included)\n", d);
	if (a->budget_probes)
		printf("  the runner's switch or fault probes cut short by %s\n", d);
	if (a->budget_fit)
		printf("  the share of each block written not fitted to the run's page faults: its "
		       "replays did not fit in %s\n", d);
	if (a->budget_whole_left)
		printf("  %zu site%s with larger pooled blocks not measured again written whole: "
		       "%s was spent\n", a->budget_whole_left,
		       plural((double)a->budget_whole_left), d);
	if (a->budget_whole_rounds_cut)
		printf("  measured again written whole in %u round%s, not the %u wanted: %s was "
		       "spent (its interval wider, its confidence shown)\n", a->budget_whole_rounds,
		       plural(a->budget_whole_rounds), a->budget_rounds_wanted, d);
	/* once here, not under each such site (six times over on cppcheck) */
	size_t fl = 0, vp = 0;
	for (size_t i = 0; i < a->nsites; i++) {
		const struct ap_advise_site *s = &a->sites[i];
		bool left = s->measured && s->fl_state == AP_FL_BUDGET;
		fl += left && !s->own_list;
		vp += left && s->own_list;
	}
	if (fl)
		printf("  a free list kept by each thread not measured at %zu site%s whose objects stay "
		       "in their thread: %s was spent (vpool is measured first)\n", fl,
		       plural((double)fl), d);
	if (vp)
		printf("  vpool not measured beside %zu Rust site%s own free list%s: %s was spent (the "
		       "free list is measured first)\n", vp, vp == 1 ? "'s" : "s'", vp == 1 ? "" : "s", d);
}

/* The object graphs measured (printed before the sites). */
static size_t graphs_measured(const struct ap_advice *a)
{
	size_t n = 0;
	for (size_t k = 0; k < a->ngraphs; k++)
		n += a->graphs[k].measured;
	return n;
}

static unsigned measured_rounds(const struct ap_advice *a)
{
	for (size_t i = 0; i < a->nsites; i++)
		if (a->sites[i].measured)	/* (the first measurement's) */
			return a->sites[i].whole_measured ? a->sites[i].mw.rounds : a->sites[i].m.rounds;
	for (size_t k = 0; k < a->ngraphs; k++)
		if (a->graphs[k].measured)	/* (a budget that measured a graph alone) */
			return a->graphs[k].m.rounds;
	return 0;
}

/* A measured variant's saving with its interval, rounds and runs. */
static json_t *saving_json(const struct ap_measured *m)
{
	json_t *o = json_object();
	json_object_set_new(o, "time_saved_ns", json_integer(ap_view_round(m->saved_ns)));
	json_object_set_new(o, "time_saved_low_ns", json_integer(ap_view_round(m->low_ns)));
	json_object_set_new(o, "time_saved_high_ns", json_integer(ap_view_round(m->high_ns)));
	json_object_set_new(o, "rounds", json_integer(m->rounds));
	json_object_set_new(o, "confidence", json_real(m->conf));
	json_object_set_new(o, "pooled", ap_advise_cost_json(&m->cost));
	return o;
}

static const char *graph_verdict_words(const struct ap_advise_graph *g)
{
	if (!g->measured)
		return "not measured";
	return g->verdict == AP_VERDICT_POOL	     ? "pool whole"
	       : g->verdict == AP_VERDICT_COSTS_MORE ? "no: costs more"
	       : g->verdict == AP_VERDICT_FAULTS     ? "unsure: replay faults"
						     : "within noise";
}

/* Object graphs measured whole (report/advise_graph.c), before the
 * sites: each stands for several of them. */
static void graphs_text(const struct ap_advice *a)
{
	if (!a->ngraphs && !a->graphs_dropped)
		return;
	printf("\nObject graphs (objects that own the blocks of other sites), pooled whole; each "
	       "site's own pool is below:\n");
	for (size_t k = 0; k < a->ngraphs; k++) {
		const struct ap_advise_graph *g = &a->graphs[k];
		const struct ap_advise_site *r = ap_advise_site_by_id(a, g->root);
		if (g->root_via)
			printf("\n%c. %s, its blocks via %s, and the blocks its objects own\n", (int)('a' + k),
			       r ? r->name : "?", g->root_via);
		else
			printf("\n%c. %s and the blocks its objects own\n", (int)('a' + k), r ? r->name : "?");
		printf("   verdict: %s\n", graph_verdict_words(g));
		printf("   %s\n", g->reasons ? g->reasons : "");
	}
	if (a->graphs_dropped)
		printf("\n(%zu more object graph%s not measured: --measure-time)\n", a->graphs_dropped,
		       plural((double)a->graphs_dropped));
}

static json_t *graphs_json(const struct ap_advice *a)
{
	json_t *v = json_array();
	for (size_t k = 0; k < a->ngraphs; k++) {
		const struct ap_advise_graph *g = &a->graphs[k];
		json_t *o = json_object(), *mem = json_array();
		const struct ap_advise_site *r = ap_advise_site_by_id(a, g->root);
		json_object_set_new(o, "root", json_string(r ? r->name : "?"));
		json_object_set_new(o, "root_objects", json_integer((json_int_t)g->root_births));
		if (g->root_via)
			json_object_set_new(o, "root_via", json_string(g->root_via));
		for (size_t j = 0; j < g->nmembers; j++) {
			json_t *x = json_object();
			const struct ap_advise_site *ms = ap_advise_site_by_id(a, g->members[j]);
			json_object_set_new(x, "site", json_string(ms ? ms->name : "?"));
			json_object_set_new(x, "blocks_owned", json_integer((json_int_t)g->member_births[j]));
			if (g->member_via[j])
				json_object_set_new(x, "via", json_string(g->member_via[j]));
			json_array_append_new(mem, x);
		}
		json_object_set_new(o, "members", mem);
		json_object_set_new(o, "verdict", json_string(graph_verdict_words(g)));
		json_object_set_new(o, "reasons", ap_json_text(g->reasons));
		if (g->measured) {
			/* the saving at the top, as a site's is */
			json_t *mo = saving_json(&g->m);
			static const char *const top[] = { "time_saved_ns", "time_saved_low_ns",
							   "time_saved_high_ns" };
			for (size_t j = 0; j < sizeof(top) / sizeof(*top); j++) {
				json_object_set(o, top[j], json_object_get(mo, top[j]));
				json_object_del(mo, top[j]);
			}
			if (g->excess_faults > 0) {
				json_object_set_new(mo, "excess_faults", json_integer(ap_view_round(g->excess_faults)));
				json_object_set_new(mo, "excess_faults_ns",
						    json_integer(ap_view_round(g->excess_faults_ns)));
			}
			json_object_set_new(o, "measured", mo);
		} else {
			json_object_set_new(o, "measured", json_null());
		}
		json_array_append_new(v, o);
	}
	return v;
}

static void print_text(const struct ap_advice *a, const struct ap_trace *t, size_t n)
{
	char b1[32], d[32];
	const char *exe = strrchr(t->exe, '/');
	printf("File: %s\n", exe ? exe + 1 : t->exe);
	if (a->gc_mode == AP_GC_GOGC)
		printf("Cycles: gogc:%llu, %llu in the trace", (unsigned long long)a->gogc,
		       (unsigned long long)a->cycles);
	else {
		ap_advise_format_duration(d, sizeof(d), (double)a->interval_ns);
		printf("Cycles: every %s, %llu in the trace", d, (unsigned long long)a->cycles);
	}
	if (a->cycles) {
		ap_advise_format_duration(d, sizeof(d), a->mean_cycle_ns);
		printf(" (one every %s); %u P%s%s\n", d, a->procs, plural(a->procs),
		       a->one_p ? ", one thread: replayed on one" : "");
	} else {
		ap_advise_format_duration(d, sizeof(d), (double)a->duration_ns);
		printf(" (none in its %s); %u P%s%s\n", d, a->procs, plural(a->procs),
		       a->one_p ? ", one thread: replayed on one" : "");
	}
	if (a->costs_measured_at > 0) {
		char when[32];
		time_t tt = (time_t)a->costs_measured_at;
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", localtime_r(&tt, &tm));
		double sp = 100 * a->costs_spread;
		printf("Costs: measured %s, spread +-%.*f%% (median of %u rounds; allocprof "
		       "calibrate measures again)\n", when, sp < 1 ? 1 : 0, sp, a->costs_rounds);
	} else {
		printf("Costs: a fixed table (ALLOCPROF_TEST_COSTS), of unknown date and spread\n");
	}
	if (a->njoins)
		printf("Grown by copy: %zu allocation%s continue%s an object the program grew by hand "
		       "(a new block, a copy, a free: std::string, std::vector, asprintf's buffer), "
		       "taken as its growth%s\n", a->njoins, plural((double)a->njoins), a->njoins == 1 ? "s" : "",
		       plural((double)a->njoins));
	if (a->measured || graphs_measured(a)) {
		ap_advise_format_duration(d, sizeof(d), a->measure_wall_ns);
		struct ap_buf cpus = AP_BUF_INIT;
		ap_advise_replay_cpus_words(a, &cpus);
		size_t ng = graphs_measured(a);
		char what[96] = "";
		if (a->measured)
			snprintf(what, sizeof(what), "%zu site%s", a->measured, plural((double)a->measured));
		if (ng)
			snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%zu object graph%s",
				 a->measured ? " and " : "", ng, plural((double)ng));
		printf("Measured: %s, %u rounds of replays of the run's %llu allocator calls (%s), %s\n", what,
		       measured_rounds(a), (unsigned long long)a->base.calls, d, cpus.buf);
		ap_buf_release(&cpus);
		if (a->script_work_ns > 0) {
			ap_advise_format_duration(d, sizeof(d), a->script_work_ns);
			printf("  with the program's own time between its calls, as recorded: %s spun "
			       "between them (ALLOCPROF_REPLAY_WORK=1)\n", d);
		}
		if (a->touch_share < 1 && a->touch_faults_all > 0 && a->measure_share < 1)
			printf("  writing the first %.4g%% of each new block's bytes, not all of them: a "
			       "replay of those events that wrote every page faulted %.0f times, the "
			       "recorded run ~%.0f in them (%llu in all, as a replay of all of them "
			       "writing every page shares them) (one thread: the same calls, so the "
			       "pages the program did not write)\n",
			       100 * a->touch_share, a->touch_faults_all, a->touch_faults_run,
			       (unsigned long long)a->program_minflt);
		else if (a->touch_share < 1 && a->touch_faults_all > 0)
			printf("  writing the first %.4g%% of each new block's bytes, not all of them: a "
			       "replay that wrote every page faulted %.0f times, the recorded run %llu "
			       "(one thread: the same calls, so the pages the program did not write)\n",
			       100 * a->touch_share, a->touch_faults_all,
			       (unsigned long long)a->program_minflt);
		else if (a->touch_share < 1)
			printf("  writing the first %.4g%% of each new block's bytes "
			       "(ALLOCPROF_REPLAY_TOUCH)\n", 100 * a->touch_share);
		if (a->script_sleep_ns > 0 && a->script_sleep_wanted_ns > a->script_sleep_ns) {
			char w[32];
			ap_advise_format_duration(d, sizeof(d), (double)a->script_sleep_ns);
			ap_advise_format_duration(w, sizeof(w), (double)a->script_sleep_wanted_ns);
			printf("  with the program's time off its CPU, shortened: %s slept a run at its "
			       "longest gaps between calls, of the recorded %s, each gap alike (a run "
			       "sleeps half of --measure-time over the rounds at most, and 1s; a CPU "
			       "back from idle is cold)\n", d, w);
		} else if (a->script_sleep_ns > 0) {
			ap_advise_format_duration(d, sizeof(d), (double)a->script_sleep_ns);
			printf("  with the program's time off its CPU, as recorded: %s slept at its longest "
			       "gaps between calls (a CPU back from idle is cold)\n", d);
		}
		if (a->measure_share < 1 && a->measure_full_run_ns > 0) {
			ap_advise_format_duration(d, sizeof(d), a->measure_full_run_ns);
			printf("  on the first %.2g%% of the run's events (a replay of %llu events takes %s, "
			       "too long for --measure-time): savings scaled to the whole run\n",
			       100 * a->measure_share, (unsigned long long)a->measure_probe_events, d);
		} else if (a->measure_share < 1 && a->measure_cut_bytes) {
			printf("  on the first %.2g%% of the run's events (a replay of more would keep "
			       "more than %llu K blocks live, %llu MiB of advise's memory): savings "
			       "scaled to the whole run\n", 100 * a->measure_share,
			       (unsigned long long)(a->measure_live_max / 1000),
			       (unsigned long long)(AP_MEASURE_LIVE_BYTES >> 20));
		} else if (a->measure_share < 1) {
			printf("  on the first %.0f%% of the run's events (a replay takes at most %llu): "
			       "savings scaled to the whole run\n", 100 * a->measure_share,
			       (unsigned long long)AP_MEASURE_MAX_EVENTS);
		}
		if (a->measure_dropped)
			printf("  %zu more site%s worth measuring left out: a run takes too long for "
			       "--measure-time\n", a->measure_dropped, plural((double)a->measure_dropped));
		budget_cut_text(a);
		printf("Ranked: the sites a pool pays at first, by the CPU time it saves; then the "
		       "others, those measured first, by bytes allocated\n");
	} else {
		printf("Not measured: %s\n", a->measure_why);
	}
	if (a->sampled) {
		ap_format_bytes(b1, sizeof(b1), (double)a->rate);
		printf("Sampled (one sample per %s): results are estimates from a reconstruction,\n"
		       "  with the relative uncertainty shown per site\n", b1);
	}
	if (!a->nsites) {
		printf("No allocation sites%s.\n", a->hidden_sites ? " above --min-share" : "");
		return;
	}
	graphs_text(a);
	for (size_t i = 0; i < n; i++) {
		printf("\n");
		ap_render_advise_site(a, i, ap_render_print, NULL);
	}
	if (n < a->nsites)
		printf("\n(%zu more site%s; -n 0 shows all)\n", a->nsites - n,
		       plural((double)(a->nsites - n)));
}

/* --measure-time, and what it left out (budget_cut_text). */
static void budget_cut_json(const struct ap_advice *a, json_t *mj)
{
	json_object_set_new(mj, "budget_ns", a->measure_budget_ns > 0
						     ? json_integer(ap_view_round(a->measure_budget_ns))
						     : json_null());
	if (a->measure_budget_run_ns > 0)
		json_object_set_new(mj, "budget_run_ns", json_integer(ap_view_round(a->measure_budget_run_ns)));
	json_t *cj = json_object();
	json_object_set_new(cj, "rounds", a->budget_rounds_cut ? json_integer(a->budget_rounds) : json_null());
	json_object_set_new(cj, "rounds_wanted", json_integer(a->budget_rounds_wanted));
	json_object_set_new(cj, "recorded", json_boolean(a->budget_recorded));
	json_object_set_new(cj, "probes", json_boolean(a->budget_probes));
	json_object_set_new(cj, "touch_fit", json_boolean(a->budget_fit));
	json_object_set_new(cj, "whole_sites", json_integer((json_int_t)a->budget_whole_left));
	json_object_set_new(cj, "whole_rounds",
			    a->budget_whole_rounds_cut ? json_integer(a->budget_whole_rounds) : json_null());
	json_object_set_new(cj, "probe_stopped", json_boolean(a->budget_probe_killed));
	json_object_set_new(mj, "budget_cut", cj);
}

/* A held figure: null when a sampled trace does not know it. */
static json_t *held_json(double v, bool known)
{
	return known ? json_integer(ap_view_round(v)) : json_null();
}

static json_t *result_json(const struct ap_replay_result *r, bool held_known)
{
	json_t *o = json_object();
	json_object_set_new(o, "gets", json_integer(ap_view_round(r->gets)));
	json_t *h = json_object();
	for (int s = AP_POOL_PRIVATE; s < AP_POOL_NSRC; s++)
		json_object_set_new(h, ap_pool_src_name(s), json_integer(ap_view_round(r->hits[s])));
	json_object_set_new(o, "hits", json_integer(ap_view_round(r->gets - r->misses)));
	json_object_set_new(o, "hits_by_source", h);
	json_object_set_new(o, "small_hits", json_integer(ap_view_round(r->small_hits)));
	json_object_set_new(o, "misses", json_integer(ap_view_round(r->misses)));
	json_object_set_new(o, "hit_rate", json_real(r->hit_rate));
	json_object_set_new(o, "allocs_avoided", json_integer(ap_view_round(r->allocs_avoided)));
	json_object_set_new(o, "bytes_avoided", json_integer(ap_view_round(r->bytes_avoided)));
	json_object_set_new(o, "reallocs", json_integer(ap_view_round(r->reallocs)));
	json_object_set_new(o, "reallocs_avoided", json_integer(ap_view_round(r->reallocs_avoided)));
	json_object_set_new(o, "peak_held_bytes", held_json(r->peak_held_bytes, held_known));
	json_object_set_new(o, "mean_held_bytes", held_json(r->mean_held_bytes, held_known));
	json_object_set_new(o, "steady_peak_held_bytes",
			    held_json(r->steady_peak_held_bytes, held_known));
	json_object_set_new(o, "lost_to_cycles", json_integer(ap_view_round(r->lost_cycle)));
	json_object_set_new(o, "lost_to_p_changes", json_integer(ap_view_round(r->lost_pchange)));
	json_object_set_new(o, "lost_to_thread_exits", json_integer(ap_view_round(r->lost_exit)));
	json_object_set_new(o, "escaped", json_integer(ap_view_round(r->escaped)));
	json_object_set_new(o, "pooled_at_exit", json_integer(ap_view_round(r->pooled_at_exit)));
	json_object_set_new(o, "dropped_by_cap", json_integer(ap_view_round(r->dropped_cap)));
	json_object_set_new(o, "time_saved_ns", json_integer(ap_view_round(r->time_saved_ns)));
	json_object_set_new(o, "cycles_apart", json_real(r->gaps > 0 ? r->gap_cycles / r->gaps : 0));
	json_object_set_new(o, "far_requests", json_real(r->gaps > 0 ? r->far_gaps / r->gaps : 0));
	return o;
}

json_t *ap_advise_cost_json(const struct ap_run_cost *c)
{
	json_t *o = json_object();
	json_object_set_new(o, "cpu_ns", json_integer(ap_view_round(c->cpu_ns)));
	json_object_set_new(o, "wall_ns", json_integer(ap_view_round(c->wall_ns)));
	json_object_set_new(o, "minor_faults", json_integer(ap_view_round(c->minflt)));
	json_object_set_new(o, "minor_faults_min", json_integer(ap_view_round(c->minflt_lo)));
	json_object_set_new(o, "minor_faults_max", json_integer(ap_view_round(c->minflt_hi)));
	json_object_set_new(o, "minor_faults_q3", json_integer(ap_view_round(c->minflt_q3)));
	json_object_set_new(o, "peak_rss_bytes", json_integer(ap_view_round(c->maxrss_kb * 1024)));
	json_object_set_new(o, "allocator_calls", json_integer(ap_view_round(c->calls)));
	json_object_set_new(o, "pool_hits", json_integer(ap_view_round(c->hits)));
	json_object_set_new(o, "wakes", json_integer(ap_view_round(c->wakes)));
	return o;
}

void ap_advise_replay_cpus_json(const struct ap_advice *a, json_t *o)
{
	static const char *const from[] = {
		[AP_RCPUS_UNKNOWN] = "unknown",
		[AP_RCPUS_RECORDED] = "recorded",
		[AP_RCPUS_ASKED] = "option",
		[AP_RCPUS_ALL] = "all",
	};
	json_object_set_new(o, "replay_cpus", json_integer(a->replay_cpus));
	json_object_set_new(o, "replay_cpus_from", json_string(from[a->replay_cpus_from]));
	json_object_set_new(o, "recorded_cpus",
			    a->recorded_cpus ? json_integer(a->recorded_cpus) : json_null());
	json_object_set_new(o, "cpus_allowed", json_integer(a->replay_cpus_here));
	/* what the runner found it could use: replay_cpus, unless pinning failed */
	json_object_set_new(o, "runner_cpus", a->base.cpus > 0 ? json_integer(ap_view_round(a->base.cpus))
							       : json_null());
}

/* The free list measured at s (ap_advise_site.fl): its saving, as the
 * pool's figures are given. */
static json_t *freelist_json(const struct ap_advise_site *s)
{
	json_t *o = saving_json(&s->fl);
	if (s->fl_excess_faults > 0) {
		json_object_set_new(o, "excess_faults", json_integer(ap_view_round(s->fl_excess_faults)));
		json_object_set_new(o, "excess_faults_ns", json_integer(ap_view_round(s->fl_excess_faults_ns)));
	}
	return o;
}

json_t *ap_advise_json(const struct ap_advice *a, const struct ap_trace *t, size_t n)
{
	json_t *root = json_object();
	json_object_set_new(root, "program", ap_json_text(t->exe));
	json_object_set_new(root, "rate", json_integer((json_int_t)a->rate));
	json_object_set_new(root, "estimates", json_boolean(a->sampled));
	json_object_set_new(root, "procs", json_integer(a->procs));
	json_object_set_new(root, "one_p", json_boolean(a->one_p));
	json_t *costs = json_object();
	if (a->costs_measured_at > 0) {
		json_object_set_new(costs, "measured_at", json_integer((json_int_t)a->costs_measured_at));
		json_object_set_new(costs, "rounds", json_integer((json_int_t)a->costs_rounds));
		json_object_set_new(costs, "spread", json_real(a->costs_spread));
	} else {
		json_object_set_new(costs, "measured_at", json_null());
		json_object_set_new(costs, "rounds", json_null());
		json_object_set_new(costs, "spread", json_null());
	}
	json_object_set_new(root, "costs", costs);
	json_t *gc = json_object();
	json_object_set_new(gc, "mode", json_string(a->gc_mode == AP_GC_GOGC ? "gogc" : "interval"));
	if (a->gc_mode == AP_GC_GOGC)
		json_object_set_new(gc, "gogc", json_integer((json_int_t)a->gogc));
	else
		json_object_set_new(gc, "interval_ns", json_integer((json_int_t)a->interval_ns));
	json_object_set_new(gc, "cycles", json_integer((json_int_t)a->cycles));
	json_object_set_new(gc, "mean_cycle_ns", json_integer(ap_view_round(a->mean_cycle_ns)));
	json_object_set_new(root, "gc", gc);
	json_object_set_new(root, "total_alloc_space", json_integer(ap_view_round(a->total_alloc_space)));
	json_object_set_new(root, "total_alloc_objects", json_integer(ap_view_round(a->total_alloc_objects)));
	json_object_set_new(root, "hidden_sites", json_integer((json_int_t)a->hidden_sites));
	json_object_set_new(root, "growths_by_copy", json_integer((json_int_t)a->njoins));
	json_object_set_new(root, "program_cpu_ns", json_integer((json_int_t)a->program_cpu_ns));
	json_object_set_new(root, "program_cpu_est_ns", json_integer((json_int_t)a->program_cpu_est_ns));
	json_object_set_new(root, "program_switches", a->has_switches ? json_integer((json_int_t)a->program_switches)
								      : json_null());
	json_object_set_new(root, "program_unwind_ns", json_integer((json_int_t)a->program_unwind_ns));
	json_object_set_new(root, "program_minflt", a->has_program_minflt
							? json_integer((json_int_t)a->program_minflt)
							: json_null());
	json_t *mj = json_object();
	json_object_set_new(mj, "sites", json_integer((json_int_t)a->measured));
	json_object_set_new(mj, "graphs", json_integer((json_int_t)graphs_measured(a)));
	if (a->measured || graphs_measured(a)) {
		json_object_set_new(mj, "replay_ops", json_integer((json_int_t)a->script_ops));
		json_object_set_new(mj, "work_ns", json_integer((json_int_t)a->script_work_ns));
		json_object_set_new(mj, "sleep_ns", json_integer((json_int_t)a->script_sleep_ns));
		json_object_set_new(mj, "left_out", json_integer((json_int_t)a->measure_dropped));
		json_object_set_new(mj, "share_replayed", json_real(a->measure_share));
		if (a->measure_cut_bytes) /* (the share's bound: AP_MEASURE_LIVE_BYTES) */
			json_object_set_new(mj, "share_live_blocks_max",
					    json_integer((json_int_t)a->measure_live_max));
		json_object_set_new(mj, "touch_share", json_real(a->touch_share));
		if (a->touch_share < 1 && a->touch_faults_all > 0) { /* fitted, not set */
			json_object_set_new(mj, "touch_faults_all", json_integer((json_int_t)a->touch_faults_all));
			json_object_set_new(mj, "touch_faults_line", json_integer((json_int_t)a->touch_faults_line));
			json_object_set_new(mj, "touch_faults_run", json_integer((json_int_t)a->touch_faults_run));
		}
		if (a->measure_full_run_ns > 0) {
			json_object_set_new(mj, "probe_events", json_integer((json_int_t)a->measure_probe_events));
			json_object_set_new(mj, "probe_wall_ns", json_integer(ap_view_round(a->measure_full_run_ns)));
		}
		json_object_set_new(mj, "wall_ns", json_integer(ap_view_round(a->measure_wall_ns)));
		budget_cut_json(a, mj);
		ap_advise_replay_cpus_json(a, mj);
		json_object_set_new(mj, "baseline", ap_advise_cost_json(&a->base));
		json_object_set_new(mj, "fault_ns", a->base.fault_ns > 0 ? json_integer(ap_view_round(a->base.fault_ns))
									 : json_null());
		json_object_set_new(mj, "switch_ns", a->base.switch_ns > 0 ? json_integer(ap_view_round(a->base.switch_ns))
									   : json_null());
		if (a->recorded.cpu_ns > 0)
			json_object_set_new(mj, "recorded", ap_advise_cost_json(&a->recorded));
	} else {
		json_object_set_new(mj, "why_not", json_string(a->measure_why));
		if (a->measure_wall_ns > 0) {
			json_object_set_new(mj, "wall_ns", json_integer(ap_view_round(a->measure_wall_ns)));
			budget_cut_json(a, mj);
		}
	}
	json_object_set_new(root, "measurement", mj);
	json_t *sites = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct ap_advise_site *s = &a->sites[i];
		json_t *o = result_json(&s->r, s->held_known);
		json_object_set_new(o, "site", ap_json_text(s->name));
		json_object_set_new(o, "site_id", json_integer((json_int_t)s->site_id));
		json_object_set_new(o, "function", ap_json_text(s->function));
		json_object_set_new(o, "file", ap_json_text(s->file));
		json_object_set_new(o, "line", json_integer(s->line));
		json_object_set_new(o, "via", ap_json_text(s->via));
		/* time_saved_ns: the measured saving where there is one, else
		 * the cost model's (time_source says which; model_time_saved_ns
		 * is always the model's). */
		json_object_set_new(o, "model_time_saved_ns", json_integer(ap_view_round(s->r.time_saved_ns)));
		json_object_set_new(o, "time_source", json_string(s->measured ? "measured" : "model"));
		if (s->measured) {
			const struct ap_measured *m = &s->m;
			json_object_set_new(o, "time_saved_ns", json_integer(ap_view_round(m->saved_ns)));
			json_object_set_new(o, "time_saved_low_ns", json_integer(ap_view_round(m->low_ns)));
			json_object_set_new(o, "time_saved_high_ns", json_integer(ap_view_round(m->high_ns)));
			json_t *mo = json_object();
			json_object_set_new(mo, "rounds", json_integer(m->rounds));
			json_object_set_new(mo, "confidence", json_real(m->conf));
			json_object_set_new(mo, "pooled", ap_advise_cost_json(&m->cost));
			/* measured again written whole: every figure of
			 * `measured` is that measurement's, its baseline
			 * among them; the first measurement is kept beside it
			 * whole, with its own baseline (the top-level
			 * measurement.baseline) and confidence, so that no
			 * object mixes the two */
			if (s->whole_measured) {
				json_t *lo = json_object();
				json_object_set_new(mo, "written_whole", json_true());
				json_object_set_new(mo, "baseline", ap_advise_cost_json(&s->mw_base));
				json_object_set_new(lo, "time_saved_ns", json_integer(ap_view_round(s->mw.saved_ns)));
				json_object_set_new(lo, "time_saved_low_ns", json_integer(ap_view_round(s->mw.low_ns)));
				json_object_set_new(lo, "time_saved_high_ns",
						    json_integer(ap_view_round(s->mw.high_ns)));
				json_object_set_new(lo, "rounds", json_integer(s->mw.rounds));
				json_object_set_new(lo, "confidence", json_real(s->mw.conf));
				json_object_set_new(lo, "pooled", ap_advise_cost_json(&s->mw.cost));
				json_object_set_new(lo, "baseline", ap_advise_cost_json(&a->base));
				json_object_set_new(mo, "line_a_page", lo);
			}
			if (s->excess_faults > 0) {
				json_object_set_new(mo, "excess_faults", json_integer(ap_view_round(s->excess_faults)));
				json_object_set_new(mo, "excess_faults_ns",
						    json_integer(ap_view_round(s->excess_faults_ns)));
			}
			/* a free list of each thread's own, measured beside
			 * the pool where the objects stay in their thread (the
			 * same figures as the pool's), or null and why not */
			const char *fl_why = ap_fl_why(s->fl_state);
			/* (a Rust site's: its own free list measured, and
			 * vpool beside it: ap_advise_site.own_list) */
			json_object_set_new(mo, "pool", json_string(s->own_list ? "free list" : "vpool"));
			json_object_set_new(mo, s->own_list ? "vpool" : "freelist",
					    fl_why ? json_null() : freelist_json(s));
			json_object_set_new(mo, s->own_list ? "vpool_why" : "freelist_why",
					    fl_why ? json_string(fl_why) : json_null());
			/* a pool per size class, requests rounded up, measured
			 * beside one pool whose blocks are much larger than
			 * asked: the verdict's when it won (round_up; one_pool
			 * then the one pool's figures), else beside it */
			json_object_set_new(mo, "round_up", json_boolean(s->round_up));
			if (s->round_up) {
				json_object_set_new(mo, "one_pool", saving_json(&s->rm));
			} else {
				json_t *rc = NULL;
				if (s->round_state == AP_FL_MEASURED) {
					rc = saving_json(&s->rm);
					json_t *cl = json_array();
					for (size_t k = 0; k < s->nround_classes; k++)
						json_array_append_new(cl, json_integer((json_int_t)s->round_classes[k]));
					json_object_set_new(rc, "size_classes", cl);
					json_object_set_new(rc, "bytes_ratio", json_real(s->round_ratio));
					/* measured again written whole, where they paid
					 * a line a page: what decides (null: not) */
					json_object_set_new(rc, "written_whole",
							    s->round_whole ? saving_json(&s->rmw) : json_null());
				}
				json_object_set_new(mo, "rounded_classes", rc ? rc : json_null());
				/* (not one whose blocks would be much larger than
				 * asked: "not measured") */
				const char *why = ap_fl_why(s->round_state);
				json_object_set_new(mo, "rounded_classes_why", why ? json_string(why) : json_null());
			}
			json_object_set_new(o, "measured", mo);
		}
		json_object_set_new(o, "verdict", json_string(ap_verdict_name(s->verdict)));
		json_object_set_new(o, "verdict_text", ap_json_text(s->verdict_text));
		json_object_set_new(o, "reasons", ap_json_text(s->reasons));
		/* the pool's shape, also under a verdict that is no pool (the
		 * one the measured replay served, and try serves) */
		if (ap_advise_site_shape(s) == AP_VERDICT_POOL_CAP)
			json_object_set_new(o, "cap", json_integer((json_int_t)s->cap));
		if (ap_advise_site_shape(s) == AP_VERDICT_SIZE_CLASSES) {
			json_t *cl = json_array();
			for (size_t k = 0; k < s->nclasses; k++)
				json_array_append_new(cl, json_integer((json_int_t)s->classes[k]));
			json_object_set_new(o, "size_classes", cl);
			json_object_set_new(o, "round_up", json_boolean(s->round_up));
		}
		json_object_set_new(o, "alloc_objects", json_integer(ap_view_round(s->alloc_objects)));
		json_object_set_new(o, "alloc_space", json_integer(ap_view_round(s->alloc_space)));
		json_object_set_new(o, "share", json_real(s->share));
		json_object_set_new(o, "life_share", json_real(s->life_share));
		json_object_set_new(o, "samples", json_integer((json_int_t)s->samples));
		json_object_set_new(o, "rel_error", json_real(s->rel_error));
		json_object_set_new(o, "hit_rate_error", json_real(s->hit_rate_error));
		json_object_set_new(o, "exact", json_boolean(!a->sampled || s->exact));
		json_object_set_new(o, "p50_size", json_integer(ap_view_round(s->p50_size)));
		json_object_set_new(o, "p90_size", json_integer(ap_view_round(s->p90_size)));
		json_object_set_new(o, "max_size", json_integer(ap_view_round(s->max_size)));
		json_object_set_new(o, "p50_cap", json_integer(ap_view_round(s->p50_cap)));
		json_object_set_new(o, "p90_cap", json_integer(ap_view_round(s->p90_cap)));
		json_object_set_new(o, "max_cap", json_integer(ap_view_round(s->max_cap)));
		json_object_set_new(o, "reallocs_per_object", json_real(s->reallocs_per_object));
		json_object_set_new(o, "growth_by_copy_share", json_real(s->copy_share));
		json_object_set_new(o, "life_cost_ns", json_real(s->life_cost_ns));
		json_object_set_new(o, "pool_cost_ns", json_real(s->pool_cost_ns));
		json_object_set_new(o, "grows_at", ap_json_text(s->grows_at));
		json_object_set_new(o, "born_at", ap_json_text(s->born_at));
		if (a->sampled)
			json_object_set_new(o, "seen_growing", json_integer(ap_view_round(s->seen_growing)));
		if (s->verdict == AP_VERDICT_UNSURE)
			json_object_set_new(o, "suggest_rate", json_integer((json_int_t)s->suggest_rate));
		json_object_set_new(o, "mean_gap_ns", json_integer(ap_view_round(s->mean_gap_ns)));
		json_object_set_new(o, "mean_life_ns", json_integer(ap_view_round(s->mean_life_ns)));
		json_object_set_new(o, "cross_thread_share", json_real(s->cross_thread_share));
		json_object_set_new(o, "calloc_share", json_real(s->calloc_share));
		json_object_set_new(o, "aligned_share", json_real(s->aligned_share));
		json_object_set_new(o, "shrink_share", json_real(s->shrink_share));
		if (s->capped) {
			json_t *c = result_json(&s->rc, s->held_known);
			json_object_set_new(c, "max_keep", json_integer((json_int_t)s->cap));
			json_object_set_new(o, "with_cap", c);
		}
		json_array_append_new(sites, o);
	}
	json_object_set_new(root, "sites", sites);
	json_object_set_new(root, "graphs", graphs_json(a));
	json_object_set_new(root, "graphs_left_out", json_integer((json_int_t)a->graphs_dropped));
	return root;
}

static int print_json(const struct ap_advice *a, const struct ap_trace *t, size_t n)
{
	return ap_view_json_print(ap_advise_json(a, t, n));
}

/* Sites named "module+0xoff": the share of the bytes allocated there,
 * by module, and how to get their names (as top says it of its frames;
 * git's sites were "git+0x28997b" and nothing said why). */
static void unsym_sites_note(const struct ap_advice *a, const struct ap_site_map *m)
{
	if (!m->unsym_module || a->total_alloc_space <= 0)
		return;
	struct ap_unsym_module *mods = NULL;
	size_t n = 0, alloc = 0;
	double any = 0;
	for (size_t i = 0; i < a->nsites; i++) {
		const struct ap_advise_site *s = &a->sites[i];
		const char *mod = s->site_id < m->nsites ? m->unsym_module[s->site_id] : NULL;
		if (!mod)
			continue;
		size_t k = 0; /* few modules: a linear search */
		while (k < n && strcmp(mods[k].module, mod))
			k++;
		if (k == n) {
			AP_ALLOC_GROW(mods, n + 1, alloc);
			mods[n++] = (struct ap_unsym_module){ mod, 0 };
		}
		mods[k].value += s->alloc_space;
		any += s->alloc_space;
	}
	for (size_t i = 1; i < n; i++) /* biggest first */
		for (size_t k = i; k > 0 && mods[k].value > mods[k - 1].value; k--) {
			struct ap_unsym_module x = mods[k];
			mods[k] = mods[k - 1];
			mods[k - 1] = x;
		}
	ap_view_unsym_note(mods, n, any, a->total_alloc_space,
			   "of the bytes are allocated at sites");
	free(mods);
}

static bool has_children(const char *path)
{
	char **kids;
	size_t n = ap_trace_children(path, 0, &kids);
	for (size_t i = 0; i < n; i++)
		free(kids[i]);
	free(kids);
	return n > 0;
}

int cmd_advise(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "min-share", required_argument, NULL, OPT_MIN_SHARE },
		{ "max-keep", required_argument, NULL, OPT_MAX_KEEP },
		{ "gc", required_argument, NULL, OPT_GC },
		{ "procs", required_argument, NULL, OPT_PROCS },
		{ "site", required_argument, NULL, OPT_SITE },
		AP_VIEW_MEASURE_LONGOPTS,
		{ "measure-sites", required_argument, NULL, OPT_MEASURE_SITES },
		{ "drop-frames", required_argument, NULL, AP_VOPT_DROP_FRAMES },
		{ "debug-dir", required_argument, NULL, AP_VOPT_DEBUG_DIR },
		{ "full-names", no_argument, NULL, AP_VOPT_FULL_NAMES },
		{ "full_names", no_argument, NULL, AP_VOPT_FULL_NAMES },
		AP_VIEW_RUN_LONGOPTS,
		{ "json", no_argument, NULL, AP_VOPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts vo;
	ap_view_opts_init(&vo);
	struct ap_advise_options ao;
	ap_advise_options_init(&ao);
	long nshow = 10;
	bool by_stack = false;
	struct ap_view_measure vm;
	ap_view_measure_init(&vm);
	vm.progress = true;
	long msites;
	int mo;
	int opt;
	opterr = 0;
	optind = 1;
	while ((opt = ap_view_getopt(argc, argv, ":hn:", longopts)) != -1) {
		char *end;
		switch (opt) {
		case 'h':
			advise_usage(stdout);
			return AP_EXIT_OK;
		case 'n':
			nshow = strtol(optarg, &end, 10);
			if (*end || end == optarg || nshow < 0)
				return ap_usage_error("advise", "-n wants a count, not '%s'", optarg);
			break;
		case OPT_MIN_SHARE: {
			double pct = strtod(optarg, &end);
			if (*end == '%')
				end++;
			if (*end || end == optarg || pct < 0 || pct > 100)
				return ap_usage_error("advise", "--min-share wants a percentage, not '%s'", optarg);
			ao.min_share = pct / 100;
			break;
		}
		case OPT_MAX_KEEP:
			if (ap_parse_size(optarg, &ao.max_keep) < 0 || !ao.max_keep)
				return ap_usage_error("advise", "--max-keep wants a size like 64K, not '%s'", optarg);
			break;
		case OPT_GC:
			if (ap_advise_parse_gc(optarg, &ao) < 0)
				return ap_usage_error("advise", "--gc wants gogc:N or interval:DURATION, not '%s'",
						      optarg);
			break;
		case OPT_PROCS: {
			long p = strtol(optarg, &end, 10);
			if (*end || end == optarg || p < 1 || p > 4096)
				return ap_usage_error("advise", "--procs wants a number from 1 to 4096, not '%s'",
						      optarg);
			ao.procs = (unsigned)p;
			break;
		}
		case OPT_SITE:
			if (!strcmp(optarg, "stack"))
				by_stack = true;
			else if (!strcmp(optarg, "callsite"))
				by_stack = false;
			else
				return ap_usage_error("advise", "--site wants callsite or stack, not '%s'", optarg);
			break;
		case OPT_MEASURE_SITES:
			msites = strtol(optarg, &end, 10);
			if (*end || end == optarg || msites < 0 || msites > 1000)
				return ap_usage_error("advise", "--measure-sites wants a count from 0 to 1000, "
						      "not '%s'", optarg);
			vm.sites = (size_t)msites;
			break;
		default:
			if ((mo = ap_view_measure_option(&vm, "advise", opt, optarg)) < 0)
				return AP_EXIT_USAGE;
			if (!mo && (mo = ap_view_option_of(&vo, "advise", opt, optarg)) < 0)
				return AP_EXIT_USAGE;
			if (mo)
				break;
			return ap_view_bad_option("advise", opt, argv);
		}
	}
	if (optind == argc)
		return ap_usage_error("advise", "a TRACE file is needed");
	if (ap_view_touch_check() < 0)
		return AP_EXIT_USAGE;
	if (vo.by_process || argc - optind > 1 || (!vo.no_children && has_children(argv[optind])))
		return ap_view_by_process(cmd_advise, argc, argv, optind, &vo);

	struct ap_cost_table costs;
	if (ap_advise_load_costs(&costs) < 0)
		return AP_EXIT_FAIL;
	ao.costs = &costs;

	struct ap_view v;
	vo.no_values = true; /* the advisor replays the trace itself */
	if (ap_view_load(&v, argv + optind, 1, &vo) != 0)
		return AP_EXIT_FAIL;
	struct ap_site_map m;
	ap_advise_sites(v.trace, v.sym, by_stack, &m);
	struct ap_error err;
	struct ap_advice *a = ap_advise_run(v.trace, &m, &ao, &err);
	if (!a) {
		ap_site_map_release(&m);
		ap_print_error(&err);
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	ap_view_measure_run(&vm, a, v.trace, &m, &ao);
	ap_view_warnings(&v);
	unsym_sites_note(a, &m);
	ap_site_map_release(&m);
	int rc = ap_view_sampling_hint(v.trace);
	size_t n = nshow == 0 || (size_t)nshow > a->nsites ? a->nsites : (size_t)nshow;
	ap_advise_refer(a, n);	/* "see SITE" of a site not shown: how to see it */
	if (rc)
		;
	else if (vo.json)
		rc = print_json(a, v.trace, n);
	else
		print_text(a, v.trace, n);
	ap_advice_free(a);
	ap_view_release(&v);
	return rc;
}
