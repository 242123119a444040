/* What the views (`top`, `list`, `tui`, `export`) share: one option parser
 * with pprof's spellings, loading a trace with its symbolizer (progress,
 * warnings, the first-run hints), and pprof's number formats. */
#ifndef AP_VIEWS_H
#define AP_VIEWS_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>

#include "ap_export.h"
#include "ap_report.h"
#include "ap_symbolize.h"
#include "ap_trace.h"

/* Option codes of the shared long options (beyond any short option). */
enum {
	AP_VOPT_ALLOC_SPACE = 0x100,
	AP_VOPT_ALLOC_OBJECTS,
	AP_VOPT_INUSE_SPACE,
	AP_VOPT_INUSE_OBJECTS,
	AP_VOPT_PEAK_SPACE,
	AP_VOPT_PEAK_OBJECTS,
	AP_VOPT_TEMPORARY,
	AP_VOPT_SAMPLE_INDEX,
	AP_VOPT_FOCUS,
	AP_VOPT_IGNORE,
	AP_VOPT_SHOW,
	AP_VOPT_HIDE,
	AP_VOPT_DROP_FRAMES,
	AP_VOPT_DEBUG_DIR,
	AP_VOPT_JSON,
	AP_VOPT_FUNCTIONS, /* AP_VIEW_GRAN_LONGOPTS */
	AP_VOPT_LINES,
	AP_VOPT_FILES,
	AP_VOPT_NO_CHILDREN, /* AP_VIEW_RUN_LONGOPTS */
	AP_VOPT_BY_PROCESS,
	AP_VOPT_FULL_NAMES, /* AP_VIEW_SYM_LONGOPTS */
	AP_VOPT_SYMBOLIZE,
	AP_VOPT_SUPPRESSIONS, /* AP_VIEW_SUPP_LONGOPTS */
	AP_VOPT_NO_SUPPRESSIONS,
	AP_VOPT_NO_MEASURE, /* AP_VIEW_MEASURE_LONGOPTS */
	AP_VOPT_MEASURE_TIME,
	AP_VOPT_REPLAY_CPUS,
	AP_VOPT_FIRST_OWN, /* a command's own codes start here */
};

/* What --temporary counts, the line top and peek print above a
 * temporary table. */
#define AP_VIEW_TEMPORARY_SAYS                                                                     \
	"Temporary: blocks freed by their own thread's next event (not heaptrack's count, "        \
	"which matches a free to the allocation just before it, in all threads' order, by stack "  \
	"and size)"

/* The symbolizer's options, as the views spell them (also in
 * AP_VIEW_LONGOPTS). */
#define AP_VIEW_SYM_LONGOPTS                                                   \
	{ "drop-frames", required_argument, NULL, AP_VOPT_DROP_FRAMES },        \
	{ "drop_frames", required_argument, NULL, AP_VOPT_DROP_FRAMES },        \
	{ "debug-dir", required_argument, NULL, AP_VOPT_DEBUG_DIR },            \
	{ "debug_dir", required_argument, NULL, AP_VOPT_DEBUG_DIR },            \
	{ "full-names", no_argument, NULL, AP_VOPT_FULL_NAMES },               \
	{ "full_names", no_argument, NULL, AP_VOPT_FULL_NAMES },               \
	{ "symbolize", required_argument, NULL, AP_VOPT_SYMBOLIZE }

/* Their help text. */
#define AP_VIEW_SYM_HELP                                                                           \
	"  --drop-frames REGEX  treat functions matching REGEX as allocator\n"                     \
	"                       wrappers (the call site is below them)\n"                          \
	"  --debug-dir DIR      look for separate debug files in DIR too\n"                        \
	AP_VIEW_NAMES_HELP                                                                         \
	"                       (pprof's -symbolize=demangle=full works too)\n"

/* The help text of --full-names alone. */
#define AP_VIEW_NAMES_HELP                                                                         \
	"  --full-names         whole demangled names (return type, template\n"                     \
	"                       arguments, parameters) instead of short ones\n"

/* Leak suppressions (also in AP_VIEW_LONGOPTS). */
#define AP_VIEW_SUPP_LONGOPTS                                                  \
	{ "suppressions", required_argument, NULL, AP_VOPT_SUPPRESSIONS },      \
	{ "no-suppressions", no_argument, NULL, AP_VOPT_NO_SUPPRESSIONS },     \
	{ "no_suppressions", no_argument, NULL, AP_VOPT_NO_SUPPRESSIONS }

