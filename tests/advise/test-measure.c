/* Unit tests of the measured replay (report/measure.c, measure/runner.c)
 * on synthetic traces whose allocator calls and pool hits are known by
 * construction: the script replays every call once, a pool per site or
 * per size class hits where it must, blocks passed between threads are
 * replayed in order, the median's interval is the sign test's, and the
 * runs go on the CPUs advise chooses from the trace's allowed_cpus.
 * usage: test-measure RUNNER (allocprof-replay's path) */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ap_advise.h"
#include "ap_measure.h"
#include "ap_replay.h"
#include "ap_check.h"
#include "ap_trace_compact.h"
#include "ap_trace_writer.h"
#include "script.h"
#include "synth.h"

/* got == want, within rounding */
#define EQ(what, got, want)                                                                 \
	CHECK(fabs((double)(got) - (double)(want)) <= 1e-9 * fabs((double)(want)) + 1e-9,  \
	      "%s: got %.9g, want %.9g", what, (double)(got), (double)(want))

static const char *runner;

/* One round per variant is enough for the counts: they do not vary. */
static uint64_t measure_joined(const struct ap_trace *t, const uint32_t *sites, size_t nsites,
			       const struct ap_replay_join *joins, size_t njoins,
			       const struct ap_measure_job *jobs, size_t n, struct ap_measured *out,
			       struct ap_run_cost *base)
{
	struct ap_error err;
	struct ap_script *s = ap_script_build(t, sites, nsites, joins, njoins, NULL, 0, 0, 0, &err);
	if (!s) {
		fprintf(stderr, "script: %s\n", err.msg);
		exit(1);
	}
	struct ap_measure_opts o;
	ap_measure_opts_init(&o);
	o.runner = runner;
	o.min_rounds = o.max_rounds = 2;
	struct ap_run_cost rec;
	if (ap_measure(s, jobs, n, &o, out, base, &rec, &err) < 0) {
		fprintf(stderr, "measure: %s\n", err.msg);
		exit(1);
	}
	EQ("no recorded runs without a sampler", rec.cpu_ns, 0);
	uint64_t ops = ap_script_ops(s);
	ap_script_free(s);
	return ops;
}

static uint64_t measure(const struct ap_trace *t, const uint32_t *sites, size_t nsites,
			const struct ap_measure_job *jobs, size_t n, struct ap_measured *out,
			struct ap_run_cost *base)
{
	return measure_joined(t, sites, nsites, NULL, 0, jobs, n, out, base);
}

/* One thread: 100 rounds of a 100-byte and a 10000-byte block (sites 0
 * and 1), each freed before the next; then 50 blocks of site 0 grown
 * from 100 to 300 bytes by realloc and freed. */
static struct ap_trace *one_thread_trace(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = 1;
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[2][1] = { { 0x1000 }, { 0x2000 } };
	uint32_t st[2] = { ap_tw_stack(tw, pcs[0], 1), ap_tw_stack(tw, pcs[1], 1) };
	ap_tw_thread(tw, 1000, "main");
	uint64_t ts = START + 1000;
	for (int i = 0; i < 100; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x100000, 100, st[0]);
		ap_tw_free(tw, 1000, ts++, 0, 0x100000);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_CALLOC, 0x200000, 10000, st[1]);
		ap_tw_free(tw, 1000, ts++, 0, 0x200000);
	}
	for (int i = 0; i < 50; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x300000, 100, st[0]);
		ap_tw_realloc(tw, 1000, ts++, 0, AP_KIND_REALLOC, 0x300000, 0x310000, 300, st[0],
			      AP_RF_OLD_TRACKED | AP_RF_NEW_SAMPLED);
		ap_tw_free(tw, 1000, ts++, 0, 0x310000);
	}
	return synth_finish(tw, ts);
}

static void test_one_thread(void)
{
	struct ap_trace *t = one_thread_trace();
	uint32_t sites[3] = { UINT32_MAX, 0, 1 };	/* stack 0 is no stack */

	/* site 0 alone; site 1 alone; site 0 with size classes of 128 and
	 * 512 bytes. */
	struct ap_measure_job jobs[3] = {
		{ .site = 0 },
		{ .site = 1 },
		{ .site = 0, .classes = { 128, 512 }, .nclasses = 2 },
	};
	struct ap_measured out[3];
	struct ap_run_cost base;
	measure(t, sites, 2, jobs, 3, out, &base);
	/* 250 births, 50 reallocs, 250 frees */
	/* 250 births, 50 reallocs, 250 frees */
	EQ("baseline calls", base.calls, 550);
	EQ("baseline hits", base.hits, 0);
	/* one thread: no switch of its own to price, the probe is not run */
	EQ("one thread: no switch cost", base.switch_ns, 0);
	/* Site 0, one pool: 150 Gets, the first misses. The first growing
	 * object is a 100-byte one grown to 300 (a real realloc), and keeps
	 * 300 bytes: the other 49 reallocs fit. 149 hits; left: site 0's
	 * first malloc and that realloc, site 1's 200 calls. */
	EQ("site 0 hits", out[0].cost.hits, 149);
	EQ("site 0 calls", out[0].cost.calls, 202);
	/* Site 1: 100 callocs, 99 hits (zeroed by the runner: no call), its
	 * frees all Puts; site 0's 350 calls stay. */
	EQ("site 1 hits", out[1].cost.hits, 99);
	EQ("site 1 calls", out[1].cost.calls, 351);
	/* Site 0 in classes of 128 and 512 bytes: the first phase as above
	 * (1 miss, 99 hits, in the 128 class). The first growing object hits
	 * (100 hits), grows to 300 (a realloc) and goes back to the 512
	 * class, where no request of 100 looks: the other 49 miss, and each
	 * grows by a real realloc: 1 + 1 + 49 x 2 + site 1's 200. */
	EQ("classes hits", out[2].cost.hits, 100);
	EQ("classes calls", out[2].cost.calls, 300);
	for (int k = 0; k < 3; k++)
		EQ("rounds", out[k].rounds, 2);
	ap_trace_free(t);
}

/* The runner's free list (--free-list: ap_measure_job.free_list): a
 * LIFO of each thread's, no cycles, FREE_LIST_MAX (65536) blocks at most,
 * the capacity kept as a vpool's blocks keep it. */
static void test_free_list(void)
{
	/* test_one_thread's trace: one thread, no cycles, a vpool and a
	 * free list hit alike (the vpool's private slot and deque hand the
	 * last block Put first, as a LIFO does) */
	struct ap_trace *t = one_thread_trace();
	uint32_t sites[3] = { UINT32_MAX, 0, 1 };
	struct ap_tw *tw;
	uint64_t ts;
	struct ap_measure_job jobs[6] = {
		{ .site = 0 },
		{ .site = 0, .free_list = true },
		{ .site = 1, .free_list = true },
		{ .site = 0, .classes = { 128, 512 }, .nclasses = 2, .free_list = true },
		/* a cap below the grown blocks: those are freed, not kept */
		{ .site = 0, .cap = 200, .free_list = true },
		{ .site = 0, .cap = 200 },
	};
	struct ap_measured out[6];
	struct ap_run_cost base;
	measure(t, sites, 2, jobs, 6, out, &base);
	EQ("baseline calls", base.calls, 550);
	/* as test_one_thread's vpool: the grown block's capacity kept */
	EQ("free list: site 0 hits", out[1].cost.hits, 149);
	EQ("free list: site 0 calls", out[1].cost.calls, 202);
	EQ("free list and vpool: site 0 hits", out[1].cost.hits, out[0].cost.hits);
	EQ("free list: site 1 hits", out[2].cost.hits, 99);
	EQ("free list: site 1 calls", out[2].cost.calls, 351);
	EQ("free list, classes: hits", out[3].cost.hits, 100);
	EQ("free list, classes: calls", out[3].cost.calls, 300);
	/* capped at 200: the first phase as before (1 miss, 99 hits); the
	 * first growing object hits, grows to 300 (a realloc) and is freed;
	 * each of the other 49 misses, grows by a realloc and is freed:
	 * 1 + 1 + 1 + 49 x 3 + site 1's 200; as the vpool's */
	EQ("free list, cap: hits", out[4].cost.hits, 100);
	EQ("free list, cap: calls", out[4].cost.calls, 350);
	EQ("free list and vpool, cap: calls", out[4].cost.calls, out[5].cost.calls);
	ap_trace_free(t);

	/* Cycles: 200 blocks of 4 KiB made and freed one at a time, two
	 * cycles after every event. A vpool drops what was Put two cycles
	 * ago: no hit; the free list keeps it: every Get but the first hits. */
	uint32_t s0;
	tw = synth_one_thread(&s0);
	ts = START + 1000;
	for (int i = 0; i < 200; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x100000, 4096, s0);
		ap_tw_free(tw, 1000, ts++, 0, 0x100000);
	}
	t = synth_finish(tw, ts);
	double cyc[800];
	for (int i = 0; i < 400; i++)
		cyc[2 * i] = cyc[2 * i + 1] = i + 0.5;
	struct ap_error err;
	struct ap_script *sc = ap_script_build(t, sites, 2, NULL, 0, cyc, 800, 0, 0, &err);
	CHECK(sc != NULL, "script: %s", err.msg);
	if (sc) {
		struct ap_measure_opts o;
		ap_measure_opts_init(&o);
		o.runner = runner;
		o.min_rounds = o.max_rounds = 2;
		struct ap_run_cost rec;
		struct ap_measure_job cj[2] = { { .site = 0 }, { .site = 0, .free_list = true, .beside = true } };
		CHECK(ap_measure(sc, cj, 2, &o, out, &base, &rec, &err) == 0, "measure: %s", err.msg);
		EQ("cycles: vpool hits", out[0].cost.hits, 0);
		/* (its releases are the pool's frees, not counted) */
		EQ("cycles: vpool calls", out[0].cost.calls, 200);
		EQ("cycles: free list hits", out[1].cost.hits, 199);
		EQ("cycles: free list calls", out[1].cost.calls, 1);
		ap_script_free(sc);
	}
	ap_trace_free(t);

	/* The bound: 70000 blocks live, freed, made again and freed. The
	 * list keeps 65536 of them and frees the rest: 65536 hits the
	 * second time, 70000 + 4464 + 4464 + 4464 calls. */
	tw = synth_one_thread(&s0);
	ts = START + 1000;
	for (int r = 0; r < 2; r++) {
		for (uint64_t i = 0; i < 70000; i++)
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x1000000 + i * 0x100, 32, s0);
		for (uint64_t i = 0; i < 70000; i++)
			ap_tw_free(tw, 1000, ts++, 0, 0x1000000 + i * 0x100);
	}
	t = synth_finish(tw, ts);
	struct ap_measure_job bj = { .site = 0, .free_list = true };
	measure(t, sites, 2, &bj, 1, out, &base);
	EQ("bound: baseline calls", base.calls, 280000);
	EQ("bound: free list hits", out[0].cost.hits, 65536);
	EQ("bound: free list calls", out[0].cost.calls, 70000 + 3 * 4464);
	ap_trace_free(t);
}

