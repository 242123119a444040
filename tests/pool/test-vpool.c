/* Unit tests of pool/vpool.h, the C pool advise means: on one shard it
 * hands out objects in the order of the model (docs/pool-model.md §5, the
 * one-P orders that tests/pool checks against Go's sync.Pool), releases
 * what two cycles age out, and under threads loses and duplicates
 * nothing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "vpool.h"

static int failures;

#define CHECK(what, got, want)                                                            \
	do {                                                                              \
		long long g_ = (long long)(got), w_ = (long long)(want);                   \
		if (g_ != w_) {                                                           \
			fprintf(stderr, "%s:%d: %s: got %lld, want %lld\n", __func__, __LINE__, \
				what, g_, w_);                                            \
			failures++;                                                       \
		}                                                                         \
	} while (0)

static long released;

static void count_release(void *obj, void *ctx)
{
	(void)obj;
	(void)ctx;
	released++;
}

/* Objects are the addresses of these. */
static char objs[5];
#define OBJ(i) ((void *)&objs[i])
static long IDX(void *p)
{
	return p ? (long)((char *)p - objs) : -1;
}

static void put_all(struct vpool *p)
{
	for (int i = 0; i < 5; i++)
		vpool_put(p, OBJ(i));
}

static void test_orders(void)
{
	struct vpool p;
	static const int fresh[] = { 0, 4, 3, 2, 1 }, aged[] = { 0, 1, 2, 3, 4 };
	for (int cycles = 0; cycles <= 2; cycles++) {
		released = 0;
		vpool_init(&p, 1, count_release, NULL);
		put_all(&p);
		for (int c = 0; c < cycles; c++)
			vpool_cycle(&p);
		for (int i = 0; i < 5; i++) {
			void *x = vpool_get(&p);
			CHECK("order", IDX(x), cycles == 0 ? fresh[i] : cycles == 1 ? aged[i] : -1);
		}
		CHECK("released", released, cycles == 2 ? 5 : 0);
		vpool_destroy(&p);
	}
	/* Put a, Put b, Get -> a, Put c, Get -> c, Get -> b. */
	vpool_init(&p, 1, count_release, NULL);
	vpool_put(&p, OBJ(0));
	vpool_put(&p, OBJ(1));
	CHECK("a", IDX(vpool_get(&p)), 0);
	vpool_put(&p, OBJ(2));
	CHECK("c", IDX(vpool_get(&p)), 2);
	CHECK("b", IDX(vpool_get(&p)), 1);
	CHECK("empty", IDX(vpool_get(&p)), -1);
	vpool_destroy(&p);
	/* More than a deque's first ring: 100 objects through one cycle. */
	released = 0;
	vpool_init(&p, 1, count_release, NULL);
	for (uintptr_t i = 1; i <= 100; i++)
		vpool_put(&p, (void *)(i * 16));
	vpool_cycle(&p);
	uintptr_t want[100];
	want[0] = 16;
	for (int i = 1; i < 100; i++)
		want[i] = (uintptr_t)(i + 1) * 16;
	for (int i = 0; i < 100; i++)
		CHECK("100 through a cycle", (uintptr_t)vpool_get(&p), want[i]);
	CHECK("100: then empty", (uintptr_t)vpool_get(&p), 0);
	vpool_destroy(&p);
	CHECK("100: nothing released", released, 0);
}

/* Threads that get (or allocate), hold, and put back, and one that runs
 * cycles: every object made is in the end released exactly once. */
static struct vpool shared;
static atomic_long made, freed;

static void free_obj(void *obj, void *ctx)
{
	(void)ctx;
	if (*(long *)obj != 0x5eed)
		abort();	/* not an object, or released twice */
	*(long *)obj = 0;
	free(obj);
	atomic_fetch_add(&freed, 1);
}

static void *worker(void *arg)
{
	unsigned x = (unsigned)(uintptr_t)arg;
	long *held[8];
	for (int r = 0; r < 20000; r++) {
		int n = 1 + (int)((x = x * 1103515245u + 12345u) >> 16) % 8;
		for (int i = 0; i < n; i++) {
			held[i] = vpool_get(&shared);
			if (held[i] && *held[i] != 0x5eed)
				abort();
			if (!held[i]) {
				held[i] = malloc(sizeof(long));
				*held[i] = 0x5eed;
				atomic_fetch_add(&made, 1);
			}
		}
		for (int i = 0; i < n; i++)
			vpool_put(&shared, held[i]);
	}
	return NULL;
}

static atomic_int stop;

static void *cycler(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		vpool_cycle(&shared);
	return NULL;
}

static void test_threads(void)
{
	vpool_init(&shared, 4, free_obj, NULL);
	pthread_t w[4], c;
	pthread_create(&c, NULL, cycler, NULL);
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&w[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(c, NULL);
	vpool_destroy(&shared);
	CHECK("threads: every object released once", atomic_load(&freed), atomic_load(&made));
	if (atomic_load(&made) < 8) {
		fprintf(stderr, "threads: only %ld objects made\n", atomic_load(&made));
		failures++;
	}
}

/* vpool_get_from says where each object came from: the private slot
 * (fresh, or aged one cycle: victim), this CPU's deque, the old deque
 * after a cycle (victim); another CPU's deque (stolen) when this one's is
 * empty; and leaves src alone on a miss. */
static void test_sources(void)
{
	struct vpool p;
	int src;
	vpool_init(&p, 1, count_release, NULL);
	vpool_put(&p, OBJ(0));	/* private */
	vpool_put(&p, OBJ(1));	/* deque */
	src = 0;
	CHECK("private obj", IDX(vpool_get_from(&p, &src)), 0);
	CHECK("private src", src, VPOOL_PRIVATE);
	CHECK("shared obj", IDX(vpool_get_from(&p, &src)), 1);
	CHECK("shared src", src, VPOOL_SHARED);
	src = 99;
	CHECK("miss", IDX(vpool_get_from(&p, &src)), -1);
	CHECK("miss src", src, 99);
	vpool_put(&p, OBJ(2));	/* private */
	vpool_put(&p, OBJ(3));	/* deque */
	vpool_cycle(&p);
	CHECK("aged private obj", IDX(vpool_get_from(&p, &src)), 2);
	CHECK("aged private src", src, VPOOL_VICTIM);
	CHECK("old deque obj", IDX(vpool_get_from(&p, &src)), 3);
	CHECK("old deque src", src, VPOOL_VICTIM);
	vpool_destroy(&p);
	/* Two shards: an object on the other CPU's deque is stolen. */
	vpool_init(&p, 2, count_release, NULL);
	unsigned mine = vpool_cpu_(&p), other = (mine + 1) % 2;
	vpool_lock_(&p.sh[other]);
	vpool_push_(&p.sh[other].cur, OBJ(4));
	atomic_fetch_add(&p.sh[other].count, 1);
	vpool_unlock_(&p.sh[other]);
	if (vpool_cpu_(&p) == mine) {	/* not migrated meanwhile */
		CHECK("stolen obj", IDX(vpool_get_from(&p, &src)), 4);
		CHECK("stolen src", src, VPOOL_STOLEN);
	}
	vpool_destroy(&p);
}

int main(void)
{
	test_orders();
	test_sources();
	test_threads();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("vpool: all checks passed\n");
	return 0;
}
