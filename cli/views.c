/* Shared by the views: options, loading, progress, number formats. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ap_advise.h"
#include "ap_regex.h"
#include "ap_export.h"
#include "ap_trace_compact.h"
#include "commands.h"
#include "views.h"

/* Inside ap_view_by_process's runs. */
static int by_process_depth;
/* ...where the measured replay has one budget for the whole run
 * (ap_view_measure_run): what the processes before took, in ns; each
 * process's weight in it, its events (run_weight[run_n]), and the one
 * advised now, run_at. */
static double run_measure_spent;
static double *run_weight;
static size_t run_n, run_at;

void ap_view_opts_init(struct ap_view_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->report.sample_index = AP_SI_ALLOC_SPACE;
	o->report.granularity = AP_GRAN_FUNCTIONS;
}

int ap_view_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	return getopt_long_only(argc, argv, shortopts, longopts, NULL);
}

int ap_view_next_option(struct ap_view_opts *o, const char *cmd, int argc, char **argv,
			const char *shortopts, const struct option *longopts)
{
	if (optind == 0) {
		optind = 1;
		opterr = 0;
	}
	int opt;
	while ((opt = ap_view_getopt(argc, argv, shortopts, longopts)) != -1) {
		int shared = ap_view_option_of(o, cmd, opt, optarg);
		if (shared < 0)
			return AP_VIEW_BAD_USAGE;
		if (!shared)
			return opt;
	}
	return -1;
}

int ap_view_parse_count(const char *cmd, const char *what, const char *arg, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || end == arg || v < 0) {
		ap_usage_error(cmd, "bad %s '%s'", what, arg);
		return -1;
	}
	*out = v;
	return 0;
}

int ap_view_parse_fraction(const char *cmd, const char *what, const char *arg, double *out)
{
	char *end;
	double f = strtod(arg, &end);
	if (*end || end == arg || !(f >= 0 && f <= 1)) {
		ap_usage_error(cmd, "bad %s '%s', not a number from 0 to 1", what, arg);
		return -1;
	}
	*out = f;
	return 0;
}

int ap_view_regex_ok(const char *cmd, const char *opt, const char *arg)
{
	struct ap_error err;
	struct ap_regex *re = ap_regex_new(arg, opt, &err);
	if (!re) {
		ap_usage_error(cmd, "%s", err.msg);
		return -1;
	}
	ap_regex_free(re);
	return 0;
}

int ap_view_option_of(struct ap_view_opts *o, const char *cmd, int opt, const char *arg)
{
	switch (opt) {
	case AP_VOPT_ALLOC_SPACE:
		o->report.sample_index = AP_SI_ALLOC_SPACE;
		return 1;
	case AP_VOPT_ALLOC_OBJECTS:
		o->report.sample_index = AP_SI_ALLOC_OBJECTS;
		return 1;
	case AP_VOPT_INUSE_SPACE:
		o->report.sample_index = AP_SI_INUSE_SPACE;
		return 1;
	case AP_VOPT_INUSE_OBJECTS:
		o->report.sample_index = AP_SI_INUSE_OBJECTS;
		return 1;
	case AP_VOPT_PEAK_SPACE:
		o->report.sample_index = AP_SI_PEAK_SPACE;
		return 1;
	case AP_VOPT_PEAK_OBJECTS:
		o->report.sample_index = AP_SI_PEAK_OBJECTS;
		return 1;
	case AP_VOPT_TEMPORARY:
		o->report.sample_index = AP_SI_TEMPORARY;
		return 1;
	case AP_VOPT_SAMPLE_INDEX:
		if (ap_export_parse_index(arg, &o->report.sample_index)) {
			ap_usage_error(cmd,
				       "unknown sample index '%s', not alloc_space, "
				       "alloc_objects, inuse_space, inuse_objects, peak_space, "
				       "peak_objects or temporary",
				       arg);
			return -1;
		}
		return 1;
	case AP_VOPT_FUNCTIONS:
		o->report.granularity = AP_GRAN_FUNCTIONS;
		return 1;
	case AP_VOPT_LINES:
		o->report.granularity = AP_GRAN_LINES;
		return 1;
	case AP_VOPT_FILES:
		o->report.granularity = AP_GRAN_FILES;
		return 1;
	case AP_VOPT_FOCUS:
		if (ap_view_regex_ok(cmd, "--focus", arg))
			return -1;
		o->report.focus = arg;
		return 1;
	case AP_VOPT_IGNORE:
		if (ap_view_regex_ok(cmd, "--ignore", arg))
			return -1;
		o->report.ignore = arg;
		return 1;
	case AP_VOPT_SHOW:
		if (ap_view_regex_ok(cmd, "--show", arg))
			return -1;
		o->report.show = arg;
		return 1;
	case AP_VOPT_HIDE:
		if (ap_view_regex_ok(cmd, "--hide", arg))
			return -1;
		o->report.hide = arg;
		return 1;
	case AP_VOPT_DROP_FRAMES:
		if (ap_view_regex_ok(cmd, "--drop-frames", arg))
			return -1;
		o->sym.drop_frames = arg;
		return 1;
	case AP_VOPT_DEBUG_DIR:
		o->sym.debug_dir = arg;
		return 1;
	case AP_VOPT_SUPPRESSIONS:
		o->suppressions = arg;
		return 1;
	case AP_VOPT_NO_SUPPRESSIONS:
		o->no_suppressions = true;
		return 1;
	case AP_VOPT_FULL_NAMES:
		o->sym.full_names = true;
		return 1;
	case AP_VOPT_SYMBOLIZE:
		/* pprof's spelling of the names wanted; its other values
		 * choose where symbols come from, which has no meaning here */
		if (!strcmp(arg, "demangle=full")) {
			o->sym.full_names = true;
			o->sym.no_demangle = false;
		} else if (!strcmp(arg, "demangle=none")) {
			o->sym.no_demangle = true;
		} else {
			ap_usage_error(cmd, "unsupported --symbolize value '%s', not demangle=full "
					    "(--full-names) or demangle=none (linkage names)",
				       arg);
			return -1;
		}
		return 1;
	case AP_VOPT_JSON:
		o->json = true;
		return 1;
	case AP_VOPT_NO_CHILDREN:
		o->no_children = true;
		return 1;
	case AP_VOPT_BY_PROCESS:
		/* the runs of ap_view_by_process are one process each */
		o->by_process = !by_process_depth;
		return 1;
	}
	return 0;
}

