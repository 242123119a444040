/* Aggregation of a trace into the views pprof users read (`top`, `list`):
 * per-stack sums of the four sample indexes, then flat and cum per function,
 * source line or file. The models here hold raw numbers only; the commands
 * (cli/cmd-top.c, cli/cmd-list.c) render them as text or JSON. */
#ifndef AP_REPORT_H
#define AP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_replay.h"
#include "ap_symbolize.h"
#include "ap_trace.h"
#include "ap_util.h"

/* The sample indexes, in pprof's order for heap profiles. */
enum ap_sample_index {
	AP_SI_ALLOC_OBJECTS,
	AP_SI_ALLOC_SPACE,
	AP_SI_INUSE_OBJECTS,
	AP_SI_INUSE_SPACE,
	AP_SI_PEAK_OBJECTS,	/* live when in-use bytes peaked (massif's peak snapshot) */
	AP_SI_PEAK_SPACE,
	AP_SI_TEMPORARY,	/* blocks freed by their own thread's next event */
	AP_SI_COUNT
};

/* "alloc_objects", "alloc_space", "inuse_objects", "inuse_space",
 * "peak_objects", "peak_space", "temporary". */
const char *ap_sample_index_name(enum ap_sample_index si);
/* true for the *_space indexes (values are bytes), false for counts. */
bool ap_sample_index_is_bytes(enum ap_sample_index si);

/* The values of one stack, weights applied, indexed by enum
 * ap_sample_index. inuse_* are the blocks still live at the end of the
 * trace, peak_* those live right after the allocation at which the live
 * bytes were highest (the moment of stats' peak_inuse_space). */
struct ap_stack_values {
	double v[AP_SI_COUNT];
};

/* One pass over the events of `t` (a replay): returns an array of
 * t->nstacks entries
 * (indexed by stack id; the caller frees it). Every SAMPLED allocation adds
 * ap_trace_weight(t, size) objects and size times that in bytes to its
 * stack; the in-use values replay the events in order, a FREE ending the
 * most recent live block at its address (a realloc's FREE half ends the
 * old block), exactly as ap_trace_totals() matches them. Returns NULL with err set when the
 * replay fails (ap_replay). */
struct ap_stack_values *ap_report_stack_values(const struct ap_trace *t, struct ap_error *err);

/* The same values as the events come (`tui --follow`: ap_replay_start's
 * run fed as the trace grows). ap_values_run_consumer is the consumer to
 * give the run (the run lives as long as it); ap_values_run_grow makes
 * room for the stacks t has now (call it before feeding events that may
 * use new ones); ap_values_run_now is a copy of the values of the events
 * fed so far (in-use: the blocks live now; peak: the highest so far),
 * the caller's to free; after ap_replay_finish, ap_values_run_end gives
 * what ap_report_stack_values gives, and frees the run. */
struct ap_values_run;
struct ap_values_run *ap_values_run_new(const struct ap_trace *t);
void ap_values_run_grow(struct ap_values_run *run);
struct ap_replay_consumer ap_values_run_consumer(struct ap_values_run *run);
struct ap_stack_values *ap_values_run_now(const struct ap_values_run *run);
/* The stacks the arrays ap_values_run_now and _end give have room for
 * (those of t at the last ap_values_run_grow, at least 1). */
size_t ap_values_run_stacks(const struct ap_values_run *run);
struct ap_stack_values *ap_values_run_end(struct ap_values_run *run);
void ap_values_run_free(struct ap_values_run *run);

/* Leak suppressions, in LeakSanitizer's and heaptrack's format: a file of
 * "leak:PATTERN" lines ('#' comments, blank lines), PATTERN matched in
 * the function (short or whole name), module path or source file of any
 * frame from the call site outwards, '*' any text, a leading '^' and a
 * trailing '$' anchors. With `builtin`, also the built-in rule: a call
 * site in the C++ runtime's own code (libstdc++.so: its emergency
 * exception pool, never freed by design). Returns NULL with err set
 * ("PATH:LINE: ...", or the file's error) on failure. path may be NULL. */
struct ap_suppressions;
struct ap_suppressions *ap_suppress_new(const char *path, bool builtin, struct ap_error *err);
/* (builtin: also a call site in glibc's _IO_file_doallocate, the stdio
 * buffers.) */
void ap_suppress_free(struct ap_suppressions *s);

/* The rule that suppresses a stack (its frames and call site, as
 * ap_sym_stack gives them): the index of the file's rule, the number of
 * file rules for the built-in one, or -1 when none does. */
int ap_suppress_stack(const struct ap_suppressions *s, const struct ap_frame *fr, size_t n,
		      size_t site);

