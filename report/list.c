/* The `list` model: for each function matching a regex, its source lines
 * with flat and cum per line, like `pprof -list`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report-int.h"

/* A source file read into lines (line i is lines[i - 1]). */
struct source {
	char *path; /* where it was found; NULL: not found */
	char *data;
	char **lines;
	size_t nlines;
};

static bool readable(const char *path)
{
	return access(path, R_OK) == 0;
}

/* Where the source of `file` is: the recorded path, or under one of the
 * colon-separated `dirs` by trailing path components. Malloc'd or NULL. */
static char *find_source(const char *file, const char *dirs)
{
	if (readable(file))
		return ap_xstrdup(file);
	if (!dirs)
		return NULL;
	struct ap_buf b = AP_BUF_INIT;
	const char *d = dirs;
	while (*d) {
		size_t dlen = strcspn(d, ":");
		for (const char *tail = file; tail; tail = strchr(tail, '/')) {
			while (*tail == '/')
				tail++;
			if (!*tail)
				break;
			ap_buf_reset(&b);
			ap_buf_add(&b, d, dlen);
			ap_buf_addf(&b, "/%s", tail);
			if (dlen && readable(b.buf))
				return ap_buf_detach(&b, NULL);
		}
		d += dlen;
		if (*d == ':')
			d++;
	}
	ap_buf_release(&b);
	return NULL;
}

static void source_read(struct source *src, const char *path)
{
	memset(src, 0, sizeof(*src));
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	struct ap_buf b = AP_BUF_INIT;
	char chunk[65536];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		ap_buf_add(&b, chunk, got);
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		ap_buf_release(&b);
		return;
	}
	size_t alloc = 0;
	src->path = ap_xstrdup(path);
	src->data = ap_buf_detach(&b, &got);
	for (char *p = src->data; p < src->data + got;) {
		char *nl = memchr(p, '\n', (size_t)(src->data + got - p));
		AP_ALLOC_GROW(src->lines, src->nlines + 1, alloc);
		src->lines[src->nlines++] = p;
		if (!nl)
			break;
		*nl = 0;
		if (nl > p && nl[-1] == '\r')
			nl[-1] = 0;
		p = nl + 1;
	}
}

static void source_release(struct source *src)
{
	free(src->path);
	free(src->data);
	free(src->lines);
}

/* Sources by recorded file name, each read once. */
struct source_cache {
	char **names;
	struct source *src;
	size_t n, alloc, alloc2;
	const char *dirs;
};

static const struct source *source_get(struct source_cache *c, const char *file)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], file))
			return &c->src[i];
	AP_ALLOC_GROW(c->names, c->n + 1, c->alloc);
	AP_ALLOC_GROW(c->src, c->n + 1, c->alloc2);
	char *path = find_source(file, c->dirs);
	if (path)
		source_read(&c->src[c->n], path);
	else
		memset(&c->src[c->n], 0, sizeof(c->src[c->n]));
	free(path);
	c->names[c->n] = ap_xstrdup(file);
	return &c->src[c->n++];
}

static void source_cache_release(struct source_cache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->names[i]);
		source_release(&c->src[i]);
	}
	free(c->names);
	free(c->src);
}