bool ap_view_option(struct ap_view_opts *o, int opt, const char *arg)
{
	return ap_view_option_of(o, "allocprof", opt, arg) != 0;
}

int ap_view_bad_option(const char *cmd, int opt, char **argv)
{
	char shortopt[3] = {'-', (char)optopt, 0};
	const char *name = optopt > 0 && optopt < 128 ? shortopt : argv[optind - 1];
	/* a long option without its value is named as typed (--nodecount),
	 * not by the short option it stands for (its optopt, -n) */
	if (opt == ':' && strlen(argv[optind - 1]) > 2)
		name = argv[optind - 1];
	if (opt == ':')
		return ap_usage_error(cmd, "option '%s' needs a value", name);
	return ap_usage_error(cmd, "unknown option '%s'", name);
}

/* ---- progress on a terminal --------------------------------------------- */

struct progress {
	const char *what;
	int last; /* last percentage drawn, -1 before the first */
	bool drawn;
};

static struct progress progress_state;

static void progress_draw(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	int pct = total ? (int)(done * 100 / total) : 100;
	if (pct == p->last)
		return;
	p->last = pct;
	p->drawn = true;
	fprintf(stderr, "\r%s: %3d%%", p->what, pct);
	fflush(stderr);
}

ap_report_progress_fn ap_view_progress_fn(void)
{
	return ap_progress_wanted() ? progress_draw : NULL;
}

void *ap_view_progress_ctx(const char *what)
{
	progress_state.what = what;
	progress_state.last = -1;
	return &progress_state;
}

void ap_view_progress_done(void)
{
	if (progress_state.drawn)
		fputs("\r\033[K", stderr);
	progress_state.drawn = false;
}

/* Each pass over the events (a replay) of a trace being read: drawn, and
 * wiped at its end. */
static struct progress events_state = { "replaying", -1, false };

static void events_draw(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	if (done < total) {
		progress_draw(p, done, total);
		return;
	}
	if (p->drawn)
		fputs("\r\033[K", stderr);
	p->drawn = false;
	p->last = -1;
}

/* ---- loading ------------------------------------------------------------ */

/* One trace a process and its record left unfinished (both killed: `kill
 * -9` of the process group), finished from its buffers file first, as
 * record would have: what the process recorded is not lost. Said in one
 * line; a trace that cannot be finished here (read-only) is read as it
 * is, with the warning that it is truncated. */
static void finish_left_one(const char *path)
{
	struct ap_finished fin;
	struct ap_error err;
	if (ap_trace_finish_left(path, &fin, &err) < 0) {
		ap_say("%s (its buffers file is left: the trace is read as it is)", err.msg);
		return;
	}
	if (!fin.found || fin.busy)
		return;
	ap_say("%s: finished from the buffers file its process left (record was gone): "
	       "%llu chunk%s added%s", path, (unsigned long long)fin.chunks,
	       fin.chunks == 1 ? "" : "s", fin.end_added ? ", and an end" : "");
}

