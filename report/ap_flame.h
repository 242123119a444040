/* The flame graph model (`allocprof flamegraph`): the stacks of the export
 * model merged into a tree of call paths, one node per function per path,
 * as flamegraph.pl merges folded stacks. Raw numbers and a layout in value
 * units; the command draws it. */
#ifndef AP_FLAME_H
#define AP_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_export.h"
#include "ap_report.h"

/* Name of the root node, which holds every stack (flamegraph.pl's). */
#define AP_FLAME_ROOT "all"

struct ap_flame_node {
	const char *func;	/* function name, owned by the export model's
				 * symbolizer (AP_FLAME_ROOT for the root) */
	double value;		/* the stacks through this path */
	double self;		/* the stacks whose call site ends this path */
	double x;		/* offset from the left edge, in value units:
				 * the parent's x plus the values of the
				 * siblings before it */
	uint32_t parent;	/* index of the parent node; UINT32_MAX for the root */
	uint32_t depth;		/* 0 for the root */
	bool inlined;		/* every frame merged here was inlined into its caller */
	bool unsymbolized;	/* no name was found for it (module+0xoff) */
};

struct ap_flame {
	enum ap_sample_index sample_index;
	/* Preorder: nodes[0] is the root, a node's children follow it, in
	 * the byte order of their names (flamegraph.pl's order). */
	struct ap_flame_node *nodes;
	size_t n;
	uint32_t max_depth;	/* of any node */
	double total;		/* every stack's value, before focus/ignore */
	double kept;		/* the root's value: the stacks the filters kept */
	size_t stacks;		/* stacks with a non-zero value */
	size_t kept_stacks;	/* of those, the ones kept */
	/* ap_flame_paths_new only (else NULL): per stack of the export
	 * model (x->stacks index), the node its path ends at, UINT32_MAX
	 * when the filters drop it or it has no value */
	uint32_t *leaf_of;
};

/* Builds the flame graph of `x` for opts->sample_index: each stack with a
 * non-zero value, its frames as ap_export_stack_frames gives them (the
 * call site first, inlined frames as frames of their own, allocator
 * frames as the folded export drops or keeps them), filtered by
 * opts->focus, ignore, show and hide as `top` filters them
 * (ap_report_options; the other fields are ignored), from the outermost
 * caller in. Returns NULL with err set on a bad regex. `x` and its
 * symbolizer must outlive the model. */
struct ap_flame *ap_flame_new(const struct ap_export *x, const struct ap_report_options *opts,
			      struct ap_error *err);

/* The tree of every path at once, for a page that sums any index (or
 * any part of the run) into it (`allocprof html`): the graph
 * ap_flame_new builds, over every stack with a value in some index, each
 * of value 1 (sample_index and the values say nothing else), and
 * leaf_of set. The tree of one index is this one without the nodes
 * whose stacks all have 0 in it. */
struct ap_flame *ap_flame_paths_new(const struct ap_export *x, const struct ap_report_options *opts,
				    struct ap_error *err);
void ap_flame_free(struct ap_flame *f);

#endif