/* Their help text. */
#define AP_VIEW_SUPP_HELP                                                                          \
	"  --suppressions FILE  leaks to leave out of inuse_space and inuse_objects:\n"              \
	"                       'leak:PATTERN' lines, as LeakSanitizer and heaptrack\n"              \
	"                       read them (PATTERN in a function, module or file\n"                 \
	"                       name of the stack; '*' any text, '^' and '$' anchor)\n"             \
	"  --no-suppressions    leave nothing out: not even the memory the C and\n"                 \
	"                       C++ runtimes keep by design (libstdc++'s emergency\n"               \
	"                       exception pool, stdio buffers), left out by default\n"

/* How the traces given are read (also in AP_VIEW_LONGOPTS). */
#define AP_VIEW_RUN_LONGOPTS                                                   \
	{ "no-children", no_argument, NULL, AP_VOPT_NO_CHILDREN },             \
	{ "no_children", no_argument, NULL, AP_VOPT_NO_CHILDREN },             \
	{ "by-process", no_argument, NULL, AP_VOPT_BY_PROCESS },               \
	{ "by_process", no_argument, NULL, AP_VOPT_BY_PROCESS }

/* Their help text. */
#define AP_VIEW_RUN_HELP                                                                           \
	"  --no-children        read only the trace files given, not the traces of the\n"          \
	"                       processes and images that followed them (TRACE.<pid>,\n"           \
	"                       TRACE.exec<n>)\n"                                                  \
	"  --by-process         one report per process instead of one for the run\n"

/* The long options every view takes; a command puts them first in its
 * own table (no sentinel). Each is also spelled as pprof spells it
 * (sample_index, drop_frames, debug_dir); see ap_view_getopt. */
/* clang-format off */
#define AP_VIEW_LONGOPTS                                                       \
	{ "alloc_space", no_argument, NULL, AP_VOPT_ALLOC_SPACE },             \
	{ "alloc_objects", no_argument, NULL, AP_VOPT_ALLOC_OBJECTS },         \
	{ "inuse_space", no_argument, NULL, AP_VOPT_INUSE_SPACE },             \
	{ "inuse_objects", no_argument, NULL, AP_VOPT_INUSE_OBJECTS },         \
	{ "peak_space", no_argument, NULL, AP_VOPT_PEAK_SPACE },               \
	{ "peak_objects", no_argument, NULL, AP_VOPT_PEAK_OBJECTS },           \
	{ "temporary", no_argument, NULL, AP_VOPT_TEMPORARY },                 \
	{ "sample_index", required_argument, NULL, AP_VOPT_SAMPLE_INDEX },      \
	{ "sample-index", required_argument, NULL, AP_VOPT_SAMPLE_INDEX },      \
	{ "focus", required_argument, NULL, AP_VOPT_FOCUS },                    \
	{ "ignore", required_argument, NULL, AP_VOPT_IGNORE },                  \
	{ "show", required_argument, NULL, AP_VOPT_SHOW },                      \
	{ "hide", required_argument, NULL, AP_VOPT_HIDE },                      \
	AP_VIEW_SYM_LONGOPTS,                                                  \
	AP_VIEW_SUPP_LONGOPTS,                                                 \
	AP_VIEW_RUN_LONGOPTS,                                                  \
	{ "json", no_argument, NULL, AP_VOPT_JSON },                            \
	{ "help", no_argument, NULL, 'h' }
/* clang-format on */

/* The granularity options of the views that aggregate into nodes (top,
 * diff), handled by ap_view_option_of too. */
#define AP_VIEW_GRAN_LONGOPTS                                                  \
	{ "functions", no_argument, NULL, AP_VOPT_FUNCTIONS },                 \
	{ "lines", no_argument, NULL, AP_VOPT_LINES },                         \
	{ "files", no_argument, NULL, AP_VOPT_FILES }

