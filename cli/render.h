/* Renderers: each view's text is made once, as lines, and drawn by the
 * command's stdout and by the TUI alike (the TUI adds its cursor, its
 * scrolling and its attributes; stdout prints the lines as they are). */
#ifndef AP_RENDER_H
#define AP_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "ap_advise.h"
#include "ap_report.h"
#include "timeline.h"

/* What a line is, for the TUI's attributes. */
enum ap_line_kind {
	AP_LINE_TITLE,		/* a site's or a function's heading */
	AP_LINE_GOOD,		/* a verdict for a pool */
	AP_LINE_BAD,		/* a verdict against */
	AP_LINE_WRAP,		/* prose: the TUI wraps it; stdout indents it by three spaces */
	AP_LINE_TEXT,		/* everything else, as it is */
	AP_LINE_SOURCE,		/* a source line of `list`: fixed columns, then the source */
	AP_LINE_CALLER,		/* peek: a caller of the node, its value, then its name */
	AP_LINE_NODE,		/* peek: the node's own columns, then its name */
	AP_LINE_CALLEE,		/* peek: a callee of the node, its value, then its name */
};

struct ap_line {
	enum ap_line_kind kind;
	const char *text;	/* the line (AP_LINE_SOURCE and the peek lines: their fixed columns) */
	const char *body;	/* AP_LINE_SOURCE: the source text; peek lines: the name shown; else NULL */
	const char *node;	/* peek lines: the row name (ap_report_row.name) the line is about */
	int lineno;		/* AP_LINE_SOURCE: the source line's number */
	int hot;		/* AP_LINE_SOURCE: it has a flat or cum value */
};

typedef void (*ap_line_fn)(void *ctx, const struct ap_line *line);

/* Site i of `a` as `advise` shows it. */
void ap_render_advise_site(const struct ap_advice *a, size_t i, ap_line_fn line, void *ctx);

/* True for the verdicts that advise a pool. */
int ap_render_verdict_good(enum ap_verdict v);

/* One function of a `list` model, as pprof -list prints it. */
void ap_render_list_func(const struct ap_list *l, const struct ap_list_func *f, ap_line_fn line,
			 void *ctx);

/* "Showing nodes accounting for X, P% of T total" of a top model, in the
 * table's unit (ap_view_table_unit). */
void ap_render_top_showing(const struct ap_report *r, int unit, char *out, size_t len);

/* Row i of a top model: its numeric columns ("flat flat% sum% cum cum%  ",
 * sum the flat of the rows up to and including it, in the table's unit)
 * into `fixed`, its name (with pprof's inline mark) into `name`. */
void ap_render_top_row(const struct ap_report *r, size_t i, double sum, int unit, char *fixed,
		       size_t len, struct ap_buf *name);

/* Prints pprof's lines above a node table to stdout: "Showing nodes
 * accounting for ...", "Dropped N nodes (cum <= X)" and "Showing top N
 * nodes out of M" when they apply. */
void ap_render_top_head(const struct ap_report *r, int unit);

/* Prints a line, its text then its body, to the FILE * `ctx` (stdout when
 * NULL): the ap_line_fn of the commands. */
void ap_render_print(void *ctx, const struct ap_line *line);

/* An edge of a node as peek shows it: the other node's name (the row's
 * own, valid as long as the report), the value through the edge, and
 * whether the callee was inlined. */
struct ap_peek_edge {
	const char *name;
	double value;
	bool inl;
};

/* The edges into (`callers`) or out of the row named `name` (a row's own
 * name pointer, compared by address) that the report kept (those under
 * its edge fraction are left out when it is built, as pprof does), by
 * value descending, ties by name, into *out (free() it; never NULL).
 * Returns how many. */
size_t ap_peek_context(const struct ap_report *r, const char *name, bool callers,
		       struct ap_peek_edge **out);

/* Row i of a top model between its callers and callees, as pprof -peek
 * prints it: AP_LINE_CALLER lines, one AP_LINE_NODE line (its flat, flat%,
 * `sum` as sum%, cum, cum%, in the table's unit), AP_LINE_CALLEE lines. */
void ap_render_peek_node(const struct ap_report *r, size_t i, double sum, int unit,
			 ap_line_fn line, void *ctx);

/* The terminal chart of a timeline, as ms_print draws massif's: "In use
 * over time (peak ...)", a blank, `rows` (at least 2) rows of columns of
 * '#' scaled to the peak with '@' in the peak's column and bytes on the
 * left, the time axis, a blank, "At the peak:" and each site's share
 * then, the rest last. Each line is T->nbuckets + 11 columns wide, the
 * axis a few more. */
void ap_render_timeline(const struct ap_timeline *T, int rows, ap_line_fn line, void *ctx);

#endif
