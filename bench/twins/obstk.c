/* obstk: an arena that already pools, glibc's obstack. Each request
 * parses a generated config text of 40-2500 lines (log-uniform) into
 * records whose strings (names, values: 4-60 bytes) and structs are
 * obstack_alloc'd and obstack_grow'n on one long-lived obstack; at the
 * end of the request everything is freed back to a mark made at the
 * start (obstack_free(&ob, mark)): the obstack keeps its first chunk and
 * frees the chunks after it, so a request that needs more than one chunk
 * (4064 bytes, obstack's default; a long string gets a chunk of its own
 * size) mallocs them again next time.
 * Unlike arena.c (a hand-written arena keeping 8 chunks on its own free
 * list), the library's arena keeps one chunk: its chunk allocator (the
 * site, obstack_chunk_alloc) is called 1-60 times a request.
 * A pool should help a little: 4 KiB chunks come from glibc's bins (above
 * tcache's range), the top of the heap stays far below the trim threshold;
 * the pool saves the malloc/free pairs beside the parsing.
 * Twin: obstack_chunk_alloc/free take chunks from a vpool (chunks of
 * other sizes, the long strings', pass through malloc/free: obstack asks
 * its chunks of 4064 bytes unless an object needs more). */
// site: chunk_alloc
// libs: -lm
#include <obstack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twin.h"

#define CHUNK 4064

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static void *chunk_alloc(size_t n)
{
	void *p;
	TW_ALLOC(n);
#ifdef TWIN
	if (n == CHUNK)
		p = tw_get(&pool, n);
	else
#endif
		p = malloc(n);
	/* (stored, not returned at once: `return malloc(n)` would be a tail
	 * call, and allocprof would name obstack's caller, not this site) */
	tw_sink = p;
	return p;
}

TW_SITE static void chunk_free(void *p)
{
	/* obstack's free is not told the size: a chunk's header says where it
	 * ends (struct _obstack_chunk: limit, prev). */
	struct _obstack_chunk *c = p;
	size_t n = (size_t)(c->limit - (char *)c);
	TW_FREE(n);
#ifdef TWIN
	if (n == CHUNK) {
		vpool_put(&pool, p);
		return;
	}
#endif
	free(p);
}

#define obstack_chunk_alloc chunk_alloc
#define obstack_chunk_free chunk_free

struct rec {
	const char *name, *value;
	struct rec *next;
	uint32_t line;
};

static const char *const keys[] = { "listen", "root", "index", "proxy_pass", "timeout", "user",
				    "worker_connections", "gzip", "location", "server_name" };

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	uint64_t rng = 0xab5c0deab5c0de11ULL, sum = 0;
	struct obstack ob;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	obstack_specify_allocation(&ob, CHUNK, 0, chunk_alloc, chunk_free);
	for (long r = 0; r < n; r++) {
		/* 40 * 2^(0..6): log-uniform 40-2560 lines */
		unsigned e = (unsigned)(tw_rand(&rng) % 6144);
		unsigned lines = (unsigned)(40.0 * __builtin_exp2((double)e / 1024.0));
		void *mark = obstack_alloc(&ob, 1);
		struct rec *head = NULL;
		for (unsigned l = 0; l < lines; l++) {
			uint64_t x = tw_rand(&rng);
			struct rec *rc = obstack_alloc(&ob, sizeof(*rc));
			const char *k = keys[x % 10];
			rc->name = obstack_copy0(&ob, k, strlen(k));
			unsigned vl = 4 + (unsigned)((x >> 8) % 57);
			for (unsigned i = 0; i < vl; i++)
				obstack_1grow(&ob, (char)('a' + (x >> (i % 40)) % 26));
			obstack_1grow(&ob, 0);
			rc->value = obstack_finish(&ob);
			rc->line = l;
			rc->next = head;
			head = rc;
		}
		uint64_t h = lines;
		for (struct rec *rc = head; rc; rc = rc->next) {
			h = tw_mix(h, (uint64_t)(unsigned char)rc->name[0] << 8 | rc->line);
			size_t vl = strlen(rc->value);
			for (size_t i = 0; i < vl; i += 3)
				h = tw_mix(h, (unsigned char)rc->value[i]);
		}
		sum = tw_mix(sum, h);
		obstack_free(&ob, mark);
	}
	obstack_free(&ob, NULL);
	printf("obstk %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
