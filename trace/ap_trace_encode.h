/* The record encoder: every byte of a trace's records is written here, by
 * the sampler (from inside malloc), the test writer (trace/writer.c) and the
 * compactor (trace/compact/). Header-only and allocation-free: each
 * function writes into memory the caller reserved (the *_MAX bounds say how
 * much) and returns the bytes written. docs/trace-format.md is the format.
 *
 * Also here: the settings the sampler records with, which the report side
 * repeats (the test writer writes chunks and distances as the sampler
 * does; `record` passes the same defaults). */
#ifndef AP_TRACE_ENCODE_H
#define AP_TRACE_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ap_trace_enc.h"

/* ---- settings -------------------------------------------------------- */

/* Mean sampling interval in bytes (`record --rate`), stack depth cap
 * (`--max-depth`) and its largest value. */
#define AP_DEFAULT_RATE 524288u
#define AP_DEFAULT_DEPTH 64u
#define AP_MAX_DEPTH_CAP 256u
/* A sampler thread buffer, chunk header included: one EVENTS chunk. */
#define AP_SAMPLER_CHUNK (64u << 10)
/* The sampler's META buffer (payload bytes). */
#define AP_SAMPLER_META_CHUNK (1u << 20)
/* The direct-mapped table of recent ALLOCs a FREE is named from by
 * distance (struct ap_ring_ent): 2^AP_RING_TABLE_BITS entries. */
#define AP_RING_TABLE_BITS 12
#define AP_RING_TABLE_SIZE (1u << AP_RING_TABLE_BITS)

/* ---- HEADER, END, strings -------------------------------------------- */

/* Bytes a str field of n bytes takes at most. */
#define AP_STR_MAX(n) (AP_VARINT_MAX + (size_t)(n))
/* Bytes a uint key/value takes at most. */
#define AP_KV_UINT_MAX (3 * AP_VARINT_MAX)

static inline size_t ap_put_str(uint8_t *p, const void *s, size_t n)
{
	size_t k = ap_put_uv(p, n);
	if (n) /* s may be NULL for an empty string */
		memcpy(p + k, s, n);
	return k + n;
}

static inline size_t ap_put_kv_uint(uint8_t *p, unsigned key, uint64_t v)
{
	size_t k = ap_put_uv(p, key);
	k += ap_put_uv(p + k, AP_KV_UINT);
	return k + ap_put_uv(p + k, v);
}

/* At most 2 * AP_VARINT_MAX + AP_STR_MAX(n) bytes. */
static inline size_t ap_put_kv_str(uint8_t *p, unsigned key, const void *s, size_t n)
{
	size_t k = ap_put_uv(p, key);
	k += ap_put_uv(p + k, AP_KV_STR);
	return k + ap_put_str(p + k, s, n);
}

/* The file's first AP_TRACE_PREAMBLE_LEN bytes. */
static inline size_t ap_put_preamble(uint8_t *p)
{
	memcpy(p, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN);
	ap_put_u32le(p + 8, AP_TRACE_VERSION);
	ap_put_u32le(p + 12, AP_TRACE_BOM);
	return AP_TRACE_PREAMBLE_LEN;
}

/* ---- META records ---------------------------------------------------- */

#define AP_META_STACK_MAX(depth) (1 + (2 + (size_t)(depth)) * AP_VARINT_MAX)
#define AP_META_THREAD_MAX(namelen) (1 + AP_VARINT_MAX + AP_STR_MAX(namelen))
#define AP_META_MAPPING_MAX(pathlen, bidlen) \
	(1 + 2 * AP_VARINT_MAX + AP_STR_MAX(pathlen) + AP_STR_MAX(bidlen))
#define AP_META_SEGMENT_MAX (4 * AP_VARINT_MAX)

/* STACK: the first PC as uv, each next one as the sv delta from the one
 * before. */
static inline size_t ap_put_stack(uint8_t *p, uint32_t id, const uint64_t *pcs, uint32_t depth)
{
	size_t k = 0;
	p[k++] = AP_META_STACK;
	k += ap_put_uv(p + k, id);
	k += ap_put_uv(p + k, depth);
	for (uint32_t i = 0; i < depth; i++)
		k += i ? ap_put_sv(p + k, (int64_t)(pcs[i] - pcs[i - 1])) : ap_put_uv(p + k, pcs[0]);
	return k;
}