static void finish_left(char *const *paths, size_t n, bool children)
{
	for (size_t i = 0; i < n; i++) {
		finish_left_one(paths[i]);
		if (!children)
			continue;
		char **kids;
		size_t nk = ap_trace_children(paths[i], 0, &kids);
		for (size_t k = 0; k < nk; k++) {
			finish_left_one(kids[k]);
			free(kids[k]);
		}
		free(kids);
	}
}

int ap_view_read(struct ap_trace **out, char *const *paths, size_t n, const struct ap_view_opts *o,
		 const char *covers)
{
	struct ap_error err;
	struct ap_run run;
	ap_progress_fn pfn = ap_progress_wanted() ? progress_draw : NULL;
	finish_left(paths, n, !o->no_children);
	int rc = ap_run_read(&run, (const char *const *)paths, n, !o->no_children, &err, pfn,
			     ap_view_progress_ctx("reading"));
	ap_view_progress_done();
	if (rc) {
		ap_print_error(&err);
		return AP_EXIT_FAIL;
	}
	for (size_t i = 0; i < run.n; i++) {
		if (run.traces[i]->truncated)
			ap_say("warning: %s: truncated trace (%s)%s", run.paths[i],
				   run.traces[i]->truncated_why, covers);
		if (run.traces[i]->has_end && run.traces[i]->exec_unfollowed)
			ap_say("%s: its process exec'd a program with an environment that no longer "
			       "preloads the sampler (clearenv, env -i): that program ran unprofiled, "
			       "and is not in the run", run.paths[i]);
		if (run.traces[i]->spawn_unfollowed) {
			struct ap_buf safe = AP_BUF_INIT;
			uint64_t k = run.traces[i]->spawn_unfollowed;
			ap_say("%s: its process started %llu program%s with posix_spawn and an "
			       "environment that no longer preloads the sampler (%s%s): %s ran "
			       "unprofiled, and %s not in the run", run.paths[i], (unsigned long long)k,
			       k == 1 ? "" : "s", ap_safe_name(&safe, run.traces[i]->spawn_first),
			       k == 1 ? "" : " first", k == 1 ? "it" : "they", k == 1 ? "is" : "are");
			ap_buf_release(&safe);
		}
		if (run.traces[i]->flags & AP_HFLAG_ATTACHED)
			ap_say("%s: recorded from a running process (record -p): the trace "
			       "starts mid-run, without the blocks allocated before", run.paths[i]);
	}
	if (ap_run_merge(&run, out, &err)) {
		ap_print_error(&err);
		ap_run_release(&run);
		return AP_EXIT_FAIL;
	}
	if (pfn)
		ap_events_progress(*out, events_draw, &events_state);
	return 0;
}

int ap_view_load(struct ap_view *v, char *const *paths, size_t n, const struct ap_view_opts *o)
{
	struct ap_error err;
	memset(v, 0, sizeof(*v));
	if (ap_view_read(&v->trace, paths, n, o, "; showing its complete part"))
		return AP_EXIT_FAIL;
	if (o->report.sample_index == AP_SI_TEMPORARY && v->trace->rate > 1) {
		ap_say("%s: temporary allocations need a trace recorded with --all: a "
			   "sampled trace does not hold the events between an allocation and its "
			   "free", paths[0]);
		ap_view_release(v);
		return AP_EXIT_FAIL;
	}
	v->sym = ap_sym_new(v->trace, &o->sym, &err);
	if (!v->sym) {
		ap_print_error(&err);
		ap_view_release(v);
		return AP_EXIT_FAIL;
	}
	if (o->no_values)
		return 0;
	if (!(v->values = ap_report_stack_values(v->trace, &err))) {
		ap_print_error(&err);
		ap_view_release(v);
		return AP_EXIT_FAIL;
	}
	if (o->no_suppressions && !o->suppressions)
		return 0;
	struct ap_suppressions *s =
	    ap_suppress_new(o->suppressions, !o->no_suppressions, &err);
	if (!s) {
		ap_print_error(&err);
		ap_view_release(v);
		return AP_EXIT_FAIL;
	}
	ap_suppress_values(s, v->trace, v->sym, v->values, &v->suppressed);
	ap_suppress_free(s);
	enum ap_sample_index si = o->report.sample_index;
	if (v->suppressed.bytes > 0 &&
	    (si == AP_SI_INUSE_SPACE || si == AP_SI_INUSE_OBJECTS)) {
		char b[32];
		ap_format_bytes(b, sizeof(b), v->suppressed.bytes);
		bool builtin = v->suppressed.builtin_bytes > 0;
		bool file = v->suppressed.bytes > v->suppressed.builtin_bytes;
		ap_say("note: %s in use in %.0f allocation%s suppressed: %s%s%s%s; "
			   "--no-suppressions shows %s",
			   b, v->suppressed.objects, v->suppressed.objects == 1 ? "" : "s",
			   builtin ? "memory the C and C++ runtimes keep by design" : "",
			   builtin && file ? ", and " : "", file ? "the rules of " : "",
			   file ? o->suppressions : "", v->suppressed.objects == 1 ? "it" : "them");
	}
	return 0;
}

