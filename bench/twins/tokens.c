/* tokens: a tokenizer's small strings. Each request splits a synthetic
 * line of 20 to 60 words into tokens: each token is copied into a
 * string of its own (5 to 40 bytes with its NUL), the pointers kept in
 * an array grown by realloc (4, 8, 16... slots); the request then hashes
 * the tokens and frees them all and the array.
 * A pool should lose or gain little: glibc's tcache already keeps these
 * sizes (48-byte chunks at most, seven of each of three sizes) and its
 * fastbins the rest, a few nanoseconds a malloc/free; the pool's private
 * slot holds one string and the others go through the CPU's deque.
 * Twin: tok_new takes strings from a vpool, tok_free puts them. */
// site: tok_new
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static char *tok_new(const char *s, size_t len)
{
#ifdef TWIN
	char *t = tw_get(&pool, len + 1);
#else
	char *t = malloc(len + 1);
#endif
	TW_ALLOC(len + 1);
	if (!t)
		abort();
	memcpy(t, s, len);
	t[len] = 0;
	return t;
}

TW_SITE static void tok_free(char *t, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, t);
#else
	free(t);
#endif
}

TW_SITE static char **arr_grow(char **a, size_t *cap)
{
	size_t old = *cap, n = old ? 2 * old : 4;
	char **b = realloc(a, n * sizeof(*b));
	if (old)
		TW_REALLOC(old * sizeof(*b), n * sizeof(*b));
	else
		TW_ALLOC(n * sizeof(*b));
	if (!b)
		abort();
	*cap = n;
	return b;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400000;
	uint64_t rng = 0x0123456789abcdefULL, sum = 0;
	static char line[64 * 48];
	static size_t lens[64];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (long r = 0; r < n; r++) {
		unsigned words = tw_token_line(&rng, line, lens);
		size_t at = 0;
		char **toks = NULL;
		size_t cap = 0, nt = 0;
		at = 0;
		for (unsigned w = 0; w < words; w++) {
			if (nt == cap)
				toks = arr_grow(toks, &cap);
			toks[nt++] = tok_new(line + at, lens[w]);
			at += lens[w] + 1;
		}
		uint64_t h = nt;
		for (size_t i = 0; i < nt; i++) {
			for (const char *c = toks[i]; *c; c++)
				h = h * 131 + (unsigned char)*c;
			tok_free(toks[i], lens[i] + 1);
		}
		free(toks);
		TW_FREE(cap * sizeof(*toks));
		sum = tw_mix(sum, h);
	}
	printf("tokens %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