/* STACK_SHARED (version 4): the stack `id` of `depth` frames whose
 * outermost `shared` frames are those of stack `base`; its own innermost
 * depth - shared PCs follow as in STACK. At most
 * AP_META_STACK_MAX(depth - shared) + 2 * AP_VARINT_MAX bytes. */
static inline size_t ap_put_stack_shared(uint8_t *p, uint32_t id, const uint64_t *pcs,
					 uint32_t depth, uint32_t base, uint32_t shared)
{
	size_t k = 0;
	p[k++] = AP_META_STACK_SHARED;
	k += ap_put_uv(p + k, id);
	k += ap_put_uv(p + k, depth);
	k += ap_put_uv(p + k, base);
	k += ap_put_uv(p + k, shared);
	for (uint32_t i = 0; i < depth - shared; i++)
		k += i ? ap_put_sv(p + k, (int64_t)(pcs[i] - pcs[i - 1])) : ap_put_uv(p + k, pcs[0]);
	return k;
}

static inline size_t ap_put_thread(uint8_t *p, uint32_t tid, const char *name, size_t n)
{
	size_t k = 0;
	p[k++] = AP_META_THREAD;
	k += ap_put_uv(p + k, tid);
	return k + ap_put_str(p + k, name, n);
}

/* MAPPING up to its segments: `nseg` ap_put_segment records must follow. */
static inline size_t ap_put_mapping(uint8_t *p, uint64_t bias, const char *path, size_t plen,
				    const uint8_t *build_id, size_t blen, uint64_t nseg)
{
	size_t k = 0;
	p[k++] = AP_META_MAPPING;
	k += ap_put_uv(p + k, bias);
	k += ap_put_str(p + k, path, plen);
	k += ap_put_str(p + k, build_id, blen);
	return k + ap_put_uv(p + k, nseg);
}

static inline size_t ap_put_segment(uint8_t *p, uint64_t vaddr, uint64_t memsz,
				    uint64_t offset, uint64_t flags)
{
	size_t k = ap_put_uv(p, vaddr);
	k += ap_put_uv(p + k, memsz);
	k += ap_put_uv(p + k, offset);
	return k + ap_put_uv(p + k, flags);
}

/* ---- EVENTS records -------------------------------------------------- */

/* The delta state of one EVENTS payload, as the reader keeps it. */
struct ap_evenc {
	uint64_t q;	    /* the quantum of the last SYNC or TIME */
	uint64_t prev_addr; /* the last address field */
	uint32_t cpu;
	struct ap_size_pred *sizes; /* AP_CHUNK_F_SIZES, else NULL */
	bool gaps;	/* AP_CHUNK_F_GAPS in rows: each record's gap after its tag
			 * (the compactor's columns have windows of them) */
};

/* The largest record: TIME, tag, cpu, gap and six fields. */
#define AP_EV_MAX_REC 96

/* SYNC: the payload's state starts over at quantum q. */
static inline size_t ap_enc_sync(struct ap_evenc *e, uint8_t *p, uint64_t q)
{
	p[0] = AP_EV_SYNC;
	e->q = q;
	e->prev_addr = 0;
	e->cpu = 0;
	if (e->sizes)
		ap_size_pred_reset(e->sizes);
	return 1 + ap_put_uv(p + 1, q);
}

/* TIME up to quantum q (> e->q), for a payload in rows. */
static inline size_t ap_enc_time(struct ap_evenc *e, uint8_t *p, uint64_t q)
{
	p[0] = AP_EV_TIME;
	size_t k = 1 + ap_put_uv(p + 1, q - e->q);
	e->q = q;
	return k;
}

/* TIME in the times column of a payload in columns, as a pair the column
 * is made of (ap_enc_time_planes): after `skip` more event records the
 * quantum becomes q (> e->q). At most 2 * AP_VARINT_MAX bytes. skip is
 * below 2^24 (a payload's records are: AP_CHUNK_MAX_PAYLOAD). */
