/* Unit tests of the pool model: every behaviour of docs/pool-model.md §5 and §7,
 * with the object each Get must return fixed by the rules of §2-4. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ap_pool.h"
#include "ap_util.h"

static int failures;

#define CHECK_EQ(what, got, want)                                                  \
	do {                                                                       \
		uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);              \
		if (g_ != w_) {                                                    \
			fprintf(stderr, "%s:%d: %s: got %" PRIu64 ", want %" PRIu64 "\n", \
				__func__, __LINE__, what, g_, w_);                 \
			failures++;                                                \
		}                                                                  \
	} while (0)

/* Get on P p; returns the object's id, or 0 for a miss (ids start at 1). */
static uint64_t get(struct ap_pool *pool, unsigned p, enum ap_pool_src *src)
{
	struct ap_pool_obj o;
	enum ap_pool_src s = ap_pool_get(pool, p, p, 0, &o);
	if (src)
		*src = s;
	return s == AP_POOL_MISS ? 0 : o.id;
}

static void put(struct ap_pool *pool, unsigned p, uint64_t id)
{
	ap_pool_put(pool, p, p, 0, id, 100);
}

/* Checks a run of Gets on P p against ids (0 = miss) and sources. */
static void expect_gets(struct ap_pool *pool, unsigned p, const char *name,
			const uint64_t *ids, const enum ap_pool_src *srcs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		enum ap_pool_src s;
		uint64_t id = get(pool, p, &s);
		if (id != ids[i] || (srcs && s != srcs[i])) {
			fprintf(stderr, "%s: get %zu: got %" PRIu64 " (%s), want %" PRIu64 " (%s)\n",
				name, i, id, ap_pool_src_name(s), ids[i],
				srcs ? ap_pool_src_name(srcs[i]) : "-");
			failures++;
		}
	}
}

/* §5 / §7.1: the one-P orders. */
static void test_one_p_orders(void)
{
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 0);
	enum { A = 1, B, C, D, E };

	for (uint64_t x = A; x <= E; x++)
		put(pool, 0, x);
	expect_gets(pool, 0, "no cycle", (uint64_t[]){ A, E, D, C, B },
		    (enum ap_pool_src[]){ AP_POOL_PRIVATE, AP_POOL_SHARED, AP_POOL_SHARED,
					  AP_POOL_SHARED, AP_POOL_SHARED }, 5);
	expect_gets(pool, 0, "then empty", (uint64_t[]){ 0 }, NULL, 1);

	ap_pool_reset(pool, 1, 0);
	for (uint64_t x = A; x <= E; x++)
		put(pool, 0, x);
	ap_pool_cycle(pool, 0);
	expect_gets(pool, 0, "one cycle", (uint64_t[]){ A, B, C, D, E },
		    (enum ap_pool_src[]){ AP_POOL_VICTIM, AP_POOL_VICTIM, AP_POOL_VICTIM,
					  AP_POOL_VICTIM, AP_POOL_VICTIM }, 5);

	ap_pool_reset(pool, 1, 0);
	for (uint64_t x = A; x <= E; x++)
		put(pool, 0, x);
	ap_pool_cycle(pool, 0);
	ap_pool_cycle(pool, 0);
	expect_gets(pool, 0, "two cycles", (uint64_t[]){ 0, 0, 0, 0, 0 }, NULL, 5);
	struct ap_pool_stats st;
	ap_pool_stats(pool, 0, &st);
	CHECK_EQ("lost to cycles", st.lost_cycle, 5);
	CHECK_EQ("misses", st.misses, 5);
	CHECK_EQ("held", st.held_objects, 0);

	ap_pool_reset(pool, 1, 0);
	put(pool, 0, A);
	put(pool, 0, B);
	expect_gets(pool, 0, "interleaved 1", (uint64_t[]){ A }, NULL, 1);
	put(pool, 0, C);
	expect_gets(pool, 0, "interleaved 2", (uint64_t[]){ C, B }, NULL, 2);
	ap_pool_free(pool);
}

