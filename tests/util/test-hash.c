/* util/ap_hash.h against plain arrays: ap_u64map through a million random
 * puts, gets and takes (keys clustered so that probe chains form and the
 * backward shift on deletion has work), with the table checked after
 * each phase; ap_index and ap_intern through colliding and distinct keys;
 * the hash functions' known values. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_hash.h"
#include "ap_check.h"
#include "ap_util.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	return ap_test_next(&rng);
}

#define NKEYS 5000

/* Every key of the reference is in the map with its value and the map
 * holds nothing else; every slot is reachable from its key's home. */
static void check_map(const struct ap_u64map *m, const uint32_t *ref, const uint64_t *keys,
		      const char *when)
{
	size_t n = 0;
	for (size_t k = 0; k < NKEYS; k++) {
		uint32_t got = ap_u64map_get(m, keys[k]);
		CHECK(got == ref[k], "%s: key %zu: got %" PRIu32 ", want %" PRIu32, when, k, got,
		      ref[k]);
		n += ref[k] != AP_U64MAP_NONE;
	}
	CHECK(m->n == n, "%s: n %zu, want %zu", when, m->n, n);
	size_t used = 0;
	for (size_t i = 0; i <= m->mask; i++) {
		if (m->slot[i].val == AP_U64MAP_NONE)
			continue;
		used++;
		/* no empty slot between the key's home and its slot */
		for (size_t j = ap_hash_u64(m->slot[i].key) & m->mask; j != i; j = (j + 1) & m->mask)
			CHECK(m->slot[j].val != AP_U64MAP_NONE, "%s: hole in the chain of slot %zu",
			      when, i);
	}
	CHECK(used == n, "%s: %zu slots used, %zu entries", when, used, n);
	CHECK(2 * m->n <= m->mask + 1, "%s: more than half full", when);
}

static void test_u64map(void)
{
	static uint64_t keys[NKEYS];
	static uint32_t ref[NKEYS];
	/* addresses 16 apart, as malloc's, in a few clusters; and 0 */
	for (size_t k = 0; k < NKEYS; k++) {
		keys[k] = k ? (uint64_t)(k % 7) << 40 | (uint64_t)k * 16 : 0;
		ref[k] = AP_U64MAP_NONE;
	}
	struct ap_u64map m;
	ap_u64map_init(&m, 4); /* small: it has to grow many times */
	for (int round = 0; round < 200; round++) {
		for (int op = 0; op < 5000; op++) {
			size_t k = next() % NKEYS;
			switch (next() % 3) {
			case 0: {
				uint32_t v = (uint32_t)(next() % 1000000);
				if (next() % 2) {
					ap_u64map_put(&m, keys[k], v);
				} else {
					/* one probe: made iff it was not there */
					bool made;
					struct ap_u64map_slot *s = ap_u64map_slot_of(&m, keys[k], &made);
					CHECK(made == (ref[k] == AP_U64MAP_NONE) && s->key == keys[k] &&
						      (made || s->val == ref[k]),
					      "slot_of %zu: made %d", k, made);
					s->val = v;
				}
				ref[k] = v;
				break;
			}
			case 1:
				CHECK(ap_u64map_get(&m, keys[k]) == ref[k], "get %zu", k);
				break;
			default:
				CHECK(ap_u64map_take(&m, keys[k]) == ref[k], "take %zu", k);
				ref[k] = AP_U64MAP_NONE;
			}
		}
		if (round % 50 == 0)
			check_map(&m, ref, keys, "random");
	}
	check_map(&m, ref, keys, "random, end");
	/* empty it through find + delete */
	for (size_t k = 0; k < NKEYS; k++) {
		struct ap_u64map_slot *s = ap_u64map_find(&m, keys[k]);
		CHECK(!s == (ref[k] == AP_U64MAP_NONE), "find %zu", k);
		if (s)
			ap_u64map_delete(&m, s);
		ref[k] = AP_U64MAP_NONE;
	}
	check_map(&m, ref, keys, "emptied");
	ap_u64map_release(&m);
}

/* Keys whose hash is the entry's number mod 4: every lookup probes a long
 * chain of equal hashes, which only the equality tells apart. */
struct bad_keys {
	char names[3000][16];
};

static bool bad_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct bad_keys *b = ctx;
	return !strcmp(b->names[i], key);
}

