/* ap_trace_compact: a trace rewritten (joined, re-encoded in columns with
 * anonymous blocks and distances, compressed) must read back as the same
 * events: same times, threads, cpus, kinds, sizes, stacks, and the same
 * blocks, whose identities may change (anonymous) but must match the same
 * frees. Built with the test writer, so the expectation is the writer's own
 * trace read back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_replay.h"
#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "ap_trace_encode.h"
#include "ap_trace_writer.h"
#include "ap_check.h"


static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	return ap_test_next(&rng);
}

/* nthr threads (1 or 3): private churn (frees near and far), realloc
 * chains, and (with 3) blocks one thread allocates and another frees, in
 * 10 us quanta; HEADER time_step_ns `step` (0: none). With `bursty`,
 * threads take turns (as under a lock, or python3's GIL), each for up to
 * a few hundred events, on one clock. */
static void build_gen(const char *path, size_t steps, uint32_t nthr, uint64_t step, bool bursty)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 10000;
	h.time_step_ns = step;
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_gaps(tw); /* as --all writes them */
	uint64_t pcs[2] = {0x401000, 0x402000};
	uint32_t st[3] = {ap_tw_stack(tw, pcs, 1), ap_tw_stack(tw, pcs, 2),
			  ap_tw_stack(tw, pcs + 1, 1)};
	for (uint32_t k = 0; k < nthr; k++) {
		char name[8];
		snprintf(name, sizeof(name), "t%u", k);
		ap_tw_thread(tw, 100 + k, name);
	}
	enum { WIN = 600 };
	uint64_t live[3][WIN] = {{0}};
	uint64_t ts[3] = {h.start_ns, h.start_ns, h.start_ns};
	uint64_t handoff = 0; /* a block of thread 0 that thread 1 frees */
	uint64_t next = 0x10000, clock = h.start_ns;
	uint32_t k = 0, burst = 0;
	for (size_t i = 0; i < steps; i++) {
		if (!bursty) {
			k = (uint32_t)(rnd() % nthr);
		} else if (!burst--) {
			k = (uint32_t)(rnd() % nthr);
			burst = (uint32_t)(rnd() % 300);
		}
		uint32_t tid = 100 + k, cpu = (uint32_t)(rnd() % 64 == 0);
		if (!bursty)
			ts[k] += rnd() % 3000;
		else
			ts[k] = clock += rnd() % 3000;
		size_t slot = rnd() % (i % 7 == 0 ? WIN : 8); /* mostly near, some far */
		/* runs of one gap, and every code (not from rnd(): the
		 * sequences of the other fields stay as they were) */
		ap_tw_gap(tw, (uint8_t)(i % 97 < 80 ? 21 : i * 7));
		uint64_t *b = &live[k][slot];
		unsigned r = (unsigned)(rnd() % 10);
		if (r == 0 && *b) { /* realloc, moving or in place */
			uint64_t to = rnd() % 2 ? *b : (next += 16);
			ap_tw_realloc(tw, tid, ts[k], cpu, AP_KIND_REALLOC, *b, to, rnd() % 4096,
				      st[1], AP_RF_NEW_SAMPLED | AP_RF_OLD_TRACKED);
			*b = to;
		} else if (r == 1 && k == 0 && !handoff) {
			handoff = (next += 16);
			ap_tw_alloc(tw, tid, ts[k], cpu, AP_KIND_MALLOC, handoff, 24, st[2]);
		} else if (r == 1 && k == 1 && handoff && ts[1] >= ts[0]) {
			ap_tw_free(tw, tid, ts[k], cpu, handoff);
			handoff = 0;
		} else if (*b) {
			ap_tw_free(tw, tid, ts[k], cpu, *b);
			*b = 0;
		} else {
			*b = (next += 16);
			ap_tw_alloc(tw, tid, ts[k], cpu, (unsigned)(rnd() % 5), *b, 16 + rnd() % 500,
				    st[rnd() % 2]);
		}
	}
	struct ap_tw_end end = {.end_ns = ts[0] + ts[1] + ts[2]};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
}

static void build_n(const char *path, size_t steps, uint32_t nthr)
{
	build_gen(path, steps, nthr, 0, false);
}

static void build(const char *path, size_t steps)
{
	build_n(path, steps, 3);
}

static struct ap_trace *load(const char *path)
{
	struct ap_trace *t = NULL;
	struct ap_error err;
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	return t;
}

static void same_events_step(const struct ap_trace *a, const struct ap_trace *b, uint64_t step,
			     const char *what);

/* A replay as its consumers see it, but for the blocks' addresses and
 * objects: one entry per callback, in order (the blocks live at the end
 * sorted, since a resolved trace's come per stack and size). */
struct rl {
	size_t i;
	uint64_t size, size2;
	uint32_t stack, stack2;
	uint8_t op;
	bool temporary;
	double w;
};

struct rlog {
	struct rl *e;
	size_t n, alloc, nlive;
};

static void rl_add(struct rlog *l, struct rl r)
{
	AP_ALLOC_GROW(l->e, l->n + 1, l->alloc);
	l->e[l->n++] = r;
}

static void rl_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	rl_add(ctx, (struct rl){i, b->size, 0, b->stack, 0, 'a', b->temporary, b->w});
}

static void rl_grow(void *ctx, size_t i, const struct ap_event *e,
		    const struct ap_replay_block *old, const struct ap_replay_block *b)
{
	rl_add(ctx, (struct rl){i, old->size, b->size, old->stack, b->stack, 'g', old->temporary,
				b->w + old->w});
}

static void rl_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	rl_add(ctx, (struct rl){i, b->size, 0, b->stack, 0, 'f', b->temporary, b->w});
}

static void rl_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	rl_add(ctx, (struct rl){i, 0, 0, 0, 0, 'u', false, 0});
}

static void rl_live(void *ctx, const struct ap_replay_block *b)
{
	struct rlog *l = ctx;
	rl_add(l, (struct rl){0, b->size, 0, b->stack, 0, 'l', b->temporary, b->w});
	l->nlive++;
}

static int rl_cmp(const void *x, const void *y)
{
	const struct rl *a = x, *b = y;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return a->size < b->size ? -1 : a->size > b->size;
}

static struct rlog rl_replay(const struct ap_trace *t)
{
	static const struct ap_replay_ops ops = {.alloc = rl_alloc,
						 .grow = rl_grow,
						 .free = rl_free,
						 .unmatched = rl_unmatched,
						 .live_at_end = rl_live};
	struct rlog l = {0};
	struct ap_replay_consumer c = {&ops, &l};
	struct ap_error err;
	CHECK(ap_replay(t, &c, 1, NULL, &err) == 0, "%s", err.msg);
	qsort(l.e + l.n - l.nlive, l.nlive, sizeof(*l.e), rl_cmp);
	return l;
}

/* b, a's events compacted: its replay (resolved, without a live map)
 * calls the consumers as a's (with one) does. */
