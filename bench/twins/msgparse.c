/* msgparse: a message reader that does not know a message's length
 * until it has read it all. A reader thread receives a stream of
 * header-style messages ("Key: value\r\n" lines closed by an empty line,
 * 200 B to 16 KiB, log-uniform) in packets of 64-1460 bytes, as recv()
 * hands them out; each message is gathered in a buffer of its own that
 * starts at 256 bytes and doubles by realloc as packets arrive
 * (buf_grow), until the closing empty line is in it. The complete
 * message is then copied into a block of exactly its length (msg_copy)
 * and handed to a consumer thread through a ring of 128 slots (a mutex
 * and two condition variables, each side woken only when it waits); the
 * gathering buffer is freed. The consumer parses the copy's lines (a
 * count of headers, a digest of their values) and frees it.
 * The site is the gathering buffer (buf_new, grown in buf_grow):
 * born, grown 0-6 times and freed on the reader, one a message. The
 * copies cross threads, in glibc either way.
 * Twin: what a hand-pooler does with such a buffer: buf_new takes a
 * buffer from a vpool and keeps the capacity it has (malloc_usable_size),
 * so that after a while no message grows it; buf_free puts it back. */
// site: buf_new
// threaded
// libs: -lm
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_THREADED 1
#include "twin.h"

struct rbuf {
	char *p;
	size_t len, cap;
#ifdef TWIN
	size_t plain_cap;	/* the plain program's capacity (pacing) */
#endif
};

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static void buf_new(struct rbuf *b)
{
#ifdef TWIN
	b->p = vpool_get(&pool);
	b->cap = b->p ? malloc_usable_size(b->p) : 0;
	if (!b->p) {
		b->p = malloc(256);
		b->cap = 256;
	}
	b->plain_cap = 256;
#else
	b->p = malloc(256);
	b->cap = 256;
#endif
	TW_ALLOC(256);
	if (!b->p)
		abort();
	b->len = 0;
}

TW_SITE static void buf_grow(struct rbuf *b, size_t need)
{
#ifdef TWIN
	while (b->plain_cap < need) {
		TW_REALLOC(b->plain_cap, 2 * b->plain_cap);
		b->plain_cap *= 2;
	}
	if (b->cap >= need)
		return;
#endif
	size_t cap = b->cap;
	while (cap < need)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		abort();
	b->p = p;
	b->cap = cap;
}

TW_SITE static void buf_free(struct rbuf *b)
{
#ifdef TWIN
	TW_FREE(b->plain_cap);
	vpool_put(&pool, b->p);
#else
	free(b->p);
#endif
	b->p = NULL;
}

TW_SITE static char *msg_copy(const char *s, size_t n)
{
	char *c = malloc(n);
	TW_ALLOC(n);
	if (!c)
		abort();
	memcpy(c, s, n);
	return c;
}

#define SLOTS 128
static char *q[SLOTS];
static size_t qn[SLOTS];
static unsigned long qhead, qtail;
static int full_waiting, empty_waiting;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long nmsgs;
static uint64_t csum;

static const char *const keys[] = {
	"Host", "User-Agent", "Accept", "Accept-Encoding", "Content-Type", "X-Request-Id",
	"Cookie", "Authorization", "X-Forwarded-For", "Cache-Control", "Traceparent", "Via",
};

/* The next message of the stream into out (the peer's side): its length. */
static size_t gen_message(uint64_t *rng, char *out)
{
	unsigned e = (unsigned)(tw_rand(rng) % 6490);
	size_t target = (size_t)(200.0 * __builtin_exp2((double)e / 1024.0));
	size_t n = 0;
	while (n + 4 < target) {
		uint64_t r = tw_rand(rng);
		const char *k = keys[r % 12];
		size_t kl = strlen(k), vl = 4 + (size_t)((r >> 8) % 120);
		if (n + kl + vl + 4 + 2 > target + 120)
			vl = 4;
		memcpy(out + n, k, kl);
		n += kl;
		out[n++] = ':';
		out[n++] = ' ';
		for (size_t i = 0; i < vl; i++)
			out[n++] = (char)('!' + ((r >> (i % 50)) + i * 7) % 90);
		out[n++] = '\r';
		out[n++] = '\n';
	}
	out[n++] = '\r';
	out[n++] = '\n';
	return n;
}

static void send_msg(char *m, size_t n)
{
	pthread_mutex_lock(&qlock);
	while (qhead - qtail == SLOTS) {
		full_waiting = 1;
		pthread_cond_wait(&notfull, &qlock);
	}
	q[qhead % SLOTS] = m;
	qn[qhead % SLOTS] = n;
	qhead++;
	int wake = empty_waiting;
	empty_waiting = 0;
	pthread_mutex_unlock(&qlock);
	if (wake)
		pthread_cond_signal(&notempty);
}

static void *reader(void *arg)
{
	(void)arg;
	uint64_t rng = 0x1234abcd5678ef01ULL, prng = 0x0badc0ffee15900dULL;
	static char wire[24 << 10];
	for (long m = 0; m < nmsgs; m++) {
		size_t total = gen_message(&rng, wire), off = 0;
		struct rbuf b;
		buf_new(&b);
		/* packets until the message's closing empty line is in */
		for (;;) {
			size_t pk = 64 + (size_t)(tw_rand(&prng) % 1397);
			if (pk > total - off)
				pk = total - off;
#ifdef TWIN
			if (b.len + pk > b.plain_cap)	/* grown where plain grows (pacing) */
#else
			if (b.len + pk > b.cap)
#endif
				buf_grow(&b, b.len + pk);
			memcpy(b.p + b.len, wire + off, pk);
			b.len += pk;
			off += pk;
			if (b.len >= 4 && memcmp(b.p + b.len - 4, "\r\n\r\n", 4) == 0)
				break;
		}
		char *c = msg_copy(b.p, b.len);
		buf_free(&b);
		send_msg(c, b.len);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	for (long m = 0; m < nmsgs; m++) {
		pthread_mutex_lock(&qlock);
		while (qhead == qtail) {
			empty_waiting = 1;
			pthread_cond_wait(&notempty, &qlock);
		}
		char *c = q[qtail % SLOTS];
		size_t n = qn[qtail % SLOTS];
		qtail++;
		int wake = full_waiting && qhead - qtail <= SLOTS / 2;
		if (wake)
			full_waiting = 0;
		pthread_mutex_unlock(&qlock);
		if (wake)
			pthread_cond_signal(&notfull);
		/* parse: headers, and a digest of their values */
		uint64_t h = n, lines = 0;
		const char *s = c, *end = c + n - 2;
		while (s < end) {
			const char *colon = memchr(s, ':', (size_t)(end - s));
			const char *eol = memchr(s, '\r', (size_t)(end - s));
			if (!colon || !eol)
				abort();
			for (const char *v = colon + 2; v < eol; v += 4)
				h = h * 31 + (unsigned char)*v;
			lines++;
			s = eol + 2;
		}
		sum = tw_mix(sum, tw_mix(h, lines));
		TW_FREE(n);
		free(c);
	}
	csum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nmsgs = argc > 1 ? atol(argv[1]) : 60000;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	pthread_t r, c;
	if (pthread_create(&c, NULL, consumer, NULL) || pthread_create(&r, NULL, reader, NULL))
		abort();
	pthread_join(r, NULL);
	pthread_join(c, NULL);
	printf("msgparse %ld messages checksum %016llx\n", nmsgs, (unsigned long long)csum);
	return 0;
}