size_t ap_view_advised_process(const struct ap_trace *run)
{
	size_t best = 0;
	uint64_t most = 0;
	for (size_t i = 0; i < run->nprocs; i++) {
		const struct ap_process *p = &run->procs[i];
		uint64_t n = p->has_counts ? p->calls : p->events;
		if (n > most) {
			most = n;
			best = i;
		}
	}
	return best;
}

int ap_view_load_process(struct ap_view *out, const struct ap_trace *run, size_t proc,
			 const struct ap_view_opts *o, struct ap_error *err)
{
	memset(out, 0, sizeof(*out));
	if (ap_trace_read(run->procs[proc].path, &out->trace, err, NULL, NULL))
		return -1;
	if (!(out->sym = ap_sym_new(out->trace, &o->sym, err))) {
		ap_trace_free(out->trace);
		out->trace = NULL;
		return -1;
	}
	return 0;
}

void ap_view_add_cmdline(struct ap_buf *b, const char *cmdline)
{
	size_t n = 0;
	const unsigned char *p = (const unsigned char *)cmdline;
	while (p[n]) {
		size_t k = ap_utf8_len(p + n);
		if (n + (k ? k : 1) > AP_VIEW_CMDLINE_MAX)
			break;
		n += k ? k : 1;
	}
	/* one line: a newline or a tab inside an argument (python3 -c '...')
	 * is shown as a space */
	for (size_t i = 0; i < n; i++)
		ap_buf_add(b, p[i] < 0x20 || p[i] == 0x7f ? " " : (const char *)p + i, 1);
	if (p[n])
		ap_buf_addstr(b, "...");
}

int ap_view_by_process(int (*fn)(int, char **), int argc, char **argv, int first,
		       const struct ap_view_opts *o)
{
	struct ap_error err;
	struct ap_run run;
	finish_left(argv + first, (size_t)(argc - first), !o->no_children);
	if (ap_run_read(&run, (const char *const *)argv + first, (size_t)(argc - first),
			!o->no_children, &err, NULL, NULL)) {
		ap_print_error(&err);
		return AP_EXIT_FAIL;
	}
	/* the headings: what each trace is, before the runs free them */
	char **heading = ap_xcalloc(run.n, sizeof(*heading));
	struct ap_buf cmd = AP_BUF_INIT;
	for (size_t i = 0; i < run.n; i++) {
		const struct ap_trace *t = run.traces[i];
		struct ap_buf b = AP_BUF_INIT;
		ap_buf_addf(&b, "==> %s: pid %llu, ", run.paths[i], (unsigned long long)t->pid);
		ap_buf_reset(&cmd);
		for (size_t k = 0; k < t->argc; k++)
			ap_buf_addf(&cmd, "%s%s", k ? " " : "", t->argv[k]);
		ap_view_add_cmdline(&b, t->argc ? cmd.buf : t->exe);
		ap_buf_addstr(&b, " <==");
		heading[i] = ap_buf_detach(&b, NULL);
		if (!by_process_depth) {
			if (!i) {
				free(run_weight);
				run_weight = ap_xcalloc(run.n, sizeof(*run_weight));
				run_n = run.n;
			}
			for (size_t k = 0; k < t->nthreads; k++)
				run_weight[i] += (double)t->threads[k].events;
		}
		ap_trace_free(run.traces[i]);
		run.traces[i] = NULL;
	}
	ap_buf_release(&cmd);
	int nopt = optind, rc = 0;
	size_t nargs = (size_t)nopt + 3 + (size_t)(first - optind) + 2;
	char **args = ap_xcalloc(nargs, sizeof(*args));
	if (!by_process_depth++)
		run_measure_spent = 0;
	if (o->json && run.n > 1)
		puts("[");
	for (size_t i = 0; i < run.n; i++) {
		size_t k = 0;
		for (int j = 0; j < nopt; j++)
			args[k++] = argv[j];
		args[k++] = "--no-children";
		args[k++] = "--";
		for (int j = nopt; j < first; j++)
			args[k++] = argv[j];
		args[k++] = run.paths[i];
		args[k] = NULL;
		if (run.n > 1) {
			if (o->json)
				fputs(i ? ",\n" : "", stdout);
			else
				printf("%s%s\n\n", i ? "\n" : "", heading[i]);
			fflush(stdout);
		}
		if (by_process_depth == 1)
			run_at = i;
		int r = fn((int)k, args);
		fflush(stdout);
		if (r && !rc)
			rc = r;
	}
	if (o->json && run.n > 1)
		puts("]");
	if (!--by_process_depth) {
		free(run_weight);
		run_weight = NULL;
		run_n = 0;
	}
	free(args);
	for (size_t i = 0; i < run.n; i++)
		free(heading[i]);
	free(heading);
	ap_run_release(&run);
	return rc;
}