static void same_replay(const struct ap_trace *a, const struct ap_trace *b, const char *what)
{
	struct rlog x = rl_replay(a), y = rl_replay(b);
	CHECK(x.n == y.n && x.nlive == y.nlive, "%s: replay: %zu calls (%zu live), want %zu (%zu)",
	      what, y.n, y.nlive, x.n, x.nlive);
	size_t bad = 0;
	for (size_t k = 0; k < x.n && k < y.n; k++) {
		const struct rl *p = &x.e[k], *q = &y.e[k];
		if ((p->i != q->i || p->op != q->op || p->size != q->size || p->size2 != q->size2 ||
		     p->stack != q->stack || p->stack2 != q->stack2 ||
		     p->temporary != q->temporary || p->w != q->w) &&
		    bad++ < 5)
			CHECK(0, "%s: replay call %zu: %c %zu size %llu stack %u temp %d, want %c %zu "
				 "size %llu stack %u temp %d",
			      what, k, q->op, q->i, (unsigned long long)q->size, q->stack, q->temporary,
			      p->op, p->i, (unsigned long long)p->size, p->stack, p->temporary);
	}
	free(x.e);
	free(y.e);
}

/* The times of b, a's events compacted with HEADER time_step_ns `step`:
 * each at most a step earlier, never later, a multiple of the quantum;
 * in order; a function of the old time; and wherever two events of
 * different threads compared <, = or >, they still do (checked against
 * each other thread's last event before, which is enough once the new
 * times are in order and equal where the old were). With one thread,
 * exactly rounded down to the step. */
static void coarse_times(const struct ap_trace *a, const struct ap_trace *b, uint64_t step,
			 const char *what)
{
	size_t n = a->nev < b->nev ? a->nev : b->nev, bad = 0, moved = 0;
	enum { NT = 8 };
	size_t last[NT];
	for (size_t k = 0; k < NT; k++)
		last[k] = SIZE_MAX;
	for (size_t i = 0; i < n && bad < 5; i++) {
		uint64_t x = a->ev[i].ts, y = b->ev[i].ts;
		unsigned th = a->ev[i].thread;
		bool ok = y <= x && x - y < step && y % a->time_quantum_ns == 0 && th < NT;
		if (a->nthreads == 1)
			ok = ok && y == x - x % step;
		if (i && ok) {
			const struct ap_event *px = &a->ev[i - 1], *py = &b->ev[i - 1];
			ok = py->ts <= y && (px->ts != x || py->ts == y);
		}
		for (unsigned k = 0; ok && k < NT; k++) {
			if (k == th || last[k] == SIZE_MAX)
				continue;
			uint64_t lx = a->ev[last[k]].ts, ly = b->ev[last[k]].ts;
			ok = (lx < x) == (ly < y) && (lx == x) == (ly == y);
		}
		if (!ok) {
			bad++;
			CHECK(0, "%s: event %zu (thread %u): time %llu, was %llu", what, i, th,
			      (unsigned long long)y, (unsigned long long)x);
		}
		moved += x != y;
		if (th < NT)
			last[th] = i;
	}
	/* (the run has most of its times off the step) */
	CHECK(moved > n / 2, "%s: %zu of %zu times moved", what, moved, n);
}

/* Same events, same blocks (identities mapped on each ALLOC). */
static void same_events(const struct ap_trace *a, const struct ap_trace *b, const char *what)
{
	same_events_step(a, b, 0, what);
}

/* ...with times as compacted with HEADER time_step_ns `step` (0: the
 * same times). */
static void same_events_step(const struct ap_trace *a, const struct ap_trace *b, uint64_t step,
			     const char *what)
{
	CHECK(a->nev == b->nev, "%s: %zu events, want %zu", what, b->nev, a->nev);
	CHECK(a->nstacks == b->nstacks, "%s: %zu stacks, want %zu", what, b->nstacks, a->nstacks);
	for (size_t i = 1; i < a->nstacks && i < b->nstacks; i++)
		CHECK(a->stacks[i].depth == b->stacks[i].depth &&
			  !memcmp(a->stacks[i].pcs, b->stacks[i].pcs,
				  a->stacks[i].depth * sizeof(*a->stacks[i].pcs)),
		      "%s: stack %zu differs", what, i);
	CHECK(a->nrecords == b->nrecords && a->ngap_records == b->ngap_records,
	      "%s: records differ", what);
	size_t n = a->nev < b->nev ? a->nev : b->nev, bad = 0, anon = 0;
	/* identity map: a's address -> b's identity of the block live there */
	size_t cap = 1;
	while (cap < 2 * n + 2)
		cap *= 2;
	uint64_t *key = calloc(cap, sizeof(*key)), *val = calloc(cap, sizeof(*val));
	/* and the stack and size of the block live there, for the frees the
	 * compactor resolved (a's frees are not, unless a was compacted too) */
	uint64_t *size = calloc(cap, sizeof(*size));
	uint32_t *stack = calloc(cap, sizeof(*stack));
	bool *live = calloc(cap, sizeof(*live));
	size_t resolved = 0;
	uint64_t gsum[2][64] = {{0}}; /* each thread's gaps, a's and b's */
	for (size_t i = 0; i < n; i++) {
		const struct ap_event *x = &a->ev[i], *y = &b->ev[i];
		size_t j = (size_t)(x->addr * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
		while (key[j] && key[j] != x->addr)
			j = (j + 1) & (cap - 1);
		const unsigned res = AP_EVF_RESOLVED | AP_EVF_TEMPORARY;
		bool ok = (step || x->ts == y->ts) && x->thread == y->thread && x->cpu == y->cpu &&
			  x->type == y->type && x->kind == y->kind &&
			  (x->flags & ~res) == (y->flags & ~res);
		/* (gaps: a window's mean in the compactor's columns) */
		if (x->thread < 64) {
			gsum[0][x->thread] += ap_gap_work_ns(x->gap);
			gsum[1][y->thread] += ap_gap_work_ns(y->gap);
		}
		if (x->type == AP_EV_ALLOC) {
			ok = ok && (y->addr == x->addr || y->addr >= AP_ANON_BASE) &&
			     x->size == y->size && x->stack == y->stack;
			anon += y->addr >= AP_ANON_BASE;
			key[j] = x->addr;
			val[j] = y->addr;
			size[j] = x->size;
			stack[j] = (x->flags & AP_EVF_SAMPLED) ? x->stack : 0;
			live[j] = true;
		} else {
			ok = ok && y->addr == (key[j] ? val[j] : x->addr);
			/* a block live at the address: b's FREE says its stack
			 * and size (a compacted trace's) or nothing */
			if (x->flags & AP_EVF_RESOLVED) {
				ok = ok && x->flags == y->flags && x->size == y->size &&
				     x->stack == y->stack;
			} else if (live[j] && (y->flags & AP_EVF_RESOLVED)) {
				ok = ok && y->size == size[j] && y->stack == stack[j];
				resolved++;
			} else {
				ok = ok && !(y->flags & AP_EVF_RESOLVED) && !y->size && !y->stack;
			}
			live[j] = false;
		}
		if (!ok && bad++ < 5)
			CHECK(0, "%s: event %zu: ts %llu/%llu thread %u/%u type %u/%u addr %#llx/%#llx",
			      what, i, (unsigned long long)x->ts, (unsigned long long)y->ts, x->thread,
			      y->thread, x->type, y->type, (unsigned long long)x->addr,
			      (unsigned long long)y->addr);
	}
	free(key);
	free(val);
	free(size);
	free(stack);
	free(live);
	/* a thread's gaps add up to the same, to within the windows' codes'
	 * slack (ap_gapq_code) and 2 % */
	for (int k = 0; k < 64; k++) {
		uint64_t x = gsum[0][k], y = gsum[1][k], d = x > y ? x - y : y - x;
		CHECK(d <= x / 50 + 4 * AP_GAPQ_RESID_MAX * AP_GAP_WINDOW,
		      "%s: thread %d's gaps add up to %llu ns, want %llu", what, k,
		      (unsigned long long)y, (unsigned long long)x);
	}
	if (step)
		coarse_times(a, b, step, what);
	same_replay(a, b, what);
	struct ap_trace_totals ta, tb;
	struct ap_error err;
	CHECK(ap_trace_totals(a, &ta, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_totals(b, &tb, &err) == 0, "%s", err.msg);
	CHECK(ta.alloc_objects == tb.alloc_objects && ta.free_objects == tb.free_objects &&
		  ta.inuse_space == tb.inuse_space && ta.peak_inuse_space == tb.peak_inuse_space &&
		  ta.unmatched_frees == tb.unmatched_frees && ta.inuse_objects == tb.inuse_objects &&
		  ta.temporary == tb.temporary && ta.temporary_heaptrack == tb.temporary_heaptrack,
	      "%s: totals differ", what);
	CHECK(!strcmp(what, "compacted") ? anon > n / 4 : 1, "%s: only %zu anonymous blocks",
	      what, anon);
	CHECK(!strcmp(what, "compacted") ? resolved > n / 8 && b->resolved : 1,
	      "%s: only %zu frees resolved", what, resolved);
}

static size_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	*n = file_size(path);
	uint8_t *b = malloc(*n + 1);
	FILE *f = fopen(path, "rb");
	CHECK(f && fread(b, 1, *n, f) == *n, "read %s", path);
	if (f)
		fclose(f);
	return b;
}

static void put_file(const char *path, const uint8_t *b, size_t n, const char *mode)
{
	FILE *f = fopen(path, mode);
	CHECK(f && fwrite(b, 1, n, f) == n, "write %s", path);
	if (f)
		fclose(f);
}

static bool leftovers(const char *path)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "ls %s.compact.* >/dev/null 2>&1", path);
	return system(cmd) == 0;
}