/* A trace of process 1000 on `cpus` CPUs, with one stack (*st) and
 * the threads 1000 ("main") and 1001... named in `names`. */
static struct ap_tw *threads_tw(unsigned cpus, uint32_t *st, const char *const *names, int n)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = cpus;
	h.start_ns = START;
	h.pid = 1000;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x1000;
	*st = ap_tw_stack(tw, &pc, 1);
	for (int k = 0; k < n; k++)
		ap_tw_thread(tw, 1000 + (uint32_t)k, names[k]);
	return tw;
}

/* Two threads: thread 1 allocates n blocks, thread 2 frees each (a
 * handoff), interleaved in time. */
static struct ap_trace *handoff_trace(int n)
{
	static const char *const names[] = { "main", "worker" };
	uint32_t st;
	struct ap_tw *tw = threads_tw(2, &st, names, 2);
	uint64_t ts = START + 1000;
	for (int i = 0; i < n; i++) {
		uint64_t a = 0x100000 + (uint64_t)(i % 7) * 0x1000;
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, a, 64 + (uint64_t)i % 300, st);
		ap_tw_free(tw, 1001, ts++, 1, a);
	}
	return synth_finish(tw, ts);
}

/* A reader thread and a worker, started by main, as bench/twins' relay:
 * the reader makes n records of 2 to 8 KiB into a ring of `ring` slots,
 * and when it is full the worker frees the oldest half; the reader is
 * then `ring` / 2 to `ring` records ahead of it. born[f]: the records
 * made before the f-th free. */
static struct ap_trace *ring_trace(int n, int ring, int *born)
{
	static const char *const names[] = { "main", "reader", "worker" };
	uint32_t st;
	struct ap_tw *tw = threads_tw(1, &st, names, 3);
	uint64_t ts = START + 1000;
	ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x10000, 64, st);
	ap_tw_free(tw, 1000, ts++, 0, 0x10000);
	int made = 0, freed = 0;
	while (freed < n) {
		while (made < n && made - freed < ring) {
			uint64_t size = (2048 + (uint64_t)made * 7919 % 6145) & ~(uint64_t)7;
			ap_tw_alloc(tw, 1001, ts++, 0, AP_KIND_MALLOC, 0x100000 + (uint64_t)made * 0x10000,
				    size, st);
			made++;
		}
		int to = made < n ? made - ring / 2 : n;
		while (freed < to) {
			born[freed] = made;
			ap_tw_free(tw, 1002, ts++, 0, 0x100000 + (uint64_t)freed * 0x10000);
			freed++;
		}
	}
	return synth_finish(tw, ts);
}

/* 1000 blocks handed over: the replay must wait for each block and end
 * (no deadlock), with every call made once. */
static void test_handoff(void)
{
	struct ap_trace *t = handoff_trace(1000);
	uint32_t sites[2] = { UINT32_MAX, 0 };
	struct ap_measure_job job = { .site = 0 };
	struct ap_measured out;
	struct ap_run_cost base;
	uint64_t ops = measure(t, sites, 1, &job, 1, &out, &base);
	/* 2000 calls, a WAIT before each free (the block is main's), the
	 * worker's SPAWN, both threads' barrier at each of the windows 1..7
	 * of 256 events (2000 events), and main's WAITs on the worker's frees
	 * (report/measure.c, XF_LAG 16 and XF_EVERY 8): before allocation
	 * 16 + 8m, for the 8m-th free, m = 1..122 */
	EQ("handoff: ops", ops, 2000 + 1000 + 1 + 2 * 7 + 122);
	EQ("handoff: baseline calls", base.calls, 2000);
	/* two threads: the runner's switch probe priced a switch */
	CHECK(base.switch_ns > 0, "handoff: no switch cost measured (%g)", base.switch_ns);
	/* Every free is a Put (no call); a Get that misses mallocs, one that
	 * hits an object too small reallocs it. How many hit depends on how
	 * the two threads ran: the counts must add up. */
	EQ("handoff: no free called", out.cost.calls <= 1000, 1);
	EQ("handoff: every Get counted", out.cost.calls + out.cost.hits >= 1000, 1);
	ap_trace_free(t);
}

/* The script of t, whose stack 1 is site 0; NULL, a failure noted, when
 * it cannot be made. */
static struct ap_script *site0_script(const struct ap_trace *t, const char *what)
{
	static const uint32_t sites[2] = { UINT32_MAX, 0 };
	struct ap_error err;
	struct ap_script *s = ap_script_build(t, sites, 1, NULL, 0, NULL, 0, 0, 0, &err);
	CHECK(s != NULL, "%s: script: %s", what, err.msg);
	return s;
}

/* Options for `rounds` rounds of the runner, on `cpus` CPUs (0: all). */
static struct ap_measure_opts opts_of(unsigned rounds, unsigned cpus)
{
	struct ap_measure_opts o;
	ap_measure_opts_init(&o);
	o.runner = runner;
	o.min_rounds = o.max_rounds = rounds;
	o.cpus = cpus;
	return o;
}

/* The runs on the first k CPUs of this thread's mask (opts.cpus): the
 * runner says how many it may use, and the mask is the same after. */
static void test_pinned(void)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (int i = 0; i < 100; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x100000, 100, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x100000);
	}
	struct ap_trace *t = synth_finish(tw, ts);
	struct ap_script *s = site0_script(t, "pinned");
	if (!s)
		return;
	cpu_set_t before, after;
	CHECK(sched_getaffinity(0, sizeof(before), &before) == 0, "pinned: sched_getaffinity");
	unsigned here = ap_cpus_here();
	EQ("pinned: CPUs here", here, CPU_COUNT(&before));
	struct ap_measure_job job = { .site = 0 };
	struct ap_measured out;
	struct ap_run_cost base, rec;
	struct ap_error err;
	struct ap_measure_opts o = opts_of(2, 0);
	/* as they are: every CPU */
	CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "pinned: %s", err.msg);
	EQ("unpinned: the baseline's CPUs", base.cpus, here);
	EQ("unpinned: the pooled runs' CPUs", out.cost.cpus, here);
	/* one CPU (on a machine of one, the same as unpinned) */
	o.cpus = 1;
	CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "pinned: %s", err.msg);
	EQ("pinned: the baseline's CPUs", base.cpus, 1);
	EQ("pinned: the pooled runs' CPUs", out.cost.cpus, 1);
	CHECK(sched_getaffinity(0, sizeof(after), &after) == 0 && CPU_EQUAL(&before, &after),
	      "pinned: the mask is not restored: %d CPUs, %d before", CPU_COUNT(&after),
	      CPU_COUNT(&before));
	if (here < 2)
		fprintf(stderr, "test-measure: one CPU allowed here: pinning to one changes nothing\n");
	ap_script_free(s);
	ap_trace_free(t);
}

/* 50,000 blocks handed over on one CPU: the freeing thread sleeps while
 * the allocating one runs (they cannot run at once), and is woken when
 * the block it waits for is there, not at every block published before
 * it (which cost a futex call a block: ~50,000 wake-ups). The allocating
 * thread waits too, once it is 16 frees ahead of where it was in the
 * recorded order (here: at once after each alloc), for every 8th of them
 * (report/measure.c, XF_LAG, XF_EVERY): a wake-up each way every 8 to 24
 * blocks, ~4,200, and never more than one per 8 blocks. */
static void test_wakes(void)
{
	struct ap_trace *t = handoff_trace(50000);
	struct ap_script *s = site0_script(t, "wakes");
	if (!s)
		return;
	struct ap_measured out;
	struct ap_run_cost base, rec;
	struct ap_error err;
	struct ap_measure_opts o = opts_of(3, 1);
	CHECK(ap_measure(s, NULL, 0, &o, &out, &base, &rec, &err) == 0, "wakes: %s", err.msg);
	EQ("wakes: calls", base.calls, 100000);
	CHECK(base.wakes <= 50000 / 8, "wakes: %.0f wake-ups for 50000 blocks handed over", base.wakes);
	ap_script_free(s);
	ap_trace_free(t);
}

/* A consumer held behind its producer as it was (report/measure.c,
 * XB_LAG 16, XB_EVERY 8): 20,000 records handed over through a ring of
 * 1024, 512 to 1024 behind. Every free of the worker's must come after
 * the reader's birth of the record 16 + 8 before the last it had made
 * at that free in the recorded order: before, it waited for its own
 * record's birth alone, and a worker that does none of the program's
 * work on the records freed its way up to the reader, where glibc
 * trimmed the reader's arena and its next records faulted their pages
 * in again (bench/twins' relay, a ring of 1024: baselines of 15,000 to
 * 27,000 page faults where the recorded runs made 2,200 to 6,300, and
 * "pool", "within noise" or "unsure: replay faults" from one advise to
 * the next). The script is read back as the runner reads it
 * (measure/script.h), and replayed on one CPU to its end. */
