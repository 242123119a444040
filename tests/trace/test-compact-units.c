/* The compactor's units on their own (trace/compact/): stack sharing
 * (compact_stacks_meta) on META payloads made here, each record's
 * expected bytes written with the record encoder; the plan for several
 * threads (compact_plan) on a trace of two threads made here, where
 * every block, free and run it must find is known. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_check.h"
#include "ap_trace_encode.h"
#include "ap_trace_writer.h"
#include "compact/bytes.h"
#include "compact/plan.h"
#include "compact/stacks.h"

/* ---- stack sharing --------------------------------------------------- */

/* A META payload of records, and what the compactor should make of it. */
struct meta {
	struct bytes in, want;
};

static void stack_in(struct meta *m, uint32_t id, const uint64_t *pcs, uint32_t depth)
{
	m->in.len += ap_put_stack(room(&m->in, AP_META_STACK_MAX(depth)), id, pcs, depth);
}

/* A STACK kept as it is. */
static void stack_same(struct meta *m, uint32_t id, const uint64_t *pcs, uint32_t depth)
{
	stack_in(m, id, pcs, depth);
	m->want.len += ap_put_stack(room(&m->want, AP_META_STACK_MAX(depth)), id, pcs, depth);
}

/* A STACK the compactor writes as STACK_SHARED with `base`'s outer
 * `shared` frames. */
static void stack_shared(struct meta *m, uint32_t id, const uint64_t *pcs, uint32_t depth,
			 uint32_t base, uint32_t shared)
{
	stack_in(m, id, pcs, depth);
	m->want.len +=
	    ap_put_stack_shared(room(&m->want, AP_META_STACK_MAX(depth) + 2 * AP_VARINT_MAX), id,
				pcs, depth, base, shared);
}

static void thread_same(struct meta *m, uint32_t tid, const char *name)
{
	size_t n = strlen(name);
	m->in.len += ap_put_thread(room(&m->in, AP_META_THREAD_MAX(n)), tid, name, n);
	m->want.len += ap_put_thread(room(&m->want, AP_META_THREAD_MAX(n)), tid, name, n);
}

/* Runs the payload through s; checks the output against what was wanted. */
static void meta_check(struct stack_table *s, struct meta *m, const char *what)
{
	struct bytes out = {0};
	int rc = compact_stacks_meta(s, &out, m->in.b, m->in.len);
	CHECK(rc == 0, "%s: returns %d", what, rc);
	CHECK(out.len == m->want.len && !memcmp(out.b, m->want.b, out.len),
	      "%s: %zu bytes out, %zu wanted", what, out.len, m->want.len);
	free(out.b);
	free(m->in.b);
	free(m->want.b);
	memset(m, 0, sizeof(*m));
}