/* ap_compact_stream_*: the trace appended in random pieces (cut anywhere,
 * inside chunk headers and payloads), fed between the pieces, must come
 * out as ap_trace_compact makes it of the whole file, byte for byte. */
static void stream_checks(const char *path)
{
	char whole[64];
	snprintf(whole, sizeof(whole), "%s.whole", path);
	build_n(whole, 300000, 1);
	size_t n;
	uint8_t *raw = slurp(whole, &n);
	struct ap_trace *ref = load(whole);
	struct ap_compact_stats want, st;
	struct ap_error err;
	CHECK(ap_trace_compact(whole, 3, &want, &err) == 0, "%s", err.msg);
	size_t wn;
	uint8_t *wb = slurp(whole, &wn);

	put_file(path, raw, 5, "wb");
	struct ap_compact_stream *s = ap_compact_stream_start(path, 3);
	CHECK(s != NULL, "stream not started");
	size_t at = 5;
	int feeds = 0;
	while (s && at < n) {
		size_t piece = 1 + rnd() % (rnd() % 4 ? 9000 : 300000);
		if (piece > n - at)
			piece = n - at;
		put_file(path, raw + at, piece, "ab");
		at += piece;
		CHECK(ap_compact_stream_feed(s) == 0, "feed at %zu of %zu", at, n);
		feeds++;
	}
	CHECK(s && ap_compact_stream_finish(s, &st, &err) == 0, "finish: %s", err.msg);
	size_t gn;
	uint8_t *gb = slurp(path, &gn);
	CHECK(gn == wn && !memcmp(gb, wb, wn),
	      "streamed (%d feeds) %zu bytes, compacted as a whole %zu: they differ", feeds, gn,
	      wn);
	CHECK(st.events == want.events && st.nthreads == 1 && st.has_end && !st.cut,
	      "stream stats: %llu events, want %llu", (unsigned long long)st.events,
	      (unsigned long long)want.events);
	struct ap_trace *t = load(path);
	if (ref && t)
		same_events(ref, t, "streamed");
	ap_trace_free(t);
	free(gb);
	CHECK(!leftovers(path), "temporary file left");

	/* the writer died inside a chunk: the stream's end is cut, as the
	 * whole file's would be */
	put_file(path, raw, n - 100, "wb");
	s = ap_compact_stream_start(path, 3);
	CHECK(s && ap_compact_stream_feed(s) == 0, "feed of a cut trace");
	CHECK(s && ap_compact_stream_finish(s, &st, &err) == 0, "finish: %s", err.msg);
	CHECK(st.cut && !st.has_end, "cut not seen by the stream");
	t = load(path);
	CHECK(t && t->truncated, "streamed cut trace not truncated");
	ap_trace_free(t);

	/* a corrupt chunk in the middle: fed as "not yet written", then an
	 * error at the end, and the file as it was */
	uint8_t *bad = malloc(n);
	memcpy(bad, raw, n);
	bad[n / 2] ^= 0x5a;
	put_file(path, bad, n, "wb");
	s = ap_compact_stream_start(path, 3);
	CHECK(s && ap_compact_stream_feed(s) == 0, "feed of a corrupt trace");
	CHECK(s && ap_compact_stream_finish(s, &st, &err) < 0, "a corrupt trace streamed");
	CHECK(strstr(err.msg, "corrupt chunk at byte") != NULL, "msg: %s", err.msg);
	size_t bn;
	uint8_t *bb = slurp(path, &bn);
	CHECK(bn == n && !memcmp(bb, bad, n), "the corrupt trace was rewritten");
	CHECK(!leftovers(path), "temporary file left");
	free(bb);
	free(bad);

	/* three threads: the stream gives up (the caller compacts after the
	 * exit) and leaves nothing behind */
	build_n(path, 20000, 3);
	s = ap_compact_stream_start(path, 3);
	CHECK(s && ap_compact_stream_feed(s) < 0, "the stream took several threads");
	ap_compact_stream_abandon(s);
	CHECK(!leftovers(path), "temporary file left");
	CHECK(ap_compact_stream_start(path, 0) == NULL, "a stream at level 0");

	ap_trace_free(ref);
	free(raw);
	free(wb);
	unlink(whole);
}

/* The chunks of the trace at data[0, n): offsets of their headers. */
static size_t chunk_offsets(const uint8_t *data, size_t n, size_t *off, size_t max)
{
	size_t k = 0;
	for (size_t o = AP_TRACE_PREAMBLE_LEN; o + AP_CHUNK_HDR_LEN <= n && k < max;
	     o += AP_CHUNK_HDR_LEN + ap_get_u32le(data + o + 12))
		off[k++] = o;
	return k;
}

/* Rewrites the header of the chunk at h with a type and flags, checksums
 * made right again. */
static void reframe(uint8_t *h, uint8_t type, uint8_t flags)
{
	h[4] = type;
	h[5] = flags;
	ap_put_u32le(h + 16, ap_crc32c(h + AP_CHUNK_HDR_LEN, ap_get_u32le(h + 12)));
	ap_put_u32le(h + AP_CHUNK_HDR_CRC_OFF, ap_crc32c(h, AP_CHUNK_HDR_CRC_OFF));
}

/* bad (a copy of good, n bytes) with good[from, from + len) inserted at
 * `at`; returns the new length. */
static size_t insert_copy(uint8_t *bad, const uint8_t *good, size_t n, size_t at, size_t from,
			  size_t len)
{
	memmove(bad + at + len, bad + at, n - at);
	memcpy(bad + at, good + from, len);
	return n + len;
}