/* The help text of those options. */
#define AP_VIEW_OPTIONS_HELP                                                                       \
	"  --alloc_space        bytes allocated (default)\n"                                       \
	"  --alloc_objects      allocations made\n"                                                \
	"  --inuse_space        bytes still allocated at the end of the trace\n"                   \
	"  --inuse_objects      allocations still live at the end of the trace\n"                  \
	"  --peak_space         bytes live when in-use bytes peaked (the peak\n"                   \
	"                       stats reports; sampled: the samples' estimate at\n"                \
	"                       their own peak, its error and stats' peak on the\n"                \
	"                       Peak: line)\n"                                                     \
	"  --peak_objects       allocations live at that moment\n"                                 \
	"  --temporary          allocations whose block its own thread freed as its\n"             \
	"                       next event (needs --all; not heaptrack's count, which\n"           \
	"                       matches a free to the allocation just before it in\n"              \
	"                       all threads' order by stack and size)\n"                           \
	"  --sample_index NAME  one of the seven above, by name\n"                                 \
	"  --focus REGEX        keep only stacks with a frame matching REGEX\n"                    \
	"  --ignore REGEX       drop stacks with a frame matching REGEX\n"                         \
	"  --show REGEX         keep only the frames matching REGEX in each stack\n"               \
	"  --hide REGEX         take the frames matching REGEX out of each stack\n"                \
	AP_VIEW_SYM_HELP                                                                           \
	AP_VIEW_SUPP_HELP                                                                          \
	AP_VIEW_RUN_HELP                                                                           \
	"  --json               print JSON (see docs/json.md)\n"                                   \
	"  -h, --help           show this help\n"                                                  \
	"Options are spelled as pprof's too: one dash or two, the value after '='\n"              \
	"or as the next argument (-nodecount=3, --sample_index alloc_objects).\n"                  \
	"REGEXes are pprof's (RE2) syntax, matched with PCRE2: (?i)render works.\n"              \
	AP_VIEW_RUN_TEXT

/* What the help says of several traces and whole runs. */
#define AP_VIEW_RUN_TEXT                                                                           \
	"Several TRACEs are read as one, as pprof merges profiles. A TRACE is read\n"               \
	"with the traces of the processes its program started and the programs\n"                  \
	"they exec'd (TRACE.<pid>, TRACE.exec<n>): the whole run.\n"

struct ap_view_opts {
	struct ap_report_options report;
	struct ap_sym_options sym;
	bool json;
	bool no_children;	/* --no-children */
	bool by_process;	/* --by-process */
	bool no_values;		/* ap_view_load: the command needs no per-stack values */
	const char *suppressions; /* --suppressions FILE, or NULL */
	bool no_suppressions;	/* --no-suppressions: not even the built-in rule */
};

void ap_view_opts_init(struct ap_view_opts *o);

/* getopt_long_only with the views' conventions: pprof's -name and --name,
 * a value after '=' or as the next argument; a single letter that is in
 * `shortopts` stays a short option (-n 3, -o FILE, -h). `shortopts` starts
 * with ':'; set optind = 1 and opterr = 0 before the first call. */
int ap_view_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* The next option the command `cmd` handles itself: ap_view_getopt with
 * the shared view options applied to `o` (ap_view_option_of) and skipped.
 * Returns the option, -1 at the end, or AP_VIEW_BAD_USAGE after a usage
 * error was printed. Sets optind and opterr first when optind is 0; the
 * caller sets optind = 0 before the first call. */
#define AP_VIEW_BAD_USAGE (-2)
int ap_view_next_option(struct ap_view_opts *o, const char *cmd, int argc, char **argv,
			const char *shortopts, const struct option *longopts);

/* A regex given on the command line (an option's value, or list's
 * REGEX) compiled once where it is given: 0, or -1 after a usage error
 * "<cmd>: <opt>: bad regex ..." (status 2), said before any trace is
 * read. */
int ap_view_regex_ok(const char *cmd, const char *opt, const char *arg);

/* Handles a shared option code: returns 1 when `opt` was one, 0 when it
 * is not, -1 after printing `cmd`'s usage error for a bad value (return
 * AP_EXIT_USAGE then). */
int ap_view_option_of(struct ap_view_opts *o, const char *cmd, int opt, const char *arg);

/* The same for a command whose table has no option with a value that can
 * be bad (no --sample_index): returns true when `opt` was one. */
bool ap_view_option(struct ap_view_opts *o, int opt, const char *arg);

/* Parses pprof's -nodecount value into *out (>= 0). Returns 0, or prints
 * the usage error and returns -1. */
int ap_view_parse_count(const char *cmd, const char *what, const char *arg, long *out);

/* The same for pprof's -nodefraction/-edgefraction (a number from 0 to
 * 1). */
int ap_view_parse_fraction(const char *cmd, const char *what, const char *arg, double *out);

/* For getopt_long's '?' and ':' (the command's optstring starts with ':'
 * and opterr is 0): prints the usage error, returns AP_EXIT_USAGE. */