static void test_consumer_held(void)
{
	enum { N = 20000, RING = 1024, HELD = 16 + 8 };
	static int born[N];
	struct ap_trace *t = ring_trace(N, RING, born);
	char path[] = "/tmp/test-measure-held-XXXXXX";
	int kfd = mkstemp(path);
	CHECK(kfd >= 0, "held: mkstemp");
	if (kfd < 0)
		return;
	close(kfd);
	setenv("ALLOCPROF_KEEP_SCRIPT", path, 1);
	struct ap_script *s = site0_script(t, "held");
	unsetenv("ALLOCPROF_KEEP_SCRIPT");
	FILE *f = fopen(path, "rb");
	unlink(path);
	CHECK(f != NULL, "held: the script kept");
	if (!s || !f) {
		if (f)
			fclose(f);
		ap_script_free(s);
		ap_trace_free(t);
		return;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	char *sc = malloc((size_t)len);
	if (!sc)
		abort();
	CHECK(fread(sc, 1, (size_t)len, f) == (size_t)len, "held: read the script");
	fclose(f);
	const struct ap_rs_header *h = (const void *)sc;
	const struct ap_rs_thread *ti = (const void *)(h + 1);
	const struct ap_rs_op *ops = (const void *)(sc + sizeof(*h) + h->nthreads * sizeof(*ti) +
						   ap_rs_sync_bytes(h->nsyncs));
	CHECK(h->nthreads == 3, "held: %u threads in the script", h->nthreads);
	if (h->nthreads == 3) {
		/* the reader's (thread 1) births: the count up to each op */
		const struct ap_rs_op *r = ops + ti[1].first;
		uint64_t *births = calloc(ti[1].nops + 1, sizeof(*births));
		if (!births)
			abort();
		for (uint64_t i = 0; i < ti[1].nops; i++)
			births[i + 1] = births[i] + (ap_rs_type(&r[i]) == AP_RS_MALLOC);
		const struct ap_rs_op *w = ops + ti[2].first;
		uint64_t waited = 0;	/* reader's births the worker has waited for */
		int frees = 0, behind = 0, worst = 0, at = -1;
		for (uint64_t i = 0; i < ti[2].nops; i++) {
			if (ap_rs_type(&w[i]) == AP_RS_WAIT && ap_rs_arg(&w[i]) == 1 &&
			    births[w[i].n + 1] > waited)
				waited = births[w[i].n + 1];
			if (ap_rs_type(&w[i]) != AP_RS_FREE)
				continue;
			int lag = born[frees] - (int)waited;
			if (lag > HELD)
				behind++;
			if (lag > worst) {
				worst = lag;
				at = frees;
			}
			frees++;
		}
		EQ("held: the worker's frees", frees, N);
		CHECK(behind == 0, "held: %d of %d frees with no wait for the reader's births up to %d "
		      "before where it was (%d at free %d)", behind, frees, HELD, worst, at);
		free(births);
	}
	free(sc);
	struct ap_measured out;
	struct ap_run_cost base, rec;
	struct ap_error err;
	struct ap_measure_opts o = opts_of(2, 1);
	CHECK(ap_measure(s, NULL, 0, &o, &out, &base, &rec, &err) == 0, "held: %s", err.msg);
	EQ("held: calls", base.calls, 2 * N + 2);
	ap_script_free(s);
	ap_trace_free(t);
}

/* ap_advise_replay_cpus: the recorded run's CPUs, at most those here;
 * --replay-cpus over them; all of them when the trace does not say. */
static void test_replay_cpus(void)
{
	struct {
		uint64_t recorded;
		unsigned asked, here, pin, replay;
		enum ap_replay_cpus_from from;
		const char *words;
	} c[] = {
		{ 1, 0, 2, 1, 1, AP_RCPUS_RECORDED, "replayed on 1 CPU, as recorded" },
		{ 2, 0, 2, 0, 2, AP_RCPUS_RECORDED, "replayed on 2 CPUs, as recorded" },
		{ 3, 0, 8, 3, 3, AP_RCPUS_RECORDED, "replayed on 3 CPUs, as recorded" },
		{ 4, 0, 2, 0, 2, AP_RCPUS_RECORDED, "replayed on 2 CPUs: the run had 4, 2 allowed here" },
		{ 0, 0, 2, 0, 2, AP_RCPUS_UNKNOWN,
		  "replayed on 2 CPUs, all allowed here: the trace does not say how many the run had" },
		{ 1, AP_REPLAY_CPUS_ALL, 2, 0, 2, AP_RCPUS_ALL,
		  "replayed on 2 CPUs (--replay-cpus all; the run had 1)" },
		{ 2, 1, 2, 1, 1, AP_RCPUS_ASKED, "replayed on 1 CPU (--replay-cpus 1; the run had 2)" },
		{ 0, 3, 2, 0, 2, AP_RCPUS_ASKED,
		  "replayed on 2 CPUs (--replay-cpus 3: 2 allowed here; the trace does not say how "
		  "many the run had)" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ap_trace t;
		struct ap_advice a;
		memset(&t, 0, sizeof(t));
		memset(&a, 0, sizeof(a));
		t.allowed_cpus = c[i].recorded;
		unsigned pin = ap_advise_replay_cpus(&a, &t, c[i].asked, c[i].here);
		CHECK(pin == c[i].pin && a.replay_cpus == c[i].replay && a.replay_cpus_from == c[i].from,
		      "replay cpus case %zu: pin %u, replay %u, from %d", i, pin, a.replay_cpus,
		      (int)a.replay_cpus_from);
		struct ap_buf b = AP_BUF_INIT;
		ap_advise_replay_cpus_words(&a, &b);
		CHECK(!strcmp(b.buf, c[i].words), "replay cpus case %zu: '%s'", i, b.buf);
		ap_buf_release(&b);
	}
}

static void test_interval(void)
{
	double lo, hi;
	double d6[6] = { 5, 1, 3, 2, 6, 4 };
	EQ("n=6 conf", ap_median_interval(d6, 6, &lo, &hi), 1 - 2.0 / 64);
	EQ("n=6 lo", lo, 1);
	EQ("n=6 hi", hi, 6);
	double d20[20];
	for (int i = 0; i < 20; i++)
		d20[i] = 20 - i;
	/* P(Bin(20, 1/2) <= 5) = 21700/2^20 <= 2.5% < P(<= 6): k = 6 */
	EQ("n=20 conf", ap_median_interval(d20, 20, &lo, &hi), 1 - 2 * 21700.0 / 1048576);
	EQ("n=20 lo", lo, 6);
	EQ("n=20 hi", hi, 15);
	double d3[3] = { 3, 1, 2 };
	EQ("n=3 conf", ap_median_interval(d3, 3, &lo, &hi), 0.75);
	EQ("n=3 lo", lo, 1);
	EQ("n=3 hi", hi, 3);
}

static void test_sampled(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = 4096;
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x1000;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, 1000, "main");
	ap_tw_alloc(tw, 1000, START + 1, 0, AP_KIND_MALLOC, 0x1000, 8192, st);
	struct ap_trace *t = synth_finish(tw, START + 2);
	uint32_t sites[2] = { UINT32_MAX, 0 };
	struct ap_error err;
	struct ap_script *s = ap_script_build(t, sites, 1, NULL, 0, NULL, 0, 0, 0, &err);
	EQ("sampled: no script", s != NULL, 0);
	EQ("sampled: says so", strstr(err.msg, "--all") != NULL, 1);
	ap_script_free(s);
	ap_trace_free(t);
}

/* The threads' barriers give each other slack: a thread goes past
 * barrier k once every thread of barrier k - AP_RS_SLACK has arrived
 * there. Two threads and AP_RS_SLACK barriers; the main thread allocates
 * a block after its barrier AP_RS_SLACK - 1, the other frees it before
 * its barrier 1: the main thread must run that far ahead without the
 * other (in lock step the two would wait for each other for ever). The
 * runner runs with an alarm: a hang is a failure. */
/* Runs the runner on the script sc (len bytes), the baseline, on the
 * first CPU of this thread's mask when one_cpu, and puts what it printed
 * in buf; a failure (or a hang, ended by SIGALRM) is noted as `what`'s. */
static void run_script(const void *sc, size_t len, bool one_cpu, char *buf, size_t bufsz,
		       const char *what)
{
	buf[0] = 0;
	char path[] = "/tmp/test-measure-script-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "%s: mkstemp", what);
	if (fd < 0)
		return;
	unlink(path);
	CHECK(write(fd, sc, len) == (ssize_t)len, "%s: write", what);
	int out[2];
	CHECK(pipe(out) == 0, "%s: pipe", what);
	pid_t pid = fork();
	if (!pid) {
		cpu_set_t set, one;
		if (one_cpu && sched_getaffinity(0, sizeof(set), &set) == 0) {
			CPU_ZERO(&one);
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &set)) {
					CPU_SET(c, &one);
					break;
				}
			sched_setaffinity(0, sizeof(one), &one);
		}
		dup2(fd, 3);
		dup2(out[1], 1);
		alarm(20);
		execl(runner, runner, "3", "-1", "0", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	size_t got = 0;
	ssize_t n;
	while (got < bufsz - 1 && (n = read(out[0], buf + got, bufsz - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	close(out[0]);
	close(fd);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the runner %s %d (a hang ends by SIGALRM)",
	      what, WIFEXITED(st) ? "exited" : "died of signal",
	      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void test_slack(void)
{
	enum { NB = AP_RS_SLACK, NMAIN = 1 + NB + 1, NOTHER = 1 + 2 + (NB - 1) };
	struct {
		struct ap_rs_header h;
		struct ap_rs_thread t[2];
		uint32_t sync[(NB + 1) & ~1u];
		struct ap_rs_op op[NMAIN + NOTHER];
	} sc;
	memset(&sc, 0, sizeof(sc));
	_Static_assert(sizeof(sc) == sizeof(struct ap_rs_header) + 2 * sizeof(struct ap_rs_thread) +
					 ((NB * sizeof(uint32_t) + 7) & ~(size_t)7) +
					 (NMAIN + NOTHER) * sizeof(struct ap_rs_op),
		       "the script's layout");
	memcpy(sc.h.magic, AP_RS_MAGIC, 8);
	sc.h.version = AP_RS_VERSION;
	sc.h.nthreads = 2;
	sc.h.nslots = 1;
	sc.h.nops = NMAIN + NOTHER;
	sc.h.main_thread = 0;
	sc.h.nsites = 0;
	sc.h.nsyncs = NB;
	sc.t[0] = (struct ap_rs_thread){ .first = 0, .nops = NMAIN, .spawner = UINT32_MAX };
	sc.t[1] = (struct ap_rs_thread){ .first = NMAIN, .nops = NOTHER, .spawner = 0 };
	for (unsigned k = 0; k < NB; k++)
		sc.sync[k] = 2;
	struct ap_rs_op *o = sc.op;
	*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_SPAWN, 1) };
	for (unsigned k = 0; k < NB; k++)
		*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_SYNC, 0), .n = k };
	uint64_t born = (uint64_t)(o - sc.op);
	*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_MALLOC, AP_RS_NOSITE) | AP_RS_PUBLISH,
				  .slot = 0, .n = 64 };
	*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_SYNC, 0), .n = 0 };
	*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_WAIT, 0), .n = born };
	*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_FREE, 0), .slot = 0 };
	for (unsigned k = 1; k < NB; k++)
		*o++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_SYNC, 0), .n = k };
	CHECK(o == sc.op + NMAIN + NOTHER, "slack: %td ops written", o - sc.op);
	char buf[512];
	run_script(&sc, sizeof(sc), false, buf, sizeof(buf), "slack");
	CHECK(strstr(buf, " calls=2 "), "slack: the runner printed '%s', not calls=2", buf);
}

