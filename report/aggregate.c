/* Aggregation for the views: events -> per-stack sums in one pass, then each
 * distinct stack symbolized once and folded into flat/cum nodes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ap_replay.h"
#include "report-int.h"

static const char *const si_names[AP_SI_COUNT] = {
    "alloc_objects",
    "alloc_space",
    "inuse_objects",
    "inuse_space",
    "peak_objects",
    "peak_space",
    "temporary",
};

const char *ap_sample_index_name(enum ap_sample_index si)
{
	return (unsigned)si < AP_SI_COUNT ? si_names[si] : "?";
}

bool ap_sample_index_is_bytes(enum ap_sample_index si)
{
	return si == AP_SI_ALLOC_SPACE || si == AP_SI_INUSE_SPACE || si == AP_SI_PEAK_SPACE;
}

/* ---- per-stack sums ------------------------------------------------------ */

/* Per stack: allocation values of every sampled allocation (reallocs
 * included, pprof's way: each at its own stack), in-use values of the
 * blocks live at the end, and the live values at the moment the weighted
 * live bytes peak (counted as ap_trace_totals counts peak_inuse_space);
 * a consumer of the replay (ap_replay.h).
 *
 * The peak is found in the same pass: each new highest live total starts
 * an epoch, in which every stack's peak values are, lazily, its live
 * values then; a stack saves them (into sv) before its first change in
 * the epoch, and one that did not change since the last epoch began
 * still holds them live. */
struct values {
	const struct ap_trace *t;
	size_t ns;		/* stacks the arrays have room for */
	struct ap_stack_values *sv;
	double *live_o, *live_s;	/* per stack, live now */
	double live, peak;	/* weighted live bytes: now, the highest after any event */
	uint64_t epoch;		/* new highest totals so far (0: none) */
	uint64_t *saved;	/* per stack: the epoch its sv peak values are of */
};

static void v_live_add(struct values *V, const struct ap_replay_block *b, double sign)
{
	if (!b->stack || b->stack >= V->ns)
		return;
	uint32_t s = b->stack;
	if (V->saved[s] != V->epoch) {
		V->saved[s] = V->epoch;
		V->sv[s].v[AP_SI_PEAK_OBJECTS] = V->live_o[s];
		V->sv[s].v[AP_SI_PEAK_SPACE] = V->live_s[s];
	}
	V->live_o[s] += sign * b->w;
	V->live_s[s] += sign * b->w * (double)b->size;
}

static void v_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct values *V = ctx;
	(void)i;
	v_live_add(V, b, 1);
	if ((e->flags & AP_EVF_SAMPLED) && e->stack < V->ns) {
		V->sv[e->stack].v[AP_SI_ALLOC_OBJECTS] += b->w;
		V->sv[e->stack].v[AP_SI_ALLOC_SPACE] += b->w * (double)b->size;
	}
	if (e->flags & AP_EVF_SAMPLED) {
		V->live += b->w * (double)b->size;
		if (V->live > V->peak) {
			V->peak = V->live;
			V->epoch++;
		}
	}
}

static void v_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct values *V = ctx;
	(void)i;
	(void)e;
	v_live_add(V, b, -1);
	V->live -= b->w * (double)b->size;
	if (b->temporary && b->stack && b->stack < V->ns)
		V->sv[b->stack].v[AP_SI_TEMPORARY] += b->w;
}

static void v_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		   const struct ap_replay_block *b)
{
	v_free(ctx, i, e, old);
	v_alloc(ctx, i, e, b);
}

static void v_live(void *ctx, const struct ap_replay_block *b)
{
	struct values *V = ctx;
	if (!b->stack || b->stack >= V->ns)
		return;
	V->sv[b->stack].v[AP_SI_INUSE_OBJECTS] += b->w;
	V->sv[b->stack].v[AP_SI_INUSE_SPACE] += b->w * (double)b->size;
}

/* Its image is gone (exec): not live from then on, nor in use at the end
 * (no live_at_end follows). As `exited`: its process ended, not live at a
 * later peak, still in use at its exit (live_at_end follows). */
static void v_exec_dropped(void *ctx, const struct ap_replay_block *b)
{
	struct values *V = ctx;
	v_live_add(V, b, -1);
	V->live -= b->w * (double)b->size;
}

static const struct ap_replay_ops values_ops = {
	.alloc = v_alloc,
	.grow = v_grow,
	.free = v_free,
	.live_at_end = v_live,
	.exec_dropped = v_exec_dropped,
	.exited = v_exec_dropped,
};

