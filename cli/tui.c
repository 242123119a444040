/* The browser of `allocprof tui`: its state, its keys and its views (top,
 * list, advise, one advise site, help), drawn into a struct tui_screen.
 * The models come from report/ (ap_report_new, ap_list_new, ap_advise_run);
 * this file only draws them and moves around in them. */
#include <curses.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "render.h"
#include "timeline.h"
#include "tui.h"

#define KEY_ESC 27

/* The order `s` cycles through, as the brief and pprof list them. */
static const enum ap_sample_index si_cycle[] = {AP_SI_ALLOC_SPACE, AP_SI_ALLOC_OBJECTS,
						AP_SI_INUSE_SPACE, AP_SI_INUSE_OBJECTS,
						AP_SI_PEAK_SPACE, AP_SI_PEAK_OBJECTS,
						AP_SI_TEMPORARY};
static const char *const gran_names[] = {"functions", "lines", "files"};

/* ---- pages of text (list, one advise site, help) ------------------------ */

static void page_add_target(struct tui_page *p, int attr, const char *fixed, const char *body,
			    const char *target)
{
	AP_ALLOC_GROW(p->lines, p->n + 1, p->alloc);
	p->lines[p->n++] = (struct tui_line){
	    .fixed = ap_xstrdup(fixed),
	    .body = body ? ap_xstrdup(body) : NULL,
	    .target = target ? ap_xstrdup(target) : NULL,
	    .attr = attr,
	};
}

static void page_add(struct tui_page *p, int attr, const char *fixed, const char *body)
{
	page_add_target(p, attr, fixed, body, NULL);
}

static void page_addf(struct tui_page *p, int attr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void page_addf(struct tui_page *p, int attr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	page_add(p, attr, buf, NULL);
}

/* Adds `text` word-wrapped to `width` columns, each line after `indent`. */
static void page_wrap(struct tui_page *p, int attr, const char *indent, const char *text, int width)
{
	if (width < 20)
		width = 20;
	struct ap_buf line = AP_BUF_INIT;
	const char *s = text;
	while (*s) {
		while (*s == ' ')
			s++;
		size_t w = strcspn(s, " ");
		if (line.len && line.len + 1 + w > (size_t)width) {
			page_addf(p, attr, "%s%s", indent, line.buf);
			ap_buf_reset(&line);
		}
		if (line.len)
			ap_buf_addstr(&line, " ");
		ap_buf_add(&line, s, w);
		s += w;
	}
	if (line.len)
		page_addf(p, attr, "%s%s", indent, line.buf);
	ap_buf_release(&line);
}

static void page_release(struct tui_page *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->lines[i].fixed);
		free(p->lines[i].body);
		free(p->lines[i].target);
	}
	free(p->lines);
	memset(p, 0, sizeof(*p));
}

/* ---- scrolling ---------------------------------------------------------- */

/* The advise view's pane under the table with the selected site's
 * verdict and reasons: a heading and ADVISE_REASONS lines, on screens of
 * at least ADVISE_PANE_MIN rows. */
#define ADVISE_REASONS 3
#define ADVISE_PANE_MIN 14

static int advise_pane(const struct tui *t)
{
	return t->rows >= ADVISE_PANE_MIN ? 1 + ADVISE_REASONS : 0;
}

/* Rows each view has for its lines: the top view has four header lines,
 * the advise view three and its pane, the call pages two, the other pages
 * one; all have the status line. */
static size_t view_page(const struct tui *t, enum tui_view_kind k)
{
	int head = k == TUI_VIEW_TOP	  ? 4
		   : k == TUI_VIEW_ADVISE ? 3 + advise_pane(t)
		   : k == TUI_VIEW_PEEK	  ? 2
					  : 1;
	int n = t->rows - head - 1;
	return n > 1 ? (size_t)n : 1;
}

/* Keeps a cursor view's cursor inside its n lines and on screen, or a
 * page's first line inside its range. */
static void pos_fix(struct tui_pos *p, size_t n, size_t page, bool cursor)
{
	if (!cursor) {
		size_t max = n > page ? n - page : 0;
		if (p->top > max)
			p->top = max;
		return;
	}
	if (n == 0) {
		p->cur = p->top = 0;
		return;
	}
	if (p->cur >= n)
		p->cur = n - 1;
	if (p->cur < p->top)
		p->top = p->cur;
	if (p->cur >= p->top + page)
		p->top = p->cur - page + 1;
	if (p->top + page > n)
		p->top = n > page ? n - page : 0;
}

/* The movement keys; returns false for any other key. A cursor view moves
 * its cursor, a page its first line. */
static bool pos_key(struct tui_pos *p, size_t n, size_t page, bool cursor, int key)
{
	size_t *v = cursor ? &p->cur : &p->top;
	switch (key) {
	case KEY_DOWN:
	case 'j':
		(*v)++;
		break;
	case KEY_UP:
	case 'k':
		if (*v)
			(*v)--;
		break;
	case KEY_NPAGE:
	case ' ':
		*v += page;
		break;
	case KEY_PPAGE:
		*v = *v > page ? *v - page : 0;
		break;
	case KEY_HOME:
		*v = 0;
		break;
	case KEY_END:
		*v = n ? n - 1 : 0;
		if (!cursor)
			*v = n > page ? n - page : 0;
		break;
	case KEY_RIGHT:
	case 'l':
		p->hscroll += 8;
		break;
	case KEY_LEFT:
	case 'h':
		p->hscroll = p->hscroll > 8 ? p->hscroll - 8 : 0;
		break;
	default:
		return false;
	}
	if (!cursor && *v + page > n)
		*v = n > page ? n - page : 0;
	pos_fix(p, n, page, cursor);
	return true;
}

/* ---- the top model ------------------------------------------------------ */

static void busy(struct tui *t, const char *what)
{
	if (t->busy)
		t->busy(t, what);
}

static void set_status(struct tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_status(struct tui *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->status, sizeof(t->status), fmt, ap);
	va_end(ap);
}

/* A replay failed with err (tui.failed). */
static void replay_failed(struct tui *t, const struct ap_error *err)
{
	if (!t->failed) {
		t->failed = true;
		t->error = *err;
	}
	set_status(t, "%s", t->error.msg);
}

static size_t row_named(const struct ap_report *r, const char *name, size_t fallback)
{
	for (size_t i = 0; name && i < r->nrows; i++)
		if (!strcmp(r->rows[i].name, name))
			return i;
	return fallback;
}

static char *current_name(const struct tui *t)
{
	const struct ap_report *r = t->report;
	if (!r || t->top_pos.cur >= r->nrows)
		return NULL;
	return ap_xstrdup(r->rows[t->top_pos.cur].name);
}

static void peek_refresh(struct tui *t);

static void reports_clear(struct tui *t)
{
	for (size_t si = 0; si < AP_SI_COUNT; si++)
		for (size_t g = 0; g < AP_ARRAY_SIZE(t->reports[si]); g++) {
			ap_report_free(t->reports[si][g]);
			t->reports[si][g] = NULL;
		}
	t->report = NULL;
}

/* Makes the top model of the current options current: the one made
 * before for this sample index and granularity, unless the focus or
 * ignore regex changed (`filter`: then every model made so far goes).
 * On failure (a bad regex) the old model stays, the error goes to the
 * status line and -1 is returned. The cursor stays on the same node when
 * it still exists. */
static int rebuild(struct tui *t, bool filter)
{
	struct ap_report **slot =
	    &t->reports[t->o.view.report.sample_index][t->o.view.report.granularity];
	struct ap_report *r = filter ? NULL : *slot;
	if (!r) {
		struct ap_error err;
		busy(t, "symbolizing");
		r = ap_report_new(t->v->trace, t->v->values, t->v->sym, &t->o.view.report, NULL,
				  NULL, &err);
		if (!r) {
			set_status(t, "%s", err.msg);
			return -1;
		}
	}
	/* a model made before may be in the other order */
	ap_report_sort(r, t->o.by_cum);
	char *name = current_name(t);
	t->top_pos.cur = row_named(r, name, t->top_pos.cur);
	free(name);
	if (filter)
		reports_clear(t);
	*slot = r;
	t->report = r;
	pos_fix(&t->top_pos, r->nrows, view_page(t, TUI_VIEW_TOP), true);
	peek_refresh(t);
	return 0;
}

