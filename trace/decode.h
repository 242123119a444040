/* The EVENTS decoder (used by the reader's two passes and by the
 * compactor, through ap_trace_decode_events): one payload into events, a
 * record at a time. Its hot path (evdec_next and the varint readers) is
 * static inline here, so that each pass that runs it has it inlined:
 * pass 1's scan (decode.c), pass 2's merge (order.c). */
#ifndef AP_TRACE_DECODE_H
#define AP_TRACE_DECODE_H

#include "ap_trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rd;
struct ap_chunk;

/* What a thread's chunks carry over, one to the next: its allocations so
 * far (the next one's index, which names an anonymous block) and the
 * index after the one its last REF named (AP_CHUNK_F_INDEX), from which
 * the next REF steps. */
struct thread_refs {
	uint64_t nalloc, next;
	bool last_alloc; /* its last event record was an allocation (the frees resolved) */
	struct ap_xowners xo; /* the same for REFs to each of the other threads
			       * it named last (AP_CHUNK_F_XOWN) */
	bool counted; /* pass 1: a chunk before was not decoded (AP_CHUNK_F_COUNTS),
		       * so only nalloc is known */
};

struct evcur {
	const uint8_t *p, *end;
};

struct evdec {
	struct evcur c0, c1, c2, c3; /* columns: tags etc., addresses, sizes, times */
	struct evcur c4;	     /* REFs (AP_CHUNK_F_REFS) */
	struct evcur c5;	     /* gaps (AP_CHUNK_F_GAPS in columns) */
	struct evcur c6;	     /* columns: the blocks frees end (the frees resolved) */
	struct evcur *ca, *cs, *cg; /* &c1, &c2, &c5 for a payload in columns, else &c0
				     * (a copy of a decoder points its own at its own) */
	bool gaps;		     /* records carry a gap byte (AP_CHUNK_F_GAPS) */
	uint32_t gwin;		     /* columns: records left with the gap gcode */
	uint8_t gcode;
	bool refs;		     /* REFs from c4, else from *ca (a flag, not a pointer:
				      * copies of a decoder fix up ca and cs only) */
	bool index;		     /* ...as allocation indexes (AP_CHUNK_F_INDEX,
				      * stepping by owner: _XOWN), else as distances.
				      * Both are set in columns, neither in rows; with one
				      * flag for both, GCC 12 copies the varint reader
				      * into both ways of every REF: pass 2 took 2 % more
				      * time (stats, loop64 with 4 threads) */
	bool sized;		     /* sizes predicted by stack (AP_CHUNK_F_SIZES) */
	bool resolved;		     /* frees resolved (in columns: c6) */
	uint64_t nrec, nev;	     /* records and ap_events decoded (AP_CHUNK_F_COUNTS) */
	uint64_t last_q;	     /* the last record's quantum */
	struct ap_size_pred *pred; /* the table for them (its owner's; NULL in scan mode,
				    * which reads the fields and needs no sizes) */
	uint64_t until, step;	     /* times column: records left before q += step */
	const uint8_t *tplanes;	     /* ...its skips' planes (c3: the steps after them) */
	uint64_t tn, tk;	     /* ...how many pairs, and the next one */
	uint64_t q, quantum, addr;
	uint32_t cpu;
	uint32_t thread;
	uint64_t anon_min; /* address fields from here up are corrupt (0: AP_ANON_BASE) */
	uint64_t sync_base; /* th.nalloc at the payload start or the last SYNC */
	uint64_t *ring;	 /* their addresses, ring[pos & (ring_cap - 1)] */
	size_t ring_cap; /* grows to AP_RING as a chunk needs it */
	struct thread_refs th; /* the thread's, across its payloads */
	/* The frees resolved: the stacks and sizes of the thread's last
	 * allocations, by index & (fcap - 1) (up to AP_FREED_RING), over all
	 * its payloads; kept when fring (pass 2; NULL arrays in a copy that
	 * must not write them: its frees then read stack 0, size 0) */
	bool fring;
	uint32_t *fstack;
	uint64_t *fsize;
	size_t fcap;
	uint64_t ref_idx; /* the last REF's own allocation index (UINT64_MAX: another
			   * thread's) */
	const struct ap_u64map *tids; /* tid -> thread index (pass 2: another
				       * thread's allocations; NULL: none known) */
};

