/* Internals shared by the report views (aggregate.c, list.c): the node
 * aggregation both `top` and `list` are built on. Not a public API. */
#ifndef AP_REPORT_INT_H
#define AP_REPORT_INT_H

#include "ap_regex.h"
#include "ap_hash.h"
#include "ap_report.h"

/* Node keys: the public granularities plus (function, file), which `list`
 * uses for its per-routine totals. */
enum ap_node_key {
	AP_KEY_FUNC = AP_GRAN_FUNCTIONS,
	AP_KEY_LINE = AP_GRAN_LINES,
	AP_KEY_FILE = AP_GRAN_FILES,
	AP_KEY_FUNC_FILE,
};

/* Separates, in a node's key, the name pprof prints from the rest of
 * what tells the node apart (see node_key in aggregate.c). */
#define AP_KEY_SEP '\x1f'

struct ap_node {
	char *key;  /* unique per node */
	char *func; /* NULL for AP_KEY_FILE */
	char *file; /* NULL when unknown */
	int line;   /* AP_KEY_LINE only */
	double flat, cum;
	size_t stamp; /* last stack counted in cum, + 1 */
	/* pprof's (inline) marks: some edge from a caller node is inline
	 * (this frame was inlined into the caller's code at every such
	 * call), some is not. */
	bool in_inline, in_call;
	bool keep; /* set by the caller: kept for a rebuild (ap_nodes_build) */
};

/* A caller -> callee edge between nodes, as pprof's graph has it: inline
 * when the callee was inlined at every occurrence of the edge. */
struct ap_edge {
	uint32_t from, to; /* node index + 1; from 0 = empty slot */
	bool inl;
	double w;	   /* the value of the stacks through it, once per stack */
	size_t stamp;	   /* the last stack counted */
};

struct ap_nodes {
	struct ap_node *v;
	size_t n, alloc;
	struct ap_index index; /* key -> node */
	struct ap_edge *edges; /* in order of first use; from 0: dropped */
	size_t nedges, edge_alloc;
	struct ap_u64map edge_index; /* from << 32 | to (indices + 1) -> edge */
	double total, kept;
	size_t stacks, kept_stacks;
};

/* Compiled focus/ignore/show/hide filter; a NULL regex is not given. */
struct ap_filter {
	struct ap_regex *focus, *ignore, *show, *hide;
};

/* Compiles the regexes of `opts`; -1 with err set on a bad one. */
int ap_filter_init(struct ap_filter *f, const struct ap_report_options *opts, struct ap_error *err);
void ap_filter_release(struct ap_filter *f);

/* The frames of a stack (fr[0..n), the call site first) that the views
 * show: none when focus/ignore drop the stack, else those show/hide leave
 * (pprof's rules; a stack left without frames is dropped too), in the
 * same order, into shown[] (room for n). unnamed[i] (`unnamed` may be
 * NULL) is frame i's mapping when pprof sees it without names
 * (ap_report_unnamed_maps), else NULL: such a frame matches by the
 * mapping's path alone, and show never keeps it. Returns how many. */
size_t ap_filter_stack(const struct ap_filter *f, const struct ap_frame *fr,
		       const struct ap_mapping *const *unnamed, size_t n, const struct ap_frame **shown);

/* Per mapping of `t` (t->nmaps entries; free() it): true when the
 * stacks `ids[0..nids)` have PCs in it and none of them got a name.
 * The pprof export leaves such a mapping unsymbolized (addresses only,
 * for pprof -symbolize to name later), and pprof shows all of its
 * addresses as one node, "[module]"; the views do the same. */
bool *ap_report_unnamed_maps(const struct ap_trace *t, struct ap_symbolizer *sym,
			     const uint32_t *ids, size_t nids);

/* ap_report_unnamed_maps over the stacks the export exports: those with
 * a value in some sample index. */
bool *ap_report_unnamed_of(const struct ap_trace *t, const struct ap_stack_values *values,
			   struct ap_symbolizer *sym);

/* Aggregates the stacks of `t` with non-zero `values[id].v[si]` into nodes
 * keyed by `key`. Frames in a mapping with `unnamed[m]` set (NULL: none)
 * are their mapping's one node, as pprof shows an unsymbolized mapping
 * (for AP_KEY_FUNC_FILE, a node with the empty name ""). With `keep`
 * (a previous build, same key, its nodes' keep flags set) only the kept
 * nodes are built, as pprof rebuilds its graph from the kept nodes: other
 * frames are skipped, a stack whose leaf is skipped adds no flat, and
 * edges join the nearest kept frames. With `paths` (NULL: not wanted;
 * its off, len and flat allocated for t->nstacks, flat set to
 * UINT32_MAX), each kept stack's nodes are appended to it as
 * ap_report_paths describes them. Never fails. */
void ap_nodes_build(struct ap_nodes *out, const struct ap_trace *t,
		    const struct ap_stack_values *values, struct ap_symbolizer *sym,
		    enum ap_sample_index si, enum ap_node_key key, const struct ap_filter *filter,
		    const bool *unnamed, const struct ap_nodes *keep,
		    ap_report_progress_fn progress, void *progress_ctx,
		    struct ap_report_paths *paths);
/* Frees the nodes' table; the nodes' strings are freed too unless they
 * were taken (set to NULL) by the caller. */
void ap_nodes_release(struct ap_nodes *nodes);

#endif