/* Four threads free the blocks main makes, each every fourth, and main
 * waits after each block for the free of the one before, so that the
 * others fall asleep on later blocks of main's: each is woken when its
 * block is there, never before (a wake-up of every sleeper at the first
 * one's block woke the others to sleep again; measure/runner.c,
 * publish), on one CPU and on all. */
static void test_targeted_wakes(void)
{
	enum { NB = 4000, NC = 4, NWAITS = NB - 1 };
	enum { NMAIN = NC + NB + NWAITS, NCONS = 2 * NB / NC };
	struct {
		struct ap_rs_header h;
		struct ap_rs_thread t[1 + NC];
		struct ap_rs_op op[NMAIN + NC * NCONS];
	} *sc = calloc(1, sizeof(*sc));
	memcpy(sc->h.magic, AP_RS_MAGIC, 8);
	sc->h.version = AP_RS_VERSION;
	sc->h.nthreads = 1 + NC;
	sc->h.nslots = NB;
	sc->h.nops = NMAIN + NC * NCONS;
	sc->h.main_thread = 0;
	sc->h.nsites = 0;
	sc->t[0] = (struct ap_rs_thread){ .first = 0, .nops = NMAIN, .spawner = UINT32_MAX };
	for (unsigned k = 1; k <= NC; k++)
		sc->t[k] = (struct ap_rs_thread){ .first = NMAIN + (k - 1) * NCONS, .nops = NCONS,
						  .spawner = 0 };
	struct ap_rs_op *m = sc->op;
	for (unsigned k = 1; k <= NC; k++)
		*m++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_SPAWN, k) };
	for (unsigned j = 0; j < NB; j++) {
		/* block j: born by main, freed by thread 1 + j % NC, its
		 * (j / NC)-th: a WAIT for the birth, then the FREE */
		uint64_t born = (uint64_t)(m - sc->op);
		*m++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_MALLOC, AP_RS_NOSITE) | AP_RS_PUBLISH,
					  .slot = j, .n = 64 + j % 200 };
		struct ap_rs_op *c = sc->op + sc->t[1 + j % NC].first + 2 * (j / NC);
		c[0] = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_WAIT, 0), .n = born };
		c[1] = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_FREE, 0) | AP_RS_PUBLISH, .slot = j };
		if (j) {
			unsigned b = j - 1;	/* its free's op in its thread */
			*m++ = (struct ap_rs_op){ .w = ap_rs_word(AP_RS_WAIT, 1 + b % NC),
						  .n = 2 * (b / NC) + 1 };
		}
	}
	CHECK(m == sc->op + NMAIN, "targeted: %td of main's ops written", m - sc->op);
	for (int one = 0; one < 2; one++) {
		const char *what = one ? "targeted, one CPU" : "targeted";
		char buf[512];
		run_script(sc, sizeof(*sc), one, buf, sizeof(buf), what);
		unsigned long long early = ~0ull, wakes = 0;
		const char *e = strstr(buf, " early="), *w = strstr(buf, " wakes=");
		if (e)
			sscanf(e, " early=%llu", &early);
		if (w)
			sscanf(w, " wakes=%llu", &wakes);
		CHECK(strstr(buf, " calls=8000 "), "%s: the runner printed '%s', not calls=8000", what, buf);
		CHECK(early == 0, "%s: %llu threads woken before their block was there (%llu woken)", what,
		      early, wakes);
		if (one)
			CHECK(wakes > 0, "%s: no thread slept on main's blocks ('%s')", what, buf);
	}
	free(sc);
}

/* Growth by copy: 50 objects of stack 1 (function "grow") born at 100
 * bytes, grown by hand at stack 2 (the same function, another line) to
 * 200: a new block, then the old one freed at once; beside them blocks
 * that are not one object's: a 400-byte block of stack 3 (function
 * "other") before a free of stack 1's (another function), and a 180-byte
 * one of stack 2 before a free of a 100-byte one (1.8 times: not grown
 * as a container grows). Then, in function "append" (stacks 4 and 5),
 * 10 blocks of 100 bytes grown to 250 (more than twice: what an append
 * needs) at another line, joined, and 10 at the same line, not.
 * ap_advise_joins finds the 60 growths and no other; the script replays
 * each as a malloc, a copy and a free, and a pool at stack 1 hands its
 * 200-byte object out again: after the first, nothing grows. */
static void test_growth_by_copy(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = 1;
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[5][1] = { { 0x1000 }, { 0x1010 }, { 0x2000 }, { 0x3000 }, { 0x3010 } };
	uint32_t st[5];
	for (int k = 0; k < 5; k++)
		st[k] = ap_tw_stack(tw, pcs[k], 1);
	ap_tw_thread(tw, 1000, "main");
	uint64_t ts = START + 1000;
	for (int i = 0; i < 50; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x300000, 100, st[0]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x310000, 200, st[1]);
		ap_tw_free(tw, 1000, ts++, 0, 0x300000);
		ap_tw_free(tw, 1000, ts++, 0, 0x310000);
	}
	for (int i = 0; i < 10; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x400000, 100, st[0]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x410000, 400, st[2]);
		ap_tw_free(tw, 1000, ts++, 0, 0x400000);
		ap_tw_free(tw, 1000, ts++, 0, 0x410000);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x500000, 100, st[0]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x510000, 180, st[1]);
		ap_tw_free(tw, 1000, ts++, 0, 0x500000);
		ap_tw_free(tw, 1000, ts++, 0, 0x510000);
	}
	for (int i = 0; i < 10; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x600000, 100, st[3]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x610000, 250, st[4]);
		ap_tw_free(tw, 1000, ts++, 0, 0x600000);
		ap_tw_free(tw, 1000, ts++, 0, 0x610000);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x700000, 100, st[3]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x710000, 250, st[3]);
		ap_tw_free(tw, 1000, ts++, 0, 0x700000);
		ap_tw_free(tw, 1000, ts++, 0, 0x710000);
	}
	struct ap_trace *t = synth_finish(tw, ts);
	/* stacks 1 and 2: site 0 and 1 of function "grow"; stack 3: site 2
	 * of "other"; stacks 4, 5: sites 3, 4 of "append" (stack 0 is no
	 * stack) */
	uint32_t sites[6] = { UINT32_MAX, 0, 1, 2, 3, 4 };
	char *fn[5] = { "grow", "grow", "other", "append", "append" };
	struct ap_site_map m = { .site_of_stack = sites, .nsites = 5, .function = fn };
	struct ap_replay_join *j;
	size_t nj;
	struct ap_error err;
	CHECK(ap_advise_joins(t, &m, &j, &nj, &err) == 0, "joins: %s", err.msg);
	EQ("growths by copy", nj, 60);
	for (size_t k = 0; k < nj && k < 60; k++) {
		EQ("a growth's allocation", j[k].i, k < 50 ? 4 * k + 1 : 281 + 8 * (k - 50));
		EQ("the block it continues", j[k].addr, k < 50 ? 0x300000 : 0x600000);
	}
	struct ap_measure_job job = { .site = 0 };
	struct ap_measured out;
	struct ap_run_cost base;
	measure_joined(t, sites, 5, j, nj, &job, 1, &out, &base);
	/* 50 x (malloc, a growth's malloc and free, free) + 10 x 8 + 10 x 8 */
	EQ("baseline calls", base.calls, 360);
	/* the pool: the first object a malloc and its growth (2), then 49
	 * hits of 200 bytes that grow in place; of the other blocks' 80
	 * calls, stack 1's 20 Gets hit and their 20 frees are Puts; "append"'s
	 * 80 */
	EQ("pooled hits", out.cost.hits, 49 + 20);
	EQ("pooled calls", out.cost.calls, 3 + 40 + 80);
	free(j);
	ap_trace_free(t);
}

/* glibc's string streams (asprintf, open_memstream) grow their buffer
 * to 2n + 100 bytes, a new block at the same line (inside vfprintf,
 * attributed to the program's call of asprintf): 10 objects of 100 bytes
 * grown to 300 and then 700 are joined (20 growths), 10 grown from 100
 * to 301 at the same line are not (more than twice, at one line: a ring
 * of results of random sizes). */
static void test_growth_string_stream(void)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (int i = 0; i < 10; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x300000, 100, st);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x310000, 300, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x300000);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x320000, 700, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x310000);
		ap_tw_free(tw, 1000, ts++, 0, 0x320000);
	}
	for (int i = 0; i < 10; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x400000, 100, st);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x410000, 301, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x400000);
		ap_tw_free(tw, 1000, ts++, 0, 0x410000);
	}
	struct ap_trace *t = synth_finish(tw, ts);
	uint32_t sites[2] = { UINT32_MAX, 0 };
	char *fn[1] = { "fmt" };
	struct ap_site_map m = { .site_of_stack = sites, .nsites = 1, .function = fn };
	struct ap_replay_join *j;
	size_t nj;
	struct ap_error err;
	CHECK(ap_advise_joins(t, &m, &j, &nj, &err) == 0, "joins: %s", err.msg);
	EQ("string streams' growths", nj, 20);
	for (size_t k = 0; k < nj && k < 20; k++) {
		EQ("a growth's allocation", j[k].i, 6 * (k / 2) + (k % 2 ? 3 : 1));
		EQ("the block it continues", j[k].addr, k % 2 ? 0x310000 : 0x300000);
	}
	free(j);
	ap_trace_free(t);
}