/* §7.2: Put N, k cycles, N Gets held at once: hits N, N, 0, 0. */
static void test_put_n_k_cycles(void)
{
	static const unsigned ns[] = { 1, 2, 5, 100 };
	static const unsigned want[] = { 1, 1, 0, 0 }; /* times N */
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 0);
	for (size_t i = 0; i < 4; i++)
		for (unsigned k = 0; k < 4; k++) {
			unsigned n = ns[i];
			ap_pool_reset(pool, 1, 0);
			for (unsigned x = 1; x <= n; x++)
				put(pool, 0, x);
			for (unsigned c = 0; c < k; c++)
				ap_pool_cycle(pool, 0);
			unsigned hits = 0;
			for (unsigned x = 1; x <= n; x++)
				hits += get(pool, 0, NULL) != 0;
			char what[64];
			snprintf(what, sizeof(what), "hits N=%u k=%u", n, k);
			CHECK_EQ(what, hits, want[k] * n);
			struct ap_pool_stats st;
			ap_pool_stats(pool, 0, &st);
			snprintf(what, sizeof(what), "lost to cycles N=%u k=%u", n, k);
			CHECK_EQ(what, st.lost_cycle, k >= 2 ? n : 0);
		}
	ap_pool_free(pool);
}

/* §7.3: Gets on another P after one cycle: exactly one miss, the object in
 * the victim's private slot of the Putting P. */
static void test_other_p_after_cycle(void)
{
	static const unsigned ns[] = { 1, 2, 5, 100 };
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 2, 0);
	for (size_t i = 0; i < 4; i++) {
		unsigned n = ns[i];
		ap_pool_reset(pool, 2, 0);
		for (unsigned x = 1; x <= n; x++)
			put(pool, 0, x);
		ap_pool_cycle(pool, 0);
		unsigned misses = 0, next = 2;
		for (unsigned x = 1; x <= n; x++) {
			uint64_t id = get(pool, 1, NULL);
			if (!id)
				misses++;
			else if (id != next++) /* victim tails, oldest first */
				CHECK_EQ("victim order", id, next - 1);
		}
		char what[64];
		snprintf(what, sizeof(what), "misses N=%u", n);
		CHECK_EQ(what, misses, 1);
		struct ap_pool_stats st;
		ap_pool_stats(pool, 0, &st);
		snprintf(what, sizeof(what), "lost to P changes N=%u", n);
		CHECK_EQ(what, st.lost_pchange, 1);
		CHECK_EQ("victim hits", st.hits[AP_POOL_VICTIM], n - 1);
	}
	ap_pool_free(pool);
}

/* §7.4: Get then Put every T on one P against a cycle every G (cycles at
 * jG + G/2, so no tie with a request). A Get hits iff at most one cycle fell
 * since the previous Put. */
static void test_period_vs_cycle(void)
{
	const uint64_t G = 100, horizon = 100000;
	static const uint64_t ts[] = { 30, 99, 100, 130, 150, 199, 200, 250, 1000 };
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 0);
	for (size_t i = 0; i < AP_ARRAY_SIZE(ts); i++) {
		uint64_t T = ts[i];
		ap_pool_reset(pool, 1, 0);
		uint64_t next_cycle = G / 2, want_hits = 0, gets = 0, hits = 0;
		uint64_t cycles_since_put = 0;
		bool first = true;
		for (uint64_t t = 0; t < horizon; t += T) {
			while (next_cycle < t) {
				ap_pool_cycle(pool, next_cycle);
				next_cycle += G;
				cycles_since_put++;
			}
			struct ap_pool_obj o;
			gets++;
			if (ap_pool_get(pool, 0, 0, t, &o) != AP_POOL_MISS)
				hits++;
			else
				o.id = gets, o.cap = 1000;
			if (!first && cycles_since_put <= 1)
				want_hits++;
			first = false;
			ap_pool_put(pool, 0, 0, t, o.id, o.cap);
			cycles_since_put = 0;
		}
		char what[64];
		snprintf(what, sizeof(what), "hits T=%" PRIu64 " G=%" PRIu64, T, G);
		CHECK_EQ(what, hits, want_hits);
		if (T <= G)
			CHECK_EQ(what, hits, gets - 1);
		if (T >= 2 * G)
			CHECK_EQ(what, hits, 0);
	}
	ap_pool_free(pool);
}

