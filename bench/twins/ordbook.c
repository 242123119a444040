/* ordbook (built with clang): an order book, a cache mixing long and
 * short lives. 20,000 resting orders of 48-96 B (a header and a client
 * tag) live in a hash table by id (32768 chained buckets) and an array
 * (to pick one at random). Each request is one of: add an order
 * (order_new: malloc, inserted), cancel a random one (unlinked, freed),
 * or, one request in ten, match an incoming order against resting ones:
 * a burst of 1-40 fills, each against a random resting order (reduced,
 * and freed when fully filled), each with a fill report of 200-600 B
 * (fill_new: malloc, every byte written: the execution report the
 * exchange would send) kept in the request's list; at the end of the
 * request the reports are published (checksummed) and freed. Adds and
 * cancels keep the book at 20,000 +- 64 orders.
 * A pool of fill reports should help a little, if at all: the reports
 * come in bursts (20 a match on average), glibc serves most of them from
 * tcache (7 blocks per 16-byte size class, 26 classes) and the rest from
 * its small bins among the orders' holes; a vpool serves one of a burst
 * from its private slot and the others through its locked per-CPU deque,
 * and hands back a smaller report than asked now and then (a small hit:
 * freed and allocated anew).
 * Twin: fill_new takes the report from a vpool (tw_get), fill_free puts
 * it back; the orders are the plain program's. */
// site: fill_new
// cc: clang
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define TARGET 20000
#define BUCKETS 32768
#define MAXLIVE (TARGET + 4096)

struct order {
	struct order *next;	/* the bucket's chain */
	uint64_t id;
	int64_t price;
	uint32_t qty;
	uint32_t idx;		/* in live[] */
	uint16_t side;
	uint16_t taglen;
	char tag[];		/* 8-56 bytes: 48-96 B in all */
};

struct fill {
	struct fill *next;	/* the request's list */
	uint64_t maker, taker;
	int64_t price;
	uint32_t qty;
	uint32_t len;		/* of text */
	char text[];		/* 160-560 bytes: 200-600 B in all */
};

static struct order *bucket[BUCKETS];
static struct order *live[MAXLIVE];
static uint32_t nlive;

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct order *order_new(uint64_t id, uint64_t r)
{
	size_t taglen = 8 + (size_t)(r % 49);
	size_t n = sizeof(struct order) + taglen;
	struct order *o = malloc(n);
	TW_ALLOC(n);
	if (!o)
		abort();
	o->id = id;
	o->price = 10000 + (int64_t)((r >> 8) % 200) - 100;
	o->qty = 1 + (uint32_t)((r >> 16) % 500);
	o->side = (uint16_t)((r >> 28) & 1);
	o->taglen = (uint16_t)taglen;
	for (size_t k = 0; k < taglen; k++)
		o->tag[k] = (char)('A' + (id + k * 7) % 26);
	tw_sink = o;
	return o;
}

TW_SITE static void order_free(struct order *o)
{
	TW_FREE(sizeof(struct order) + o->taglen);
	free(o);
}

/* A fill report of n bytes in all, every byte of its text written
 * (digits of a sequence seeded by the fill's fields, and the maker's tag,
 * eight bytes of each in turn). */
TW_SITE static struct fill *fill_new(size_t n, const struct order *maker, uint64_t taker,
				     uint32_t qty)
{
#ifdef TWIN
	struct fill *f = tw_get(&pool, n);
#else
	struct fill *f = malloc(n);
#endif
	TW_ALLOC(n);
	if (!f)
		abort();
	f->next = NULL;
	f->maker = maker->id;
	f->taker = taker;
	f->price = maker->price;
	f->qty = qty;
	f->len = (uint32_t)(n - sizeof(struct fill));
	uint64_t v = maker->id * 0x9e3779b97f4a7c15ULL ^ taker ^ ((uint64_t)qty << 40), tag;
	memcpy(&tag, maker->tag, 8);
	uint32_t k = 0;
	for (; k + 16 <= f->len; k += 16) {
		v = v * 6364136223846793005ULL + 1442695040888963407ULL;
		/* eight digits '0'-'7' from v, then the maker's tag */
		uint64_t digits = 0x3030303030303030ULL | (v & 0x0707070707070707ULL);
		memcpy(f->text + k, &digits, 8);
		memcpy(f->text + k + 8, &tag, 8);
	}
	for (; k < f->len; k++)
		f->text[k] = maker->tag[k % 8];
	tw_sink = f;
	return f;
}

