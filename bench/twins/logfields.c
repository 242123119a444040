/* logfields: a line-oriented log parser. Each input line (generated:
 * an access log of `IP - user [date] "METHOD /path?query HTTP/1.1"
 * status bytes "referer" "agent"`, 90-400 bytes) is split into its nine
 * fields, each copied into a string of its own (field_dup, the strndup
 * every C parser has: 2-200 bytes), which the line's handler reads
 * (a status histogram, bytes per method, a hash of the paths and agents)
 * and frees at the end of the line.
 * A pool should LOSE, or save nothing worth having: nine to ten small
 * blocks a line, freed together, are what tcache and the small bins are
 * for; a pool serves one from its private slot and the rest through the
 * CPU's locked deque.
 * Twin: what a hand-pooler writes for strings of a parser: fixed 256-byte
 * blocks from a vpool (a field longer than 255 bytes from malloc),
 * put back at the end of the line. */
// site: field_dup
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define BLK 256

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static char *field_dup(const char *s, size_t n)
{
	char *d;
#ifdef TWIN
	d = n < BLK ? tw_get(&pool, BLK) : malloc(n + 1);
#else
	d = malloc(n + 1);
#endif
	TW_ALLOC(n + 1);
	if (!d)
		abort();
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

TW_SITE static void field_free(char *d)
{
	size_t n = strlen(d);
	TW_FREE(n + 1);
#ifdef TWIN
	if (n < BLK) {
		vpool_put(&pool, d);
		return;
	}
#endif
	free(d);
}

static const char *methods[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD", "GET"};
static const char *words[] = {"api", "v2", "users", "orders", "static", "img", "search", "cart",
			      "checkout", "login", "assets", "css", "js", "items", "report", "x"};
static const char *agents[] = {
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
	"curl/8.5.0", "Wget/1.21.4",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
	"python-requests/2.31.0", "Go-http-client/1.1"};

/* One generated log line into buf; its length. */
static size_t gen_line(char *buf, uint64_t *rng)
{
	uint64_t r = tw_rand(rng), r2 = tw_rand(rng);
	char *p = buf;
	p += sprintf(p, "%u.%u.%u.%u - ", (unsigned)(r & 255), (unsigned)(r >> 8 & 255),
		     (unsigned)(r >> 16 & 255), (unsigned)(r >> 24 & 255));
	if (r >> 32 & 1)
		p += sprintf(p, "user%u ", (unsigned)(r >> 33 & 1023));
	else
		p += sprintf(p, "- ");
	p += sprintf(p, "[06/Dec/2026:%02u:%02u:%02u +0000] \"%s /", (unsigned)(r2 % 24),
		     (unsigned)(r2 >> 8) % 60, (unsigned)(r2 >> 16) % 60, methods[r2 >> 24 & 7]);
	unsigned depth = 1 + (unsigned)(r2 >> 28) % 6;
	for (unsigned i = 0; i < depth; i++)
		p += sprintf(p, "%s/", words[tw_rand(rng) & 15]);
	if (r2 >> 40 & 1) {
		unsigned q = 1 + (unsigned)(r2 >> 41) % 5;
		*p++ = '?';
		for (unsigned i = 0; i < q; i++)
			p += sprintf(p, "%s%s=%u", i ? "&" : "", words[tw_rand(rng) & 15],
				     (unsigned)(tw_rand(rng) % 100000));
	}
	static const unsigned st[] = {200, 200, 200, 200, 304, 404, 500, 301};
	p += sprintf(p, " HTTP/1.1\" %u %u \"", st[r2 >> 50 & 7], (unsigned)(r2 >> 53) % 60000);
	if (r >> 44 & 1)
		p += sprintf(p, "https://example.org/%s/%s", words[r >> 45 & 15], words[r >> 49 & 15]);
	else
		*p++ = '-';
	p += sprintf(p, "\" \"%s\"", agents[(r >> 53) % 6]);
	return (size_t)(p - buf);
}

enum { F_IP, F_IDENT, F_USER, F_DATE, F_REQ, F_STATUS, F_BYTES, F_REFERER, F_AGENT, NF };

/* Split a line into its fields: bare words, [bracketed] and "quoted". */
static int parse_line(const char *s, size_t len, char **f)
{
	const char *e = s + len;
	int n = 0;
	while (s < e && n < NF) {
		while (s < e && *s == ' ')
			s++;
		if (s >= e)
			break;
		const char *b = s;
		char close = *s == '[' ? ']' : *s == '"' ? '"' : ' ';
		if (close != ' ') {
			b = ++s;
			while (s < e && *s != close)
				s++;
			f[n++] = field_dup(b, (size_t)(s - b));
			s++;
		} else {
			while (s < e && *s != ' ')
				s++;
			f[n++] = field_dup(b, (size_t)(s - b));
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400000;
	uint64_t rng = 0x1f2e3d4c5b6a7988ULL, h = 0;
	unsigned long status[6] = {0}, bytes_by_method[8] = {0};
	char line[1024];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long i = 0; i < n; i++) {
		size_t len = gen_line(line, &rng);
		char *f[NF + 1];
		int nf = parse_line(line, len, f);
		if (nf != NF)
			abort();
		/* the request's method, and its path split off its query */
		char *sp = strchr(f[F_REQ], ' ');
		char *path = field_dup(sp + 1, strcspn(sp + 1, "? "));
		f[nf++] = path;
		unsigned st = (unsigned)atoi(f[F_STATUS]);
		status[st / 100 < 6 ? st / 100 : 0]++;
		bytes_by_method[(unsigned char)f[F_REQ][0] & 7] += strtoul(f[F_BYTES], NULL, 10);
		for (const char *c = path; *c; c++)
			h = tw_mix(h, (unsigned char)*c);
		h = tw_mix(h, strlen(f[F_AGENT]) ^ (uint64_t)strlen(f[F_USER]) << 8);
		for (int k = 0; k < nf; k++)
			field_free(f[k]);
	}
	for (int k = 0; k < 6; k++)
		h = tw_mix(h, status[k]);
	for (int k = 0; k < 8; k++)
		h = tw_mix(h, bytes_by_method[k]);
	printf("logfields %ld lines checksum %016llx\n", n, (unsigned long long)h);
	return 0;
}