struct ap_values_run *ap_values_run_new(const struct ap_trace *t)
{
	struct values *V = ap_xcalloc(1, sizeof(*V));
	V->t = t;
	ap_values_run_grow((struct ap_values_run *)V);
	return (struct ap_values_run *)V;
}

void ap_values_run_grow(struct ap_values_run *run)
{
	struct values *V = (struct values *)run;
	size_t ns = V->t->nstacks ? V->t->nstacks : 1;
	if (ns <= V->ns)
		return;
	V->sv = ap_xrealloc(V->sv, ns * sizeof(*V->sv));
	V->live_o = ap_xrealloc(V->live_o, ns * sizeof(*V->live_o));
	V->live_s = ap_xrealloc(V->live_s, ns * sizeof(*V->live_s));
	V->saved = ap_xrealloc(V->saved, ns * sizeof(*V->saved));
	for (size_t s = V->ns; s < ns; s++) {
		V->sv[s] = (struct ap_stack_values){{0}};
		V->live_o[s] = V->live_s[s] = 0;
		/* (a new stack has no values at any peak) */
		V->saved[s] = V->epoch;
	}
	V->ns = ns;
}

struct ap_replay_consumer ap_values_run_consumer(struct ap_values_run *run)
{
	return (struct ap_replay_consumer){ &values_ops, run };
}

/* The peak values of the stacks that did not change since the last peak
 * began: their live values. */
static void peaks_fill(const struct values *V, struct ap_stack_values *sv)
{
	if (V->epoch)
		for (size_t s = 1; s < V->ns; s++)
			if (V->saved[s] != V->epoch) {
				sv[s].v[AP_SI_PEAK_OBJECTS] = V->live_o[s];
				sv[s].v[AP_SI_PEAK_SPACE] = V->live_s[s];
			}
}

size_t ap_values_run_stacks(const struct ap_values_run *run)
{
	return ((const struct values *)run)->ns;
}

struct ap_stack_values *ap_values_run_now(const struct ap_values_run *run)
{
	const struct values *V = (const struct values *)run;
	struct ap_stack_values *sv = ap_xmalloc(V->ns * sizeof(*sv));
	memcpy(sv, V->sv, V->ns * sizeof(*sv));
	for (size_t s = 1; s < V->ns; s++) {
		sv[s].v[AP_SI_INUSE_OBJECTS] = V->live_o[s];
		sv[s].v[AP_SI_INUSE_SPACE] = V->live_s[s];
	}
	peaks_fill(V, sv);
	return sv;
}

struct ap_stack_values *ap_values_run_end(struct ap_values_run *run)
{
	struct values *V = (struct values *)run;
	peaks_fill(V, V->sv);
	struct ap_stack_values *sv = V->sv;
	V->sv = NULL;
	ap_values_run_free(run);
	return sv;
}

void ap_values_run_free(struct ap_values_run *run)
{
	struct values *V = (struct values *)run;
	if (!V)
		return;
	free(V->sv);
	free(V->saved);
	free(V->live_o);
	free(V->live_s);
	free(V);
}

struct ap_stack_values *ap_report_stack_values(const struct ap_trace *t, struct ap_error *err)
{
	struct ap_values_run *V = ap_values_run_new(t);
	struct ap_replay_consumer c = ap_values_run_consumer(V);
	if (ap_replay(t, &c, 1, NULL, err) < 0) {
		ap_values_run_free(V);
		return NULL;
	}
	return ap_values_run_end(V);
}

/* ---- filters --------------------------------------------------------- */

int ap_filter_init(struct ap_filter *f, const struct ap_report_options *opts, struct ap_error *err)
{
	const char *const pat[] = {opts->focus, opts->ignore, opts->show, opts->hide};
	static const char *const what[] = {"focus", "ignore", "show", "hide"};
	struct ap_regex **re[] = {&f->focus, &f->ignore, &f->show, &f->hide};
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < AP_ARRAY_SIZE(re); i++) {
		if (!pat[i])
			continue;
		*re[i] = ap_regex_new(pat[i], what[i], err);
		if (!*re[i]) {
			ap_filter_release(f);
			return -1;
		}
	}
	return 0;
}

void ap_filter_release(struct ap_filter *f)
{
	ap_regex_free(f->focus);
	ap_regex_free(f->ignore);
	ap_regex_free(f->show);
	ap_regex_free(f->hide);
	f->focus = f->ignore = f->show = f->hide = NULL;
}

