/* The browser of `allocprof tui`: its state, its keys, the table of its
 * views (each in a file of its own, cli/tui-*.c) and the drawing they
 * share, into a struct tui_screen. The models come from report/
 * (ap_report_new, ap_list_new, ap_advise_run); the browser only draws them
 * and moves around in them. */
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

/* ---- pages of text (list, one advise site, help) ------------------------ */

void tui_page_add_target(struct tui_page *p, int attr, const char *fixed, const char *body,
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

void tui_page_add(struct tui_page *p, int attr, const char *fixed, const char *body)
{
	tui_page_add_target(p, attr, fixed, body, NULL);
}

void tui_page_addf(struct tui_page *p, int attr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tui_page_add(p, attr, buf, NULL);
}

/* Adds `text` word-wrapped to `width` columns, each line after `indent`. */
void tui_page_wrap(struct tui_page *p, int attr, const char *indent, const char *text, int width)
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
			tui_page_addf(p, attr, "%s%s", indent, line.buf);
			ap_buf_reset(&line);
		}
		if (line.len)
			ap_buf_addstr(&line, " ");
		ap_buf_add(&line, s, w);
		s += w;
	}
	if (line.len)
		tui_page_addf(p, attr, "%s%s", indent, line.buf);
	ap_buf_release(&line);
}

void tui_page_release(struct tui_page *p)
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

int tui_advise_pane(const struct tui *t)
{
	return t->rows >= ADVISE_PANE_MIN ? 1 + ADVISE_REASONS : 0;
}

/* Rows each view has for its lines: the top view has four header lines,
 * the advise view three and its pane, the call pages two, the other pages
 * one; all have the status line. */
size_t tui_view_page(const struct tui *t, enum tui_view_kind k)
{
	int head = k == TUI_VIEW_TOP	  ? 4
		   : k == TUI_VIEW_ADVISE ? 3 + tui_advise_pane(t)
		   : k == TUI_VIEW_PEEK	  ? 2
					  : 1;
	int n = t->rows - head - 1;
	return n > 1 ? (size_t)n : 1;
}

/* Keeps a cursor view's cursor inside its n lines and on screen, or a
 * page's first line inside its range. */
void tui_pos_fix(struct tui_pos *p, size_t n, size_t page, bool cursor)
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
	tui_pos_fix(p, n, page, cursor);
	return true;
}

/* ---- the status line ---------------------------------------------------- */

void tui_busy(struct tui *t, const char *what)
{
	if (t->busy)
		t->busy(t, what);
}

void tui_set_status(struct tui *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->status, sizeof(t->status), fmt, ap);
	va_end(ap);
}

/* A replay failed with err (tui.failed). */
void tui_replay_failed(struct tui *t, const struct ap_error *err)
{
	if (!t->failed) {
		t->failed = true;
		t->error = *err;
	}
	tui_set_status(t, "%s", t->error.msg);
}

/* ---- keys --------------------------------------------------------------- */

enum tui_view_kind tui_view_of(const struct tui *t)
{
	return t->stack[t->depth - 1];
}

void tui_pop_view(struct tui *t)
{
	if (t->depth > 1)
		t->depth--;
	else
		t->quit = true;
}

void tui_push_view(struct tui *t, enum tui_view_kind k)
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
		tui_apply_filter(t);
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

/* Each view's operations, in its own file (cli/tui-*.c). */
static const struct tui_view_ops *const view_ops[] = {
	[TUI_VIEW_TOP] = &tui_top_ops,		 [TUI_VIEW_LIST] = &tui_list_ops,
	[TUI_VIEW_ADVISE] = &tui_advise_ops,	 [TUI_VIEW_SITE] = &tui_site_ops,
	[TUI_VIEW_HELP] = &tui_help_ops,	 [TUI_VIEW_PEEK] = &tui_peek_ops,
	[TUI_VIEW_TIMELINE] = &tui_timeline_ops,
};

static size_t lines_of(const struct tui *t, enum tui_view_kind k)
{
	return view_ops[k]->lines(t);
}

static struct tui_pos *pos_of(struct tui *t, enum tui_view_kind k)
{
	return view_ops[k]->pos(t);
}

static bool is_cursor_view(enum tui_view_kind k)
{
	return view_ops[k]->cursor;
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
	enum tui_view_kind k = tui_view_of(t);
	size_t old = pos_of(t, k)->cur;
	if (pos_key(pos_of(t, k), lines_of(t, k), tui_view_page(t, k), is_cursor_view(k), key)) {
		if (k == TUI_VIEW_PEEK)
			tui_peek_skip(t, old);
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
			tui_set_status(t, "q quits");
		else if (k == TUI_VIEW_PEEK)
			tui_peek_back(t);
		else if (k != TUI_VIEW_TOP || !back)
			tui_pop_view(t);
		return;
	case '?':
		if (k == TUI_VIEW_HELP) {
			tui_pop_view(t);
		} else {
			t->help_pos = (struct tui_pos){0};
			tui_push_view(t, TUI_VIEW_HELP);
		}
		return;
	}
	if (view_ops[k]->key)
		view_ops[k]->key(t, key, enter);
}

