/* Internals shared by the report views (aggregate.c, list.c): the node
 * aggregation both `top` and `list` are built on. Not a public API. */
#ifndef AP_REPORT_INT_H
#define AP_REPORT_INT_H

#include <regex.h>

#include "ap_report.h"

/* Node keys: the public granularities plus (function, file), which `list`
 * uses for its per-routine totals. */
enum ap_node_key {
	AP_KEY_FUNC = AP_GRAN_FUNCTIONS,
	AP_KEY_LINE = AP_GRAN_LINES,
	AP_KEY_FILE = AP_GRAN_FILES,
	AP_KEY_FUNC_FILE,
};

struct ap_node {
	char *key;  /* unique per node */
	char *func; /* NULL for AP_KEY_FILE */
	char *file; /* NULL when unknown */
	int line;   /* AP_KEY_LINE only */
	double flat, cum;
	size_t stamp; /* last stack counted in cum, + 1 */
};

struct ap_nodes {
	struct ap_node *v;
	size_t n, alloc;
	uint32_t *slots; /* open addressing: node index + 1, 0 = empty */
	size_t nslots;
	double total, kept;
	size_t stacks, kept_stacks;
};

/* Compiled focus/ignore filter. */
struct ap_filter {
	regex_t focus, ignore;
	bool has_focus, has_ignore;
	bool match_files;
};

/* Compiles opts->focus / opts->ignore; -1 with err set on a bad regex. */
int ap_filter_init(struct ap_filter *f, const struct ap_report_options *opts, struct ap_error *err);
void ap_filter_release(struct ap_filter *f);

/* Aggregates the stacks of `t` with non-zero `values[id].v[si]` into nodes
 * keyed by `key`. Never fails. */
void ap_nodes_build(struct ap_nodes *out, const struct ap_trace *t,
		    const struct ap_stack_values *values, struct ap_symbolizer *sym,
		    enum ap_sample_index si, enum ap_node_key key, const struct ap_filter *filter,
		    ap_report_progress_fn progress, void *progress_ctx);
/* Frees the nodes' table; the nodes' strings are freed too unless they
 * were taken (set to NULL) by the caller. */
void ap_nodes_release(struct ap_nodes *nodes);

/* Compiles a POSIX ERE; `what` names it in the error. */
int ap_regex_compile(regex_t *re, const char *pattern, const char *what, struct ap_error *err);

#endif
