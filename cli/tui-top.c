/* The top view of `allocprof tui`: the top model for the current sample index,
 * granularity, focus and ignore (the models made so far kept), its table and
 * its keys. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

/* The order `s` cycles through, as the brief and pprof list them. */
static const enum ap_sample_index si_cycle[] = {AP_SI_ALLOC_SPACE, AP_SI_ALLOC_OBJECTS,
						AP_SI_INUSE_SPACE, AP_SI_INUSE_OBJECTS,
						AP_SI_PEAK_SPACE, AP_SI_PEAK_OBJECTS,
						AP_SI_TEMPORARY};
static const char *const gran_names[] = {"functions", "lines", "files"};

size_t tui_row_named(const struct ap_report *r, const char *name, size_t fallback)
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

void tui_reports_clear(struct tui *t)
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
int tui_rebuild(struct tui *t, bool filter)
{
	struct ap_report **slot =
	    &t->reports[t->o.view.report.sample_index][t->o.view.report.granularity];
	struct ap_report *r = filter ? NULL : *slot;
	if (!r) {
		struct ap_error err;
		tui_busy(t, "symbolizing");
		r = ap_report_new(t->v->trace, t->v->values, t->v->sym, &t->o.view.report, NULL,
				  NULL, &err);
		if (!r) {
			tui_set_status(t, "%s", err.msg);
			return -1;
		}
	}
	/* a model made before may be in the other order */
	ap_report_sort(r, t->o.by_cum);
	char *name = current_name(t);
	t->top_pos.cur = tui_row_named(r, name, t->top_pos.cur);
	free(name);
	if (filter)
		tui_reports_clear(t);
	*slot = r;
	t->report = r;
	tui_pos_fix(&t->top_pos, r->nrows, tui_view_page(t, TUI_VIEW_TOP), true);
	tui_peek_refresh(t);
	return 0;
}

void tui_next_sample_index(struct tui *t)
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
	if (tui_rebuild(t, false))
		t->o.view.report.sample_index = old;
}

static void next_granularity(struct tui *t)
{
	enum ap_granularity old = t->o.view.report.granularity;
	t->o.view.report.granularity = (enum ap_granularity)((old + 1) % 3);
	if (tui_rebuild(t, false))
		t->o.view.report.granularity = old;
}

static void toggle_cum(struct tui *t)
{
	char *name = current_name(t);
	t->o.by_cum = !t->o.by_cum;
	ap_report_sort(t->report, t->o.by_cum);
	t->top_pos.cur = tui_row_named(t->report, name, t->top_pos.cur);
	free(name);
	tui_pos_fix(&t->top_pos, t->report->nrows, tui_view_page(t, TUI_VIEW_TOP), true);
}

/* Applies the prompt's text as the focus or ignore regex. */
void tui_apply_filter(struct tui *t)
{
	char **slot = t->prompt == '/' ? &t->focus : &t->ignore;
	const char **opt = t->prompt == '/' ? &t->o.view.report.focus : &t->o.view.report.ignore;
	char *old = *slot;
	*slot = t->input.len ? ap_xstrdup(t->input.buf) : NULL;
	*opt = *slot;
	if (tui_rebuild(t, true)) {
		free(*slot);
		*slot = old;
		*opt = old;
		return;
	}
	free(old);
}

static size_t top_lines(const struct tui *t)
{
	return t->report->nrows;
}

static struct tui_pos *top_pos(struct tui *t)
{
	return &t->top_pos;
}

static bool top_key(struct tui *t, int key, bool enter)
{
	char *name = NULL;
	switch (key) {
	case 's':
		tui_next_sample_index(t);
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
		tui_open_advise(t);
		break;
	case 'T':
		tui_open_timeline(t);
		break;
	case 'L':
		name = current_name(t);
		tui_open_list(t, tui_row_of(t, name));
		break;
	default:
		if (!enter)
			return false;
		name = current_name(t);
		tui_open_peek(t, name);
	}
	free(name);
	return true;
}

static void draw_top(struct tui *t, struct tui_screen *s)
{
	const struct ap_report *r = t->report;
	size_t page = tui_view_page(t, TUI_VIEW_TOP);
	char d[32], fixed[192];
	/* each value in its own unit: pprof's common scale is for its text,
	 * and a screen of 712330949B under a total of 1.29GB reads badly */
	int unit = AP_VIEW_UNIT_EACH;
	struct ap_buf name = AP_BUF_INIT;

	tui_draw_title(t, s, "allocprof", tui_basename_of(t->v->trace->exe));
	tui_screen_putf(s, 1, 0, TUI_NORMAL, "Granularity: %s   Sort: %s   Focus: %s   Ignore: %s",
			gran_names[r->granularity], t->o.by_cum ? "cum" : "flat",
			t->focus ? t->focus : "-", t->ignore ? t->ignore : "-");
	ap_render_top_showing(r, unit, fixed, sizeof(fixed));
	tui_screen_put(s, 2, 0, TUI_NORMAL, fixed, 0);
	snprintf(d, sizeof(d), "%zu/%zu", r->nrows ? t->top_pos.cur + 1 : 0, r->nrows);
	tui_draw_right(s, 2, TUI_NORMAL, d);
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
		tui_draw_line(s, 4 + (int)(i - t->top_pos.top),
			  i == t->top_pos.cur ? TUI_CURSOR : TUI_NORMAL, fixed, name.buf,
			  t->top_pos.hscroll);
	}
	ap_buf_release(&name);
}

/* Each view's drawing (view_ops). */
static void draw_top_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	(void)pos;
	(void)page;
	draw_top(t, s);
}

const struct tui_view_ops tui_top_ops = {
	.lines = top_lines,
	.pos = top_pos,
	.cursor = true,
	.draw = draw_top_view,
	.key = top_key,
	.keys = "q:quit ?:help Enter:calls L:list a:advise T:timeline s:index "
		"g:granularity c:sort /:focus \\:ignore",
};
