/* The ordering stage (trace/order.h) on streams made in memory: each
 * stream's chunks are EVENTS payloads in rows, written here with the
 * record encoder, and handed to the merge by a test input (no file).
 * Every case compares the exact order of the events out, written as
 * "<stream><A|F><address>@<quantum>", with the order the rules give:
 * - a FREE waits for another thread's ALLOC of its block in the same
 *   quantum, and an ALLOC waits for a live block at its address to be
 *   freed;
 * - an address reused across threads in one quantum: a FREE by another
 *   thread is not of a block its allocating thread frees itself later in
 *   the quantum (frees_own_later);
 * - a held event goes when its quantum has no other events left;
 * - ties of time go to the lower stream, and a stream keeps its turn only
 *   while its next event would come first anyway (the turn rule);
 * - a stream that ends early, one with no chunks, a chunk that is gone (the
 *   file changed: its stream ends there, the others go on), and corrupt
 *   chunks (a bad record, a payload that does not decompress, counts that
 *   do not match): the merge ends with the first, the batch it was found
 *   in not handed out;
 * - many streams across several batches: the heap's (time, stream) order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_check.h"
#include "ap_trace.h"
#include "ap_trace_encode.h"
#include "order.h"
#include "trace-int.h"

/* ---- streams made in memory ---- */

#define MAX_CHUNKS 256
#define CHUNK_BYTES 8192

struct tchunk {
	uint8_t b[CHUNK_BYTES];
	size_t n;
	struct ap_evenc e;
	int rc; /* what the input says of it: 0, 1 gone, -1 corrupt */
	bool counted;
	struct ap_chunk_counts want;
};

static struct tchunk chunks[MAX_CHUNKS];
/* Records carry gaps (AP_CHUNK_F_GAPS), each its address's bits 4-11:
 * every case runs without and with them. */
static bool gaps;
static size_t nchunks;
static int asked[MAX_CHUNKS]; /* times the input was asked for each */

/* A new chunk (its id); its records follow with rec(). */
static uint32_t chunk(void)
{
	CHECK(nchunks < MAX_CHUNKS, "too many chunks");
	struct tchunk *c = &chunks[nchunks];
	memset(c, 0, sizeof(*c));
	return (uint32_t)nchunks++;
}

/* An ALLOC ('A', stack 1, size 16) or a FREE ('F') at addr in quantum q,
 * at the end of chunk id, by address (never by distance). */
static void rec(uint32_t id, char type, uint64_t q, uint64_t addr)
{
	struct tchunk *c = &chunks[id];
	CHECK(c->n + 2 * AP_EV_MAX_REC < CHUNK_BYTES, "chunk %u full", id);
	CHECK(q >= c->e.q, "chunk %u: time goes back", id);
	if (q > c->e.q)
		c->n += ap_enc_time(&c->e, c->b + c->n, q);
	struct ap_evrec r = {.type = type == 'A' ? AP_EV_ALLOC : AP_EV_FREE,
			     .addr = addr,
			     .size = type == 'A' ? 16 : 0,
			     .stack = type == 'A' ? 1 : 0};
	uint8_t *p = c->b + c->n;
	c->e.gaps = gaps;
	r.gap = (uint8_t)(addr >> 4);
	ap_enc_event(&c->e, &p, &p, &p, &p, &r);
	c->n = (size_t)(p - c->b);
}

static int input_chunk(void *ctx, uint32_t id, struct ap_order_bufs *bufs,
		       struct ap_order_chunk *out, const char **why)
{
	(void)ctx;
	CHECK(id < nchunks, "asked for chunk %u of %zu", id, nchunks);
	/* as the file's input does: the payload in the merge's buffers */
	const struct tchunk *c = &chunks[id];
	asked[id]++;
	if (c->rc) {
		*why = "does not decompress";
		return c->rc;
	}
	AP_ALLOC_GROW(bufs->raw, c->n ? c->n : 1, bufs->raw_cap);
	memcpy(bufs->raw, c->b, c->n);
	*out = (struct ap_order_chunk){bufs->raw, (uint32_t)c->n, gaps ? AP_CHUNK_F_GAPS : 0,
				       c->counted, c->want};
	return 0;
}

