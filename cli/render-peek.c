/* The callers and callees of a node (render.h), as pprof -peek prints
 * them: the text of `allocprof peek`/`tree` and of the TUI's call pages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "views.h"

static int edge_cmp(const void *a, const void *b)
{
	const struct ap_peek_edge *x = a, *y = b;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t ap_peek_context(const struct ap_report *r, const char *name, bool callers,
		       struct ap_peek_edge **out)
{
	size_t n = 0;
	*out = ap_xmalloc((r->nedges ? r->nedges : 1) * sizeof(**out));
	for (size_t i = 0; i < r->nedges; i++) {
		const struct ap_report_edge *e = &r->edges[i];
		/* the edges point at the rows' own names */
		if ((callers ? e->to : e->from) == name)
			(*out)[n++] = (struct ap_peek_edge){ callers ? e->from : e->to, e->value, e->inl };
	}
	if (n)
		qsort(*out, n, sizeof(**out), edge_cmp);
	return n;
}

static void peek_edges(const struct ap_report *r, const struct ap_report_row *row,
		       const struct ap_peek_edge *c, size_t n, int unit, enum ap_line_kind kind,
		       ap_line_fn line, void *ctx)
{
	char v[32], p[32], fixed[128];
	struct ap_buf name = AP_BUF_INIT;
	for (size_t k = 0; k < n; k++) {
		ap_view_format_in(v, sizeof(v), r->sample_index, c[k].value, unit);
		ap_view_percent(p, sizeof(p), c[k].value, row->cum);
		snprintf(fixed, sizeof(fixed), "%50s %s |   ", v, p);
		ap_buf_reset(&name);
		ap_buf_addf(&name, "%s%s", c[k].name, c[k].inl ? " (inline)" : "");
		struct ap_line l = { .kind = kind, .text = fixed, .body = name.buf, .node = c[k].name };
		line(ctx, &l);
	}
	ap_buf_release(&name);
}

void ap_render_peek_node(const struct ap_report *r, size_t i, double sum, int unit,
			 ap_line_fn line, void *ctx)
{
	const struct ap_report_row *row = &r->rows[i];
	char a[32], b[32], c[32], d[32], e[32], fixed[192];
	struct ap_peek_edge *in, *out;
	size_t nin = ap_peek_context(r, row->name, true, &in);
	size_t nout = ap_peek_context(r, row->name, false, &out);
	peek_edges(r, row, in, nin, unit, AP_LINE_CALLER, line, ctx);
	ap_view_format_in(a, sizeof(a), r->sample_index, row->flat, unit);
	ap_view_percent(b, sizeof(b), row->flat, r->total);
	ap_view_percent(c, sizeof(c), sum, r->total);
	ap_view_format_in(d, sizeof(d), r->sample_index, row->cum, unit);
	ap_view_percent(e, sizeof(e), row->cum, r->total);
	snprintf(fixed, sizeof(fixed), "%10s %s %s %10s %s                | ", a, b, c, d, e);
	struct ap_line l = { .kind = AP_LINE_NODE, .text = fixed, .body = row->name, .node = row->name };
	line(ctx, &l);
	peek_edges(r, row, out, nout, unit, AP_LINE_CALLEE, line, ctx);
	free(in);
	free(out);
}