static void next_sample_index(struct tui *t)
{
	enum ap_sample_index old = t->o.view.report.sample_index;
	size_t i = 0;
	while (i < AP_ARRAY_SIZE(si_cycle) && si_cycle[i] != old)
		i++;
	enum ap_sample_index next = si_cycle[(i + 1) % AP_ARRAY_SIZE(si_cycle)];
	/* temporaries need every event: a sampled trace skips them */
	if (next == AP_SI_TEMPORARY && t->v->trace->rate > 1)
		next = si_cycle[(i + 2) % AP_ARRAY_SIZE(si_cycle)];
	t->o.view.report.sample_index = next;
	if (rebuild(t, false))
		t->o.view.report.sample_index = old;
}

static void next_granularity(struct tui *t)
{
	enum ap_granularity old = t->o.view.report.granularity;
	t->o.view.report.granularity = (enum ap_granularity)((old + 1) % 3);
	if (rebuild(t, false))
		t->o.view.report.granularity = old;
}

static void toggle_cum(struct tui *t)
{
	char *name = current_name(t);
	t->o.by_cum = !t->o.by_cum;
	ap_report_sort(t->report, t->o.by_cum);
	t->top_pos.cur = row_named(t->report, name, t->top_pos.cur);
	free(name);
	pos_fix(&t->top_pos, t->report->nrows, view_page(t, TUI_VIEW_TOP), true);
}

/* Applies the prompt's text as the focus or ignore regex. */
static void apply_filter(struct tui *t)
{
	char **slot = t->prompt == '/' ? &t->focus : &t->ignore;
	const char **opt = t->prompt == '/' ? &t->o.view.report.focus : &t->o.view.report.ignore;
	char *old = *slot;
	*slot = t->input.len ? ap_xstrdup(t->input.buf) : NULL;
	*opt = *slot;
	if (rebuild(t, true)) {
		free(*slot);
		*slot = old;
		*opt = old;
		return;
	}
	free(old);
}

/* ---- the list view ------------------------------------------------------ */

/* `s` as a POSIX extended regex matching exactly `s`. */
static char *regex_exact(const char *s)
{
	struct ap_buf b = AP_BUF_INIT;
	ap_buf_addstr(&b, "^");
	for (; *s; s++) {
		if (strchr(".[]()*+?{}|^$\\", *s))
			ap_buf_addstr(&b, "\\");
		ap_buf_add(&b, s, 1);
	}
	ap_buf_addstr(&b, "$");
	return ap_buf_detach(&b, NULL);
}

struct list_page_ctx {
	struct tui_page *p;
	int mark;
	size_t at;		/* the page index of line `mark` */
};

static void list_page_line(void *ctx, const struct ap_line *line)
{
	struct list_page_ctx *c = ctx;
	if (line->kind != AP_LINE_SOURCE) {
		page_add(c->p, line->kind == AP_LINE_TITLE ? TUI_BOLD : TUI_NORMAL, line->text, NULL);
		return;
	}
	int attr = line->lineno == c->mark ? TUI_CURSOR : line->hot ? TUI_BOLD : TUI_NORMAL;
	if (line->lineno == c->mark)
		c->at = c->p->n;
	page_add(c->p, attr, line->text, line->body);
}

/* The lines of one function, as `allocprof list` prints them; returns the
 * page index of line `mark` (or of the function's first line). */
static size_t list_func_page(struct tui_page *p, const struct ap_list *l,
			     const struct ap_list_func *f, int mark)
{
	struct list_page_ctx c = { p, mark, p->n };
	ap_render_list_func(l, f, list_page_line, &c);
	return c.at;
}

