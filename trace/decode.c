/* The EVENTS decoder's out-of-line parts (decode.h), pass 1 over the
 * EVENTS chunks (decoded to validate and count them, or counted from the
 * counts they carry) and ap_trace_decode_events, the compactor's entry. */
#include "decode.h"
#include "file.h"

#include <stdlib.h>
#include <string.h>

/* A REF to another thread's allocation, field k (bit 0 set): bit 1 says
 * the tid is the last one's (none follows), else `uv tid` follows in
 * column c; index = that owner's `next` (struct ap_xowners) + step (the
 * other thread's chunks may come later in the file, so the index is only
 * checked against the 2^40 an identity holds). A tid the trace does not
 * know names no block (thread bits 0xffff: no thread has that index). */
int rd_xref(struct evdec *d, struct evcur *c, uint64_t k, uint64_t *out, bool scan)
{
	uint64_t tid;
	if (k & 2) {
		if (!d->th.xo.n)
			return -1; /* (no last tid) */
		tid = d->th.xo.tid[0];
	} else if (rd_uv(&c->p, c->end, &tid) < 0 || tid > UINT32_MAX) {
		return -1;
	}
	int64_t step = ap_unzigzag(k >> 2);
	uint64_t mag = step < 0 ? 0 - (uint64_t)step : (uint64_t)step;
	uint64_t *next = ap_xowners_use(&d->th.xo, (uint32_t)tid);
	if (step < 0 ? mag > *next : mag >= AP_THREAD_ALLOCS_MAX - *next)
		return -1;
	uint64_t idx = *next + (uint64_t)step;
	*next = idx + 1;
	if (scan) {
		*out = 0;
		return 0;
	}
	uint32_t ti = d->tids ? ap_u64map_get(d->tids, tid) : AP_U64MAP_NONE;
	*out = ti == AP_U64MAP_NONE ? AP_ANON_BASE | (uint64_t)AP_ANON_LOW_THREADS << 40 | idx
				    : ap_anon_id(ti, idx);
	return 0;
}

/* Starts decoding a payload: `columns` is its chunk's flags, AP_EV_COLUMNS
 * (in columns) with AP_CHUNK_F_SIZES or not, or 0 (rows): an encoding
 * evdec_encoding_ok takes. Returns -1 with *why set if the column lengths
 * do not fit the payload. */
int evdec_start(struct evdec *d, const uint8_t *payload, uint32_t len, uint32_t thread,
		       uint64_t quantum, unsigned columns, const char **why)
{
	d->q = 0;
	d->quantum = quantum;
	if (!d->anon_min)
		d->anon_min = AP_ANON_BASE;
	d->c0 = (struct evcur){payload, payload + len};
	d->ca = d->cs = &d->c0;
	d->addr = 0;
	d->cpu = 0;
	d->thread = thread;
	d->sync_base = d->th.nalloc;
	d->until = UINT64_MAX;
	d->tplanes = NULL;
	d->tn = d->tk = 0;
	d->c3 = d->c4 = d->c5 = (struct evcur){NULL, NULL};
	d->c6 = (struct evcur){NULL, NULL};
	d->cg = &d->c0;
	d->refs = d->index = d->sized = d->resolved = false;
	d->gaps = columns & AP_CHUNK_F_GAPS;
	d->gwin = 0;
	if (!(columns & AP_CHUNK_F_COLUMNS))
		return 0;
	/* the lengths of columns 1-4, 5 with gaps, and 6 (the frees
	 * resolved: every payload in columns) */
	uint64_t l[6] = {0}, sum = 0;
	for (int k = 0; k < 6; k++)
		if ((k != 4 || d->gaps) && ap_get_uv(&d->c0.p, d->c0.end, &l[k]) < 0) {
			*why = "column lengths run past the end of the payload";
			return -1;
		}
	for (int k = 0; k < 6; k++) {
		if (l[k] > (uint64_t)(d->c0.end - d->c0.p) - sum) {
			*why = "column lengths run past the end of the payload";
			return -1;
		}
		sum += l[k];
	}
	d->refs = d->index = d->resolved = true;
	d->sized = (columns & AP_CHUNK_F_SIZES) && d->pred;
	if (d->sized)
		ap_size_pred_reset(d->pred);
	d->c6 = (struct evcur){d->c0.end - l[5], d->c0.end};
	d->c5 = (struct evcur){d->c6.p - l[4], d->c6.p};
	d->c0.end = d->c5.p;
	d->cg = &d->c5;
	const uint64_t l1 = l[0], l2 = l[1], l3 = l[2], l4 = l[3];
	d->c4 = (struct evcur){d->c0.end - l4, d->c0.end};
	d->c3 = (struct evcur){d->c4.p - l3, d->c4.p};
	d->c2 = (struct evcur){d->c3.p - l2, d->c3.p};
	d->c1 = (struct evcur){d->c2.p - l1, d->c2.p};
	d->c0.end = d->c1.p;
	d->ca = &d->c1;
	d->cs = &d->c2;
	/* the times column: `uv n`, the skips' three planes, the steps */
	if (d->c3.p < d->c3.end &&
	    (ap_get_uv(&d->c3.p, d->c3.end, &d->tn) < 0 ||
	     d->tn > (uint64_t)(d->c3.end - d->c3.p) / 3)) {
		*why = "the times column's planes run past its end";
		return -1;
	}
	d->tplanes = d->c3.p;
	d->c3.p += 3 * d->tn;
	return next_time(d) < 0 ? (*why = "bad varint in the times column", -1) : 0;
}

