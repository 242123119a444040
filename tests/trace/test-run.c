/* Whole runs (trace/run.c) on traces built by the test writer: two
 * processes whose blocks share addresses and whose events interleave in
 * time are merged on one time line without a FREE of one ending a block of
 * the other; threads, stacks and mappings are renumbered; the totals are
 * the sums; the children of a trace are found by name and those that began
 * before it are left out; a rate that differs is refused; a run across
 * fork and exec: inherited frees, blocks gone at an exec.
 * Usage: test-run TMPDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_check.h"
#include "ap_replay.h"
#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "ap_trace_writer.h"

/* A process: pid, start time; allocs 0x1000 (64 B) at t0+10 and 0x2000
 * (100 B) at t0+30 from its one stack; frees 0x1000 at t0+40 when
 * `free_it`. END with the exact calls and bytes. */
static void write_proc(const char *path, uint64_t pid, uint64_t t0, uint64_t rate, bool free_it)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.pid = pid;
	h.rate = rate;
	h.start_ns = t0;
	h.start_realtime_ns = 1700000000000000000ull + t0;
	struct ap_tw *tw = ap_tw_new(&h);
	struct ap_segment seg = { 0, 0x10000, 0, 5 };
	CHECK(ap_tw_mapping(tw, 0x400000, "/bin/test", NULL, 0, &seg, 1) == 0, "mapping");
	uint64_t pcs[] = { 0x401000 + pid, 0x402000 };
	uint32_t st = ap_tw_stack(tw, pcs, 2);
	ap_tw_thread(tw, (uint32_t)pid, "main");
	ap_tw_alloc(tw, (uint32_t)pid, t0 + 10, 0, AP_KIND_MALLOC, 0x1000, 64, st);
	ap_tw_alloc(tw, (uint32_t)pid, t0 + 30, 0, AP_KIND_MALLOC, 0x2000, 100, st);
	if (free_it)
		ap_tw_free(tw, (uint32_t)pid, t0 + 40, 0, 0x1000);
	/* each process its context switches and page faults: the run has
	 * their sums */
	struct ap_tw_end end = { t0 + 50, AP_END_EXIT, 0, 2, 164, 0, 0, true, (uint64_t)pid, 7, 0,
				 true, 10 * (uint64_t)pid, 0, 0 };
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
}

struct counts {
	size_t allocs, frees, unmatched, live;
	double live_bytes;
};

static void c_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	((struct counts *)ctx)->allocs++;
}
static void c_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	((struct counts *)ctx)->frees++;
}
static void c_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	((struct counts *)ctx)->unmatched++;
}
static void c_live(void *ctx, const struct ap_replay_block *b)
{
	struct counts *c = ctx;
	c->live++;
	c->live_bytes += (double)b->size;
}

/* One process of the exec/fork run: its events are (type, time after t0,
 * address, size) rows; END at t0 + 50 with `reason`. */
struct ev_row {
	int type; /* AP_EV_ALLOC or AP_EV_FREE */
	uint64_t dt, addr, size;
};

static void write_rows(const char *path, uint64_t pid, uint64_t ppid, uint64_t t0,
		       const char *parent, unsigned reason, const struct ev_row *rows, size_t n)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.pid = pid;
	h.ppid = ppid;
	h.start_ns = t0;
	h.parent_trace = parent;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, (uint32_t)pid, "main");
	for (size_t i = 0; i < n; i++)
		if (rows[i].type == AP_EV_ALLOC)
			ap_tw_alloc(tw, (uint32_t)pid, t0 + rows[i].dt, 0, AP_KIND_MALLOC, rows[i].addr,
				    rows[i].size, st);
		else
			ap_tw_free(tw, (uint32_t)pid, t0 + rows[i].dt, 0, rows[i].addr);
	struct ap_tw_end end = { .end_ns = t0 + 50, .reason = reason };
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
}

/* A run across fork and exec: process 5000 (2000..2050) allocates 64 and
 * 100 bytes and execs; its forked child 6000 (from 2040) frees the
 * 64-byte block it inherited and allocates 8 bytes; the exec'd image
 * (from 2060) allocates 500 bytes and frees them. The blocks live at the
 * exec leave at 2050 (the run's peak is then 8 + 500, not 164 + 8 + 500),
 * and the child's free is inherited, not unmatched. `compact`: the
 * traces as `record` leaves them, their frees resolved (the replay keeps
 * no live map, and the rules hold all the same). */