static bool same_file(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* The functions of a row of the top model (its function, or with files
 * granularity every function of its file), annotated. */
static void open_list(struct tui *t, const struct ap_report_row *row)
{
	if (!row) {
		set_status(t, "nothing to list");
		return;
	}
	if (!row->func && !row->file) {
		set_status(t, "no function or file to list for '%s'", row->name);
		return;
	}
	char *regex = row->func ? regex_exact(row->func) : ap_xstrdup(".*");
	struct ap_error err;
	busy(t, "reading sources");
	struct ap_list *l = ap_list_new(t->v->trace, t->v->values, t->v->sym, &t->o.view.report,
					regex, t->o.source_path, NULL, NULL, &err);
	free(regex);
	if (!l) {
		set_status(t, "%s", err.msg);
		return;
	}
	/* A function row shows every function of that name, but a line row
	 * only the one in the row's file when there is such a one. */
	bool by_file = !row->func || row->line;
	size_t in_file = 0;
	for (size_t i = 0; i < l->nfuncs; i++)
		in_file += same_file(l->funcs[i].file, row->file);
	if (row->func && !in_file)
		by_file = false;

	page_release(&t->list_page);
	size_t mark_at = 0;
	for (size_t i = 0; i < l->nfuncs; i++) {
		if (by_file && !same_file(l->funcs[i].file, row->file))
			continue;
		size_t at = list_func_page(&t->list_page, l, &l->funcs[i], row->line);
		if (row->line && t->list_page.lines[at].attr == TUI_CURSOR)
			mark_at = at;
	}
	bool empty = t->list_page.n == 0;
	ap_list_free(l);
	if (empty) {
		set_status(t, "no source lines for '%s'", row->name);
		return;
	}
	free(t->list_what);
	t->list_what = ap_xstrdup(row->func ? row->func : row->file);
	/* The marked line a third of the way down. */
	size_t page = view_page(t, TUI_VIEW_LIST);
	t->list_pos = (struct tui_pos){.top = mark_at > page / 3 ? mark_at - page / 3 : 0};
	pos_fix(&t->list_pos, t->list_page.n, page, false);
	t->stack[t->depth++] = TUI_VIEW_LIST;
}

/* ---- the call pages ----------------------------------------------------- */

/* The row of the top model named `name`, or NULL. */
static const struct ap_report_row *row_of(const struct tui *t, const char *name)
{
	size_t i = row_named(t->report, name, SIZE_MAX);
	return i == SIZE_MAX ? NULL : &t->report->rows[i];
}

static const char *peek_name(const struct tui *t)
{
	return t->peek[t->npeek - 1].name;
}

struct peek_page_ctx {
	struct tui_page *p;
	int last; /* the kind of the line before, -1 at the start */
	size_t node_at;
};

/* pprof -peek's lines of one node, under a "callers" and a "callees"
 * heading; Enter on a line goes to the node it names. */
static void peek_page_line(void *ctx, const struct ap_line *line)
{
	struct peek_page_ctx *c = ctx;
	switch (line->kind) {
	case AP_LINE_CALLER:
		if (c->last != AP_LINE_CALLER)
			page_add(c->p, TUI_BOLD, "callers", NULL);
		page_add_target(c->p, TUI_NORMAL, line->text, line->body, line->node);
		break;
	case AP_LINE_NODE:
		if (c->last != AP_LINE_CALLER) {
			page_add(c->p, TUI_BOLD, "callers", NULL);
			page_add(c->p, TUI_NORMAL, "  (none)", NULL);
		}
		c->node_at = c->p->n;
		page_add_target(c->p, TUI_BOLD, line->text, line->body, line->node);
		break;
	case AP_LINE_CALLEE:
		if (c->last == AP_LINE_NODE)
			page_add(c->p, TUI_BOLD, "callees", NULL);
		page_add_target(c->p, TUI_NORMAL, line->text, line->body, line->node);
		break;
	default:
		page_add(c->p, TUI_NORMAL, line->text, line->body);
	}
	c->last = (int)line->kind;
}

/* Makes the page of the current node again, from the current model (sum%
 * is the node's own flat%, as `peek` of that one node prints it). */
static void peek_refresh(struct tui *t)
{
	page_release(&t->peek_page);
	t->peek_node_at = 0;
	if (!t->npeek)
		return;
	const struct ap_report *r = t->report;
	size_t i = row_named(r, peek_name(t), SIZE_MAX);
	if (i == SIZE_MAX) {
		page_addf(&t->peek_page, TUI_NORMAL, "  (no node '%s' with this sample index, focus and ignore)",
			  peek_name(t));
		return;
	}
	struct peek_page_ctx c = { &t->peek_page, -1, 0 };
	ap_render_peek_node(r, i, r->rows[i].flat, AP_VIEW_UNIT_EACH, peek_page_line, &c);
	if (c.last == AP_LINE_NODE) {
		page_add(&t->peek_page, TUI_BOLD, "callees", NULL);
		page_add(&t->peek_page, TUI_NORMAL, "  (none)", NULL);
	}
	t->peek_node_at = c.node_at;
}

static void push_view(struct tui *t, enum tui_view_kind k);

/* Shows `name` between its callers and callees, the cursor on it; the
 * node shown before stays in the history. */
static void open_peek(struct tui *t, const char *name)
{
	if (!name) {
		set_status(t, "no node here");
		return;
	}
	AP_ALLOC_GROW(t->peek, t->npeek + 1, t->peek_alloc);
	t->peek[t->npeek++] = (struct tui_peek_step){ .name = ap_xstrdup(name) };
	peek_refresh(t);
	t->peek[t->npeek - 1].pos.cur = t->peek_node_at;
	pos_fix(&t->peek[t->npeek - 1].pos, t->peek_page.n, view_page(t, TUI_VIEW_PEEK), true);
	if (t->stack[t->depth - 1] != TUI_VIEW_PEEK)
		push_view(t, TUI_VIEW_PEEK);
}

static void pop_view(struct tui *t);

/* Back to the node shown before, or out of the call pages. */
static void peek_back(struct tui *t)
{
	free(t->peek[--t->npeek].name);
	if (t->npeek)
		peek_refresh(t);
	else
		pop_view(t);
}

/* After a move, the cursor on the nearest line that names a node, in the
 * direction it moved (from `old`). */
static void peek_skip(struct tui *t, size_t old)
{
	const struct tui_page *p = &t->peek_page;
	struct tui_pos *pos = &t->peek[t->npeek - 1].pos;
	if (!p->n || p->lines[pos->cur].target)
		return;
	size_t cur = pos->cur;
	int dir = cur >= old ? 1 : -1;
	for (int pass = 0; pass < 2; pass++, dir = -dir)
		for (size_t i = cur; i < p->n; i += (size_t)dir)
			if (p->lines[i].target) {
				pos->cur = i;
				pos_fix(pos, p->n, view_page(t, TUI_VIEW_PEEK), true);
				return;
			}
	pos->cur = old;
}

/* Enter on a call page: to the caller or callee under the cursor, or on
 * the node itself its source, as the list view shows it. */
static void peek_enter(struct tui *t)
{
	const struct tui_page *p = &t->peek_page;
	size_t cur = t->peek[t->npeek - 1].pos.cur;
	if (cur >= p->n || !p->lines[cur].target)
		return;
	if (!strcmp(p->lines[cur].target, peek_name(t)))
		open_list(t, row_of(t, peek_name(t)));
	else
		open_peek(t, p->lines[cur].target);
}

/* ---- the timeline ------------------------------------------------------- */

/* The sites shown on their own, as `timeline` shows them by default. */
#define TIMELINE_SITES 5

struct tui_timeline {
	struct ap_timeline_sites sites;
	struct ap_timeline T; /* for T.nbuckets columns; nbuckets 0: none yet */
};

static void timeline_page_line(void *ctx, const struct ap_line *line)
{
	page_add(ctx, TUI_NORMAL, line->text, line->body);
}

/* Makes the timeline page for the screen: a column per bucket in the
 * width, the chart's rows what the height leaves. The sites are chosen
 * once; a new width replays the trace again, the same width only draws. */
static bool tljob_start(struct tui *t, size_t nb);
static bool tljob_poll(struct tui *t, bool block);
static void timeline_free(struct tui_timeline *tl);
/* The status line while it runs. */
#define TLJOB_STATUS "replaying the trace for the new width ..."

/* Returns false when the timeline cannot be made (a replay failed: said on
 * the status line; t->timeline is NULL then). */
static bool timeline_refresh(struct tui *t)
{
	if (t->failed && (!t->timeline || !t->timeline->T.nbuckets)) {
		set_status(t, "%s", t->error.msg);
		return false;
	}
	if (!t->timeline) {
		busy(t, "finding the call sites");
		t->timeline = ap_xcalloc(1, sizeof(*t->timeline));
		ap_timeline_sites_init(&t->timeline->sites, t->v, TIMELINE_SITES);
	}
	struct tui_timeline *tl = t->timeline;
	/* the axis label takes 11 columns, the time at the end about 12 */
	size_t nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	/* (after a failed replay, the width made before stays) */
	if (tl->T.nbuckets != nb && !t->failed &&
	    !(t->work && tl->T.nbuckets && tljob_start(t, nb))) {
		/* (with work, the old width stays shown until the new one is made) */
		busy(t, "replaying the trace");
		ap_timeline_release(&tl->T);
		struct ap_error err;
		if (ap_timeline_init(&tl->T, t->v->trace, &tl->sites, nb, false, &err) < 0) {
			replay_failed(t, &err);
			page_release(&t->timeline_page);
			if (!t->tljob) { /* (a job reads the sites) */
				timeline_free(tl);
				t->timeline = NULL;
			} else {
				ap_timeline_release(&tl->T);
				memset(&tl->T, 0, sizeof(tl->T));
			}
			return false;
		}
	}
	/* around the chart: the title and status lines, and the renderer's
	 * five lines and one per site and the rest */
	int rows = t->rows - 2 - 5 - (int)(tl->sites.shown + 1);
	page_release(&t->timeline_page);
	ap_render_timeline(&tl->T, rows < 2 ? 2 : rows, timeline_page_line, &t->timeline_page);
	return true;
}

static void timeline_free(struct tui_timeline *tl)
{
	if (!tl)
		return;
	ap_timeline_release(&tl->T);
	ap_timeline_sites_release(&tl->sites);
	free(tl);
}

static bool work_wait(struct tui *t, enum tui_view_kind k);

static void open_timeline(struct tui *t)
{
	if (work_wait(t, TUI_VIEW_TIMELINE))
		return;
	if (!timeline_refresh(t))
		return;
	t->timeline_pos = (struct tui_pos){0};
	push_view(t, TUI_VIEW_TIMELINE);
}

/* ---- the advise views --------------------------------------------------- */

static void busy_measuring(void *ctx, const char *cache, const char *why)
{
	(void)cache;
	(void)why;
	busy(ctx, "measuring allocation costs on this machine once");
}

/* The cost table as `advise` finds it (ap_cost_get). */
static int load_costs(struct tui *t)
{
	struct ap_error err, save_err;
	if (ap_cost_get(&t->costs, busy_measuring, t, &err, &save_err) < 0) {
		set_status(t, "%s", err.msg);
		return -1;
	}
	if (save_err.msg[0])
		set_status(t, "%s", save_err.msg);
	return 0;
}

static void open_advise(struct tui *t)
{
	if (work_wait(t, TUI_VIEW_ADVISE))
		return;
	if (!t->advice) {
		if (t->failed) {
			set_status(t, "%s", t->error.msg);
			return;
		}
		if (load_costs(t))
			return;
		struct ap_advise_options ao;
		ap_advise_options_init(&ao);
		ao.costs = &t->costs;
		busy(t, "replaying the trace through the pool model");
		struct ap_site_map m;
		ap_advise_sites(t->v->trace, t->v->sym, false, &m);
		struct ap_error err;
		t->advice = ap_advise_run(t->v->trace, &m, &ao, &err);
		if (t->advice)
			ap_view_measure_run(&t->o.measure, t->advice, t->v->trace, &m, &ao);
		ap_site_map_release(&m);
		if (!t->advice) {
			/* (the costs are there: a replay that failed) */
			replay_failed(t, &err);
			return;
		}
	}
	t->stack[t->depth++] = TUI_VIEW_ADVISE;
}

static int verdict_attr(enum ap_verdict v)
{
	return ap_render_verdict_good(v) ? TUI_GOOD : TUI_BAD;
}

struct site_page_ctx {
	struct tui_page *p;
	int width;
};

static void site_page_line(void *ctx, const struct ap_line *line)
{
	struct site_page_ctx *c = ctx;
	switch (line->kind) {
	case AP_LINE_TITLE:
		page_add(c->p, TUI_BOLD, line->text, NULL);
		break;
	case AP_LINE_GOOD:
		page_add(c->p, TUI_GOOD, line->text, NULL);
		break;
	case AP_LINE_BAD:
		page_add(c->p, TUI_BAD, line->text, NULL);
		break;
	case AP_LINE_WRAP:
		page_wrap(c->p, TUI_NORMAL, "   ", line->text, c->width);
		page_add(c->p, TUI_NORMAL, "", NULL);
		break;
	default:
		page_add(c->p, TUI_NORMAL, line->text, line->body);
		break;
	}
}

/* One site in full, as `advise` prints it, the reasons wrapped. */
static void site_page(const struct tui *t, struct tui_page *p)
{
	struct site_page_ctx c = { p, t->cols - 4 };
	ap_render_advise_site(t->advice, t->advise_pos.cur, site_page_line, &c);
}

/* ---- help --------------------------------------------------------------- */

static const char *const help_lines[] = {
    "Keys",
    "",
    "  Up/Down, j/k        move (in a page: scroll)",
    "  PgUp/PgDn, Space    a page up or down",
    "  Home/End            first or last line",
    "  Left/Right, h/l     scroll names and source sideways",
    "  Enter               top: the selected node between its callers and",
    "                      callees (as peek); there: go to the caller or callee",
    "                      under the cursor, or on the node itself its source;",
    "                      advise: the selected site in full",
    "  L                   top and callers/callees: list the function (source,",
    "                      flat and cum per line)",
    "  T                   top and callers/callees: in-use bytes over time (as",
    "                      timeline), the peak marked '@'",
    "  Esc, q, Backspace   back to the previous view or node (q on top: quit)",
    "  ?                   this help",
    "",
    "Top view",
    "",
    "  s                   next sample index (here and on callers/callees):",
    "                      alloc_space, alloc_objects, inuse_space, inuse_objects,",
    "                      peak_space, peak_objects, temporary (with --all traces)",
    "  g                   next granularity: functions, lines, files",
    "  c                   sort by cum / by flat",
    "  /                   focus: keep stacks with a frame matching a regex",
    "                      (an empty regex clears it)",
    "  \\                   ignore: drop stacks with a frame matching a regex",
    "  a                   the pool advisor: which sites a pool would pay at",
    "",
    "Columns: flat is what a node allocated itself (it is the call site), cum",
    "what it allocated with its callees; sum% adds up flat% down the table.",
};

/* ---- keys --------------------------------------------------------------- */

static enum tui_view_kind view_of(const struct tui *t)
{
	return t->stack[t->depth - 1];
}

static void pop_view(struct tui *t)
{
	if (t->depth > 1)
		t->depth--;
	else
		t->quit = true;
}

static void push_view(struct tui *t, enum tui_view_kind k)
{
	if (t->depth < (int)AP_ARRAY_SIZE(t->stack))
		t->stack[t->depth++] = k;
}

static void prompt_key(struct tui *t, int key)
{
	switch (key) {
	case '\n':
	case '\r':
	case KEY_ENTER:
		apply_filter(t);
		t->prompt = 0;
		break;
	case KEY_ESC:
		t->prompt = 0;
		break;
	case KEY_BACKSPACE:
	case 127:
	case 8:
		while (t->input.len && (t->input.buf[t->input.len - 1] & 0xc0) == 0x80)
			t->input.len--; /* the rest of a UTF-8 character */
		if (t->input.len)
			t->input.len--;
		t->input.buf[t->input.len] = 0;
		break;
	default:
		if (key >= 0x20 && key < 0x100 && key != 0x7f) {
			char c = (char)key;
			ap_buf_add(&t->input, &c, 1);
		}
	}
}

/* ---- the views: one table of operations ---------------------------------- */

static size_t top_lines(const struct tui *t)
{
	return t->report->nrows;
}

static size_t list_lines(const struct tui *t)
{
	return t->list_page.n;
}

static size_t advise_lines(const struct tui *t)
{
	return t->advice->nsites;
}

static size_t site_lines(const struct tui *t)
{
	struct tui_page p = {0};
	site_page(t, &p);
	size_t n = p.n;
	page_release(&p);
	return n;
}

static size_t help_lines_n(const struct tui *t)
{
	(void)t;
	return AP_ARRAY_SIZE(help_lines);
}

static size_t peek_lines(const struct tui *t)
{
	return t->peek_page.n;
}

static size_t timeline_lines(const struct tui *t)
{
	return t->timeline_page.n;
}

static struct tui_pos *top_pos(struct tui *t)
{
	return &t->top_pos;
}

static struct tui_pos *list_pos(struct tui *t)
{
	return &t->list_pos;
}

static struct tui_pos *advise_pos(struct tui *t)
{
	return &t->advise_pos;
}

static struct tui_pos *site_pos(struct tui *t)
{
	return &t->site_pos;
}

static struct tui_pos *help_pos(struct tui *t)
{
	return &t->help_pos;
}

static struct tui_pos *peek_pos(struct tui *t)
{
	return &t->peek[t->npeek - 1].pos;
}

static struct tui_pos *timeline_pos(struct tui *t)
{
	return &t->timeline_pos;
}

/* A view's own keys (after the moves, q, Esc, Backspace and ?): true
 * when the key was one. */
static bool top_key(struct tui *t, int key, bool enter);
static bool advise_key(struct tui *t, int key, bool enter);
static bool peek_key(struct tui *t, int key, bool enter);

/* Drawing each view's lines below its title (pos and page fixed). */
static void draw_top_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page);
static void draw_advise_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos,
			     size_t page);
