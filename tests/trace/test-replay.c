/* The replay's rules (trace/ap_replay.h) on a trace of two threads built
 * by the test writer: a FREE ends the most recent live block at its
 * address, on whichever thread; a lost free leaves the older block live
 * again; a realloc is one growth of the same object; a FREE with no block
 * is unmatched; a block freed by its thread's next event is temporary;
 * the blocks live at the end are handed over, most recent first at an
 * address; joins make an allocation a growth. Each callback is logged and
 * the log compared whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_check.h"
#include "ap_replay.h"
#include "ap_trace.h"
#include "ap_trace_writer.h"

struct logged {
	char op;		/* a alloc, g grow, f free, u unmatched, l live at end */
	size_t i;
	uint64_t addr, size;
	uint32_t obj;
	bool temporary;
};

struct log {
	struct logged e[64];
	size_t n;
	size_t events;		/* `event` calls */
};

static void add(struct log *l, char op, size_t i, const struct ap_replay_block *b, uint64_t addr)
{
	CHECK(l->n < AP_ARRAY_SIZE(l->e), "log full");
	l->e[l->n++] = (struct logged){ op, i, addr, b ? b->size : 0, b ? b->obj : UINT32_MAX,
					 b && b->temporary };
}

static void c_event(void *ctx, size_t i, const struct ap_event *e)
{
	((struct log *)ctx)->events++;
}
static void c_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	add(ctx, 'a', i, b, b->addr);
}
static void c_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		   const struct ap_replay_block *b)
{
	CHECK(old->obj == b->obj, "a growth keeps its object (%u, %u)", old->obj, b->obj);
	add(ctx, 'g', i, old, old->addr);
	add(ctx, 'G', i, b, b->addr);
}
static void c_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	add(ctx, 'f', i, b, b->addr);
}
static void c_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	add(ctx, 'u', i, NULL, e->addr);
}
static void c_live(void *ctx, const struct ap_replay_block *b)
{
	add(ctx, 'l', 0, b, b->addr);
}

/* A consumer that cannot go on (ap_replay_ops.failed): after `after`
 * blocks ended or live at the end, it says so at the next ask. */
struct failing {
	size_t seen, after, asked;
};

static void f_block(void *ctx, const struct ap_replay_block *b)
{
	((struct failing *)ctx)->seen++;
}
static void f_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	f_block(ctx, b);
}
static int f_failed(void *ctx, struct ap_error *err)
{
	struct failing *f = ctx;
	f->asked++;
	if (f->seen < f->after)
		return 0;
	return ap_error_set(err, "out.txt: No space left on device");
}

/* The replay of t with the logger and a consumer failing after `after`
 * blocks: its error comes back, and nothing is called after the ask that
 * said it. */
static void consumer_fails(const struct ap_trace *t, size_t after, size_t want_callbacks)
{
	struct log l = {.n = 0};
	struct failing f = {.after = after};
	static const struct ap_replay_ops log_ops = {.alloc = c_alloc,
						     .grow = c_grow,
						     .free = c_free,
						     .unmatched = c_unmatched,
						     .live_at_end = c_live};
	static const struct ap_replay_ops fail_ops = {
	    .free = f_free, .live_at_end = f_block, .failed = f_failed};
	struct ap_replay_consumer c[2] = {{&log_ops, &l}, {&fail_ops, &f}};
	struct ap_error err = {""};
	CHECK(ap_replay(t, c, 2, NULL, &err) == -1 &&
		  !strcmp(err.msg, "out.txt: No space left on device"),
	      "after %zu: replay returned '%s'", after, err.msg);
	CHECK(l.n == want_callbacks, "after %zu: %zu callbacks, want %zu", after, l.n,
	      want_callbacks);
	CHECK(f.asked >= 1, "after %zu: never asked", after);
}