/* Each warning and note is said once per command: a run of several
 * processes is viewed process by process (advise always, the others with
 * --by-process), each with a symbolizer of its own that finds the same
 * module without line information again, and a run of twelve shell
 * children would otherwise say so twelve times (a shell loop's 642: 535
 * notes of sites without symbols). True when `text` was said before;
 * else it is kept as said. */
static bool said_before(const char *text)
{
	static char **said;
	static size_t nsaid, asaid;
	for (size_t i = 0; i < nsaid; i++)
		if (!strcmp(said[i], text))
			return true;
	AP_ALLOC_GROW(said, nsaid + 1, asaid);
	said[nsaid++] = ap_xstrdup(text);
	return false;
}

void ap_view_warnings(const struct ap_view *v)
{
	const char *const *w = ap_sym_warnings(v->sym);
	for (; w && *w; w++)
		if (!said_before(*w))
			ap_say("warning: %s", *w);
}

struct ap_view_peak ap_view_peak(const struct ap_trace *t, double estimate, double sd)
{
	if (t->rate <= 1)
		return (struct ap_view_peak){ AP_PEAK_EXACT, estimate, 0 };
	if (t->has_live_peak)
		return (struct ap_view_peak){ AP_PEAK_COUNTED, (double)t->live_peak,
					      (double)t->live_slack };
	return (struct ap_view_peak){ AP_PEAK_ESTIMATE, estimate, sd };
}

const char *ap_view_peak_kind_name(enum ap_peak_kind k)
{
	return k == AP_PEAK_EXACT ? "exact" : k == AP_PEAK_COUNTED ? "counted" : "estimate";
}

const char *ap_view_peak_says(const struct ap_view_peak *p, char *buf, size_t len)
{
	char w[32];
	ap_format_bytes(w, sizeof(w), p->within);
	if (p->kind == AP_PEAK_EXACT)
		snprintf(buf, len, "exact");
	else if (p->kind == AP_PEAK_COUNTED)
		snprintf(buf, len, "exact to within %s, blocks at their usable size", w);
	else
		snprintf(buf, len, "estimate from samples ± %s", w);
	return buf;
}

int ap_view_peak_estimate_says(const struct ap_trace *t, enum ap_sample_index si, char *buf,
			       size_t len, struct ap_error *err)
{
	if (t->rate <= 1 || (si != AP_SI_PEAK_SPACE && si != AP_SI_PEAK_OBJECTS))
		return 0;
	struct ap_trace_totals tot;
	if (ap_trace_totals(t, &tot, err) < 0)
		return -1;
	struct ap_view_peak pk = ap_view_peak(t, tot.peak_inuse_space, tot.peak_inuse_space_sd);
	char e[32], sd[32], c[32], says[160];
	ap_format_bytes(e, sizeof(e), tot.peak_inuse_space);
	ap_format_bytes(sd, sizeof(sd), tot.peak_inuse_space_sd);
	int n =
	    snprintf(buf, len,
		     "Peak: the values %s the samples' estimate of the in-use bytes %s, %s ± %s "
		     "(one standard deviation; the largest of many estimates, biased upward); ",
		     si == AP_SI_PEAK_SPACE ? "are" : "count the blocks live when",
		     si == AP_SI_PEAK_SPACE ? "at their peak" : "peaked", e, sd);
	if (n < 0 || (size_t)n >= len)
		return 1;
	if (pk.kind == AP_PEAK_COUNTED) {
		ap_format_bytes(c, sizeof(c), pk.bytes);
		snprintf(buf + n, len - (size_t)n, "the sampler counted the peak: %s (%s)", c,
			 ap_view_peak_says(&pk, says, sizeof(says)));
	} else {
		snprintf(buf + n, len - (size_t)n, "record with --all for the exact peak");
	}
	return 1;
}

int ap_view_peak_note(const struct ap_trace *t, enum ap_sample_index si)
{
	char line[512];
	struct ap_error err;
	int said = ap_view_peak_estimate_says(t, si, line, sizeof(line), &err);
	if (said < 0) {
		ap_print_error(&err);
		return AP_EXIT_FAIL;
	}
	if (said)
		ap_say("note: %s", line);
	return AP_EXIT_OK;
}