/* Pass 1: a chunk's events (k) count into its thread's (idx) and the
 * trace's; it is remembered for pass 2. */
static int count_chunk(struct rd *r, long idx, const struct ap_chunk_counts *k,
		       const uint8_t *payload, uint32_t len, unsigned columns)
{
	struct ap_trace *t = r->t;
	if (k->records) {
		if (k->last_q > UINT64_MAX / t->time_quantum_ns)
			return rd_corrupt(r, "time out of range");
		uint64_t last = k->last_q * t->time_quantum_ns;
		if (!r->any_event || last > r->last_ts)
			r->last_ts = last;
		r->any_event = true;
	}
	t->threads[idx].events += k->records;
	r->thread_nev[idx] += k->events;
	t->nrecords += k->records;
	if (columns & AP_CHUNK_F_GAPS)
		t->ngap_records += k->records;
	AP_ALLOC_GROW(r->chunks, r->nchunks + 1, r->chunks_alloc);
	r->chunks[r->nchunks++] = (struct ev_chunk){.payload = payload, .len = len,
						    .thread = (uint32_t)idx,
						    .columns = (uint8_t)columns};
	return 0;
}

/* Pass 1 for one EVENTS chunk: validate, count, remember. */
int scan_events(struct rd *r, uint32_t tid, const uint8_t *payload, uint32_t len,
		       unsigned columns)
{
	struct ap_trace *t = r->t;
	if (!evdec_encoding_ok(columns))
		return rd_corrupt(r, "%s (chunk flags %#x)", AP_EV_ENCODING_BAD, columns);
	long idx = rd_thread_index(r, tid);
	if (idx < 0)
		return -1;
	if (r->thread_refs[idx].counted && (columns & AP_CHUNK_F_INDEX))
		return rd_corrupt(r, "allocation indexes without counts after a chunk with them");
	struct evdec d = {.th = r->thread_refs[idx]}; /* scanning: no ring */
	const char *bad = NULL;
	if (evdec_start(&d, payload, len, (uint32_t)idx, t->time_quantum_ns, columns, &bad) < 0)
		return rd_corrupt(r, "%s", bad);
	struct ap_event ev[2];
	for (;;) {
		const uint8_t *rec = d.c0.p;
		const char *why = NULL;
		int n = evdec_next(&d, ev, t->nstacks, &why, true);
		if (n == DEC_END)
			break;
		if (n == DEC_BAD)
			return rd_corrupt(r, "%s (record at byte %zu of the payload)", why,
				       (size_t)(rec - payload));
	}
	/* (identities have 40 bits for the index; the decoder does not
	 * check each ALLOC) */
	if (d.th.nalloc > AP_THREAD_ALLOCS_MAX)
		return rd_corrupt(r, "more than 2^40 allocations in one thread");
	r->thread_refs[idx] = d.th;
	if ((columns & AP_CHUNK_F_COLUMNS) && !evdec_columns_done(&d))
		return rd_corrupt(r, "columns of a size the records do not use");
	struct ap_chunk_counts k = {d.nrec, d.nev, 0, d.last_q};
	return count_chunk(r, idx, &k, payload, len, columns);
}