/* pprof's rule (profile/filter.go matchesName): a frame matches by its
 * function's name, its source file or its module's path; in a mapping
 * pprof sees unnamed (`unnamed`, else NULL) it has only the mapping's. */
static bool frame_matches(const struct ap_regex *re, const struct ap_frame *fr,
			  const struct ap_mapping *unnamed)
{
	if (unnamed)
		return ap_regex_match(re, unnamed->path);
	return ap_regex_match(re, fr->func) || (fr->file && ap_regex_match(re, fr->file)) ||
	       (fr->module && ap_regex_match(re, fr->module));
}

static bool filter_keeps(const struct ap_filter *f, const struct ap_frame *fr,
			 const struct ap_mapping *const *unnamed, size_t n)
{
	bool focused = !f->focus;
	for (size_t i = 0; i < n; i++) {
		const struct ap_mapping *u = unnamed ? unnamed[i] : NULL;
		if (f->ignore && frame_matches(f->ignore, &fr[i], u))
			return false;
		if (!focused && frame_matches(f->focus, &fr[i], u))
			focused = true;
	}
	return focused;
}

/* pprof's show and hide: a frame stays in the stack when it matches show
 * (or show is not given) and does not match hide. */
static bool filter_shows(const struct ap_filter *f, const struct ap_frame *fr,
			 const struct ap_mapping *unnamed)
{
	if (f->hide && frame_matches(f->hide, fr, unnamed))
		return false;
	/* An address only has no lines for show to keep. */
	return !f->show || (!unnamed && frame_matches(f->show, fr, unnamed));
}

size_t ap_filter_stack(const struct ap_filter *f, const struct ap_frame *fr,
		       const struct ap_mapping *const *unnamed, size_t n, const struct ap_frame **shown)
{
	if (!filter_keeps(f, fr, unnamed, n))
		return 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (filter_shows(f, &fr[i], unnamed ? unnamed[i] : NULL))
			shown[k++] = &fr[i];
	return k;
}

/* ---- nodes -------------------------------------------------------------- */

bool *ap_report_unnamed_maps(const struct ap_trace *t, struct ap_symbolizer *sym,
			     const uint32_t *ids, size_t nids)
{
	size_t nm = t->nmaps ? t->nmaps : 1;
	bool *unnamed = ap_xcalloc(nm, sizeof(*unnamed)), *named = ap_xcalloc(nm, sizeof(*named));
	for (size_t i = 0; i < nids; i++) {
		const struct ap_stack *st = &t->stacks[ids[i]];
		for (uint32_t d = 0; d < st->depth; d++) {
			const struct ap_mapping *map = ap_trace_mapping_for(t, st->pcs[d]);
			if (!map)
				continue;
			size_t m = (size_t)(map - t->maps);
			const struct ap_frame *fr;
			size_t n = ap_sym_pc(sym, st->pcs[d], &fr);
			bool any = false;
			for (size_t k = 0; k < n; k++)
				any |= !fr[k].unsymbolized;
			if (any)
				named[m] = true;
			else
				unnamed[m] = true;
		}
	}
	for (size_t m = 0; m < t->nmaps; m++)
		unnamed[m] &= !named[m];
	free(named);
	return unnamed;
}

static bool node_has_key(const void *ctx, uint32_t i, const void *key)
{
	const struct ap_nodes *ns = ctx;
	return !strcmp(ns->v[i].key, key);
}

static const char *const unknown_name = "<unknown>";

void ap_report_clean_path(struct ap_buf *kb, const char *path)
{
	size_t start = kb->len;
	bool rooted = path[0] == '/';
	if (rooted)
		ap_buf_addstr(kb, "/");
	size_t base = kb->len, dotdot = base; /* out[base, dotdot) is "../" only */
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);
		if (n == 0 || (n == 1 && s[0] == '.')) {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (kb->len > dotdot) {
				size_t k = kb->len;
				while (k > dotdot && kb->buf[k - 1] != '/')
					k--;
				kb->len = k > dotdot ? k - 1 : dotdot;
				kb->buf[kb->len] = 0;
			} else if (!rooted) {
				ap_buf_addf(kb, "%s..", kb->len > base ? "/" : "");
				dotdot = kb->len;
			}
		} else {
			ap_buf_addf(kb, "%s%.*s", kb->len > base ? "/" : "", (int)n, s);
		}
		s = e;
	}
	if (kb->len == start)
		ap_buf_addstr(kb, ".");
}