static void test_fork_exec(const char *dir, bool compact)
{
	char p[4200], c[4200], x[4200];
	snprintf(p, sizeof(p), "%s/fx.trace", dir);
	snprintf(c, sizeof(c), "%s/fx.trace.6000", dir);
	snprintf(x, sizeof(x), "%s/fx.trace.exec1", dir);
	const struct ev_row pr[] = { { AP_EV_ALLOC, 10, 0x1000, 64 }, { AP_EV_ALLOC, 30, 0x2000, 100 } };
	const struct ev_row cr[] = { { AP_EV_FREE, 2, 0x1000, 0 }, { AP_EV_ALLOC, 3, 0x4000, 8 } };
	const struct ev_row xr[] = { { AP_EV_ALLOC, 10, 0x3000, 500 }, { AP_EV_FREE, 20, 0x3000, 0 } };
	write_rows(p, 5000, 1, 2000, NULL, AP_END_EXEC, pr, 2);
	write_rows(c, 6000, 5000, 2040, p, AP_END_EXIT, cr, 2);
	write_rows(x, 5000, 1, 2060, NULL, AP_END_EXIT, xr, 2);
	struct ap_run run;
	struct ap_error err;
	struct ap_compact_stats st;
	for (int k = 0; compact && k < 3; k++)
		CHECK(ap_trace_compact(k == 0 ? p : k == 1 ? c : x, 3, &st, &err) == 0, "%s", err.msg);
	const char *paths[] = { p };
	struct ap_trace *t = NULL;
	CHECK(ap_run_read(&run, paths, 1, true, &err, NULL, NULL) == 0 && run.n == 3, "fx: read");
	CHECK(ap_run_merge(&run, &t, &err) == 0 && t, "fx: %s", err.msg);
	if (!t)
		return;
	CHECK(t->resolved == compact, "fx: resolved %d", t->resolved);
	struct ap_trace_totals tot;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK(tot.unmatched_frees == 0 && tot.inherited_frees == 1, "fx: %llu unmatched, %llu inherited",
	      (unsigned long long)tot.unmatched_frees, (unsigned long long)tot.inherited_frees);
	CHECK(tot.exec_dropped_objects == 2 && tot.exec_dropped_space == 164, "fx: dropped %g, %g B",
	      tot.exec_dropped_objects, tot.exec_dropped_space);
	CHECK(tot.inuse_objects == 1 && tot.inuse_space == 8, "fx: in use %g, %g B",
	      tot.inuse_objects, tot.inuse_space);
	CHECK(tot.peak_inuse_space == 508, "fx: peak %g (672 with the exec'd blocks)",
	      tot.peak_inuse_space);
	/* a consumer without exec_dropped sees them live at the end, as before */
	struct counts n = { 0 };
	static const struct ap_replay_ops ops = { .alloc = c_alloc, .free = c_free,
						  .unmatched = c_unmatched, .live_at_end = c_live };
	struct ap_replay_consumer rc = { &ops, &n };
	CHECK(ap_replay(t, &rc, 1, NULL, &err) == 0, "%s", err.msg);
	CHECK(n.live == 3 && n.live_bytes == 172 && n.unmatched == 1,
	      "fx: plain consumer: %zu live (%g B), %zu unmatched", n.live, n.live_bytes, n.unmatched);
	ap_trace_free(t);
	remove(p);
	remove(c);
	remove(x);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-run TMPDIR\n");
		return 2;
	}
	char dir[4096], a[4200], b[4200], old[4200], other[4200];
	snprintf(dir, sizeof(dir), "%s/test-run.XXXXXX", argv[1]);
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	snprintf(a, sizeof(a), "%s/run.trace", dir);
	snprintf(b, sizeof(b), "%s/run.trace.2000", dir);   /* a child */
	snprintf(old, sizeof(old), "%s/run.trace.3000", dir); /* an earlier run's */
	snprintf(other, sizeof(other), "%s/other.trace", dir);
	/* a at 1000..1050 frees 0x1000; b at 1005..1055 does not: b's
	 * blocks sit at a's addresses, its events between a's */
	write_proc(a, 1000, 1000, 1, true);
	write_proc(b, 2000, 1005, 1, false);
	write_proc(old, 3000, 10, 1, true);
	write_proc(other, 4000, 1000, 4096, true);

	struct ap_run run;
	struct ap_error err;
	const char *paths[] = { a };
	CHECK(ap_run_read(&run, paths, 1, true, &err, NULL, NULL) == 0, "%s", err.msg);
	CHECK(run.n == 2, "traces read: %zu (the old one must be left out)", run.n);
	struct ap_trace *t = NULL;
	CHECK(ap_run_merge(&run, &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (!t)
		return 1;
	CHECK(t->nprocs == 2 && t->procs[0].pid == 1000 && t->procs[1].pid == 2000, "procs");
	CHECK(t->nthreads == 2 && t->threads[1].proc == 1, "threads %zu", t->nthreads);
	CHECK(t->nstacks == 3, "stacks %zu (two and the empty one)", t->nstacks);
	CHECK(t->nmaps == 2 && t->maps[1].bias == (UINT64_C(1) << AP_RUN_SHIFT) + 0x400000,
	      "mappings");
	CHECK(t->calls == 4 && t->bytes == 328 && t->has_end, "END totals %llu %llu",
	      (unsigned long long)t->calls, (unsigned long long)t->bytes);
	CHECK(t->has_switches && t->nvcsw == 3000 && t->nivcsw == 14, "END switches %llu %llu",
	      (unsigned long long)t->nvcsw, (unsigned long long)t->nivcsw);
	CHECK(t->has_minflt && t->minflt == 30000, "END page faults %llu", (unsigned long long)t->minflt);
	CHECK(t->nev == 5, "events %zu", t->nev);
	for (size_t i = 1; i < t->nev; i++)
		CHECK(t->ev[i - 1].ts <= t->ev[i].ts, "event %zu out of time order", i);
	/* the interleaving: a 1010, b 1015, a 1030, b 1035, a's free 1040 */
	CHECK(t->nev == 5 && t->ev[1].thread == 1 && t->ev[4].type == AP_EV_FREE &&
		  t->ev[4].thread == 0 && ap_run_addr(t->ev[1].addr) == 0x1000 &&
		  t->ev[1].addr != t->ev[0].addr,
	      "merged order");
	/* the PCs of process 1 are its own, shifted */
	CHECK(t->stacks[2].depth == 2 && ap_run_addr(t->stacks[2].pcs[0]) == 0x401000 + 2000 &&
		  ap_trace_mapping_for(t, t->stacks[2].pcs[0]) == &t->maps[1],
	      "process 1's stack and mapping");
	struct counts c = { 0 };
	static const struct ap_replay_ops ops = { .alloc = c_alloc, .free = c_free,
						  .unmatched = c_unmatched, .live_at_end = c_live };
	struct ap_replay_consumer rc = { &ops, &c };
	CHECK(ap_replay(t, &rc, 1, NULL, &err) == 0, "%s", err.msg);
	/* a's free ends a's block, not b's at the same address */
	CHECK(c.allocs == 4 && c.frees == 1 && c.unmatched == 0 && c.live == 3 &&
		  c.live_bytes == 264,
	      "replay: %zu allocs, %zu frees, %zu unmatched, %zu live (%g B)", c.allocs, c.frees,
	      c.unmatched, c.live, c.live_bytes);
	struct ap_trace_totals tot;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK(tot.alloc_objects == 4 && tot.inuse_space == 264 && tot.peak_inuse_space == 328,
	      "totals %g %g %g", tot.alloc_objects, tot.inuse_space, tot.peak_inuse_space);
	ap_trace_free(t);

	/* without children: one trace, as it is (no procs) */
	CHECK(ap_run_read(&run, paths, 1, false, &err, NULL, NULL) == 0 && run.n == 1, "one");
	CHECK(ap_run_merge(&run, &t, &err) == 0 && t->nprocs == 0 && t->nev == 3, "one as it is");
	ap_trace_free(t);

	/* a child named too is read once; another rate is refused */
	const char *twice[] = { b, a };
	CHECK(ap_run_read(&run, twice, 2, true, &err, NULL, NULL) == 0 && run.n == 2, "twice: %zu",
	      run.n);
	ap_run_release(&run);
	const char *mixed[] = { a, other };
	CHECK(ap_run_read(&run, mixed, 2, false, &err, NULL, NULL) == 0, "%s", err.msg);
	CHECK(ap_run_merge(&run, &t, &err) < 0 && strstr(err.msg, "different rates"), "rates: %s",
	      err.msg);
	ap_run_release(&run);

	/* the children by name */
	char **kids;
	size_t nk = ap_trace_children(a, 0, &kids);
	CHECK(nk == 2 && !strcmp(kids[0], b) && !strcmp(kids[1], old), "children: %zu", nk);
	for (size_t i = 0; i < nk; i++)
		free(kids[i]);
	free(kids);
	CHECK(ap_trace_is_child_suffix(".123") && ap_trace_is_child_suffix(".123.exec2") &&
		  ap_trace_is_child_suffix(".exec1") && !ap_trace_is_child_suffix(".pb.gz") &&
		  !ap_trace_is_child_suffix(".123.exec") && !ap_trace_is_child_suffix(".12a"),
	      "child suffixes");
	/* names made unique when the first was taken (a reused pid, another
	 * pid namespace's process of the same pid, a planted file) */
	CHECK(ap_trace_is_child_suffix(".123-2") && ap_trace_is_child_suffix(".123-2.exec1-3") &&
		  ap_trace_is_child_suffix(".exec1-2") && ap_trace_is_child_suffix(".1.exec2") &&
		  !ap_trace_is_child_suffix(".123-") && !ap_trace_is_child_suffix(".123-x") &&
		  !ap_trace_is_child_suffix("-2") && !ap_trace_is_child_suffix(".123-2.exec") &&
		  !ap_trace_is_child_suffix(".123-2-3") && !ap_trace_is_child_suffix(".record.AbC123"),
	      "unique child suffixes");
	remove(a);
	remove(b);
	remove(old);
	remove(other);
	test_fork_exec(dir, false);
	test_fork_exec(dir, true);
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	puts("whole runs: ok");
	return 0;
}
