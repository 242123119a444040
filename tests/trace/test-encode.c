/* The record encoder (trace/ap_trace_encode.h) against the reader's
 * decoder: random records, written in rows with the sampler's table of
 * recent ALLOCs (ap_enc_event_ring) and in columns with exact distances
 * and anonymous blocks (ap_enc_event, as the compactor does), decode to
 * the events they were made from; and the META and key/value records
 * read back through ap_trace_read_mem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_trace.h"
#include "ap_trace_encode.h"
#include "ap_check.h"


static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(uint64_t n)
{
	return ap_test_next(&rng) % n;
}

/* A random stream of events as the reader hands them out: ALLOCs, FREEs
 * of live blocks (or of unknown ones), REALLOCs (a FREE with
 * FROM_REALLOC then the ALLOC), one quantum step now and then. Live
 * blocks in live[], addresses from a small heap so that they repeat. */
#define NEV 20000
static struct ap_event want[2 * NEV];
static size_t nwant;

static void make_events(void)
{
	uint64_t live[512];
	size_t nlive = 0;
	uint64_t q = 7;
	uint16_t cpu = 0;
	for (size_t i = 0; i < NEV; i++) {
		if (rnd(10) == 0)
			q += 1 + rnd(300);
		if (rnd(20) == 0)
			cpu = (uint16_t)rnd(300);
		struct ap_event e = {.ts = q * 10, .cpu = cpu};
		unsigned what = (unsigned)rnd(10);
		uint64_t addr = 0x10000 + 16 * rnd(4096) + (rnd(50) == 0 ? rnd(16) : 0);
		if (what < 4 || !nlive) {
			e.type = AP_EV_ALLOC;
			e.addr = addr;
			e.size = rnd(8) ? rnd(600) : rnd(1u << 30);
			e.stack = 1 + (uint32_t)rnd(40);
			e.kind = (uint8_t)rnd(5);
			e.flags = AP_EVF_SAMPLED;
			want[nwant++] = e;
			if (nlive < 512)
				live[nlive++] = addr;
		} else if (what < 8) {
			e.type = AP_EV_FREE;
			size_t k = rnd(nlive);
			e.addr = rnd(30) ? live[k] : addr; /* sometimes a block not seen */
			live[k] = live[--nlive];
			want[nwant++] = e;
		} else {
			size_t k = rnd(nlive);
			bool tracked = rnd(4) != 0;
			if (tracked) {
				e.type = AP_EV_FREE;
				e.addr = live[k];
				e.flags = AP_EVF_FROM_REALLOC;
				want[nwant++] = e;
				live[k] = addr;
			} else if (nlive < 512) {
				live[nlive++] = addr;
			}
			struct ap_event a = e;
			a.type = AP_EV_ALLOC;
			a.addr = addr;
			a.size = rnd(100000);
			a.kind = rnd(2) ? AP_KIND_REALLOC : AP_KIND_REALLOCARRAY;
			a.flags = AP_EVF_REALLOC | (rnd(3) ? AP_EVF_SAMPLED : 0);
			a.stack = (a.flags & AP_EVF_SAMPLED) ? 1 + (uint32_t)rnd(40) : 0;
			a.addr = addr;
			want[nwant++] = a;
		}
	}
}

/* The record for want[*i] (and want[*i + 1] for a REALLOC); the old
 * block's address of an untracked REALLOC is given as `untracked_old`. */
static struct ap_evrec record_at(size_t *i, uint64_t untracked_old)
{
	const struct ap_event *e = &want[*i], *a = e, *old = NULL;
	if ((e->flags & AP_EVF_FROM_REALLOC) && *i + 1 < nwant) {
		old = e;
		a = &want[++*i];
	}
	struct ap_evrec r = {.type = a->type, .kind = a->kind, .cpu = e->cpu, .addr = a->addr,
			     .size = a->size, .stack = a->stack};
	if (a->flags & AP_EVF_REALLOC) {
		r.type = AP_EV_REALLOC;
		r.flags = (a->flags & AP_EVF_SAMPLED) ? AP_RF_NEW_SAMPLED : 0;
		r.flags |= old ? AP_RF_OLD_TRACKED : 0;
		r.addr = old ? old->addr : untracked_old;
		r.addr2 = a->addr;
	}
	if (r.type == AP_EV_FREE)
		r.kind = 0;
	(*i)++;
	return r;
}