/* An END whose chunk count comes twice, too large and then right: the
 * reader keeps the last value, and so does the compactor (it refused the
 * trace; found by fuzz-reader). */
static void end_count_twice(const char *path)
{
	build(path, 2000);
	size_t n;
	uint8_t *d = slurp(path, &n);
	size_t off[64], nch = chunk_offsets(d, n, off, 64), e = off[nch - 1];
	CHECK(d[e + 4] == AP_CHUNK_END, "the last chunk is not END");
	uint32_t len = ap_get_u32le(d + e + 12);
	uint8_t *out = malloc(n + 16);
	memcpy(out, d, e + AP_CHUNK_HDR_LEN);
	size_t k = e + AP_CHUNK_HDR_LEN;
	k += ap_put_uv(out + k, AP_EK_CHUNKS);
	k += ap_put_uv(out + k, AP_KV_UINT);
	k += ap_put_uv(out + k, 999999);
	memcpy(out + k, d + e + AP_CHUNK_HDR_LEN, len);
	k += len;
	uint32_t nlen = (uint32_t)(k - e - AP_CHUNK_HDR_LEN);
	ap_chunk_header(out + e, AP_CHUNK_END, ap_get_u32le(d + e + 8), AP_STREAM_NONE, 0,
			out + e + AP_CHUNK_HDR_LEN, nlen);
	put_file(path, out, k, "wb");
	struct ap_trace *t = load(path);
	CHECK(t != NULL, "the reader refuses it");
	struct ap_compact_stats st;
	struct ap_error err;
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	struct ap_trace *u = load(path);
	if (t && u)
		same_events(t, u, "END count twice");
	ap_trace_free(t);
	ap_trace_free(u);
	free(out);
	free(d);
}

/* Ends tw's trace at `ts` into path, compacts it, checks that it holds
 * the same events and stacks; returns the compacted size. */
static size_t close_compact(struct ap_tw *tw, const char *path, uint64_t ts, const char *what)
{
	struct ap_tw_end end = {.end_ns = ts};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
	struct ap_trace *before = load(path);
	struct ap_compact_stats st;
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s: %s", what, err.msg);
	size_t size = file_size(path);
	struct ap_trace *after = load(path);
	if (before && after)
		same_events(before, after, what);
	ap_trace_free(before);
	ap_trace_free(after);
	return size;
}

/* A list built, then dropped, again and again (python3 building JSON
 * does this): 2000 blocks allocated at even steps, 0 to 2 short-lived
 * temporaries after each, then freed in order. The frees' distances vary
 * with the temporaries, the addresses step evenly: the compactor writes
 * the list by address, and the trace costs under 0.4 byte per event (by
 * distance it took 0.44; the order of the temporaries is most of the
 * rest). The events stay the same. */
static void lists_dropped(const char *path)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 1000000; /* (times cost nothing here) */
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[2] = {0x401000, 0x402000};
	uint32_t st = ap_tw_stack(tw, pcs, 2), tmp = ap_tw_stack(tw, pcs, 1);
	uint64_t ts = h.start_ns, nev = 0;
	for (int round = 0; round < 150; round++) {
		uint64_t n = 2000;
		uint64_t base = 0x7f0000000000ull + (uint64_t)(round % 2) * 0x1000000;
		for (uint64_t i = 0; i < n; i++) {
			ap_tw_alloc(tw, 7, ts++, 0, AP_KIND_MALLOC, base + 64 * i, 48, st);
			nev++;
			for (uint64_t k = rnd() % 3; k > 0; k--) {
				uint64_t t = 0x5000000 + 16 * (rnd() % 64);
				ap_tw_alloc(tw, 7, ts++, 0, AP_KIND_MALLOC, t, 24, tmp);
				ap_tw_free(tw, 7, ts++, 0, t);
				nev += 2;
			}
		}
		for (uint64_t i = 0; i < n; i++) {
			ap_tw_free(tw, 7, ts++, 0, base + 64 * i);
			nev++;
		}
	}
	size_t size = close_compact(tw, path, ts, "lists dropped");
	CHECK(size < nev * 2 / 5, "%zu bytes for %llu events", size, (unsigned long long)nev);
}

/* Deep stacks that share their outer frames (a program's call tree): 2000
 * stacks of depth 40 under 100 paths from main, each call site reached
 * from every path. The compactor writes most as STACK_SHARED records:
 * the trace takes under 25 KB (with every PC, 44 KB), and reads back with
 * the same stacks. */
static void stacks_shared(const char *path)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t outer[100][30];
	for (int k = 0; k < 100; k++)
		for (int f = 0; f < 30; f++)
			outer[k][f] = 0x400000 + 0x100 * (rnd() % 4096);
	uint64_t ts = h.start_ns;
	for (int i = 0; i < 2000; i++) {
		uint64_t pcs[40];
		for (int f = 0; f < 10; f++)
			pcs[f] = 0x500000 + 0x10 * (uint64_t)((i / 100) * 10 + f);
		memcpy(pcs + 10, outer[i % 100], sizeof(outer[0]));
		uint32_t st = ap_tw_stack(tw, pcs, 40);
		ap_tw_alloc(tw, 7, ts++, 0, AP_KIND_MALLOC, 0x10000 + 16 * (uint64_t)i, 32, st);
	}
	size_t size = close_compact(tw, path, ts, "stacks shared");
	CHECK(size < 25000, "%zu bytes", size);
}

/* Stacks defined between events, in many small META chunks (as the
 * sampler writes them, one per 64 KiB of records or before its thread
 * buffers): compacted, the META records before one EVENTS chunk are one
 * chunk (zstd finds what stacks share only within one), and the stacks
 * and events read the same. */
static void meta_joined(const char *path)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 512);
	uint64_t ts = h.start_ns;
	for (int i = 0; i < 3000; i++) {
		uint64_t pcs[20];
		for (int f = 0; f < 20; f++)
			pcs[f] = 0x400000 + 0x10 * (uint64_t)(f * 7 + (f < 3 ? i : 0));
		uint32_t st = ap_tw_stack(tw, pcs, 20);
		ap_tw_alloc(tw, 7, ts++, 0, AP_KIND_MALLOC, 0x10000 + 16 * (uint64_t)i, 32, st);
		if (i % 50 == 49)
			ap_tw_flush(tw);
	}
	struct ap_tw_end end = {.end_ns = ts};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
	size_t n;
	uint8_t *d = slurp(path, &n);
	size_t off[4096], nch = chunk_offsets(d, n, off, 4096), nmeta = 0;
	for (size_t i = 0; i < nch; i++)
		nmeta += d[off[i] + 4] == AP_CHUNK_META;
	free(d);
	CHECK(nmeta >= 50, "the writer wrote only %zu META chunks", nmeta);
	struct ap_trace *before = load(path);
	struct ap_compact_stats st;
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	struct ap_trace *after = load(path);
	if (before && after)
		same_events(before, after, "META joined");
	ap_trace_free(before);
	ap_trace_free(after);
	d = slurp(path, &n);
	nch = chunk_offsets(d, n, off, 4096);
	size_t meta = 0, events = 0;
	for (size_t i = 0; i < nch; i++) {
		meta += d[off[i] + 4] == AP_CHUNK_META;
		events += d[off[i] + 4] == AP_CHUNK_EVENTS;
		if (d[off[i] + 4] == AP_CHUNK_EVENTS)
			CHECK(meta == 1, "EVENTS chunk %zu after %zu META chunks", events, meta);
	}
	CHECK(meta == 1 && events == 1, "compacted: %zu META chunks, %zu EVENTS", meta, events);
	free(d);
}

