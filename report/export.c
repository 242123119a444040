/* The export model (every stack with a value, symbolized once) and two of
 * its renderers: folded stacks and JSON. The pprof renderer is in
 * export_pprof.c. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ap_export.h"
#include "report-int.h"

int ap_export_parse_index(const char *name, enum ap_sample_index *out)
{
	for (int i = 0; i < AP_SI_COUNT; i++)
		if (!strcmp(name, ap_sample_index_name((enum ap_sample_index)i))) {
			*out = (enum ap_sample_index)i;
			return 0;
		}
	return -1;
}

json_t *ap_json_text(const char *s)
{
	if (!s)
		return json_null();
	if (ap_utf8_valid(s))
		return json_string(s);
	struct ap_buf b = AP_BUF_INIT;
	ap_buf_add_utf8(&b, s);
	json_t *j = json_string(b.buf);
	ap_buf_release(&b);
	return j;
}

/* ---- the model ----------------------------------------------------------- */

enum { SIZE_NONE, SIZE_ONE, SIZE_MIXED };

/* Per stack: the size its sampled allocations share, if they share one.
 * Go's heap profile labels each sample with its block size; a stack whose
 * allocations differ in size gets no label rather than an average. */
static int stack_sizes(const struct ap_trace *t, uint64_t *size, uint8_t *state,
		       struct ap_error *err)
{
	struct ap_events *it = ap_events_open(t);
	const struct ap_event *ev;
	ssize_t n;
	while ((n = ap_events_next(it, &ev)) > 0)
		for (size_t i = 0; i < (size_t)n; i++) {
			const struct ap_event *e = &ev[i];
			if (e->type != AP_EV_ALLOC || !(e->flags & AP_EVF_SAMPLED) ||
			    e->stack >= t->nstacks)
				continue;
			if (state[e->stack] == SIZE_NONE) {
				state[e->stack] = SIZE_ONE;
				size[e->stack] = e->size;
			} else if (size[e->stack] != e->size) {
				state[e->stack] = SIZE_MIXED;
			}
		}
	if (n < 0)
		ap_error_set(err, "%s", ap_events_error(it));
	ap_events_close(it);
	return n < 0 ? -1 : 0;
}

struct ap_export *ap_export_new(const struct ap_trace *t, const struct ap_stack_values *values,
				struct ap_symbolizer *sym, ap_report_progress_fn progress,
				void *progress_ctx, struct ap_error *err)
{
	struct ap_stack_values *own = NULL;
	if (!values && !(values = own = ap_report_stack_values(t, err)))
		return NULL;
	size_t ns = t->nstacks ? t->nstacks : 1;
	uint64_t *size = ap_xcalloc(ns, sizeof(*size));
	uint8_t *state = ap_xcalloc(ns, 1);
	if (stack_sizes(t, size, state, err) < 0) {
		free(size);
		free(state);
		free(own);
		return NULL;
	}

	struct ap_export *x = ap_xcalloc(1, sizeof(*x));
	x->trace = t;
	x->sym = sym;
	size_t salloc = 0;
	/* All frames live in one array; stacks hold offsets into it until
	 * it stops moving. */
	struct ap_frame *all = NULL, *fr = NULL;
	size_t nall = 0, aall = 0, nfr = 0, afr = 0;
	for (size_t id = 1; id < t->nstacks; id++) {
		if (progress && (id & 1023) == 0)
			progress(progress_ctx, id, t->nstacks);
		const double *v = values[id].v;
		bool any = false;
		for (int i = 0; i < AP_SI_COUNT; i++)
			any |= v[i] != 0;
		if (!any)
			continue;
		size_t site = ap_sym_stack(sym, &t->stacks[id], &fr, &nfr, &afr);
		AP_ALLOC_GROW(x->stacks, x->nstacks + 1, salloc);
		struct ap_export_stack *s = &x->stacks[x->nstacks++];
		memset(s, 0, sizeof(*s));
		s->id = (uint32_t)id;
		s->frames = (struct ap_frame *)(uintptr_t)nall;
		s->nframes = nfr;
		s->site = site;
		s->all_allocator = nfr > 0 && fr[site].allocator;
		memcpy(s->v, v, sizeof(s->v));
		s->size = state[id] == SIZE_ONE ? size[id] : 0;
		for (int i = 0; i < AP_SI_COUNT; i++)
			x->total[i] += v[i];
		AP_ALLOC_GROW(all, nall + nfr, aall);
		if (nfr)
			memcpy(all + nall, fr, nfr * sizeof(*fr));
		nall += nfr;
	}
	if (progress)
		progress(progress_ctx, t->nstacks, t->nstacks);
	for (size_t i = 0; i < x->nstacks; i++)
		x->stacks[i].frames = all + (uintptr_t)x->stacks[i].frames;
	x->frame_store = all;
	bool *unnamed = ap_report_unnamed_of(t, values, sym);
	x->unnamed_node = ap_xcalloc(t->nmaps ? t->nmaps : 1, sizeof(*x->unnamed_node));
	for (size_t m = 0; m < t->nmaps; m++)
		if (unnamed[m]) {
			const char *path = t->maps[m].path, *base = strrchr(path, '/');
			struct ap_buf b = AP_BUF_INIT;
			ap_buf_addf(&b, "[%s]", base ? base + 1 : path);
			x->unnamed_node[m] = ap_buf_detach(&b, NULL);
		}
	free(unnamed);
	free(fr);
	free(size);
	free(state);
	free(own);
	return x;
}

