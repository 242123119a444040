/* jsonnodes: a JSON parser building a tree per request. Each request
 * generates a JSON document (deterministically: objects of 2-8 members,
 * arrays of 2-12 elements, numbers, strings of 5-80 characters, true,
 * false and null, nested up to 6 deep, 150-600 values), parses it into a
 * tree of nodes, one malloc per node, its size by kind (null/true/false
 * 24 B, numbers 32 B, strings 40 B, arrays 48 B, objects 56 B), each
 * string value and member key copied into a malloc'd payload (6-81 B),
 * then walks the tree (sum of the numbers, deepest level, hash of the
 * strings) and frees it whole, as json-c's or cJSON's users do.
 * 15,000 documents by default: ~5.6 million nodes and ~4.5 million
 * strings, 20 million events, under the 33,554,432 that advise's
 * measured replay takes.
 * A pool of the nodes should LOSE, or gain nothing: every node size is
 * in glibc's tcache (7 blocks a size) and fastbins, a few nanoseconds a
 * malloc/free; a tree of a few hundred nodes freed whole puts all but one
 * through vpool's locked per-CPU deque, and a node of one kind gets a
 * pooled block of another (the model's "small hit") unless the pool is
 * split by size.
 * Twin: node_new takes nodes from a vpool per node size (the hand-pooler's
 * free list per kind: 24, 32, 40, 48 and 56 B), node_free puts them back;
 * the string payloads stay with malloc (their sizes vary byte by byte). */
// site: node_new
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

enum kind { J_NULL, J_TRUE, J_FALSE, J_NUM, J_STR, J_ARR, J_OBJ, J_KINDS };

struct jnode {
	uint8_t kind;
	uint32_t keylen;
	struct jnode *next; /* the next element or member of the parent */
	char *key;	    /* a member's key, NULL in arrays */
};
struct jnum {
	struct jnode h;
	double v;
};
struct jstr {
	struct jnode h;
	char *s;
	size_t len;
};
struct jarr {
	struct jnode h;
	struct jnode *first, *last;
	size_t n;
};
struct jobj {
	struct jarr a;
	uint64_t keyhash; /* of its members' keys, for a quick lookup */
};

static const size_t node_size[J_KINDS] = {
    sizeof(struct jnode), sizeof(struct jnode), sizeof(struct jnode), sizeof(struct jnum),
    sizeof(struct jstr),  sizeof(struct jarr),	sizeof(struct jobj),
};

#ifdef TWIN
/* One pool per node size: 24, 32, 40, 48, 56 B. */
static struct vpool pools[5];
static inline struct vpool *pool_of(enum kind k)
{
	return &pools[(node_size[k] - sizeof(struct jnode)) / 8];
}
#endif

TW_SITE static struct jnode *node_new(enum kind k)
{
	size_t n = node_size[k];
#ifdef TWIN
	struct jnode *j = vpool_get(pool_of(k));
	if (!j)
		j = malloc(n);
#else
	struct jnode *j = malloc(n);
#endif
	TW_ALLOC(n);
	if (!j)
		abort();
	/* field by field: a memset of the whole node after malloc would be
	 * turned into calloc by GCC */
	j->kind = (uint8_t)k;
	j->keylen = 0;
	j->next = NULL;
	j->key = NULL;
	if (k == J_ARR || k == J_OBJ) {
		struct jarr *a = (struct jarr *)j;
		a->first = a->last = NULL;
		a->n = 0;
		if (k == J_OBJ)
			((struct jobj *)j)->keyhash = 0;
	}
	return j;
}

TW_SITE static void node_free(struct jnode *j)
{
	TW_FREE(node_size[j->kind]);
#ifdef TWIN
	vpool_put(pool_of(j->kind), j);
#else
	free(j);
#endif
}

