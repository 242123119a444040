/* Small shared utilities: error detail, growable byte buffer, array growth,
 * checked allocation. Used by every library except the sampler. */
#ifndef AP_UTIL_H
#define AP_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes of the allocprof command (STYLE.md 8). */
#define AP_EXIT_OK 0
#define AP_EXIT_FAIL 1
#define AP_EXIT_USAGE 2

/* Error detail filled by library functions that fail. The message has the
 * shape "<what>: <why>" without the "allocprof: " prefix; the command adds
 * that when it prints. */
struct ap_error {
	char msg[1024];
};

/* On a function whose result says whether it failed: the caller must look
 * at it (GCC warns otherwise, and -Werror makes that an error). */
#define AP_MUST_CHECK __attribute__((warn_unused_result))

/* Sets err->msg from a printf format; returns -1 so callers can
 * `return ap_error_set(err, ...)`. err may be NULL. */
int ap_error_set(struct ap_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Growable byte buffer (after git's strbuf): `buf` is never NULL and always
 * NUL-terminated after ap_buf_init; ap_buf_detach hands the memory over. */
struct ap_buf {
	char *buf;
	size_t len;
	size_t alloc;
};
#define AP_BUF_INIT { ap_buf_empty, 0, 0 }
extern char ap_buf_empty[];

void ap_buf_init(struct ap_buf *b);
void ap_buf_release(struct ap_buf *b);
void ap_buf_grow(struct ap_buf *b, size_t extra);
void ap_buf_add(struct ap_buf *b, const void *data, size_t len);
void ap_buf_addstr(struct ap_buf *b, const char *s);
void ap_buf_addf(struct ap_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* s as one word of a shell command a user may paste: as it is if it has
 * only characters a shell leaves alone, else in single quotes (a ' as
 * '\''). */
void ap_buf_add_shell_word(struct ap_buf *b, const char *s);
void ap_buf_reset(struct ap_buf *b);
char *ap_buf_detach(struct ap_buf *b, size_t *len);

/* Allocation that aborts with a message on out-of-memory (report side only;
 * never used in the sampler). */
/* How many CPUs the calling thread may run on (its affinity mask; the
 * CPUs online if the mask does not say), at least 1. */
unsigned ap_cpus_here(void);

void *ap_xmalloc(size_t n);
void *ap_xcalloc(size_t n, size_t size);
void *ap_xrealloc(void *p, size_t n);
char *ap_xstrdup(const char *s);

/* Grows array `x` (of `alloc` elements) so that it holds at least `nr`. */
#define AP_ALLOC_GROW(x, nr, alloc)                                          \
	do {                                                                 \
		if ((nr) > (alloc)) {                                        \
			size_t ap_new_ = (alloc) < 16 ? 16 : (alloc) * 2;    \
			if (ap_new_ < (nr))                                  \
				ap_new_ = (nr);                              \
			(x) = ap_xrealloc((x), ap_new_ * sizeof(*(x)));      \
			(alloc) = ap_new_;                                   \
		}                                                            \
	} while (0)

#define AP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Human-readable byte count as pprof prints it ("1.50MB", "512B"). */
void ap_format_bytes(char *out, size_t outlen, double bytes);

/* pprof's byte units: 0 "B", 1 "kB", ... 5 "PB" (1024-based). The unit
 * pprof's autoScale picks for `bytes` (the largest it reaches; "B" for
 * less than 1). */
int ap_bytes_unit(double bytes);
/* `bytes` in `unit` as pprof's ScaledLabel prints it: "%.2f" with a
 * trailing ".00" dropped, "0" when that rounds to zero ("3.13MB", "0"). */
void ap_format_bytes_in(char *out, size_t outlen, double bytes, int unit);
/* Human-readable count ("1234", "1.23M" not used: pprof prints plain). */

/* Parses a byte size like "512K", "4MiB", "1m", "4096" into *out.
 * Returns 0, or -1 if the text is not a size. */
int ap_parse_size(const char *s, uint64_t *out);

/* Parses a duration like "500ms", "2s", "100us", "1.5s" into nanoseconds. */
int ap_parse_duration(const char *s, uint64_t *out_ns);

/* Monotonic clock in ns. */
uint64_t ap_now_ns(void);

/* The length of the well-formed UTF-8 sequence at s (1 for ASCII, NUL
 * and control characters included; up to 4), 0 when the bytes there are
 * not one (a stray continuation byte, an overlong form, a surrogate, past
 * U+10FFFF, a sequence cut short). */
size_t ap_utf8_len(const unsigned char *s);

/* Whether s is well-formed UTF-8 throughout. */
bool ap_utf8_valid(const char *s);

/* Appends s with every byte that does not start a well-formed UTF-8
 * sequence replaced by U+FFFD: what JSON, XML and protobuf strings can
 * hold, whatever a symbol, a path or a thread name holds. */
void ap_buf_add_utf8(struct ap_buf *b, const char *s);

/* Text for a terminal. A symbol, a path, a thread name or a command line
 * comes from the profiled program, which can put into it what a terminal
 * acts on: ESC sequences (a window title, a clear screen, OSC 52
 * clipboard writes), other C0 and C1 controls, DEL, the bidirectional
 * formatting characters (U+202E turns what follows around), invalid UTF-8.
 * Every text output shows those escaped instead: a byte as \xNN (C0
 * controls, invalid UTF-8), a character as \uNNNN (DEL, C1, bidi: also
 * what a JSON string means by it, so that JSON passing through keeps its
 * meaning); everything else,
 * backslashes included, as it is. AP_SAFE_LINES keeps \n and \t (whole
 * lines of output), AP_SAFE_TABS \t (one line: a source line); without
 * them they are escaped too (a name in a row). */
#define AP_SAFE_LINES 1u
#define AP_SAFE_TABS 2u

/* One character of the `avail` bytes at p: its text to show into out (up
 * to 12 bytes, not NUL-terminated) and *outlen; returns the bytes it took
 * (at least 1), or 0 when p holds the start of a UTF-8 sequence cut by
 * `avail` (more bytes are needed to tell). */
size_t ap_safe_char(const unsigned char *p, size_t avail, unsigned flags, char out[12],
		    size_t *outlen);

/* Appends the first len bytes of s, made safe (above). */
void ap_buf_add_safe(struct ap_buf *b, const char *s, size_t len, unsigned flags);

/* Dies of signal s as if it had never been caught (its action made the
 * default, unblocked, raised), so that a parent sees what it would see of
 * a command that did not catch it (WIFSIGNALED: a shell's 130 for Ctrl-C,
 * "Terminated", Python's returncode -15); without a core dump of ours:
 * record relays the program's death, and the program's core is its own.
 * Output is flushed first. Exits with 128 + s if s does not end the
 * process. */
void ap_die_of_signal(int s) __attribute__((noreturn));

/* s made safe (above) without AP_SAFE_LINES, in a buffer of the caller's
 * that the next call with it replaces (the text stays valid until then). */
const char *ap_safe_name(struct ap_buf *b, const char *s);

#endif