int ap_view_print_kind(const struct ap_trace *t, enum ap_sample_index si)
{
	char b[32], line[512];
	struct ap_error err;
	if (t->rate <= 1) {
		printf("Sampling: every allocation\n");
	} else {
		ap_view_format(b, sizeof(b), AP_SI_ALLOC_SPACE, (double)t->rate);
		printf("Sampling: one sample per %s allocated on average (values are estimates)\n",
		       b);
	}
	if (si == AP_SI_TEMPORARY)
		printf("%s\n", AP_VIEW_TEMPORARY_SAYS);
	int said = ap_view_peak_estimate_says(t, si, line, sizeof(line), &err);
	if (said < 0) {
		ap_print_error(&err);
		return AP_EXIT_FAIL;
	}
	if (said)
		printf("%s\n", line);
	return AP_EXIT_OK;
}

int ap_view_inuse_objects_says(const struct ap_trace *t, char *buf, size_t len,
			       struct ap_error *err)
{
	if (t->rate <= 1)
		return 0;
	struct ap_trace_totals tot;
	if (ap_trace_totals(t, &tot, err) < 0)
		return -1;
	snprintf(buf, len,
		 "inuse_objects is an estimate: %.0f ± %.0f (one standard deviation, "
		 "from %llu live sample%s); blocks small next to the rate are rarely sampled, "
		 "so it mostly reads low and now and then far high: record with --all for the "
		 "exact count",
		 round(tot.inuse_objects), round(tot.inuse_objects_sd),
		 (unsigned long long)tot.inuse_samples, tot.inuse_samples == 1 ? "" : "s");
	return 1;
}

int ap_view_inuse_objects_note(const struct ap_trace *t, enum ap_sample_index si)
{
	if (si != AP_SI_INUSE_OBJECTS)
		return AP_EXIT_OK;
	char says[400];
	struct ap_error err;
	int said = ap_view_inuse_objects_says(t, says, sizeof(says), &err);
	if (said < 0) {
		ap_print_error(&err);
		return AP_EXIT_FAIL;
	}
	if (said)
		ap_say("note: %s", says);
	return AP_EXIT_OK;
}

int ap_view_sampling_note(const struct ap_trace *t, char *note, size_t len)
{
	note[0] = 0;
	if (t->rate <= 1)
		return AP_EXIT_OK;
	uint64_t samples = 0;
	struct ap_events *it = ap_events_open(t);
	const struct ap_event *ev;
	ssize_t n;
	while ((n = ap_events_next(it, &ev)) > 0)
		for (size_t i = 0; i < (size_t)n; i++)
			samples += ev[i].type == AP_EV_ALLOC && (ev[i].flags & AP_EVF_SAMPLED);
	if (n < 0) {
		ap_say("%s", ap_events_error(it));
		ap_events_close(it);
		return AP_EXIT_FAIL;
	}
	ap_events_close(it);
	if (samples >= AP_VIEW_FEW_SAMPLES)
		return AP_EXIT_OK;
	char rate[32], bytes[32], what[64];
	ap_format_bytes(rate, sizeof(rate), (double)t->rate);
	if (samples)
		snprintf(what, sizeof(what), "only %llu allocation%s sampled",
			 (unsigned long long)samples, samples > 1 ? "s were" : " was");
	else
		snprintf(what, sizeof(what), "no allocation was sampled");
	if (!t->has_counts) {
		snprintf(note, len,
			 "%s at one sample per %s on average; record with --all "
			 "(every allocation) or a smaller --rate",
			 what, rate);
		return AP_EXIT_OK;
	}
	if (!t->calls) {
		snprintf(note, len, "the program called no allocation function");
		return AP_EXIT_OK;
	}
	ap_format_bytes(bytes, sizeof(bytes), (double)t->bytes);
	snprintf(note, len,
		 "%s: the program allocated %s in %llu calls, %s one sample per %s on "
		 "average; record with --all (every allocation) or a smaller --rate",
		 what, bytes, (unsigned long long)t->calls, t->bytes < t->rate ? "under" : "at",
		 rate);
	return AP_EXIT_OK;
}

int ap_view_sampling_hint(const struct ap_trace *t)
{
	char note[512];
	int rc = ap_view_sampling_note(t, note, sizeof(note));
	if (!rc && note[0])
		ap_say("note: %s", note);
	return rc;
}

void ap_view_symbols_hint(const struct ap_view *v, enum ap_sample_index si)
{
	struct ap_unsym_module *m;
	double any, total;
	size_t n = ap_report_unsymbolized(v->trace, v->values, v->sym, si, &m, &any, &total);
	char what[64];
	snprintf(what, sizeof(what), "of %s goes through frames", ap_sample_index_name(si));
	ap_view_unsym_note(m, n, any, total, what);
	free(m);
}