static void stacks(void)
{
	const uint64_t a = 0x1000, b = 0x2000, c = 0x3000, d = 0x4000;
	const uint64_t s1[] = {a, b, c, d}, s2[] = {0x11, c, d}, s3[] = {0x12, b, c, d},
		       s4[] = {0x13, d}, s5[] = {0x14, 0x11, c, d}, s7[] = {0x15, 0x16, c, d};
	struct stack_table s = {0};
	struct meta m = {0};
	stack_same(&m, 1, s1, 4);	  /* the first: nothing to share */
	stack_shared(&m, 2, s2, 3, 1, 2); /* c d of 1 */
	thread_same(&m, 7, "worker");	  /* copied */
	stack_shared(&m, 3, s3, 4, 1, 3); /* b c d of 1, the longest */
	stack_same(&m, 4, s4, 2);	  /* d alone: one frame is not shared */
	stack_shared(&m, 5, s5, 4, 2, 3); /* 0x11 c d: 2's, not 1's c d */
	stack_shared(&m, 6, s1, 4, 1, 4); /* all of 1 */
	meta_check(&s, &m, "one payload");
	/* a later payload shares with the stacks of the earlier ones; a
	 * padding byte ends it, and is not copied */
	stack_shared(&m, 7, s7, 4, 1, 2);
	*room(&m.in, 1) = 0;
	m.in.len++;
	stack_in(&m, 8, s1, 4); /* (after the padding: not read) */
	meta_check(&s, &m, "a second payload, padded");
	/* an id out of step (not the next one) is copied, and not shared
	 * with; the next id still is */
	stack_same(&m, 12, s1, 4);
	stack_shared(&m, 8, s2, 3, 2, 3);
	meta_check(&s, &m, "an id out of step");
	/* the shared frames the reader takes for the META read so far:
	 * AP_SHARED_PCS_PER_BYTE per byte, and AP_SHARED_PCS_SLACK; up to
	 * that a stack is shared, past it written whole */
	uint8_t rec[64];
	uint64_t cap = AP_SHARED_PCS_PER_BYTE * ap_put_stack(rec, 1, s1, 4) + AP_SHARED_PCS_SLACK;
	for (int past = 0; past < 2; past++) {
		struct stack_table t = {.shared_pcs = cap - 2 + (uint64_t)past};
		stack_same(&m, 1, s1, 4);
		if (past)
			stack_same(&m, 2, s2, 3);
		else
			stack_shared(&m, 2, s2, 3, 1, 2);
		meta_check(&t, &m, past ? "one frame past the cap" : "up to the cap");
		CHECK(t.shared_pcs == cap - (past ? 1 : 0), "%llu shared frames counted",
		      (unsigned long long)t.shared_pcs);
		compact_stacks_release(&t);
	}
	/* a META chunk that went to the output unread: ids unknown, so
	 * nothing more is shared */
	s.lost = true;
	stack_same(&m, 9, s3, 4);
	meta_check(&s, &m, "after a META chunk copied");
	/* a record that does not decode */
	struct bytes out = {0};
	const uint8_t bad[] = {AP_META_STACK, 9, 3, 0x80};
	CHECK(compact_stacks_meta(&s, &out, bad, sizeof(bad)) < 0, "a cut STACK record decodes");
	const uint8_t unknown[] = {77, 1, 2};
	CHECK(compact_stacks_meta(&s, &out, unknown, sizeof(unknown)) < 0,
	      "an unknown tag decodes");
	free(out.b);
	compact_stacks_release(&s);
}

/* ---- the plan for several threads ------------------------------------ */

static const struct thread_plan *plan_of(const struct thread_plan *p, size_t n, uint32_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].tid == tid)
			return &p[i];
	return NULL;
}

/* The events of each run of a thread's plan, into out; how many runs. */
static size_t runs_of(const struct thread_plan *p, uint64_t *out, size_t max)
{
	struct run run = {0};
	size_t k = 0, pos = 0;
	for (uint64_t to = 0; k < max && plan_run_next(p, &pos, &run); to = run.to)
		out[k++] = run.to - to;
	return k;
}

/* Two threads, A (tid 100) and B (101), quantum 10 us, step 1 ms:
 *   q10 A allocates X (its block 0)     q35 B allocates Z (B's 0)
 *   q20 A allocates Y (its block 1)     q40 A frees Y (its own)
 *   q30 B frees X: A's 0, FREE 0 of B   q50 A allocates W (its 2), and B
 *                                           frees it in the same quantum
 *   q60 A frees Z: B's 0, FREE 1 of A
 * B's FREE 1 ends W: A's 2, which keeps its address (two threads name it
 * in one quantum). The merged order A A B B A A B A makes runs of 2, 2, 1
 * events for A and 2, 1 for B. */