/* What ap_suppress_values took out. */
struct ap_suppressed {
	double objects, bytes;	/* in use, all rules */
	double builtin_bytes;	/* of those bytes, the built-in rule's */
};

/* Zeroes the in-use values (inuse_objects, inuse_space) of every stack
 * that `s` suppresses; the other indexes stay. */
void ap_suppress_values(const struct ap_suppressions *s, const struct ap_trace *t,
			struct ap_symbolizer *sym, struct ap_stack_values *values,
			struct ap_suppressed *out);

enum ap_granularity {
	AP_GRAN_FUNCTIONS, /* node = function name */
	AP_GRAN_LINES,	   /* node = (function, file, line) */
	AP_GRAN_FILES,	   /* node = file */
};

struct ap_report_options {
	enum ap_sample_index sample_index;
	enum ap_granularity granularity;
	/* Regexes in pprof's dialect (ap_regex.h) or NULL. A stack is kept
	 * when some frame matches focus (or focus is NULL) and no frame
	 * matches ignore, as pprof does it. Frames are the shown ones (the
	 * call site and its callers; allocator frames are not matched); a
	 * frame matches by its function name, and with lines/files
	 * granularity also by its file. */
	const char *focus;
	const char *ignore;
	/* pprof's show and hide: of the kept stacks' frames, only those
	 * matching show (when given) and not matching hide stay; the first
	 * one left is the node with the flat value. A stack left without
	 * frames is dropped. NULL when not given. */
	const char *show;
	const char *hide;
	/* pprof's nodefraction (`top` only; 0 keeps every node): nodes whose
	 * cum is under node_fraction times the kept total (truncated to an
	 * integer, as pprof does) are dropped from the rows. */
	double node_fraction;
	/* pprof's nodecount: after node_fraction, only the first node_count
	 * nodes in the order of the rows (0: all). */
	size_t node_count;
	/* pprof's edgefraction: edges whose value is under edge_fraction
	 * times the kept total (truncated) are dropped from the edges, and
	 * so from the inline marks (0 keeps every edge). */
	double edge_fraction;
	/* Rows by cum instead of flat (see ap_report_sort); node_count takes
	 * the first ones in that order. */
	bool cum_sort;
};

/* One node of the top table. */
struct ap_report_row {
	char *name;  /* display name: "func", "func file:line" or "file" */
	char *func;  /* function (NULL with files granularity) */
	char *file;  /* source file, NULL when unknown */
	int line;    /* lines granularity only, else 0 */
	double flat; /* this node is the call site */
	double cum;  /* this node is on the stack (once per stack) */
	/* pprof's mark: "(inline)" when every caller inlined this node,
	 * "(partial-inline)" when some did, NULL otherwise. Static. */
	const char *inline_mark;
};

/* A caller -> callee edge between two rows (the pointers are the rows'
 * names, valid as long as the report): the value of the stacks through
 * it, once per stack; inline when the callee was inlined at every one. */
struct ap_report_edge {
	const char *from, *to;
	double value;
	bool inl;
};

struct ap_report {
	enum ap_sample_index sample_index;
	enum ap_granularity granularity;
	double total;		    /* sum over all stacks, before focus/ignore */
	double kept;		    /* sum over the stacks focus/ignore kept */
	size_t stacks;		    /* distinct stacks with a non-zero value */
	size_t kept_stacks;	    /* of those, the ones kept */
	struct ap_report_row *rows; /* sorted, see ap_report_sort */
	size_t nrows;
	struct ap_report_edge *edges; /* between the rows, in no order */
	size_t nedges;
	size_t nodes;		    /* nodes after node_fraction, before node_count */
	size_t dropped;		    /* nodes under the node fraction, not in rows */
	/* pprof's "(cum <= X)" of its "Dropped" line: node_fraction times
	 * total (before focus), truncated. */
	double dropped_cutoff;
};

/* Appends `path` to kb cleaned as Go's filepath.Clean cleans it (pprof
 * names line and file nodes, and list's routines, so): no "." elements,
 * no "dir/..", no repeated '/'; "./csu/../csu/libc-start.c" is
 * "csu/libc-start.c". */
void ap_report_clean_path(struct ap_buf *kb, const char *path);

