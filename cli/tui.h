/* The interactive browser of `allocprof tui`: a text screen model that both
 * the ncurses front end and the batch mode draw (tui-screen.c), and the
 * browser's state and key handling (tui.c) and its views, one file per view
 * or family behind struct tui_view_ops (tui-top.c, tui-peek.c, tui-list.c,
 * tui-timeline.c, tui-advise.c, tui-help.c; tui-int.h), over the report
 * models of ap_report.h and ap_advise.h. cli/cmd-tui.c runs it. */
#ifndef AP_TUI_H
#define AP_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ap_advise.h"
#include "ap_report.h"
#include "views.h"

/* ---- the screen (tui-screen.c) ----------------------------------------- */

/* How a cell is drawn. The batch mode prints text only; ncurses maps these
 * to attributes and, when the terminal has them, colours. */
enum tui_attr {
	TUI_NORMAL,
	TUI_TITLE,  /* the header line of a view */
	TUI_BOLD,   /* column headers, lines with allocations */
	TUI_CURSOR, /* the selected row (A_REVERSE) */
	TUI_GOOD,   /* a verdict that says pool */
	TUI_BAD,    /* a verdict that says no */
	TUI_STATUS, /* the bottom line */
	TUI_NATTR
};

/* One cell: a UTF-8 character (1 to 4 bytes; wide characters are counted
 * as one column) and its attribute. */
struct tui_cell {
	char ch[4];
	unsigned char len;
	unsigned char attr;
};

struct tui_screen {
	int rows, cols;
	struct tui_cell *cells; /* rows * cols */
};

/* Sets the size (at least 1x1) and clears. */
void tui_screen_resize(struct tui_screen *s, int rows, int cols);
void tui_screen_release(struct tui_screen *s);
/* Every cell a blank TUI_NORMAL space. */
void tui_screen_clear(struct tui_screen *s);
/* Writes `text` at (row, col) with `attr`, after skipping its first `skip`
 * columns, clipped at the right edge. Tabs advance to the next multiple of
 * 8 columns counted from the start of `text`; other control characters and
 * invalid UTF-8 show as '?'. Returns the column after the last one written
 * (or that would have been). Rows outside the screen are ignored. */