static int strcmp_null(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* Orders nodes by function, file, line. */
static int cmp_node(const void *a, const void *b)
{
	const struct ap_node *x = *(const struct ap_node *const *)a;
	const struct ap_node *y = *(const struct ap_node *const *)b;
	int c = strcmp(x->func, y->func);
	if (!c)
		c = strcmp_null(x->file, y->file);
	if (!c)
		c = (x->line > y->line) - (x->line < y->line);
	return c;
}

static struct ap_node **sorted_nodes(struct ap_nodes *ns)
{
	struct ap_node **v = ap_xcalloc(ns->n ? ns->n : 1, sizeof(*v));
	for (size_t i = 0; i < ns->n; i++)
		v[i] = &ns->v[i];
	qsort(v, ns->n, sizeof(*v), cmp_node);
	return v;
}

/* Fills f->lines from the line nodes lines[0..n) of that function. */
static void fill_lines(struct ap_list_func *f, struct ap_node **lines, size_t n,
		       const struct source *src)
{
	int first = 0, last = 0;
	for (size_t i = 0; i < n; i++) {
		if (lines[i]->line <= 0)
			continue;
		if (!first)
			first = lines[i]->line;
		last = lines[i]->line;
	}
	size_t cap = n;
	int from = 0, to = -1;
	if (src && src->path && first) {
		from = first - AP_LIST_MARGIN < 1 ? 1 : first - AP_LIST_MARGIN;
		to = last + AP_LIST_MARGIN;
		if ((size_t)to > src->nlines)
			to = (int)src->nlines > last ? (int)src->nlines : last;
		cap += (size_t)(to - from + 1);
	}
	f->lines = ap_xcalloc(cap ? cap : 1, sizeof(*f->lines));

	/* Line 0 (no line info) first, then the range, merging the nodes in. */
	size_t k = 0;
	while (k < n && lines[k]->line <= 0) {
		f->lines[f->nlines++] =
		    (struct ap_list_line){0, lines[k]->flat, lines[k]->cum, NULL};
		k++;
	}
	if (to < from) {
		for (; k < n; k++)
			f->lines[f->nlines++] = (struct ap_list_line){
			    lines[k]->line, lines[k]->flat, lines[k]->cum, NULL};
		return;
	}
	for (int ln = from; ln <= to; ln++) {
		struct ap_list_line *l = &f->lines[f->nlines++];
		l->line = ln;
		if ((size_t)ln <= src->nlines)
			l->source = ap_xstrdup(src->lines[ln - 1]);
		if (k < n && lines[k]->line == ln) {
			l->flat = lines[k]->flat;
			l->cum = lines[k]->cum;
			k++;
		}
	}
}

struct ap_list *ap_list_new(const struct ap_trace *t, const struct ap_stack_values *values,
			    struct ap_symbolizer *sym, const struct ap_report_options *opts,
			    const char *func_regex, const char *source_path,
			    ap_report_progress_fn progress, void *progress_ctx,
			    struct ap_error *err)
{
	struct ap_regex *re = ap_regex_new(func_regex, "list", err);
	if (!re)
		return NULL;
	struct ap_report_options o = *opts;
	o.granularity = AP_GRAN_LINES;
	struct ap_filter filter;
	if (ap_filter_init(&filter, &o, err)) {
		ap_regex_free(re);
		return NULL;
	}
	struct ap_stack_values *own = NULL;
	if (!values && !(values = own = ap_report_stack_values(t, err))) {
		ap_filter_release(&filter);
		ap_regex_free(re);
		return NULL;
	}

	/* pprof -list has no routine for an address of an unnamed mapping */
	bool *unnamed = ap_report_unnamed_of(t, values, sym);
	struct ap_nodes funcs, lines;
	ap_nodes_build(&funcs, t, values, sym, o.sample_index, AP_KEY_FUNC_FILE, &filter, unnamed,
		       NULL, progress, progress_ctx, NULL);
	ap_nodes_build(&lines, t, values, sym, o.sample_index, AP_KEY_LINE, &filter, unnamed, NULL,
		       NULL, NULL, NULL);
	free(unnamed);

	struct ap_list *l = ap_xcalloc(1, sizeof(*l));
	l->sample_index = o.sample_index;
	l->total = funcs.total;
	struct ap_node **fv = sorted_nodes(&funcs);
	struct ap_node **lv = sorted_nodes(&lines);
	struct source_cache cache = {.dirs = source_path};
	size_t alloc = 0, li = 0;
	for (size_t i = 0; i < funcs.n; i++) {
		const struct ap_node *fn = fv[i];
		if (!ap_regex_match(re, fn->func))
			continue;
		/* Both arrays are in (func, file) order: skip to this group. */
		while (li < lines.n && (strcmp(lv[li]->func, fn->func) < 0 ||
					(!strcmp(lv[li]->func, fn->func) &&
					 strcmp_null(lv[li]->file, fn->file) < 0)))
			li++;
		size_t end = li;
		while (end < lines.n && !strcmp(lv[end]->func, fn->func) &&
		       !strcmp_null(lv[end]->file, fn->file))
			end++;

		AP_ALLOC_GROW(l->funcs, l->nfuncs + 1, alloc);
		struct ap_list_func *f = &l->funcs[l->nfuncs++];
		memset(f, 0, sizeof(*f));
		f->name = ap_xstrdup(fn->func);
		f->file = fn->file ? ap_xstrdup(fn->file) : NULL;
		f->flat = fn->flat;
		f->cum = fn->cum;
		const struct source *src = fn->file ? source_get(&cache, fn->file) : NULL;
		if (src && src->path)
			f->path = ap_xstrdup(src->path);
		fill_lines(f, lv + li, end - li, src);
		li = end;
	}

	source_cache_release(&cache);
	free(fv);
	free(lv);
	ap_nodes_release(&funcs);
	ap_nodes_release(&lines);
	ap_filter_release(&filter);
	ap_regex_free(re);
	free(own);
	return l;
}

void ap_list_free(struct ap_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nfuncs; i++) {
		struct ap_list_func *f = &l->funcs[i];
		for (size_t k = 0; k < f->nlines; k++)
			free(f->lines[k].source);
		free(f->lines);
		free(f->name);
		free(f->file);
		free(f->path);
	}
	free(l->funcs);
	free(l);
}