static void compare(const char *what, const struct ap_event *got, size_t ngot, bool anon)
{
	CHECK(ngot == nwant, "%s: %zu events decoded, %zu written", what, ngot, nwant);
	size_t mism = 0;
	for (size_t i = 0; i < ngot && i < nwant; i++) {
		const struct ap_event *g = &got[i], *w = &want[i];
		bool addr_ok = g->addr == w->addr || (anon && (g->addr & AP_ANON_BASE) == AP_ANON_BASE);
		if (g->ts != w->ts || !addr_ok || g->size != w->size || g->stack != w->stack ||
		    g->cpu != w->cpu || g->type != w->type || g->kind != w->kind ||
		    g->flags != w->flags) {
			if (!mism++)
				CHECK(0, "%s: event %zu: ts %llu addr %#llx size %llu stack %u cpu %u "
					 "type %u kind %u flags %#x, written ts %llu addr %#llx size "
					 "%llu stack %u cpu %u type %u kind %u flags %#x",
				      what, i, (unsigned long long)g->ts, (unsigned long long)g->addr,
				      (unsigned long long)g->size, g->stack, g->cpu, g->type, g->kind,
				      g->flags, (unsigned long long)w->ts, (unsigned long long)w->addr,
				      (unsigned long long)w->size, w->stack, w->cpu, w->type, w->kind,
				      w->flags);
		}
	}
	CHECK(mism == 0, "%s: %zu events differ", what, mism);
}

/* Rows, as the sampler writes them: SYNC, TIME per quantum, distances
 * from the direct-mapped table. */
static void test_rows(void)
{
	uint8_t *buf = malloc(2 * NEV * AP_EV_MAX_REC), *p = buf;
	struct ap_ring ring = {.ent = calloc(AP_RING_TABLE_SIZE, sizeof(struct ap_ring_ent))};
	struct ap_evenc enc = {0};
	size_t nref = 0;
	p += ap_enc_sync(&enc, p, want[0].ts / 10);
	ap_ring_sync(&ring);
	for (size_t i = 0; i < nwant;) {
		if (want[i].ts / 10 != enc.q)
			p += ap_enc_time(&enc, p, want[i].ts / 10);
		struct ap_evrec r = record_at(&i, enc.prev_addr);
		size_t n = ap_enc_event_ring(&enc, &ring, p, &r);
		CHECK(n <= AP_EV_MAX_REC, "a record of %zu bytes", n);
		nref += r.by_ref;
		p += n;
	}
	CHECK(nref > 1000, "only %zu blocks named by distance", nref);
	struct ap_event *got = NULL;
	size_t ngot = 0, alloc = 0;
	const char *why = "";
	struct ap_decode_thread th = {0};
	CHECK(ap_trace_decode_events(buf, (size_t)(p - buf), 0, 10, &th, &got, &ngot, &alloc, &why) ==
		  0,
	      "rows do not decode: %s", why);
	compare("rows", got, ngot, false);
	free(got);
	free(ring.ent);
	free(buf);
}

/* The encodings no writer writes: columns with REFs among the addresses,
 * REFs by distance, or other threads' allocations named without steps by
 * owner. Each is refused (no events), whatever the payload; the one the
 * compactor writes decodes (test_index has it in full), and rows. */