void ap_view_unsym_note(const struct ap_unsym_module *m, size_t n, double any, double total,
			const char *what)
{
	if (total > 0 && any >= total * AP_VIEW_UNSYM_SHARE) {
		struct ap_buf b = AP_BUF_INIT;
		ap_buf_addf(&b, "note: %.0f%% %s without symbols, in ", any / total * 100, what);
		/* the biggest three, and those of 1% at least */
		size_t named = 0;
		while (named < n && named < 3 && (!named || m[named].value >= total / 100))
			named++;
		for (size_t i = 0; i < named; i++)
			ap_buf_addf(&b, "%s%s (%.0f%%)", i ? ", " : "", m[i].module,
				    m[i].value / total * 100);
		if (n > named)
			ap_buf_addf(&b, " and %zu more", n - named);
		ap_buf_addstr(&b, ": install their -dbgsym packages (Debian's debian-debug "
				  "archive), point --debug-dir at their separate debug files, or "
				  "let debuginfod fetch them (ALLOCPROF_DEBUGINFOD=1 with "
				  "DEBUGINFOD_URLS set)");
		if (!said_before(b.buf))
			ap_say("%s", b.buf);
		ap_buf_release(&b);
	}
}

static bool read_short;

void ap_view_trace_done(struct ap_trace *t)
{
	if (t && ap_trace_changed(t)) {
		ap_say("a trace file changed while it was being read (truncated or "
			   "overwritten): what is shown above is short of what it held");
		read_short = true;
	}
	ap_trace_free(t);
}

bool ap_view_read_short(void)
{
	return read_short;
}

void ap_view_release(struct ap_view *v)
{
	free(v->values);
	ap_sym_free(v->sym);
	ap_view_trace_done(v->trace);
	memset(v, 0, sizeof(*v));
}

/* ---- numbers as pprof prints them --------------------------------------- */

long long ap_view_round(double v)
{
	return llround(v);
}

void ap_view_format(char *out, size_t len, enum ap_sample_index si, double v)
{
	if (!ap_sample_index_is_bytes(si)) {
		snprintf(out, len, "%lld", ap_view_round(v));
		return;
	}
	ap_format_bytes(out, len, v);
}

void ap_view_format_in(char *out, size_t len, enum ap_sample_index si, double v, int unit)
{
	if (!ap_sample_index_is_bytes(si)) {
		snprintf(out, len, "%lld", ap_view_round(v));
		return;
	}
	if (unit == AP_VIEW_UNIT_EACH)
		unit = ap_bytes_unit(v);
	ap_format_bytes_in(out, len, v, unit);
}

int ap_view_table_unit(const struct ap_report *r)
{
	double min = 0, max = fabs(round(r->total));
	for (size_t i = 0; i < r->nrows; i++) {
		double v = fabs(round(r->rows[i].flat));
		if (v == 0)
			v = fabs(round(r->rows[i].cum));
		if (v > 0 && (min == 0 || v < min))
			min = v;
	}
	if (min == 0)
		min = max;
	int unit = ap_bytes_unit(min);
	if (unit != ap_bytes_unit(max) && min * 100 < max)
		unit = ap_bytes_unit(min * 100);
	return unit;
}

void ap_view_percent(char *out, size_t len, double v, double total)
{
	double r = total != 0 ? fabs(v / total) * 100 : 0;
	if (r >= 99.95 && r <= 100.05)
		snprintf(out, len, "  100%%");
	else if (r >= 1.0)
		snprintf(out, len, "%5.2f%%", r);
	else
		snprintf(out, len, "%5.2g%%", r);
}

json_t *ap_view_json_head(const struct ap_trace *t, enum ap_sample_index si, double total)
{
	return json_pack("{s:o, s:s, s:s, s:I, s:I}", "program", ap_json_text(t->exe), "sample_index",
			 ap_sample_index_name(si), "unit",
			 ap_sample_index_is_bytes(si) ? "bytes" : "count", "total",
			 (json_int_t)ap_view_round(total), "rate", (json_int_t)t->rate);
}

int ap_view_json_print(json_t *root)
{
	int rc = json_dumpf(root, stdout, AP_JSON_FLAGS);
	putchar('\n');
	json_decref(root);
	return rc ? AP_EXIT_FAIL : AP_EXIT_OK;
}

/* ---- the measured replay ----------------------------------------------- */

void ap_view_measure_init(struct ap_view_measure *vm)
{
	struct ap_measure_opts mo;
	ap_measure_opts_init(&mo);
	*vm = (struct ap_view_measure){ .budget_ns = mo.budget_ns, .sites = 6 };
}

/* --replay-cpus's value: N from 1 to 65536, or "all"; -1 when neither. */
static int parse_replay_cpus(struct ap_view_measure *vm, const char *arg)
{
	if (!strcmp(arg, "all")) {
		vm->replay_cpus = AP_REPLAY_CPUS_ALL;
		return 0;
	}
	char *end;
	errno = 0;
	long n = strtol(arg, &end, 10);
	if (errno || *end || end == arg || n < 1 || n > (long)AP_MAX_CPUS)
		return -1;
	vm->replay_cpus = (unsigned)n;
	return 0;
}