/* One round of §7.5: take 64 buffers at once (objects keep the largest
 * capacity they reached), then return them. */
static void bloat_round(struct ap_pool *pool, uint64_t size, uint64_t *next_id)
{
	struct ap_pool_obj held[64];
	for (int i = 0; i < 64; i++) {
		if (ap_pool_get(pool, 0, 0, 0, &held[i]) == AP_POOL_MISS)
			held[i] = (struct ap_pool_obj){ (*next_id)++, size };
		if (held[i].cap < size)
			held[i].cap = size;
	}
	for (int i = 0; i < 64; i++)
		ap_pool_put(pool, 0, 0, 0, held[i].id, held[i].cap);
}

/* §7.5: a few huge requests bloat the pool for good; a cap on Put fixes it. */
static void test_bloat(void)
{
	const uint64_t KiB = 1024, MiB = 1024 * 1024;
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 0);
	for (int cap = 0; cap < 2; cap++)
		for (int cycles = 0; cycles < 2; cycles++) {
			ap_pool_reset(pool, 1, cap ? 64 * KiB : 0);
			uint64_t next_id = 1;
			for (int r = 0; r < 101; r++) {
				bloat_round(pool, r == 50 ? 4 * MiB : KiB, &next_id);
				if (cycles)
					ap_pool_cycle(pool, 0);
			}
			struct ap_pool_stats st;
			ap_pool_stats(pool, 0, &st);
			char what[64];
			snprintf(what, sizeof(what), "held bytes cap=%d cycles=%d", cap, cycles);
			CHECK_EQ(what, st.held_bytes, cap ? 64 * KiB : 64 * 4 * MiB);
			snprintf(what, sizeof(what), "objects made cap=%d cycles=%d", cap, cycles);
			CHECK_EQ(what, next_id - 1, cap ? 128 : 64);
			if (cap) {
				CHECK_EQ("dropped by cap", st.dropped_cap, 64);
				CHECK_EQ("dropped bytes", st.dropped_cap_bytes, 64 * 4 * MiB);
				CHECK_EQ("peak with cap", st.peak_held_bytes, 64 * KiB);
			}
		}
	ap_pool_free(pool);
}

/* §7.6: growing the number of Ps loses everything at the first Get or Put on
 * the new P; shrinking loses at most the removed Ps' private objects. */
static void test_procs_change(void)
{
	for (int first_op_get = 0; first_op_get < 2; first_op_get++) {
		struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 4, 0);
		for (uint64_t x = 1; x <= 500; x++)
			put(pool, (unsigned)(x % 4), x);
		ap_pool_set_procs(pool, 5);
		/* Old Ps still see everything. */
		uint64_t id = get(pool, 2, NULL);
		CHECK_EQ("get on old P after grow", id, 2); /* P2's private: 2 */
		put(pool, 2, id);
		struct ap_pool_stats st;
		ap_pool_stats(pool, 0, &st);
		CHECK_EQ("nothing lost yet", st.lost_pchange, 0);
		CHECK_EQ("held before new P", st.held_objects, 500);
		if (first_op_get)
			CHECK_EQ("get on new P", get(pool, 4, NULL), 0);
		else
			put(pool, 4, 1000);
		ap_pool_stats(pool, 0, &st);
		CHECK_EQ("lost to P change", st.lost_pchange, 500);
		CHECK_EQ("held after new P", st.held_objects, first_op_get ? 0 : 1);
		unsigned hits = 0;
		for (int i = 0; i < 600; i++)
			hits += get(pool, (unsigned)(i % 4), NULL) != 0;
		CHECK_EQ("hits after grow", hits, 0);
		ap_pool_free(pool);
	}

	/* Shrink 4 -> 3: 4 objects per P (1 private + 3 shared). */
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 4, 0);
	for (uint64_t x = 1; x <= 16; x++)
		put(pool, (unsigned)((x - 1) / 4), x);
	ap_pool_set_procs(pool, 3);
	unsigned hits = 0, run = 0;
	bool seen[17] = { false };
	for (unsigned i = 0; run < 3; i++) {
		uint64_t id = get(pool, i % 3, NULL);
		if (id) {
			hits++;
			seen[id] = true;
			run = 0;
		} else {
			run++;
		}
	}
	CHECK_EQ("hits after shrink", hits, 15);
	CHECK_EQ("P3's private unreachable", seen[13], false);
	ap_pool_free(pool);
}

