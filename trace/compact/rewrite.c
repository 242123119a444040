/* Rewriting a thread's events (compact-int.h): the sampler's raw EVENTS
 * payloads decoded and held per thread, then re-encoded in one large
 * chunk per thread with the plan: every block only its own thread names
 * written without its address (anonymous), its FREE naming it by the
 * thread's allocation index (AP_CHUNK_F_INDEX) or, on another thread, by
 * (tid, index) (AP_CHUNK_F_XOWN); the times as coarse as the merge
 * allows; the payload in columns, with the sizes predicted by stack where
 * that packs better (AP_CHUNK_F_SIZES). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "compact-int.h"

/* Input bytes per output chunk (the re-encoding is never longer than its
 * input plus a few bytes: far under the format's limit). Larger chunks
 * compressed loop64 no better and cost page faults for the events held. */
#define COMPACT_INPUT (4u << 20)
/* Input held back over all threads: beyond it the biggest pending thread
 * is written (many threads must not hold 4 MiB, ~60 MB of events, each). */
#define COMPACT_HELD (16u << 20)

/* The block at addr was the thread's allocation `index`: it is anonymous
 * (anon_ok), and its FREE will name it by that index. */
static void live_put(struct pending *p, uint64_t addr, uint64_t index)
{
	if (!p->live.slot)
		ap_u64map_init(&p->live, 1024);
	uint32_t pos;
	if (p->nspare) {
		pos = p->spare[--p->nspare];
	} else {
		AP_ALLOC_GROW(p->at, p->nat + 1, p->at_alloc);
		pos = (uint32_t)p->nat++;
	}
	/* another block live at addr (a FREE the sampler did not see): a
	 * FREE ends the latest, the next one the one before */
	p->at[pos] = (struct live_at){index, ap_u64map_push(&p->live, addr, pos)};
}

/* The index of the thread's latest live anonymous block at addr, which is
 * freed now; false if there is none (it is named by its address). */
static bool live_take(struct pending *p, uint64_t addr, uint64_t *index)
{
	struct ap_u64map_slot *sl = p->live.slot ? ap_u64map_find(&p->live, addr) : NULL;
	if (!sl)
		return false;
	uint32_t pos = sl->val;
	*index = p->at[pos].index;
	ap_u64map_pop(&p->live, sl, p->at[pos].older);
	AP_ALLOC_GROW(p->spare, p->nspare + 1, p->spare_alloc);
	p->spare[p->nspare++] = pos;
	return true;
}

/* The REF of a FREE record of the thread at addr (AP_CHUNK_F_INDEX):
 * of another thread's anonymous block, that thread's tid (unless it is
 * the last one's: bit 1) and the index as a step from the index after
 * the last one this thread named of it (AP_CHUNK_F_XOWN); of its own
 * live anonymous one, the index as a step from its `next`; else none (by
 * address). Bit 0 of the field says which. */
static void free_ref(const struct compactor *c, struct pending *p, uint64_t addr,
		     struct ap_evrec *r)
{
	uint64_t ord = p->nfrees++, index;
	r->by_ref = r->ref_tid = false;
	if (p->plan && p->xpos < p->plan->nx && p->plan->x[p->xpos].ordinal == ord) {
		const struct xfree *x = &p->plan->x[p->xpos++];
		const struct thread_plan *owner = &c->plan[x->plan];
		if (bits_get(&owner->keep, x->index))
			return;
		bool same = p->xo.n && p->xo.tid[0] == owner->tid;
		uint64_t *next = ap_xowners_use(&p->xo, owner->tid);
		r->by_ref = true;
		r->ref_tid = !same;
		r->tid = owner->tid;
		r->ref = ap_zigzag((int64_t)(x->index - *next)) << 2 | (same ? 2 : 0) | 1;
		*next = x->index + 1;
		return;
	}
	if (!live_take(p, addr, &index))
		return;
	r->by_ref = true;
	r->ref = ap_zigzag((int64_t)(index - p->next)) << 1;
	p->next = index + 1;
}

/* A new block of the thread at addr, its index counted: anonymous unless
 * the plan keeps its address; in the live map unless another thread
 * ends it. */
static bool new_block(struct pending *p, uint64_t addr)
{
	uint64_t index = p->nalloc++;
	if (p->plan && bits_get(&p->plan->keep, index))
		return false;
	if (!p->plan || !bits_get(&p->plan->xfreed, index))
		live_put(p, addr, index);
	return true;
}

/* Prefetching the live map's slots pays from this many slots on, this
 * many events ahead. */
#define LIVE_PREFETCH_MIN (1u << 16)
#define LIVE_PREFETCH 16