/* The trace tw wrote, read back. */
static struct ap_trace *read_back(struct ap_tw *tw, uint64_t end_ns, uint64_t calls, const char *name)
{
	struct ap_tw_end end = { .end_ns = end_ns, .reason = AP_END_EXIT, .calls = calls };
	ap_tw_end(tw, &end);
	uint8_t *data;
	size_t len;
	struct ap_error err;
	struct ap_trace *t = NULL;
	CHECK(ap_tw_close_mem(tw, &data, &len, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_read_mem(data, len, name, &t, &err) == 0, "%s", err.msg);
	free(data);
	if (!t)
		exit(1);
	return t;
}

/* The log's first nw callbacks are want's. */
static void log_is(const struct log *l, const struct logged *want, size_t nw, const char *what)
{
	for (size_t k = 0; k < nw && k < l->n; k++) {
		const struct logged *g = &l->e[k], *w = &want[k];
		CHECK(g->op == w->op && g->i == w->i && g->addr == w->addr && g->size == w->size &&
			  g->obj == w->obj && g->temporary == w->temporary,
		      "%s: callback %zu: %c %zu %#llx %llu obj %u temp %d, want %c %zu %#llx %llu obj %u "
		      "temp %d",
		      what, k, g->op, g->i, (unsigned long long)g->addr, (unsigned long long)g->size,
		      g->obj, g->temporary, w->op, w->i, (unsigned long long)w->addr,
		      (unsigned long long)w->size, w->obj, w->temporary);
	}
}

/* A writer of one thread (tid 1, "one") and one stack, in *st; *ts its
 * start time. */
static struct ap_tw *writer(uint32_t *st, uint64_t *ts)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pcs[] = { 0x401000 };
	*st = ap_tw_stack(tw, pcs, 1);
	ap_tw_thread(tw, 1, "one");
	*ts = h.start_ns;
	return tw;
}

/* Joins (ap_replay_joined): an allocation that continues the object of
 * a live block is its growth; that block's FREE then calls nothing but
 * `event`; a join at an event that is no allocation, or at an address
 * with no live block, changes nothing. */
static void test_joins(void)
{
	uint32_t st;
	uint64_t ts;
	struct ap_tw *tw = writer(&st, &ts);
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x1000, 16, st);	/* 0 */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x2000, 32, st);	/* 1: grows 0 */
	ap_tw_free(tw, 1, ++ts, 0, 0x1000);				/* 2: nothing */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x3000, 64, st);	/* 3: grows 1 */
	ap_tw_free(tw, 1, ++ts, 0, 0x2000);				/* 4: nothing */
	ap_tw_free(tw, 1, ++ts, 0, 0x3000);				/* 5: the object's end */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x4000, 8, st);	/* 6: no block at 0x9000 */
	ap_tw_free(tw, 1, ++ts, 0, 0x4000);				/* 7 */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x5000, 8, st);	/* 8: live at the end */
	struct ap_trace *t = read_back(tw, ++ts, 9, "joins");
	struct ap_error err;
	/* (4: a FREE, of 0x3000's live block: not a growth) */
	static const struct ap_replay_join joins[] = {
		{ .i = 1, .addr = 0x1000 }, { .i = 3, .addr = 0x2000 }, { .i = 4, .addr = 0x3000 },
		{ .i = 6, .addr = 0x9000 },
	};
	struct log l = { .n = 0 };
	static const struct ap_replay_ops ops = { .blocks = true, .event = c_event, .alloc = c_alloc,
						  .grow = c_grow, .free = c_free,
						  .unmatched = c_unmatched, .live_at_end = c_live };
	struct ap_replay_consumer c = { &ops, &l };
	CHECK(ap_replay_joined(t, joins, AP_ARRAY_SIZE(joins), &c, 1, NULL, &err) == 0, "%s", err.msg);
	static const struct logged want[] = {
		{ 'a', 0, 0x1000, 16, 0, false }, { 'g', 1, 0x1000, 16, 0, false },
		{ 'G', 1, 0x2000, 32, 0, false }, { 'g', 3, 0x2000, 32, 0, false },
		{ 'G', 3, 0x3000, 64, 0, false }, { 'f', 5, 0x3000, 64, 0, false },
		{ 'a', 6, 0x4000, 8, 0, false },  { 'f', 7, 0x4000, 8, 0, true },
		{ 'a', 8, 0x5000, 8, 0, false },  { 'l', 0, 0x5000, 8, 0, false },
	};
	CHECK(l.n == AP_ARRAY_SIZE(want), "joins: callbacks %zu, want %zu", l.n, AP_ARRAY_SIZE(want));
	log_is(&l, want, AP_ARRAY_SIZE(want), "joins");
	/* every event, the joined blocks' FREEs (2, 4) too */
	CHECK(l.events == 9, "joins: %zu events, want 9", l.events);
	ap_trace_free(t);
}

/* Where the replay is (ap_replay_block's `at`), events fed
 * by hand: a grow's old block says its realloc's FREE half; a free says
 * the event it is handed over at, which for a realloc's FREE half that
 * no ALLOC half followed is its thread's next FREE or ALLOC, or after
 * the last event that one. */
struct at_log {
	struct {
		char op;
		size_t i;
		uint64_t at;
	} e[16];
	size_t n;
};

