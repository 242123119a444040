/* tokarr: tokens.c's requests (a line of 20 to 60 words split into
 * strings of 5 to 40 bytes with their NUL, their pointers in an array
 * grown by realloc from 4 slots, hashed, then all freed with the array),
 * with a twin of the other kind: where tokens' twin pools the strings one
 * by one, this one pools each request's array whole with the strings it
 * holds, as a program reusing a vector of strings does (C++'s
 * std::vector<std::string> cleared, not destroyed; Rust's Vec<String>
 * the same). A pooled array keeps its capacity and the strings it has
 * allocated, each with its capacity; a request takes an array (a miss: an
 * empty one), grows it where it has fewer slots than the request has
 * words, and for each word takes the string already in its slot when
 * big enough (else frees it and allocates the word's size), allocating
 * the strings it lacks; then puts the array back. An array the pool
 * drops is freed with its strings. advise finds the array's site owning
 * the strings' (an object graph) and measures the two pooled whole.
 * Session 40. */
// site: arr_grow
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

/* the program's own work at the same place in plain and twin */
#define TW_WORK __attribute__((noinline, aligned(64)))

#ifdef TWIN
/* A pooled array: its pointer array, its slots, and the strings
 * allocated in toks[0 .. nstr) with their capacities. */
struct tarr {
	char **toks;
	size_t *caps;
	size_t slots, nstr;
};

static struct vpool pool;

static void tarr_release(void *obj, void *ctx)
{
	struct tarr *a = obj;
	(void)ctx;
	for (size_t i = 0; i < a->nstr; i++)
		free(a->toks[i]);
	free(a->toks);
	free(a->caps);
	free(a);
}
#endif

/* A token's string: in the twin the slot's own when big enough. */
TW_SITE static char *tok_new(char **slot, size_t *cap, const char *s, size_t len)
{
#ifdef TWIN
	char *t = *slot;
	if (!t || *cap < len + 1) {
		free(t);
		t = malloc(len + 1);
		*cap = len + 1;
	}
#else
	(void)slot;
	(void)cap;
	char *t = malloc(len + 1);
#endif
	TW_ALLOC(len + 1);
	if (!t)
		abort();
	memcpy(t, s, len);
	t[len] = 0;
	return t;
}

/* The plain program's array grown from *vcap slots to twice as many (4
 * at first); the twin's pooled array grown only where it has fewer. */
TW_SITE static char **arr_grow(char **a, size_t *vcap, size_t *slots, size_t **caps)
{
	size_t old = *vcap, n = old ? 2 * old : 4;
	if (old)
		TW_REALLOC(old * sizeof(*a), n * sizeof(*a));
	else
		TW_ALLOC(n * sizeof(*a));
	*vcap = n;
#ifdef TWIN
	if (n <= *slots)
		return a;
	char **b = realloc(a, n * sizeof(*b));
	size_t *c = realloc(*caps, n * sizeof(*c));
	if (!b || !c)
		abort();
	memset(b + *slots, 0, (n - *slots) * sizeof(*b));
	memset(c + *slots, 0, (n - *slots) * sizeof(*c));
	*slots = n;
	*caps = c;
	return b;
#else
	(void)slots;
	(void)caps;
	char **b = realloc(a, n * sizeof(*b));
	if (!b)
		abort();
	return b;
#endif
}

TW_WORK static uint64_t hash_toks(char *const *toks, size_t nt)
{
	uint64_t h = nt;
	for (size_t i = 0; i < nt; i++)
		for (const char *c = toks[i]; *c; c++)
			h = h * 131 + (unsigned char)*c;
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400000;
	uint64_t rng = 0x0123456789abcdefULL, sum = 0;
	static char line[64 * 48];
	static size_t lens[64];
#ifdef TWIN
	tw_pool_init_release(&pool, tarr_release);
#endif
	for (long r = 0; r < n; r++) {
		unsigned words = tw_token_line(&rng, line, lens);
		size_t at = 0;
#ifdef TWIN
		struct tarr *ta = vpool_get(&pool);
		if (!ta && !(ta = calloc(1, sizeof(*ta))))
			abort();
		char **toks = ta->toks;
		size_t *caps = ta->caps, slots = ta->slots;
#else
		char **toks = NULL;
		size_t *caps = NULL, slots = 0;
#endif
		size_t vcap = 0, nt = 0;
		at = 0;
		for (unsigned w = 0; w < words; w++) {
			if (nt == vcap)
				toks = arr_grow(toks, &vcap, &slots, &caps);
			size_t dummy = 0;
			toks[nt] = tok_new(&toks[nt], caps ? &caps[nt] : &dummy, line + at, lens[w]);
			nt++;
			at += lens[w] + 1;
		}
		sum = tw_mix(sum, hash_toks(toks, nt));
		for (size_t i = 0; i < nt; i++)
			TW_FREE(lens[i] + 1);
		TW_FREE(vcap * sizeof(*toks));
#ifdef TWIN
		ta->toks = toks;
		ta->caps = caps;
		ta->slots = slots;
		if (nt > ta->nstr)
			ta->nstr = nt;
		vpool_put(&pool, ta);
#else
		for (size_t i = 0; i < nt; i++)
			free(toks[i]);
		free(toks);
#endif
	}
	printf("tokarr %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