/* The EVENTS encodings read: rows (flags 0, the sampler's and the test
 * writer's), or columns with REFs apart, by allocation index, stepping by
 * owner, the frees resolved (AP_EV_COLUMNS, the compactor's); either with
 * AP_CHUNK_F_SIZES or not (and, stored, with _ZSTD and _COUNTS or not). */
#define AP_EV_COLUMNS (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX | AP_CHUNK_F_XOWN)
/* The chunk flags that say how its events are encoded (evdec_start's
 * `columns`). */
#define AP_EV_ENCODING_FLAGS (AP_EV_COLUMNS | AP_CHUNK_F_SIZES | AP_CHUNK_F_GAPS)
#define AP_EV_ENCODING_BAD \
	"an encoding no allocprof writes: columns without REFs apart, allocation indexes " \
	"and steps by owner"

/* Is an EVENTS chunk's flags an encoding read? */
static inline bool evdec_encoding_ok(unsigned flags)
{
	unsigned c = flags & AP_EV_COLUMNS;
	return c == 0 || c == AP_EV_COLUMNS;
}

/* Whether every column of a payload in columns was used up. */
static inline bool evdec_columns_done(const struct evdec *d)
{
	return d->c1.p == d->c1.end && d->c2.p == d->c2.end && d->c3.p == d->c3.end &&
	       d->tk == d->tn &&
	       d->c4.p == d->c4.end && d->c5.p == d->c5.end && d->c6.p == d->c6.end;
}

/* Starts decoding a payload (decode.c): see there. */
int evdec_start(struct evdec *d, const uint8_t *payload, uint32_t len, uint32_t thread,
		uint64_t quantum, unsigned columns, const char **why);
/* A REF to another thread's allocation (decode.c): see there. */
int rd_xref(struct evdec *d, struct evcur *c, uint64_t k, uint64_t *out, bool scan);

/* The times column's next (records to skip, quanta to add) pair: the
 * skip from its planes, the step from c3; none left: no more steps. */
static inline int next_time(struct evdec *d)
{
	if (d->tk >= d->tn) {
		d->until = UINT64_MAX;
		return 0;
	}
	const uint8_t *p = d->tplanes + d->tk;
	d->until = p[0] | (uint64_t)p[d->tn] << 8 | (uint64_t)p[2 * d->tn] << 16;
	d->tk++;
	return ap_get_uv(&d->c3.p, d->c3.end, &d->step) < 0 ? -1 : 0;
}

/* The identity of the thread's index-th allocation when it is anonymous. */
static inline uint64_t anon_id(const struct evdec *d, uint64_t index)
{
	return ap_anon_id(d->thread, index);
}

/* ALLOCs since the payload start or the last SYNC. */
static inline uint64_t ring_count(const struct evdec *d)
{
	return d->th.nalloc - d->sync_base;
}

/* Counts an ALLOC (or a REALLOC's new block) and remembers its address
 * for FREEs by distance (`scan`, or REFs by index: only counts it; see
 * evdec_next). */
/* Keeps a new allocation's stack (0 unsampled) and size for the
 * resolved frees that name it without a field. */
static inline __attribute__((always_inline)) void fring_push(struct evdec *d, uint32_t stack,
							     uint64_t size)
{
	if (!d->fring)
		return;
	uint64_t k = d->th.nalloc;
	if (k == d->fcap && d->fcap < AP_FREED_RING) {
		/* not wrapped yet: indexes keep their slots */
		d->fcap = d->fcap ? d->fcap * 2 : 64;
		d->fstack = ap_xrealloc(d->fstack, d->fcap * sizeof(*d->fstack));
		d->fsize = ap_xrealloc(d->fsize, d->fcap * sizeof(*d->fsize));
	}
	if (d->fsize) {
		d->fstack[k & (d->fcap - 1)] = stack;
		d->fsize[k & (d->fcap - 1)] = size;
	}
}