static void draw_list_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page);
static void draw_site_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page);
static void draw_peek_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page);
static void draw_timeline_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos,
			       size_t page);
static void draw_help_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page);

/* What a view is to the loop: its lines and where it stands in them, a
 * cursor (a line chosen) or a page (a first line shown), how it draws,
 * its own keys (NULL: none) and what the status line says of them. */
struct tui_view_ops {
	size_t (*lines)(const struct tui *t);
	struct tui_pos *(*pos)(struct tui *t);
	bool cursor;
	bool counted;	/* a page that shows "first-last/lines" on its title */
	void (*draw)(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page);
	bool (*key)(struct tui *t, int key, bool enter);
	const char *keys;
};

static const struct tui_view_ops view_ops[] = {
	[TUI_VIEW_TOP] = {top_lines, top_pos, true, false, draw_top_view, top_key,
			  "q:quit ?:help Enter:calls L:list a:advise T:timeline s:index "
			  "g:granularity c:sort /:focus \\:ignore"},
	[TUI_VIEW_LIST] = {list_lines, list_pos, false, true, draw_list_view, NULL,
			   "q/Esc back  ? help  arrows/PgUp/PgDn scroll  Left/Right sideways"},
	[TUI_VIEW_ADVISE] = {advise_lines, advise_pos, true, false, draw_advise_view, advise_key,
			     "q/Esc back  ? help  Enter the site in full  arrows/PgUp/PgDn move"},
	[TUI_VIEW_SITE] = {site_lines, site_pos, false, true, draw_site_view, NULL,
			   "q/Esc back to the sites  ? help"},
	[TUI_VIEW_HELP] = {help_lines_n, help_pos, false, false, draw_help_view, NULL,
			   "q/Esc/? back"},
	[TUI_VIEW_PEEK] = {peek_lines, peek_pos, true, false, draw_peek_view, peek_key,
			   "Enter: go to caller/callee (on the node: list)  Bksp/Esc/q back  s index  "
			   "L list  T timeline  ? help"},
	[TUI_VIEW_TIMELINE] = {timeline_lines, timeline_pos, false, true, draw_timeline_view,
			       NULL, "q/Esc back  ? help  arrows/PgUp/PgDn scroll"},
};