/* §7.7: a 32 MiB object Put once: held through one cycle, gone at the second. */
static void test_large_object_two_cycles(void)
{
	const uint64_t big = 32u << 20;
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 0);
	struct ap_pool_stats st;
	ap_pool_put(pool, 0, 0, 0, 1, big);
	ap_pool_stats(pool, 0, &st);
	CHECK_EQ("held after put", st.held_bytes, big);
	ap_pool_cycle(pool, 1);
	ap_pool_stats(pool, 1, &st);
	CHECK_EQ("held after 1 cycle", st.held_bytes, big);
	ap_pool_cycle(pool, 2);
	ap_pool_stats(pool, 3, &st);
	CHECK_EQ("held after 2 cycles", st.held_bytes, 0);
	CHECK_EQ("lost bytes to cycles", st.lost_cycle_bytes, big);
	CHECK_EQ("peak", st.peak_held_bytes, big);
	/* Held for [0,2) of [0,3): mean two thirds of it. */
	CHECK_EQ("mean", (uint64_t)(st.mean_held_bytes + 0.5), (big * 2 + 1) / 3);
	ap_pool_free(pool);
}

/* §3.4-5 on several Ps: steal order (P+1 first, oldest first, private slots
 * never stolen) and victim order (own private, then tails from P on). */
static void test_steal_and_victim_order(void)
{
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 3, 0);
	put(pool, 0, 1); /* private */
	put(pool, 0, 2);
	put(pool, 0, 3);
	put(pool, 1, 4); /* private */
	put(pool, 1, 5);
	put(pool, 2, 6); /* private */
	/* P2: own private 6, then steal P0 (p+1 wraps) tails 2, 3, then P1's 5. */
	expect_gets(pool, 2, "steal order", (uint64_t[]){ 6, 2, 3, 5, 0 },
		    (enum ap_pool_src[]){ AP_POOL_PRIVATE, AP_POOL_STOLEN, AP_POOL_STOLEN,
					  AP_POOL_STOLEN, AP_POOL_MISS }, 5);
	/* 1 and 4 are left in private slots; the victim now: */
	put(pool, 0, 7);
	put(pool, 1, 8);
	put(pool, 1, 9);
	put(pool, 2, 10);
	put(pool, 2, 11);
	put(pool, 0, 12);
	ap_pool_cycle(pool, 0);
	/* Victim: P0 private 1, shared [7 12]; P1 private 4, shared [8 9];
	 * P2 private 10, shared [11]. Get on P1: private 4, tails from P1: 8, 9,
	 * then P2: 11, then P0: 7, 12, then fail (1 and 10 unreachable). */
	expect_gets(pool, 1, "victim order", (uint64_t[]){ 4, 8, 9, 11, 7, 12, 0 }, NULL, 7);
	struct ap_pool_stats st;
	ap_pool_stats(pool, 0, &st);
	CHECK_EQ("left in victim private slots", st.lost_pchange, 2);
	CHECK_EQ("still held until the cycle", st.held_objects, 2);
	/* The disabled victim is skipped even by P0, whose private is there. */
	CHECK_EQ("disabled victim", get(pool, 0, NULL), 0);
	ap_pool_cycle(pool, 0);
	ap_pool_stats(pool, 0, &st);
	CHECK_EQ("not counted twice", st.lost_cycle, 0);
	CHECK_EQ("held after cycle", st.held_objects, 0);
	ap_pool_free(pool);
}