static inline size_t ap_enc_time_col(struct ap_evenc *e, uint8_t *p, uint64_t skip, uint64_t q)
{
	size_t k = ap_put_uv(p, skip);
	k += ap_put_uv(p + k, q - e->q);
	e->q = q;
	return k;
}

/* The times column (docs/trace-format.md, "EVENTS in columns") from the
 * len bytes of pairs ap_enc_time_col wrote: `uv n`, the n skips' low
 * bytes, then their second and their third bytes, then the n quantum
 * steps as varints. How many records a step holds is noise: its low byte
 * is any, its high byte one of a few, and zstd packs bytes of one kind
 * apart better (bench/realloc: 3,395 -> 3,103 bytes of EVENTS). Writes
 * at most 2 * len + AP_VARINT_MAX bytes to out; returns how many. */
static inline size_t ap_enc_time_planes(const uint8_t *pairs, size_t len, uint8_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += !(pairs[i] & 0x80); /* (two varints a pair) */
	n /= 2;
	size_t k = ap_put_uv(out, n);
	uint8_t *plane = out + k, *steps = plane + 3 * n, *s = steps;
	const uint8_t *p = pairs, *end = pairs + len;
	for (size_t i = 0; i < n; i++) {
		uint64_t skip = 0, dq = 0;
		(void)ap_get_uv(&p, end, &skip);
		(void)ap_get_uv(&p, end, &dq);
		plane[i] = (uint8_t)skip;
		plane[n + i] = (uint8_t)(skip >> 8);
		plane[2 * n + i] = (uint8_t)(skip >> 16);
		s += ap_put_uv(s, dq);
	}
	return (size_t)(s - out);
}

/* One ALLOC, FREE or REALLOC record (docs/trace-format.md, "EVENTS
 * payload"). */
struct ap_evrec {
	unsigned type;	/* AP_EV_ALLOC, AP_EV_FREE or AP_EV_REALLOC */
	unsigned kind;	/* AP_KIND_* (FREE: 0) */
	uint32_t cpu;
	uint64_t addr;	/* ALLOC: the block; FREE, REALLOC: the (old) block */
	uint64_t addr2; /* REALLOC: the new block */
	uint64_t size;
	uint32_t stack;
	unsigned flags; /* REALLOC: AP_RF_NEW_SAMPLED, AP_RF_OLD_TRACKED */
	bool by_ref;	/* FREE, REALLOC: the (old) block is named by `ref`, not its address */
	uint64_t ref;	/* its distance, or (AP_CHUNK_F_INDEX) its index step */
	bool ref_tid;	/* (AP_CHUNK_F_INDEX) another thread's: its tid follows */
	uint32_t tid;
	bool anon;	/* ALLOC, REALLOC: the new block is anonymous (no address) */
	uint8_t gap;	/* ap_gap_code of the program's time before it (e->gaps) */
};

/* The size field of r at *cs: the size, or (e->sizes, when `sized`) its
 * difference from the size predicted at its stack. */
static inline __attribute__((always_inline)) void ap_enc_size(struct ap_evenc *e, uint8_t **cs,
							       const struct ap_evrec *r, bool sized)
{
	if (!sized || !e->sizes) {
		*cs += ap_put_uv(*cs, r->size);
		return;
	}
	*cs += ap_put_sv(*cs, (int64_t)(r->size - ap_size_pred_get(e->sizes, r->stack)));
	ap_size_pred_put(e->sizes, r->stack, r->size);
}

/* Writes record r: the tag, cpu, stack and REALLOC flags at *c0, address
 * fields at *ca, distances at *cr, sizes at *cs, advancing each. A payload
 * in rows passes the same cursor four times; in columns
 * (AP_CHUNK_F_COLUMNS) each cursor has its column (cr the same as ca
 * without AP_CHUNK_F_REFS), and each takes at most AP_EV_MAX_REC bytes.
 * TIME and SYNC come before, from ap_enc_time / ap_enc_sync (rows) or the
 * times column (columns). sized: whether e->sizes may be set (false for
 * rows, which then skip the test; ap_enc_event passes true). */