static void test_dropped(void)
{
	/* one ALLOC at 0x10 of size 8, stack 1: in rows, and in columns */
	struct ap_evrec r = {.type = AP_EV_ALLOC, .addr = 0x10, .size = 8, .stack = 1};
	uint8_t row[64], col[3][32], pl[128];
	uint8_t *p = row, *c0 = col[0], *c1 = col[1], *c2 = col[2];
	struct ap_evenc e = {0};
	p += ap_enc_sync(&e, p, 0);
	ap_enc_event(&e, &p, &p, &p, &p, &r);
	size_t nrow = (size_t)(p - row);
	e = (struct ap_evenc){0};
	c0 += ap_enc_sync(&e, c0, 0);
	ap_enc_event(&e, &c0, &c1, &c1, &c2, &r);
	size_t l[3] = {(size_t)(c0 - col[0]), (size_t)(c1 - col[1]), (size_t)(c2 - col[2])};
	p = pl;
	p += ap_put_uv(p, l[1]);
	p += ap_put_uv(p, l[2]);
	p += ap_put_uv(p, 0);
	p += ap_put_uv(p, 0);
	p += ap_put_uv(p, 0); /* the frees resolved: none */
	for (int k = 0; k < 3; k++) {
		memcpy(p, col[k], l[k]);
		p += l[k];
	}
	size_t npl = (size_t)(p - pl);
	static const unsigned dropped[] = {
	    AP_CHUNK_F_COLUMNS,
	    AP_CHUNK_F_COLUMNS | AP_CHUNK_F_SIZES,
	    AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS,
	    AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX,
	    AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX | AP_CHUNK_F_SIZES,
	};
	struct ap_event *got = NULL;
	size_t ngot = 0, alloc = 0;
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		struct ap_decode_thread th = {0};
		const char *why = NULL;
		CHECK(ap_trace_decode_events(pl, npl, dropped[i], 10, &th, &got, &ngot, &alloc,
					     &why) < 0 &&
			  ngot == 0 && why && strstr(why, "an encoding no allocprof writes"),
		      "flags %#x: %zu events, %s", dropped[i], ngot, why ? why : "no error");
	}
	static const unsigned kept[] = {0, AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
					       AP_CHUNK_F_XOWN};
	for (size_t i = 0; i < 2; i++) {
		struct ap_decode_thread th = {0};
		const char *why = "";
		ngot = 0;
		CHECK(ap_trace_decode_events(kept[i] ? pl : row, kept[i] ? npl : nrow, kept[i], 10,
					     &th, &got, &ngot, &alloc, &why) == 0 &&
			  ngot == 1 && got[0].addr == 0x10 && got[0].size == 8 && got[0].stack == 1,
		      "flags %#x: %zu events (%s)", kept[i], ngot, why);
	}
	free(got);
}

/* The flags of the compactor's chunks (without sizes by stack). */
#define AP_EV_FLAGS (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX | AP_CHUNK_F_XOWN)

/* Allocation indexes (AP_CHUNK_F_INDEX) and sizes by stack
 * (AP_CHUNK_F_SIZES), as the compactor writes them: the events split in three payloads of one thread, decoded
 * one after the other with what they carry over; the blocks at addresses
 * the "thread" alone names (here: two in three) anonymous, and every FREE
 * of such a block, in its payload or a later one, by its index. Checked
 * strictly: each FREE's event names exactly the identity the latest live
 * ALLOC at its address got. */
#define ADDR_SPAN 0x30000
static bool anon_addr(uint64_t a)
{
	return (a >> 4) % 3 != 0;
}