/* The compactor walks chunks with the reader's walker: a trace whose
 * framing the reader refuses is refused, left as it is, with the reader's
 * message (bad magic, checksums, flags, a second HEADER, chunks out of
 * their stream's order...). */
static void same_verdict(const char *path)
{
	build(path, 3000);
	FILE *f = fopen(path, "rb");
	uint8_t *good = malloc(1u << 22);
	size_t n = fread(good, 1, 1u << 22, f);
	fclose(f);
	size_t off[64];
	size_t nch = chunk_offsets(good, n, off, 64);
	CHECK(nch >= 6, "only %zu chunks", nch);
	uint8_t *bad = malloc(2 * n); /* (room for a copy of any chunk) */
	for (int kind = 0; kind < 9; kind++) {
		memcpy(bad, good, n);
		size_t len = n;
		uint8_t *h = bad + off[2]; /* an EVENTS chunk */
		const char *what = "";
		switch (kind) {
		case 0:
			what = "bad magic";
			h[0] ^= 1;
			break;
		case 1:
			what = "header checksum";
			h[9] ^= 1;
			break;
		case 2:
			what = "payload checksum";
			h[AP_CHUNK_HDR_LEN + 3] ^= 1;
			break;
		case 3:
			what = "unknown flags";
			reframe(h, h[4], 4);
			break;
		case 4:
			what = "columns on META";
			reframe(bad + off[1], bad[off[1] + 4], AP_CHUNK_F_COLUMNS);
			break;
		case 5:
			what = "unknown type";
			reframe(h, 9, 0);
			break;
		case 6: /* the HEADER chunk again after the first META */
			what = "a second HEADER";
			len = insert_copy(bad, good, n, off[2], off[0], off[1] - off[0]);
			break;
		case 7: /* chunk 2 twice */
			what = "a duplicated chunk";
			len = insert_copy(bad, good, n, off[3], off[2], off[3] - off[2]);
			break;
		case 8: /* no HEADER: the file starts with META */
			what = "no HEADER first";
			memmove(bad + AP_TRACE_PREAMBLE_LEN, bad + off[1], n - off[1]);
			len = n - (off[1] - off[0]);
			break;
		}
		f = fopen(path, "wb");
		fwrite(bad, 1, len, f);
		fclose(f);
		struct ap_trace *t = NULL;
		struct ap_error rerr = {0}, cerr = {0};
		struct ap_compact_stats st;
		int rrc = ap_trace_read(path, &t, &rerr, NULL, NULL);
		ap_trace_free(t);
		CHECK(rrc < 0, "%s: the reader takes it", what);
		CHECK(ap_trace_compact(path, 3, &st, &cerr) < 0, "%s: compacted", what);
		CHECK(!strcmp(rerr.msg, cerr.msg), "%s: the reader says '%s', the compactor '%s'",
		      what, rerr.msg, cerr.msg);
		CHECK(file_size(path) == len, "%s: the corrupt trace was rewritten", what);
	}
	free(bad);
	free(good);
}

/* Eleven threads: ten allocate, the eleventh frees their blocks in
 * turn, so that its REFs name more owners than it keeps steps for
 * (AP_XOWNERS): every FREE still ends its block, compacted. */
static void many_owners(const char *path)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 10000;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	enum { OWNERS = AP_XOWNERS + 2 };
	for (uint32_t k = 0; k <= OWNERS; k++) {
		char name[8];
		snprintf(name, sizeof(name), "t%u", k);
		ap_tw_thread(tw, 100 + k, name);
	}
	uint64_t ts = h.start_ns, next = 0x10000, blk[OWNERS];
	for (int round = 0; round < 300; round++) {
		for (uint32_t k = 0; k < OWNERS; k++) {
			blk[k] = next += 32;
			ap_tw_alloc(tw, 101 + k, ts += 20000, 0, AP_KIND_MALLOC, blk[k], 24, st);
		}
		for (uint32_t k = 0; k < OWNERS; k++) {
			uint32_t j = (uint32_t)(round % 3 ? k : OWNERS - 1 - k);
			ap_tw_free(tw, 100, ts += 20000, 0, blk[j]);
		}
	}
	struct ap_tw_end end = {.end_ns = ts + 1};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
	struct ap_trace *ref = load(path);
	struct ap_compact_stats cst;
	CHECK(ap_trace_compact(path, 3, &cst, &err) == 0, "%s", err.msg);
	struct ap_trace *t = load(path);
	if (ref && t) {
		same_events(ref, t, "many owners");
		struct ap_trace_totals tot;
		CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
		CHECK(tot.free_objects == 300 * OWNERS && tot.unmatched_frees == 0,
		      "many owners: %g freed, %llu unmatched", tot.free_objects,
		      (unsigned long long)tot.unmatched_frees);
	}
	ap_trace_free(t);
	ap_trace_free(ref);
}

/* HEADER time_step_ns: the times coarsened (coarse_times), the events
 * the same, in the same order; smaller than without. */
static void coarse(const char *path)
{
	for (uint32_t nthr = 1; nthr <= 3; nthr += 2) {
		char what[32];
		size_t size[2];
		for (int with = 0; with < 2; with++) {
			build_gen(path, 100000, nthr, with ? 1000000 : 0, true);
			struct ap_trace *ref = load(path);
			struct ap_compact_stats st;
			struct ap_error err;
			CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
			size[with] = file_size(path);
			struct ap_trace *t = load(path);
			snprintf(what, sizeof(what), "%u threads, step %s", nthr, with ? "1 ms" : "none");
			if (ref && t)
				same_events_step(ref, t, with ? 1000000 : 0, what);
			ap_trace_free(t);
			ap_trace_free(ref);
		}
		CHECK(size[1] < size[0], "%u threads: %zu bytes with the step, %zu without", nthr,
		      size[1], size[0]);
	}
}

/* The raw trace at `path` (read as `ref`) compacted at `level`, in
 * `tmp`: its bytes (*n of them), its events checked against ref's. */
static uint8_t *compact_at(const char *path, const struct ap_trace *ref, const char *tmp, int level,
			   size_t *n)
{
	uint8_t *raw = slurp(path, n);
	put_file(tmp, raw, *n, "wb");
	free(raw);
	struct ap_compact_stats st;
	struct ap_error err;
	CHECK(ap_trace_compact(tmp, level, &st, &err) == 0, "level %d: %s", level, err.msg);
	struct ap_trace *t = load(tmp);
	char what[64];
	snprintf(what, sizeof(what), "repetitive, level %d", level);
	if (ref && t)
		same_events(ref, t, what);
	ap_trace_free(t);
	return slurp(tmp, n);
}

/* The levels (ap_trace_compact.h) on repetitive events, whose chunks
 * level 1 packs to an eighth or less: record's default and every level
 * up to AP_COMPACT_DENSE_LEVEL compress them at that level (the same
 * file), level 2 and the levels above at their own. */