/* open_memstream's buffer: born in the program's call of open_memstream
 * (a site "via open_memstream"), grown to 2n + 100 by the fprintf that
 * follows (another site, "via fprintf", the same function): 10 joined;
 * 10 grown to 2n + 101 there are not (two calls of a C library: what
 * each allocates is its own unless glibc's stream growth says so). */
static void test_growth_memstream(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[2] = { 0x1000, 0x1010 };
	uint32_t st[2] = { ap_tw_stack(tw, &pcs[0], 1), ap_tw_stack(tw, &pcs[1], 1) };
	ap_tw_thread(tw, 1000, "main");
	uint64_t ts = START + 1000;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 10; i++) {
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_CALLOC, 0x300000, 8192, st[0]);
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x310000, 16484 + k, st[1]);
			ap_tw_free(tw, 1000, ts++, 0, 0x300000);
			ap_tw_free(tw, 1000, ts++, 0, 0x310000);
		}
	struct ap_trace *t = synth_finish(tw, ts);
	uint32_t sites[3] = { UINT32_MAX, 0, 1 };
	char *fn[2] = { "report", "report" }, *via[2] = { "open_memstream", "fprintf" };
	struct ap_site_map m = { .site_of_stack = sites, .nsites = 2, .function = fn, .via = via };
	struct ap_replay_join *j;
	size_t nj;
	struct ap_error err;
	CHECK(ap_advise_joins(t, &m, &j, &nj, &err) == 0, "joins: %s", err.msg);
	EQ("open_memstream's growths", nj, 10);
	for (size_t k = 0; k < nj && k < 10; k++)
		EQ("a growth's allocation", j[k].i, 4 * k + 1);
	free(j);
	ap_trace_free(t);
}

/* The runner's first write of a share of each block (ALLOCPROF_REPLAY_TOUCH
 * through opts.touch): blocks of 40 MiB, above glibc's largest mmap
 * threshold, are fresh mappings, so the page faults beyond those of a
 * replay writing first lines only are the pages written: all of them, or
 * a quarter. (Taken as differences: a sanitized runner faults in its
 * shadow memory too, in proportion, and its allocator's own pages.) */
/* One thread: six blocks of `size` at site 0, each freed before the
 * next; the trace in *t. */
static struct ap_script *six_blocks(uint64_t size, const char *what, struct ap_trace **t)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (int i = 0; i < 6; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x10000000, size, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x10000000);
	}
	*t = synth_finish(tw, ts);
	return site0_script(*t, what);
}

static void test_touch(void)
{
	struct ap_trace *t;
	struct ap_script *s = six_blocks(40u << 20, "touch", &t);
	double pages = 6.0 * (40u << 20) / (double)sysconf(_SC_PAGESIZE), got[3];
	double share[3] = { 0, 1, 0.25 };
	for (int k = 0; k < 3; k++) {
		struct ap_measure_opts o = opts_of(1, 0);
		o.touch = share[k];
		struct ap_run_cost base, rec;
		struct ap_measured none;
		struct ap_error err;
		CHECK(ap_measure(s, NULL, 0, &o, &none, &base, &rec, &err) == 0, "touch %g: %s", share[k],
		      err.msg);
		got[k] = base.minflt;
	}
	double all = got[1] - got[0], quarter = got[2] - got[0];
	CHECK(all >= 0.99 * pages, "every page: %.0f faults more than first lines, for %.0f pages", all,
	      pages);
	CHECK(quarter >= 0.22 * all && quarter <= 0.28 * all,
	      "a quarter: %.0f faults more than first lines, every page %.0f", quarter, all);
	ap_script_free(s);
	ap_trace_free(t);

	/* The fit: the share that makes the replay fault as the run did,
	 * between a replay of first lines and one of every page; 1 where
	 * the replay faults no more than 1.5 times the run and 1000. */
	struct {
		double line, all, prog, want;
	} c[] = {
		{ 1000, 401000, 101000, 0.25 },	/* a quarter written */
		{ 0, 2500, 1000, 1 },		/* at the limit: not fitted */
		{ 0, 2501, 1000, 1000.0 / 2501 },
		{ 0, 900, 1000, 1 },		/* fewer than the run */
		{ 50000, 400000, 2000, 1 },	/* first lines alone fault more */
		{ 5367, 5368, 1672, 1 },	/* writes fault nothing more */
		{ 9000, 8000, 10, 1 },		/* all below line: nothing to fit */
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		double f = ap_advise_touch_fit(c[i].line, c[i].all, c[i].prog);
		CHECK(fabs(f - c[i].want) < 1e-9, "touch fit case %zu: %g, want %g", i, f, c[i].want);
	}
	/* the refinement: between a share that faulted too little and 1 */
	EQ("between", ap_advise_touch_between(0.25, 90000, 1, 410000, 106000), 0.25 + 0.75 * 16000 / 320000);
	EQ("between, clamped", ap_advise_touch_between(0.25, 90000, 1, 410000, 500000), 1);
	EQ("between, flat", ap_advise_touch_between(0, 5000, 0.3, 5000, 9000), 0.3);

	/* A replay of the run's first events is fitted to the share of the
	 * run's faults a replay of all of them writing every page made in
	 * them (a heap built early faults early). */
	EQ("target, whole run", ap_advise_run_faults(32000, 1, true, 64000, 0), 32000);
	EQ("target, a third", ap_advise_run_faults(32000, 0.25, true, 21950, 64000), 32000 * 21950 / 64000.0);
}

/* A site written whole (ap_measure_opts.whole_site,
 * ALLOCPROF_REPLAY_WHOLE): every byte of its blocks is written, whatever
 * share of them the first write is set to cover, in the baseline and the
 * pool's runs alike. Six blocks of 8 MiB, made and freed in turn: with
 * first lines only, each run faults in a page or two a block; with the
 * site written whole, every page of the blocks (the first a mapping of
 * its own, the next ones, once glibc's mmap threshold has risen to 8 MiB,
 * the heap's top, kept), twice in the baseline and once in the pool's
 * run, which keeps the one block. */
static void test_whole(void)
{
	struct ap_trace *t;
	struct ap_script *s = six_blocks(8u << 20, "whole", &t);
	double block = (double)(8u << 20) / (double)sysconf(_SC_PAGESIZE), got[2];
	struct ap_measured pooled[2];
	for (int k = 0; k < 2; k++) {
		struct ap_measure_opts o = opts_of(1, 0);
		o.touch = 0;
		o.whole_site = k ? 0 : -1;
		struct ap_measure_job job = { .site = 0 };
		struct ap_run_cost base, rec;
		struct ap_error err;
		CHECK(ap_measure(s, &job, 1, &o, &pooled[k], &base, &rec, &err) == 0, "whole %d: %s", k,
		      err.msg);
		got[k] = base.minflt;
	}
	CHECK(got[1] - got[0] >= 0.95 * block,
	      "whole: the baseline faulted %.0f times written whole, %.0f first lines only, for blocks "
	      "of %.0f pages", got[1], got[0], block);
	CHECK(pooled[1].cost.minflt - pooled[0].cost.minflt >= 0.95 * block,
	      "whole: the pool's run faulted %.0f times written whole, %.0f first lines only (the "
	      "baseline %.0f), for blocks of %.0f pages", pooled[1].cost.minflt, pooled[0].cost.minflt,
	      got[1], block);
	ap_script_free(s);
	ap_trace_free(t);
}

/* A program of one thread off its CPU between its calls: 100 blocks 5 ms
 * apart in a run of 500 ms, 10 ms of it on a CPU: 99 naps of 2 ms
 * (AP_RS_SLEEP_MAX_NS). */
static struct ap_trace *naps_trace(void)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (int i = 0; i < 100; i++) {
		ap_tw_alloc(tw, 1000, ts, 0, AP_KIND_MALLOC, 0x100000, 64, st);
		ap_tw_free(tw, 1000, ts + 1, 0, 0x100000);
		ts += 5000000;
	}
	struct ap_trace *t = synth_finish(tw, ts);
	t->cpu_ns = 10000000;
	t->has_run_delay = true;
	t->run_delay_ns = 0;
	return t;
}

/* Its naps are slept in every run of the replay, within
 * AP_RS_SLEEP_TOTAL_NS, and within a share of the user's budget
 * (ap_advise_sleep_max: a process waiting on its children slept 835 ms a
 * run, and `advise --measure-time 1s` of `git repack` took 14 s). */
