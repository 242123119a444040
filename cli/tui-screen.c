/* The TUI's screen model: a grid of UTF-8 cells with attributes. Views draw
 * into it; the terminal front end copies it to ncurses and the batch mode
 * prints it, so both show exactly the same text. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

void tui_screen_resize(struct tui_screen *s, int rows, int cols)
{
	s->rows = rows < 1 ? 1 : rows;
	s->cols = cols < 1 ? 1 : cols;
	s->cells = ap_xrealloc(s->cells, (size_t)s->rows * (size_t)s->cols * sizeof(*s->cells));
	tui_screen_clear(s);
}

void tui_screen_release(struct tui_screen *s)
{
	free(s->cells);
	memset(s, 0, sizeof(*s));
}

void tui_screen_clear(struct tui_screen *s)
{
	size_t n = (size_t)s->rows * (size_t)s->cols;
	for (size_t i = 0; i < n; i++)
		s->cells[i] = (struct tui_cell){.ch = {' '}, .len = 1, .attr = TUI_NORMAL};
}

static void put_cell(struct tui_screen *s, int row, int col, int attr, const char *ch, int len)
{
	if (col < 0 || col >= s->cols)
		return;
	struct tui_cell *c = &s->cells[(size_t)row * (size_t)s->cols + (size_t)col];
	memcpy(c->ch, ch, (size_t)len);
	c->len = (unsigned char)len;
	c->attr = (unsigned char)attr;
}

int tui_screen_put(struct tui_screen *s, int row, int col, int attr, const char *text, int skip)
{
	const unsigned char *p = (const unsigned char *)text;
	int x = 0; /* column within text */
	bool on_screen = row >= 0 && row < s->rows;
	while (*p && col + x - skip < s->cols) {
		if (*p == '\t') {
			do {
				if (on_screen && x >= skip)
					put_cell(s, row, col + x - skip, attr, " ", 1);
				x++;
			} while (x % 8);
			p++;
			continue;
		}
		/* what the program named may hold controls, bidi overrides
		 * and invalid UTF-8: shown escaped, a cell per character
		 * (ap_util.h, "Text for a terminal") */
		char safe[12];
		size_t slen, n = ap_safe_char(p, strlen((const char *)p), 0, safe, &slen);
		if (!n) { /* cut by the end of the string: the byte */
			slen = (size_t)snprintf(safe, sizeof(safe), "\\x%02x", *p);
			n = 1;
		}
		p += n;
		if (slen == n && !memcmp(safe, p - n, n)) { /* as it is */
			if (on_screen && x >= skip)
				put_cell(s, row, col + x - skip, attr, safe, (int)n);
			x++;
			continue;
		}
		for (size_t k = 0; k < slen && col + x - skip < s->cols; k++, x++)
			if (on_screen && x >= skip)
				put_cell(s, row, col + x - skip, attr, safe + k, 1);
	}
	return col + (x > skip ? x - skip : 0);
}

int tui_screen_putf(struct tui_screen *s, int row, int col, int attr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return tui_screen_put(s, row, col, attr, buf, 0);
}

void tui_screen_row_attr(struct tui_screen *s, int row, int attr)
{
	if (row < 0 || row >= s->rows)
		return;
	for (int x = 0; x < s->cols; x++)
		s->cells[(size_t)row * (size_t)s->cols + (size_t)x].attr = (unsigned char)attr;
}

void tui_screen_print(const struct tui_screen *s, FILE *f)
{
	for (int r = 0; r < s->rows; r++) {
		const struct tui_cell *c = &s->cells[(size_t)r * (size_t)s->cols];
		int end = s->cols;
		while (end > 0 && c[end - 1].len == 1 && c[end - 1].ch[0] == ' ')
			end--;
		for (int x = 0; x < end; x++)
			fwrite(c[x].ch, 1, c[x].len, f);
		fputc('\n', f);
	}
}