void ap_export_free(struct ap_export *x)
{
	if (!x)
		return;
	for (size_t m = 0; x->unnamed_node && m < x->trace->nmaps; m++)
		free(x->unnamed_node[m]);
	free(x->unnamed_node);
	free(x->frame_store);
	free(x->stacks);
	free(x);
}

const struct ap_mapping *ap_export_unnamed_map(const struct ap_export *x, const struct ap_frame *fr)
{
	if (!fr->unsymbolized || !fr->pc || !x->unnamed_node)
		return NULL;
	const struct ap_mapping *m = ap_trace_mapping_for(x->trace, fr->pc);
	return m && x->unnamed_node[m - x->trace->maps] ? m : NULL;
}

const char *ap_export_node_name(const struct ap_export *x, const struct ap_frame *fr)
{
	const struct ap_mapping *m = ap_export_unnamed_map(x, fr);
	return m ? x->unnamed_node[m - x->trace->maps] : fr->func;
}

const struct ap_frame *ap_export_stack_frames(const struct ap_export_stack *s, size_t *n)
{
	static const struct ap_frame unknown = { .func = AP_EXPORT_UNKNOWN };
	if (!s->nframes) {
		*n = 1;
		return &unknown;
	}
	*n = s->nframes - s->site;
	return s->frames + s->site;
}

/* ---- folded stacks --------------------------------------------------------- */

struct folded_line {
	char *text;
	double v;
};

static int folded_cmp(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;
	return strcmp(x->text, y->text);
}

/* A frame name as a folded-stack frame: ';' separates frames and a line
 * ends at '\n', so neither may appear inside one. */
static void add_folded_name(struct ap_buf *b, const char *name)
{
	for (const char *p = name; *p; p++)
		ap_buf_add(b, *p == ';' ? ":" : *p == '\n' ? " " : p, 1);
}