static size_t lines_of(const struct tui *t, enum tui_view_kind k)
{
	return view_ops[k].lines(t);
}

static struct tui_pos *pos_of(struct tui *t, enum tui_view_kind k)
{
	return view_ops[k].pos(t);
}

static bool is_cursor_view(enum tui_view_kind k)
{
	return view_ops[k].cursor;
}

void tui_key(struct tui *t, int key)
{
	if (t->prompt) {
		prompt_key(t, key);
		return;
	}
	if (key == KEY_RESIZE)
		return;
	t->status[0] = 0;
	enum tui_view_kind k = view_of(t);
	size_t old = pos_of(t, k)->cur;
	if (pos_key(pos_of(t, k), lines_of(t, k), view_page(t, k), is_cursor_view(k), key)) {
		if (k == TUI_VIEW_PEEK)
			peek_skip(t, old);
		return;
	}
	bool enter = key == '\n' || key == '\r' || key == KEY_ENTER;
	bool back = key == KEY_BACKSPACE || key == 127 || key == 8;
	switch (key) {
	case 'q':
	case KEY_ESC:
	case KEY_BACKSPACE:
	case 127:
	case 8:
		if (k == TUI_VIEW_TOP && key == KEY_ESC)
			set_status(t, "q quits");
		else if (k == TUI_VIEW_PEEK)
			peek_back(t);
		else if (k != TUI_VIEW_TOP || !back)
			pop_view(t);
		return;
	case '?':
		if (k == TUI_VIEW_HELP) {
			pop_view(t);
		} else {
			t->help_pos = (struct tui_pos){0};
			push_view(t, TUI_VIEW_HELP);
		}
		return;
	}
	if (view_ops[k].key)
		view_ops[k].key(t, key, enter);
}

static bool advise_key(struct tui *t, int key, bool enter)
{
	(void)key;
	if (!enter || !t->advice->nsites)
		return false;
	t->site_pos = (struct tui_pos){0};
	push_view(t, TUI_VIEW_SITE);
	return true;
}

static bool peek_key(struct tui *t, int key, bool enter)
{
	if (enter) {
		peek_enter(t);
	} else if (key == 's') {
		next_sample_index(t);
		t->peek[t->npeek - 1].pos.cur = t->peek_node_at;
	} else if (key == 'L') {
		open_list(t, row_of(t, peek_name(t)));
	} else if (key == 'T') {
		open_timeline(t);
	} else {
		return false;
	}
	return true;
}

static bool top_key(struct tui *t, int key, bool enter)
{
	char *name = NULL;
	switch (key) {
	case 's':
		next_sample_index(t);
		break;
	case 'g':
		next_granularity(t);
		break;
	case 'c':
		toggle_cum(t);
		break;
	case '/':
	case '\\':
		t->prompt = key;
		ap_buf_reset(&t->input);
		break;
	case 'a':
		open_advise(t);
		break;
	case 'T':
		open_timeline(t);
		break;
	case 'L':
		name = current_name(t);
		open_list(t, row_of(t, name));
		break;
	default:
		if (!enter)
			return false;
		name = current_name(t);
		open_peek(t, name);
	}
	free(name);
	return true;
}

void tui_resize(struct tui *t, int rows, int cols)
{
	t->rows = rows;
	t->cols = cols;
	/* elsewhere the timeline is made again when it is opened */
	if (view_of(t) == TUI_VIEW_TIMELINE && !timeline_refresh(t))
		pop_view(t);
	for (int i = 0; i < t->depth; i++) {
		enum tui_view_kind k = t->stack[i];
		pos_fix(pos_of(t, k), lines_of(t, k), view_page(t, k), is_cursor_view(k));
	}
}

/* ---- drawing ------------------------------------------------------------ */

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Row 0 of every view: the program, the sample index, the total, the rate. */
static void draw_title(const struct tui *t, struct tui_screen *s, const char *view,
		       const char *what)
{
	const struct ap_trace *tr = t->v->trace;
	enum ap_sample_index si = t->report->sample_index;
	char total[32], rate[64];
	ap_view_format(total, sizeof(total), si, t->report->total);
	if (tr->rate <= 1)
		snprintf(rate, sizeof(rate), "every allocation");
	else {
		char b[24];
		ap_format_bytes(b, sizeof(b), (double)tr->rate);
		snprintf(rate, sizeof(rate), "1 per %s (estimates)", b);
	}
	tui_screen_row_attr(s, 0, TUI_TITLE);
	tui_screen_putf(s, 0, 0, TUI_TITLE, "%s: %s   Type: %s   Total: %s   Sampling: %s", view,
			what, ap_sample_index_name(si), total, rate);
}

/* Puts `text` right-aligned on `row` (a position counter). */
static void draw_right(struct tui_screen *s, int row, int attr, const char *text)
{
	int col = s->cols - (int)strlen(text);
	if (col > 0)
		tui_screen_put(s, row, col, attr, text, 0);
}

static void draw_line(struct tui_screen *s, int row, int attr, const char *fixed, const char *body,
		      int hscroll)
{
	if (attr == TUI_CURSOR)
		tui_screen_row_attr(s, row, TUI_CURSOR);
	int col = tui_screen_put(s, row, 0, attr, fixed, 0);
	if (body)
		tui_screen_put(s, row, col, attr, body, hscroll);
}

static void draw_top(struct tui *t, struct tui_screen *s)
{
	const struct ap_report *r = t->report;
	size_t page = view_page(t, TUI_VIEW_TOP);
	char d[32], fixed[192];
	/* each value in its own unit: pprof's common scale is for its text,
	 * and a screen of 712330949B under a total of 1.29GB reads badly */
	int unit = AP_VIEW_UNIT_EACH;
	struct ap_buf name = AP_BUF_INIT;

	draw_title(t, s, "allocprof", basename_of(t->v->trace->exe));
	tui_screen_putf(s, 1, 0, TUI_NORMAL, "Granularity: %s   Sort: %s   Focus: %s   Ignore: %s",
			gran_names[r->granularity], t->o.by_cum ? "cum" : "flat",
			t->focus ? t->focus : "-", t->ignore ? t->ignore : "-");
	ap_render_top_showing(r, unit, fixed, sizeof(fixed));
	tui_screen_put(s, 2, 0, TUI_NORMAL, fixed, 0);
	snprintf(d, sizeof(d), "%zu/%zu", r->nrows ? t->top_pos.cur + 1 : 0, r->nrows);
	draw_right(s, 2, TUI_NORMAL, d);
	tui_screen_put(s, 3, 0, TUI_BOLD, "      flat  flat%   sum%        cum   cum%  name", 0);
	if (!r->nrows)
		tui_screen_put(s, 4, 0, TUI_NORMAL,
			       r->kept_stacks || !(t->focus || t->ignore)
				   ? "  (no allocations)"
				   : "  (no stack matches the focus and ignore regexes)",
			       0);
	/* sum% is over every row above, shown or scrolled away. */
	double sum = 0;
	for (size_t i = 0; i < r->nrows && i < t->top_pos.top + page; i++) {
		const struct ap_report_row *row = &r->rows[i];
		sum += row->flat;
		if (i < t->top_pos.top)
			continue;
		ap_render_top_row(r, i, sum, unit, fixed, sizeof(fixed), &name);
		draw_line(s, 4 + (int)(i - t->top_pos.top),
			  i == t->top_pos.cur ? TUI_CURSOR : TUI_NORMAL, fixed, name.buf,
			  t->top_pos.hscroll);
	}
	ap_buf_release(&name);
}