/* The quantum written for event `o` of p's thread (in its order), whose
 * quantum is q. The sampler's quantum (10 us) is fine enough for the
 * merge to order the events of several threads; the times themselves
 * need no more than the step the sampler keeps with one thread (HEADER
 * time_step_ns, 1 ms), and the merge needs only how the events of
 * different threads compare: <, = or >. So the events get new quanta,
 * computed over the merged order by compact_plan: never later than their
 * own, never a step earlier or more (rounded down to a step, but not
 * below the quantum after the event before them), equal across threads
 * where they were equal (a run's head and tail), and one more than the
 * event before at every switch of thread. Two threads taking turns then
 * step by 2, and a TIME costs little (what is left is how many events
 * each turn has): python3's threads under
 * its GIL wrote 38 K of times per thread, now 12 K. With one thread
 * every time is rounded down to a step. The merge orders every event as
 * before (its decisions compare times of different threads only). */
static uint64_t coarse_q(const struct compactor *c, struct pending *p, uint64_t o, uint64_t q)
{
	if (c->step <= 1)
		return q;
	uint64_t r = q - q % c->step;
	if (!c->threads)
		return r;
	const struct thread_plan *pl = p->plan;
	struct run *run = &p->run;
	while (o >= run->to)
		if (!plan_run_next(pl, &p->rpos, run))
			return q; /* (no runs: times kept) */
	if ((run->flags & RUN_HEAD) && q == run->qh)
		return run->vm - 1;
	if ((run->flags & RUN_TAIL) && q == run->qt)
		return run->vt;
	return r > run->vm ? r : run->vm;
}

/* One thread's pending events as one EVENTS payload in five columns (six
 * with gaps: col[6], a code per AP_GAP_WINDOW records, AP_CHUNK_F_GAPS)
 * (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
 * AP_CHUNK_F_XOWN): every block
 * only its own thread names is anonymous, and its FREE, in this chunk or
 * a later one, names it by its index. The sizes are written both ways,
 * predicted by stack (col[2]) and not (col[5]); the payload takes the
 * column that compresses smaller in a trial, and returns the chunk's
 * flags (AP_CHUNK_F_SIZES with the first). A call site's sizes repeat or
 * step (3 KB instead of 184 KB on handoff), random sizes do not (a
 * difference of two random sizes costs more than either). */