static void test_sleep_budget(void)
{
	struct ap_trace *t = naps_trace();
	uint32_t sites[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	CHECK(t->nstacks <= 8, "sleep budget: %zu stacks", (size_t)t->nstacks);
	uint64_t caps[] = { 0, 20000000 }, want[] = { 198000000, 20000000 };
	for (int k = 0; k < 2; k++) {
		struct ap_error err;
		struct ap_script *s = ap_script_build(t, sites, 1, NULL, 0, NULL, 0, 0, caps[k], &err);
		CHECK(s != NULL, "sleep budget: %s", err.msg);
		if (!s)
			continue;
		CHECK(ap_script_sleep_ns(s) >= want[k] - 100 && ap_script_sleep_ns(s) <= want[k],
		      "sleep budget: a cap of %llu ns slept %llu ns, want %llu",
		      (unsigned long long)caps[k], (unsigned long long)ap_script_sleep_ns(s),
		      (unsigned long long)want[k]);
		EQ("sleep budget: wanted", (double)ap_script_sleep_wanted_ns(s), 198000000);
		ap_script_free(s);
	}
	/* the same run whose threads blocked once, never, twice both times
	 * waiting for record to take their events (END's sampler_waits),
	 * and three times, two of them for record, 400 of its 490 ms off
	 * its CPU: only the first and the last were off their CPU by their
	 * own doing, the last for 90 ms */
	uint64_t nv[] = { 1, 0, 2, 3 }, waits[] = { 0, 0, 2, 2 };
	uint64_t waited[] = { 0, 0, 400000000, 400000000 };
	uint64_t slept[] = { 198000000, 0, 0, 90000000 };
	for (int k = 0; k < 4; k++) {
		t->has_switches = true;
		t->nvcsw = nv[k];
		t->sampler_waits = waits[k];
		t->sampler_wait_ns = waited[k];
		struct ap_error err;
		struct ap_script *s = ap_script_build(t, sites, 1, NULL, 0, NULL, 0, 0, 0, &err);
		CHECK(s != NULL, "sleep budget: %s", err.msg);
		if (!s)
			continue;
		CHECK(ap_script_sleep_ns(s) + 10000 >= slept[k] && ap_script_sleep_ns(s) <= slept[k] + 10000,
		      "sleep budget: %llu voluntary switches slept %llu ns, want %llu",
		      (unsigned long long)nv[k], (unsigned long long)ap_script_sleep_ns(s),
		      (unsigned long long)slept[k]);
		ap_script_free(s);
	}
	ap_trace_free(t);
	/* 1 s for 6 rounds of the baseline and a site, the probe and the
	 * fit's three replays: half of it over 16 runs */
	EQ("sleep max, 1 s", (double)ap_advise_sleep_max(1e9, 6, 1, 3), (double)(uint64_t)(0.5e9 / 16));
	/* sites past AP_MEASURE_FIT_SITES are measured if the rounds leave
	 * room: not counted */
	EQ("sleep max, many sites", (double)ap_advise_sleep_max(15e9, 6, 9, 0),
	   (double)(uint64_t)(7.5e9 / (6 * (AP_MEASURE_FIT_SITES + 1) + 1)));
	EQ("sleep max, no budget", (double)ap_advise_sleep_max(0, 6, 1, 3), 0);
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The user's budget holds every run (ap_measure_opts.deadline_ns,
 * session 31: advise at --measure-time 3s took 12.2 s of prodcons, its
 * probe, its runs under the sampler and six rounds whatever the budget
 * outside the count). On the script of test_sleep_budget, whose runs nap
 * 198 ms each (and the same with its naps capped at 1 ns), with a job of
 * its one site; nothing here depends on how fast the runs are but the
 * lower bound the naps give a run: a round takes 396 ms at least. */
static void test_deadline(void)
{
	struct ap_trace *t = naps_trace();
	uint32_t sites[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	struct ap_error err;
	struct ap_script *naps = ap_script_build(t, sites, 1, NULL, 0, NULL, 0, 0, 0, &err);
	CHECK(naps != NULL, "deadline: %s", err.msg);
	struct ap_script *quick = ap_script_build(t, sites, 1, NULL, 0, NULL, 0, 0, 1, &err);
	CHECK(quick != NULL, "deadline: %s", err.msg);
	if (!naps || !quick)
		return;
	CHECK(ap_script_sleep_ns(naps) >= 190000000, "deadline: the script naps %llu ns a run",
	      (unsigned long long)ap_script_sleep_ns(naps));
	struct ap_measure_job job = { .site = 0 };
	struct ap_measured out;
	struct ap_run_cost base, rec;

	/* 1. a round expected to end past the deadline does not start: no
	 * run, and the site is said left out */
	struct ap_measure_opts o = opts_of(6, 0);
	struct ap_measure_cut cut;
	o.cut = &cut;
	o.run_ns = 1e9;
	o.deadline_ns = mono_now() + 0.5e9;
	CHECK(ap_measure(quick, &job, 1, &o, &out, &base, &rec, &err) < 0, "deadline: a round ran");
	CHECK(cut.rounds_cut && cut.rounds == 0 && cut.sites == 1 && !out.ok,
	      "deadline, none fits: rounds_cut %d, rounds %u, sites %zu, ok %d", cut.rounds_cut,
	      cut.rounds, cut.sites, out.ok);
	CHECK(strstr(err.msg, "no round fits in the budget") != NULL, "deadline: %s", err.msg);

	/* ...nor one whose length nothing says once the deadline is past
	 * (the making of the script took the budget) */
	o.run_ns = 0;
	o.deadline_ns = mono_now() - 1;
	CHECK(ap_measure(quick, &job, 1, &o, &out, &base, &rec, &err) < 0 && cut.rounds_cut &&
		      cut.rounds == 0,
	      "deadline past, no length said: a round ran (rounds_cut %d, rounds %u)", cut.rounds_cut,
	      cut.rounds);

	/* 2. far off: min_rounds rounds, nothing cut */
	o.run_ns = 0;
	o.deadline_ns = mono_now() + 3600e9;
	o.max_rounds = 6;
	CHECK(ap_measure(quick, &job, 1, &o, &out, &base, &rec, &err) == 0, "deadline, far: %s", err.msg);
	CHECK(out.ok && out.rounds == 6 && !cut.rounds_cut && cut.sites == 0 && !cut.killed,
	      "deadline, far: ok %d, %u rounds, rounds_cut %d, sites %zu", out.ok, out.rounds,
	      cut.rounds_cut, cut.sites);

	/* 3. a second for rounds of 396 ms or more: two at most, not the six
	 * wanted, and said so; a site measured with two, none with one */
	o.max_rounds = 50;
	o.deadline_ns = mono_now() + 1e9;
	int rc = ap_measure(naps, &job, 1, &o, &out, &base, &rec, &err);
	CHECK(rc == 0, "deadline, a second: %s", err.msg);
	CHECK(cut.rounds_cut && cut.rounds >= 1 && cut.rounds <= 2,
	      "deadline, a second: rounds_cut %d, %u rounds", cut.rounds_cut, cut.rounds);
	CHECK(out.ok == (cut.rounds == 2) && cut.sites == (cut.rounds == 2 ? 0u : 1u) &&
		      (!out.ok || out.rounds == 2),
	      "deadline, a second: %u rounds, ok %d (%u rounds), sites left out %zu", cut.rounds, out.ok,
	      out.rounds, cut.sites);

	/* 4. the probe of a script nothing says the length of: killed at the
	 * deadline, 20 ms into a run that naps 198 ms */
	struct ap_measure_opts po = opts_of(1, 0);
	po.cut = &cut;
	po.kill_at_deadline = true;
	po.deadline_ns = mono_now() + 20e6;
	CHECK(ap_measure(naps, NULL, 0, &po, &out, &base, &rec, &err) < 0, "deadline, killed: a run ended");
	CHECK(cut.killed, "deadline, killed: cut.killed not set (%s)", err.msg);
	CHECK(strstr(err.msg, "still going at the budget's end") != NULL, "deadline, killed: %s", err.msg);
	/* ...and one that ends in time is not */
	po.deadline_ns = mono_now() + 3600e9;
	CHECK(ap_measure(quick, NULL, 0, &po, &out, &base, &rec, &err) == 0 && !cut.killed,
	      "deadline, in time: %s", err.msg);
	ap_script_free(naps);
	ap_script_free(quick);
	ap_trace_free(t);
}

/* A pooled object too small for a request is dropped for a block of the
 * request's size (docs/pool-model.md §2's small hit, and what a
 * hand-pooler's pool does: bench/twins' tw_get frees it and mallocs), not
 * grown by realloc, which keeps its pages (glibc moves a mapped chunk by
 * mremap) and copies its bytes. Blocks of 8 to 12 MiB, each a MiB larger
 * than the last, at one site: every Get a small hit after the first miss.
 * In the baseline each block is a fresh mapping (each free raises glibc's
 * mmap threshold to the size freed, and the next is larger), every page
 * written; the pool's run, freeing and allocating as the baseline does,
 * faults as often and makes a free and an allocation per small hit.
 * (bench/twins' rasterjob, frames of 2-8 MiB: a replay growing them by
 * realloc faulted 1,938 times where its twin faulted 7,984.) */
static void test_small_hit(void)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (int i = 0; i < 5; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x10000000, (8u + (unsigned)i) << 20, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x10000000);
	}
	struct ap_trace *t = synth_finish(tw, ts);
	struct ap_script *s = site0_script(t, "small hit");
	struct ap_measure_opts o = opts_of(1, 0);
	o.touch = 1;
	struct ap_measure_job job = { .site = 0 };
	struct ap_measured out;
	struct ap_run_cost base, rec;
	struct ap_error err;
	CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "small hit: %s", err.msg);
	/* baseline: 5 mallocs, 5 frees; pooled: the miss's malloc, then per
	 * small hit the pooled block's free and a malloc (4 x 2); the last
	 * block is put */
	EQ("small hit: baseline calls", base.calls, 10);
	EQ("small hit: hits", out.cost.hits, 4);
	EQ("small hit: pooled calls", out.cost.calls, 9);
	double pages = (double)(8 + 9 + 10 + 11 + 12) * (1u << 20) / (double)sysconf(_SC_PAGESIZE);
	CHECK(base.minflt >= 0.95 * pages, "small hit: the baseline faulted %.0f times for %.0f pages",
	      base.minflt, pages);
	CHECK(out.cost.minflt >= 0.95 * base.minflt,
	      "small hit: the pooled run faulted %.0f times, the baseline %.0f", out.cost.minflt,
	      base.minflt);
	ap_script_free(s);
	ap_trace_free(t);
}

/* Size classes with requests rounded up (ap_measure_job.round_up, the
 * runner's --round-up): 100 rounds of a block of 100 bytes and one of 120,
 * one live at a time, in classes of 128 and 512. Without rounding up the
 * first block (100 bytes) is too small for the first 120-byte request: it
 * is freed and 120 bytes allocated, and that block serves every request
 * after (3 calls). Rounded up, the first miss allocates 128 bytes, which
 * serve them all (1 call). Every Get but the first takes a block (199
 * hits, the small one counted); the last block stays pooled. */
static void test_round_up(void)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (int i = 0; i < 100; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x10000, 100, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x10000);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x20000, 120, st);
		ap_tw_free(tw, 1000, ts++, 0, 0x20000);
	}
	struct ap_trace *t = synth_finish(tw, ts);
	struct ap_script *s = site0_script(t, "round up");
	struct ap_measure_opts o = opts_of(2, 0);
	struct ap_measure_job jobs[2] = {
		{ .site = 0, .classes = { 128, 512 }, .nclasses = 2 },
		{ .site = 0, .classes = { 128, 512 }, .nclasses = 2, .round_up = true },
	};
	struct ap_measured out[2];
	struct ap_run_cost base, rec;
	struct ap_error err;
	CHECK(ap_measure(s, jobs, 2, &o, out, &base, &rec, &err) == 0, "round up: %s", err.msg);
	EQ("round up: baseline calls", base.calls, 400);
	EQ("classes: hits", out[0].cost.hits, 199);
	EQ("classes: calls", out[0].cost.calls, 3);
	EQ("classes rounded up: hits", out[1].cost.hits, 199);
	EQ("classes rounded up: calls", out[1].cost.calls, 1);
	ap_script_free(s);
	ap_trace_free(t);
}