static void test_index(void)
{
	/* per address, the live blocks: (allocation index) newest first */
	uint64_t *live_idx = calloc(2 * NEV, sizeof(*live_idx));
	int64_t *older = calloc(2 * NEV, sizeof(*older));
	int64_t *top = malloc(ADDR_SPAN * sizeof(*top));
	for (size_t a = 0; a < ADDR_SPAN; a++)
		top[a] = -1;
	uint64_t nalloc = 0, next = 0;
	size_t nref = 0, cross = 0, payload_of[2 * NEV];
	struct ap_event *got = NULL;
	size_t ngot = 0, alloc = 0;
	struct ap_decode_thread th = {.thread = 3};
	const size_t cut[] = {0, nwant / 3, 2 * nwant / 3, nwant};
	uint8_t *col[6]; /* col[5]: the frees resolved */
	for (int k = 0; k < 6; k++)
		col[k] = malloc(2 * NEV * AP_EV_MAX_REC);
	uint8_t *buf = malloc(10 * NEV * AP_EV_MAX_REC);
	/* sizes by stack too (AP_CHUNK_F_SIZES) */
	static struct ap_size_pred pred;
	size_t i = 0;
	for (int part = 0; part < 3; part++) {
		uint8_t *c0 = col[0], *c1 = col[1], *c2 = col[2], *c3 = col[3], *c4 = col[4];
		uint8_t *c5 = col[5];
		struct ap_evenc enc = {.sizes = &pred};
		c0 += ap_enc_sync(&enc, c0, want[i].ts / 10);
		size_t nrec = 0, last_step = 0;
		while (i < cut[part + 1]) {
			if (want[i].ts / 10 != enc.q) {
				c3 += ap_enc_time_col(&enc, c3, nrec - last_step, want[i].ts / 10);
				last_step = nrec;
			}
			nrec++;
			struct ap_evrec r = record_at(&i, enc.prev_addr);
			/* the frees' column: nothing for one of the last
			 * AP_FREED_RING allocations by REF, else "none found" */
			bool frees = r.type == AP_EV_FREE || (r.flags & AP_RF_OLD_TRACKED), ring = false;
			if (r.type != AP_EV_ALLOC && frees && top[r.addr] >= 0) {
				int64_t b = top[r.addr];
				ring = nalloc - live_idx[b] < AP_FREED_RING;
				top[r.addr] = older[b];
				r.by_ref = true;
				r.ref = ap_zigzag((int64_t)(live_idx[b] - next)) << 1;
				next = live_idx[b] + 1;
				nref++;
				cross += payload_of[b] != (size_t)part;
			}
			if (r.type != AP_EV_FREE) {
				uint64_t a = r.type == AP_EV_ALLOC ? r.addr : r.addr2;
				uint64_t idx = nalloc++;
				r.anon = anon_addr(a);
				if (r.anon) {
					live_idx[idx] = idx;
					older[idx] = top[a];
					payload_of[idx] = (size_t)part;
					top[a] = (int64_t)idx;
				}
			}
			ap_enc_event(&enc, &c0, &c1, &c4, &c2, &r);
			if (frees && !ring)
				*c5++ = 0;
		}
		/* the times' pairs as the column's planes */
		size_t npairs = (size_t)(c3 - col[3]);
		uint8_t *times = malloc(2 * npairs + AP_VARINT_MAX);
		size_t l[6] = {(size_t)(c0 - col[0]), (size_t)(c1 - col[1]), (size_t)(c2 - col[2]),
			       ap_enc_time_planes(col[3], npairs, times), (size_t)(c4 - col[4]),
			       (size_t)(c5 - col[5])};
		uint8_t *p = buf;
		for (int k = 1; k < 6; k++)
			p += ap_put_uv(p, l[k]);
		for (int k = 0; k < 6; k++) {
			memcpy(p, k == 3 ? times : col[k], l[k]);
			p += l[k];
		}
		free(times);
		const char *why = "";
		CHECK(ap_trace_decode_events(buf, (size_t)(p - buf),
					     AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
						 AP_CHUNK_F_XOWN | AP_CHUNK_F_SIZES,
					     10, &th, &got, &ngot, &alloc, &why) == 0,
		      "payload %d with indexes does not decode: %s", part, why);
	}
	CHECK(nref > 1000 && cross > 100, "only %zu blocks named by index, %zu from an earlier "
	      "payload", nref, cross);
	CHECK(th.nalloc == nalloc, "%llu allocations carried over, %llu written",
	      (unsigned long long)th.nalloc, (unsigned long long)nalloc);
	/* the pairing, from the decoded events alone: every FREE of an
	 * anonymous address names the identity of the latest live ALLOC
	 * there, which is the index the encoder counted */
	CHECK(ngot == nwant, "indexes: %zu events decoded, %zu written", ngot, nwant);
	for (size_t a = 0; a < ADDR_SPAN; a++)
		top[a] = -1;
	uint64_t n = 0;
	size_t bad = 0;
	for (size_t k = 0; k < ngot && k < nwant; k++) {
		const struct ap_event *g = &got[k], *w = &want[k];
		uint64_t expect = w->addr;
		if (w->type == AP_EV_ALLOC) {
			uint64_t idx = n++;
			if (anon_addr(w->addr)) {
				expect = AP_ANON_BASE | 3ull << 40 | idx;
				older[idx] = top[w->addr];
				top[w->addr] = (int64_t)idx;
			}
		} else if (top[w->addr] >= 0) {
			int64_t b = top[w->addr];
			expect = AP_ANON_BASE | 3ull << 40 | (uint64_t)b;
			top[w->addr] = older[b];
		}
		/* (a FREE of a recent block is resolved: the caller of
		 * ap_trace_decode_events keeps no ring, its stack and size read 0) */
		const unsigned res = AP_EVF_RESOLVED | AP_EVF_TEMPORARY;
		if (g->addr != expect || g->ts != w->ts || g->size != w->size ||
		    g->stack != w->stack || g->type != w->type || (g->flags & ~res) != w->flags) {
			if (!bad++)
				CHECK(0, "indexes: event %zu: addr %#llx type %u, expected %#llx type %u",
				      k, (unsigned long long)g->addr, g->type,
				      (unsigned long long)expect, w->type);
		}
	}
	CHECK(bad == 0, "indexes: %zu events differ", bad);
	/* an index past the allocations so far is corrupt: a payload of one
	 * FREE by index 0 in a thread that allocated nothing */
	uint8_t one[] = {0, 0, 0, 1, 0, AP_EV_SYNC, 0, AP_EV_FREE | AP_TAG_REF, 0};
	struct ap_decode_thread fresh = {0};
	const char *why = NULL;
	size_t n0 = 0;
	CHECK(ap_trace_decode_events(one, sizeof(one),
				     AP_EV_FLAGS, 10,
				     &fresh, &got, &n0, &alloc, &why) < 0 && why,
	      "a FREE by an index not allocated yet decodes");
	fresh.nalloc = 1;
	n0 = 0;
	CHECK(ap_trace_decode_events(one, sizeof(one),
				     AP_EV_FLAGS, 10,
				     &fresh, &got, &n0, &alloc, &why) == 0 && n0 == 1 &&
		  got[0].addr == AP_ANON_BASE && fresh.next == 1,
	      "a FREE by index 0 after one allocation: %zu events, addr %#llx", n0,
	      n0 ? (unsigned long long)got[0].addr : 0ull);
	/* identities hold 40 bits of index: a thread's 2^40th allocation
	 * (two anonymous ALLOCs after 2^40 - 1) is corrupt */
	uint8_t two[] = {0, 2, 0, 0, 0, AP_EV_SYNC, 0, AP_EV_ALLOC | AP_TAG_REF, 1,
			 AP_EV_ALLOC | AP_TAG_REF, 1, 8, 8};
	fresh = (struct ap_decode_thread){.nalloc = AP_THREAD_ALLOCS_MAX - 2};
	n0 = 0;
	CHECK(ap_trace_decode_events(two, sizeof(two),
				     AP_EV_FLAGS, 10,
				     &fresh, &got, &n0, &alloc, &why) == 0 && n0 == 2 &&
		  got[1].addr == (AP_ANON_BASE | (AP_THREAD_ALLOCS_MAX - 1)),
	      "the last allocation index a thread has");
	n0 = 0;
	CHECK(ap_trace_decode_events(two, sizeof(two),
				     AP_EV_FLAGS, 10,
				     &fresh, &got, &n0, &alloc, &why) < 0 &&
		  strstr(why, "2^40"),
	      "more than 2^40 allocations in one thread decode");
	for (int k = 0; k < 6; k++)
		free(col[k]);
	free(buf);
	free(got);
	free(live_idx);
	free(older);
	free(top);
}