static void plan(const char *path)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 10000;
	h.time_step_ns = 1000000;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000, t0 = h.start_ns;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	const uint32_t A = 100, B = 101;
	ap_tw_alloc(tw, A, t0 + 100000, 0, AP_KIND_MALLOC, 0x1000, 16, st);
	ap_tw_alloc(tw, A, t0 + 200000, 0, AP_KIND_MALLOC, 0x2000, 16, st);
	ap_tw_free(tw, B, t0 + 300000, 0, 0x1000);
	ap_tw_alloc(tw, B, t0 + 350000, 0, AP_KIND_MALLOC, 0x3000, 16, st);
	ap_tw_free(tw, A, t0 + 400000, 0, 0x2000);
	ap_tw_alloc(tw, A, t0 + 500001, 0, AP_KIND_MALLOC, 0x4000, 16, st);
	ap_tw_free(tw, B, t0 + 500002, 0, 0x4000);
	ap_tw_free(tw, A, t0 + 600000, 0, 0x3000);
	struct ap_tw_end end = {.end_ns = t0 + 700000};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);

	struct thread_plan *p = NULL;
	size_t np = 0;
	CHECK(compact_plan(path, NULL, 0, h.time_quantum_ns, h.time_step_ns / h.time_quantum_ns, &p, &np,
			   &err) == 0,
	      "plan: %s", err.msg);
	CHECK(np == 2, "plan: %zu threads", np);
	const struct thread_plan *pa = plan_of(p, np, A), *pb = plan_of(p, np, B);
	CHECK(pa && pb, "plan: the threads' tids");
	if (pa && pb) {
		uint32_t ia = (uint32_t)(pa - p), ib = (uint32_t)(pb - p);
		for (uint64_t i = 0; i < 4; i++) {
			CHECK(bits_get(&pa->keep, i) == (i == 2), "A's block %llu keep",
			      (unsigned long long)i);
			CHECK(bits_get(&pa->xfreed, i) == (i == 0 || i == 2),
			      "A's block %llu xfreed", (unsigned long long)i);
			CHECK(!bits_get(&pb->keep, i), "B's block %llu keep",
			      (unsigned long long)i);
			CHECK(bits_get(&pb->xfreed, i) == (i == 0), "B's block %llu xfreed",
			      (unsigned long long)i);
		}
		CHECK(pa->nx == 1 && pa->x[0].ordinal == 1 && pa->x[0].index == 0 &&
			  pa->x[0].plan == ib,
		      "A's frees of B's blocks: %zu", pa->nx);
		CHECK(pb->nx == 2 && pb->x[0].ordinal == 0 && pb->x[0].index == 0 &&
			  pb->x[0].plan == ia && pb->x[1].ordinal == 1 && pb->x[1].index == 2 &&
			  pb->x[1].plan == ia,
		      "B's frees of A's blocks: %zu", pb->nx);
		uint64_t r[8];
		size_t n = runs_of(pa, r, 8);
		CHECK(n == 3 && r[0] == 2 && r[1] == 2 && r[2] == 1, "A's runs: %zu", n);
		n = runs_of(pb, r, 8);
		CHECK(n == 2 && r[0] == 2 && r[1] == 1, "B's runs: %zu", n);
	}
	compact_plan_free(p, np);

	/* without a step to round to, no runs */
	CHECK(compact_plan(path, NULL, 0, h.time_quantum_ns, 1, &p, &np, &err) == 0, "plan: %s", err.msg);
	for (size_t i = 0; i < np; i++)
		CHECK(p[i].nruns == 0, "step 1: %zu bytes of runs", p[i].nruns);
	compact_plan_free(p, np);

	/* not a trace: the reader's error */
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("not a trace\n", f);
		fclose(f);
	}
	p = NULL;
	CHECK(compact_plan(path, NULL, 0, 1, 1, &p, &np, &err) < 0 && !strncmp(err.msg, path, strlen(path)),
	      "plan of a text file: %s", err.msg);
	compact_plan_free(p, 0);
}

/* ---- the plan without the replay, against the replay's ---------------- */

/* Two plans the same: threads, tids, runs, and the blocks and frees
 * across threads. */