/* Appends pprof's name of a node known only by its module: "[base]". */
static void add_module_name(struct ap_buf *kb, const char *path)
{
	const char *base = strrchr(path, '/');
	ap_buf_addf(kb, "[%s]", base ? base + 1 : path);
}

bool *ap_report_unnamed_of(const struct ap_trace *t, const struct ap_stack_values *values,
			   struct ap_symbolizer *sym)
{
	uint32_t *ids = ap_xcalloc(t->nstacks ? t->nstacks : 1, sizeof(*ids));
	size_t nids = 0;
	for (size_t id = 1; id < t->nstacks; id++)
		for (int i = 0; i < AP_SI_COUNT; i++)
			if (values[id].v[i] != 0) {
				ids[nids++] = (uint32_t)id;
				break;
			}
	bool *unnamed = ap_report_unnamed_maps(t, sym, ids, nids);
	free(ids);
	return unnamed;
}

/* Writes the key of frame `fr`'s node under `key` into kb; returns the
 * node's file. The keys are pprof's graph nodes (graph.go's NodeInfo
 * after the granularity's Profile.Aggregate) as they come out of our
 * export: `map` is the frame's mapping (NULL when in none); `unnamed`
 * says pprof sees it without symbols (ap_report_unnamed_maps), where a
 * location is an address only and every address of the mapping is one
 * node once the granularity clears addresses. A file node is keyed by
 * its file and its mapping (pprof's Objfile, set when the aggregation
 * clears the function names): AP_KEY_SEP separates the name pprof prints
 * from the rest of the key. */
static const char *node_key(enum ap_node_key key, const struct ap_frame *fr,
			    const struct ap_mapping *map, bool unnamed, struct ap_buf *kb)
{
	const char *file = fr->file;
	ap_buf_reset(kb);
	if (unnamed) {
		/* no function: list has no routine for it (an empty name) */
		if (key != AP_KEY_FUNC_FILE)
			add_module_name(kb, map->path);
		if (key == AP_KEY_FILE || key == AP_KEY_FUNC_FILE)
			ap_buf_addf(kb, "%c%s", AP_KEY_SEP, map->path);
		return key == AP_KEY_FILE ? fr->module : file;
	}
	switch (key) {
	case AP_KEY_FUNC:
		ap_buf_addstr(kb, fr->func);
		break;
	case AP_KEY_LINE:
		/* pprof's "func file:line"; "func file" without a line,
		 * just "func" without a file. */
		if (file) {
			ap_buf_addf(kb, "%s ", fr->func);
			ap_report_clean_path(kb, file);
			if (fr->line)
				ap_buf_addf(kb, ":%d", fr->line);
		} else
			ap_buf_addstr(kb, fr->func);
		break;
	case AP_KEY_FILE:
		/* Without debug info pprof names the module: "[base]". */
		if (file)
			ap_report_clean_path(kb, file);
		else if (map)
			add_module_name(kb, map->path);
		else
			ap_buf_addstr(kb, unknown_name);
		if (map)
			ap_buf_addf(kb, "%c%s", AP_KEY_SEP, map->path);
		if (!file)
			file = fr->module;
		break;
	case AP_KEY_FUNC_FILE:
		ap_buf_addf(kb, "%s%c%s", fr->func, AP_KEY_SEP, file ? file : "");
		break;
	}
	return file;
}

/* The node keyed kb (see node_key) for frame `fr`, created on first use;
 * `func` is its function's name. */
static struct ap_node *node_get(struct ap_nodes *ns, enum ap_node_key key, const char *func,
				const struct ap_frame *fr, const char *file, struct ap_buf *kb)
{
	bool added;
	uint32_t i = ap_index_add(&ns->index, ap_hash_bytes(kb->buf, kb->len), node_has_key, ns,
				  kb->buf, (uint32_t)ns->n, &added);
	if (!added)
		return &ns->v[i];
	AP_ALLOC_GROW(ns->v, ns->n + 1, ns->alloc);
	struct ap_node *nd = &ns->v[ns->n];
	memset(nd, 0, sizeof(*nd));
	nd->key = ap_xstrdup(kb->buf);
	nd->func = key == AP_KEY_FILE ? NULL : ap_xstrdup(func);
	nd->file = file ? ap_xstrdup(file) : NULL;
	nd->line = key == AP_KEY_LINE ? fr->line : 0;
	ns->n++;
	return nd;
}