static inline __attribute__((always_inline)) void ring_push(struct evdec *d, uint64_t addr,
							    bool scan)
{
	uint64_t nal = ring_count(d);
	d->th.nalloc++;
	d->th.last_alloc = true;
	if (scan || d->index)
		return;
	if (nal == d->ring_cap && d->ring_cap < AP_RING) {
		/* not wrapped yet: positions keep their slots */
		d->ring_cap = d->ring_cap ? d->ring_cap * 2 : 64;
		d->ring = ap_xrealloc(d->ring, d->ring_cap * sizeof(*d->ring));
	}
	d->ring[nal & (d->ring_cap - 1)] = addr;
}

/* A size field v of a payload with AP_CHUNK_F_SIZES: the size. */
static inline uint64_t predicted_size(struct evdec *d, uint32_t stack, uint64_t v)
{
	uint64_t size = ap_size_pred_get(d->pred, stack) + (uint64_t)ap_unzigzag(v);
	ap_size_pred_put(d->pred, stack, size);
	return size;
}

/* An allocation's size field v at stack: the size. */
static inline __attribute__((always_inline)) uint64_t alloc_size(struct evdec *d, uint32_t stack,
								 uint64_t v)
{
	return d->sized ? predicted_size(d, stack, v) : v;
}

enum { DEC_END = -1, DEC_BAD = -2, DEC_SKIP = -3 };

/* An allocation's address field at AP_ANON_BASE (AP_ANON_MIN in a trace
 * of more than 65535 threads) or above: no x86-64
 * process has such an address (user space ends at 2^47, or 2^56 with
 * five-level page tables), and identities up there are the anonymous
 * blocks', which the merge knows to be new. */
#define NO_ADDRESS "an allocation at an address no process has (0xff00000000000000 or above, " \
	"0x8000000000000000 with more than 65535 threads)"

/* ap_get_uv, faster: the one-byte case first, and with 10 bytes left no
 * bounds check per byte (varints were half of the decode time). */
static inline int rd_uv(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	if (q < end && q[0] < 0x80) {
		*v = q[0];
		*p = q + 1;
		return 0;
	}
	if (end - q < AP_VARINT_MAX)
		return ap_get_uv(p, end, v);
	/* two and three bytes (sizes, address deltas) unrolled */
	uint64_t r = q[0] & 0x7f;
	if (q[1] < 0x80) {
		*v = r | (uint64_t)q[1] << 7;
		*p = q + 2;
		return 0;
	}
	r |= (uint64_t)(q[1] & 0x7f) << 7;
	if (q[2] < 0x80) {
		*v = r | (uint64_t)q[2] << 14;
		*p = q + 3;
		return 0;
	}
	r |= (uint64_t)(q[2] & 0x7f) << 14;
	for (unsigned i = 3; i < AP_VARINT_MAX; i++) {
		uint8_t b = q[i];
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (i == AP_VARINT_MAX - 1 && b > 1)
				return -1;
			*v = r;
			*p = q + i + 1;
			return 0;
		}
	}
	return -1;
}

static inline int rd_sv(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	if (rd_uv(p, end, &u) < 0)
		return -1;
	*v = ap_unzigzag(u);
	return 0;
}

/* The frees resolved (in columns): the block a FREE (or a REALLOC's FREE half) e
 * ends, into e's stack, size and flags: one of the thread's last
 * AP_FREED_RING allocations named by a REF (index idx; the thread's
 * allocations before the record: nal) from the ring, else from column 5;
 * -1 if the field is bad. Stack ids must be below nstacks. */
static inline __attribute__((always_inline)) int rd_freed(struct evdec *d, struct ap_event *e,
							  uint64_t idx, uint64_t nal, bool last,
							  size_t nstacks)
{
	if (idx < nal && nal - idx < AP_FREED_RING) {
		e->flags |= AP_EVF_RESOLVED | (last && idx + 1 == nal ? AP_EVF_TEMPORARY : 0);
		if (d->fsize) {
			size_t k = idx & (d->fcap - 1);
			e->stack = d->fstack[k];
			e->size = d->fsize[k];
		}
		return 0;
	}
	uint64_t v, z;
	if (rd_uv(&d->c6.p, d->c6.end, &v) < 0)
		return -1;
	if (v == 0)
		return 0; /* no block found: unmatched, or inherited */
	v--;
	if (v >> 1 >= nstacks || rd_uv(&d->c6.p, d->c6.end, &z) < 0)
		return -1;
	e->stack = (uint32_t)(v >> 1);
	e->size = z;
	e->flags |= AP_EVF_RESOLVED | ((v & 1) ? AP_EVF_TEMPORARY : 0);
	return 0;
}