static unsigned encode(struct compactor *c, struct pending *p, struct ap_chunk_counts *counts)
{
	struct bytes *col = c->col;
	for (int k = 0; k < 7; k++)
		col[k].len = 0;
	size_t nrec = 0, last_step = 0, nalloc = 0;
	if (!c->sizes)
		c->sizes = ap_xcalloc(1, sizeof(*c->sizes));
	struct ap_evenc enc = {.sizes = c->sizes};
	uint64_t wsum = 0, wn = 0; /* the gaps' window so far */
	col[0].len += ap_enc_sync(&enc, room(&col[0], AP_EV_MAX_REC),
				  coarse_q(c, p, p->base, p->ev[0].ts / c->quantum));
	for (size_t i = 0; i < p->nev; i++) {
		const struct ap_event *e = &p->ev[i];
		/* a map of many live blocks misses the caches at every probe:
		 * ask for the slot of an event a few ahead (as ap_replay does) */
		if (p->live.slot && p->live.mask >= LIVE_PREFETCH_MIN && i + LIVE_PREFETCH < p->nev)
			ap_u64map_prefetch(&p->live, p->ev[i + LIVE_PREFETCH].addr);
		uint64_t eq = coarse_q(c, p, p->base + i, e->ts / c->quantum);
		if (eq > enc.q) { /* (a time going back stays at the later one) */
			col[3].len += ap_enc_time_col(&enc, room(&col[3], 2 * AP_VARINT_MAX),
						      nrec - last_step, eq);
			last_step = nrec;
		}
		nrec++;
		/* a REALLOC: the FREE of its old block (if tracked), then the ALLOC */
		const struct ap_event *old = NULL, *a = e;
		if (e->type == AP_EV_FREE && (e->flags & AP_EVF_FROM_REALLOC) && i + 1 < p->nev &&
		    (e[1].flags & AP_EVF_REALLOC)) {
			old = e;
			a = &e[1];
			i++;
		}
		struct ap_evrec r = {.type = (a->flags & AP_EVF_REALLOC) ? AP_EV_REALLOC : a->type,
				     .cpu = e->cpu,
				     .addr = a->addr,
				     .size = a->size,
				     .stack = a->stack};
		nalloc += r.type != AP_EV_FREE;
		switch (r.type) {
		case AP_EV_ALLOC:
			r.kind = a->kind;
			r.anon = new_block(p, a->addr);
			break;
		case AP_EV_FREE:
			free_ref(c, p, a->addr, &r);
			break;
		case AP_EV_REALLOC:
			r.kind = a->kind;
			r.flags = (a->flags & AP_EVF_SAMPLED) ? AP_RF_NEW_SAMPLED : 0;
			if (old) {
				r.flags |= AP_RF_OLD_TRACKED;
				free_ref(c, p, old->addr, &r);
			}
			r.anon = new_block(p, a->addr);
			/* an untracked old block: its address does not matter */
			r.addr = old ? old->addr : enc.prev_addr;
			r.addr2 = a->addr;
			break;
		}
		uint8_t *c0 = room(&col[0], AP_EV_MAX_REC), *s0 = c0;
		uint8_t *c1 = room(&col[1], AP_EV_MAX_REC), *s1 = c1;
		uint8_t *c2 = room(&col[2], AP_EV_MAX_REC), *s2 = c2;
		uint8_t *c4 = room(&col[4], AP_EV_MAX_REC), *s4 = c4;
		ap_enc_event(&enc, &c0, &c1, &c4, &c2, &r);
		if (c->gaps) {
			/* the record's gap (its first event's) in its window */
			wsum += ap_gap_work_ns(e->gap);
			if (++wn == AP_GAP_WINDOW || i + 1 == p->nev) {
				*room(&col[6], 1) = ap_gapq_code(&p->gq, wsum / wn);
				col[6].len++;
				wsum = wn = 0;
			}
		}
		if (r.type != AP_EV_FREE)
			col[5].len += ap_put_uv(room(&col[5], AP_VARINT_MAX), r.size);
		col[0].len += (size_t)(c0 - s0);
		col[1].len += (size_t)(c1 - s1);
		col[2].len += (size_t)(c2 - s2);
		col[4].len += (size_t)(c4 - s4);
	}
	*counts = (struct ap_chunk_counts){nrec, p->nev, nalloc, enc.q};
	unsigned flags = AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
			 AP_CHUNK_F_SIZES | AP_CHUNK_F_XOWN | (c->gaps ? AP_CHUNK_F_GAPS : 0);
	if (compact_trial_size(c, col[5].b, col[5].len) <
	    compact_trial_size(c, col[2].b, col[2].len)) {
		struct bytes plain = col[5];
		col[5] = col[2];
		col[2] = plain;
		flags &= ~AP_CHUNK_F_SIZES;
	}
	struct bytes *out = &c->payload;
	out->len = 0;
	put_uv(out, col[1].len);
	put_uv(out, col[2].len);
	put_uv(out, col[3].len);
	put_uv(out, col[4].len);
	if (c->gaps)
		put_uv(out, col[6].len);
	for (int k = 0; k < 5; k++)
		put_bytes(out, c->col[k].b, c->col[k].len);
	if (c->gaps)
		put_bytes(out, c->col[6].b, c->col[6].len);
	return flags;
}

/* A pending thread written out keeps what its later chunks need (its
 * counts, its live anonymous blocks) and nothing else: its event array
 * goes to c->spare_ev (the largest one is kept, for the next thread that
 * needs one), and a live map with no block left goes. Memory then
 * follows the events held and the blocks live, not every thread the
 * program ever had (2 MiB each: 2,000 short threads took 4.2 GB). */
static void pending_shrink(struct compactor *c, struct pending *p)
{
	if (p->ev && p->alloc > c->spare_alloc) {
		free(c->spare_ev);
		c->spare_ev = p->ev;
		c->spare_alloc = p->alloc;
	} else {
		free(p->ev);
	}
	p->ev = NULL;
	p->alloc = 0;
	if (p->live.slot && !p->live.n) {
		ap_u64map_release(&p->live);
		memset(&p->live, 0, sizeof(p->live));
		free(p->at);
		free(p->spare);
		p->at = NULL;
		p->spare = NULL;
		p->nat = p->at_alloc = p->nspare = p->spare_alloc = 0;
	}
}

static int flush_pending(struct compactor *c, struct pending *p)
{
	if (!p->nev)
		return 0;
	struct ap_chunk_counts counts;
	unsigned flags = encode(c, p, &counts);
	c->held -= p->input;
	p->base += p->nev;
	p->nev = 0;
	p->input = 0;
	int rc = compact_write_compressed(c, AP_CHUNK_EVENTS, (uint8_t)flags, p->tid, &counts,
					  c->payload.b, c->payload.len);
	pending_shrink(c, p);
	return rc;
}

int compact_flush_all(struct compactor *c)
{
	for (size_t i = 0; i < c->npend; i++)
		if (flush_pending(c, &c->pend[i]) < 0)
			return -1;
	return compact_flush_meta(c);
}

/* Room for `n` events in p->ev. Page faults were a quarter of the time
 * (they cost microseconds in a VM): the array is aligned for transparent
 * huge pages, as the reader's is. */
