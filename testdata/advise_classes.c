/* advise testdata: a cache whose values vary in size, where one pool
 * hands blocks much larger than asked for and a pool per size class, with
 * each request rounded up to its class, does not (report/advise_verdict.c,
 * advise_round_wins; tests/advise, "classes"). (bench/twins' lru, a C++
 * LRU cache, is the program it was found on: its twin pools the values in
 * five classes, rounded up.)
 *
 * 2048 slots; each request asks for a key, the smaller of two draws from
 * 16384 (skewed to the low keys), and finds it in its slot (key mod 2048:
 * a hit reads the value) or loads it: the slot's old value is freed and
 * the key's value allocated (the site) and written whole. A key's value
 * is 512 B to 8 KiB, log-uniform by key (~2.7 KiB on average), so about
 * 2048 values of all sizes are live. One pool keeps each object at the
 * largest size it reached (a hit too small for a request is dropped for a
 * block of the request's size): its objects drift to 8 KiB, and its hits
 * hand blocks about twice the size asked for or more, over megabytes.
 * Classes of 1, 2, 4 and 8 KiB with requests rounded up hand out under
 * 1.5 times the bytes asked for.
 * usage: advise_classes [REQUESTS]  (default 400000) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define SLOTS 2048
#define KEYS 16384

static unsigned char *val[SLOTS];
static uint32_t key_of[SLOTS];	/* + 1; 0: empty */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static size_t value_size(uint32_t key)
{
	uint32_t h = key * 2654435761u;
	/* 512 * 2^(4u), u in [0, 1) by key: 512 B to 8 KiB */
	return (size_t)(512.0 * exp2(4.0 * (double)(h >> 8) / 16777216.0));
}

__attribute__((noinline)) static unsigned char *value_new(size_t n)
{
	unsigned char *v = malloc(n); /* SITE: advise_classes */
	if (!v)
		abort();
	td_sink = v;
	return v;
}

int main(int argc, char **argv)
{
	long requests = argc > 1 ? atol(argv[1]) : 400000;
	uint64_t sum = 0;
	long hits = 0;
	for (long r = 0; r < requests; r++) {
		uint32_t a = next_rand() % KEYS, b = next_rand() % KEYS;
		uint32_t key = a < b ? a : b;
		uint32_t slot = key % SLOTS;
		size_t n = value_size(key);
		if (key_of[slot] == key + 1) {
			hits++;
			sum += val[slot][n / 2] + val[slot][n - 1];
			continue;
		}
		free(val[slot]);
		unsigned char *v = value_new(n);
		memset(v, (int)(key & 255), n);
		val[slot] = v;
		key_of[slot] = key + 1;
		sum += v[0];
	}
	for (int s = 0; s < SLOTS; s++)
		free(val[s]);
	td_say("advise_classes: %ld requests, %ld hits, checksum %llx\n", requests, hits,
	       (unsigned long long)sum);
	return 0;
}