/* Whether the node keyed kb is in `keep` with its keep flag set. */
static bool node_kept(const struct ap_nodes *keep, const struct ap_buf *kb)
{
	uint32_t i = ap_index_find(&keep->index, ap_hash_bytes(kb->buf, kb->len), node_has_key, keep,
				   kb->buf);
	return i != UINT32_MAX && keep->v[i].keep;
}

/* Records the edge from node index `from` to `to`; an edge is inline
 * only while every occurrence is (pprof's AddToEdgeDiv). Returns it. */
static struct ap_edge *edge_put(struct ap_nodes *ns, uint32_t from, uint32_t to, bool inl)
{
	if (!ns->edge_index.slot)
		ap_u64map_init(&ns->edge_index, 128);
	from++, to++;
	uint64_t k = (uint64_t)from << 32 | to;
	uint32_t i = ap_u64map_get(&ns->edge_index, k);
	if (i == AP_U64MAP_NONE) {
		AP_ALLOC_GROW(ns->edges, ns->nedges + 1, ns->edge_alloc);
		i = (uint32_t)ns->nedges++;
		ns->edges[i] = (struct ap_edge){from, to, inl, 0, 0};
		ap_u64map_put(&ns->edge_index, k, i);
	} else if (!inl) {
		ns->edges[i].inl = false;
	}
	return &ns->edges[i];
}

/* Whether shown[i] is inlined into a frame still shown: its PC's frames
 * run from it to the first one that is not inlined, and the next shown
 * frame must be among them (pprof: not the last line left in its
 * location once hide took lines out). */
static bool inlined_shown(const struct ap_frame *const *shown, size_t n, size_t i)
{
	const struct ap_frame *last = shown[i];
	while (last->inlined)
		last++;
	return i + 1 < n && shown[i + 1] <= last;
}

/* Sets each node's in_inline and in_call from the edges into it. */
static void nodes_mark_inline(struct ap_nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		ns->v[i].in_inline = ns->v[i].in_call = false;
	for (size_t i = 0; i < ns->nedges; i++) {
		const struct ap_edge *e = &ns->edges[i];
		if (!e->from)
			continue;
		if (e->inl)
			ns->v[e->to - 1].in_inline = true;
		else
			ns->v[e->to - 1].in_call = true;
	}
}

void ap_nodes_build(struct ap_nodes *ns, const struct ap_trace *t,
		    const struct ap_stack_values *values, struct ap_symbolizer *sym,
		    enum ap_sample_index si, enum ap_node_key key, const struct ap_filter *filter,
		    const bool *unnamed, const struct ap_nodes *keep,
		    ap_report_progress_fn progress, void *progress_ctx,
		    struct ap_report_paths *paths)
{
	struct ap_frame *frames = NULL;
	size_t nframes = 0, aframes = 0;
	const struct ap_frame **shown = NULL;
	size_t ashown = 0;
	const struct ap_mapping **maps = NULL; /* per frame: its mapping when unnamed */
	size_t amaps = 0;
	struct ap_buf kb = AP_BUF_INIT;