void tui_resize(struct tui *t, int rows, int cols)
{
	t->rows = rows;
	t->cols = cols;
	/* elsewhere the timeline is made again when it is opened */
	if (tui_view_of(t) == TUI_VIEW_TIMELINE && !tui_timeline_refresh(t))
		tui_pop_view(t);
	for (int i = 0; i < t->depth; i++) {
		enum tui_view_kind k = t->stack[i];
		tui_pos_fix(pos_of(t, k), lines_of(t, k), tui_view_page(t, k), is_cursor_view(k));
	}
}

/* ---- drawing ------------------------------------------------------------ */

const char *tui_basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Row 0 of every view: the program, the sample index, the total, the rate. */
void tui_draw_title(const struct tui *t, struct tui_screen *s, const char *view,
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

/* Puts `text` right-aligned on `row` (a position counter), a blank before
 * it: on a narrow screen it covers the end of the row's text, and must not
 * read as part of it ("...of 13.18MB tot1/8"). */
void tui_draw_right(struct tui_screen *s, int row, int attr, const char *text)
{
	int col = s->cols - (int)strlen(text);
	if (col > 1)
		tui_screen_put(s, row, col - 1, attr, " ", 0);
	if (col > 0)
		tui_screen_put(s, row, col, attr, text, 0);
}

void tui_draw_line(struct tui_screen *s, int row, int attr, const char *fixed, const char *body,
		      int hscroll)
{
	if (attr == TUI_CURSOR)
		tui_screen_row_attr(s, row, TUI_CURSOR);
	int col = tui_screen_put(s, row, 0, attr, fixed, 0);
	if (body)
		tui_screen_put(s, row, col, attr, body, hscroll);
}

/* The lines of a page from screen row `first`; with `cursor`, the line
 * at pos->cur in the cursor bar. */
void tui_draw_page(const struct tui *t, struct tui_screen *s, const struct tui_page *p,
		      const struct tui_pos *pos, size_t page, int first, bool cursor)
{
	for (size_t i = pos->top; i < p->n && i < pos->top + page; i++) {
		const struct tui_line *l = &p->lines[i];
		tui_draw_line(s, first + (int)(i - pos->top),
			  cursor && i == pos->cur ? TUI_CURSOR : l->attr, l->fixed, l->body,
			  pos->hscroll);
	}
}

static const char *status_keys(enum tui_view_kind k)
{
	return view_ops[k]->keys;
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
	enum tui_view_kind k = tui_view_of(t);
	size_t page = tui_view_page(t, k);
	struct tui_pos *pos = pos_of(t, k);
	tui_pos_fix(pos, lines_of(t, k), page, is_cursor_view(k));
	char pos_text[48];
	view_ops[k]->draw(t, s, pos, page);
	if (view_ops[k]->counted) {
		size_t n = lines_of(t, k);
		snprintf(pos_text, sizeof(pos_text), " %zu-%zu/%zu", n ? pos->top + 1 : 0,
			 pos->top + page < n ? pos->top + page : n, n);
		tui_draw_right(s, 0, TUI_TITLE, pos_text);
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
		int col = 0;
		if (t->follow && !t->status[0] && !t->failed) {
			char f[512];
			tui_follow_status(t, f, sizeof(f));
			col = tui_screen_put(s, last, 0, TUI_STATUS, f, 0);
		}
		tui_screen_put(s, last, col, TUI_STATUS,
			       t->status[0] ? t->status
			       : t->failed  ? t->error.msg
					    : status_keys(k),
			       0);
	}
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
	tui_work_release(t);
	tui_reports_clear(t);
	while (t->npeek)
		free(t->peek[--t->npeek].name);
	free(t->peek);
	tui_page_release(&t->peek_page);
	tui_timeline_free(t->timeline);
	tui_page_release(&t->timeline_page);
	ap_advice_free(t->advice);
	ap_view_release(&t->adv_own);
	tui_page_release(&t->list_page);
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
				if (nl - 7 >= sizeof(buf) || tui_parse_size(buf, &c, &r)) {
					free(k);
					free(sz);
					return ap_error_set(err,
							    "'%.*s': a size is COLSxROWS, at least "
							    "20x5 and at most 1000x1000",
							    (int)(nl + 2), s);
				}
				AP_ALLOC_GROW(sz, nsz + 2, szalloc);
				sz[nsz++] = c;
				sz[nsz++] = r;
				key = KEY_RESIZE;
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