int ap_view_bad_option(const char *cmd, int opt, char **argv);

/* A loaded trace, its symbolizer and its per-stack values. */
struct ap_view {
	struct ap_trace *trace;
	struct ap_symbolizer *sym;
	struct ap_stack_values *values;	/* in-use values without the suppressed */
	struct ap_suppressed suppressed;
};

/* Reads the traces at `paths` (n >= 1) as one (each with its child
 * traces unless o->no_children; ap_run_read, ap_run_merge), progress on a
 * terminal, a warning on stderr when one is truncated ("...: truncated
 * trace (why)" then `covers`, what is shown of it). Returns 0, or prints
 * the error and returns AP_EXIT_FAIL. */
int ap_view_read(struct ap_trace **out, char *const *paths, size_t n, const struct ap_view_opts *o,
		 const char *covers);

/* ap_view_read, then the symbolizer and the per-stack values (a replay of
 * the trace; left NULL with o->no_values), suppressions applied to their
 * in-use values (a note on stderr says what was left out when the view's
 * sample index is inuse_*). Returns 0, or prints the error and returns
 * AP_EXIT_FAIL. */
int ap_view_load(struct ap_view *v, char *const *paths, size_t n, const struct ap_view_opts *o);

/* A whole run's views that advise (the TUI, html) advise one process, as
 * `advise` does each: a pool does not cross processes. The one advised is
 * the process that made the most allocation calls (events where END has
 * no counts); its index in run->procs. */
size_t ap_view_advised_process(const struct ap_trace *run);

/* Reads that process's trace alone into *out (its symbolizer, no values;
 * nothing printed: the run's warnings were said when it was read).
 * Returns 0, or -1 with err set. */
int ap_view_load_process(struct ap_view *out, const struct ap_trace *run, size_t proc,
			 const struct ap_view_opts *o, struct ap_error *err);

/* Appends a command line as the text views show it, on one line: its
 * first AP_VIEW_CMDLINE_MAX bytes (whole characters; control characters
 * as spaces), then "..." when it is longer (a compiler's driver runs
 * commands of kilobytes). */
#define AP_VIEW_CMDLINE_MAX 120
void ap_view_add_cmdline(struct ap_buf *b, const char *cmdline);

/* --by-process: runs the command `fn` (its cmd_* entry, given the argv it
 * was given) once per process of the run that the traces argv[first..argc)
 * make, each on that process's trace alone (--no-children), under a
 * heading "==> TRACE: pid N, CMDLINE <==" (with --json: an array of the
 * command's objects). A run of one process is run once, without a
 * heading. argv[1..optind) are the options (getopt moved them first),
 * argv[optind..first) the command's other arguments (list's REGEX).
 * Returns the first non-zero status of the runs, else 0. */
int ap_view_by_process(int (*fn)(int, char **), int argc, char **argv, int first,
		       const struct ap_view_opts *o);

/* First-run hints, one line each on stderr ("allocprof: note: ..."):
 *
 * A sampled trace with fewer than AP_VIEW_FEW_SAMPLES sampled allocations:
 * what the program allocated (the END record's exact calls and bytes),
 * against the rate, and to record with --all or a smaller --rate. Nothing
 * for a trace recorded with --all or with enough samples. For every view
 * (advise included). */
/* The peak in-use bytes a view prints, and what kind of number it is:
 * exact (an --all trace: requested bytes, from the events), counted (a
 * sampled trace whose END has the sampler's live-byte peak: usable bytes,
 * exact to within `within`), or an estimate from the samples (older
 * traces, a whole run of several processes: ± `within`, one standard
 * deviation). `estimate` and `sd`: the peak the events give (what
 * ap_trace_totals or a timeline computed). */
enum ap_peak_kind { AP_PEAK_EXACT, AP_PEAK_COUNTED, AP_PEAK_ESTIMATE };
struct ap_view_peak {
	enum ap_peak_kind kind;
	double bytes, within;
};
struct ap_view_peak ap_view_peak(const struct ap_trace *t, double estimate, double sd);
/* What it is, in words: "exact", "exact to within 16kB, by usable size",
 * "estimate from samples ± 1MB" (buf: at least 160 bytes). */
const char *ap_view_peak_says(const struct ap_view_peak *p, char *buf, size_t len);
const char *ap_view_peak_kind_name(enum ap_peak_kind k);