int tui_screen_put(struct tui_screen *s, int row, int col, int attr, const char *text, int skip);
/* printf into the screen, no skip. */
int tui_screen_putf(struct tui_screen *s, int row, int col, int attr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Sets the attribute of a whole row (the cursor bar, the title line). */
void tui_screen_row_attr(struct tui_screen *s, int row, int attr);
/* Prints the screen as text, one line per row, trailing blanks dropped. */
void tui_screen_print(const struct tui_screen *s, FILE *f);

/* ---- the browser (tui.c, tui-*.c) ----------------------------------------- */

enum tui_view_kind {
	TUI_VIEW_TOP,
	TUI_VIEW_LIST,
	TUI_VIEW_ADVISE,
	TUI_VIEW_SITE,
	TUI_VIEW_HELP,
	TUI_VIEW_PEEK,	   /* a node between its callers and callees */
	TUI_VIEW_TIMELINE, /* in-use bytes over time */
};

/* A scrollable list position: the selected line and the first one shown. */
struct tui_pos {
	size_t cur, top;
	int hscroll; /* columns the long text column is scrolled left */
};

/* A line of a page of text: `fixed` stays put, `body` (may be NULL) after
 * it scrolls sideways; `target` (may be NULL) is the node Enter on the
 * line goes to (a peek page's callers and callees). */
struct tui_line {
	char *fixed, *body, *target;
	int attr;
};

struct tui_page {
	struct tui_line *lines;
	size_t n, alloc;
};

/* One step of the call pages' history: the node shown and where the
 * cursor was. */
struct tui_peek_step {
	char *name;
	struct tui_pos pos;
};

struct tui_timeline; /* tui-int.h: the timeline model, for one width */
struct tui_work;     /* tui-work.c: the replays run while the user browses */
struct tui_tljob;    /* tui-work.c: the timeline for a new width, being made */
struct tui_follow;   /* tui-follow.c: a trace still being written, followed */

struct tui;

/* Called before a step that may take a while (symbolizing, the advisor):
 * the terminal front end shows `what` on the status line. May be NULL. */
typedef void (*tui_busy_fn)(struct tui *t, const char *what);

struct tui_options {
	struct ap_view_opts view; /* sample index, granularity, focus, ignore */
	bool by_cum;
	const char *source_path; /* for list, may be NULL */
	struct ap_view_measure measure; /* the advisor's measured replay */
};

struct tui {
	struct ap_view *v;
	struct tui_options o;
	char *focus, *ignore; /* owned copies; o.view.report points at them */
	struct ap_report *report;
	/* The top models made so far for the current focus and ignore, by
	 * sample index and granularity (report is one of them): switching
	 * back is instant. */
	struct ap_report *reports[AP_SI_COUNT][3];
	struct tui_pos top_pos;

	enum tui_view_kind stack[8]; /* views, the current one last */
	int depth;

	struct tui_page list_page; /* the list view, rendered when opened */
	char *list_what;	   /* the function or file it shows */
	struct tui_pos list_pos;

	/* The call pages: the history of nodes visited (the current one
	 * last), and the current one's page, made again when the model
	 * changes. */
	struct tui_peek_step *peek;
	size_t npeek, peek_alloc;
	struct tui_page peek_page;
	size_t peek_node_at; /* the page index of the node's own line */

	struct tui_timeline *timeline; /* made on the first `T`, again on a width change */
	struct tui_page timeline_page;
	struct tui_pos timeline_pos;

	struct ap_cost_table costs;
	struct ap_advice *advice; /* computed on the first `a` */
	/* What the advisor advises (tui_advised): the view's trace, or in a
	 * whole run of several processes the one process
	 * ap_view_advised_process picks, read alone (adv_own) */
	const struct ap_view *adv;
	struct ap_view adv_own;
	size_t adv_proc;
	struct tui_pos advise_pos, site_pos, help_pos;

	int prompt;	     /* 0, or '/' (focus) or '\\' (ignore) being typed */
	struct ap_buf input; /* the prompt's text */
	char status[512];    /* a one-shot message for the bottom line */
	int rows, cols;	     /* the screen size the keys scroll by */
	bool quit;
	tui_busy_fn busy;

	struct tui_work *work; /* tui_start_work; NULL: none (made when asked) */
	struct tui_tljob *tljob; /* with work: a resized timeline being replayed */
	bool waiting;	       /* `wait_for` opens when its work is done */
	enum tui_view_kind wait_for;

	/* A replay of the trace failed (ap_replay: a corrupt chunk), on the
	 * worker's thread or this one: the first error, shown on the status
	 * line from then on. The views made before stay; the TUI starts no
	 * replay after it (each would fail the same way). The command says it
	 * again on stderr once the screen is gone, and exits with status 1. */
	bool failed;
	struct ap_error error;

	struct tui_follow *follow; /* --follow: the follower; NULL: not following */
};

/* Builds the top model (the only step that can fail: a bad focus or ignore
 * regex, then prints the error and returns AP_EXIT_FAIL). `v` must outlive
 * the browser. Returns 0. */
int tui_init(struct tui *t, struct ap_view *v, const struct tui_options *o, int rows, int cols);
void tui_release(struct tui *t);

/* Handles one key: a character, an ncurses KEY_* code, or KEY_RESIZE after
 * tui_resize. */
void tui_key(struct tui *t, int key);

/* Starts the advisor's and the timeline's replays (the timeline for the
 * current width) on a thread of their own, so that `a` and `T` need not
 * wait for them: a view asked for before its work is done opens when it
 * is (tui_poll), and the others stay usable meanwhile. Their inputs are
 * made first, on the calling thread (the symbolizer is not thread-safe).
 * Without it the views are made when first asked for. */
void tui_start_work(struct tui *t);
/* Takes over the work done since the last call (opening the view waited
 * for, if it is done; a key waits with `block`) and returns true if the
 * screen changed. *pending is set to whether work is still running. */
bool tui_poll(struct tui *t, bool block, bool *pending);
void tui_resize(struct tui *t, int rows, int cols);
/* Draws the current view into `s` (sized t->rows x t->cols). When the
 * prompt is open, *cursor_col gets the column of the input cursor on the
 * last row, else -1. */
void tui_draw(struct tui *t, struct tui_screen *s, int *cursor_col);

/* ---- following a trace still being written (tui-follow.c) ---- */

/* Opens the trace at `path` to follow it: the view of what is there so
 * far (v's trace the follower's, to be left out of ap_view_release) and
 * the follower (*out, not started). Returns 0, *out NULL and v untouched
 * when the trace is finished (nothing to follow: open it as any other);
 * or prints the error and returns AP_EXIT_FAIL. program_output: where the program
 * writes (record --live), said on the status line; may be NULL. */
int tui_follow_load(struct ap_view *v, const char *path, const struct ap_view_opts *o,
		    const char *program_output, struct tui_follow **out);
/* Starts following (t->follow set, the lock held): an update every
 * second or so on a thread of its own. */
void tui_follow_start(struct tui *t);
/* The follower's lock: held while the browser uses the trace (all but
 * waiting for a key); taking it makes the symbolizer again after a
 * dlopen. */
void tui_follow_lock(struct tui *t);
void tui_follow_unlock(struct tui *t);
/* Whether the trace has ended (or following failed): nothing comes
 * any more. */
bool tui_follow_ended(const struct tui *t);
/* Stops the follower (the lock not held) and waits for it. */
void tui_follow_stop(struct tui *t);
void tui_follow_free(struct tui_follow *F);

/* Parses a --keys string: characters stand for themselves, <name> for a
 * special key (<up> <down> <left> <right> <pgup> <pgdn> <home> <end>
 * <enter> <esc> <bs> <tab> <space> <lt>), <resize:COLSxROWS> for a resize.
 * Returns the number of keys, *keys (malloc'd) the codes, and for each
 * KEY_RESIZE the new size in *sizes (pairs cols, rows; malloc'd). Returns
 * -1 with err set on an unknown name. */
int tui_parse_keys(const char *s, int **keys, int **sizes, struct ap_error *err);

/* Parses "COLSxROWS" (both at least 20x5 and at most 1000). */
int tui_parse_size(const char *s, int *cols, int *rows);

#endif
