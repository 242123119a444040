/* What `top` and `list` share: their common options, loading a trace with
 * its symbolizer (progress, warnings), and pprof's number formats. */
#ifndef AP_VIEWS_H
#define AP_VIEWS_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>

#include "ap_report.h"
#include "ap_symbolize.h"
#include "ap_trace.h"

/* Option codes of the shared long options (beyond any short option). */
enum {
	AP_VOPT_ALLOC_SPACE = 0x100,
	AP_VOPT_ALLOC_OBJECTS,
	AP_VOPT_INUSE_SPACE,
	AP_VOPT_INUSE_OBJECTS,
	AP_VOPT_FOCUS,
	AP_VOPT_IGNORE,
	AP_VOPT_DROP_FRAMES,
	AP_VOPT_DEBUG_DIR,
	AP_VOPT_JSON,
	AP_VOPT_FIRST_OWN, /* a command's own codes start here */
};

/* The long options both commands take; a command puts them first in its
 * own table (no sentinel). */
/* clang-format off */
#define AP_VIEW_LONGOPTS                                                       \
	{ "alloc_space", no_argument, NULL, AP_VOPT_ALLOC_SPACE },             \
	{ "alloc_objects", no_argument, NULL, AP_VOPT_ALLOC_OBJECTS },         \
	{ "inuse_space", no_argument, NULL, AP_VOPT_INUSE_SPACE },             \
	{ "inuse_objects", no_argument, NULL, AP_VOPT_INUSE_OBJECTS },         \
	{ "focus", required_argument, NULL, AP_VOPT_FOCUS },                    \
	{ "ignore", required_argument, NULL, AP_VOPT_IGNORE },                  \
	{ "drop-frames", required_argument, NULL, AP_VOPT_DROP_FRAMES },        \
	{ "drop_frames", required_argument, NULL, AP_VOPT_DROP_FRAMES },        \
	{ "debug-dir", required_argument, NULL, AP_VOPT_DEBUG_DIR },            \
	{ "json", no_argument, NULL, AP_VOPT_JSON },                            \
	{ "help", no_argument, NULL, 'h' }
/* clang-format on */

/* The help text of those options. */
#define AP_VIEW_OPTIONS_HELP                                                                       \
	"  --alloc_space        bytes allocated (default)\n"                                       \
	"  --alloc_objects      allocations made\n"                                                \
	"  --inuse_space        bytes still allocated at the end of the trace\n"                   \
	"  --inuse_objects      allocations still live at the end of the trace\n"                  \
	"  --focus REGEX        keep only stacks with a frame matching REGEX\n"                    \
	"  --ignore REGEX       drop stacks with a frame matching REGEX\n"                         \
	"  --drop-frames REGEX  treat functions matching REGEX as allocator\n"                     \
	"                       wrappers (the call site is below them)\n"                          \
	"  --debug-dir DIR      look for separate debug files in DIR too\n"                        \
	"  --json               print JSON (see docs/json.md)\n"                                   \
	"  -h, --help           show this help\n"

struct ap_view_opts {
	struct ap_report_options report;
	struct ap_sym_options sym;
	bool json;
};

void ap_view_opts_init(struct ap_view_opts *o);

/* Handles a shared option code; returns true when `opt` was one. */
bool ap_view_option(struct ap_view_opts *o, int opt, const char *arg);

/* For getopt_long's '?' and ':' (the command's optstring starts with ':'
 * and opterr is 0): prints the usage error, returns AP_EXIT_USAGE. */
int ap_view_bad_option(const char *cmd, int opt, char **argv);

/* A loaded trace, its symbolizer and its per-stack values. */
struct ap_view {
	struct ap_trace *trace;
	struct ap_symbolizer *sym;
	struct ap_stack_values *values;
};

/* Reads the trace at `path` (progress on a terminal), warns on stderr when
 * it is truncated, builds the symbolizer and the per-stack values. Returns
 * 0, or prints the error and returns AP_EXIT_FAIL. */
int ap_view_load(struct ap_view *v, const char *path, const struct ap_view_opts *o);

/* Prints the symbolizer's warnings on stderr. */
void ap_view_warnings(const struct ap_view *v);

void ap_view_release(struct ap_view *v);

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

/* pprof's percentage column: "  100%", "12.34%", " 0.05%". */
void ap_view_percent(char *out, size_t len, double v, double total);

/* The keys every view's JSON starts with: program, sample_index, unit,
 * total, rate (docs/json.md). A new object. */
json_t *ap_view_json_head(const struct ap_trace *t, enum ap_sample_index si, double total);

/* Prints `root` on stdout (indented, a newline after), consumes it. */
int ap_view_json_print(json_t *root);

/* A value as a JSON integer (rounded: sampled values are estimates). */
long long ap_view_round(double v);

#endif