	memset(ns, 0, sizeof(*ns));
	for (size_t id = 1; id < t->nstacks; id++) {
		double v = values[id].v[si];
		if (progress && (id & 1023) == 0)
			progress(progress_ctx, id, t->nstacks);
		if (v == 0)
			continue;
		ns->total += v;
		ns->stacks++;

		size_t site = ap_sym_stack(sym, &t->stacks[id], &frames, &nframes, &aframes);
		const struct ap_frame *fr = frames + site;
		size_t n = nframes - site;
		struct ap_frame unknown = {.func = unknown_name};
		if (n == 0) {
			fr = &unknown;
			n = 1;
		}
		AP_ALLOC_GROW(maps, n, amaps);
		for (size_t i = 0; i < n; i++) {
			const struct ap_mapping *m =
			    fr[i].pc ? ap_trace_mapping_for(t, fr[i].pc) : NULL;
			maps[i] = m && unnamed && unnamed[m - t->maps] ? m : NULL;
		}
		/* show/hide take frames out; a stack left without any is
		 * dropped, as pprof does. */
		AP_ALLOC_GROW(shown, n, ashown);
		size_t ns_shown = ap_filter_stack(filter, fr, maps, n, shown);
		if (!ns_shown)
			continue;
		ns->kept += v;
		ns->kept_stacks++;
		if (paths)
			paths->off[id] = (uint32_t)paths->n;

		/* From the outermost caller in, as pprof walks a sample. A
		 * frame whose node is not kept is left out: the edge goes
		 * over it, and the stack's flat is lost when it is the leaf
		 * (pprof's residual). */
		uint32_t parent = UINT32_MAX;
		for (size_t i = ns_shown; i-- > 0;) {
			const struct ap_frame *f = shown[i];
			const struct ap_mapping *m = f->pc ? ap_trace_mapping_for(t, f->pc) : NULL;
			bool un = maps[f - fr] != NULL;
			const char *file = node_key(key, f, m, un, &kb);
			if (keep && !node_kept(keep, &kb))
				continue;
			const char *func = !un ? f->func : key == AP_KEY_FUNC_FILE ? "" : kb.buf;
			struct ap_node *nd = node_get(ns, key, func, f, file, &kb);
			uint32_t idx = (uint32_t)(nd - ns->v);
			if (i == 0)
				nd->flat += v;
			if (i == 0 && paths)
				paths->flat[id] = idx;
			/* Recursion: a node counts once per stack. */
			if (nd->stamp != id) {
				nd->stamp = id;
				nd->cum += v;
				if (paths) {
					AP_ALLOC_GROW(paths->nodes, paths->n + 1, paths->alloc);
					paths->nodes[paths->n++] = idx;
				}
			}
			if (parent != UINT32_MAX && parent != idx) {
				struct ap_edge *e = edge_put(ns, parent, idx, inlined_shown(shown, ns_shown, i));
				/* Recursion: an edge counts once per stack too. */
				if (e->stamp != id) {
					e->stamp = id;
					e->w += v;
				}
			}
			parent = idx;
		}
		if (paths)
			paths->len[id] = (uint32_t)(paths->n - paths->off[id]);
	}
	nodes_mark_inline(ns);
	if (progress)
		progress(progress_ctx, t->nstacks, t->nstacks);
	free(frames);
	free(shown);
	free(maps);
	ap_buf_release(&kb);
}

void ap_nodes_release(struct ap_nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		free(ns->v[i].key);
		free(ns->v[i].func);
		free(ns->v[i].file);
	}
	free(ns->v);
	ap_index_release(&ns->index);
	free(ns->edges);
	if (ns->edge_index.slot)
		ap_u64map_release(&ns->edge_index);
	memset(ns, 0, sizeof(*ns));
}

/* ---- the top model ------------------------------------------------------ */

/* Builds *ns again from its nodes with the keep flag set. */
static void nodes_rebuild(struct ap_nodes *ns, const struct ap_trace *t,
			  const struct ap_stack_values *values, struct ap_symbolizer *sym,
			  enum ap_sample_index si, enum ap_node_key key,
			  const struct ap_filter *filter, const bool *unnamed)
{
	struct ap_nodes kept;
	ap_nodes_build(&kept, t, values, sym, si, key, filter, unnamed, ns, NULL, NULL, NULL);
	ap_nodes_release(ns);
	*ns = kept;
}

/* The order of the rows: value descending, ties by name. */
static int cmp_order(double x, double y, const char *xname, const char *yname)
{
	if (x != y)
		return x > y ? -1 : 1;
	return strcmp(xname, yname);
}

static int cmp_node_flat(const void *a, const void *b)
{
	const struct ap_node *x = *(const struct ap_node *const *)a;
	const struct ap_node *y = *(const struct ap_node *const *)b;
	return cmp_order(x->flat, y->flat, x->key, y->key);
}

static int cmp_node_cum(const void *a, const void *b)
{
	const struct ap_node *x = *(const struct ap_node *const *)a;
	const struct ap_node *y = *(const struct ap_node *const *)b;
	return cmp_order(x->cum, y->cum, x->key, y->key);
}

/* The nodes in the order of the rows (ap_report_sort); free() it. */
static struct ap_node **nodes_in_row_order(struct ap_nodes *ns, bool by_cum)
{
	struct ap_node **v = ap_xcalloc(ns->n ? ns->n : 1, sizeof(*v));
	for (size_t i = 0; i < ns->n; i++)
		v[i] = &ns->v[i];
	qsort(v, ns->n, sizeof(*v), by_cum ? cmp_node_cum : cmp_node_flat);
	return v;
}

struct ap_report *ap_report_new(const struct ap_trace *t, const struct ap_stack_values *values,
				struct ap_symbolizer *sym, const struct ap_report_options *opts,
				ap_report_progress_fn progress, void *progress_ctx,
				struct ap_error *err)
{
	struct ap_filter filter;
	if (ap_filter_init(&filter, opts, err))
		return NULL;
	struct ap_stack_values *own = NULL;
	if (!values && !(values = own = ap_report_stack_values(t, err))) {
		ap_filter_release(&filter);
		return NULL;
	}

