/* Helpers shared by the testdata programs (brief F): output that does not
 * allocate, and a sink the compiler cannot optimise allocations away from.
 *
 * Why write(2) and not printf: stdio allocates stdout's buffer on first use
 * (1 KiB on a terminal, 4 KiB on a pipe or file), which would make a
 * program's heap totals depend on where its output goes. These programs'
 * expected values count only their own allocations, so they print with
 * vsnprintf into a stack buffer (no allocation for the formats used here)
 * and one write(2). */
#ifndef TD_UTIL_H
#define TD_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Every allocation is stored here (or in a global array) so that no compiler
 * may drop a malloc/free pair; the programs are also built with
 * -fno-builtin-malloc and friends (testdata/meson.build). */
static void *volatile td_sink;

__attribute__((format(printf, 1, 2))) static inline void td_say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	for (int off = 0; off < n;) {
		ssize_t w = write(STDOUT_FILENO, line + off, (size_t)(n - off));
		if (w <= 0)
			return;
		off += (int)w;
	}
}

/* Touches a block so that it is used: first and last byte. */
static inline void td_touch(void *p, size_t n, unsigned char v)
{
	if (!p || !n)
		return;
	((volatile unsigned char *)p)[0] = v;
	((volatile unsigned char *)p)[n - 1] = v;
	td_sink = p;
}

#endif