/* An address field (ap_put_addr) relative to prev. */
static inline int rd_addr(const uint8_t **p, const uint8_t *end, uint64_t prev, uint64_t *out)
{
	uint64_t v;
	if (rd_uv(p, end, &v) < 0)
		return -1;
	return ap_addr_finish(p, end, v, prev, out);
}

/* A block named by distance (AP_TAG_REF): 1 is the last ALLOC (`scan`:
 * checked, not looked up); or, in a chunk with AP_CHUNK_F_INDEX, by the
 * thread's allocation index, relative to its last REF's. */
static inline __attribute__((always_inline)) int rd_ref(struct evdec *d, uint64_t *out, bool scan)
{
	uint64_t k;
	struct evcur *c = d->refs ? &d->c4 : d->ca;
	d->ref_idx = UINT64_MAX;
	if (rd_uv(&c->p, c->end, &k) < 0)
		return -1;
	if (d->index) {
		if (k == 0) { /* the common case: the allocation after the last */
			if (d->th.next >= d->th.nalloc)
				return -1;
			d->ref_idx = d->th.next;
			*out = anon_id(d, d->th.next++);
			return 0;
		}
		/* bit 0: another thread's allocation (its tid follows);
		 * the rest zigzag(index - next) */
		if (k & 1)
			return rd_xref(d, c, k, out, scan);
		int64_t step = ap_unzigzag(k >> 1);
		uint64_t mag = step < 0 ? 0 - (uint64_t)step : (uint64_t)step;
		/* index = next + step, below the allocations so far
		 * (next <= nalloc) */
		if (step < 0 ? mag > d->th.next : mag >= d->th.nalloc - d->th.next)
			return -1;
		uint64_t idx = d->th.next + (uint64_t)step;
		d->th.next = idx + 1;
		d->ref_idx = idx;
		*out = anon_id(d, idx);
		return 0;
	}
	uint64_t nal = ring_count(d);
	if (k == 0 || k > nal || k > AP_RING)
		return -1;
	*out = scan ? 0 : d->ring[(nal - k) & (d->ring_cap - 1)];
	return 0;
}

/* Decodes one record into ev[0..n). Returns n (0 for a TRACK record, 1 or
 * 2), DEC_SKIP for TIME and SYNC, DEC_END at the end of the payload, or
 * DEC_BAD with *why set. Stack ids must be below `nstacks`. `scan` (pass
 * 1, a constant): every check is made, but the addresses of blocks named
 * by distance are not looked up (they are 0) and the ring is not kept. */