/* Progress of the symbolizing pass: `done` of `total` stacks. */
typedef void (*ap_report_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Builds the top model of `t`. `values` is ap_report_stack_values(t) (pass
 * NULL to compute it here). Each distinct stack with a non-zero value is
 * expanded once with ap_sym_stack; its call site is the first non-allocator
 * frame and its callers count for cum. Rows are sorted by flat (see
 * ap_report_sort). Returns NULL with err set on a bad focus/ignore regex,
 * or when computing the values fails. `progress` may be NULL. */
struct ap_report *ap_report_new(const struct ap_trace *t, const struct ap_stack_values *values,
				struct ap_symbolizer *sym, const struct ap_report_options *opts,
				ap_report_progress_fn progress, void *progress_ctx,
				struct ap_error *err);

/* The nodes of the top model with, per stack, the nodes it holds: what
 * a page needs to sum any sample index, or the values of any part of the
 * run, into flat and cum itself (`allocprof html`). The nodes are those
 * ap_report_new makes, with no node fraction and no node count, of
 * every stack with a value in some sample index; a stack's nodes are in
 * the order it reaches them from the outermost caller in, each once. */
struct ap_report_paths {
	char **names; /* per node: the row's name, as ap_report_row.name */
	size_t nnames;
	/* per trace stack id (t->nstacks): nodes[off[id] .. off[id] +
	 * len[id]) are its nodes, each counted in cum; flat[id] the node
	 * its flat goes to. len 0 and flat UINT32_MAX for a stack with no
	 * value or one the filters drop. */
	uint32_t *off, *len, *flat;
	uint32_t *nodes;
	size_t n, alloc;
};

/* Builds the paths of `t` for opts->granularity and its focus, ignore,
 * show and hide (the other fields are ignored). `values` as for
 * ap_report_new. Returns NULL with err set on a bad regex. */
struct ap_report_paths *ap_report_paths_new(const struct ap_trace *t,
					    const struct ap_stack_values *values,
					    struct ap_symbolizer *sym,
					    const struct ap_report_options *opts,
					    struct ap_error *err);
void ap_report_paths_free(struct ap_report_paths *p);

/* Sorts the rows by flat (by cum when `by_cum`), descending, ties by name. */
void ap_report_sort(struct ap_report *r, bool by_cum);

void ap_report_free(struct ap_report *r);

/* A module whose frames have no symbols, and the value of the stacks
 * that go through such a frame (counted once per stack). */
struct ap_unsym_module {
	const char *module; /* the mapping's path; owned by sym */
	double value;
};

/* For the first-run hint of `top`: the modules with unsymbolized shown
 * frames (the call site and its callers) whose file was read (not
 * missing, not rebuilt: ap_frame.module_unusable) in the stacks with a non-zero
 * value of `si`, by value descending, into *out (free() it; NULL when
 * none). Returns how many; *any is set to the value of the stacks with
 * at least one such frame, *total to the value of all, from `values`
 * (ap_report_stack_values(t)). Never fails. */
size_t ap_report_unsymbolized(const struct ap_trace *t, const struct ap_stack_values *values,
			      struct ap_symbolizer *sym, enum ap_sample_index si,
			      struct ap_unsym_module **out, double *any, double *total);

/* The list model: per function (and source file), per line. */
struct ap_list_line {
	int line;
	double flat, cum;
	char *source; /* the line's text (no newline), NULL when not found */
};

struct ap_list_func {
	char *name;
	char *file; /* file as recorded in the debug info, NULL when unknown */
	char *path; /* where the source was read from, NULL when not found */
	double flat, cum;
	/* With the source found: every line from a few lines before the first
	 * line with samples to a few after the last. Otherwise: the lines with
	 * samples only. Ascending. */
	struct ap_list_line *lines;
	size_t nlines;
};

struct ap_list {
	enum ap_sample_index sample_index;
	double total;		    /* sum over all stacks, before focus/ignore */
	struct ap_list_func *funcs; /* by name, then file (no file first) */
	size_t nfuncs;
};

/* Lines of context `list` shows before the first and after the last line
 * with samples (pprof's margin). */
#define AP_LIST_MARGIN 5

/* Builds the list model for every function whose name matches the regex
 * `func_regex` (ap_regex.h) (opts->granularity is ignored). Source files
 * are read from the recorded path, or, when that does not exist, from the
 * directories in `source_path` (colon-separated, may be NULL), trying the
 * recorded path's trailing components: dir/a/b/c.c, dir/b/c.c, dir/c.c.
 * Returns NULL with err set on a bad regex, or when computing the values
 * fails; no matching function is not an error (nfuncs 0). */
struct ap_list *ap_list_new(const struct ap_trace *t, const struct ap_stack_values *values,
			    struct ap_symbolizer *sym, const struct ap_report_options *opts,
			    const char *func_regex, const char *source_path,
			    ap_report_progress_fn progress, void *progress_ctx,
			    struct ap_error *err);

void ap_list_free(struct ap_list *l);

#endif
