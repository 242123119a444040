/* The list view of `allocprof tui`: a function's (or file's) annotated
 * source, as `allocprof list` prints it. */
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

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
		tui_page_add(c->p, line->kind == AP_LINE_TITLE ? TUI_BOLD : TUI_NORMAL, line->text, NULL);
		return;
	}
	int attr = line->lineno == c->mark ? TUI_CURSOR : line->hot ? TUI_BOLD : TUI_NORMAL;
	if (line->lineno == c->mark)
		c->at = c->p->n;
	tui_page_add(c->p, attr, line->text, line->body);
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
void tui_open_list(struct tui *t, const struct ap_report_row *row)
{
	if (!row) {
		tui_set_status(t, "nothing to list");
		return;
	}
	if (!row->func && !row->file) {
		tui_set_status(t, "no function or file to list for '%s'", row->name);
		return;
	}
	char *regex = row->func ? regex_exact(row->func) : ap_xstrdup(".*");
	struct ap_error err;
	tui_busy(t, "reading sources");
	struct ap_list *l = ap_list_new(t->v->trace, t->v->values, t->v->sym, &t->o.view.report,
					regex, t->o.source_path, NULL, NULL, &err);
	free(regex);
	if (!l) {
		tui_set_status(t, "%s", err.msg);
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

	tui_page_release(&t->list_page);
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
		tui_set_status(t, "no source lines for '%s'", row->name);
		return;
	}
	free(t->list_what);
	t->list_what = ap_xstrdup(row->func ? row->func : row->file);
	/* The marked line a third of the way down. */
	size_t page = tui_view_page(t, TUI_VIEW_LIST);
	t->list_pos = (struct tui_pos){.top = mark_at > page / 3 ? mark_at - page / 3 : 0};
	tui_pos_fix(&t->list_pos, t->list_page.n, page, false);
	t->stack[t->depth++] = TUI_VIEW_LIST;
}

static size_t list_lines(const struct tui *t)
{
	return t->list_page.n;
}

static struct tui_pos *list_pos(struct tui *t)
{
	return &t->list_pos;
}

static void draw_list_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	tui_draw_title(t, s, "list", t->list_what);
	tui_draw_page(t, s, &t->list_page, pos, page, 1, false);
}

const struct tui_view_ops tui_list_ops = {
	.lines = list_lines,
	.pos = list_pos,
	.counted = true,
	.draw = draw_list_view,
	.keys = "q/Esc back  ? help  arrows/PgUp/PgDn scroll  Left/Right sideways",
};