static inline __attribute__((always_inline)) int evdec_next(struct evdec *d, struct ap_event ev[2],
							    size_t nstacks, const char **why,
							    bool scan)
{
	struct evcur *c = &d->c0;
	if (c->p >= c->end || *c->p == 0)
		return DEC_END;
	uint8_t tag = *c->p++;
	uint64_t u;
	unsigned type = AP_TAG_TYPE(tag), kind = AP_TAG_KIND(tag);
	if (type >= AP_EV_TIME) {
		if (type == 7 || (tag & ~7u))
			return *why = type == 7 ? "unknown event type" : "TIME or SYNC tag with flags",
			       DEC_BAD;
		if (rd_uv(&c->p, c->end, &u) < 0)
			return *why = "bad time varint", DEC_BAD;
		uint64_t q = type == AP_EV_TIME ? d->q + u : u;
		if (q < u || q > UINT64_MAX / d->quantum)
			return *why = "time out of range", DEC_BAD;
		d->q = q;
		if (type == AP_EV_SYNC) {
			d->addr = 0;
			d->cpu = 0;
			d->sync_base = d->th.nalloc;
			if (d->sized)
				ap_size_pred_reset(d->pred);
		}
		return DEC_SKIP;
	}
	while (__builtin_expect(d->until == 0, 0)) { /* the times column says: a new quantum */
		if (d->q + d->step < d->q || d->q + d->step > UINT64_MAX / d->quantum)
			return *why = "time out of range", DEC_BAD;
		d->q += d->step;
		if (next_time(d) < 0)
			return *why = "bad varint in the times column", DEC_BAD;
	}
	d->until--;
	d->nrec++;
	d->last_q = d->q;
	if (tag & AP_TAG_CPU) {
		if (rd_uv(&c->p, c->end, &u) < 0)
			return *why = "bad cpu varint", DEC_BAD;
		if (u > UINT16_MAX)
			return *why = "cpu number out of range", DEC_BAD;
		d->cpu = (uint32_t)u;
	}
	if ((tag & AP_TAG_REF) && type == AP_EV_TRACK)
		return *why = "distance flag on a TRACK record", DEC_BAD;
	struct ap_event *e = &ev[0];
	e->ts = d->q * d->quantum;
	e->thread = d->thread;
	e->cpu = (uint16_t)d->cpu;
	e->gap = 0;
	if (d->gaps && type != AP_EV_TRACK) {
		if (d->cg == &d->c0) { /* rows: a gap each */
			if (d->c0.p >= d->c0.end)
				return *why = "a record without its gap", DEC_BAD;
			e->gap = *d->c0.p++;
		} else { /* columns: a gap each window */
			if (!d->gwin) {
				if (d->c5.p >= d->c5.end)
					return *why = "records without their window's gap", DEC_BAD;
				d->gcode = *d->c5.p++;
				d->gwin = AP_GAP_WINDOW;
			}
			d->gwin--;
			e->gap = d->gcode;
		}
	}
	switch (type) {
	case AP_EV_ALLOC: {
		uint64_t size, stack, addr = 0;
		if (((tag & AP_TAG_REF) ? (addr = scan ? 0 : anon_id(d, d->th.nalloc), 0)
					: rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0) ||
		    rd_uv(&d->cs->p, d->cs->end, &size) < 0 || rd_uv(&c->p, c->end, &stack) < 0)
			return *why = "ALLOC record runs past the end of the payload or has a bad "
				      "varint",
			       DEC_BAD;
		if (!(tag & AP_TAG_REF) && (addr = d->addr) >= d->anon_min)
			return *why = NO_ADDRESS, DEC_BAD;
		if (kind > AP_KIND_REALLOCARRAY)
			return *why = "unknown allocation kind", DEC_BAD;
		if (stack == 0)
			return *why = "ALLOC with stack id 0", DEC_BAD;
		if (stack >= nstacks)
			return *why = "stack id used before its STACK record", DEC_BAD;
		size = alloc_size(d, (uint32_t)stack, size);
		fring_push(d, (uint32_t)stack, size);
		ring_push(d, addr, scan);
		e->addr = addr;
		e->size = size;
		e->stack = (uint32_t)stack;
		e->type = AP_EV_ALLOC;
		e->kind = (uint8_t)kind;
		e->flags = AP_EVF_SAMPLED;
		d->nev++;
		return 1;
	}
	case AP_EV_FREE:
		/* every address field moves d->addr; a distance does not */
		if ((tag & AP_TAG_REF) ? rd_ref(d, &e->addr, scan) < 0
				       : rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0)
			return *why = "FREE record runs past the end of the payload, has a bad "
				      "varint or names a block not allocated before it",
			       DEC_BAD;
		if (!(tag & AP_TAG_REF))
			e->addr = d->addr;
		e->size = 0;
		e->stack = 0;
		e->type = AP_EV_FREE;
		e->kind = 0;
		e->flags = 0;
		if (d->resolved && rd_freed(d, e, (tag & AP_TAG_REF) ? d->ref_idx : UINT64_MAX,
					    d->th.nalloc, d->th.last_alloc, nstacks) < 0)
			return *why = "FREE's block runs past the end of its column or has a bad "
				      "field",
			       DEC_BAD;
		d->th.last_alloc = false;
		d->nev++;
		return 1;
	case AP_EV_REALLOC: {
		uint64_t size, stack, fl, old = 0, addr = 0, nal = d->th.nalloc;
		bool last = d->th.last_alloc;
		if (((tag & AP_TAG_REF) ? rd_ref(d, &old, scan) < 0
					: rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0) ||
		    rd_uv(&c->p, c->end, &fl) < 0)
			return *why = "REALLOC record runs past the end of the payload, has a bad "
				      "varint or names a block not allocated before it",
			       DEC_BAD;
		if (!(tag & AP_TAG_REF))
			old = d->addr;
		if (((fl & AP_RF_NEW_ANON) ? (addr = scan ? 0 : anon_id(d, d->th.nalloc), 0)
					   : rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0) ||
		    rd_uv(&d->cs->p, d->cs->end, &size) < 0 || rd_uv(&c->p, c->end, &stack) < 0)
			return *why = "REALLOC record runs past the end of the payload, has a bad "
				      "varint or names a block not allocated before it",
			       DEC_BAD;
		if (kind > AP_KIND_REALLOCARRAY)
			return *why = "unknown allocation kind", DEC_BAD;
		if (stack >= nstacks)
			return *why = "stack id used before its STACK record", DEC_BAD;
		if ((fl & AP_RF_NEW_SAMPLED) && stack == 0)
			return *why = "sampled REALLOC with stack id 0", DEC_BAD;
		if ((tag & AP_TAG_REF) && !(fl & AP_RF_OLD_TRACKED))
			return *why = "REALLOC names an untracked old block by distance", DEC_BAD;
		size = alloc_size(d, (uint32_t)stack, size);
		if (!(fl & AP_RF_NEW_ANON) && (addr = d->addr) >= d->anon_min)
			return *why = NO_ADDRESS, DEC_BAD;
		fring_push(d, (fl & AP_RF_NEW_SAMPLED) ? (uint32_t)stack : 0, size);
		ring_push(d, addr, scan);
		int n = 0;
		if (fl & AP_RF_OLD_TRACKED) {
			e->addr = old;
			e->size = 0;
			e->stack = 0;
			e->type = AP_EV_FREE;
			e->kind = 0;
			e->flags = AP_EVF_FROM_REALLOC;
			/* (after the whole record: the ring's slot of the old
			 * block is not the new one's, nal - idx < AP_FREED_RING) */
			if (d->resolved &&
			    rd_freed(d, e, (tag & AP_TAG_REF) ? d->ref_idx : UINT64_MAX, nal, last,
				     nstacks) < 0)
				return *why = "REALLOC's old block runs past the end of its column or "
					      "has a bad field",
				       DEC_BAD;
			ev[1] = *e;
			e = &ev[1];
			e->gap = 0;
			n = 1;
		}
		e->addr = addr;
		e->size = size;
		e->stack = (uint32_t)stack;
		e->type = AP_EV_ALLOC;
		e->kind = (uint8_t)kind;
		e->flags = AP_EVF_REALLOC | ((fl & AP_RF_NEW_SAMPLED) ? AP_EVF_SAMPLED : 0);
		d->nev += (uint64_t)n + 1;
		return n + 1;
	}
	case AP_EV_TRACK: {
		uint64_t size;
		if (rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0 ||
		    rd_uv(&d->cs->p, d->cs->end, &size) < 0)
			return *why = "TRACK record runs past the end of the payload or has a bad "
				      "varint",
			       DEC_BAD;
		return 0; /* unused: no event */
	}
	default:
		return *why = "unknown event type", DEC_BAD;
	}
}

/* Pass 1 (decode.c) for one EVENTS chunk of thread tid: validated by
 * decoding it, counted, remembered for pass 2. */
int scan_events(struct rd *r, uint32_t tid, const uint8_t *payload, uint32_t len,
		unsigned columns);
/* Pass 1 for an EVENTS chunk with AP_CHUNK_F_COUNTS: its counts and the
 * checks that need no decoding (pass 2 checks the rest). */
int count_events(struct rd *r, const struct ap_chunk *ch);

#endif