static bool plans_same(const struct thread_plan *a, size_t na, const struct thread_plan *b,
		       size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		const struct thread_plan *x = &a[i], *y = &b[i];
		if (x->tid != y->tid || x->nruns != y->nruns || x->nx != y->nx ||
		    (x->nruns && memcmp(x->runs, y->runs, x->nruns)) ||
		    (x->nx && memcmp(x->x, y->x, x->nx * sizeof(*x->x))))
			return false;
		for (size_t w = 0; w < x->keep.n || w < y->keep.n; w++)
			if ((w < x->keep.n ? x->keep.w[w] : 0) != (w < y->keep.n ? y->keep.w[w] : 0))
				return false;
		for (size_t w = 0; w < x->xfreed.n || w < y->xfreed.n; w++)
			if ((w < x->xfreed.n ? x->xfreed.w[w] : 0) !=
			    (w < y->xfreed.n ? y->xfreed.w[w] : 0))
				return false;
	}
	return true;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(uint64_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state % n;
}

/* Random traces of 2 to 4 threads taking turns of random length, often
 * in one quantum, with small chunks (their order in the file far from
 * the events'), THREAD records in another order than the first events,
 * blocks freed at once, later or never, reallocs, and addresses reused.
 * `shared`: threads also free each other's blocks. `odd`: a FREE of an
 * address not live and an ALLOC at one that is, now and then, or (`alone`)
 * once, in quanta no other thread has events in. The quick plan must be
 * the replay's, or give way to it where it cannot be (it is given a path
 * that does not exist: it fails when it falls back). Returns 1 if it was
 * made, 0 if it gave way, -1 if the trace was not. */