/* HEADER, META (mapping, stack, thread) and END through the reader. */
static void test_meta(void)
{
	uint8_t file[4096], *p = file;
	p += ap_put_preamble(p);
	uint8_t *h = p, *q = h + AP_CHUNK_HDR_LEN;
	q += ap_put_kv_uint(q, AP_HK_RATE, 4096);
	q += ap_put_kv_str(q, AP_HK_EXE, "/bin/x", 6);
	q += ap_put_kv_uint(q, AP_HK_CPUS, 3);
	ap_chunk_header(h, AP_CHUNK_HEADER, 5, AP_STREAM_NONE, 0, h + AP_CHUNK_HDR_LEN,
			(uint32_t)(q - h - AP_CHUNK_HDR_LEN));
	p = q;
	h = p;
	q = h + AP_CHUNK_HDR_LEN;
	static const uint8_t bid[] = {0xde, 0xad, 0xbe, 0xef};
	q += ap_put_mapping(q, 0x400000, "/bin/x", 6, bid, sizeof(bid), 2);
	q += ap_put_segment(q, 0, 0x1000, 0, 5);
	q += ap_put_segment(q, 0x2000, 0x800, 0x2000, 6);
	uint64_t pcs[] = {0x400123, 0x400040, 0xffffffffff600000ull, 0x400000};
	q += ap_put_stack(q, 1, pcs, 4);
	q += ap_put_thread(q, 5, "worker", 6);
	ap_chunk_header(h, AP_CHUNK_META, 5, AP_STREAM_META, 0, h + AP_CHUNK_HDR_LEN,
			(uint32_t)(q - h - AP_CHUNK_HDR_LEN));
	p = q;
	h = p;
	q = h + AP_CHUNK_HDR_LEN;
	q += ap_put_kv_uint(q, AP_EK_REASON, AP_END_EXIT);
	q += ap_put_kv_uint(q, AP_EK_CALLS, 99);
	ap_chunk_header(h, AP_CHUNK_END, 5, AP_STREAM_NONE, 0, h + AP_CHUNK_HDR_LEN,
			(uint32_t)(q - h - AP_CHUNK_HDR_LEN));
	p = q;
	struct ap_trace *t;
	struct ap_error err;
	if (ap_trace_read_mem(file, (size_t)(p - file), "meta", &t, &err) < 0) {
		CHECK(0, "%s", err.msg);
		return;
	}
	CHECK(t->rate == 4096 && t->cpus == 3 && !strcmp(t->exe, "/bin/x"), "header fields");
	CHECK(t->nmaps == 1 && t->maps[0].bias == 0x400000 && t->maps[0].build_id_len == 4 &&
		  !memcmp(t->maps[0].build_id, bid, 4) && t->maps[0].nsegs == 2 &&
		  t->maps[0].segs[1].vaddr == 0x2000 && t->maps[0].segs[1].memsz == 0x800 &&
		  t->maps[0].segs[1].offset == 0x2000 && t->maps[0].segs[1].flags == 6,
	      "mapping");
	CHECK(t->nstacks == 2 && t->stacks[1].depth == 4 && !memcmp(t->stacks[1].pcs, pcs, sizeof(pcs)),
	      "stack");
	CHECK(t->nthreads == 1 && t->threads[0].tid == 5 && !strcmp(t->threads[0].name, "worker"),
	      "thread");
	CHECK(t->has_end && t->calls == 99, "end");
	ap_trace_free(t);
}