TW_SITE static void fill_free(struct fill *f)
{
	TW_FREE(sizeof(struct fill) + f->len);
#ifdef TWIN
	vpool_put(&pool, f);
#else
	free(f);
#endif
}

static uint32_t hash_of(uint64_t id)
{
	return (uint32_t)((id * 0x9e3779b97f4a7c15ULL) >> 49);	/* 15 bits */
}

static void book_add(struct order *o)
{
	uint32_t h = hash_of(o->id);
	o->next = bucket[h];
	bucket[h] = o;
	o->idx = nlive;
	live[nlive++] = o;
}

/* Takes o out of the book (by its id, through its bucket) and frees it. */
static void book_remove(struct order *o)
{
	struct order **pp = &bucket[hash_of(o->id)];
	while (*pp != o)
		pp = &(*pp)->next;
	*pp = o->next;
	struct order *last = live[--nlive];
	live[o->idx] = last;
	last->idx = o->idx;
	order_free(o);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3000000;
	uint64_t rng = 0x0b00c0ffee123457ULL, sum = 0, next_id = 1, fills = 0;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (uint32_t i = 0; i < TARGET; i++)
		book_add(order_new(next_id++, tw_rand(&rng)));
	for (long r = 0; r < n; r++) {
		uint64_t v = tw_rand(&rng);
		unsigned kind = (unsigned)(v % 100);
		if (kind < 10) {
			/* match: a burst of 1-40 fills against random resting orders */
			unsigned burst = 1 + (unsigned)((v >> 8) % 40);
			uint64_t taker = next_id++;
			struct fill *head = NULL, **tail = &head;
			for (unsigned b = 0; b < burst && nlive > 0; b++) {
				uint64_t w = tw_rand(&rng);
				struct order *o = live[w % nlive];
				uint32_t q = 1 + (uint32_t)((w >> 32) % 120);
				if (q > o->qty)
					q = o->qty;
				size_t size = 200 + (size_t)((w >> 20) % 401);
				struct fill *f = fill_new(size, o, taker, q);
				*tail = f;
				tail = &f->next;
				o->qty -= q;
				if (o->qty == 0)
					book_remove(o);
			}
			/* publish: checksum every report, then free them */
			while (head) {
				struct fill *f = head;
				head = f->next;
				uint64_t h = tw_mix(f->maker, f->taker ^ (uint64_t)f->price);
				uint64_t t = 0;
				for (uint32_t k = 0; k + 8 <= f->len; k += 8) {
					uint64_t x;
					memcpy(&x, f->text + k, 8);
					t += x ^ (x >> 13);
				}
				sum = tw_mix(sum, tw_mix(h, t + f->qty + f->len));
				fills++;
				fill_free(f);
			}
		} else if ((kind < 55 && nlive < TARGET + 64) || nlive < TARGET - 64) {
			book_add(order_new(next_id++, v >> 7));
		} else {
			struct order *o = live[(v >> 7) % nlive];
			sum = tw_mix(sum, o->id ^ o->qty);
			book_remove(o);
		}
	}
	while (nlive > 0)
		book_remove(live[nlive - 1]);
	printf("ordbook %ld requests %llu fills checksum %016llx\n", n, (unsigned long long)fills,
	       (unsigned long long)sum);
	return 0;
}
