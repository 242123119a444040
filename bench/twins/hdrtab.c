/* hdrtab: an HTTP-like request handler. Each request's header block
 * (generated: 6-30 headers, a few standard ones and X-* extensions,
 * names of 2-28 bytes, values of 1-180) is parsed line by line into a
 * chained hash table of 64 buckets (on the stack, cleared per request):
 * one entry a header, malloc'd with its name and value inline (a 32-byte
 * head and the strings: 40-220 bytes). The handler looks up Host,
 * Content-Length, Accept-Encoding, Cookie and a missing header, hashes
 * every value (a routing key), and tears the table down: every entry
 * freed, bucket by bucket (not in the order they were made).
 * A pool should LOSE, or save nothing worth having: tcache and the small
 * bins serve 40-220 bytes in a few ns; a pool of entries serves one from
 * its private slot and the rest through the CPU's locked deque.
 * Twin: entries from a vpool of fixed 256-byte blocks (a longer header
 * from malloc), put back at the teardown. Built with clang. */
// site: hdr_new
// cc: clang
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "twin.h"

#define NB 64
#define BLK 256

struct hdr {
	struct hdr *next;
	uint32_t hash;
	uint16_t nlen, vlen;
	const char *value;
	size_t size;
	char name[];
};

#ifdef TWIN
static struct vpool pool;
#endif

static uint32_t hash_name(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint32_t)(s[i] | 0x20)) * 16777619u;
	return h;
}

TW_SITE static struct hdr *hdr_new(const char *name, size_t nlen, const char *val, size_t vlen)
{
	size_t sz = sizeof(struct hdr) + nlen + vlen + 2;
	struct hdr *e;
#ifdef TWIN
	e = sz <= BLK ? tw_get(&pool, BLK) : malloc(sz);
#else
	e = malloc(sz);
#endif
	TW_ALLOC(sz);
	if (!e)
		abort();
	e->size = sz;
	e->nlen = (uint16_t)nlen;
	e->vlen = (uint16_t)vlen;
	memcpy(e->name, name, nlen);
	e->name[nlen] = 0;
	memcpy(e->name + nlen + 1, val, vlen);
	e->name[nlen + 1 + vlen] = 0;
	e->value = e->name + nlen + 1;
	e->hash = hash_name(name, nlen);
	return e;
}

TW_SITE static void hdr_free(struct hdr *e)
{
	TW_FREE(e->size);
#ifdef TWIN
	if (e->size <= BLK) {
		vpool_put(&pool, e);
		return;
	}
#endif
	free(e);
}

static const char *find(struct hdr **tab, const char *name)
{
	size_t n = strlen(name);
	uint32_t h = hash_name(name, n);
	for (struct hdr *e = tab[h % NB]; e; e = e->next)
		if (e->hash == h && e->nlen == n && !strncasecmp(e->name, name, n))
			return e->value;
	return NULL;
}

static const char *std_names[] = {"Host", "User-Agent", "Accept", "Accept-Encoding",
				  "Accept-Language", "Connection", "Cookie", "Content-Length",
				  "Content-Type", "Referer", "Cache-Control", "If-None-Match"};

/* One request's header block into buf; its length. */
static size_t gen_headers(char *buf, uint64_t *rng)
{
	char *p = buf;
	unsigned n = 6 + (unsigned)(tw_rand(rng) % 25);
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = tw_rand(rng);
		if (i < 12 && (r & 3))
			p += sprintf(p, "%s: ", std_names[i]);
		else
			p += sprintf(p, "X-Ext-%0*u: ", 1 + (int)(r >> 2 & 15), (unsigned)(r >> 8 & 0xffff));
		/* values: mostly short, cookies and agents long */
		unsigned vl = (r >> 24 & 7) == 0 ? 60 + (unsigned)(r >> 27) % 120 : 1 + (unsigned)(r >> 27) % 40;
		for (unsigned k = 0; k < vl; k++)
			*p++ = (char)('a' + (tw_rand(rng) >> 59) % 26 + (k % 11 == 10 ? -50 : 0));
		*p++ = '\r';
		*p++ = '\n';
	}
	*p++ = '\r';
	*p++ = '\n';
	return (size_t)(p - buf);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	uint64_t rng = 0x5eed5eed5eed5eedULL, sum = 0;
	static char buf[16384];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		size_t len = gen_headers(buf, &rng);
		struct hdr *tab[NB];
		memset(tab, 0, sizeof tab);
		const char *s = buf, *e = buf + len;
		while (s < e) {
			const char *eol = memchr(s, '\r', (size_t)(e - s));
			if (!eol || eol == s)
				break;
			const char *colon = memchr(s, ':', (size_t)(eol - s));
			if (colon) {
				const char *v = colon + 1;
				while (v < eol && *v == ' ')
					v++;
				struct hdr *h = hdr_new(s, (size_t)(colon - s), v, (size_t)(eol - v));
				h->next = tab[h->hash % NB];
				tab[h->hash % NB] = h;
			}
			s = eol + 2;
		}
		static const char *want[] = {"host", "content-length", "accept-encoding", "cookie", "x-missing"};
		for (int i = 0; i < 5; i++) {
			const char *v = find(tab, want[i]);
			sum = tw_mix(sum, v ? hash_name(v, strlen(v)) : 0);
		}
		for (int b = 0; b < NB; b++)
			for (struct hdr *h = tab[b], *nx; h; h = nx) {
				nx = h->next;
				sum = tw_mix(sum, h->hash ^ h->vlen);
				hdr_free(h);
			}
	}
	printf("hdrtab %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