/* A string's payload: len bytes and a NUL. */
TW_SITE static char *str_new(const char *s, size_t len)
{
	char *p = malloc(len + 1);
	TW_ALLOC(len + 1);
	if (!p)
		abort();
	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

static void str_free(char *p, size_t len)
{
	TW_FREE(len + 1);
	(void)len;
	free(p);
}

/* The generator: JSON text into a fixed buffer, no allocation. */
static char doc[1 << 17]; /* 600 values of at most ~100 bytes */
static size_t dlen;
static uint64_t grng = 0x243f6a8885a308d3ULL;
static int budget;

static void emit(const char *s, size_t n)
{
	memcpy(doc + dlen, s, n);
	dlen += n;
}

static void gen_string(size_t lo, size_t hi)
{
	size_t n = lo + (size_t)(tw_rand(&grng) % (hi - lo + 1));
	uint64_t r = 0;
	doc[dlen++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (i % 10 == 0)
			r = tw_rand(&grng);
		doc[dlen++] = (char)('a' + (r & 31) % 26);
		r >>= 6;
	}
	doc[dlen++] = '"';
}

static void gen_value(int depth)
{
	uint64_t r = tw_rand(&grng);
	unsigned pick = (unsigned)(r % 100);
	budget--;
	if (depth < 6 && budget > 0 && pick < 20) {
		int obj = pick < 10;
		unsigned n = obj ? 2 + (unsigned)((r >> 8) % 7) : 2 + (unsigned)((r >> 8) % 11);
		doc[dlen++] = obj ? '{' : '[';
		for (unsigned i = 0; i < n && budget > 0; i++) {
			if (i)
				doc[dlen++] = ',';
			if (obj) {
				gen_string(5, 16);
				doc[dlen++] = ':';
			}
			gen_value(depth + 1);
		}
		doc[dlen++] = obj ? '}' : ']';
	} else if (pick < 55) {
		/* a number: an integer, or one with two decimals */
		long v = (long)((r >> 8) % 2000001) - 1000000;
		char num[32];
		int k = 0;
		unsigned long a = v < 0 ? (unsigned long)-v : (unsigned long)v;
		do
			num[k++] = (char)('0' + a % 10);
		while ((a /= 10));
		if (v < 0)
			doc[dlen++] = '-';
		while (k)
			doc[dlen++] = num[--k];
		if (r & (1u << 7))
			emit(".25", 3);
	} else if (pick < 90) {
		gen_string(5, 80);
	} else if (pick < 94) {
		emit("true", 4);
	} else if (pick < 97) {
		emit("false", 5);
	} else {
		emit("null", 4);
	}
}

/* The generated document: a top-level object of 150-600 values in all. */
static void gen_doc(void)
{
	dlen = 0;
	budget = 150 + (int)(tw_rand(&grng) % 451);
	doc[dlen++] = '{';
	for (unsigned i = 0; budget > 0; i++) {
		if (i)
			doc[dlen++] = ',';
		gen_string(5, 16);
		doc[dlen++] = ':';
		gen_value(1);
	}
	doc[dlen++] = '}';
	doc[dlen] = 0;
}

/* The parser: recursive descent over the generator's JSON (no spaces,
 * no escapes in strings: what the generator writes). */
static const char *pos;

static struct jnode *parse_value(void);

static char *parse_string(size_t *len)
{
	const char *s = ++pos; /* past the opening quote */
	while (*pos != '"')
		pos++;
	*len = (size_t)(pos - s);
	pos++;
	return str_new(s, *len);
}

static void add_child(struct jarr *a, struct jnode *c)
{
	if (a->last)
		a->last->next = c;
	else
		a->first = c;
	a->last = c;
	a->n++;
}

static struct jnode *parse_value(void)
{
	struct jnode *j;
	switch (*pos) {
	case '{': {
		j = node_new(J_OBJ);
		struct jobj *o = (struct jobj *)j;
		pos++;
		while (*pos != '}') {
			size_t klen;
			char *key = parse_string(&klen);
			pos++; /* ':' */
			struct jnode *c = parse_value();
			c->key = key;
			c->keylen = (uint32_t)klen;
			o->keyhash = tw_mix(o->keyhash, klen * 131 + (unsigned char)key[0]);
			add_child(&o->a, c);
			if (*pos == ',')
				pos++;
		}
		pos++;
		return j;
	}
	case '[': {
		j = node_new(J_ARR);
		pos++;
		while (*pos != ']') {
			add_child((struct jarr *)j, parse_value());
			if (*pos == ',')
				pos++;
		}
		pos++;
		return j;
	}
	case '"': {
		j = node_new(J_STR);
		struct jstr *s = (struct jstr *)j;
		s->s = parse_string(&s->len);
		return j;
	}
	case 't':
		pos += 4;
		return node_new(J_TRUE);
	case 'f':
		pos += 5;
		return node_new(J_FALSE);
	case 'n':
		pos += 4;
		return node_new(J_NULL);
	default: {
		j = node_new(J_NUM);
		int neg = *pos == '-';
		pos += neg;
		double v = 0;
		while (*pos >= '0' && *pos <= '9')
			v = v * 10 + (*pos++ - '0');
		if (*pos == '.') {
			double f = 0.1;
			for (pos++; *pos >= '0' && *pos <= '9'; pos++, f /= 10)
				v += (*pos - '0') * f;
		}
		((struct jnum *)j)->v = neg ? -v : v;
		return j;
	}
	}
}

/* The walk: the sum of the numbers, the deepest level, a hash of the
 * strings and keys, the number of nodes. */
struct walk {
	double sum;
	int depth;
	uint64_t h;
	long nodes;
};

static void walk(const struct jnode *j, int depth, struct walk *w)
{
	w->nodes++;
	if (depth > w->depth)
		w->depth = depth;
	if (j->key)
		w->h = tw_mix(w->h, (unsigned char)j->key[j->keylen / 2] + j->keylen);
	switch (j->kind) {
	case J_NUM:
		w->sum += ((const struct jnum *)j)->v;
		break;
	case J_STR: {
		const struct jstr *s = (const struct jstr *)j;
		w->h = tw_mix(w->h, (unsigned char)s->s[0] * 257u +
					(unsigned char)s->s[s->len - 1] + s->len);
		break;
	}
	case J_OBJ:
		w->h = tw_mix(w->h, ((const struct jobj *)j)->keyhash);
		/* fall through */
	case J_ARR:
		for (const struct jnode *c = ((const struct jarr *)j)->first; c; c = c->next)
			walk(c, depth + 1, w);
		break;
	default:
		w->h = tw_mix(w->h, j->kind);
	}
}

static void tree_free(struct jnode *j)
{
	if (j->kind == J_ARR || j->kind == J_OBJ) {
		struct jnode *c = ((struct jarr *)j)->first;
		while (c) {
			struct jnode *next = c->next;
			tree_free(c);
			c = next;
		}
	} else if (j->kind == J_STR) {
		struct jstr *s = (struct jstr *)j;
		str_free(s->s, s->len);
	}
	if (j->key)
		str_free(j->key, j->keylen);
	node_free(j);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 15000;
	uint64_t sum = 0;
	long nodes = 0;
#ifdef TWIN
	for (unsigned i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
		tw_pool_init(&pools[i]);
#endif
	for (long r = 0; r < n; r++) {
		gen_doc();
		pos = doc;
		struct jnode *root = parse_value();
		tw_sink = root;
		struct walk w = {0, 0, 0, 0};
		walk(root, 0, &w);
		nodes += w.nodes;
		sum = tw_mix(sum, (uint64_t)(int64_t)(w.sum * 4) ^ ((uint64_t)w.depth << 56) ^ w.h);
		tree_free(root);
	}
	printf("jsonnodes %ld documents %ld nodes checksum %016llx\n", n, nodes,
	       (unsigned long long)sum);
	return 0;
}
