/* Encoding a thread's events (compact-int.h): each block only its own
 * thread names written without its address (anonymous), its FREE naming
 * it by the thread's allocation index (AP_CHUNK_F_INDEX) or, on another
 * thread, by (tid, index) (AP_CHUNK_F_XOWN), with the plan; the times as
 * coarse as the merge allows; the payload in columns, the sizes
 * predicted by stack where that packs better (AP_CHUNK_F_SIZES). A chunk
 * is begun, fed its events in one batch or many (the same bytes), and
 * ended. rewrite.c holds the threads' events and decides when. */
#include <stdlib.h>
#include <string.h>

#include "compact-int.h"

/* The block at addr was the thread's allocation `index` (| LIVE_KEPT),
 * of stack and size: its FREE will name it by that index, or by its
 * address if kept. */
static void live_put(struct pending *p, uint64_t addr, uint64_t index, uint32_t stack,
		     uint64_t size)
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
	p->at[pos] = (struct live_at){index, size, ap_u64map_push(&p->live, addr, pos), stack};
}

/* The block held out of the map (struct pending's `held`) put in. */
static void live_settle(struct pending *p)
{
	if (!p->held)
		return;
	p->held = false;
	live_put(p, p->held_addr, p->held_at.index, p->held_at.stack, p->held_at.size);
}

/* A new live block, held out of the map (the one held before goes in):
 * the thread's latest, so the latest at its address too. */
static void live_hold(struct pending *p, uint64_t addr, uint64_t index, uint32_t stack,
		      uint64_t size)
{
	live_settle(p);
	p->held = true;
	p->held_addr = addr;
	p->held_at = (struct live_at){index, size, AP_U64MAP_NONE, stack};
}

/* The thread's latest live block at addr, which is freed now; false if
 * there is none (it is named by its address, and not resolved). */
static bool live_take(struct pending *p, uint64_t addr, struct live_at *out)
{
	if (p->held && p->held_addr == addr) {
		p->held = false;
		*out = p->held_at;
		return true;
	}
	struct ap_u64map_slot *sl = p->live.slot ? ap_u64map_find(&p->live, addr) : NULL;
	if (!sl)
		return false;
	uint32_t pos = sl->val;
	*out = p->at[pos];
	ap_u64map_pop(&p->live, sl, p->at[pos].older);
	AP_ALLOC_GROW(p->spare, p->nspare + 1, p->spare_alloc);
	p->spare[p->nspare++] = pos;
	return true;
}

/* The block a FREE ends (the frees resolved): found or not (an
 * unmatched FREE), its stack and size, and whether it was temporary;
 * `ring`: named by a REF to one of the thread's last AP_FREED_RING
 * allocations, which the reader knows (no field). */
struct freed {
	bool found, temporary, ring;
	uint32_t stack;
	uint64_t size;
};

/* The REF of a FREE record of the thread at addr (AP_CHUNK_F_INDEX):
 * of another thread's anonymous block, that thread's tid (unless it is
 * the last one's: bit 1) and the index as a step from the index after
 * the last one this thread named of it (AP_CHUNK_F_XOWN); of its own
 * live anonymous one, the index as a step from its `next`; else none (by
 * address). Bit 0 of the field says which. The block it ends goes to
 * *fr: the plan's, or the thread's own, temporary when the thread's last
 * event made it (ap_replay.h's rule). */
