/* memstream: a report written per request with open_memstream and
 * fprintf (a status page, a log record, a protocol reply assembled in
 * memory): a header line, 10 to 200 lines (uniform) of 20 to 200 bytes
 * each (uniform; items and notes, by two fprintf lines) and a footer;
 * then fclose, the report hashed (all of it, by 8-byte words) and
 * freed.
 * The allocations happen inside glibc (2.36): open_memstream mallocs its
 * FILE and callocs an 8 KiB buffer; a write that overflows the buffer
 * (inside fprintf, _IO_str_overflow) mallocs 2n + 100 bytes, copies,
 * clears the rest and frees the old one (8192, 16484, 33068, 66236);
 * fclose reallocs the buffer to the report's size (+1) and frees the
 * FILE; the program frees the report: 2 to 5 blocks and a realloc. The site
 * allocprof should name is the program's function that makes the report,
 * report_make (the FILE and buffer at its open_memstream line, the
 * growths at its fprintf lines, the last realloc at its fclose line).
 * Twin: what a hand-pooler writes instead: report_make takes a buffer
 * from a vpool (a miss: 8 KiB, as open_memstream's) and formats each
 * line with vsnprintf at the report's end; a line that does not fit
 * grows the buffer (realloc to twice its capacity, or what the line
 * needs) and is formatted again. No FILE, no final realloc: the buffer
 * goes back to the pool with the capacity it reached. The reports are
 * the same bytes. */
// site: report_make
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

/* The program's own work, the same code at the same alignment in plain
 * and twin (a loop's placement across a 64-byte line moved one of
 * bigbuild's loops by 20 % on an AMD EPYC). */
#define TW_WORK __attribute__((noinline, aligned(64)))

#define MEMFILE 504	/* open_memstream's FILE (valgrind: 504 bytes) */

static char text[4096];
static const char *users[] = { "root", "www-data", "alice", "bob", "carol", "nobody",
			       "postgres", "a-rather-long-service-account" };

struct rep {
	char *p;
	size_t len, cap;
};

#ifdef TWIN
static struct vpool pool;

/* Appends a line formatted as printf does; grows the buffer when it does
 * not fit. */
__attribute__((format(printf, 2, 3))) static void rep_printf(struct rep *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(r->p + r->len, r->cap - r->len, fmt, ap);
	va_end(ap);
	if (k < 0)
		abort();
	if ((size_t)k >= r->cap - r->len) {
		size_t cap = 2 * r->cap;
		if (cap < r->len + (size_t)k + 1)
			cap = r->len + (size_t)k + 1;
		char *p = realloc(r->p, cap);
		if (!p)
			abort();
		r->p = p;
		r->cap = malloc_usable_size(p);
		va_start(ap, fmt);
		if (vsnprintf(r->p + r->len, r->cap - r->len, fmt, ap) != k)
			abort();
		va_end(ap);
	}
	r->len += (size_t)k;
}

/* The bytes glibc's memstream allocates and frees for a report of len
 * bytes, counted for the cycle pacing as the plain program's. */
static void tw_memstream_bytes(size_t len)
{
	size_t blen = 8192;
	TW_ALLOC(MEMFILE);
	TW_ALLOC(blen);
	while (len > blen) {
		size_t nb = 2 * blen + 100;
		TW_ALLOC(nb);
		TW_FREE(blen);
		blen = nb;
	}
	TW_REALLOC(blen, len + 1);
	TW_FREE(MEMFILE);
}
#define PRINTF(f, ...) rep_printf(&r, __VA_ARGS__)
#else
#define PRINTF(f, ...) fprintf(f, __VA_ARGS__)
#endif

/* A piece of text for a line of want bytes whose fixed part is fixed. */
static int piece(size_t want, size_t fixed, uint64_t *rng, const char **s)
{
	size_t l = want > fixed ? want - fixed : 1;
	*s = text + tw_rand(rng) % (sizeof(text) - l);
	return (int)l;
}

/* The report of request id; its length in *len. */
TW_SITE static char *report_make(long id, uint64_t *rng, size_t *len)
{
#ifdef TWIN
	struct rep r;
	r.p = vpool_get(&pool);
	r.cap = r.p ? malloc_usable_size(r.p) : 0;
	if (!r.p) {
		r.p = malloc(8192);
		if (!r.p)
			abort();
		r.cap = malloc_usable_size(r.p);
	}
	r.len = 0;
	FILE *f = NULL;
	(void)f;
#else
	char *buf;
	size_t size;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		abort();
#endif
	unsigned lines = 10 + (unsigned)(tw_rand(rng) % 191), sum = 0;
	const char *user = users[tw_rand(rng) % 8];
	PRINTF(f, "report %ld user=%s lines=%u\n", id, user, lines);
	for (unsigned i = 0; i < lines; i++) {
		size_t want = 20 + (size_t)(tw_rand(rng) % 181);
		unsigned v = (unsigned)tw_rand(rng);
		const char *s;
		if (v & 1) {
			int l = piece(want, 40, rng, &s);
			PRINTF(f, "  item %4u name=%.*s qty=%3u price=%5u.%02u\n", i, l, s, v >> 24,
			       (v >> 8) & 0xffff, (v >> 1) % 100);
		} else {
			int l = piece(want, 18, rng, &s);
			PRINTF(f, "  note %4u %08x %.*s\n", i, v, l, s);
		}
		sum += v >> 8;
	}
	PRINTF(f, "total lines=%u sum=%u end %ld\n", lines, sum, id);
#ifdef TWIN
	tw_memstream_bytes(r.len);
	*len = r.len;
	tw_sink = r.p;
	return r.p;
#else
	if (fclose(f))
		abort();
	*len = size;
	tw_sink = buf;
	return buf;
#endif
}

/* The report's hash: all of it, by 8-byte words. */
TW_WORK static uint64_t report_hash(const char *m, size_t len)
{
	uint64_t h = len, w;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, m + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
	}
	for (; i < len; i++)
		h = h * 31 + (unsigned char)m[i];
	return h;
}

TW_SITE static void report_done(char *p, size_t len)
{
	TW_FREE(len + 1);
	(void)len;
#ifdef TWIN
	vpool_put(&pool, p);
#else
	free(p);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 40000;
	uint64_t rng = 0xa54ff53a5f1d36f1ULL, sum = 0;
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)('a' + tw_rand(&rng) % 26);
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		size_t len;
		char *m = report_make(r, &rng, &len);
		uint64_t h = report_hash(m, len);
		report_done(m, len);
		sum = tw_mix(sum, h);
	}
	printf("memstream %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