static void levels(const char *path, const struct ap_trace *ref, const char *tmp)
{
	static const int lv[] = {AP_COMPACT_LEVEL, AP_COMPACT_DENSE_LEVEL - 1, 2, 19};
	size_t nd;
	uint8_t *dense = compact_at(path, ref, tmp, AP_COMPACT_DENSE_LEVEL, &nd);
	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		size_t n;
		uint8_t *d = compact_at(path, ref, tmp, lv[i], &n);
		bool same = n == nd && !memcmp(d, dense, n);
		CHECK(same == (lv[i] >= AP_COMPACT_LEVEL && lv[i] < AP_COMPACT_DENSE_LEVEL),
		      "level %d: %zu bytes, %s level %d's %zu", lv[i], n,
		      same ? "the same as" : "not", AP_COMPACT_DENSE_LEVEL, nd);
		free(d);
	}
	free(dense);
}

/* The writer threads (compact/zwrite.c, struct zworker) write the chunks in the
 * order they were given: the file is the same without them, at level 10,
 * for random events (level 10) and for a repetitive run of 4 threads
 * (AP_COMPACT_DENSE_LEVEL), and reads as the events recorded. */
static void writers(const char *path)
{
	char a[4200], b[4200];
	snprintf(a, sizeof(a), "%s.a", path);
	snprintf(b, sizeof(b), "%s.b", path);
	for (int kind = 0; kind < 2; kind++) {
		if (kind == 0) {
			build(path, 300000);
		} else {
			struct ap_tw_header h;
			ap_tw_header_init(&h);
			struct ap_tw *tw = ap_tw_new(&h);
			uint64_t pcs[] = { 0x401000 };
			uint32_t st = ap_tw_stack(tw, pcs, 1);
			uint64_t ts = h.start_ns;
			for (uint32_t k = 0; k < 4; k++)
				ap_tw_thread(tw, 200 + k, "loop");
			for (size_t i = 0; i < 1200000; i++) {
				uint32_t tid = 200 + (uint32_t)(i / 1000 % 4);
				uint64_t addr = 0x10000 + (uint64_t)(tid - 200) * 0x1000;
				ap_tw_alloc(tw, tid, ts += 100, 0, AP_KIND_MALLOC, addr, 64, st);
				ap_tw_free(tw, tid, ts += 100, 0, addr);
			}
			struct ap_tw_end end = { .end_ns = ts + 1 };
			ap_tw_end(tw, &end);
			struct ap_error err;
			CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
		}
		size_t n;
		uint8_t *raw = slurp(path, &n);
		put_file(a, raw, n, "wb");
		put_file(b, raw, n, "wb");
		free(raw);
		struct ap_trace *ref = load(path);
		struct ap_compact_stats st;
		struct ap_error err;
		CHECK(ap_trace_compact(a, 10, &st, &err) == 0, "%s", err.msg);
		setenv("ALLOCPROF_COMPACT_NO_THREAD", "1", 1);
		CHECK(ap_trace_compact(b, 10, &st, &err) == 0, "%s", err.msg);
		unsetenv("ALLOCPROF_COMPACT_NO_THREAD");
		size_t na, nb;
		uint8_t *da = slurp(a, &na), *db = slurp(b, &nb);
		CHECK(na == nb && !memcmp(da, db, na), "kind %d: %zu bytes with threads, %zu without",
		      kind, na, nb);
		size_t off[64];
		CHECK(chunk_offsets(da, na, off, 64) >= 6, "kind %d: %zu chunks", kind,
		      chunk_offsets(da, na, off, 64));
		if (kind == 0) {
			/* random events: at the default level, level 1's
			 * frames (the trial's), not compressed again
			 * (zwrite.c, compact_write_compressed); level 10's
			 * are smaller */
			raw = slurp(path, &n);
			size_t nl[3];
			uint8_t *dl[3];
			for (int i = 0; i < 3; i++) {
				/* (the last without writer threads, as record's
				 * drain compacts) */
				if (i == 2)
					setenv("ALLOCPROF_COMPACT_NO_THREAD", "1", 1);
				put_file(b, raw, n, "wb");
				CHECK(ap_trace_compact(b, i ? AP_COMPACT_LEVEL : 1, &st, &err) == 0, "%s",
				      err.msg);
				unsetenv("ALLOCPROF_COMPACT_NO_THREAD");
				dl[i] = slurp(b, &nl[i]);
			}
			for (int i = 1; i < 3; i++)
				CHECK(nl[0] == nl[i] && !memcmp(dl[0], dl[i], nl[0]),
				      "random events: %zu bytes at level 1, %zu at level %d%s", nl[0],
				      nl[i], AP_COMPACT_LEVEL, i == 2 ? " without threads" : "");
			CHECK(na < nl[1], "random events: %zu bytes at level 10, %zu at level %d", na,
			      nl[1], AP_COMPACT_LEVEL);
			for (int i = 0; i < 3; i++)
				free(dl[i]);
			free(raw);
		}
		free(da);
		free(db);
		struct ap_trace *t = load(a);
		if (ref && t)
			same_events(ref, t, kind ? "repetitive, by the writers" : "by the writers");
		ap_trace_free(t);
		if (kind)
			levels(path, ref, a);
		ap_trace_free(ref);
	}
	unlink(a);
	unlink(b);
}

/* The compactor's EVENTS chunks carry their counts (AP_CHUNK_F_COUNTS):
 * the reader takes the trace's counts and times from them without
 * decoding the events, and a pass over the events checks them. A chunk
 * whose counts are wrong by one (checksums made right) reads, and every
 * pass over the events ends with an error that says so, returned to its
 * caller: ap_events_next's -1 and ap_events_error, ap_replay's and
 * ap_trace_totals' -1 and message. Nothing exits. */
struct seen {
	size_t events, live;
};

static void seen_event(void *ctx, size_t i, const struct ap_event *e)
{
	((struct seen *)ctx)->events++;
}

static void seen_live(void *ctx, const struct ap_replay_block *b)
{
	((struct seen *)ctx)->live++;
}