	bool *unnamed = ap_report_unnamed_of(t, values, sym);

	enum ap_node_key key = (enum ap_node_key)opts->granularity;
	struct ap_nodes ns;
	ap_nodes_build(&ns, t, values, sym, opts->sample_index, key, &filter, unnamed, NULL,
		       progress, progress_ctx, NULL);

	struct ap_report *r = ap_xcalloc(1, sizeof(*r));
	r->sample_index = opts->sample_index;
	r->granularity = opts->granularity;
	r->total = ns.total;
	r->kept = ns.kept;
	r->stacks = ns.stacks;
	r->kept_stacks = ns.kept_stacks;

	/* pprof's newTrimmedGraph: nodes whose cum is under the cutoff go,
	 * then all but the first node_count; each time the graph is built
	 * again from the nodes kept, which moves edges (and so the inline
	 * marks) and loses the flat of a dropped leaf. The cutoff is on the
	 * kept total, the "Dropped" line names the fraction of the whole
	 * total; values are integers there. */
	double cutoff = trunc(ns.kept * opts->node_fraction);
	r->dropped_cutoff = trunc(ns.total * opts->node_fraction);
	if (cutoff > 0) {
		for (size_t i = 0; i < ns.n; i++) {
			ns.v[i].keep = fabs(ns.v[i].cum) >= cutoff;
			r->dropped += !ns.v[i].keep;
		}
		if (r->dropped)
			nodes_rebuild(&ns, t, values, sym, opts->sample_index, key, &filter,
				      unnamed);
	}
	r->nodes = ns.n;
	if (opts->node_count && ns.n > opts->node_count) {
		struct ap_node **order = nodes_in_row_order(&ns, opts->cum_sort);
		for (size_t i = 0; i < ns.n; i++)
			order[i]->keep = i < opts->node_count;
		free(order);
		nodes_rebuild(&ns, t, values, sym, opts->sample_index, key, &filter, unnamed);
	}

	/* pprof's last step: edges under the edge cutoff go (and with
	 * them the inline marks they gave). No edge is looked up after
	 * this, so they are just marked gone (from 0). */
	double edge_cutoff = trunc(ns.kept * opts->edge_fraction);
	size_t kept_edges = ns.nedges;
	if (edge_cutoff > 0) {
		for (size_t i = 0; i < ns.nedges; i++)
			if (ns.edges[i].from && fabs(ns.edges[i].w) < edge_cutoff) {
				ns.edges[i].from = 0;
				kept_edges--;
			}
		nodes_mark_inline(&ns);
	}

	r->rows = ap_xcalloc(ns.n ? ns.n : 1, sizeof(*r->rows));
	r->nrows = ns.n;
	r->edges = ap_xcalloc(kept_edges ? kept_edges : 1, sizeof(*r->edges));
	for (size_t i = 0; i < ns.nedges; i++) {
		const struct ap_edge *e = &ns.edges[i];
		if (e->from)
			r->edges[r->nedges++] = (struct ap_report_edge){ ns.v[e->from - 1].key,
									 ns.v[e->to - 1].key, e->w, e->inl };
	}
	for (size_t i = 0; i < ns.n; i++) {
		struct ap_node *nd = &ns.v[i];
		r->rows[i] = (struct ap_report_row){
		    .name = nd->key,
		    .func = nd->func,
		    .file = nd->file,
		    .line = nd->line,
		    .flat = nd->flat,
		    .cum = nd->cum,
		    .inline_mark = !nd->in_inline ? NULL
				   : nd->in_call  ? "(partial-inline)"
						  : "(inline)",
		};
		/* the row's name is what pprof prints of the key */
		char *sep = strchr(nd->key, AP_KEY_SEP);
		if (sep)
			*sep = 0;
		nd->key = nd->func = nd->file = NULL;
	}
	ap_nodes_release(&ns);
	free(unnamed);
	ap_filter_release(&filter);
	free(own);
	ap_report_sort(r, opts->cum_sort);
	return r;
}

