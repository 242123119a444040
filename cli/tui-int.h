/* What the files of `allocprof tui`'s browser share (cli/tui.c and the
 * view files cli/tui-*.c): a view's table of operations, each view's, and
 * the helpers they call one another by. Not for outside the browser:
 * cli/tui.h is its interface. */
#ifndef AP_TUI_INT_H
#define AP_TUI_INT_H

#include "commands.h"
#include "render.h"
#include "timeline.h"
#include "tui.h"

#define KEY_ESC 27

/* The advise view's pane under the table with the selected site's
 * verdict and reasons: a heading and ADVISE_REASONS lines, on screens of
 * at least ADVISE_PANE_MIN rows. */
#define ADVISE_REASONS 3
#define ADVISE_PANE_MIN 14

/* The sites shown on their own, as `timeline` shows them by default. */
#define TIMELINE_SITES 5

struct tui_timeline {
	struct ap_timeline_sites sites;
	struct ap_timeline T; /* for T.nbuckets columns; nbuckets 0: none yet */
};

/* The status line while it runs. */
#define TLJOB_STATUS "replaying the trace for the new width ..."

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

/* Each view's (tui.c puts them in one table, by enum tui_view_kind). */
extern const struct tui_view_ops tui_top_ops, tui_list_ops, tui_advise_ops, tui_site_ops,
    tui_help_ops, tui_peek_ops, tui_timeline_ops;

/* ---- tui.c ---- */

void tui_page_add_target(struct tui_page *p, int attr, const char *fixed, const char *body,
			    const char *target);
void tui_page_add(struct tui_page *p, int attr, const char *fixed, const char *body);
void tui_page_addf(struct tui_page *p, int attr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds `text` word-wrapped to `width` columns, each line after `indent`. */
void tui_page_wrap(struct tui_page *p, int attr, const char *indent, const char *text, int width);
void tui_page_release(struct tui_page *p);
int tui_advise_pane(const struct tui *t);
/* Rows each view has for its lines: the top view has four header lines,
 * the advise view three and its pane, the call pages two, the other pages
 * one; all have the status line. */
size_t tui_view_page(const struct tui *t, enum tui_view_kind k);
/* Keeps a cursor view's cursor inside its n lines and on screen, or a
 * page's first line inside its range. */
void tui_pos_fix(struct tui_pos *p, size_t n, size_t page, bool cursor);
void tui_busy(struct tui *t, const char *what);
void tui_set_status(struct tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A replay failed with err (tui.failed). */
void tui_replay_failed(struct tui *t, const struct ap_error *err);
enum tui_view_kind tui_view_of(const struct tui *t);
void tui_pop_view(struct tui *t);
void tui_push_view(struct tui *t, enum tui_view_kind k);
const char *tui_basename_of(const char *path);
/* Row 0 of every view: the program, the sample index, the total, the rate. */
void tui_draw_title(const struct tui *t, struct tui_screen *s, const char *view,
		       const char *what);
/* Puts `text` right-aligned on `row` (a position counter). */
void tui_draw_right(struct tui_screen *s, int row, int attr, const char *text);
void tui_draw_line(struct tui_screen *s, int row, int attr, const char *fixed, const char *body,
		      int hscroll);
/* The lines of a page from screen row `first`; with `cursor`, the line
 * at pos->cur in the cursor bar. */
void tui_draw_page(const struct tui *t, struct tui_screen *s, const struct tui_page *p,
		      const struct tui_pos *pos, size_t page, int first, bool cursor);

/* ---- tui-top.c ---- */

size_t tui_row_named(const struct ap_report *r, const char *name, size_t fallback);
void tui_reports_clear(struct tui *t);
void tui_next_sample_index(struct tui *t);
/* Makes the top model of the current options current (filter: the focus
 * or ignore changed); -1 on a bad regex (said on the status line). */
int tui_rebuild(struct tui *t, bool filter);
/* Applies the prompt's text as the focus or ignore regex. */
void tui_apply_filter(struct tui *t);

/* ---- tui-list.c ---- */

/* The functions of a row of the top model (its function, or with files
 * granularity every function of its file), annotated. */
void tui_open_list(struct tui *t, const struct ap_report_row *row);

/* ---- tui-peek.c ---- */

/* The row of the top model named `name`, or NULL. */
const struct ap_report_row *tui_row_of(const struct tui *t, const char *name);
/* Makes the page of the current node again, from the current model (sum%
 * is the node's own flat%, as `peek` of that one node prints it). */
void tui_peek_refresh(struct tui *t);
/* Shows `name` between its callers and callees, the cursor on it; the
 * node shown before stays in the history. */
void tui_open_peek(struct tui *t, const char *name);
/* Back to the node shown before, or out of the call pages. */
void tui_peek_back(struct tui *t);
/* After a move, the cursor on the nearest line that names a node, in the
 * direction it moved (from `old`). */
void tui_peek_skip(struct tui *t, size_t old);

/* ---- tui-timeline.c ---- */

/* Returns false when the timeline cannot be made (a replay failed: said on
 * the status line; t->timeline is NULL then). */
bool tui_timeline_refresh(struct tui *t);
void tui_timeline_free(struct tui_timeline *tl);
void tui_open_timeline(struct tui *t);

/* ---- tui-advise.c ---- */

/* The cost table as `advise` finds it (ap_cost_get). */
int tui_load_costs(struct tui *t);
/* Sets t->adv, reading a whole run's advised process the first time.
 * Returns 0, or -1 with the error on the status line. */
int tui_advised(struct tui *t);
void tui_open_advise(struct tui *t);

/* ---- tui-work.c ---- */

/* Before view k opens: true if it must wait for its work (then it opens
 * from tui_poll). */
bool tui_work_wait(struct tui *t, enum tui_view_kind k);
/* Makes the timeline of width nb on a thread; false if it cannot (then
 * the caller makes it). One running for another width is let finish:
 * tui_poll then starts the width wanted. */
bool tui_tljob_start(struct tui *t, size_t nb);
void tui_work_release(struct tui *t);
/* Takes over a finished timeline job (waits for it with `block`); true
 * if it did. */
bool tui_tljob_poll(struct tui *t, bool block);

/* ---- tui-follow.c ---- */

/* Takes over what the follower made since the last call (top's values,
 * the timeline, the advisor's model), the lock held; true if anything. */
bool tui_follow_poll(struct tui *t);
/* Before view k (the timeline or the advice) opens, following: true if
 * it must wait for the follower to make it (then it opens from
 * tui_follow_poll). */
bool tui_follow_wait(struct tui *t, enum tui_view_kind k);
/* The start of the status line: following, or how the program ended. */
void tui_follow_status(const struct tui *t, char *buf, size_t len);

#endif