static void counts_checked(const char *path)
{
	build(path, 20000);
	struct ap_trace *ref = load(path);
	struct ap_compact_stats st;
	struct ap_error err;
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	size_t n;
	uint8_t *good = slurp(path, &n);
	size_t off[4096];
	size_t k = chunk_offsets(good, n, off, AP_ARRAY_SIZE(off)), counted = 0, first = 0;
	for (size_t i = 0; i < k; i++)
		if (good[off[i] + 4] == AP_CHUNK_EVENTS && (good[off[i] + 5] & AP_CHUNK_F_COUNTS) &&
		    !counted++)
			first = off[i];
	CHECK(counted > 1, "%zu EVENTS chunks with counts", counted);
	struct ap_trace *t = NULL;
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "%s", err.msg);
	if (ref && t) {
		/* what pass 1 counted: before any pass over the events */
		CHECK(t->nev == ref->nev && t->nrecords == ref->nrecords &&
			  t->nthreads == ref->nthreads && t->end_ns == ref->end_ns,
		      "counted %zu events, %llu records (want %zu, %llu)", t->nev,
		      (unsigned long long)t->nrecords, ref->nev, (unsigned long long)ref->nrecords);
		for (size_t i = 0; i < t->nthreads && i < ref->nthreads; i++)
			CHECK(t->threads[i].events == ref->threads[i].events, "thread %zu: %llu", i,
			      (unsigned long long)t->threads[i].events);
		CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
		same_events(ref, t, "counted");
	}
	ap_trace_free(t);
	/* each of the four counts one off (its varint's low bits) */
	for (int field = 0; field < 4 && first; field++) {
		uint8_t *bad = malloc(n);
		memcpy(bad, good, n);
		const uint8_t *p = bad + first + AP_CHUNK_HDR_LEN;
		for (int f = 0; f < field; f++)
			while (*p++ & 0x80)
				;
		uint8_t *b = (uint8_t *)p;
		*b = (uint8_t)((*b & 0x80) | ((*b + 1) & 0x7f));
		reframe(bad + first, AP_CHUNK_EVENTS, bad[first + 5]);
		put_file(path, bad, n, "wb");
		t = NULL;
		CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "field %d: %s", field, err.msg);
		if (!t) {
			free(bad);
			continue;
		}
		/* the iteration: batches, then -1 before the last event, and
		 * -1 again; the message names the file and the chunk */
		char want[600], msg[1024] = "";
		snprintf(want, sizeof(want), "%s: corrupt chunk at byte %zu: its counts say", path,
			 first);
		struct ap_events *it = ap_events_open(t);
		CHECK(!ap_events_error(it), "field %d: an error before a pass", field);
		const struct ap_event *ev;
		size_t got = 0;
		ssize_t nk;
		while ((nk = ap_events_next(it, &ev)) > 0)
			got += (size_t)nk;
		const char *why = ap_events_error(it);
		CHECK(nk == -1 && why && !strncmp(why, want, strlen(want)) &&
			  (field != 3 || strstr(why, ", ending at another time")),
		      "field %d: returned %zd: %s", field, nk, why ? why : "no error");
		if (why)
			snprintf(msg, sizeof(msg), "%s", why);
		CHECK(got < t->nev, "field %d: %zu of %zu events handed out", field, got, t->nev);
		CHECK(ap_events_next(it, &ev) == -1 && ap_events_error(it) &&
			  !strcmp(ap_events_error(it), msg),
		      "field %d: a call after the error", field);
		ap_events_close(it);
		/* the replay: -1 with the message, the events before it seen,
		 * no blocks handed out as live at the end */
		struct seen s = {0, 0};
		static const struct ap_replay_ops seen_ops = {.event = seen_event,
							      .live_at_end = seen_live};
		struct ap_replay_consumer sc = {&seen_ops, &s};
		err.msg[0] = 0;
		CHECK(ap_replay(t, &sc, 1, NULL, &err) == -1 && !strcmp(err.msg, msg),
		      "field %d: replay: '%s', want '%s'", field, err.msg, msg);
		CHECK(s.events < t->nev && s.live == 0, "field %d: replay saw %zu events, %zu live",
		      field, s.events, s.live);
		/* every pass says it, the same way */
		struct ap_trace_totals tot;
		err.msg[0] = 0;
		CHECK(ap_trace_totals(t, &tot, &err) == -1 && !strcmp(err.msg, msg),
		      "field %d: totals: '%s'", field, err.msg);
		CHECK(ap_trace_load_events(t, &err) == -1 && !strcmp(err.msg, msg) && !t->ev,
		      "field %d: load events: '%s'", field, err.msg);
		ap_trace_free(t);
		free(bad);
	}
	free(good);
	ap_trace_free(ref);
}

/* The frees the compactor resolves (its columns' last), each kind: a
 * temporary block and one that is not, a FREE that matches nothing, a
 * sampled block grown into unsampled ones (stack 0) and freed, a block
 * another thread frees, a free the sampler lost (two blocks live at one
 * address), a block freed AP_FREED_RING allocations or more after it
 * was made (a field, not the reader's ring), blocks live at the end; the
 * compacted trace replays, without a live map, as the sampler's did with
 * one. */
static void resolved_corners(const char *path, uint32_t nthr)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 10000;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[2] = {0x401000, 0x402000};
	uint32_t s1 = ap_tw_stack(tw, pcs, 1), s2 = ap_tw_stack(tw, pcs, 2);
	for (uint32_t k = 0; k < nthr; k++) {
		char name[8];
		snprintf(name, sizeof(name), "t%u", k);
		ap_tw_thread(tw, 100 + k, name);
	}
	uint64_t ts = h.start_ns;
	uint32_t other = 100 + nthr - 1;
	for (int round = 0; round < 3; round++) {
		ap_tw_alloc(tw, 100, ts += 20000, 0, AP_KIND_MALLOC, 0x1000, 24, s1);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x1000); /* temporary */
		ap_tw_alloc(tw, 100, ts += 20000, 0, AP_KIND_MALLOC, 0x2000, 40, s2);
		ap_tw_alloc(tw, 100, ts += 20000, 0, AP_KIND_MALLOC, 0x3000, 100 + round, s1);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x2000);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x9000); /* unmatched */
		/* grown into an unsampled block, and again, then freed */
		ap_tw_realloc(tw, 100, ts += 20000, 0, AP_KIND_REALLOC, 0x3000, 0x4000, 5000, 0,
			      AP_RF_OLD_TRACKED);
		ap_tw_realloc(tw, 100, ts += 20000, 0, AP_KIND_REALLOC, 0x4000, 0x5000, 9000, 0,
			      AP_RF_OLD_TRACKED);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x5000);
		/* another thread's block, freed here */
		ap_tw_alloc(tw, other, ts += 20000, 1, AP_KIND_MALLOC, 0x6000, 64, s2);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x6000);
		/* a lost free: two blocks at one address, freed newest first */
		ap_tw_alloc(tw, 100, ts += 20000, 0, AP_KIND_MALLOC, 0x7000, 16, s1);
		ap_tw_alloc(tw, 100, ts += 20000, 0, AP_KIND_MALLOC, 0x7000, 32, s2);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x7000);
		ap_tw_free(tw, 100, ts += 20000, 0, 0x7000);
		/* live at the end */
		ap_tw_alloc(tw, other, ts += 20000, 1, AP_KIND_MALLOC, 0x8000 + 0x100 * (uint64_t)round,
			    48, s1);
		ap_tw_realloc(tw, 100, ts += 20000, 0, AP_KIND_REALLOC, 0, 0xa000 + 0x100 * (uint64_t)round,
			      72, s2, AP_RF_NEW_SAMPLED);
	}
	/* an old block: made, then AP_FREED_RING temporary ones, then freed */
	ap_tw_alloc(tw, 100, ts += 20000, 0, AP_KIND_MALLOC, 0xb000, 4000, s2);
	for (unsigned k = 0; k < AP_FREED_RING; k++) {
		ap_tw_alloc(tw, 100, ts, 0, AP_KIND_MALLOC, 0xc000, 8 + k % 3, s1);
		ap_tw_free(tw, 100, ts, 0, 0xc000);
	}
	ap_tw_free(tw, 100, ts += 20000, 0, 0xb000);
	struct ap_tw_end end = {.end_ns = ts + 1000};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
	struct ap_trace *ref = load(path);
	struct ap_compact_stats st;
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	struct ap_trace *t = load(path);
	CHECK(t && t->resolved && ref && !ref->resolved, "%u threads: resolved %d, raw %d", nthr,
	      t ? t->resolved : -1, ref ? ref->resolved : -1);
	size_t frees = 0, resolved = 0, temporary = 0, unsampled = 0, old = 0;
	for (size_t i = 0; t && i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		if (e->type != AP_EV_FREE)
			continue;
		frees++;
		resolved += (e->flags & AP_EVF_RESOLVED) != 0;
		temporary += (e->flags & AP_EVF_TEMPORARY) != 0;
		unsampled += (e->flags & AP_EVF_RESOLVED) && !e->stack;
		old += (e->flags & AP_EVF_RESOLVED) && e->size == 4000 && e->stack == s2;
	}
	/* per round: 9 frees (2 of them halves of reallocs), one unmatched;
	 * temporary: the first, the two grown blocks (each freed right after
	 * it was made), the newer block at 0x7000 and, with one thread, the
	 * "other" thread's; two of unsampled blocks. Then the ring's
	 * temporaries and the old block. */
	CHECK(frees == 27 + AP_FREED_RING + 1 && resolved == 24 + AP_FREED_RING + 1 &&
		  temporary == (nthr == 1 ? 15u : 12u) + AP_FREED_RING && unsampled == 6 &&
		  old == 1,
	      "%u threads: %zu frees, %zu resolved, %zu temporary, %zu unsampled, %zu old", nthr,
	      frees, resolved, temporary, unsampled, old);
	/* (same_events' identity map knows one block per address: the lost
	 * free's two are told apart by their sizes here) */
	if (ref && t) {
		char what[32];
		snprintf(what, sizeof(what), "corners, %u threads", nthr);
		same_replay(ref, t, what);
	}
	ap_trace_free(t);
	ap_trace_free(ref);
}