/* The lines of a page from screen row `first`; with `cursor`, the line
 * at pos->cur in the cursor bar. */
static void draw_page(const struct tui *t, struct tui_screen *s, const struct tui_page *p,
		      const struct tui_pos *pos, size_t page, int first, bool cursor)
{
	for (size_t i = pos->top; i < p->n && i < pos->top + page; i++) {
		const struct tui_line *l = &p->lines[i];
		draw_line(s, first + (int)(i - pos->top),
			  cursor && i == pos->cur ? TUI_CURSOR : l->attr, l->fixed, l->body,
			  pos->hscroll);
	}
}

static void draw_advise(struct tui *t, struct tui_screen *s)
{
	const struct ap_advice *a = t->advice;
	size_t page = view_page(t, TUI_VIEW_ADVISE);
	char d[32], b[32];

	tui_screen_row_attr(s, 0, TUI_TITLE);
	if (a->gc_mode == AP_GC_GOGC)
		snprintf(b, sizeof(b), "gogc:%llu", (unsigned long long)a->gogc);
	else
		ap_advise_format_duration(b, sizeof(b), (double)a->interval_ns);
	ap_advise_format_duration(d, sizeof(d), a->mean_cycle_ns);
	tui_screen_putf(s, 0, 0, TUI_TITLE,
			"advise: %s   Cycles: %s%s, %llu in the trace (one every %s); %u Ps",
			basename_of(t->v->trace->exe), a->gc_mode == AP_GC_GOGC ? "" : "every ", b,
			(unsigned long long)a->cycles, d, a->procs);
	if (a->sampled) {
		ap_format_bytes(b, sizeof(b), (double)a->rate);
		tui_screen_putf(s, 1, 0, TUI_NORMAL,
				"Sampled (1 per %s): estimates from a reconstruction", b);
	} else {
		tui_screen_put(s, 1, 0, TUI_NORMAL, "Every allocation replayed", 0);
	}
	snprintf(d, sizeof(d), "%zu/%zu", a->nsites ? t->advise_pos.cur + 1 : 0, a->nsites);
	draw_right(s, 1, TUI_NORMAL, d);
	tui_screen_putf(s, 2, 0, TUI_BOLD, "%3s %-22s %8s %8s %10s  %s", "#", "verdict", "saved",
			"hit rate", "allocated", "site");
	if (!a->nsites)
		tui_screen_put(s, 3, 0, TUI_NORMAL, "  (no allocation sites)", 0);
	for (size_t i = t->advise_pos.top; i < a->nsites && i < t->advise_pos.top + page; i++) {
		const struct ap_advise_site *site = &a->sites[i];
		int row = 3 + (int)(i - t->advise_pos.top);
		bool cur = i == t->advise_pos.cur;
		char fixed[128], saved[32], space[32];
		ap_advise_format_duration(saved, sizeof(saved), site->r.time_saved_ns);
		ap_format_bytes(space, sizeof(space), site->alloc_space);
		if (cur)
			tui_screen_row_attr(s, row, TUI_CURSOR);
		int col = tui_screen_putf(s, row, 0, cur ? TUI_CURSOR : TUI_NORMAL, "%3zu ", i + 1);
		snprintf(fixed, sizeof(fixed), "%-22.22s ", site->verdict_text);
		col = tui_screen_put(s, row, col, cur ? TUI_CURSOR : verdict_attr(site->verdict),
				     fixed, 0);
		snprintf(fixed, sizeof(fixed), "%8s %7.1f%% %10s  ", saved, 100 * site->r.hit_rate,
			 space);
		col = tui_screen_put(s, row, col, cur ? TUI_CURSOR : TUI_NORMAL, fixed, 0);
		tui_screen_put(s, row, col, cur ? TUI_CURSOR : TUI_NORMAL, site->name,
			       t->advise_pos.hscroll);
	}
	if (!advise_pane(t) || !a->nsites)
		return;
	const struct ap_advise_site *site = &a->sites[t->advise_pos.cur];
	int row = t->rows - 1 - advise_pane(t);
	struct tui_page p = {0};
	page_wrap(&p, TUI_NORMAL, "  ", site->reasons, t->cols - 3);
	tui_screen_putf(s, row, 0, verdict_attr(site->verdict), "verdict: %s%s", site->verdict_text,
			p.n > ADVISE_REASONS ? "   (more: Enter)" : "");
	for (size_t i = 0; i < p.n && i < ADVISE_REASONS; i++)
		tui_screen_put(s, row + 1 + (int)i, 0, TUI_NORMAL, p.lines[i].fixed, 0);
	page_release(&p);
}

/* Row 0 of the timeline: the program, the peak (also in bytes, exact as
 * stats prints it) and when, the rate. */
static void draw_timeline_title(const struct tui *t, struct tui_screen *s)
{
	const struct ap_timeline *T = &t->timeline->T;
	char peak[32];
	ap_format_bytes(peak, sizeof(peak), T->peak);
	tui_screen_row_attr(s, 0, TUI_TITLE);
	struct ap_view_peak pk = ap_view_peak(t->v->trace, T->peak, 0);
	char counted[96] = "";
	if (pk.kind == AP_PEAK_COUNTED) {
		char b[32], w[32];
		ap_format_bytes(b, sizeof(b), pk.bytes);
		ap_format_bytes(w, sizeof(w), pk.within);
		snprintf(counted, sizeof(counted), "; counted %s ±%s", b, w);
	}
	tui_screen_putf(s, 0, 0, TUI_TITLE, "timeline: %s   Peak: %s (%.0f B) at %.3gs   %s%s",
			basename_of(t->v->trace->exe), peak, T->peak,
			ap_timeline_bucket_x(T, T->peak_bucket),
			t->v->trace->rate > 1 ? "Sampled: estimates" : "Every allocation", counted);
}

static const char *status_keys(enum tui_view_kind k)
{
	return view_ops[k].keys;
}

/* Each view's drawing (view_ops). */
static void draw_top_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	(void)pos;
	(void)page;
	draw_top(t, s);
}

static void draw_advise_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos,
			     size_t page)
{
	(void)pos;
	(void)page;
	draw_advise(t, s);
}

static void draw_list_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	draw_title(t, s, "list", t->list_what);
	draw_page(t, s, &t->list_page, pos, page, 1, false);
}

static void draw_site_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	struct tui_page p = {0};
	site_page(t, &p);
	tui_screen_row_attr(s, 0, TUI_TITLE);
	tui_screen_putf(s, 0, 0, TUI_TITLE, "advise: site %zu of %zu", t->advise_pos.cur + 1,
			t->advice->nsites);
	draw_page(t, s, &p, pos, page, 1, false);
	page_release(&p);
}

static void draw_peek_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	draw_title(t, s, "peek", peek_name(t));
	tui_screen_put(s, 1, 0, TUI_BOLD,
		       "      flat  flat%   sum%        cum   cum%   calls calls% + context", 0);
	draw_page(t, s, &t->peek_page, pos, page, 2, true);
}

static void draw_timeline_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos,
			       size_t page)
{
	draw_timeline_title(t, s);
	draw_page(t, s, &t->timeline_page, pos, page, 1, false);
}

static void draw_help_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	(void)t;
	tui_screen_row_attr(s, 0, TUI_TITLE);
	tui_screen_put(s, 0, 0, TUI_TITLE, "allocprof tui: help", 0);
	for (size_t i = pos->top; i < AP_ARRAY_SIZE(help_lines) && i < pos->top + page; i++)
		tui_screen_put(s, 1 + (int)(i - pos->top), 0, TUI_NORMAL, help_lines[i], 0);
}