static void test_index(void)
{
	static struct bad_keys b;
	struct ap_index ix = { 0 };
	CHECK(ap_index_find(&ix, 1, bad_eq, &b, "x") == UINT32_MAX, "find in an empty index");
	for (uint32_t i = 0; i < 3000; i++) {
		snprintf(b.names[i], sizeof(b.names[i]), "key%u", i);
		bool added;
		uint32_t got = ap_index_add(&ix, i % 4, bad_eq, &b, b.names[i], i, &added);
		CHECK(added && got == i, "add %u: %u %d", i, got, added);
		bool again;
		CHECK(ap_index_add(&ix, i % 4, bad_eq, &b, b.names[i], 99999, &again) == i && !again,
		      "add %u again", i);
	}
	for (uint32_t i = 0; i < 3000; i++)
		CHECK(ap_index_find(&ix, i % 4, bad_eq, &b, b.names[i]) == i, "find %u", i);
	CHECK(ap_index_find(&ix, 0, bad_eq, &b, "key3001") == UINT32_MAX, "find a missing key");
	CHECK(ix.n == 3000, "n %zu", ix.n);
	ap_index_release(&ix);
}

static void test_intern(void)
{
	struct ap_intern t = { 0 };
	const char *a = ap_intern_str(&t, "malloc");
	const char *p[1000];
	for (int i = 0; i < 1000; i++) {
		char s[32];
		snprintf(s, sizeof(s), "f%d", i);
		p[i] = ap_intern_str(&t, s);
	}
	CHECK(ap_intern_str(&t, "malloc") == a, "the same pointer for the same string");
	for (int i = 0; i < 1000; i++) {
		char s[32];
		snprintf(s, sizeof(s), "f%d", i);
		CHECK(ap_intern_str(&t, s) == p[i] && !strcmp(p[i], s), "f%d moved or changed", i);
	}
	CHECK(t.n == 1001, "n %zu", t.n);
	/* byte strings: embedded NULs, a prefix of another */
	uint32_t x = ap_intern_add(&t, "a\0b", 3, NULL), y = ap_intern_add(&t, "a", 1, NULL);
	CHECK(x != y && t.len[x] == 3 && t.len[y] == 1, "byte strings %u %u", x, y);
	CHECK(ap_intern_find(&t, "a\0b", 3) == x && ap_intern_find(&t, "a\0c", 3) == UINT32_MAX,
	      "find byte strings");
	CHECK(ap_intern_str(&t, NULL) == NULL, "NULL");
	ap_intern_release(&t);
}

static void test_hashes(void)
{
	/* FNV-1a 64's published values */
	CHECK(ap_hash_bytes("", 0) == 0xcbf29ce484222325ull, "fnv of \"\"");
	CHECK(ap_hash_str("a") == 0xaf63dc4c8601ec8cull, "fnv of a: %" PRIx64, ap_hash_str("a"));
	CHECK(ap_hash_str("foobar") == 0x85944171f73967e8ull, "fnv of foobar: %" PRIx64,
	      ap_hash_str("foobar"));
	/* a bijection: distinct keys, distinct hashes */
	CHECK(ap_hash_u64(16) != ap_hash_u64(32) && ap_hash_u64(0) == 0, "u64 mix");
}

/* ap_u64map_push/pop: per key, the most recent value first, and the one
 * before it back once that is taken; checked against plain stacks. */
#define LIFO_KEYS 64
#define LIFO_DEPTH 8
static void test_lifo(void)
{
	uint32_t stack[LIFO_KEYS][LIFO_DEPTH], depth[LIFO_KEYS] = {0};
	static uint32_t next_of[20000];
	struct ap_u64map m;
	ap_u64map_init(&m, 4);
	size_t bad = 0, pops = 0;
	for (uint32_t v = 0; v < 20000; v++) {
		size_t k = next() % LIFO_KEYS;
		uint64_t key = 0x7f0000001000ull + 16 * k;
		if (next() % 2 && depth[k] < LIFO_DEPTH) {
			next_of[v] = ap_u64map_push(&m, key, v);
			bad += next_of[v] != (depth[k] ? stack[k][depth[k] - 1] : AP_U64MAP_NONE);
			stack[k][depth[k]++] = v;
			continue;
		}
		struct ap_u64map_slot *sl = ap_u64map_find(&m, key);
		if (!depth[k]) {
			bad += sl != NULL;
			continue;
		}
		bad += !sl || sl->val != stack[k][depth[k] - 1];
		if (sl)
			ap_u64map_pop(&m, sl, next_of[sl->val]);
		depth[k]--;
		pops++;
	}
	size_t live = 0;
	for (size_t k = 0; k < LIFO_KEYS; k++)
		live += depth[k] != 0;
	CHECK(bad == 0 && pops > 1000, "lifo: %zu wrong heads in %zu pops", bad, pops);
	CHECK(m.n == live, "lifo: %zu keys held, %zu with values", m.n, live);
	ap_u64map_release(&m);
}

int main(void)
{
	test_hashes();
	test_lifo();
	test_u64map();
	test_index();
	test_intern();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	puts("ap_hash: ok");
	return 0;
}
