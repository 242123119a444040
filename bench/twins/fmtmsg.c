/* fmtmsg: a log or protocol message formatted per request by asprintf.
 * Each request formats a message of 100 to 3000 bytes (log-uniform):
 * an id, a user name, a status and four pieces of text (a path, a
 * referrer, an agent, a body) through "%.*s"; the message is hashed,
 * written to a FILE on /dev/null (a 64 KiB buffer of the program's, so
 * fopen's FILE is its one allocation) and freed.
 * The allocations happen inside glibc (2.36): vasprintf mallocs 100
 * bytes, _IO_str_overflow grows the buffer to 2 x size + 100 (a malloc,
 * a memcpy, a free: 100, 300, 700, 1500, 3100) and the end reallocs it
 * down to the message's size (or, if it would shrink to less than half,
 * mallocs that size, copies and frees): 3 to 6 blocks a message. The
 * site allocprof should name is fmt_msg, the program's frame that calls
 * asprintf.
 * Twin: what a hand-pooler replaces asprintf with: fmt_msg takes a
 * buffer from a vpool (a miss: 1 KiB) and snprintfs the message into
 * it; one that does not fit is formatted again into a buffer of its
 * size, which replaces the pooled one; fmt_done puts the buffer back. */
// site: fmt_msg
// libs: -lm
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define FMT "%ld user=%s status=%u path=/%.*s ref=%.*s agent=%.*s body=%.*s\n"

static char text[4096];
static const char *users[] = { "root", "www-data", "alice", "bob", "carol", "nobody",
			       "postgres", "a-rather-long-service-account" };

#ifdef TWIN
static struct vpool pool;

/* The bytes glibc's asprintf allocates and frees for a message of len
 * characters, counted for the cycle pacing as the plain program's. */
static void tw_asprintf_bytes(size_t len)
{
	size_t blen = 100;
	TW_ALLOC(blen);
	while (blen < len) {
		size_t nb = 2 * blen + 100;
		TW_ALLOC(nb);
		TW_FREE(blen);
		blen = nb;
	}
	if (blen / 2 <= len + 1) {
		TW_REALLOC(blen, len + 1);
	} else {
		TW_ALLOC(len + 1);
		TW_FREE(blen);
	}
}
#endif

struct req {
	long id;
	unsigned status;
	const char *user;
	int o[4], l[4];		/* offsets and lengths into text (within it) */
};

#define ARGS(q)                                                                                  \
	(q)->id, (q)->user, (q)->status, (q)->l[0], text + (q)->o[0], (q)->l[1], text + (q)->o[1], \
		(q)->l[2], text + (q)->o[2], (q)->l[3], text + (q)->o[3]

TW_SITE static char *fmt_msg(const struct req *q, size_t *len)
{
#ifdef TWIN
	char *m = vpool_get(&pool);
	size_t cap = m ? malloc_usable_size(m) : 0;
	if (!m) {
		m = malloc(1024);
		if (!m)
			abort();
		cap = malloc_usable_size(m);
	}
	int k = snprintf(m, cap, FMT, ARGS(q));
	if (k < 0)
		abort();
	if ((size_t)k >= cap) {
		free(m);
		m = malloc((size_t)k + 1);
		if (!m || snprintf(m, (size_t)k + 1, FMT, ARGS(q)) != k)
			abort();
	}
	tw_asprintf_bytes((size_t)k);
#else
	char *m;
	int k = asprintf(&m, FMT, ARGS(q));
	if (k < 0)
		abort();
#endif
	*len = (size_t)k;
	tw_sink = m;
	return m;
}

TW_SITE static void fmt_done(char *m, size_t len)
{
	TW_FREE(len + 1);
	(void)len;
#ifdef TWIN
	vpool_put(&pool, m);
#else
	free(m);
#endif
}

int main(int argc, char **argv)
{
	static char obuf[64 << 10];
	long n = argc > 1 ? atol(argv[1]) : 800000;
	uint64_t rng = 0xb7e151628aed2a6bULL, sum = 0;
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)(' ' + 1 + tw_rand(&rng) % 94);
	FILE *out = fopen("/dev/null", "w");
	if (!out || setvbuf(out, obuf, _IOFBF, sizeof(obuf)))
		abort();
	TW_ALLOC(472);	/* fopen's FILE */
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		struct req q = { .id = r * 7919 + 13 };
		q.status = (unsigned)(200 + tw_rand(&rng) % 400);
		q.user = users[tw_rand(&rng) % 8];
		/* 100 * 2^(0 .. log2 30): log-uniform 100-3000 bytes in all;
		 * the fixed part is 44-78, the pieces share the rest */
		unsigned e = (unsigned)(tw_rand(&rng) % 5023);
		size_t total = (size_t)(100.0 * __builtin_exp2((double)e / 1024.0));
		size_t fixed = 44 + strlen(q.user) + 7;
		size_t v = total > fixed ? total - fixed : 0;
		q.l[0] = (int)(v / 8), q.l[1] = (int)(v / 8), q.l[2] = (int)(v / 4);
		q.l[3] = (int)(v - (size_t)q.l[0] - (size_t)q.l[1] - (size_t)q.l[2]);
		for (int i = 0; i < 4; i++)
			q.o[i] = (int)(tw_rand(&rng) % (sizeof(text) - (size_t)q.l[i]));
		size_t len;
		char *m = fmt_msg(&q, &len);
		uint64_t h = len;
		for (size_t i = 0; i < len; i += 16)
			h = h * 31 + (unsigned char)m[i];
		if (fwrite(m, 1, len, out) != len)
			abort();
		fmt_done(m, len);
		sum = tw_mix(sum, h);
	}
	fclose(out);
	printf("fmtmsg %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