/* An object graph (report/measure_graph.c, the runner's --graph): per
 * request a root (site 0, 256 bytes) owning three 48-byte blocks (site
 * 1) and a buffer of 1000 or 2000 bytes in turn (site 2), freed before
 * it; a block of site 4 born inside the root but freed after it (not
 * the root's); and one block of site 3 live all along (it "owns"
 * everything, but one birth makes no root). */
static void test_graph(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = 1;
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint32_t st[5];
	for (int k = 0; k < 5; k++) {
		uint64_t pc = 0x1000 * (uint64_t)(k + 1);
		st[k] = ap_tw_stack(tw, &pc, 1);
	}
	ap_tw_thread(tw, 1000, "main");
	uint64_t ts = START + 1000;
	ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x900000, 64, st[3]);
	for (int i = 0; i < 100; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x100000, 256, st[0]);
		for (uint64_t j = 0; j < 3; j++)
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x200000 + 0x100 * j, 48, st[1]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x300000, i % 2 ? 2000 : 1000, st[2]);
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x400000, 64, st[4]);
		for (uint64_t j = 0; j < 3; j++)
			ap_tw_free(tw, 1000, ts++, 0, 0x200000 + 0x100 * j);
		ap_tw_free(tw, 1000, ts++, 0, 0x300000);
		ap_tw_free(tw, 1000, ts++, 0, 0x100000);
		ap_tw_free(tw, 1000, ts++, 0, 0x400000);
	}
	ap_tw_free(tw, 1000, ts++, 0, 0x900000);
	struct ap_trace *t = synth_finish(tw, ts);
	uint32_t sites[6] = { UINT32_MAX, 0, 1, 2, 3, 4 };
	struct ap_error err;
	struct ap_script *s = ap_script_build(t, sites, 5, NULL, 0, NULL, 0, 0, 0, &err);
	CHECK(s != NULL, "graph: script: %s", err.msg);
	if (!s)
		return;
	size_t n;
	const struct ap_graph *g = ap_script_graphs(s, &n);
	EQ("graph: graphs", n, 1);
	if (n != 1) {
		ap_script_free(s);
		ap_trace_free(t);
		return;
	}
	EQ("graph: root", g->root, 0);
	EQ("graph: root births", g->root_births, 100);
	EQ("graph: members", g->nmembers, 2);
	for (uint32_t k = 0; k < g->nmembers && k < 2; k++) {
		CHECK(g->members[k] == 1 || g->members[k] == 2, "graph: member %u is site %u", k,
		      g->members[k]);
		EQ("graph: member's blocks", g->member_births[k], g->members[k] == 1 ? 300 : 100);
	}
	struct ap_measure_opts o = opts_of(1, 0);
	struct ap_measure_job job = { .site = 0, .graph = g };
	struct ap_measured out;
	struct ap_run_cost base, rec;
	CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "graph: %s", err.msg);
	/* baseline: 6 births and 6 frees a request, and the long one's 2 */
	EQ("graph: baseline calls", base.calls, 1202);
	/* pooled whole: the first request allocates its 6 blocks and frees
	 * site 4's (the others stay with the root, which is Put); the second
	 * gets the root and its spares (5 hits), the 1000-byte buffer too
	 * small for 2000 (freed, allocated: 2 calls), and site 4's 2; every
	 * later one 5 hits, site 4's 2 calls; and the long one's 2 */
	EQ("graph: pooled hits", out.cost.hits, 5 * 99);
	EQ("graph: pooled calls", out.cost.calls, 7 + 4 + 98 * 2 + 2);
	ap_script_free(s);
	ap_trace_free(t);
}

/* Two kinds of one site's blocks (report/advise_sites.c: a line that
 * makes a vector and its strings): per request a 256-byte block of
 * kind 0 owning three 48-byte blocks of kind 1, both site 0. The
 * script is built by kind: the graph is found between the kinds, the
 * runner pools it whole (exact hits), and a site's own pool takes every
 * kind of it. */
static void test_kinds(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = 1;
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[2] = { 0x1000, 0x2000 };
	uint32_t st[2] = { ap_tw_stack(tw, &pcs[0], 1), ap_tw_stack(tw, &pcs[1], 1) };
	ap_tw_thread(tw, 1000, "main");
	uint64_t ts = START + 1000;
	for (int i = 0; i < 100; i++) {
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x100000, 256, st[0]);
		for (uint64_t j = 0; j < 3; j++)
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x200000 + 0x100 * j, 48, st[1]);
		for (uint64_t j = 0; j < 3; j++)
			ap_tw_free(tw, 1000, ts++, 0, 0x200000 + 0x100 * j);
		ap_tw_free(tw, 1000, ts++, 0, 0x100000);
	}
	struct ap_trace *t = synth_finish(tw, ts);
	uint32_t kinds[3] = { UINT32_MAX, 0, 1 }, site_of_kind[2] = { 0, 0 };
	struct ap_error err;
	struct ap_script *s = ap_script_build(t, kinds, 2, NULL, 0, NULL, 0, 0, 0, &err);
	CHECK(s != NULL, "kinds: script: %s", err.msg);
	if (!s)
		return;
	ap_script_set_kinds(s, site_of_kind, 2, 1);
	size_t n;
	const struct ap_graph *g = ap_script_graphs(s, &n);
	EQ("kinds: graphs", n, 1);
	if (n == 1) {
		EQ("kinds: root", g->root, 0);
		EQ("kinds: members", g->nmembers, 1);
		EQ("kinds: member", g->members[0], 1);
		EQ("kinds: member's blocks", g->member_births[0], 300);
		struct ap_measure_opts o = opts_of(1, 0);
		struct ap_measure_job job = { .site = 0, .graph = g };
		struct ap_measured out;
		struct ap_run_cost base, rec;
		CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "kinds: %s", err.msg);
		EQ("kinds: baseline calls", base.calls, 800);
		/* the first request's four blocks allocated, then every one
		 * the root and its three spares back */
		EQ("kinds: pooled whole, hits", out.cost.hits, 4 * 99);
		EQ("kinds: pooled whole, calls", out.cost.calls, 4);
	}
	/* site 0's pool: both kinds' blocks (kind 0's alone hit 99 times
	 * at most) */
	struct ap_measure_opts o = opts_of(1, 0);
	struct ap_measure_job job = { .site = 0 };
	struct ap_measured out;
	struct ap_run_cost base, rec;
	CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "kinds: site: %s", err.msg);
	CHECK(out.cost.hits > 2 * 99, "kinds: the site's pool hit %.0f times: not every kind of it", out.cost.hits);
	ap_script_free(s);
	ap_trace_free(t);
}

/* Object graphs on two threads at once: each builds and tears down its
 * own roots (site 0, 256 bytes) with three members (site 1, 48 bytes),
 * 100 requests each, interleaved. A root's Put goes to its thread's
 * private slot and comes back to that thread with its spares: each
 * thread allocates its first request's four blocks, and nothing after. */
static void test_graph_threads(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = 2;
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[2] = { 0x1000, 0x2000 };
	uint32_t st[2] = { ap_tw_stack(tw, &pcs[0], 1), ap_tw_stack(tw, &pcs[1], 1) };
	ap_tw_thread(tw, 1000, "main");
	ap_tw_thread(tw, 1001, "worker");
	uint64_t ts = START + 1000;
	for (int i = 0; i < 100; i++)
		for (uint32_t k = 0; k < 2; k++) {
			uint32_t tid = 1000 + k;
			uint64_t base = 0x1000000 * (uint64_t)(k + 1);
			ap_tw_alloc(tw, tid, ts++, k, AP_KIND_MALLOC, base, 256, st[0]);
			for (uint64_t j = 0; j < 3; j++)
				ap_tw_alloc(tw, tid, ts++, k, AP_KIND_MALLOC, base + 0x1000 * (j + 1), 48, st[1]);
			for (uint64_t j = 0; j < 3; j++)
				ap_tw_free(tw, tid, ts++, k, base + 0x1000 * (j + 1));
			ap_tw_free(tw, tid, ts++, k, base);
		}
	struct ap_trace *t = synth_finish(tw, ts);
	uint32_t sites[3] = { UINT32_MAX, 0, 1 };
	struct ap_error err;
	struct ap_script *s = ap_script_build(t, sites, 2, NULL, 0, NULL, 0, 0, 0, &err);
	CHECK(s != NULL, "graph threads: script: %s", err.msg);
	if (!s)
		return;
	size_t n;
	const struct ap_graph *g = ap_script_graphs(s, &n);
	EQ("graph threads: graphs", n, 1);
	if (n == 1) {
		EQ("graph threads: root", g->root, 0);
		EQ("graph threads: members", g->nmembers, 1);
		EQ("graph threads: member's blocks", g->member_births[0], 600);
		struct ap_measure_opts o = opts_of(1, 0);
		struct ap_measure_job job = { .site = 0, .graph = g };
		struct ap_measured out;
		struct ap_run_cost base, rec;
		CHECK(ap_measure(s, &job, 1, &o, &out, &base, &rec, &err) == 0, "graph threads: %s", err.msg);
		EQ("graph threads: baseline calls", base.calls, 1600);
		EQ("graph threads: pooled calls", out.cost.calls, 8);
		EQ("graph threads: pooled hits", out.cost.hits, 2 * 99 * 4);
	}
	ap_script_free(s);
	ap_trace_free(t);
}

/* The budget: a run that fits is replayed whole; one that does not is cut
 * to what fits, counting the fit's replays of the share written, never
 * below AP_MEASURE_MIN_EVENTS. */
