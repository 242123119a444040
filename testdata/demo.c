/* The bundled demo: a toy request server. Each request is parsed into small
 * tokens, answered from a fresh 32 KiB response buffer (sized for the
 * largest response; these fill a few dozen bytes of it), and logged into a
 * buffer that grows over 1000 requests; a few results are kept in a cache
 * that is never freed.
 * `make demo` records it and shows top, list and advise on it:
 *  - render_response(): a 32 KiB buffer per request, freed right after — a
 *    pool would serve almost every request from a recycled buffer;
 *  - tokenize(): tiny strings, cheaper to malloc than to pool;
 *  - cache_result(): results the program keeps — nothing to pool;
 *  - log_append(): a buffer grown by realloc doubling. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESPONSE_SIZE (32 * 1024)

struct cache_entry {
	struct cache_entry *next;
	unsigned id;
	char digest[48];
};

static struct cache_entry *cache;

static unsigned tokenize(const char *req, char **tok, unsigned max)
{
	unsigned n = 0;
	const char *p = req;
	while (*p && n < max) {
		const char *e = strchr(p, ' ');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		tok[n] = malloc(len + 1);
		memcpy(tok[n], p, len);
		tok[n][len] = 0;
		n++;
		p = e ? e + 1 : p + len;
	}
	return n;
}

static uint32_t render_response(char **tok, unsigned n)
{
	char *buf = malloc(RESPONSE_SIZE);
	uint32_t sum = 0;
	size_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		size_t len = strlen(tok[i]);
		memcpy(buf + off, tok[i], len);
		off += len;
		buf[off++] = '\n';
	}
	for (size_t i = 0; i < off; i++)
		sum = sum * 31 + (unsigned char)buf[i];
	free(buf);
	return sum;
}

static void cache_result(unsigned id, uint32_t sum)
{
	struct cache_entry *c = malloc(sizeof(*c));
	c->id = id;
	snprintf(c->digest, sizeof(c->digest), "%08x", sum);
	c->next = cache;
	cache = c;
}

struct log {
	char *buf;
	size_t len, cap;
};

static void log_append(struct log *l, const char *line)
{
	size_t n = strlen(line);
	if (l->len + n + 1 > l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		while (l->len + n + 1 > l->cap)
			l->cap *= 2;
		l->buf = realloc(l->buf, l->cap);
	}
	memcpy(l->buf + l->len, line, n + 1);
	l->len += n;
}

int main(int argc, char **argv)
{
	unsigned requests = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 20000;
	uint32_t total = 0;
	for (unsigned batch = 0; batch < requests / 1000; batch++) {
		struct log log = { 0 };
		for (unsigned r = 0; r < 1000; r++) {
			char req[96], line[64];
			char *tok[8];
			unsigned id = batch * 1000 + r;
			snprintf(req, sizeof(req), "GET /item/%u HTTP/1.1 host example", id);
			unsigned n = tokenize(req, tok, 8);
			uint32_t sum = render_response(tok, n);
			if (id % 50 == 0)
				cache_result(id, sum);
			snprintf(line, sizeof(line), "%u %08x\n", id, sum);
			log_append(&log, line);
			for (unsigned i = 0; i < n; i++)
				free(tok[i]);
			total ^= sum;
		}
		free(log.buf);
	}
	printf("served %u requests, checksum %08x\n", requests, total);
	return 0;
}