struct ap_report_paths *ap_report_paths_new(const struct ap_trace *t,
					    const struct ap_stack_values *values,
					    struct ap_symbolizer *sym,
					    const struct ap_report_options *opts,
					    struct ap_error *err)
{
	struct ap_filter filter;
	if (ap_filter_init(&filter, opts, err))
		return NULL;
	size_t ns = t->nstacks ? t->nstacks : 1;
	/* one build over every stack with a value: index 0 says which */
	struct ap_stack_values *any = ap_xcalloc(ns, sizeof(*any));
	for (size_t id = 1; id < t->nstacks; id++)
		for (int i = 0; i < AP_SI_COUNT; i++)
			if (values[id].v[i] != 0)
				any[id].v[0] = 1;
	bool *unnamed = ap_report_unnamed_of(t, values, sym);
	struct ap_report_paths *p = ap_xcalloc(1, sizeof(*p));
	p->off = ap_xcalloc(ns, sizeof(*p->off));
	p->len = ap_xcalloc(ns, sizeof(*p->len));
	p->flat = ap_xmalloc(ns * sizeof(*p->flat));
	memset(p->flat, 0xff, ns * sizeof(*p->flat));
	struct ap_nodes nodes;
	ap_nodes_build(&nodes, t, any, sym, (enum ap_sample_index)0,
		       (enum ap_node_key)opts->granularity, &filter, unnamed, NULL, NULL, NULL, p);
	p->names = ap_xcalloc(nodes.n ? nodes.n : 1, sizeof(*p->names));
	p->nnames = nodes.n;
	for (size_t i = 0; i < nodes.n; i++) {
		/* the row's name is what pprof prints of the key */
		char *sep = strchr(nodes.v[i].key, AP_KEY_SEP);
		if (sep)
			*sep = 0;
		p->names[i] = nodes.v[i].key;
		nodes.v[i].key = NULL;
	}
	ap_nodes_release(&nodes);
	free(unnamed);
	free(any);
	ap_filter_release(&filter);
	return p;
}

void ap_report_paths_free(struct ap_report_paths *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->off);
	free(p->len);
	free(p->flat);
	free(p->nodes);
	free(p);
}

static int cmp_flat(const void *a, const void *b)
{
	const struct ap_report_row *x = a, *y = b;
	return cmp_order(x->flat, y->flat, x->name, y->name);
}

static int cmp_cum(const void *a, const void *b)
{
	const struct ap_report_row *x = a, *y = b;
	return cmp_order(x->cum, y->cum, x->name, y->name);
}

void ap_report_sort(struct ap_report *r, bool by_cum)
{
	if (r->nrows)
		qsort(r->rows, r->nrows, sizeof(*r->rows), by_cum ? cmp_cum : cmp_flat);
}

void ap_report_free(struct ap_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nrows; i++) {
		free(r->rows[i].name);
		free(r->rows[i].func);
		free(r->rows[i].file);
	}
	free(r->rows);
	free(r->edges);
	free(r);
}

/* ---- frames without symbols ---------------------------------------------- */

static int cmp_unsym(const void *a, const void *b)
{
	const struct ap_unsym_module *x = a, *y = b;
	return cmp_order(x->value, y->value, x->module, y->module);
}

size_t ap_report_unsymbolized(const struct ap_trace *t, const struct ap_stack_values *values,
			      struct ap_symbolizer *sym, enum ap_sample_index si,
			      struct ap_unsym_module **out, double *any, double *total)
{
	struct ap_frame *frames = NULL;
	size_t nframes = 0, aframes = 0;
	struct ap_unsym_module *m = NULL;
	size_t *stamp = NULL; /* per module: the last stack counted, + 1 */
	size_t n = 0, alloc = 0, salloc = 0;
	*any = *total = 0;
	for (size_t id = 1; id < t->nstacks; id++) {
		double v = values[id].v[si];
		if (v == 0)
			continue;
		*total += v;
		size_t site = ap_sym_stack(sym, &t->stacks[id], &frames, &nframes, &aframes);
		bool counted = false;
		for (size_t k = site; k < nframes; k++) {
			if (!frames[k].unsymbolized || frames[k].module_unusable)
				continue;
			const char *mod = frames[k].module;
			size_t i = 0; /* few modules: a linear search */
			while (i < n && strcmp(m[i].module, mod))
				i++;
			if (i == n) {
				AP_ALLOC_GROW(m, n + 1, alloc);
				AP_ALLOC_GROW(stamp, n + 1, salloc);
				m[n] = (struct ap_unsym_module){mod, 0};
				stamp[n++] = 0;
			}
			if (stamp[i] != id) {
				stamp[i] = id;
				m[i].value += v;
			}
			counted = true;
		}
		if (counted)
			*any += v;
	}
	free(frames);
	free(stamp);
	if (n)
		qsort(m, n, sizeof(*m), cmp_unsym);
	*out = m;
	return n;
}
