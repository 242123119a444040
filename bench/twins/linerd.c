/* linerd: a line reader written the way many C programs write it: for
 * each line `char *line = NULL; size_t cap = 0; getline(&line, &cap, f);`
 * then free(line), a fresh buffer per line. The lines, 20 to 2000 bytes
 * (log-uniform) of space-separated words, come from a 4 MiB text
 * generated at the start and read through fmemopen (no disk, no system
 * calls), rewound at its end; each line is parsed a little (its fields
 * counted, each field's length and first and last byte hashed).
 * The allocations happen inside glibc (2.36): getdelim mallocs 120 bytes
 * for a NULL line; when the line (with its NUL) does not fit, it
 * reallocs to what the line needs, at least twice the capacity (a line
 * split across two of the FILE's 8 KiB reads grows twice): one or two
 * blocks per line, 120 B to 4 KiB (and once the FILE's 8 KiB read
 * buffer). The site allocprof should name is line_read, whose getline
 * is bits/stdio.h's inline one, a call of __getdelim (-O2).
 * Twin: what a hand-pooler does instead of NULL and 0 per line:
 * line_read takes the line buffer from a vpool and passes it to getline
 * with its capacity (malloc_usable_size; a miss passes NULL and 0 and
 * getline mallocs, a buffer too small is grown by getline's realloc),
 * and line_done puts it back. */
// site: line_read
// libs: -lm
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "twin.h"

/* The program's own work, the same code at the same alignment in plain
 * and twin (a loop's placement across a 64-byte line moved one of
 * bigbuild's loops by 20 % on an AMD EPYC). */
#define TW_WORK __attribute__((noinline, aligned(64)))

#define TEXT (4u << 20)
#define FILEBUF 8192	/* the FILE's read buffer (BUFSIZ: a cookie FILE has no st_blksize) */

#ifdef TWIN
static struct vpool pool;

/* The bytes glibc's getdelim allocates for a line of len bytes (its
 * newline included) that starts at offset off of the text, read through
 * a buffer refilled at multiples of FILEBUF: counted for the cycle
 * pacing as the plain program's (a malloc of 120, a realloc for each
 * piece that does not fit, a free). */
static void tw_getline_bytes(size_t off, size_t len)
{
	size_t n = 120, cur = 0;
	TW_ALLOC(n);
	while (len) {
		size_t piece = FILEBUF - off % FILEBUF;
		if (piece > len)
			piece = len;
		size_t need = cur + piece + 1;
		if (need > n) {
			if (need < 2 * n)
				need = 2 * n;
			TW_REALLOC(n, need);
			n = need;
		}
		cur += piece;
		off += piece;
		len -= piece;
	}
	TW_FREE(n);
}
#endif

/* Reads the next line; its length in *len. */
TW_SITE static char *line_read(FILE *f, size_t *len)
{
#ifdef TWIN
	char *line = vpool_get(&pool);
	size_t cap = line ? malloc_usable_size(line) : 0;
#else
	char *line = NULL;
	size_t cap = 0;
#endif
	ssize_t k = getline(&line, &cap, f);
	if (k <= 0)
		abort();
	*len = (size_t)k;
	tw_sink = line;
	return line;
}

TW_SITE static void line_done(char *line)
{
#ifdef TWIN
	vpool_put(&pool, line);
#else
	free(line);
#endif
}

/* The line's fields: counted, each one's length and ends hashed. */
TW_WORK static uint64_t line_parse(const char *line, size_t len)
{
	uint64_t h = len, fields = 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && (line[i] == ' ' || line[i] == '\n'))
			i++;
		if (i == len)
			break;
		size_t s = i;
		while (i < len && line[i] != ' ' && line[i] != '\n')
			i++;
		fields++;
		h = h * 131 + (i - s) * 257 + (unsigned char)line[s] * 7 + (unsigned char)line[i - 1];
	}
	return h ^ fields << 48;
}

/* The text: lines of 20-2000 bytes (log-uniform, the newline included)
 * of words of 1-12 lowercase letters and digits, as many whole lines as
 * fit in TEXT bytes. Returns the text's size; *lines its lines. */
static size_t make_text(char *t, uint64_t *rng, size_t *lines)
{
	size_t off = 0;
	*lines = 0;
	for (;;) {
		unsigned e = (unsigned)(tw_rand(rng) % 6803);	/* log2(100) * 1024 */
		size_t l = (size_t)(20.0 * __builtin_exp2((double)e / 1024.0));
		if (off + l > TEXT)
			return off;
		size_t end = off + l - 1, w = 0;
		uint64_t r = tw_rand(rng);
		for (size_t i = off; i < end; i++) {
			if (w && (w >= 12 || (r & 7) == 0)) {
				t[i] = ' ';
				w = 0;
			} else {
				t[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[(r >> 3) % 36];
				w++;
			}
			r = r * 6364136223846793005ULL + 1442695040888963407ULL;
			r ^= r >> 29;
		}
		t[end] = '\n';
		off = end + 1;
		++*lines;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	uint64_t rng = 0x6a09e667f3bcc908ULL, sum = 0;
	char *text = malloc(TEXT);
	if (!text)
		abort();
	TW_ALLOC(TEXT);
	size_t lines, size = make_text(text, &rng, &lines);
	FILE *f = fmemopen(text, size, "r");
	if (!f)
		abort();
	TW_ALLOC(320);		/* fmemopen's cookie and FILE (valgrind: 320 bytes) */
	TW_ALLOC(FILEBUF);	/* the FILE's read buffer, malloc'd in the first getline */
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	size_t off = 0;	/* where the next line starts in the text */
	for (long r = 0; r < n; r++) {
		size_t len;
		char *line = line_read(f, &len);
#ifdef TWIN
		tw_getline_bytes(off, len);
#endif
		uint64_t h = line_parse(line, len);
		line_done(line);
		sum = tw_mix(sum, h);
		off += len;
		if (off == size) {
			rewind(f);
			off = 0;
		}
	}
	fclose(f);
	free(text);
	TW_FREE(TEXT);
	printf("linerd %ld lines (%zu in the text) checksum %016llx\n", n, lines,
	       (unsigned long long)sum);
	return 0;
}
