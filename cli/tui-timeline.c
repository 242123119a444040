/* The timeline view of `allocprof tui`: in-use bytes over time, as
 * `allocprof timeline` draws it, for the screen's width. */
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

static void timeline_page_line(void *ctx, const struct ap_line *line)
{
	tui_page_add(ctx, TUI_NORMAL, line->text, line->body);
}

/* Makes the timeline page for the screen: a column per bucket in the
 * width, the chart's rows what the height leaves. The sites are chosen
 * once; a new width replays the trace again, the same width only draws.
 * Returns false when the timeline cannot be made (a replay failed: said on
 * the status line; t->timeline is NULL then). */
bool tui_timeline_refresh(struct tui *t)
{
	/* following, the follower makes it (tui-follow.c), until the end */
	bool follows = t->follow && !tui_follow_ended(t);
	if (follows && !t->timeline)
		return false;
	if (t->failed && (!t->timeline || !t->timeline->T.nbuckets)) {
		tui_set_status(t, "%s", t->error.msg);
		return false;
	}
	if (!t->timeline) {
		tui_busy(t, "finding the call sites");
		t->timeline = ap_xcalloc(1, sizeof(*t->timeline));
		ap_timeline_sites_init(&t->timeline->sites, t->v, TIMELINE_SITES);
	}
	struct tui_timeline *tl = t->timeline;
	/* the axis label takes 11 columns, the time at the end about 12 */
	size_t nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	/* (after a failed replay, the width made before stays) */
	if (tl->T.nbuckets != nb && !t->failed && !follows &&
	    !(t->work && tl->T.nbuckets && tui_tljob_start(t, nb))) {
		/* (with work, the old width stays shown until the new one is made) */
		tui_busy(t, "replaying the trace");
		ap_timeline_release(&tl->T);
		struct ap_error err;
		if (ap_timeline_init(&tl->T, t->v->trace, &tl->sites, nb, false, &err) < 0) {
			tui_replay_failed(t, &err);
			tui_page_release(&t->timeline_page);
			if (!t->tljob) { /* (a job reads the sites) */
				tui_timeline_free(tl);
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
	tui_page_release(&t->timeline_page);
	ap_render_timeline(&tl->T, rows < 2 ? 2 : rows, timeline_page_line, &t->timeline_page);
	return true;
}

void tui_timeline_free(struct tui_timeline *tl)
{
	if (!tl)
		return;
	ap_timeline_release(&tl->T);
	ap_timeline_sites_release(&tl->sites);
	free(tl);
}

void tui_open_timeline(struct tui *t)
{
	if (t->follow && tui_follow_wait(t, TUI_VIEW_TIMELINE))
		return;
	if (tui_work_wait(t, TUI_VIEW_TIMELINE))
		return;
	if (!tui_timeline_refresh(t))
		return;
	t->timeline_pos = (struct tui_pos){0};
	tui_push_view(t, TUI_VIEW_TIMELINE);
}

static size_t timeline_lines(const struct tui *t)
{
	return t->timeline_page.n;
}

static struct tui_pos *timeline_pos(struct tui *t)
{
	return &t->timeline_pos;
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
			tui_basename_of(t->v->trace->exe), peak, T->peak,
			T->peak_x,
			t->v->trace->rate > 1 ? "Sampled: estimates" : "Every allocation", counted);
}

static void draw_timeline_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos,
			       size_t page)
{
	draw_timeline_title(t, s);
	tui_draw_page(t, s, &t->timeline_page, pos, page, 1, false);
}

const struct tui_view_ops tui_timeline_ops = {
	.lines = timeline_lines,
	.pos = timeline_pos,
	.counted = true,
	.draw = draw_timeline_view,
	.keys = "q/Esc back  ? help  arrows/PgUp/PgDn scroll",
};