static inline __attribute__((always_inline)) void
ap_enc_event_sized(struct ap_evenc *e, uint8_t **c0, uint8_t **ca, uint8_t **cr, uint8_t **cs,
		   const struct ap_evrec *r, bool sized)
{
	uint8_t tag = AP_TAG(r->type, r->kind);
	bool cpu_change = r->cpu != e->cpu;
	if (cpu_change)
		tag |= AP_TAG_CPU;
	if (r->type == AP_EV_ALLOC ? r->anon : r->by_ref)
		tag |= AP_TAG_REF;
	*(*c0)++ = tag;
	if (cpu_change) {
		*c0 += ap_put_uv(*c0, r->cpu);
		e->cpu = r->cpu;
	}
	if (e->gaps)
		*(*c0)++ = r->gap;
	/* every address field moves prev_addr; a distance does not */
	switch (r->type) {
	case AP_EV_ALLOC:
		if (!r->anon) {
			*ca += ap_put_addr(*ca, r->addr, e->prev_addr);
			e->prev_addr = r->addr;
		}
		ap_enc_size(e, cs, r, sized);
		*c0 += ap_put_uv(*c0, r->stack);
		break;
	case AP_EV_FREE:
	case AP_EV_REALLOC:
		if (r->by_ref) {
			*cr += ap_put_uv(*cr, r->ref);
			if (r->ref_tid)
				*cr += ap_put_uv(*cr, r->tid);
		} else {
			*ca += ap_put_addr(*ca, r->addr, e->prev_addr);
			e->prev_addr = r->addr;
		}
		if (r->type == AP_EV_FREE)
			break;
		*c0 += ap_put_uv(*c0, (r->flags & ~AP_RF_NEW_ANON) | (r->anon ? AP_RF_NEW_ANON : 0));
		if (!r->anon) {
			*ca += ap_put_addr(*ca, r->addr2, e->prev_addr);
			e->prev_addr = r->addr2;
		}
		ap_enc_size(e, cs, r, sized);
		*c0 += ap_put_uv(*c0, r->stack);
		break;
	}
}

static inline __attribute__((always_inline)) void
ap_enc_event(struct ap_evenc *e, uint8_t **c0, uint8_t **ca, uint8_t **cr, uint8_t **cs,
	     const struct ap_evrec *r)
{
	ap_enc_event_sized(e, c0, ca, cr, cs, r, true);
}

/* ---- gaps ------------------------------------------------------------ */

/* The codes (ap_gap_code) the compactor gives a thread's windows of gaps
 * (AP_GAP_WINDOW records each, the mean of their gaps). The means jitter
 * from window to window, and a byte that changes at every window costs
 * zstd most of a byte (a tight loop's trace doubled): the code written
 * last is written again while the mean is within half of its value (16
 * ns at least) of it, and what that writes too much or too little is
 * added up and paid back once it passes ap_gapq_slack: in that window,
 * whose code is then the one written again (a debt larger than a window
 * can pay, since a code is not below 0, is paid by the windows after it
 * at that code, 0: not by codes that change at every window). So a
 * loop's windows are long runs of one code; the codes add up to the
 * means to within that slack (plus a mean, while a debt waits for a
 * window to pay it from), and each is within half (or 16 ns) of its
 * mean, the paying ones aside. A mean past AP_GAP_WORK_MAX_NS (not the program's work)
 * starts the sum over. */
#define AP_GAPQ_RESID_MAX 8000

struct ap_gapq {
	int64_t resid;	/* ns the codes wrote less the means, so far */
	int64_t mean;	/* the means' running mean (ns, weight 1/8 a window) */
	uint8_t last;	/* the code written again */
};

/* How far the codes may be from the means before they pay back:
 * AP_GAPQ_RESID_MAX ns, or two of the means' mean. */
static inline int64_t ap_gapq_slack(const struct ap_gapq *q)
{
	return 2 * q->mean > AP_GAPQ_RESID_MAX ? 2 * q->mean : AP_GAPQ_RESID_MAX;
}

