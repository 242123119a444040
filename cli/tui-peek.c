/* The call pages of `allocprof tui`: a node between its callers and
 * callees, as `allocprof peek` prints it, and the history of nodes visited. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

/* The row of the top model named `name`, or NULL. */
const struct ap_report_row *tui_row_of(const struct tui *t, const char *name)
{
	size_t i = tui_row_named(t->report, name, SIZE_MAX);
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
			tui_page_add(c->p, TUI_BOLD, "callers", NULL);
		tui_page_add_target(c->p, TUI_NORMAL, line->text, line->body, line->node);
		break;
	case AP_LINE_NODE:
		if (c->last != AP_LINE_CALLER) {
			tui_page_add(c->p, TUI_BOLD, "callers", NULL);
			tui_page_add(c->p, TUI_NORMAL, "  (none)", NULL);
		}
		c->node_at = c->p->n;
		tui_page_add_target(c->p, TUI_BOLD, line->text, line->body, line->node);
		break;
	case AP_LINE_CALLEE:
		if (c->last == AP_LINE_NODE)
			tui_page_add(c->p, TUI_BOLD, "callees", NULL);
		tui_page_add_target(c->p, TUI_NORMAL, line->text, line->body, line->node);
		break;
	default:
		tui_page_add(c->p, TUI_NORMAL, line->text, line->body);
	}
	c->last = (int)line->kind;
}

/* Makes the page of the current node again, from the current model (sum%
 * is the node's own flat%, as `peek` of that one node prints it). */
void tui_peek_refresh(struct tui *t)
{
	tui_page_release(&t->peek_page);
	t->peek_node_at = 0;
	if (!t->npeek)
		return;
	const struct ap_report *r = t->report;
	size_t i = tui_row_named(r, peek_name(t), SIZE_MAX);
	if (i == SIZE_MAX) {
		tui_page_addf(&t->peek_page, TUI_NORMAL, "  (no node '%s' with this sample index, focus and ignore)",
			  peek_name(t));
		return;
	}
	struct peek_page_ctx c = { &t->peek_page, -1, 0 };
	ap_render_peek_node(r, i, r->rows[i].flat, AP_VIEW_UNIT_EACH, peek_page_line, &c);
	if (c.last == AP_LINE_NODE) {
		tui_page_add(&t->peek_page, TUI_BOLD, "callees", NULL);
		tui_page_add(&t->peek_page, TUI_NORMAL, "  (none)", NULL);
	}
	t->peek_node_at = c.node_at;
}

/* Shows `name` between its callers and callees, the cursor on it; the
 * node shown before stays in the history. */
void tui_open_peek(struct tui *t, const char *name)
{
	if (!name) {
		tui_set_status(t, "no node here");
		return;
	}
	AP_ALLOC_GROW(t->peek, t->npeek + 1, t->peek_alloc);
	t->peek[t->npeek++] = (struct tui_peek_step){ .name = ap_xstrdup(name) };
	tui_peek_refresh(t);
	t->peek[t->npeek - 1].pos.cur = t->peek_node_at;
	tui_pos_fix(&t->peek[t->npeek - 1].pos, t->peek_page.n, tui_view_page(t, TUI_VIEW_PEEK), true);
	if (t->stack[t->depth - 1] != TUI_VIEW_PEEK)
		tui_push_view(t, TUI_VIEW_PEEK);
}

/* Back to the node shown before, or out of the call pages. */
void tui_peek_back(struct tui *t)
{
	free(t->peek[--t->npeek].name);
	if (t->npeek)
		tui_peek_refresh(t);
	else
		tui_pop_view(t);
}

/* After a move, the cursor on the nearest line that names a node, in the
 * direction it moved (from `old`). */
void tui_peek_skip(struct tui *t, size_t old)
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
				tui_pos_fix(pos, p->n, tui_view_page(t, TUI_VIEW_PEEK), true);
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
		tui_open_list(t, tui_row_of(t, peek_name(t)));
	else
		tui_open_peek(t, p->lines[cur].target);
}

static size_t peek_lines(const struct tui *t)
{
	return t->peek_page.n;
}

static struct tui_pos *peek_pos(struct tui *t)
{
	return &t->peek[t->npeek - 1].pos;
}

static bool peek_key(struct tui *t, int key, bool enter)
{
	if (enter) {
		peek_enter(t);
	} else if (key == 's') {
		tui_next_sample_index(t);
		t->peek[t->npeek - 1].pos.cur = t->peek_node_at;
	} else if (key == 'L') {
		tui_open_list(t, tui_row_of(t, peek_name(t)));
	} else if (key == 'T') {
		tui_open_timeline(t);
	} else {
		return false;
	}
	return true;
}

static void draw_peek_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	tui_draw_title(t, s, "peek", peek_name(t));
	tui_screen_put(s, 1, 0, TUI_BOLD,
		       "      flat  flat%   sum%        cum   cum%   calls calls% + context", 0);
	tui_draw_page(t, s, &t->peek_page, pos, page, 2, true);
}

const struct tui_view_ops tui_peek_ops = {
	.lines = peek_lines,
	.pos = peek_pos,
	.cursor = true,
	.draw = draw_peek_view,
	.key = peek_key,
	.keys = "Enter: go to caller/callee (on the node: list)  Bksp/Esc/q back  s index  "
		"L list  T timeline  ? help",
};
