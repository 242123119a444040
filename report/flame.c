/* The flame graph model: the kept stacks' paths sorted by name, then
 * merged into a tree in one walk, as flamegraph.pl does with sorted folded
 * stacks: paths that share a prefix are adjacent, so each node is made
 * where a path leaves the one before it, and the nodes come out in
 * preorder with the children in name order. */
#include <stdlib.h>
#include <string.h>

#include "ap_flame.h"
#include "report-int.h"

/* One kept stack: its shown frames, outermost first, in a shared array. */
struct path {
	size_t off, len;
	double v;
	size_t stack; /* index in the export model */
};

struct sort_ctx {
	const char *const *names;
};

static int path_cmp(const void *a, const void *b, void *ctx)
{
	const struct path *x = a, *y = b;
	const char *const *nm = ((const struct sort_ctx *)ctx)->names;
	for (size_t i = 0; i < x->len && i < y->len; i++) {
		int c = strcmp(nm[x->off + i], nm[y->off + i]);
		if (c)
			return c;
	}
	return x->len < y->len ? -1 : x->len > y->len;
}

static uint32_t add_node(struct ap_flame *f, size_t *alloc, uint32_t parent,
			 const struct ap_frame *fr, const char *name)
{
	AP_ALLOC_GROW(f->nodes, f->n + 1, *alloc);
	struct ap_flame_node *nd = &f->nodes[f->n];
	memset(nd, 0, sizeof(*nd));
	nd->func = name;
	nd->parent = parent;
	nd->depth = f->nodes[parent].depth + 1;
	nd->inlined = fr->inlined;
	nd->unsymbolized = fr->unsymbolized;
	if (nd->depth > f->max_depth)
		f->max_depth = nd->depth;
	return (uint32_t)f->n++;
}

/* x of every node: preorder, so a node's parent has its x already and
 * the siblings before it have been placed. */
static void layout(struct ap_flame *f)
{
	double *next = ap_xcalloc((size_t)f->max_depth + 2, sizeof(*next));
	for (size_t i = 0; i < f->n; i++) {
		struct ap_flame_node *nd = &f->nodes[i];
		nd->x = next[nd->depth];
		next[nd->depth] += nd->value;
		next[nd->depth + 1] = nd->x;
	}
	free(next);
}

/* With `any`, every stack with a value in some index is a path of value
 * 1, and f->leaf_of is set. */
static struct ap_flame *flame_build(const struct ap_export *x, const struct ap_report_options *opts,
				    bool any, struct ap_error *err)
{
	struct ap_filter filter;
	if (ap_filter_init(&filter, opts, err))
		return NULL;
	enum ap_sample_index si = opts->sample_index;
	struct ap_flame *f = ap_xcalloc(1, sizeof(*f));
	f->sample_index = si;

	const struct ap_frame **frames = NULL, **shown = NULL;
	const char **names = NULL; /* per frame: its node's name */
	const struct ap_mapping **maps = NULL;
	size_t nframes = 0, aframes = 0, anames = 0, ashown = 0, amaps = 0;
	struct path *paths = NULL;
	size_t npaths = 0, apaths = 0;
	for (size_t i = 0; i < x->nstacks; i++) {
		const struct ap_export_stack *s = &x->stacks[i];
		double v = s->v[si];
		if (any)
			for (int k = 0; k < AP_SI_COUNT; k++)
				v = s->v[k] != 0 ? 1 : v;
		if (v == 0)
			continue;
		f->total += v;
		f->stacks++;
		size_t n;
		/* frames named as the symbolizer names them for every view,
		 * which is what the filters match too; a module pprof sees
		 * without names is one node, "[module]", as in top, and
		 * matches by its path alone */
		const struct ap_frame *fr = ap_export_stack_frames(s, &n);
		AP_ALLOC_GROW(shown, n, ashown);
		AP_ALLOC_GROW(maps, n, amaps);
		for (size_t j = 0; j < n; j++)
			maps[j] = ap_export_unnamed_map(x, &fr[j]);
		size_t k = ap_filter_stack(&filter, fr, maps, n, shown);
		if (!k)
			continue;
		f->kept += v;
		f->kept_stacks++;
		AP_ALLOC_GROW(frames, nframes + k, aframes);
		AP_ALLOC_GROW(names, nframes + k, anames);
		for (size_t j = 0; j < k; j++) {
			frames[nframes + j] = shown[k - 1 - j];
			names[nframes + j] = ap_export_node_name(x, shown[k - 1 - j]);
		}
		AP_ALLOC_GROW(paths, npaths + 1, apaths);
		paths[npaths++] = (struct path){ nframes, k, v, i };
		nframes += k;
	}
	struct sort_ctx sc = { names };
	if (npaths)
		qsort_r(paths, npaths, sizeof(*paths), path_cmp, &sc);

	size_t alloc = 0;
	AP_ALLOC_GROW(f->nodes, 1, alloc);
	memset(f->nodes, 0, sizeof(*f->nodes));
	f->nodes[0] = (struct ap_flame_node){ .func = AP_FLAME_ROOT, .parent = UINT32_MAX };
	f->n = 1;
	if (any) {
		f->leaf_of = ap_xmalloc((x->nstacks ? x->nstacks : 1) * sizeof(*f->leaf_of));
		memset(f->leaf_of, 0xff, (x->nstacks ? x->nstacks : 1) * sizeof(*f->leaf_of));
	}
	/* cur[d]: the node at depth d of the path before; its first `same`
	 * levels are shared with the path at hand. */
	uint32_t *cur = NULL;
	size_t acur = 0;
	AP_ALLOC_GROW(cur, 1, acur);
	cur[0] = 0;
	const struct path *prev = NULL;
	for (size_t p = 0; p < npaths; p++) {
		const struct path *pa = &paths[p];
		const struct ap_frame *const *fr = frames + pa->off;
		const char *const *nm = names + pa->off;
		size_t same = 0;
		if (prev)
			while (same < pa->len && same < prev->len &&
			       !strcmp(nm[same], names[prev->off + same]))
				same++;
		AP_ALLOC_GROW(cur, pa->len + 1, acur);
		f->nodes[0].value += pa->v;
		for (size_t d = 0; d < pa->len; d++) {
			if (d >= same)
				cur[d + 1] = add_node(f, &alloc, cur[d], fr[d], nm[d]);
			struct ap_flame_node *nd = &f->nodes[cur[d + 1]];
			nd->value += pa->v;
			nd->inlined &= fr[d]->inlined;
			nd->unsymbolized &= fr[d]->unsymbolized;
		}
		f->nodes[cur[pa->len]].self += pa->v;
		if (f->leaf_of)
			f->leaf_of[pa->stack] = cur[pa->len];
		prev = pa;
	}
	layout(f);
	free(cur);
	free(paths);
	free(frames);
	free(names);
	free(maps);
	free(shown);
	ap_filter_release(&filter);
	return f;
}

struct ap_flame *ap_flame_new(const struct ap_export *x, const struct ap_report_options *opts,
			      struct ap_error *err)
{
	return flame_build(x, opts, false, err);
}

struct ap_flame *ap_flame_paths_new(const struct ap_export *x, const struct ap_report_options *opts,
				    struct ap_error *err)
{
	return flame_build(x, opts, true, err);
}

void ap_flame_free(struct ap_flame *f)
{
	if (!f)
		return;
	free(f->leaf_of);
	free(f->nodes);
	free(f);
}