void tui_draw(struct tui *t, struct tui_screen *s, int *cursor_col)
{
	*cursor_col = -1;
	if (s->rows != t->rows || s->cols != t->cols)
		tui_screen_resize(s, t->rows, t->cols);
	tui_screen_clear(s);
	if (t->rows < 6 || t->cols < 30) {
		tui_screen_putf(s, 0, 0, TUI_NORMAL, "too small (%dx%d); q quits", t->cols,
				t->rows);
		return;
	}
	enum tui_view_kind k = view_of(t);
	size_t page = view_page(t, k);
	struct tui_pos *pos = pos_of(t, k);
	pos_fix(pos, lines_of(t, k), page, is_cursor_view(k));
	char pos_text[48];
	view_ops[k].draw(t, s, pos, page);
	if (view_ops[k].counted) {
		size_t n = lines_of(t, k);
		snprintf(pos_text, sizeof(pos_text), " %zu-%zu/%zu", n ? pos->top + 1 : 0,
			 pos->top + page < n ? pos->top + page : n, n);
		draw_right(s, 0, TUI_TITLE, pos_text);
	}

	int last = t->rows - 1;
	tui_screen_row_attr(s, last, TUI_STATUS);
	if (t->prompt) {
		int col = tui_screen_put(s, last, 0, TUI_STATUS,
					 t->prompt == '/' ? "focus regex (empty clears): "
							  : "ignore regex (empty clears): ",
					 0);
		*cursor_col = tui_screen_put(s, last, col, TUI_STATUS, t->input.buf, 0);
	} else {
		tui_screen_put(s, last, 0, TUI_STATUS,
			       t->status[0] ? t->status
			       : t->failed  ? t->error.msg
					    : status_keys(k),
			       0);
	}
}

/* ---- the work done while the user browses -------------------------------
 *
 * On a long trace the advisor's and the timeline's replays take seconds.
 * A worker thread runs them from the start (tui_start_work): `a` and `T`
 * then open at once, or, asked for before their work is done, open when
 * it is, while the other views stay usable. The worker reads only the
 * trace, the site maps and the cost table, made before it starts (the
 * symbolizer is not thread-safe); what it makes is taken over under the
 * lock by tui_poll. */
struct tui_work {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ap_trace *trace;
	struct ap_site_map sites;
	struct ap_advise_options ao;
	struct ap_view_measure measure;
	struct tui_timeline *timeline; /* sites chosen; T made by the worker */
	size_t nb;
	bool have_costs, joined;
	/* under mu */
	bool advice_done, timeline_done;
	bool timeline_failed; /* then timeline_err says why */
	struct ap_error timeline_err;
	struct ap_advice *advice;
	struct ap_error err;
	/* the replay running now: events done of total, and how many
	 * replays began before it (the advisor may replay more than once) */
	uint64_t done, total, passes;
	bool advice_taken, timeline_taken;
	int wait_depth;	/* t->depth when the view waited for was asked for */
};

static void work_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct tui_work *w = ctx;
	if (done < __atomic_load_n(&w->done, __ATOMIC_RELAXED))
		__atomic_fetch_add(&w->passes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->total, total, __ATOMIC_RELAXED);
	__atomic_store_n(&w->done, done, __ATOMIC_RELAXED);
}