static void at_add(struct at_log *l, char op, size_t i, uint64_t at)
{
	CHECK(l->n < AP_ARRAY_SIZE(l->e), "log full");
	l->e[l->n].op = op;
	l->e[l->n].i = i;
	l->e[l->n++].at = at;
}
static void at_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		    const struct ap_replay_block *b)
{
	at_add(ctx, 'g', i, old->at);
}
static void at_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	at_add(ctx, 'f', i, b->at);
}

static void test_positions(void)
{
	uint32_t st;
	uint64_t ts;
	struct ap_tw *tw = writer(&st, &ts);
	ap_tw_thread(tw, 2, "two");
	struct ap_trace *t = read_back(tw, ts + 100, 0, "positions");
	CHECK(t->nthreads == 2, "positions: %zu threads", (size_t)t->nthreads);
	const uint8_t A = AP_EV_ALLOC, F = AP_EV_FREE, S = AP_EVF_SAMPLED;
	const uint8_t HALF = AP_EVF_FROM_REALLOC, NEW = AP_EVF_REALLOC | AP_EVF_SAMPLED;
	const struct ap_event ev[] = {
		{ .addr = 0x1000, .size = 16, .stack = st, .thread = 0, .type = A, .flags = S },
		{ .addr = 0x1000, .thread = 0, .type = F, .flags = HALF },   /* 1 */
		{ .addr = 0x2000, .size = 32, .stack = st, .thread = 0, .type = A, .flags = NEW },
		{ .addr = 0x3000, .size = 8, .stack = st, .thread = 1, .type = A, .flags = S },
		{ .addr = 0x2000, .thread = 0, .type = F, .flags = HALF },   /* 4: no ALLOC half */
		{ .addr = 0x3000, .thread = 1, .type = F },		      /* 5 */
		{ .addr = 0x9000, .thread = 0, .type = F },		      /* 6: 4 handed over */
		{ .addr = 0x4000, .size = 8, .stack = st, .thread = 1, .type = A, .flags = S },
		{ .addr = 0x4000, .thread = 1, .type = F, .flags = HALF },   /* 8: at the end */
		{ .addr = 0x5000, .size = 8, .stack = st, .thread = 0, .type = A, .flags = S },
	};
	struct at_log l = { .n = 0 };
	static const struct ap_replay_ops ops = { .blocks = true, .grow = at_grow, .free = at_free };
	struct ap_replay_consumer c = { &ops, &l };
	struct ap_error err;
	struct ap_replay_run *r = ap_replay_start(t, &c, 1);
	/* (two feeds: the pending half goes on from one to the next) */
	CHECK(ap_replay_feed(r, ev, 5, &err) == 0 &&
		  ap_replay_feed(r, ev + 5, AP_ARRAY_SIZE(ev) - 5, &err) == 0 &&
		  ap_replay_finish(r, NULL, &err) == 0,
	      "positions: %s", err.msg);
	static const struct {
		char op;
		size_t i;
		uint64_t at;
	} want[] = { { 'g', 2, 1 }, { 'f', 5, 5 }, { 'f', 4, 6 }, { 'f', 8, 9 } };
	CHECK(l.n == AP_ARRAY_SIZE(want), "positions: %zu callbacks, want %zu", l.n,
	      AP_ARRAY_SIZE(want));
	for (size_t k = 0; k < l.n && k < AP_ARRAY_SIZE(want); k++)
		CHECK(l.e[k].op == want[k].op && l.e[k].i == want[k].i && l.e[k].at == want[k].at,
		      "positions: callback %zu: %c %zu at %llu, want %c %zu at %llu", k, l.e[k].op,
		      l.e[k].i, (unsigned long long)l.e[k].at, want[k].op, want[k].i,
		      (unsigned long long)want[k].at);
	ap_trace_free(t);
}

