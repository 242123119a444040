/* Shared utilities: error detail, growable buffer, checked allocation, units. */
#include "ap_util.h"

#include <ctype.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char ap_buf_empty[1];

int ap_error_set(struct ap_error *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void oom(size_t n)
{
	fprintf(stderr, "allocprof: out of memory: cannot allocate %zu bytes\n", n);
	exit(AP_EXIT_FAIL);
}

void *ap_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *ap_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *ap_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *ap_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = ap_xmalloc(n);
	memcpy(p, s, n);
	return p;
}

void ap_buf_init(struct ap_buf *b)
{
	b->buf = ap_buf_empty;
	b->len = 0;
	b->alloc = 0;
}

void ap_buf_release(struct ap_buf *b)
{
	if (b->alloc)
		free(b->buf);
	ap_buf_init(b);
}

void ap_buf_grow(struct ap_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->alloc)
		return;
	size_t n = b->alloc ? b->alloc * 2 : 64;
	while (n < need)
		n *= 2;
	if (!b->alloc) {
		b->buf = ap_xmalloc(n);
		b->buf[0] = 0;
	} else {
		b->buf = ap_xrealloc(b->buf, n);
	}
	b->alloc = n;
}

void ap_buf_add(struct ap_buf *b, const void *data, size_t len)
{
	ap_buf_grow(b, len);
	memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = 0;
}

void ap_buf_addstr(struct ap_buf *b, const char *s)
{
	ap_buf_add(b, s, strlen(s));
}

void ap_buf_add_shell_word(struct ap_buf *b, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_./:@%+=,-") == strlen(s)) {
		ap_buf_addstr(b, s);
		return;
	}
	ap_buf_addstr(b, "'");
	for (; *s; s++)
		if (*s == '\'')
			ap_buf_addstr(b, "'\\''");
		else
			ap_buf_add(b, s, 1);
	ap_buf_addstr(b, "'");
}

void ap_buf_addf(struct ap_buf *b, const char *fmt, ...)
{
	if (!fmt) /* never; but gcc -fsanitize=undefined warns (format-truncation) without it */
		return;
	va_list ap;
	va_start(ap, fmt);
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0) {
		ap_buf_grow(b, (size_t)n);
		vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap2);
		b->len += (size_t)n;
	}
	va_end(ap2);
}

void ap_buf_reset(struct ap_buf *b)
{
	b->len = 0;
	if (b->alloc)
		b->buf[0] = 0;
}

char *ap_buf_detach(struct ap_buf *b, size_t *len)
{
	char *r;
	if (len)
		*len = b->len;
	if (!b->alloc) {
		r = ap_xmalloc(1);
		r[0] = 0;
	} else {
		r = b->buf;
	}
	ap_buf_init(b);
	return r;
}

static const char *const byte_units[] = { "B", "kB", "MB", "GB", "TB", "PB" };

int ap_bytes_unit(double bytes)
{
	double v = fabs(round(bytes));
	int u = 0;
	while (u + 1 < (int)AP_ARRAY_SIZE(byte_units) && v >= ldexp(1.0, 10 * (u + 1)))
		u++;
	return u;
}

void ap_format_bytes_in(char *out, size_t outlen, double bytes, int unit)
{
	/* As pprof's measurement.ScaledLabel: the value as an integer,
	 * scaled, "%.2f" with a trailing ".00" dropped, and a bare "0" for
	 * what prints as zero. */
	char num[64];
	snprintf(num, sizeof(num), "%.2f", round(bytes) / ldexp(1.0, 10 * unit));
	size_t n = strlen(num);
	if (n > 3 && !strcmp(num + n - 3, ".00"))
		num[n - 3] = 0;
	if (!strcmp(num, "0") || !strcmp(num, "-0")) {
		snprintf(out, outlen, "0");
		return;
	}
	snprintf(out, outlen, "%s%s", num, byte_units[unit]);
}

void ap_format_bytes(char *out, size_t outlen, double bytes)
{
	ap_format_bytes_in(out, outlen, bytes, ap_bytes_unit(bytes));
}