/* Pass 1 for an EVENTS chunk with AP_CHUNK_F_COUNTS (ch): its counts, and
 * the checks that need no decoding; pass 2 decodes it, and checks the
 * rest (order.c: a corrupt one ends the pass with its error). */
int count_events(struct rd *r, const struct ap_chunk *ch)
{
	unsigned columns = ch->flags & (AP_EV_ENCODING_FLAGS | AP_CHUNK_F_COUNTS);
	if (!evdec_encoding_ok(columns))
		return rd_corrupt(r, "%s (chunk flags %#x)", AP_EV_ENCODING_BAD, columns);
	long idx = rd_thread_index(r, ch->tid);
	if (idx < 0)
		return -1;
	const uint8_t *p = ch->payload, *end = ch->payload + ch->len;
	struct ap_chunk_counts k;
	if (ap_get_chunk_counts(&p, end, &k) < 0)
		return rd_corrupt(r, "the counts run past the end of the payload");
	if ((ch->flags & AP_CHUNK_F_ZSTD) && zframe_check(r, p, (uint32_t)(end - p)) < 0)
		return -1;
	/* a record takes a byte or more of the payload, and makes two
	 * ap_events at most (a REALLOC) */
	uint32_t raw = (ch->flags & AP_CHUNK_F_ZSTD) ? ap_get_u32le(p) : (uint32_t)(end - p);
	if (k.records > raw || k.events > 2 * k.records || k.allocs > k.records)
		return rd_corrupt(r, "counts the payload cannot hold");
	struct thread_refs *th = &r->thread_refs[idx];
	if (k.allocs > AP_THREAD_ALLOCS_MAX - th->nalloc)
		return rd_corrupt(r, "more than 2^40 allocations in one thread");
	th->nalloc += k.allocs;
	th->counted = true;
	if (count_chunk(r, idx, &k, ch->payload, ch->len, columns & ~AP_CHUNK_F_COUNTS) < 0)
		return -1;
	struct ev_chunk *e = &r->chunks[r->nchunks - 1];
	e->counted = true;
	e->skip = (uint8_t)(p - ch->payload);
	e->want = k;
	return 0;
}

int ap_trace_decode_events(const uint8_t *payload, size_t len, unsigned flags, uint64_t quantum,
			   struct ap_decode_thread *th, struct ap_event **ev, size_t *nev,
			   size_t *alloc, const char **why)
{
	struct evdec d = {0};
	int rc = 0;
	if (len > UINT32_MAX || !quantum) {
		*why = len > UINT32_MAX ? "payload too long" : "time quantum 0";
		return -1;
	}
	if (!evdec_encoding_ok(flags)) {
		*why = AP_EV_ENCODING_BAD;
		return -1;
	}
	d.th = (struct thread_refs){.nalloc = th->nalloc, .next = th->next, .xo = th->xo};
	if (flags & AP_CHUNK_F_SIZES)
		d.pred = ap_xcalloc(1, sizeof(*d.pred));
	if (evdec_start(&d, payload, (uint32_t)len, th->thread, quantum,
			flags & AP_EV_ENCODING_FLAGS,
			why) < 0) {
		free(d.pred);
		return -1;
	}
	for (;;) {
		AP_ALLOC_GROW(*ev, *nev + 2, *alloc);
		int n = evdec_next(&d, *ev + *nev, SIZE_MAX, why, false);
		if (n == DEC_END)
			break;
		if (n == DEC_BAD) {
			rc = -1;
			break;
		}
		if (n > 0)
			*nev += (size_t)n;
	}
	free(d.ring);
	free(d.pred);
	th->nalloc = d.th.nalloc;
	th->next = d.th.next;
	th->xo = d.th.xo;
	if (!rc && th->nalloc > AP_THREAD_ALLOCS_MAX) {
		*why = "more than 2^40 allocations in one thread";
		rc = -1;
	}
	return rc;
}