int main(void)
{
	test_joins();
	test_positions();
	uint32_t st;
	uint64_t ts;
	struct ap_tw *tw = writer(&st, &ts);
	ap_tw_thread(tw, 2, "two");
	/* event index: what it is */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x1000, 16, st);	/* 0 */
	ap_tw_free(tw, 1, ++ts, 0, 0x1000);				/* 1: temporary */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x2000, 24, st);	/* 2 */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x2000, 32, st);	/* 3: 2's free lost */
	ap_tw_free(tw, 1, ++ts, 0, 0x2000);				/* 4: ends 3 */
	ap_tw_free(tw, 1, ++ts, 0, 0x2000);				/* 5: ends 2 */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x3000, 40, st);	/* 6 */
	ap_tw_free(tw, 2, ++ts, 1, 0x3000);				/* 7: another thread's */
	ap_tw_free(tw, 1, ++ts, 0, 0x9000);				/* 8: unmatched */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x4000, 10, st);	/* 9 */
	ap_tw_realloc(tw, 1, ++ts, 0, AP_KIND_REALLOC, 0x4000, 0x5000, 20, st,
		      AP_RF_NEW_SAMPLED | AP_RF_OLD_TRACKED);		/* 10, 11 */
	ap_tw_free(tw, 1, ++ts, 0, 0x5000);				/* 12 */
	ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, 0x7000, 48, st);	/* 13 */
	ap_tw_alloc(tw, 2, ++ts, 1, AP_KIND_MALLOC, 0x7000, 56, st);	/* 14 */
	ap_tw_free(tw, 1, ++ts, 0, 0x7000);				/* 15: ends 14 */
	ap_tw_alloc(tw, 2, ++ts, 1, AP_KIND_MALLOC, 0x6000, 64, st);	/* 16 */
	ap_tw_alloc(tw, 2, ++ts, 1, AP_KIND_MALLOC, 0x6000, 72, st);	/* 17 */
	struct ap_trace *t = read_back(tw, ++ts, 14, "replay");
	struct ap_error err;
	CHECK(t->nev == 18, "events: %zu", t->nev);

	struct log l = { .n = 0 };
	static const struct ap_replay_ops ops = { .alloc = c_alloc, .grow = c_grow, .free = c_free,
						  .unmatched = c_unmatched, .live_at_end = c_live };
	struct ap_replay_consumer c = { &ops, &l };
	size_t nobj = 0;
	CHECK(ap_replay(t, &c, 1, &nobj, &err) == 0, "%s", err.msg);
	/* objects: ids are reused once freed, so compare them by what they
	 * must equal */
	static const struct logged want[] = {
		{ 'a', 0, 0x1000, 16, 0, false },  { 'f', 1, 0x1000, 16, 0, true },
		{ 'a', 2, 0x2000, 24, 0, false },  { 'a', 3, 0x2000, 32, 1, false },
		{ 'f', 4, 0x2000, 32, 1, true },  { 'f', 5, 0x2000, 24, 0, false },
		{ 'a', 6, 0x3000, 40, 0, false },  { 'f', 7, 0x3000, 40, 0, false },
		{ 'u', 8, 0x9000, 0, UINT32_MAX, false },
		{ 'a', 9, 0x4000, 10, 0, false },  { 'g', 11, 0x4000, 10, 0, true },
		{ 'G', 11, 0x5000, 20, 0, false }, { 'f', 12, 0x5000, 20, 0, true },
		{ 'a', 13, 0x7000, 48, 0, false }, { 'a', 14, 0x7000, 56, 1, false },
		{ 'f', 15, 0x7000, 56, 1, false }, { 'a', 16, 0x6000, 64, 1, false },
		{ 'a', 17, 0x6000, 72, 2, false },
	};
	size_t nw = AP_ARRAY_SIZE(want);
	CHECK(l.n == nw + 3, "callbacks: %zu, want %zu", l.n, nw + 3);
	log_is(&l, want, nw, "replay");
	/* live at the end: 13 (0x7000), and at 0x6000 17 before 16 */
	uint64_t live_sizes[3] = { 0 };
	size_t nl = 0;
	for (size_t k = nw; k < l.n; k++)
		if (l.e[k].op == 'l' && nl < 3)
			live_sizes[nl++] = l.e[k].size;
	bool seen48 = false;
	int i72 = -1, i64 = -1;
	for (size_t k = 0; k < nl; k++) {
		seen48 |= live_sizes[k] == 48;
		if (live_sizes[k] == 72)
			i72 = (int)k;
		if (live_sizes[k] == 64)
			i64 = (int)k;
	}
	CHECK(nl == 3 && seen48 && i72 >= 0 && i64 > i72, "live at the end: %llu %llu %llu",
	      (unsigned long long)live_sizes[0], (unsigned long long)live_sizes[1],
	      (unsigned long long)live_sizes[2]);
	CHECK(nobj == 3, "object ids: %zu", nobj);
	/* A consumer that fails stops the replay: failing at once (the
	 * events come in one batch: all of them seen, no blocks live at the
	 * end), or at the end (the live blocks handed out, then its error). */
	consumer_fails(t, 0, nw);
	consumer_fails(t, 8, nw + 3);
	ap_trace_free(t);
	return failures ? 1 : 0;
}