/* A trace of a HEADER and one META chunk holding `meta` (n bytes),
 * read; returns the trace or NULL with *err set. */
static struct ap_trace *read_meta(const uint8_t *meta, size_t n, struct ap_error *err)
{
	static uint8_t file[65536];
	uint8_t *p = file;
	p += ap_put_preamble(p);
	uint8_t *h = p, *q = h + AP_CHUNK_HDR_LEN;
	q += ap_put_kv_uint(q, AP_HK_RATE, 1);
	ap_chunk_header(h, AP_CHUNK_HEADER, 5, AP_STREAM_NONE, 0, h + AP_CHUNK_HDR_LEN,
			(uint32_t)(q - h - AP_CHUNK_HDR_LEN));
	h = q;
	memcpy(h + AP_CHUNK_HDR_LEN, meta, n);
	ap_chunk_header(h, AP_CHUNK_META, 5, AP_STREAM_META, 0, h + AP_CHUNK_HDR_LEN, (uint32_t)n);
	struct ap_trace *t = NULL;
	if (ap_trace_read_mem(file, (size_t)(h + AP_CHUNK_HDR_LEN + n - file), "shared", &t, err) < 0)
		return NULL;
	return t;
}

/* STACK_SHARED: a stack made of its own inner frames and an earlier
 * stack's outer ones; every bad base or count is corrupt. */