/* §2.1: nil and over-cap objects are dropped. */
static void test_drops(void)
{
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 1, 1000);
	CHECK_EQ("nil dropped", ap_pool_put(pool, 0, 0, 0, AP_POOL_NIL, 10), false);
	CHECK_EQ("over cap dropped", ap_pool_put(pool, 0, 0, 0, 1, 1001), false);
	CHECK_EQ("at cap kept", ap_pool_put(pool, 0, 0, 0, 2, 1000), true);
	struct ap_pool_stats st;
	ap_pool_stats(pool, 0, &st);
	CHECK_EQ("dropped nil", st.dropped_nil, 1);
	CHECK_EQ("dropped cap", st.dropped_cap, 1);
	CHECK_EQ("held", st.held_objects, 1);
	CHECK_EQ("get", get(pool, 0, NULL), 2);
	ap_pool_free(pool);
}

/* Deques grow past their first ring without reordering. */
static void test_deque_growth(void)
{
	struct ap_pool *pool = ap_pool_new(AP_POOL_SYNCPOOL, 2, 0);
	for (uint64_t x = 1; x <= 1000; x++)
		put(pool, 0, x);
	/* Wrap the ring: take some oldest from P1, add more. */
	for (uint64_t x = 2; x <= 300; x++)
		CHECK_EQ("steal oldest", get(pool, 1, NULL), x);
	for (uint64_t x = 1001; x <= 2000; x++)
		put(pool, 0, x);
	CHECK_EQ("private first", get(pool, 0, NULL), 1);
	for (uint64_t x = 2000; x >= 301 && failures < 10; x--)
		CHECK_EQ("newest first", get(pool, 0, NULL), x);
	CHECK_EQ("then empty", get(pool, 0, NULL), 0);
	ap_pool_free(pool);
}

/* The deques keep capacities as varints of 1 to 10 bytes, and ids only
 * once one is not 0: random Puts and Gets from both ends, through a pool
 * of id-less objects and one of numbered objects: every Get must find the
 * capacity that object was Put with, in both. */
static void test_deque_caps(void)
{
	enum { N = 20000 };
	static uint64_t cap_of[N + 1];
	struct ap_pool *anon = ap_pool_new(AP_POOL_SYNCPOOL, 2, 0);
	struct ap_pool *named = ap_pool_new(AP_POOL_SYNCPOOL, 2, 0);
	uint64_t rs = 88172645463325252ull, next = 1;
	for (int round = 0; round < 4 * N && next <= N && failures < 10; round++) {
		rs ^= rs << 13;
		rs ^= rs >> 7;
		rs ^= rs << 17;
		if (rs % 5 < 3) {
			/* a capacity of 0 to 64 bits */
			uint64_t cap = (rs >> 8) >> (rs % 64);
			cap_of[next] = cap;
			ap_pool_put(anon, 0, 0, 0, 0, cap);
			ap_pool_put(named, 0, 0, 0, next++, cap);
			continue;
		}
		unsigned p = (unsigned)(rs >> 3) & 1;	/* P0 the newest, P1 steals the oldest */
		struct ap_pool_obj a, b;
		enum ap_pool_src sa = ap_pool_get(anon, p, p, 0, &a);
		enum ap_pool_src sb = ap_pool_get(named, p, p, 0, &b);
		CHECK_EQ("same source", sa, sb);
		if (sa == AP_POOL_MISS || sb == AP_POOL_MISS)
			continue;
		CHECK_EQ("no id", a.id, 0);
		CHECK_EQ("capacity of the named", b.cap, cap_of[b.id]);
		CHECK_EQ("capacity of the id-less", a.cap, b.cap);
	}
	ap_pool_free(anon);
	ap_pool_free(named);
}

int main(void)
{
	test_one_p_orders();
	test_put_n_k_cycles();
	test_other_p_after_cycle();
	test_period_vs_cycle();
	test_bloat();
	test_procs_change();
	test_large_object_two_cycles();
	test_steal_and_victim_order();
	test_drops();
	test_deque_growth();
	test_deque_caps();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("pool model: all checks passed\n");
	return 0;
}