int ap_view_parse_level(const char *cmd, const char *arg, int *level)
{
	char *end;
	errno = 0;
	long l = strtol(arg, &end, 10);
	if (errno || *end || end == arg || l < 0 || l > 19) {
		ap_usage_error(cmd, "--compress-level wants a number from 0 to 19, not '%s'", arg);
		return -1;
	}
	*level = (int)l;
	return 0;
}

int ap_view_measure_option(struct ap_view_measure *vm, const char *cmd, int opt,
			   const char *arg)
{
	uint64_t ns;
	switch (opt) {
	case AP_VOPT_NO_MEASURE:
		vm->off = true;
		return 1;
	case AP_VOPT_MEASURE_TIME:
		if (ap_parse_duration(arg, &ns) < 0 || !ns) {
			ap_usage_error(cmd, "--measure-time wants a duration like 5s, not '%s'", arg);
			return -1;
		}
		vm->budget_ns = (double)ns;
		return 1;
	case AP_VOPT_REPLAY_CPUS:
		if (parse_replay_cpus(vm, arg) < 0) {
			ap_usage_error(cmd, "--replay-cpus wants a number of CPUs from 1 to 65536, "
				       "or all, not '%s'", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* allocprof-replay: next to this binary (the build's cli/, or pkglibdir
 * where allocprof-report is installed), else in pkglibdir. */
static void runner_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
	if (slash) {
		*slash = 0;
		snprintf(out, len, "%s/allocprof-replay", self);
		if (access(out, X_OK) == 0)
			return;
	}
	snprintf(out, len, "%s/allocprof-replay", AP_PKGLIBDIR);
}

static void measure_progress(void *ctx, unsigned round, double elapsed_ns, double budget_ns)
{
	(void)ctx;
	fprintf(stderr, "\rallocprof: measuring: round %u, %.1fs (budget %.0fs)", round, elapsed_ns / 1e9,
		budget_ns / 1e9);
	fflush(stderr);
}

int ap_view_touch_check(void)
{
	double share;
	if (ap_advise_touch_env(&share) >= 0)
		return 0;
	ap_say("ALLOCPROF_REPLAY_TOUCH: '%s' is not a share of each block from 0 to 1",
	       getenv("ALLOCPROF_REPLAY_TOUCH"));
	return -1;
}

void ap_view_measure_run(const struct ap_view_measure *vm, struct ap_advice *a,
			 const struct ap_trace *t, const struct ap_site_map *m,
			 const struct ap_advise_options *ao)
{
	if (vm->off) {
		snprintf(a->measure_why, sizeof(a->measure_why), "not asked for (--no-measure)");
		return;
	}
	char runner[PATH_MAX + 32], sampler[PATH_MAX];
	runner_path(runner, sizeof(runner));
	struct ap_measure_opts mo;
	ap_measure_opts_init(&mo);
	mo.runner = runner;
	/* The recording's cost (the baseline under the sampler): without the
	 * sampler, the shares are of the recorded run's time. */
	if (ap_find_sampler(sampler, sizeof(sampler), true) == 0)
		mo.sampler = sampler;
	mo.budget_ns = vm->budget_ns;
	/* A run of several processes (a shell script, a build) is measured
	 * within one budget, the processes in their order, not one budget
	 * each (fifty compilers: twelve minutes) */
	char why[200];
	if (by_process_depth && run_measure_spent >= vm->budget_ns) {
		char d[32];
		ap_advise_format_duration(d, sizeof(d), vm->budget_ns);
		snprintf(why, sizeof(why),
			 "the measured replay's budget for the whole run (--measure-time %s) "
			 "went to the processes before this one; advise --no-children with "
			 "this process's trace measures it alone",
			 d);
		mo.skip_why = why;
	} else if (by_process_depth) {
		/* what is left, shared by the processes still to advise as
		 * their events are: git gc's own process (11 K calls) took all
		 * 15 s of it, in 43 rounds, and left none to the pack-objects
		 * it ran (4 M) */
		double rest = 0, share = 1;
		for (size_t j = run_at; j < run_n; j++)
			rest += run_weight[j];
		if (run_at < run_n && rest > 0)
			share = run_weight[run_at] / rest;
		mo.budget_ns = (vm->budget_ns - run_measure_spent) * share;
	}
	mo.cpus = ap_advise_replay_cpus(a, t, vm->replay_cpus, ap_cpus_here());
	bool progress = vm->progress && ap_progress_wanted();
	if (progress)
		mo.progress = measure_progress;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (by_process_depth && mo.budget_ns > 0 && mo.budget_ns < vm->budget_ns)
		a->measure_budget_run_ns = vm->budget_ns;
	ap_advise_measure(a, t, m, ao, &mo, vm->sites);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	run_measure_spent += (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	if (progress)
		fputs("\r\033[K", stderr);
}