static void test_shared(void)
{
	uint64_t a[] = {0x1000, 0x2000, 0x3000, 0x4000};	  /* stack 1 */
	uint64_t b[] = {0x1111, 0x2222, 0x3000, 0x4000};	  /* 2: shares 2 of 1 */
	uint64_t c[] = {0x5555, 0x1111, 0x2222, 0x3000, 0x4000}; /* 3: shares 4 of 2 */
	uint8_t meta[512], *p = meta;
	p += ap_put_stack(p, 1, a, 4);
	p += ap_put_stack_shared(p, 2, b, 4, 1, 2);
	p += ap_put_stack_shared(p, 3, c, 5, 2, 4);
	p += ap_put_stack_shared(p, 4, a, 4, 1, 4); /* all shared */
	struct ap_error err;
	struct ap_trace *t = read_meta(meta, (size_t)(p - meta), &err);
	CHECK(t != NULL, "%s", err.msg);
	if (t) {
		CHECK(t->nstacks == 5, "%zu stacks", t->nstacks);
		CHECK(t->stacks[2].depth == 4 && !memcmp(t->stacks[2].pcs, b, sizeof(b)), "stack 2");
		CHECK(t->stacks[3].depth == 5 && !memcmp(t->stacks[3].pcs, c, sizeof(c)), "stack 3");
		CHECK(t->stacks[4].depth == 4 && !memcmp(t->stacks[4].pcs, a, sizeof(a)), "stack 4");
		ap_trace_free(t);
	}
	static const struct {
		uint32_t base, shared, depth;
		const char *msg;
	} bad[] = {
	    {0, 2, 4, "names stack 0, which is not before it"},
	    {2, 2, 4, "names stack 2, which is not before it"},
	    {1, 5, 4, "of depth 4 shares 5 frames"},
	    {1, 5, 6, "of depth 6 shares 5 frames of stack 1 (depth 4)"},
	    {1, 0, 4, "shares 0 frames"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = meta;
		p += ap_put_stack(p, 1, a, 4);
		uint64_t pcs[8] = {1, 2, 3, 4, 5, 6, 7, 8};
		/* the own PCs only: write the record by hand past depth */
		p += ap_put_stack_shared(p, 2, pcs, bad[i].depth,
					 bad[i].base, bad[i].shared > bad[i].depth ? 0 : bad[i].shared);
		if (bad[i].shared > bad[i].depth || bad[i].shared == 0) {
			/* rewrite the shared count (the encoder wrote 0) */
			p = meta + ap_put_stack(meta, 1, a, 4);
			*p++ = AP_META_STACK_SHARED;
			p += ap_put_uv(p, 2);
			p += ap_put_uv(p, bad[i].depth);
			p += ap_put_uv(p, bad[i].base);
			p += ap_put_uv(p, bad[i].shared);
			for (uint32_t k = 0; k < bad[i].depth; k++)
				p += ap_put_uv(p, 1);
		}
		CHECK(!read_meta(meta, (size_t)(p - meta), &err) && strstr(err.msg, bad[i].msg),
		      "bad %zu: %s", i, err.msg);
	}
	/* shared frames past AP_SHARED_PCS_PER_BYTE per byte: corrupt. A
	 * chain of stacks, each one frame deeper than the one it shares all
	 * frames of, would hold n^2 / 2 frames for 10 n bytes */
	static uint8_t big[60000];
	uint64_t one = 0x401000;
	p = big;
	p += ap_put_stack(p, 1, &one, 1);
	for (uint32_t id = 2; p + 32 < big + sizeof(big); id++)
		p += ap_put_stack_shared(p, id, &one, id, id - 1, id - 1);
	t = read_meta(big, (size_t)(p - big), &err);
	CHECK(!t && strstr(err.msg, "shared stacks of"), "a META bomb: %s",
	      t ? "read" : err.msg);
	ap_trace_free(t);
}

/* Gap codes: exact up to 7 ns, then within 12.5 % of the gap, in order;
 * and a writer's codes (ap_gapq_code) add up to the gaps to within
 * their slack, each within half (16 ns) but the paying ones,
 * in long runs where the gaps jitter. */
static void test_gaps(void)
{
	uint8_t prev = 0;
	for (uint64_t ns = 0; ns < (1u << 22); ns += 1 + ns / 64) {
		uint8_t c = ap_gap_code(ns);
		uint64_t back = ap_gap_ns(c);
		double err = ns ? ((double)back - (double)ns) / (double)ns : 0;
		CHECK(ns < 8 ? back == ns : err <= 0.125 && err >= -0.125,
		      "gap %llu ns: code %u stands for %llu", (unsigned long long)ns, c,
		      (unsigned long long)back);
		CHECK(c >= prev, "gap %llu ns: code %u after %u", (unsigned long long)ns, c, prev);
		prev = c;
	}
	CHECK(ap_gap_code(UINT64_MAX) == 251 && ap_gap_ns(251) > (1ull << 62), "the largest gap");
	for (unsigned c = 0; c < 252; c++)
		CHECK(ap_gap_code(ap_gap_ns((uint8_t)c)) == c, "code %u does not stand for itself", c);

	/* jitter by a fifth around 10 ns, 300 ns and 5 us, and by half (the
	 * codes must change then, and still add up), a sleep now and then */
	static const uint64_t mid[] = {10, 300, 5000, 10, 300, 5000};
	for (size_t k = 0; k < 6; k++) {
		struct ap_gapq q = {0, 0, 0};
		int64_t sum = 0, wrote = 0;
		size_t changes = 0, n = 200000, far = 0;
		uint8_t last = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t ns = k < 3 ? mid[k] * 4 / 5 + rnd(mid[k] * 2 / 5 + 1)
					    : mid[k] / 2 + rnd(mid[k] + 1);
			if (i % 50000 == 49999)
				ns = 2000000; /* a sleep: the sum starts over */
			uint8_t c = ap_gapq_code(&q, ns);
			if (ns > AP_GAP_WORK_MAX_NS) {
				sum = wrote = 0;
			} else {
				sum += (int64_t)ns;
				wrote += (int64_t)ap_gap_ns(c);
			}
			int64_t d = (int64_t)ap_gap_ns(c) - (int64_t)ns;
			int64_t band = (int64_t)ns / 2 > 16 ? (int64_t)ns / 2 : 16;
			far += d > 2 * band || d < -2 * band;
			/* (a code paying back a debt is itself within 12.5 %) */
			int64_t slack = ap_gapq_slack(&q) * 5 / 4 + 2 * (int64_t)ns;
			CHECK(wrote - sum <= slack && sum - wrote <= slack,
			      "gaps near %llu ns: codes %lld ns off after %zu",
			      (unsigned long long)mid[k], (long long)(wrote - sum), i);
			changes += i && c != last;
			last = c;
		}
		/* the paying records: one in many */
		CHECK(k >= 3 || (far < n / 20 && changes < n / 10),
		      "gaps near %llu ns: %zu codes far from their gap, %zu changes",
		      (unsigned long long)mid[k], far, changes);
	}
}

int main(void)
{
	test_gaps();
	make_events();
	test_rows();
	test_dropped();
	test_index();
	test_meta();
	test_shared();
	if (failures) {
		fprintf(stderr, "test-encode: %d failures\n", failures);
		return 1;
	}
	printf("test-encode: ok (%zu events)\n", nwant);
	return 0;
}