size_t ap_export_folded(const struct ap_export *x, enum ap_sample_index si,
			struct ap_buf *out)
{
	struct folded_line *lines = ap_xcalloc(x->nstacks ? x->nstacks : 1, sizeof(*lines));
	size_t n = 0;
	struct ap_buf b = AP_BUF_INIT;
	for (size_t i = 0; i < x->nstacks; i++) {
		const struct ap_export_stack *s = &x->stacks[i];
		if (s->v[si] == 0)
			continue;
		ap_buf_reset(&b);
		size_t nf;
		const struct ap_frame *fr = ap_export_stack_frames(s, &nf);
		for (size_t k = nf; k-- > 0;) {
			/* named as pprof and the views name them */
			add_folded_name(&b, ap_export_node_name(x, &fr[k]));
			if (k > 0)
				ap_buf_addstr(&b, ";");
		}
		lines[n].text = ap_xstrdup(b.buf);
		lines[n++].v = s->v[si];
	}
	if (n)
		qsort(lines, n, sizeof(*lines), folded_cmp);
	size_t written = 0;
	for (size_t i = 0; i < n;) {
		double v = 0;
		size_t j = i;
		for (; j < n && !strcmp(lines[j].text, lines[i].text); j++)
			v += lines[j].v;
		long long r = llround(v);
		if (r != 0) {
			ap_buf_addf(out, "%s %lld\n", lines[i].text, r);
			written++;
		}
		i = j;
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	ap_buf_release(&b);
	return written;
}

/* ---- JSON ---------------------------------------------------------------------- */

static int stack_cmp(const void *a, const void *b, void *ctx)
{
	const struct ap_export_stack *x = *(const struct ap_export_stack *const *)a;
	const struct ap_export_stack *y = *(const struct ap_export_stack *const *)b;
	enum ap_sample_index si = *(const enum ap_sample_index *)ctx;
	double vx = x->v[si], vy = y->v[si];
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static json_t *json_frames(const struct ap_export_stack *s)
{
	json_t *a = json_array();
	size_t nf;
	const struct ap_frame *fr = ap_export_stack_frames(s, &nf);
	for (size_t k = 0; k < nf; k++) {
		const struct ap_frame *f = &fr[k];
		json_array_append_new(a, json_pack("{s:o, s:o, s:i, s:b, s:o}",
			"function", ap_json_text(f->func),
			"file", ap_json_text(f->file),
			"line", f->line,
			"inlined", f->inlined,
			"module", ap_json_text(f->module)));
	}
	return a;
}

int ap_export_json(const struct ap_export *x, enum ap_sample_index si,
		   struct ap_buf *out, struct ap_error *err)
{
	const struct ap_trace *t = x->trace;
	json_t *types = json_array(), *totals = json_object(), *stacks = json_array();
	for (int i = 0; i < AP_SI_COUNT; i++) {
		enum ap_sample_index k = (enum ap_sample_index)i;
		json_array_append_new(types, json_pack("{s:s, s:s}",
			"type", ap_sample_index_name(k),
			"unit", ap_sample_index_is_bytes(k) ? "bytes" : "count"));
		json_object_set_new(totals, ap_sample_index_name(k),
				    json_integer(llround(x->total[i])));
	}

	const struct ap_export_stack **order = ap_xcalloc(x->nstacks ? x->nstacks : 1,
							  sizeof(*order));
	for (size_t i = 0; i < x->nstacks; i++)
		order[i] = &x->stacks[i];
	if (x->nstacks)
		qsort_r(order, x->nstacks, sizeof(*order), stack_cmp, &si);
	for (size_t i = 0; i < x->nstacks; i++) {
		const struct ap_export_stack *s = order[i];
		json_t *o = json_pack("{s:I, s:o}", "id", (json_int_t)s->id,
				      "frames", json_frames(s));
		for (int k = 0; k < AP_SI_COUNT; k++)
			json_object_set_new(o, ap_sample_index_name((enum ap_sample_index)k),
					    json_integer(llround(s->v[k])));
		json_object_set_new(o, "size", s->size ? json_integer((json_int_t)s->size)
						       : json_null());
		json_array_append_new(stacks, o);
	}
	free(order);

	json_t *root = json_pack("{s:o, s:I, s:o, s:o, s:o}",
				 "program", ap_json_text(t->exe),
				 "rate", (json_int_t)t->rate,
				 "sample_types", types,
				 "totals", totals,
				 "stacks", stacks);
	char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (!text)
		return ap_error_set(err, "json: cannot encode the export");
	ap_buf_addstr(out, text);
	ap_buf_addstr(out, "\n");
	free(text);
	return 0;
}