static inline uint8_t ap_gapq_code(struct ap_gapq *q, uint64_t ns)
{
	if (ns > AP_GAP_WORK_MAX_NS) {
		q->resid = 0;
		return ap_gap_code(ns);
	}
	int64_t g = (int64_t)ns;
	q->mean += (g - q->mean) / 8;
	uint8_t c = q->last;
	int64_t v = (int64_t)ap_gap_ns(c), band = v / 2 > 16 ? v / 2 : 16;
	if (g < v - band || g > v + band) {
		c = q->last = ap_gap_code(ns);
		v = (int64_t)ap_gap_ns(c);
	}
	int64_t r = q->resid + g - v, slack = ap_gapq_slack(q);
	if (r > slack || r < -slack) {
		c = q->last = ap_gap_code((uint64_t)(g + q->resid > 0 ? g + q->resid : 0));
		r = q->resid + g - (int64_t)ap_gap_ns(c);
	}
	q->resid = r;
	return c;
}

/* ---- distances from a table of recent ALLOCs ------------------------- */

/* The sampler's and the test writer's way to name a freed block by
 * distance: a direct-mapped table of the chunk's recent ALLOCs (and
 * REALLOCs' new blocks), AP_RING_TABLE_SIZE entries, by address. A
 * collision only costs a FREE written with its address. (The compactor
 * sees a whole chunk and finds every distance exactly.) */
struct ap_ring_ent {
	uint64_t addr, ord;
};

struct ap_ring {
	struct ap_ring_ent *ent; /* AP_RING_TABLE_SIZE entries, zeroed at first */
	uint64_t ord_all;	 /* ALLOCs ever put */
	uint64_t ord_base;	 /* ord_all when the chunk began (ap_ring_sync) */
};

static inline struct ap_ring_ent *ap_ring_slot(struct ap_ring *ring, uint64_t addr)
{
	return &ring->ent[(addr >> 4) * 0x9e3779b97f4a7c15ull >> (64 - AP_RING_TABLE_BITS)];
}

/* A new chunk: distances count from here. */
static inline void ap_ring_sync(struct ap_ring *ring)
{
	ring->ord_base = ring->ord_all;
}

static inline void ap_ring_put(struct ap_ring *ring, uint64_t addr)
{
	struct ap_ring_ent *e = ap_ring_slot(ring, addr);
	e->addr = addr;
	e->ord = ++ring->ord_all;
}

/* The distance of the block at addr if it is one of the chunk's last
 * AP_RING ALLOCs and still in the table (its entry is used up), else 0. */
static inline uint64_t ap_ring_take(struct ap_ring *ring, uint64_t addr)
{
	struct ap_ring_ent *e = ap_ring_slot(ring, addr);
	if (e->addr != addr || e->ord <= ring->ord_base || ring->ord_all - e->ord >= AP_RING)
		return 0;
	uint64_t d = ring->ord_all - e->ord + 1;
	e->addr = 0;
	e->ord = 0;
	return d;
}

/* Record r in rows at p, its (old) block named by distance when the ring
 * still holds it (r->ref and r->anon are set here); returns the bytes
 * written, at most AP_EV_MAX_REC. Rows have no sizes by stack
 * (AP_CHUNK_F_SIZES is the compactor's, in columns): e->sizes is not
 * read. */
static inline __attribute__((always_inline)) size_t
ap_enc_event_ring(struct ap_evenc *e, struct ap_ring *ring, uint8_t *p, struct ap_evrec *r)
{
	uint8_t *q = p;
	r->anon = false;
	r->ref = 0;
	if (r->type == AP_EV_FREE || (r->type == AP_EV_REALLOC && (r->flags & AP_RF_OLD_TRACKED)))
		r->ref = ap_ring_take(ring, r->addr);
	r->by_ref = r->ref != 0;
	ap_enc_event_sized(e, &q, &q, &q, &q, r, false);
	if (r->type != AP_EV_FREE)
		ap_ring_put(ring, r->type == AP_EV_ALLOC ? r->addr : r->addr2);
	return (size_t)(q - p);
}

#endif