static void reserve_events(struct compactor *c, struct pending *p, size_t n)
{
	if (n <= p->alloc)
		return;
	if (!p->nev && c->spare_ev && n <= c->spare_alloc) {
		/* (written out: its array is the spare) */
		free(p->ev);
		p->ev = c->spare_ev;
		p->alloc = c->spare_alloc;
		c->spare_ev = NULL;
		c->spare_alloc = 0;
		return;
	}
	const size_t huge = 2u << 20;
	size_t alloc = p->alloc * 2 > n ? p->alloc * 2 : n;
	size_t bytes = alloc * sizeof(*p->ev);
	void *m;
	if (bytes < huge) {
		/* a small array: huge pages would make each thread's 2 MiB */
		m = ap_xmalloc(bytes);
	} else {
		bytes = (bytes + huge - 1) & ~(huge - 1);
		if (posix_memalign(&m, huge, bytes) != 0)
			abort();		  /* out of memory, as ap_xmalloc */
		madvise(m, bytes, MADV_HUGEPAGE); /* advice only: failure is fine */
	}
	if (p->nev)
		memcpy(m, p->ev, p->nev * sizeof(*p->ev));
	free(p->ev);
	p->ev = m;
	p->alloc = bytes / sizeof(*p->ev);
}

static struct pending *pending_for(struct compactor *c, uint32_t tid)
{
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].tid == tid)
			return &c->pend[i];
	AP_ALLOC_GROW(c->pend, c->npend + 1, c->pend_alloc);
	struct pending *p = &c->pend[c->npend++];
	memset(p, 0, sizeof(*p));
	p->tid = tid;
	for (size_t i = 0; i < c->nplan; i++)
		if (c->plan[i].tid == tid)
			p->plan = &c->plan[i];
	return p;
}

/* END's `pooled` list (docs/trace-format.md) with the blocks this
 * compactor made anonymous named by their thread and allocation index
 * (their addresses are no longer in the file). Appends the key/value to
 * out (room for 2 * AP_VARINT_MAX per entry of `len` bytes, and 3 more).
 * Returns its length, or 0 if the list does not decode. */
size_t compact_pooled_anon(const struct compactor *c, const uint8_t *s, size_t len, uint8_t *out)
{
	uint8_t *list = ap_xmalloc(2 * AP_VARINT_MAX * len + 1); /* an entry: 1 byte or more in */
	size_t n = 0;
	const uint8_t *p = s, *end = s + len;
	while (p < end) {
		uint64_t x;
		if (ap_get_uv(&p, end, &x) < 0) {
			free(list);
			return 0;
		}
		const struct pending *owner = NULL;
		uint32_t pos = 0;
		for (size_t i = 0; !(x & 1) && i < c->npend && !owner; i++) {
			const struct pending *q = &c->pend[i];
			struct ap_u64map_slot *sl =
			    q->live.slot ? ap_u64map_find(&q->live, x >> 1) : NULL;
			if (sl) {
				owner = q;
				pos = sl->val;
			}
		}
		if (owner) {
			n += ap_put_uv(list + n, owner->at[pos].index << 1 | 1);
			n += ap_put_uv(list + n, owner->tid);
		} else {
			n += ap_put_uv(list + n, x);
		}
	}
	size_t k = ap_put_uv(out, AP_EK_POOLED);
	k += ap_put_uv(out + k, AP_KV_STR);
	k += ap_put_str(out + k, list, n);
	free(list);
	return k;
}

int compact_events(struct compactor *c, size_t off, uint32_t tid, unsigned flags,
		   const uint8_t *payload, uint32_t len)
{
	int rc = 0;
	struct pending *p = pending_for(c, tid);
	if (p->input + len > COMPACT_INPUT)
		rc = flush_pending(c, p);
	/* every event record takes 2 bytes or more */
	reserve_events(c, p, p->nev + len / 2 + 2);
	if (!rc)
		rc = compact_decode_raw(c, off, tid, flags, payload, len, &p->ev, &p->nev,
					&p->alloc);
	p->input += len;
	c->held += len;
	while (!rc && c->held > COMPACT_HELD) {
		struct pending *big = &c->pend[0];
		for (size_t i = 1; i < c->npend; i++)
			if (c->pend[i].input > big->input)
				big = &c->pend[i];
		rc = flush_pending(c, big);
	}
	return rc;
}

void compact_rewrite_release(struct compactor *c)
{
	for (size_t i = 0; i < c->npend; i++) {
		free(c->pend[i].ev);
		if (c->pend[i].live.slot)
			ap_u64map_release(&c->pend[i].live);
		free(c->pend[i].at);
		free(c->pend[i].spare);
	}
	free(c->pend);
	free(c->spare_ev);
	for (int k = 0; k < 7; k++)
		free(c->col[k].b);
	free(c->payload.b);
	free(c->sizes);
}