/* ---- a merge run ---- */

struct stream_def {
	uint32_t ids[8];
	size_t n;
};

static char got[1 << 20];

/* Merges the streams; the events out as text into `got`; the error, if
 * any, into err (and its chunk into *bad_id); whether a chunk was gone
 * into *changed; the batches handed out into *batches. Returns the number
 * of events. */
static size_t nbatches;

static size_t run(const struct stream_def *st, size_t nst, char *err, size_t errlen,
		  uint32_t *bad_id, bool *changed)
{
	struct ap_order_input in = {NULL, input_chunk};
	struct ap_order *o = ap_order_new(&in, nst, 1, 2, AP_ANON_BASE, NULL);
	for (size_t i = 0; i < nst; i++)
		ap_order_add(o, i, st[i].ids, st[i].n);
	size_t len = 0, total = 0;
	ssize_t n;
	const struct ap_event *ev;
	got[0] = 0;
	nbatches = 0;
	while ((n = ap_order_next(o, &ev)) > 0) {
		nbatches++;
		CHECK((size_t)n <= AP_EVENTS_BATCH + nst + 2, "a batch of %zd", n);
		for (size_t i = 0; i < (size_t)n; i++) {
			CHECK(ev[i].type == AP_EV_ALLOC || ev[i].type == AP_EV_FREE, "type %u",
			      ev[i].type);
			CHECK(ev[i].gap == (gaps ? (uint8_t)(ev[i].addr >> 4) : 0),
			      "event %zu: gap %u", i, ev[i].gap);
			len += (size_t)snprintf(
			    got + len, sizeof(got) - len, "%s%u%c%llx@%llu", len ? " " : "",
			    ev[i].thread, ev[i].type == AP_EV_ALLOC ? 'A' : 'F',
			    (unsigned long long)ev[i].addr, (unsigned long long)ev[i].ts);
			CHECK(len < sizeof(got), "output too long");
		}
		total += (size_t)n;
	}
	const char *why = ap_order_error(o, bad_id);
	CHECK(n == (why ? -1 : 0), "the merge returned %zd, error %s", n, why ? why : "none");
	if (n == 0)
		CHECK(ap_order_next(o, &ev) == 0, "events after the end");
	snprintf(err, errlen, "%s", why ? why : "");
	*changed = ap_order_changed(o);
	ap_order_free(o);
	return total;
}

/* Runs and compares the order out with `want`, and that no error came. */
static void expect(const char *name, const struct stream_def *st, size_t nst, const char *want)
{
	char err[256];
	uint32_t id;
	bool changed;
	run(st, nst, err, sizeof(err), &id, &changed);
	CHECK(!strcmp(got, want), "%s:\n  got  %s\n  want %s", name, got, want);
	CHECK(!err[0] && !changed, "%s: error \"%s\", changed %d", name, err, changed);
}

static void reset(void)
{
	nchunks = 0;
	memset(asked, 0, sizeof(asked));
}

/* ---- the cases ---- */

/* Thread 0 frees in quantum 5 the block thread 1 allocates in quantum 5:
 * the FREE waits for the ALLOC. Thread 0 allocates at 0x300 in quantum 9,
 * where thread 1's block still lives until its FREE in quantum 9: the
 * ALLOC waits for the FREE. */
