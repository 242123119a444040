/* Scripts of get/put/gc on one P, for comparing the pool model with Go's
 * sync.Pool (syncpool_ref.go reads the same scripts and prints the same
 * lines):
 *   pool-script fixed           the one-P scripts of docs/pool-model.md §5 and §7
 *   pool-script random SEED N   N random scripts from a fixed seed
 *   pool-script run             reads scripts on stdin, prints what each Get
 *                               returns through the model */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_pool.h"

static void print_fixed(void)
{
	/* §5 */
	printf("script s5a\n");
	for (int x = 1; x <= 5; x++)
		printf("put %d\n", x);
	for (int i = 0; i < 6; i++)
		printf("get\n");
	for (int k = 1; k <= 2; k++) {
		printf("script s5cycles%d\n", k);
		for (int x = 1; x <= 5; x++)
			printf("put %d\n", x);
		for (int c = 0; c < k; c++)
			printf("gc\n");
		for (int i = 0; i < 6; i++)
			printf("get\n");
	}
	printf("script s5d\nput 1\nput 2\nget\nput 3\nget\nget\nget\n");

	/* §7.2 */
	static const int ns[] = { 1, 2, 5, 100 };
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++) {
			printf("script s72_n%d_k%d\n", ns[i], k);
			for (int x = 1; x <= ns[i]; x++)
				printf("put %d\n", x);
			for (int c = 0; c < k; c++)
				printf("gc\n");
			for (int x = 1; x <= ns[i]; x++)
				printf("get\n");
		}

	/* §7.4: Get then Put every T, a cycle every G = 10 (offset by 5). */
	static const int ts[] = { 3, 9, 10, 13, 15, 19, 20, 25, 100 };
	for (int i = 0; i < 9; i++) {
		int T = ts[i], next_cycle = 5, next_id = 1;
		printf("script s74_t%d\n", T);
		/* Each Put is a fresh id, so a hit names the request
		 * whose object it reuses. */
		for (int t = 0; t < 2000; t += T) {
			while (next_cycle < t) {
				printf("gc\n");
				next_cycle += 10;
			}
			printf("get\nput %d\n", next_id++);
		}
	}

	/* §7.5 (identities only): 64 objects cycled, a cycle every round. */
	printf("script s75\n");
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 64; i++)
			printf("get\n");
		for (int i = 0; i < 64; i++)
			printf("put %d\n", r * 64 + i + 1);
		if (r % 3 == 0)
			printf("gc\n");
	}

	/* §7.7 */
	printf("script s77\nput 1\ngc\nget\nput 1\ngc\ngc\nget\n");
}

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 33) % n;
}

/* Random scripts shaped like programs: Puts return objects the program
 * holds (from earlier Gets, or fresh ones), with cycles now and then. */
static void print_random(uint64_t seed, int count)
{
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	int held[256];
	for (int s = 0; s < count; s++) {
		int nheld = 0, next_id = 1, len = 1 + (int)rnd(80);
		int gc_pct = 2 + (int)rnd(20);
		printf("script r%d\n", s);
		for (int i = 0; i < len; i++) {
			uint32_t r = rnd(100);
			if (r < (uint32_t)gc_pct) {
				printf("gc\n");
			} else if (r < 55 || nheld == 0) {
				/* The script stands for a program that got a fresh
				 * object or a pooled one; it does not know which,
				 * so it holds a new id it may put later. */
				printf("get\n");
				if (nheld < 256)
					held[nheld++] = next_id++;
			} else {
				int k = (int)rnd((uint32_t)nheld);
				printf("put %d\n", held[k]);
				held[k] = held[--nheld];
			}
		}
	}
}

static int run(void)
{
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 0);
	char line[256], name[128] = "";
	int ngets = 0;
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long id;
		if (sscanf(line, "script %127s", name) == 1) {
			ap_pool_reset(pool, 1, 0);
			ngets = 0;
		} else if (sscanf(line, "put %llu", &id) == 1) {
			ap_pool_put(pool, 0, 0, 0, id, 1);
		} else if (!strcmp(line, "get\n")) {
			struct ap_pool_obj o;
			ngets++;
			if (ap_pool_get(pool, 0, 0, 0, &o) == AP_POOL_MISS)
				printf("%s %d miss\n", name, ngets);
			else
				printf("%s %d %" PRIu64 "\n", name, ngets, o.id);
		} else if (!strcmp(line, "gc\n")) {
			ap_pool_cycle(pool, 0);
		} else if (line[0] != '\n') {
			fprintf(stderr, "pool-script: bad line: %s", line);
			ap_pool_free(pool);
			return 2;
		}
	}
	ap_pool_free(pool);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "fixed")) {
		print_fixed();
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "random")) {
		print_random(strtoull(argv[2], NULL, 10), atoi(argv[3]));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "run"))
		return run();
	fprintf(stderr, "usage: pool-script fixed | random SEED N | run\n");
	return 2;
}