static void free_ref(const struct compactor *c, struct pending *p, uint64_t addr,
		     struct ap_evrec *r, struct freed *fr)
{
	uint64_t ord = p->nfrees++;
	bool last = p->last_alloc;
	p->last_alloc = false;
	r->by_ref = r->ref_tid = false;
	*fr = (struct freed){0};
	if (p->plan && p->xpos < p->plan->nx && p->plan->x[p->xpos].ordinal == ord) {
		const struct xfree *x = &p->plan->x[p->xpos++];
		const struct thread_plan *owner = &c->plan[x->plan];
		*fr = (struct freed){true, x->temporary, false, x->stack, x->size};
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
	struct live_at a;
	if (!live_take(p, addr, &a))
		return;
	uint64_t index = a.index & ~LIVE_KEPT;
	*fr = (struct freed){true, last && index + 1 == p->nalloc, false, a.stack, a.size};
	if (a.index & LIVE_KEPT)
		return;
	fr->ring = p->nalloc - index < AP_FREED_RING;
	r->by_ref = true;
	r->ref = ap_zigzag((int64_t)(index - p->next)) << 1;
	p->next = index + 1;
}

/* A new block of the thread at addr (its stack and size), its index
 * counted: anonymous unless the plan keeps its address (then false); in
 * the live map unless another thread ends it. */
static bool new_block(struct pending *p, uint64_t addr, uint32_t stack, uint64_t size)
{
	uint64_t index = p->nalloc++;
	bool kept = p->plan && bits_get(&p->plan->keep, index);
	p->last_alloc = true;
	if (!p->plan || !bits_get(&p->plan->xfreed, index))
		live_hold(p, addr, index | (kept ? LIVE_KEPT : 0), stack, size);
	return !kept;
}

/* Column 6 (the frees resolved): the block a FREE ended; nothing for
 * one the reader's ring holds. (Its size is plain: the column is zstd's
 * alone, and a site's sizes repeat there.) */
static void put_freed(struct lane *L, const struct freed *fr)
{
	if (fr->ring)
		return;
	uint8_t *q = room(&L->col[7], 2 * AP_VARINT_MAX), *s = q;
	if (!fr->found) {
		*q++ = 0;
	} else {
		q += ap_put_uv(q, ((uint64_t)fr->stack << 1 | fr->temporary) + 1);
		q += ap_put_uv(q, fr->size);
	}
	L->col[7].len += (size_t)(q - s);
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
static uint64_t coarse_q(const struct compactor *c, struct pending *p, uint64_t o, uint64_t q,
			 uint64_t r)
{
	if (c->step <= 1)
		return q;
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
 * AP_CHUNK_F_XOWN; and the blocks the frees end, col[7]): every block
 * only its own thread names is anonymous, and its FREE, in this chunk or
 * a later one, names it by its index. The sizes are written both ways,
 * predicted by stack (col[2]) and not (col[5]); the payload takes the
 * column that compresses smaller in a trial, and returns the chunk's
 * flags (AP_CHUNK_F_SIZES with the first). A call site's sizes repeat or
 * step (3 KB instead of 184 KB on handoff), random sizes do not (a
 * difference of two random sizes costs more than either). */
void compact_encode_begin(const struct compactor *c, struct lane *L, struct pending *p,
			 uint64_t ts, uint64_t base)
{
	struct bytes *col = L->col;
	struct lane_chunk *k = &L->chunk;
	for (int i = 0; i < 8; i++)
		col[i].len = 0;
	if (!L->sizes)
		L->sizes = ap_xcalloc(1, sizeof(*L->sizes));
	if (!L->zc && !(L->zc = ZSTD_createCCtx()))
		abort(); /* out of memory, as ap_xmalloc */
	*k = (struct lane_chunk){.enc = {.sizes = L->sizes}, .open = true, .last_ts = ts};
	/* the quantum of the last time seen, and it rounded down to a step:
	 * most events share their time with the one before, and skip the two
	 * divisions (loop64x2: 0.1 to 0.3 s of 8.3 s) */
	k->q = ts / c->quantum;
	k->qr = c->step > 1 ? k->q - k->q % c->step : k->q;
	col[0].len += ap_enc_sync(&k->enc, room(&col[0], AP_EV_MAX_REC),
				  coarse_q(c, p, base, k->q, k->qr));
}

/* Events of the chunk begun, event ev[0] the thread's `base`. */
void compact_encode_feed(const struct compactor *c, struct lane *L, struct pending *p,
			const struct ap_event *ev, size_t nev, uint64_t base, bool gaps)
{
	struct bytes *col = L->col;
	struct lane_chunk *k = &L->chunk;
	k->nev += nev;
	for (size_t i = 0; i < nev; i++) {
		const struct ap_event *e = &ev[i];
		/* a map of many live blocks misses the caches at every probe:
		 * ask for the slot of an event a few ahead (as ap_replay does) */
		if (p->live.slot && p->live.mask >= LIVE_PREFETCH_MIN && i + LIVE_PREFETCH < nev)
			ap_u64map_prefetch(&p->live, ev[i + LIVE_PREFETCH].addr);
		if (e->ts != k->last_ts) {
			k->last_ts = e->ts;
			k->q = k->last_ts / c->quantum;
			k->qr = c->step > 1 ? k->q - k->q % c->step : k->q;
		}
		uint64_t eq = coarse_q(c, p, base + i, k->q, k->qr);
		if (eq > k->enc.q) { /* (a time going back stays at the later one) */
			col[3].len += ap_enc_time_col(&k->enc, room(&col[3], 2 * AP_VARINT_MAX),
						      k->nrec - k->last_step, eq);
			k->last_step = k->nrec;
		}
		k->nrec++;
		/* a REALLOC: the FREE of its old block (if tracked), then the ALLOC */
		const struct ap_event *old = NULL, *a = e;
		if (e->type == AP_EV_FREE && (e->flags & AP_EVF_FROM_REALLOC) && i + 1 < nev &&
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
		k->nalloc += r.type != AP_EV_FREE;
		/* the new block's stack: 0 for an unsampled one (the replay's) */
		uint32_t bstack = (a->flags & AP_EVF_SAMPLED) ? a->stack : 0;
		struct freed fr = {0};
		switch (r.type) {
		case AP_EV_ALLOC:
			r.kind = a->kind;
			r.anon = new_block(p, a->addr, bstack, a->size);
			break;
		case AP_EV_FREE:
			free_ref(c, p, a->addr, &r, &fr);
			break;
		case AP_EV_REALLOC:
			r.kind = a->kind;
			r.flags = (a->flags & AP_EVF_SAMPLED) ? AP_RF_NEW_SAMPLED : 0;
			if (old) {
				r.flags |= AP_RF_OLD_TRACKED;
				free_ref(c, p, old->addr, &r, &fr);
			}
			r.anon = new_block(p, a->addr, bstack, a->size);
			/* an untracked old block: its address does not matter */
			r.addr = old ? old->addr : k->enc.prev_addr;
			r.addr2 = a->addr;
			break;
		}
		uint8_t *c0 = room(&col[0], AP_EV_MAX_REC), *s0 = c0;
		uint8_t *c1 = room(&col[1], AP_EV_MAX_REC), *s1 = c1;
		uint8_t *c2 = room(&col[2], AP_EV_MAX_REC), *s2 = c2;
		uint8_t *c4 = room(&col[4], AP_EV_MAX_REC), *s4 = c4;
		ap_enc_event(&k->enc, &c0, &c1, &c4, &c2, &r);
		if (gaps) {
			/* the record's gap (its first event's) in its window (the
			 * chunk's last window: encode_end) */
			k->wsum += ap_gap_work_ns(e->gap);
			if (++k->wn == AP_GAP_WINDOW) {
				*room(&col[6], 1) = ap_gapq_code(&p->gq, k->wsum / k->wn);
				col[6].len++;
				k->wsum = k->wn = 0;
			}
		}
		if (r.type != AP_EV_FREE)
			col[5].len += ap_put_uv(room(&col[5], AP_VARINT_MAX), r.size);
		if (r.type == AP_EV_FREE || (r.flags & AP_RF_OLD_TRACKED))
			put_freed(L, &fr);
		col[0].len += (size_t)(c0 - s0);
		col[1].len += (size_t)(c1 - s1);
		col[2].len += (size_t)(c2 - s2);
		col[4].len += (size_t)(c4 - s4);
	}
}

/* The chunk begun as its payload (L->payload); returns its flags. */
unsigned compact_encode_end(struct lane *L, struct pending *p, bool gaps,
			   struct ap_chunk_counts *counts)
{
	struct bytes *col = L->col;
	struct lane_chunk *k = &L->chunk;
	k->open = false;
	if (gaps && k->wn) {
		*room(&col[6], 1) = ap_gapq_code(&p->gq, k->wsum / k->wn);
		col[6].len++;
	}
	live_settle(p); /* (the map whole for whoever reads it next) */
	*counts = (struct ap_chunk_counts){k->nrec, k->nev, k->nalloc, k->enc.q};
	unsigned flags = AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
			 AP_CHUNK_F_SIZES | AP_CHUNK_F_XOWN | (gaps ? AP_CHUNK_F_GAPS : 0);
	if (compact_trial_size(L->zc, &L->trial, col[5].b, col[5].len) <
	    compact_trial_size(L->zc, &L->trial, col[2].b, col[2].len)) {
		struct bytes plain = col[5];
		col[5] = col[2];
		col[2] = plain;
		flags &= ~AP_CHUNK_F_SIZES;
	}
	struct bytes *out = &L->payload;
	out->len = 0;
	/* the times' pairs as the column's planes (col[3] keeps them) */
	struct bytes *tp = &L->times;
	tp->len = 0;
	tp->len = ap_enc_time_planes(col[3].b, col[3].len,
				     room(tp, 2 * col[3].len + AP_VARINT_MAX));
	put_uv(out, col[1].len);
	put_uv(out, col[2].len);
	put_uv(out, tp->len);
	put_uv(out, col[4].len);
	if (gaps)
		put_uv(out, col[6].len);
	put_uv(out, col[7].len);
	for (int i = 0; i < 5; i++)
		if (i == 3)
			put_bytes(out, tp->b, tp->len);
		else
			put_bytes(out, col[i].b, col[i].len);
	if (gaps)
		put_bytes(out, col[6].b, col[6].len);
	put_bytes(out, col[7].b, col[7].len);
	return flags;
}

size_t compact_encode_bound(const struct lane *L)
{
	const struct bytes *col = L->col;
	/* the lengths, the sizes column either way, the times' planes (at
	 * most twice their pairs), the gaps' last window */
	size_t sizes = col[2].len > col[5].len ? col[2].len : col[5].len;
	return 8 * AP_VARINT_MAX + col[0].len + col[1].len + sizes + 2 * col[3].len + col[4].len +
	       col[6].len + 1 + col[7].len;
}

size_t compact_encode_slice(const struct ap_event *ev, size_t done, size_t n)
{
	size_t m = n - done < COMPACT_SLICE ? n - done : COMPACT_SLICE;
	const struct ap_event *e = &ev[done + m - 1];
	if (done + m < n && e->type == AP_EV_FREE && (e->flags & AP_EVF_FROM_REALLOC) &&
	    (e[1].flags & AP_EVF_REALLOC))
		m++;
	return m;
}

unsigned compact_encode_part(const struct compactor *c, struct lane *L, struct pending *p,
			     const struct ap_event *ev, size_t n, uint64_t base, bool gaps,
			     size_t *done, struct ap_chunk_counts *counts)
{
	compact_encode_begin(c, L, p, ev[*done].ts, base + *done);
	while (*done < n) {
		size_t m = compact_encode_slice(ev, *done, n);
		compact_encode_feed(c, L, p, ev + *done, m, base + *done, gaps);
		*done += m;
		if (compact_encode_bound(L) > COMPACT_PAYLOAD_MAX)
			break;
	}
	return compact_encode_end(L, p, gaps, counts);
}

/* A pending thread written out keeps what its later chunks need (its
 * counts, its live anonymous blocks) and nothing else: its event array
 * goes to c->spare_ev (the largest one is kept, for the next thread that
 * needs one), and a live map with no block left goes. Memory then
 * follows the events held and the blocks live, not every thread the
 * program ever had (2 MiB each: 2,000 short threads took 4.2 GB). */
void compact_live_shrink(struct pending *p)
{
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
