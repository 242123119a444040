/* The help view of `allocprof tui`: the keys. */
#include "tui-int.h"

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

static size_t help_lines_n(const struct tui *t)
{
	(void)t;
	return AP_ARRAY_SIZE(help_lines);
}

static struct tui_pos *help_pos(struct tui *t)
{
	return &t->help_pos;
}

static void draw_help_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	(void)t;
	tui_screen_row_attr(s, 0, TUI_TITLE);
	tui_screen_put(s, 0, 0, TUI_TITLE, "allocprof tui: help", 0);
	for (size_t i = pos->top; i < AP_ARRAY_SIZE(help_lines) && i < pos->top + page; i++)
		tui_screen_put(s, 1 + (int)(i - pos->top), 0, TUI_NORMAL, help_lines[i], 0);
}

const struct tui_view_ops tui_help_ops = {
	.lines = help_lines_n,
	.pos = help_pos,
	.draw = draw_help_view,
	.keys = "q/Esc/? back",
};