int ap_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v >= 0)) /* (NaN too) */
		return -1;
	double mult = 1;
	char u = (char)tolower((unsigned char)*end);
	if (*end) {
		switch (u) {
		case 'b':
			mult = 1;
			break;
		case 'k':
			mult = 1024.0;
			break;
		case 'm':
			mult = 1024.0 * 1024;
			break;
		case 'g':
			mult = 1024.0 * 1024 * 1024;
			break;
		case 't':
			mult = 1024.0 * 1024 * 1024 * 1024;
			break;
		default:
			return -1;
		}
		end++;
		if (u != 'b') {
			if (*end == 'i' || *end == 'I')
				end++;
			if (*end == 'b' || *end == 'B')
				end++;
		}
		if (*end)
			return -1;
	}
	double r = v * mult;
	if (r >= 18446744073709551615.0)
		return -1;
	*out = (uint64_t)(r + 0.5);
	return 0;
}

int ap_parse_duration(const char *s, uint64_t *out_ns)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v >= 0)) /* (NaN too) */
		return -1;
	double mult;
	if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "us") || !strcmp(end, "µs"))
		mult = 1e3;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "s") || !*end)
		mult = 1e9;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mult = 60e9;
	else
		return -1;
	double r = v * mult;
	if (r >= 1.8e19)
		return -1;
	*out_ns = (uint64_t)(r + 0.5);
	return 0;
}

uint64_t ap_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t ap_utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (!n || s[0] > 0xf4)
		return 0;
	uint32_t c = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

bool ap_utf8_valid(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = ap_utf8_len(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

/* Whether code point c must not reach a terminal as it is (ap_util.h,
 * "Text for a terminal"). */
static bool unsafe_cp(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

size_t ap_safe_char(const unsigned char *p, size_t avail, unsigned flags, char out[12],
		    size_t *outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	uint32_t c = p[0];
	if (n > 1 && p[0] <= 0xf4) {
		c &= 0x7fu >> n;
		for (size_t i = 1; i < n; i++) {
			if (i >= avail)
				return 0; /* cut: the rest may come */
			if ((p[i] & 0xc0) != 0x80) {
				n = 0;
				break;
			}
			c = c << 6 | (p[i] & 0x3f);
		}
		static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
		if (n && (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)))
			n = 0;
	} else if (n > 1) {
		n = 0;
	}
	if (!n) { /* not UTF-8: the byte */
		memcpy(out, "\\x", 2);
		out[2] = hex[p[0] >> 4];
		out[3] = hex[p[0] & 15];
		*outlen = 4;
		return 1;
	}
	if (!unsafe_cp(c) || ((flags & AP_SAFE_LINES) && c == '\n') ||
	    ((flags & (AP_SAFE_LINES | AP_SAFE_TABS)) && c == '\t')) {
		memcpy(out, p, n);
		*outlen = n;
	} else if (c < 0x7f) {
		memcpy(out, "\\x", 2);
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		*outlen = 4;
	} else {
		memcpy(out, "\\u", 2);
		for (int i = 0; i < 4; i++)
			out[2 + i] = hex[(c >> (12 - 4 * i)) & 15];
		*outlen = 6;
	}
	return n;
}

void ap_buf_add_safe(struct ap_buf *b, const char *s, size_t len, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	while (len) {
		char out[12];
		size_t olen, n = ap_safe_char(p, len, flags, out, &olen);
		if (!n) { /* a sequence cut at the end: its bytes, escaped */
			static const char hex[] = "0123456789abcdef";
			out[0] = '\\';
			out[1] = 'x';
			out[2] = hex[p[0] >> 4];
			out[3] = hex[p[0] & 15];
			olen = 4;
			n = 1;
		}
		ap_buf_add(b, out, olen);
		p += n;
		len -= n;
	}
}

const char *ap_safe_name(struct ap_buf *b, const char *s)
{
	ap_buf_reset(b);
	ap_buf_add_safe(b, s, strlen(s), 0);
	return b->buf;
}

void ap_buf_add_utf8(struct ap_buf *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = ap_utf8_len(p);
		if (n)
			ap_buf_add(b, p, n);
		else
			ap_buf_addstr(b, "\xef\xbf\xbd");
		p += n ? n : 1;
	}
}

unsigned ap_cpus_here(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN); /* more CPUs than a cpu_set_t */
	return n > 0 ? (unsigned)n : 1;
}

void ap_die_of_signal(int s)
{
	fflush(NULL);
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(s, &dfl, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, s);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(s);
	exit(128 + s);
}