/* For a peak index (peak_space, peak_objects) of a sampled trace, what
 * the view's numbers are, in one line into buf (at least 400 bytes):
 * the samples' estimate of the peak (`estimate`, the table's total for
 * peak_space) with its standard deviation, at the moment their in-use
 * bytes peaked, and the peak stats prints beside it (the sampler's count
 * where the trace has one). Returns 1; 0 (nothing to say) for an exact
 * trace or another index; -1 with err set when its replay of the trace
 * (ap_trace_totals) fails. */
AP_MUST_CHECK int ap_view_peak_estimate_says(const struct ap_trace *t, enum ap_sample_index si,
					     char *buf, size_t len, struct ap_error *err);

/* The lines the text views (top, peek, tree) print under "Type:" about
 * their numbers: "Sampling: ..." (every allocation, or the rate and that
 * the values are estimates), for --temporary what it counts, for a peak
 * index of a sampled trace "Peak: ..." (ap_view_peak_estimate_says).
 * These, the notes and the hint below replay or read the trace's events:
 * when that fails, they print the error and return AP_EXIT_FAIL (else
 * AP_EXIT_OK), and the command stops there. */
AP_MUST_CHECK int ap_view_print_kind(const struct ap_trace *t, enum ap_sample_index si);

/* The same line as a note on stderr ("allocprof: note: Peak: ..."), for
 * the views with no header of their own to put it in (list, flamegraph,
 * export, diff). */
AP_MUST_CHECK int ap_view_peak_note(const struct ap_trace *t, enum ap_sample_index si);

/* A sampled trace viewed by inuse_objects: a note on stderr with the
 * count's error bar (ap_trace_totals' inuse_objects_sd), which the
 * pprof-compatible outputs have no place for. */
AP_MUST_CHECK int ap_view_inuse_objects_note(const struct ap_trace *t, enum ap_sample_index si);
/* Its text (no "note: ") into buf (at least 400 bytes). Returns 1; 0
 * (nothing to say) for an exact trace; -1 with err set when its replay
 * of the trace (ap_trace_totals) fails. */
AP_MUST_CHECK int ap_view_inuse_objects_says(const struct ap_trace *t, char *buf, size_t len,
					     struct ap_error *err);

#define AP_VIEW_FEW_SAMPLES 50
AP_MUST_CHECK int ap_view_sampling_hint(const struct ap_trace *t);
/* The same note, into note[len] (empty when there is none) instead of
 * stderr: the TUI puts it on its status line too. */
AP_MUST_CHECK int ap_view_sampling_note(const struct ap_trace *t, char *note, size_t len);

/* When at least AP_VIEW_UNSYM_SHARE of the total of `si` goes through
 * frames without symbols: which modules (the biggest shares first) and
 * how to get their symbols (-dbgsym packages, --debug-dir, debuginfod). */
#define AP_VIEW_UNSYM_SHARE 0.05
void ap_view_symbols_hint(const struct ap_view *v, enum ap_sample_index si);
/* The note's words, for `any` of `total` in the modules m[n] (biggest
 * first): "note: 97% `what` without symbols, in ...". advise says it of
 * the bytes allocated at sites that have no name. */
void ap_view_unsym_note(const struct ap_unsym_module *m, size_t n, double any, double total,
			const char *what);

/* Prints the symbolizer's warnings on stderr. */
void ap_view_warnings(const struct ap_view *v);

void ap_view_release(struct ap_view *v);
/* Frees a trace the view read, first saying so if a pass over its events
 * found the file changed since it was read (ap_trace_changed). */
void ap_view_trace_done(struct ap_trace *t);
/* True once ap_view_trace_done found such a trace: the command then
 * exits with a failure, its output being short. */
bool ap_view_read_short(void);

/* Progress of the symbolizing pass, for ap_report_new / ap_list_new:
 * pass ap_view_progress_fn() and ap_view_progress_ctx(). NULL when no
 * progress is wanted. */
ap_report_progress_fn ap_view_progress_fn(void);
void *ap_view_progress_ctx(const char *what);
/* Clears the progress line, if one was drawn. */
void ap_view_progress_done(void);

/* A value of `si` as pprof prints it: bytes scaled ("1.50MB", "512B",
 * "0"), counts as rounded integers. */
void ap_view_format(char *out, size_t len, enum ap_sample_index si, double v);