static void test_waits(void)
{
	reset();
	struct stream_def st[2] = {{{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'F', 5, 0x100);
	rec(0, 'A', 9, 0x300);
	rec(1, 'A', 5, 0x100);
	rec(1, 'A', 8, 0x300);
	rec(1, 'F', 9, 0x300);
	expect("waits", st, 2, "1A100@5 0F100@5 1A300@8 1F300@9 0A300@9");
}

/* One address, three blocks in a quantum: thread 1 allocates X, frees X,
 * allocates Y; thread 0 frees Y (passed on to it). Thread 0's FREE must
 * not pair with X: thread 1 frees X itself later in the quantum. */
static void test_reuse(void)
{
	reset();
	struct stream_def st[2] = {{{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'F', 7, 0x200);
	rec(1, 'A', 7, 0x200);
	rec(1, 'F', 7, 0x200);
	rec(1, 'A', 7, 0x200);
	expect("reuse", st, 2, "1A200@7 1F200@7 1A200@7 0F200@7");
	/* the same with thread 1's FREE of X a record further on in its
	 * chunk: the look-ahead decodes it on a copy of the stream's decoder
	 * (whose cursors, the gaps' too, must be its own) */
	reset();
	struct stream_def st1[2] = {{{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'F', 7, 0x200);
	rec(1, 'A', 7, 0x200);
	rec(1, 'A', 7, 0x210);
	rec(1, 'F', 7, 0x200);
	rec(1, 'A', 7, 0x200);
	expect("reuse further on", st1, 2, "1A200@7 1A210@7 1F200@7 1A200@7 0F200@7");
	/* the same with thread 1's FREE of X in its next chunk, past another
	 * ALLOC: the look-ahead reads on into it (where a chunk ends does not
	 * change the order) */
	reset();
	struct stream_def st2[2] = {{{chunk()}, 1}, {{chunk(), chunk()}, 2}};
	rec(0, 'F', 7, 0x200);
	rec(1, 'A', 7, 0x200);
	rec(1, 'A', 7, 0x210);
	rec(2, 'F', 7, 0x200);
	rec(2, 'A', 7, 0x200);
	expect("reuse across chunks", st2, 2, "1A200@7 1A210@7 1F200@7 1A200@7 0F200@7");
	/* and when thread 1 does not free its block itself, thread 0's FREE is
	 * of it, right after its ALLOC */
	reset();
	struct stream_def st3[2] = {{{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'F', 7, 0x200);
	rec(1, 'A', 7, 0x200);
	rec(1, 'A', 7, 0x280);
	expect("passed on", st3, 2, "1A200@7 0F200@7 1A280@7");
}

/* A FREE of a block allocated before the trace began waits while its
 * quantum has other events, then goes as it is. */
static void test_quantum_over(void)
{
	reset();
	struct stream_def st[2] = {{{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'F', 3, 0x500);
	rec(0, 'A', 5, 0x600);
	rec(1, 'A', 3, 0x700);
	rec(1, 'A', 4, 0x800);
	expect("quantum over", st, 2, "1A700@3 0F500@3 1A800@4 0A600@5");
}

/* Ties of time go to the lower stream; a stream keeps its turn only while
 * its next event comes first anyway: not past another stream's head at
 * the same time with a lower index, nor when the next is blocked. */
static void test_turns(void)
{
	reset();
	struct stream_def st[3] = {{{chunk()}, 1}, {{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'A', 1, 0x10);
	rec(0, 'A', 2, 0x20);
	rec(0, 'A', 2, 0x28);
	rec(0, 'A', 3, 0x30);
	rec(1, 'A', 2, 0x40);
	rec(1, 'A', 3, 0x50);
	rec(1, 'A', 3, 0x58);
	rec(2, 'A', 1, 0x60);
	rec(2, 'A', 1, 0x68);
	rec(2, 'A', 3, 0x70);
	expect("ties", st, 3,
	       "0A10@1 2A60@1 2A68@1 0A20@2 0A28@2 1A40@2 0A30@3 1A50@3 1A58@3 2A70@3");
	/* stream 0's next (a FREE at 4) would keep its turn by time and index,
	 * but is blocked: stream 1's ALLOC at 4 goes first */
	reset();
	struct stream_def st2[2] = {{{chunk()}, 1}, {{chunk()}, 1}};
	rec(0, 'A', 1, 0x10);
	rec(0, 'F', 4, 0x99);
	rec(1, 'A', 4, 0x99);
	expect("blocked turn", st2, 2, "0A10@1 1A99@4 0F99@4");
}

/* Stream 0 ends after one event, stream 2 has no chunks, stream 1 goes on
 * over three chunks (the last stream left: straight through). */
static void test_ends_early(void)
{
	reset();
	struct stream_def st[3] = {{{chunk()}, 1}, {{chunk(), chunk(), chunk()}, 3}, {{0}, 0}};
	rec(0, 'A', 1, 0x10);
	rec(1, 'A', 1, 0x20);
	rec(1, 'F', 2, 0x20);
	rec(2, 'A', 3, 0x30);
	rec(3, 'F', 4, 0x30);
	rec(3, 'F', 4, 0x10);
	expect("ends early", st, 3, "0A10@1 1A20@1 1F20@2 1A30@3 1F30@4 1F10@4");
	for (size_t i = 0; i < nchunks; i++)
		CHECK(asked[i] == 1, "chunk %zu read %d times", i, asked[i]);
}

/* Corrupt chunks and a gone one: a gone chunk ends its stream, the others
 * go on; a corrupt one ends the merge with its error, the batch it was
 * found in not handed out. */
static void test_corrupt(void)
{
	char err[256], want[256];
	uint32_t id = 99;
	bool changed;
	/* a record of type 7 after one good ALLOC */
	reset();
	struct stream_def st[2] = {{{chunk(), chunk()}, 2}, {{chunk()}, 1}};
	rec(0, 'A', 1, 0x10);
	size_t at = chunks[0].n;
	chunks[0].b[chunks[0].n++] = 0x07;
	rec(0, 'A', 1, 0x18); /* (not read) */
	rec(1, 'A', 2, 0x40); /* (the stream's next chunk: not read either) */
	rec(2, 'A', 1, 0x20);
	rec(2, 'A', 2, 0x30);
	run(st, 2, err, sizeof(err), &id, &changed);
	CHECK(!strcmp(got, ""), "bad record: got %s", got);
	snprintf(want, sizeof(want), "unknown event type (near byte %zu of the payload)", at + 1);
	CHECK(!strcmp(err, want) && id == 0 && !changed, "bad record: \"%s\" in chunk %u", err, id);
	CHECK(asked[1] == 0, "a chunk after the corrupt one was read");

	/* stream 0's second chunk is gone (changed is said, no error), stream
	 * 1's second does not decompress (the error, with its chunk) */
	reset();
	struct stream_def st2[2] = {{{chunk(), chunk()}, 2}, {{chunk(), chunk()}, 2}};
	rec(0, 'A', 1, 0x10);
	rec(1, 'A', 5, 0x18);
	chunks[1].rc = 1;
	rec(2, 'A', 2, 0x20);
	rec(3, 'A', 3, 0x28);
	chunks[3].rc = -1;
	run(st2, 2, err, sizeof(err), &id, &changed);
	CHECK(!strcmp(got, ""), "gone and bad: got %s", got);
	CHECK(!strcmp(err, "does not decompress") && id == 3 && changed,
	      "gone and bad: \"%s\" in chunk %u, changed %d", err, id, changed);

	/* counts that do not match what the chunk holds */
	reset();
	struct stream_def st3[1] = {{{chunk()}, 1}};
	rec(0, 'A', 1, 0x10);
	rec(0, 'F', 2, 0x10);
	chunks[0].counted = true;
	chunks[0].want = (struct ap_chunk_counts){2, 3, 1, 2};
	run(st3, 1, err, sizeof(err), &id, &changed);
	CHECK(!strcmp(got, ""), "counts: got %s", got);
	CHECK(!strcmp(err, "its counts say 2 records, 3 events and 1 allocations, its payload "
			   "holds 2, 2 and 1") &&
		  id == 0,
	      "counts: \"%s\"", err);
	chunks[0].want = (struct ap_chunk_counts){2, 2, 1, 2};
	run(st3, 1, err, sizeof(err), &id, &changed);
	CHECK(!err[0] && !strcmp(got, "0A10@1 0F10@2"), "counts that match: \"%s\", got %s", err,
	      got);

	/* a chunk gone: its stream ends, the other goes on */
	reset();
	struct stream_def st4[2] = {{{chunk(), chunk()}, 2}, {{chunk()}, 1}};
	rec(0, 'A', 1, 0x10);
	rec(1, 'A', 3, 0x18);
	chunks[1].rc = 1;
	rec(2, 'A', 2, 0x20);
	rec(2, 'A', 4, 0x28);
	run(st4, 2, err, sizeof(err), &id, &changed);
	CHECK(!strcmp(got, "0A10@1 1A20@2 1A28@4") && !err[0] && changed,
	      "gone: got %s, error \"%s\", changed %d", got, err, changed);

	/* corrupt after more than a batch: the batches before it came out */
	reset();
	struct stream_def st5[1] = {{{chunk(), chunk(), chunk(), chunk(), chunk()}, 5}};
	for (uint32_t k = 0; k < 4; k++)
		for (uint64_t i = 0; i < 1200; i++)
			rec(k, 'A', 1 + k, 0x1000 + 0x10 * (k * 1200 + i));
	chunks[4].rc = -1;
	size_t n = run(st5, 1, err, sizeof(err), &id, &changed);
	CHECK(nbatches >= 1 && n >= AP_EVENTS_BATCH - 2 && n < 4800 && id == 4 &&
		  !strcmp(err, "does not decompress"),
	      "after a batch: %zu events in %zu batches, \"%s\" in chunk %u", n, nbatches, err,
	      id);
}

/* Many streams, more events than a batch: each allocates and frees its own
 * blocks at times of its own, often equal to other streams'. The order out
 * is by time, then stream, then the stream's own order. */
#define NST 40
#define PER 150

struct ref_ev {
	uint64_t q;
	uint32_t s, seq;
	char type;
	uint64_t addr;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref_ev *x = a, *y = b;
	if (x->q != y->q)
		return x->q < y->q ? -1 : 1;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_many(void)
{
	reset();
	static struct stream_def st[NST];
	static struct ref_ev ref[NST * PER];
	size_t nref = 0;
	uint64_t rng = 0x2545f4914f6cdd1dull;
	for (uint32_t s = 0; s < NST; s++) {
		st[s].n = 3;
		for (size_t k = 0; k < 3; k++)
			st[s].ids[k] = chunk();
		uint64_t q = 0;
		for (uint32_t i = 0; i < PER; i++) {
			q += ap_test_next(&rng) % 3; /* many equal times */
			/* a block of its own, freed by its next event */
			uint64_t addr = 0x1000000ull * (s + 1) + 0x10 * (i / 2);
			char type = i % 2 ? 'F' : 'A';
			rec(st[s].ids[i * 3 / PER], type, q, addr);
			ref[nref++] = (struct ref_ev){q, s, i, type, addr};
		}
	}
	qsort(ref, nref, sizeof(*ref), ref_cmp);
	static char want[1 << 20];
	size_t len = 0;
	for (size_t i = 0; i < nref; i++)
		len += (size_t)snprintf(
		    want + len, sizeof(want) - len, "%s%u%c%llx@%llu", len ? " " : "", ref[i].s,
		    ref[i].type, (unsigned long long)ref[i].addr, (unsigned long long)ref[i].q);
	CHECK(nref > AP_EVENTS_BATCH, "only %zu events", nref);
	expect("many streams", st, NST, want);
}

int main(void)
{
	for (int g = 0; g < 2; g++) {
		gaps = g;
		test_waits();
		test_reuse();
		test_quantum_over();
		test_turns();
		test_ends_early();
		test_corrupt();
		test_many();
	}
	return failures ? 1 : 0;
}
