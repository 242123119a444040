/* The pool model (report/pool.c, kind AP_POOL_VPOOL) against pool/vpool.h
 * itself: random get/put/cycle/thread-exit scripts on several threads and
 * CPUs run through both, and every Get must return the same object (or
 * miss in both); what each has released and still holds must agree after
 * every script. The threads are real (vpool.h's private slots are
 * thread-specific data, released by a key destructor at thread exit); they
 * take turns, so the order is the script's. The CPU a thread is on is the
 * script's too: this program defines sched_getcpu(), which vpool.h calls. */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ap_pool.h"
#include "vpool.h"

static int failures;

#define CHECK(what, got, want)                                                                 \
	do {                                                                                   \
		long long g_ = (long long)(got), w_ = (long long)(want);                        \
		if (g_ != w_) {                                                                \
			fprintf(stderr, "script %d op %d: %s: vpool.h %lld, model %lld\n", script_no, \
				op_no, what, g_, w_);                                         \
			failures++;                                                            \
		}                                                                              \
	} while (0)

static int script_no, op_no;

/* The CPU vpool.h sees: the script's, per thread. */
static _Thread_local int cur_cpu;

int sched_getcpu(void)
{
	return cur_cpu;
}

static struct vpool pool;
static long released;

static void count_release(void *obj, void *ctx)
{
	(void)obj;
	(void)ctx;
	released++;
}

/* A script thread, waiting for its turn. */
enum { CMD_NONE, CMD_GET, CMD_PUT, CMD_EXIT };
struct worker {
	pthread_t th;
	int cmd, cpu;
	void *obj;	/* put: the object; get: what came back */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (w->cmd == CMD_NONE)
			pthread_cond_wait(&cv, &mu);
		int cmd = w->cmd;
		if (cmd == CMD_EXIT) {
			/* The key destructor runs once this returns. */
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		cur_cpu = w->cpu;
		if (cmd == CMD_GET)
			w->obj = vpool_get(&pool);
		else
			vpool_put(&pool, w->obj);
		w->cmd = CMD_NONE;
		pthread_cond_broadcast(&cv);
	}
}

static void run_cmd(struct worker *w, int cmd, int cpu, void *obj)
{
	pthread_mutex_lock(&mu);
	w->cmd = cmd;
	w->cpu = cpu;
	w->obj = obj;
	pthread_cond_broadcast(&cv);
	if (cmd == CMD_EXIT) {
		pthread_mutex_unlock(&mu);
		pthread_join(w->th, NULL);
		return;
	}
	while (w->cmd != CMD_NONE)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ull) >> 33) % n;
}

#define MAXT 4		/* threads alive at once */
#define MAXHELD 64

static void *obj_of(uint64_t id)
{
	return (void *)(uintptr_t)(id * 16);
}

static uint64_t hits_total, gets_total, exits_total;

static void run_script(int len)
{
	unsigned nshards = 1 + rnd(3);
	vpool_init(&pool, nshards, count_release, NULL);
	released = 0;
	struct ap_pool *model = ap_pool_new(AP_POOL_VPOOL, nshards, 0);
	struct worker w[MAXT];
	uint32_t tid[MAXT];	/* the model's thread number of each slot */
	uint32_t next_tid = 0;
	for (int k = 0; k < MAXT; k++) {
		w[k].cmd = CMD_NONE;
		tid[k] = next_tid++;
		pthread_create(&w[k].th, NULL, worker_main, &w[k]);
	}
	uint64_t held[MAXHELD], next_id = 1;
	int nheld = 0;
	long puts = 0, hits = 0;
	int cpu_range = (int)nshards + 1;	/* a CPU past the shards folds in */
	for (op_no = 0; op_no < len; op_no++) {
		int k = (int)rnd(MAXT), cpu = (int)rnd((uint32_t)cpu_range);
		unsigned p = (unsigned)cpu % nshards;
		uint32_t r = rnd(100);
		if (r < 7) {
			vpool_cycle(&pool);
			ap_pool_cycle(model, 0);
		} else if (r < 11) {
			run_cmd(&w[k], CMD_EXIT, 0, NULL);
			ap_pool_thread_exit(model, tid[k], 0);
			exits_total++;
			w[k].cmd = CMD_NONE;
			tid[k] = next_tid++;
			pthread_create(&w[k].th, NULL, worker_main, &w[k]);
		} else if (r < 55 || nheld == 0) {
			run_cmd(&w[k], CMD_GET, cpu, NULL);
			struct ap_pool_obj o;
			enum ap_pool_src src = ap_pool_get(model, tid[k], p, 0, &o);
			uint64_t got = src == AP_POOL_MISS ? 0 : o.id;
			CHECK("get", (uintptr_t)w[k].obj / 16, got);
			gets_total++;
			if (got)
				hits++;
			if (nheld < MAXHELD)
				held[nheld++] = got ? got : next_id++;
		} else {
			int j = (int)rnd((uint32_t)nheld);
			run_cmd(&w[k], CMD_PUT, cpu, obj_of(held[j]));
			ap_pool_put(model, tid[k], p, 0, held[j], 1);
			puts++;
			held[j] = held[--nheld];
		}
	}
	/* Before the threads exit: what each released and still holds. */
	struct ap_pool_stats st;
	ap_pool_stats(model, 0, &st);
	CHECK("released", released, st.lost_cycle + st.lost_exit);
	CHECK("held", puts - hits - released, st.held_objects);
	for (int k = 0; k < MAXT; k++) {
		run_cmd(&w[k], CMD_EXIT, 0, NULL);
		ap_pool_thread_exit(model, tid[k], 0);
	}
	ap_pool_stats(model, 0, &st);
	CHECK("released after exits", released, st.lost_cycle + st.lost_exit);
	hits_total += (uint64_t)hits;
	vpool_destroy(&pool);
	ap_pool_free(model);
}

int main(void)
{
	rng = 0x9e3779b97f4a7c15ull;
	for (script_no = 0; script_no < 300 && failures < 20; script_no++)
		run_script(20 + (int)rnd(200));
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	/* The scripts must have exercised the pool. */
	if (hits_total < gets_total / 4 || exits_total < 100) {
		fprintf(stderr, "only %" PRIu64 " hits of %" PRIu64 " gets, %" PRIu64 " exits\n",
			hits_total, gets_total, exits_total);
		return 1;
	}
	printf("model == vpool.h: %" PRIu64 " gets, %" PRIu64 " hits, %" PRIu64 " thread exits\n",
	       gets_total, hits_total, exits_total);
	return 0;
}