/* The same in a fixed byte unit (ap_bytes_unit; ignored for counts), as
 * pprof prints a table whose unit it chose once (ap_view_table_unit), or
 * with AP_VIEW_UNIT_EACH each value in its own unit, as ap_view_format:
 * for the screens, where pprof's common scale does not bind us and a
 * table in the unit of its smallest node shows 712330949B under a total
 * of 1.29GB. */
#define AP_VIEW_UNIT_EACH (-1)
void ap_view_format_in(char *out, size_t len, enum ap_sample_index si, double v, int unit);

/* The unit pprof's selectOutputUnit chooses for a table of `rows`
 * (-top): that of the smallest non-zero node value (its flat, else its
 * cum), or of 100 times it when the total would be in another unit and
 * is more than 100 times larger. */
int ap_view_table_unit(const struct ap_report *r);

/* pprof's percentage column: "  100%", "12.34%", " 0.05%". */
void ap_view_percent(char *out, size_t len, double v, double total);

/* The keys every view's JSON starts with: program, sample_index, unit,
 * total, rate (docs/json.md). A new object. */
json_t *ap_view_json_head(const struct ap_trace *t, enum ap_sample_index si, double total);

/* Prints `root` on stdout (indented, a newline after), consumes it. */
int ap_view_json_print(json_t *root);

/* A run's costs as advise --json prints them (cmd-advise.c; try too). */
struct ap_run_cost;
json_t *ap_advise_cost_json(const struct ap_run_cost *c);
/* Sets the measured replay's CPUs in o: replay_cpus, replay_cpus_from,
 * recorded_cpus, cpus_allowed, runner_cpus (docs/json.md). */
struct ap_advice;
void ap_advise_replay_cpus_json(const struct ap_advice *a, json_t *o);

/* advise --json's document of the first `n` sites of `a` (cmd-advise.c);
 * a new object. */
struct ap_advice;
json_t *ap_advise_json(const struct ap_advice *a, const struct ap_trace *t, size_t n);

/* diff --json's tables of base `bv` and new `nv` (cmd-diff.c): an object
 * with one member per sample index (temporary only when both traces have
 * every allocation), rows by |flat delta|. NULL after printing the error
 * (a bad regex). */
json_t *ap_diff_json(const struct ap_view *bv, const struct ap_view *nv,
		     const struct ap_report_options *opts);

/* ---- the advisor's measured replay, for advise and the tui ---- */
struct ap_advice;
struct ap_site_map;
struct ap_advise_options;
struct ap_view_measure {
	bool off;		/* --no-measure */
	double budget_ns;	/* --measure-time (default 15 s) */
	size_t sites;		/* --measure-sites (default 6) */
	bool progress;		/* a progress line on a terminal */
	/* --replay-cpus: a count, AP_REPLAY_CPUS_ALL, or 0 (default): as
	 * many as the recorded run could use (ap_advise_replay_cpus) */
	unsigned replay_cpus;
};
void ap_view_measure_init(struct ap_view_measure *vm);
/* --compress-level's value (0 to 19) for `cmd` into *level: 0, or -1
 * after printing the usage error (return AP_EXIT_USAGE then). */
int ap_view_parse_level(const char *cmd, const char *arg, int *level);

/* The measured replay's options, advise's and try's alike. */
#define AP_VIEW_MEASURE_LONGOPTS                                                \
	{ "no-measure", no_argument, NULL, AP_VOPT_NO_MEASURE },               \
	{ "measure-time", required_argument, NULL, AP_VOPT_MEASURE_TIME },     \
	{ "replay-cpus", required_argument, NULL, AP_VOPT_REPLAY_CPUS }
/* Handles one of them for the command `cmd`: 1 when `opt` was one, 0
 * when it is not, -1 after printing the usage error for a bad value
 * (return AP_EXIT_USAGE then). */
int ap_view_measure_option(struct ap_view_measure *vm, const char *cmd, int opt,
			   const char *arg);
/* Measures a's sites (ap_advise_measure) with allocprof-replay from next
 * to this program, else from pkglibdir; or, off, says so in a. */
/* ALLOCPROF_REPLAY_TOUCH, read by the measured replay deep inside:
 * checked by each command that measures, where a bad value can still be
 * said before any work. 0, or -1 having said why. */
int ap_view_touch_check(void);
void ap_view_measure_run(const struct ap_view_measure *vm, struct ap_advice *a,
			 const struct ap_trace *t, const struct ap_site_map *m,
			 const struct ap_advise_options *ao);

/* A value as a JSON integer (rounded: sampled values are estimates). */
long long ap_view_round(double v);

#endif
