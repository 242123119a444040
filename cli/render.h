/* Renderers: each view's text is made once, as lines, and drawn by the
 * command's stdout and by the TUI alike. */
#ifndef AP_RENDER_H
#define AP_RENDER_H

#include <stddef.h>

#include "ap_advise.h"

/* What a line is, for the TUI's attributes; stdout prints them all as
 * they are, AP_LINE_WRAP after an indent of three spaces. */
enum ap_line_kind {
	AP_LINE_TITLE,		/* a site's number and name */
	AP_LINE_GOOD,		/* a verdict for a pool */
	AP_LINE_BAD,		/* a verdict against */
	AP_LINE_WRAP,		/* prose: the TUI wraps it (after three spaces) */
	AP_LINE_TEXT,		/* everything else, as it is */
};

typedef void (*ap_line_fn)(void *ctx, enum ap_line_kind kind, const char *text);

/* Site i of `a` as `advise` shows it. */
void ap_render_advise_site(const struct ap_advice *a, size_t i, ap_line_fn line, void *ctx);

/* True for the verdicts that advise a pool. */
int ap_render_verdict_good(enum ap_verdict v);

#endif