static int quick_case(const char *path, bool shared, bool odd, bool alone)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 10000;
	h.time_step_ns = 1000000;
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 64 + rnd(512));
	uint64_t pc = 0x401000, t0 = h.start_ns;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	unsigned nth = 2 + (unsigned)rnd(3);
	enum { MAXLIVE = 64 };
	uint64_t live[4][MAXLIVE];
	unsigned nlive[4] = {0}, next[4] = {0};
	for (unsigned t = nth; t-- > 0;)
		if (rnd(2))
			ap_tw_thread(tw, 200 + t, "worker");
	uint64_t ts = t0;
	unsigned th = 0;
	for (int i = 0; i < 3000; i++) {
		if (!rnd(4))
			th = (unsigned)rnd(nth);
		ts += rnd(4) ? 0 : rnd(3) * h.time_quantum_ns + rnd(h.time_quantum_ns);
		uint32_t tid = 200 + th;
		/* each thread's addresses its own: 16 of them, reused */
		uint64_t base = 0x100000ull * (th + 1);
		unsigned r = (unsigned)rnd(100);
		if (odd && alone && (i == 1000 || i == 2000) && nlive[th]) {
			ts += 2 * h.time_quantum_ns;
			if (i == 1000)
				ap_tw_free(tw, tid, ts, 0, base + 0x8000 + rnd(4) * 16);
			else /* (freed at once: one block live there again) */
				ap_tw_alloc(tw, tid, ts, 0, AP_KIND_MALLOC, live[th][0], 32, st),
				    ap_tw_free(tw, tid, ts, 0, live[th][0]);
			ts += 2 * h.time_quantum_ns;
			continue;
		}
		if (odd && !alone && r < 2) {
			if (r == 0)
				ap_tw_free(tw, tid, ts, 0, base + 0x8000 + rnd(4) * 16);
			else if (nlive[th])
				ap_tw_alloc(tw, tid, ts, 0, AP_KIND_MALLOC, live[th][0], 32, st);
			continue;
		}
		if (shared && r < 10) {
			unsigned o = (unsigned)rnd(nth);
			if (nlive[o]) {
				unsigned k = (unsigned)rnd(nlive[o]);
				ap_tw_free(tw, tid, ts, 0, live[o][k]);
				live[o][k] = live[o][--nlive[o]];
				continue;
			}
		}
		if (nlive[th] && (r < 45 || nlive[th] == MAXLIVE)) {
			unsigned k = r < 30 ? nlive[th] - 1 : (unsigned)rnd(nlive[th]);
			if (r < 35) {
				uint64_t to = base + (next[th]++ % 16) * 16;
				bool taken = false;
				for (unsigned j = 0; j < nlive[th]; j++)
					taken |= live[th][j] == to;
				if (!taken) {
					ap_tw_realloc(tw, tid, ts, 0, AP_KIND_MALLOC, live[th][k],
						      to, 48, st,
						      AP_RF_NEW_SAMPLED | AP_RF_OLD_TRACKED);
					live[th][k] = to;
					continue;
				}
			}
			ap_tw_free(tw, tid, ts, 0, live[th][k]);
			live[th][k] = live[th][--nlive[th]];
			continue;
		}
		uint64_t a = base + (next[th]++ % 16) * 16;
		bool taken = false;
		for (unsigned j = 0; j < nlive[th]; j++)
			taken |= live[th][j] == a;
		if (taken)
			continue;
		ap_tw_alloc(tw, tid, ts, 0, AP_KIND_MALLOC, a, 16 + rnd(64), st);
		live[th][nlive[th]++] = a;
	}
	struct ap_tw_end end = {.end_ns = ts + 1};
	ap_tw_end(tw, &end);
	struct ap_error err;
	uint8_t *data = NULL;
	size_t size = 0;
	int out = -1;
	CHECK(ap_tw_close_mem(tw, &data, &size, &err) == 0, "%s", err.msg);
	FILE *f = fopen(path, "w");
	if (!data || !f || fwrite(data, 1, size, f) != size) {
		CHECK(0, "cannot write %s", path);
		goto done;
	}
	fclose(f);
	f = NULL;
	for (uint64_t step = 1; step <= 100; step += 99) {
		struct thread_plan *r = NULL, *q = NULL;
		size_t nr = 0, nq = 0;
		CHECK(compact_plan(path, NULL, 0, h.time_quantum_ns, step, &r, &nr, &err) == 0,
		      "replay plan: %s", err.msg);
		int rc = compact_plan("/nonexistent/quick", data, size, h.time_quantum_ns, step,
				      &q, &nq, &err);
		if (rc == 0)
			CHECK(plans_same(r, nr, q, nq),
			      "quick plan (step %llu, %u threads%s%s%s) not the replay's",
			      (unsigned long long)step, nth, shared ? ", shared" : "",
			      odd ? ", odd" : "", alone ? " alone" : "");
		else
			q = NULL;
		out = rc == 0;
		compact_plan_free(r, nr);
		compact_plan_free(q, rc == 0 ? nq : 0);
	}
done:
	if (f)
		fclose(f);
	free(data);
	return out;
}

static void quick(const char *path)
{
	int made[2][3] = {{0}}, n[2][3] = {{0}};
	for (int i = 0; i < 400; i++) {
		bool shared = i % 8 == 7;
		int odd = i % 3; /* 1: now and then, 2: alone */
		int rc = quick_case(path, shared, odd > 0, odd == 2);
		made[shared][odd] += rc == 1;
		n[shared][odd]++;
	}
	/* own addresses: without the replay, odd events alone too; odd
	 * events now and then (in quanta of other threads' events): with it,
	 * as blocks freed across threads */
	CHECK(made[0][0] == n[0][0] && made[0][2] == n[0][2],
	      "quick plans of own addresses: %d of %d, odd events alone %d of %d", made[0][0],
	      n[0][0], made[0][2], n[0][2]);
	CHECK(!made[1][0] && !made[1][1] && !made[1][2], "quick plans of shared blocks: %d %d %d",
	      made[1][0], made[1][1], made[1][2]);
	CHECK(made[0][1] < n[0][1] / 2, "quick plans with odd events: %d of %d", made[0][1],
	      n[0][1]);
}

int main(void)
{
	char path[] = "/tmp/ap-compact-units-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 2;
	close(fd);
	stacks();
	plan(path);
	quick(path);
	unlink(path);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