static void *work_main(void *arg)
{
	struct tui_work *w = arg;
	/* the timeline first: one replay, where the advisor may make several */
	struct ap_error tl_err;
	bool tl_failed = ap_timeline_init(&w->timeline->T, w->trace, &w->timeline->sites, w->nb,
					  false, &tl_err) < 0;
	pthread_mutex_lock(&w->mu);
	w->timeline_done = true;
	w->timeline_failed = tl_failed;
	if (tl_failed)
		w->timeline_err = tl_err;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	struct ap_error err = {{0}};
	struct ap_advice *a = NULL;
	/* (a failed replay fails again: the advisor's would) */
	if (tl_failed)
		err = tl_err;
	else if (w->have_costs)
		a = ap_advise_run(w->trace, &w->sites, &w->ao, &err);
	if (a)
		ap_view_measure_run(&w->measure, a, w->trace, &w->sites, &w->ao);
	pthread_mutex_lock(&w->mu);
	w->advice = a;
	w->err = err;
	w->advice_done = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

void tui_start_work(struct tui *t)
{
	if (t->work)
		return;
	struct tui_work *w = ap_xcalloc(1, sizeof(*w));
	w->trace = t->v->trace;
	busy(t, "finding the call sites");
	w->have_costs = load_costs(t) == 0;
	ap_advise_options_init(&w->ao);
	w->ao.costs = &t->costs;
	w->measure = t->o.measure;
	ap_advise_sites(w->trace, t->v->sym, false, &w->sites);
	w->timeline = ap_xcalloc(1, sizeof(*w->timeline));
	ap_timeline_sites_init(&w->timeline->sites, t->v, TIMELINE_SITES);
	/* as timeline_refresh sizes it */
	w->nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	ap_events_progress(w->trace, work_progress, w);
	if (pthread_create(&w->th, NULL, work_main, w) != 0) {
		/* no thread: the views are made when asked for, as without */
		ap_events_progress(w->trace, NULL, NULL);
		ap_site_map_release(&w->sites);
		timeline_free(w->timeline);
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return;
	}
	t->work = w;
}

static bool work_done_for(const struct tui_work *w, enum tui_view_kind k)
{
	return k == TUI_VIEW_ADVISE ? w->advice_done : w->timeline_done;
}

/* Before view k opens: true if it must wait for its work (then it opens
 * from tui_poll). */
static bool work_wait(struct tui *t, enum tui_view_kind k)
{
	struct tui_work *w = t->work;
	if (!w)
		return false;
	tui_poll(t, false, NULL);
	pthread_mutex_lock(&w->mu);
	bool done = work_done_for(w, k);
	pthread_mutex_unlock(&w->mu);
	if (done)
		return false;
	t->waiting = true;
	t->wait_for = k;
	w->wait_depth = t->depth;
	return true;
}

bool tui_poll(struct tui *t, bool block, bool *pending)
{
	struct tui_work *w = t->work;
	if (pending)
		*pending = false;
	if (!w)
		return false;
	bool changed = tljob_poll(t, block);
	if (t->tljob && view_of(t) == TUI_VIEW_TIMELINE && !t->waiting) {
		set_status(t, "%s", TLJOB_STATUS);
		changed = true;
	}
	pthread_mutex_lock(&w->mu);
	while (block && t->waiting && !work_done_for(w, t->wait_for))
		pthread_cond_wait(&w->cv, &w->mu);
	if (w->advice_done && !w->advice_taken) {
		w->advice_taken = true;
		if (!t->advice)
			t->advice = w->advice;
		else
			ap_advice_free(w->advice);
		if (!w->advice && w->have_costs)
			replay_failed(t, &w->err);
		w->advice = NULL;
	}
	if (w->timeline_done && !w->timeline_taken) {
		w->timeline_taken = true;
		if (w->timeline_failed)
			replay_failed(t, &w->timeline_err);
		if (!t->timeline && !w->timeline_failed)
			t->timeline = w->timeline;
		else
			timeline_free(w->timeline);
		w->timeline = NULL;
	}
	bool running = !(w->advice_done && w->timeline_done);
	bool ready = t->waiting && work_done_for(w, t->wait_for);
	pthread_mutex_unlock(&w->mu);
	if (!running && !w->joined) {
		pthread_join(w->th, NULL);
		w->joined = true;
		/* the progress function stays: a resize's job may be reading it
		 * (it goes with the work, in work_release) */
	}
	if (ready) {
		t->waiting = false;
		t->status[0] = 0;
		/* opened from where it was asked for, else only made */
		if (t->depth == w->wait_depth) {
			if (t->wait_for == TUI_VIEW_ADVISE)
				open_advise(t);
			else
				open_timeline(t);
		}
		changed = true;
	} else if (t->waiting) {
		uint64_t done = __atomic_load_n(&w->done, __ATOMIC_RELAXED);
		uint64_t total = __atomic_load_n(&w->total, __ATOMIC_RELAXED);
		/* the timeline's is the first replay, the advisor's the rest */
		uint64_t pass = __atomic_load_n(&w->passes, __ATOMIC_RELAXED);
		char what[96] = "replaying the trace for the timeline";
		if (t->wait_for == TUI_VIEW_ADVISE) {
			if (pass < 1)
				snprintf(what, sizeof(what), "waiting for the timeline's replay");
			else
				snprintf(what, sizeof(what),
					 "replaying the trace through the pool model (pass %llu)",
					 (unsigned long long)pass);
		}
		set_status(t, "%s: %d%% (it opens when done; the other views work meanwhile)",
			   what, total ? (int)(done * 100 / total) : 0);
		changed = true;
	}
	if (pending)
		*pending = running || t->tljob;
	return changed;
}

/* The timeline of a new width, replayed on a thread of its own (as the
 * worker's, from the trace and the chosen sites only) while the old one
 * stays shown; tui_poll takes it over. */
struct tui_tljob {
	pthread_t th;
	struct ap_trace *trace;
	const struct ap_timeline_sites *sites;
	struct ap_timeline T;
	size_t nb;
	bool failed; /* then err says why */
	struct ap_error err;
	int done; /* atomic */
};

static void *tljob_main(void *arg)
{
	struct tui_tljob *j = arg;
	j->failed = ap_timeline_init(&j->T, j->trace, j->sites, j->nb, false, &j->err) < 0;
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Makes the timeline of width nb on a thread; false if it cannot (then
 * the caller makes it). One running for another width is let finish:
 * tui_poll then starts the width wanted. */
static bool tljob_start(struct tui *t, size_t nb)
{
	if (t->tljob)
		return true;
	struct tui_tljob *j = ap_xcalloc(1, sizeof(*j));
	j->trace = t->v->trace;
	j->sites = &t->timeline->sites;
	j->nb = nb;
	if (pthread_create(&j->th, NULL, tljob_main, j) != 0) {
		free(j);
		return false;
	}
	t->tljob = j;
	return true;
}

/* Takes over a finished timeline job (waits for it with `block`); true
 * if it did. */
static bool tljob_poll(struct tui *t, bool block)
{
	struct tui_tljob *j = t->tljob;
	if (!j || (!block && !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)))
		return false;
	pthread_join(j->th, NULL);
	if (!strcmp(t->status, TLJOB_STATUS))
		t->status[0] = 0;
	if (j->failed) {
		/* the old width stays shown */
		replay_failed(t, &j->err);
		ap_timeline_release(&j->T);
		free(j);
		t->tljob = NULL;
		return true;
	}
	ap_timeline_release(&t->timeline->T);
	t->timeline->T = j->T;
	free(j);
	t->tljob = NULL;
	if (view_of(t) == TUI_VIEW_TIMELINE)
		timeline_refresh(t); /* draws it, or starts the width wanted now */
	return true;
}

static void work_release(struct tui *t)
{
	if (t->tljob) {
		ap_events_stop(t->tljob->trace);
		pthread_join(t->tljob->th, NULL);
		ap_timeline_release(&t->tljob->T);
		free(t->tljob);
		t->tljob = NULL;
	}
	struct tui_work *w = t->work;
	if (!w)
		return;
	if (!w->joined) {
		/* its results are not wanted: end its replay early */
		ap_events_stop(w->trace);
		pthread_join(w->th, NULL);
	}
	ap_events_progress(w->trace, NULL, NULL);
	ap_advice_free(w->advice);
	timeline_free(w->timeline);
	ap_site_map_release(&w->sites);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
	t->work = NULL;
}

/* ---- life cycle --------------------------------------------------------- */

int tui_init(struct tui *t, struct ap_view *v, const struct tui_options *o, int rows, int cols)
{
	memset(t, 0, sizeof(*t));
	t->v = v;
	t->o = *o;
	t->focus = o->view.report.focus ? ap_xstrdup(o->view.report.focus) : NULL;
	t->ignore = o->view.report.ignore ? ap_xstrdup(o->view.report.ignore) : NULL;
	t->o.view.report.focus = t->focus;
	t->o.view.report.ignore = t->ignore;
	ap_buf_init(&t->input);
	t->rows = rows;
	t->cols = cols;
	t->stack[t->depth++] = TUI_VIEW_TOP;
	struct ap_error err;
	struct ap_report **slot =
	    &t->reports[t->o.view.report.sample_index][t->o.view.report.granularity];
	t->report = ap_report_new(v->trace, v->values, v->sym, &t->o.view.report,
				  ap_view_progress_fn(), ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	if (!t->report) {
		ap_print_error(&err);
		tui_release(t);
		return AP_EXIT_FAIL;
	}
	if (t->o.by_cum)
		ap_report_sort(t->report, true);
	*slot = t->report;
	return 0;
}

void tui_release(struct tui *t)
{
	work_release(t);
	reports_clear(t);
	while (t->npeek)
		free(t->peek[--t->npeek].name);
	free(t->peek);
	page_release(&t->peek_page);
	timeline_free(t->timeline);
	page_release(&t->timeline_page);
	ap_advice_free(t->advice);
	page_release(&t->list_page);
	free(t->list_what);
	free(t->focus);
	free(t->ignore);
	ap_buf_release(&t->input);
	memset(t, 0, sizeof(*t));
}

/* ---- --keys and --size -------------------------------------------------- */

static const struct {
	const char *name;
	int key;
} key_names[] = {
    {"up", KEY_UP},	 {"down", KEY_DOWN},  {"left", KEY_LEFT},    {"right", KEY_RIGHT},
    {"pgup", KEY_PPAGE}, {"pgdn", KEY_NPAGE}, {"home", KEY_HOME},    {"end", KEY_END},
    {"enter", '\n'},	 {"esc", KEY_ESC},    {"bs", KEY_BACKSPACE}, {"tab", '\t'},
    {"space", ' '},	 {"lt", '<'},
};

int tui_parse_size(const char *s, int *cols, int *rows)
{
	char *end;
	long c = strtol(s, &end, 10);
	if (end == s || (*end != 'x' && *end != 'X'))
		return -1;
	const char *r0 = end + 1;
	long r = strtol(r0, &end, 10);
	if (end == r0 || *end || c < 20 || r < 5 || c > 1000 || r > 1000)
		return -1;
	*cols = (int)c;
	*rows = (int)r;
	return 0;
}

int tui_parse_keys(const char *s, int **keys, int **sizes, struct ap_error *err)
{
	size_t n = 0, alloc = 0, nsz = 0, szalloc = 0;
	int *k = NULL, *sz = NULL;
	while (*s) {
		int key = (unsigned char)*s;
		size_t len = 1;
		if (*s == '<') {
			const char *close = strchr(s, '>');
			size_t nl = close ? (size_t)(close - s - 1) : 0;
			key = -1;
			for (size_t i = 0; close && i < AP_ARRAY_SIZE(key_names); i++)
				if (strlen(key_names[i].name) == nl &&
				    !strncmp(s + 1, key_names[i].name, nl))
					key = key_names[i].key;
			if (close && key < 0 && !strncmp(s + 1, "resize:", 7)) {
				char buf[32];
				int c, r;
				snprintf(buf, sizeof(buf), "%.*s", (int)(nl - 7), s + 8);
				if (nl - 7 < sizeof(buf) && !tui_parse_size(buf, &c, &r)) {
					AP_ALLOC_GROW(sz, nsz + 2, szalloc);
					sz[nsz++] = c;
					sz[nsz++] = r;
					key = KEY_RESIZE;
				}
			}
			if (key < 0) {
				free(k);
				free(sz);
				return ap_error_set(err,
						    "unknown key '%.*s' (a literal '<' is <lt>)",
						    close ? (int)(nl + 2) : (int)strlen(s), s);
			}
			len = nl + 2;
		}
		AP_ALLOC_GROW(k, n + 1, alloc);
		k[n++] = key;
		s += len;
	}
	*keys = k;
	*sizes = sz;
	return (int)n;
}