static void test_budget_events(void)
{
	uint64_t ev = 8 * AP_MEASURE_MIN_EVENTS;
	/* 6 rounds of the baseline and two sites: 18 replays of 0.1 s */
	EQ("fits", (double)ap_advise_budget_events(ev, 0.1e9, 2e9, 6, 5, 0), (double)ev);
	EQ("no budget", (double)ap_advise_budget_events(ev, 10e9, 0, 6, 5, 0), (double)ev);
	/* the same with the fit's three replays: 21 of 0.1 s do not fit */
	EQ("cut by the fit's replays", (double)ap_advise_budget_events(ev, 0.1e9, 2e9, 6, 5, 3),
	   (double)(uint64_t)((double)ev * (2e9 / 21) / 0.1e9));
	/* a run of 1 s: 12 replays in 3.6 s, 0.3 of it; 15 in 4.2 s with the
	 * fit's replays, 0.28 */
	EQ("cut", (double)ap_advise_budget_events(ev, 1e9, 3.6e9, 6, 1, 0),
	   (double)(uint64_t)((double)ev * (3.6e9 / 12) / 1e9));
	EQ("cut, the fit's replays", (double)ap_advise_budget_events(ev, 1e9, 4.2e9, 6, 1, 3),
	   (double)(uint64_t)((double)ev * (4.2e9 / 15) / 1e9));
	EQ("at least a few", (double)ap_advise_budget_events(ev, 100e9, 1e9, 6, 1, 3),
	   (double)AP_MEASURE_MIN_EVENTS);
	EQ("small", (double)ap_advise_budget_events(AP_MEASURE_MIN_EVENTS, 100e9, 1e9, 6, 1, 3),
	   (double)AP_MEASURE_MIN_EVENTS);
}

/* A run that keeps `live` blocks at once (each allocated, all freed at
 * the end), and the script of it. */
static struct ap_script *kept_script(uint64_t live, uint64_t *nev)
{
	uint32_t st;
	struct ap_tw *tw = synth_one_thread(&st);
	uint64_t ts = START + 1000;
	for (uint64_t i = 0; i < live; i++)
		ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x100000 + 16 * i, 8, st);
	for (uint64_t i = 0; i < live; i++)
		ap_tw_free(tw, 1000, ts++, 0, 0x100000 + 16 * i);
	struct ap_trace *t = synth_finish(tw, ts);
	*nev = t->nev;
	struct ap_script *s = site0_script(t, "kept");
	ap_trace_free(t);
	return s;
}

/* The script stops where its replay would keep more than
 * AP_MEASURE_LIVE_BYTES for the blocks live at once (python3 building a
 * JSON held 1.1 GB of them for advise): at the event that would make one
 * block more live; a run that stays under it is replayed whole. (A trace
 * written in memory is not resolved: its replay keeps the live map, and
 * the bound is AP_MEASURE_LIVE_BLOCK_MAP's.) */
static void test_live_bound(void)
{
	const uint64_t most = AP_MEASURE_LIVE_BYTES / AP_MEASURE_LIVE_BLOCK_MAP;
	uint64_t nev;
	struct ap_script *s = kept_script(most + 1000, &nev);
	if (s) {
		CHECK(ap_script_cut_bytes(s), "live bound: the script was not cut");
		EQ("live bound: its blocks", ap_script_live_max(s), most);
		/* events 0..most-1 made `most` blocks live: the next would be
		 * past the bound */
		EQ("live bound: events", ap_script_events(s), most + 1);
		/* each an ALLOC op, and a SYNC at each window after the first */
		EQ("live bound: ops", ap_script_ops(s), most + 1 + most / AP_RS_WINDOW);
		ap_script_free(s);
	}
	s = kept_script(most - 1000, &nev);
	if (s) {
		CHECK(!ap_script_cut_bytes(s), "under the live bound: cut");
		EQ("under the live bound: events", ap_script_events(s), nev);
		ap_script_free(s);
	}
}

/* The script names each object by its latest block: by its address in a
 * trace whose frees are not resolved (the replay keeps the live map), by
 * its block's identity in one the compactor resolved (no live map; the
 * builder applies the growths by copy itself). The same run gives the
 * same script, byte for byte, either way: two threads, blocks grown by
 * realloc on the other thread and freed there, growths by copy, a lost
 * free (two blocks at one address), blocks live at the end. */
static void test_resolved_script(void)
{
	char raw[] = "/tmp/test-measure-raw.XXXXXX", res[] = "/tmp/test-measure-res.XXXXXX";
	int fd1 = mkstemp(raw), fd2 = mkstemp(res);
	if (fd1 < 0 || fd2 < 0) {
		perror("mkstemp");
		exit(1);
	}
	close(fd1);
	close(fd2);
	const char *paths[2] = { raw, res };
	struct ap_trace *t[2];
	for (int k = 0; k < 2; k++) {
		struct ap_tw_header h;
		ap_tw_header_init(&h);
		h.cpus = 2;
		h.start_ns = START;
		struct ap_tw *tw = ap_tw_new(&h);
		uint64_t pcs[4][1] = { { 0x1000 }, { 0x1010 }, { 0x2000 }, { 0x3000 } };
		uint32_t st[4];
		for (int j = 0; j < 4; j++)
			st[j] = ap_tw_stack(tw, pcs[j], 1);
		ap_tw_thread(tw, 1000, "main");
		ap_tw_thread(tw, 1001, "other");
		uint64_t ts = START + 1000;
		const unsigned both = AP_RF_OLD_TRACKED | AP_RF_NEW_SAMPLED;
		for (uint64_t r = 0; r < 300; r++) {
			uint64_t a = 0x100000 + r * 0x1000;
			/* grown by copy, as std::string grows (function "grow") */
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x300000, 100, st[0]);
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, 0x310000, 200, st[1]);
			ap_tw_free(tw, 1000, ts++, 0, 0x300000);
			/* made by main, grown by the other thread, freed there */
			ap_tw_alloc(tw, 1000, ts++, 0, AP_KIND_MALLOC, a, 64, st[2]);
			ap_tw_realloc(tw, 1001, ts++, 1, AP_KIND_REALLOC, a, a + 0x800, 200 + r, st[2], both);
			ap_tw_free(tw, 1001, ts++, 1, a + 0x800);
			ap_tw_free(tw, 1000, ts++, 0, 0x310000);
			/* a lost free: two blocks at one address */
			ap_tw_alloc(tw, 1001, ts++, 1, AP_KIND_CALLOC, 0x400000, 16, st[3]);
			ap_tw_alloc(tw, 1001, ts++, 1, AP_KIND_MALLOC, 0x400000, 32, st[3]);
			ap_tw_free(tw, 1000, ts++, 0, 0x400000);
			ap_tw_free(tw, 1001, ts++, 1, 0x400000);
			/* live at the end */
			if (r % 16 == 0)
				ap_tw_alloc(tw, 1001, ts++, 1, AP_KIND_MALLOC, 0x600000 + r * 0x100, 48, st[3]);
		}
		struct ap_tw_end end = { .end_ns = ts + 1000 };
		ap_tw_end(tw, &end);
		struct ap_error err;
		struct ap_compact_stats cs;
		if (ap_tw_close(tw, paths[k], &err) < 0 ||
		    (k == 1 && ap_trace_compact(paths[k], 3, &cs, &err) < 0) ||
		    ap_trace_read(paths[k], &t[k], &err, NULL, NULL) < 0) {
			fprintf(stderr, "resolved script: %s\n", err.msg);
			exit(1);
		}
	}
	CHECK(!t[0]->resolved && t[1]->resolved, "resolved script: the traces are raw %d, resolved %d",
	      t[0]->resolved, t[1]->resolved);
	/* stacks 1 and 2: sites 0 and 1 of function "grow"; 3, 4: sites 2,
	 * 3 (stack 0 is no stack) */
	uint32_t sites[5] = { UINT32_MAX, 0, 1, 2, 3 };
	char *fn[4] = { "grow", "grow", "hand", "lost" };
	struct ap_site_map m = { .site_of_stack = sites, .nsites = 4, .function = fn };
	char *bytes[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	size_t njoins[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		struct ap_error err;
		struct ap_replay_join *joins = NULL;
		if (ap_advise_joins(t[k], &m, &joins, &njoins[k], &err) < 0) {
			fprintf(stderr, "joins: %s\n", err.msg);
			exit(1);
		}
		char out[] = "/tmp/test-measure-script.XXXXXX";
		int fd = mkstemp(out);
		close(fd);
		setenv("ALLOCPROF_KEEP_SCRIPT", out, 1);
		struct ap_script *s = ap_script_build(t[k], sites, 4, joins, njoins[k], NULL, 0, 0, 0, &err);
		unsetenv("ALLOCPROF_KEEP_SCRIPT");
		CHECK(s != NULL, "resolved script %d: %s", k, err.msg);
		ap_script_free(s);
		FILE *f = fopen(out, "rb");
		if (f) {
			bytes[k] = ap_xmalloc(1 << 20);
			len[k] = fread(bytes[k], 1, 1 << 20, f);
			fclose(f);
		}
		unlink(out);
		free(joins);
	}
	CHECK(njoins[1] >= 300, "resolved script: %zu growths by copy found, want 300 or more", njoins[1]);
	EQ("resolved script: the same joins", njoins[0], njoins[1]);
	CHECK(len[0] > 0 && len[0] == len[1] && !memcmp(bytes[0], bytes[1], len[0]),
	      "resolved script: %zu bytes raw, %zu resolved, not the same", len[0], len[1]);
	free(bytes[0]);
	free(bytes[1]);
	for (int k = 0; k < 2; k++) {
		ap_trace_free(t[k]);
		unlink(paths[k]);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-measure RUNNER\n");
		return 2;
	}
	runner = argv[1];
	test_interval();
	test_sampled();
	test_one_thread();
	test_free_list();
	test_growth_by_copy();
	test_growth_string_stream();
	test_growth_memstream();
	test_touch();
	test_whole();
	test_sleep_budget();
	test_deadline();
	test_small_hit();
	test_round_up();
	test_graph();
	test_kinds();
	test_graph_threads();
	test_budget_events();
	test_live_bound();
	test_resolved_script();
	test_handoff();
	test_slack();
	test_targeted_wakes();
	test_pinned();
	test_wakes();
	test_consumer_held();
	test_replay_cpus();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