/* Frees of blocks allocated in earlier chunks, each 2 bytes of the
 * sampler's (its tag, an address 208 bytes on), resolved (the block's
 * stack, one of 20,000 over 8192, and its size of 1 GiB: 10 bytes a
 * FREE): a chunk of one thread took 8 MiB of them, of several threads
 * 4 MiB, and made a payload over the format's 16 MiB, a trace the
 * reader refused ("decompressed length ... exceeds"). The chunk is
 * written early instead; streamed, the same bytes. nthr 2: a second
 * thread's one block (the jobs path, not the fed one). */
static void frees_fit(const char *path, uint32_t nthr)
{
	const size_t n = 2200000, nstacks = 30000;
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_thread(tw, 1000, "main");
	uint32_t *st = malloc(nstacks * sizeof(*st));
	for (size_t j = 0; j < nstacks; j++) {
		uint64_t pc = 0x401000 + 16 * j;
		st[j] = ap_tw_stack(tw, &pc, 1);
	}
	uint64_t ts = 1000000000ull;
	if (nthr > 1)
		ap_tw_alloc(tw, 1001, ts, 1, AP_KIND_MALLOC, 0x90000000, 100, st[0]);
	for (size_t i = 0; i < n; i++)
		ap_tw_alloc(tw, 1000, ts, 0, AP_KIND_MALLOC, 0x10000000 + 208 * i, (1u << 30) + 16,
			    st[10000 + (i * 7919) % 20000]);
	for (size_t i = 0; i < n; i++)
		ap_tw_free(tw, 1000, ts, 0, 0x10000000 + 208 * i);
	if (nthr > 1)
		ap_tw_free(tw, 1001, ts, 1, 0x90000000);
	free(st);
	struct ap_tw_end end = {.end_ns = ts + 1};
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
	size_t rn;
	uint8_t *raw = slurp(path, &rn);
	struct ap_compact_stats cs;
	CHECK(ap_trace_compact(path, 3, &cs, &err) == 0, "%s", err.msg);
	struct ap_trace *t = NULL;
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "frees resolved: %s", err.msg);
	CHECK(t && ap_trace_load_events(t, &err) == 0, "frees resolved: %s", err.msg);
	CHECK(t && t->nrecords == 2 * (n + nthr - 1), "frees resolved: %zu events",
	      t ? (size_t)t->nrecords : (size_t)0);
	ap_trace_free(t);
	size_t wn;
	uint8_t *wb = slurp(path, &wn);
	/* streamed, 1 MiB at a time (several threads: given up, then whole) */
	put_file(path, raw, 5, "wb");
	struct ap_compact_stream *s = ap_compact_stream_start(path, 3);
	for (size_t at = 5; s && at < rn;) {
		size_t piece = rn - at < (1u << 20) ? rn - at : (1u << 20);
		put_file(path, raw + at, piece, "ab");
		at += piece;
		if (ap_compact_stream_feed(s) < 0) {
			CHECK(nthr > 1, "feed at %zu", at);
			ap_compact_stream_abandon(s);
			s = NULL;
			put_file(path, raw, rn, "wb");
			CHECK(ap_trace_compact(path, 3, &cs, &err) == 0, "%s", err.msg);
		}
	}
	CHECK(!s || ap_compact_stream_finish(s, &cs, &err) == 0, "finish: %s", err.msg);
	size_t gn;
	uint8_t *gb = slurp(path, &gn);
	CHECK(gn == wn && !memcmp(gb, wb, wn), "frees resolved: streamed %zu bytes, whole %zu",
	      gn, wn);
	free(gb);
	free(wb);
	free(raw);
}

int main(void)
{
	char path[] = "/tmp/allocprof-compact-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	build(path, 200000);
	struct ap_trace *ref = load(path);
	size_t raw = file_size(path);
	struct ap_compact_stats st;
	struct ap_error err;
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	CHECK(st.events == (ref ? ref->nrecords : 0), "counted %llu events",
	      (unsigned long long)st.events);
	CHECK(st.nthreads == 3 && st.has_end && !st.cut, "stats: %zu threads", st.nthreads);
	CHECK(file_size(path) * 2 < raw, "compacted %zu bytes from %zu", file_size(path), raw);
	struct ap_trace *t = load(path);
	if (ref && t)
		same_events(ref, t, "compacted");
	ap_trace_free(t);
	/* again: the compressed chunks pass through */
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	t = load(path);
	if (ref && t)
		same_events(ref, t, "compacted twice");
	ap_trace_free(t);

	resolved_corners(path, 1);
	resolved_corners(path, 2);

	/* a cut trace: complete chunks compacted, the tail kept, still cut */
	build(path, 20000);
	size_t full = file_size(path);
	CHECK(truncate(path, (off_t)(full - 100)) == 0, "truncate");
	struct ap_trace *cut = load(path);
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "%s", err.msg);
	CHECK(st.cut && !st.has_end, "cut not seen");
	t = load(path);
	if (cut && t) {
		CHECK(t->truncated && strstr(t->truncated_why, "file ends inside a chunk"),
		      "truncated: %s", t->truncated_why);
		same_events(cut, t, "cut");
	}
	ap_trace_free(t);
	ap_trace_free(cut);

	/* a corrupt chunk: the file is left as it was */
	build(path, 2000);
	FILE *f = fopen(path, "r+b");
	fseek(f, 300, SEEK_SET);
	fputc(0x5a ^ fgetc(f), f);
	fclose(f);
	size_t before = file_size(path);
	CHECK(ap_trace_compact(path, 3, &st, &err) < 0, "a corrupt trace compacted");
	CHECK(strstr(err.msg, "corrupt chunk at byte") != NULL, "msg: %s", err.msg);
	CHECK(file_size(path) == before, "the corrupt trace was rewritten");
	ap_trace_free(ref);
	coarse(path);
	many_owners(path);
	same_verdict(path);
	end_count_twice(path);
	lists_dropped(path);
	stacks_shared(path);
	meta_joined(path);
	writers(path);
	counts_checked(path);
	stream_checks(path);
	frees_fit(path, 1);
	frees_fit(path, 2);
	unlink(path);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	puts("all compaction checks passed");
	return 0;
}
