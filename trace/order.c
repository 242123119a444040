/* The ordering stage (order.h): the k-way merge of a trace's threads'
 * event streams, and the cross-thread order within a quantum. */
#include "order.h"
#include "decode.h"
#include "heap.h"
#include "trace-int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One thread's events, decoded as the merge asks for them. */
struct stream {
	struct evdec d;
	const uint32_t *chunk; /* this thread's chunk ids, in order */
	size_t nchunk, ci;
	struct ap_event buf[2]; /* the record being handed out (REALLOC: 2) */
	int nbuf, bi;		/* buf[bi] is the stream's head */
	struct ap_order_bufs bufs; /* the current chunk, as the input read it */
	bool has_cur;		    /* a chunk is being decoded (false: none, or given up) */
	uint32_t cur_id;	    /* which */
	struct ap_order_chunk cur;  /* and its payload */
	uint64_t nalloc0;	    /* the thread's allocations before it */
	bool idle;		    /* out of its chunks, out of the merge (following:
				     * back in when it gets more, ap_order_next) */
};

/* ---- cross-thread order within a quantum ----
 *
 * Events carry the time of their quantum, so the merge cannot tell the
 * order of two threads' events in one quantum: a FREE by thread B of a
 * block thread A allocated in that quantum may come first. The merge keeps
 * the addresses of live blocks; a stream whose head is a FREE of an address
 * that is not live, or an ALLOC at an address that is, is held back while
 * other streams still have events in the same quantum, and is let go right
 * after the event that unblocks it (the ALLOC, or the FREE), or when the
 * quantum is over (it was not an ordering problem: a free of a block
 * allocated before the sampler started, say). Each thread's own order is
 * kept. */
struct live_slot {
	uint64_t key;
	uint32_t cnt; /* 0: empty slot */
	uint32_t own; /* the stream of the last ALLOC there */
};

struct live {
	struct live_slot *slot;
	size_t mask, n;
};

static inline size_t live_hash(uint64_t a, size_t mask)
{
	return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 24) & mask;
}

/* a's slot, or the empty one where it would go. */
static inline struct live_slot *live_find(const struct live *l, uint64_t a)
{
	size_t i = live_hash(a, l->mask);
	while (l->slot[i].cnt && l->slot[i].key != a)
		i = (i + 1) & l->mask;
	return &l->slot[i];
}

static void live_alloc(struct live *l, size_t cap)
{
	l->mask = cap - 1;
	l->slot = ap_xcalloc(cap, sizeof(*l->slot));
}

static void live_add(struct live *l, uint64_t a, uint32_t own)
{
	if ((l->n + 1) * 2 > l->mask + 1) {
		struct live o = *l;
		live_alloc(l, (o.mask + 1) * 2);
		for (size_t i = 0; i <= o.mask; i++)
			if (o.slot[i].cnt)
				*live_find(l, o.slot[i].key) = o.slot[i];
		free(o.slot);
	}
	struct live_slot *x = live_find(l, a);
	if (!x->cnt) {
		x->key = a;
		l->n++;
	}
	x->cnt++;
	x->own = own;
}

/* One block at a fewer (none if absent); backward-shift deletion. */
static void live_del(struct live *l, uint64_t a)
{
	struct live_slot *x = live_find(l, a);
	if (!x->cnt || --x->cnt)
		return;
	l->n--;
	size_t i = (size_t)(x - l->slot);
	for (size_t j = (i + 1) & l->mask; l->slot[j].cnt; j = (j + 1) & l->mask) {
		size_t home = live_hash(l->slot[j].key, l->mask);
		/* can j's entry move to the hole at i? (home not in (i, j]) */
		if (((j - home) & l->mask) >= ((j - i) & l->mask)) {
			l->slot[i] = l->slot[j];
			l->slot[j].cnt = 0;
			i = j;
		}
	}
}

/* Would e unblock a head waiting on h? */
static inline bool ev_unblocks(const struct ap_event *e, const struct ap_event *h)
{
	return e->addr == h->addr && e->type != h->type;
}

struct ap_order {
	struct ap_order_input in;
	size_t nstreams;
	uint64_t quantum, anon_min;
	size_t nstacks; /* the stack ids events may use */
	bool started;
	/* ap_order_follow: streams get more chunks and more streams come; only
	 * events before `limit` are handed out (UINT64_MAX: all) */
	bool follow;
	uint64_t limit;
	const struct ap_u64map *tids;
	struct stream *st;
	struct ap_heap_key *heap, *held; /* keys (head time, stream); held: streams
					 * held back */
	size_t nheap, nheld;
	struct live live;
	bool track;
	/* the last ALLOC handed out, not yet in live: most blocks are freed
	 * by the very next event, and then never go in */
	bool pend;
	uint32_t pend_own;
	uint64_t pend_addr;
	struct ap_event *out;	/* the batch: room for AP_EVENTS_BATCH + a chain */
	size_t nout;
	/* frees_own_later's: a stream's next chunk, as the input read it
	 * (chunk la_chunk - 1, 0: none), kept for the next ask */
	struct ap_order_bufs la;
	size_t la_chunk;
	struct ap_order_chunk la_cur;
	bool changed;	 /* a chunk was gone */
	bool bad;	 /* a chunk was corrupt: */
	uint32_t bad_id; /* the first, */
	char why[256];	 /* and why */
};

/* How far frees_own_later looks: records of the stream (its current
 * chunk and the ones after it). */
#define OWN_LOOKAHEAD 256

/* Stream s (its head onwards) in quantum ts: does it free the block at addr
 * (one it allocated) before it allocates at addr again, within ts? Then a
 * FREE of addr by another thread in ts is not of that block, whose address
 * the other thread only saw reused: a block is freed once, and its own
 * thread frees this one. (A thread passing blocks on and freeing its own,
 * all at one address within a quantum, made the merge pair the wrong ones:
 * 1 free in 4,000 unmatched on a 4-thread C++ program.) Looks ahead
 * without consuming: on a copy of the decoder, whose ring slots it writes
 * are put back afterwards (the ring is shared with the real decoder). */
static bool frees_own_later(struct ap_order *m, struct stream *s, uint64_t addr, uint64_t ts)
{
	for (int i = s->bi; i < s->nbuf; i++) {
		const struct ap_event *e = &s->buf[i];
		if (e->ts != ts)
			return false;
		if (e->addr == addr)
			return e->type == AP_EV_FREE;
	}
	struct evdec d = s->d;
	/* (sizes are not looked at: the table and the freed ring stay as they
	 * are) */
	d.sized = d.fring = false;
	d.fstack = NULL;
	d.fsize = NULL;
	/* ca, cs and cg point into the decoder itself */
	d.ca = s->d.ca == &s->d.c1 ? &d.c1 : &d.c0;
	d.cs = s->d.cs == &s->d.c2 ? &d.c2 : &d.c0;
	d.cg = s->d.cg == &s->d.c5 ? &d.c5 : &d.c0;
	struct {
		size_t slot;
		uint64_t old;
	} saved[OWN_LOOKAHEAD];
	int nsaved = 0;
	bool own = false;
	size_t ci = s->ci; /* the stream's next chunk */
	for (int steps = 0; steps < OWN_LOOKAHEAD; steps++) {
		/* an ALLOC next would grow the ring (reallocating it): stop
		 * (REFs by index use no ring) */
		if (!d.index && ring_count(&d) == d.ring_cap && d.ring_cap < AP_RING)
			break;
		size_t slot = d.index ? 0 : ring_count(&d) & (d.ring_cap - 1);
		uint64_t nal = d.th.nalloc, old = d.index ? 0 : d.ring[slot];
		struct ap_event ev[2];
		const char *why;
		int n = evdec_next(&d, ev, SIZE_MAX, &why, false);
		if (!d.index && d.th.nalloc != nal)
			saved[nsaved++] = (typeof(saved[0])){slot, old};
		if (n == 0 || n == DEC_SKIP)
			continue;
		if (n == DEC_END && ci < s->nchunk) {
			/* on into the thread's next chunk, read apart (where
			 * a chunk ends must not change the merge's order) */
			uint32_t id = s->chunk[ci];
			if (m->la_chunk != (size_t)id + 1) {
				/* (a FREE after another at the chunk's end asks
				 * again: read it once) */
				const char *why_unused;
				bool ok = m->in.chunk(m->in.ctx, id, &m->la, &m->la_cur,
						      &why_unused) == 0;
				m->la_chunk = ok ? (size_t)id + 1 : 0;
			}
			ci++;
			const char *why_unused;
			d.pred = NULL; /* (the stream's size table stays as it is) */
			if (m->la_chunk &&
			    evdec_start(&d, m->la_cur.payload, m->la_cur.len, s->d.thread,
					m->quantum, m->la_cur.columns, &why_unused) == 0)
				continue;
			break;
		}
		if (n < 0)
			break;
		int k;
		for (k = 0; k < n; k++)
			if (ev[k].ts != ts || ev[k].addr == addr)
				break;
		if (k < n) {
			own = ev[k].ts == ts && ev[k].type == AP_EV_FREE;
			break;
		}
	}
	while (nsaved--)
		s->d.ring[saved[nsaved].slot] = saved[nsaved].old;
	return own;
}


/* Chunk id is corrupt: the first such is kept (ap_order_error). */
static void order_bad(struct ap_order *m, uint32_t id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void order_bad(struct ap_order *m, uint32_t id, const char *fmt, ...)
{
	if (m->bad)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->why, sizeof(m->why), fmt, ap);
	va_end(ap);
	m->bad = true;
	m->bad_id = id;
}

/* Stream s's chunk ended: true if it holds what its counts say (a chunk
 * pass 1 decoded holds it). */
static bool chunk_end_ok(struct ap_order *m, struct stream *s)
{
	const struct ap_order_chunk *c = &s->cur;
	const struct evdec *d = &s->d;
	if (!s->has_cur || !c->counted)
		return true;
	if ((c->columns & AP_CHUNK_F_COLUMNS) && !evdec_columns_done(d)) {
		order_bad(m, s->cur_id, "columns of a size the records do not use");
		return false;
	}
	if (d->nrec != c->want.records || d->nev != c->want.events ||
	    d->th.nalloc - s->nalloc0 != c->want.allocs ||
	    (d->nrec && d->last_q != c->want.last_q)) {
		order_bad(m, s->cur_id,
			     "its counts say %llu records, %llu events and %llu allocations, "
			     "its payload holds %llu, %llu and %llu%s",
			     (unsigned long long)c->want.records, (unsigned long long)c->want.events,
			     (unsigned long long)c->want.allocs, (unsigned long long)d->nrec,
			     (unsigned long long)d->nev,
			     (unsigned long long)(d->th.nalloc - s->nalloc0),
			     d->nrec && d->last_q != c->want.last_q ? ", ending at another time" : "");
		return false;
	}
	return true;
}

/* Stream s's decoder found its chunk corrupt (why): it is said, and the
 * stream ends here (its decoder at the payload's end). */
static void stream_bad(struct ap_order *m, struct stream *s, const char *why)
{
	if (s->has_cur)
		order_bad(m, s->cur_id, "%s (near byte %zu of the payload)", why,
			  (size_t)(s->d.c0.p - s->cur.payload));
	s->has_cur = false;
	s->ci = s->nchunk;
	s->d.c0.p = s->d.c0.end;
}

/* Moves s to its next event (s->buf[s->bi]); false when it has no more. */
static bool stream_advance(struct ap_order *m, struct stream *s)
{
	if (++s->bi < s->nbuf)
		return true;
	for (;;) {
		const char *why;
		int n = s->ci ? evdec_next(&s->d, s->buf, m->nstacks, &why, false) : DEC_END;
		if (n > 0) {
			s->nbuf = n;
			s->bi = 0;
			return true;
		}
		if (n == 0 || n == DEC_SKIP)
			continue; /* a TRACK, TIME or SYNC record */
		/* end of this chunk (DEC_BAD only in one pass 1 did not decode) */
		if (n == DEC_BAD)
			stream_bad(m, s, why);
		else if (!chunk_end_ok(m, s))
			s->ci = s->nchunk;
		bool more = s->ci < s->nchunk;
		uint32_t id = more ? s->chunk[s->ci++] : 0;
		const char *why_start = NULL;
		int rc = more ? m->in.chunk(m->in.ctx, id, &s->bufs, &s->cur, &why_start) : 1;
		if (rc == 0) {
			if ((s->cur.columns & AP_CHUNK_F_SIZES) && !s->d.pred)
				s->d.pred = ap_xcalloc(1, sizeof(*s->d.pred));
			s->d.nrec = s->d.nev = s->d.last_q = 0;
			s->nalloc0 = s->d.th.nalloc;
			s->has_cur = true;
			s->cur_id = id;
			if (evdec_start(&s->d, s->cur.payload, s->cur.len, s->d.thread, m->quantum,
					s->cur.columns, &why_start) == 0)
				continue;
			rc = -1;
		}
		if (rc < 0)
			order_bad(m, id, "%s", why_start);
		else if (more)
			m->changed = true;
		s->ci = s->nchunk;
		s->has_cur = false;
		/* the decoder points into what is freed here: an empty
		 * payload instead, for frees_own_later, which may look
		 * at a stream that has ended */
		static const uint8_t none[1];
		const char *why_unused;
		evdec_start(&s->d, none, 0, s->d.thread, m->quantum, 0, &why_unused);
		free(s->bufs.raw);
		free(s->bufs.in);
		s->bufs = (struct ap_order_bufs){0};
		s->idle = true;
		return false;
	}
}

/* Is an ALLOC at addr at an address no block had before (an anonymous
 * identity: each is a thread's n-th allocation)? */
static inline bool fresh(const struct ap_order *m, uint64_t addr)
{
	return addr >= m->anon_min;
}

/* live, as the merge hands out e (of stream si). An ALLOC waits in pend;
 * a FREE at its address right after it cancels it out (the set is as if
 * both had gone through it: a block there before it is owned by pend's
 * stream). */
static inline void live_track(struct ap_order *m, const struct ap_event *e, size_t si)
{
	if (m->pend) {
		if (e->type != AP_EV_ALLOC && e->addr == m->pend_addr) {
			m->pend = false;
			if (!fresh(m, e->addr)) {
				struct live_slot *x = live_find(&m->live, e->addr);
				if (x->cnt)
					x->own = m->pend_own;
			}
			return;
		}
		live_add(&m->live, m->pend_addr, m->pend_own);
	}
	m->pend = e->type == AP_EV_ALLOC;
	if (m->pend) {
		m->pend_addr = e->addr;
		m->pend_own = (uint32_t)si;
	} else {
		live_del(&m->live, e->addr);
	}
}

/* Must stream si's head e wait? A FREE waits for a live block at its
 * address that its own thread does not free later in the quantum; an
 * ALLOC, for its address to be free. */
static bool ev_blocked(struct ap_order *m, size_t si, const struct ap_event *e)
{
	uint32_t c, own;
	if (e->type == AP_EV_ALLOC && fresh(m, e->addr))
		return false;
	if (m->pend && m->pend_addr == e->addr) {
		c = 1; /* (and those in live) */
		own = m->pend_own;
	} else {
		const struct live_slot *x = live_find(&m->live, e->addr);
		c = x->cnt;
		own = x->own;
	}
	if (e->type != AP_EV_FREE)
		return c != 0;
	return c == 0 || (own != si && frees_own_later(m, &m->st[own], e->addr, e->ts));
}

/* Does stream si, out of the heap, keep its turn with the next event h:
 * would the heap hand h out next, and ap_order_next not hold it back? */
static inline bool turn_keeps(struct ap_order *m, size_t si, const struct ap_event *h)
{
	return !m->nheld && m->nheap && m->nout < AP_EVENTS_BATCH && h->ts < m->limit &&
	       (h->ts < m->heap[0].ts ||
		(h->ts == m->heap[0].ts && si < m->heap[0].id && !ev_blocked(m, si, h)));
}

/* Stream si's turn, its head just handed out and none held: its records
 * decoded straight into the batch while it keeps the turn. Leaves its next
 * head in s->buf; false when it has no more. */
static bool stream_turn(struct ap_order *m, size_t si)
{
	struct stream *s = &m->st[si];
	while (m->nout < AP_EVENTS_BATCH) {
		struct ap_event *ev = m->out + m->nout;
		const char *why;
		int n = evdec_next(&s->d, ev, m->nstacks, &why, false);
		if (n == 0 || n == DEC_SKIP)
			continue;
		if (n == DEC_BAD)
			stream_bad(m, s, why);
		if (n < 0)
			break; /* the chunk's end */
		for (int k = 0; k < n; k++) {
			if (!turn_keeps(m, si, &ev[k])) {
				/* (ev[0] of 2 handed out: the head is buf[1]) */
				memcpy(s->buf, ev, (size_t)n * sizeof(*ev));
				s->nbuf = n;
				s->bi = k;
				return true;
			}
			live_track(m, &ev[k], si);
			m->nout++;
		}
	}
	s->nbuf = s->bi = 0;
	return stream_advance(m, s);
}

/* Hands out stream si's head, then the heads of held streams it unblocks
 * (and those theirs); each goes back into the heap with its next event.
 * si must not be in the heap. */
static void merge_emit(struct ap_order *m, size_t si)
{
	for (;;) {
		struct stream *s = &m->st[si];
		struct ap_event e = s->buf[s->bi];
		m->out[m->nout++] = e;
		if (m->track)
			live_track(m, &e, si);
		/* its next still comes before every other stream's head (a
		 * thread's turn): at once, as the heap would give it */
		bool more = m->nheap && !m->nheld && s->bi + 1 >= s->nbuf ? stream_turn(m, si)
									  : stream_advance(m, s);
		if (more && turn_keeps(m, si, &s->buf[s->bi]))
			continue;
		if (more)
			ap_heap_push(m->heap, &m->nheap, (struct ap_heap_key){s->buf[s->bi].ts, si});
		size_t k;
		int own = -1; /* frees_own_later(s, ...), asked once */
		for (k = 0; k < m->nheld; k++) {
			struct stream *w = &m->st[m->held[k].id];
			if (!ev_unblocks(&e, &w->buf[w->bi]))
				continue;
			if (e.type != AP_EV_ALLOC)
				break;
			if (own < 0)
				own = more && frees_own_later(m, s, e.addr, e.ts);
			if (!own)
				break;
		}
		if (k == m->nheld)
			return;
		si = m->held[k].id;
		m->held[k] = m->held[--m->nheld];
	}
}

/* Lets the earliest held stream go: its head is handed out as it is. */
static void merge_release(struct ap_order *m)
{
	size_t best = 0;
	for (size_t k = 1; k < m->nheld; k++)
		if (ap_heap_less(&m->held[k], &m->held[best]))
			best = k;
	size_t si = m->held[best].id;
	m->held[best] = m->held[--m->nheld];
	merge_emit(m, si);
}

struct ap_order *ap_order_new(const struct ap_order_input *in, size_t nstreams, uint64_t quantum,
			      size_t nstacks, uint64_t anon_min, const struct ap_u64map *tids)
{
	size_t n = nstreams ? nstreams : 1;
	struct ap_order *m = ap_xcalloc(1, sizeof(*m));
	m->in = *in;
	m->nstreams = nstreams;
	m->quantum = quantum;
	m->nstacks = nstacks;
	m->anon_min = anon_min;
	m->limit = UINT64_MAX;
	m->tids = tids;
	m->st = ap_xcalloc(n, sizeof(*m->st));
	m->heap = ap_xmalloc(n * sizeof(*m->heap));
	m->held = ap_xmalloc(n * sizeof(*m->held));
	/* a chain of unblocked held streams is emitted whole */
	m->out = ap_xmalloc((AP_EVENTS_BATCH + nstreams + 2) * sizeof(*m->out));
	for (size_t i = 0; i < nstreams; i++) {
		m->st[i].d.tids = tids;
		m->st[i].d.fring = true;
		m->st[i].d.anon_min = anon_min;
		m->st[i].d.thread = (uint32_t)i;
	}
	return m;
}

void ap_order_add(struct ap_order *m, size_t stream, const uint32_t *chunks, size_t n)
{
	m->st[stream].chunk = chunks;
	m->st[stream].nchunk = n;
}

/* Every stream's first event, into the heap. */
static void order_start(struct ap_order *m)
{
	m->started = true;
	for (size_t i = 0; i < m->nstreams; i++)
		if (stream_advance(m, &m->st[i]))
			ap_heap_push(m->heap, &m->nheap,
				     (struct ap_heap_key){m->st[i].buf[m->st[i].bi].ts, i});
	/* One thread needs no live set: nothing can be out of order (unless
	 * more come: following) */
	m->track = m->nheap > 1 || m->follow;
	if (m->track)
		live_alloc(&m->live, 1024);
}

/* Following: the streams out of their chunks that got more go back into
 * the merge (a new one starts). */
static void order_resume(struct ap_order *m)
{
	for (size_t i = 0; i < m->nstreams; i++) {
		struct stream *s = &m->st[i];
		if (!s->idle || s->ci >= s->nchunk)
			continue;
		s->idle = false;
		if (stream_advance(m, s))
			ap_heap_push(m->heap, &m->nheap, (struct ap_heap_key){s->buf[s->bi].ts, i});
	}
}

ssize_t ap_order_next(struct ap_order *m, const struct ap_event **out)
{
	if (!m->started)
		order_start(m);
	else if (m->follow)
		order_resume(m);
	m->nout = 0;
	*out = m->out;
	while (m->nout < AP_EVENTS_BATCH && !m->bad) {
		if (m->nheld) {
			/* held streams wait only while their quantum has other events */
			uint64_t held_ts = m->held[0].ts;
			for (size_t k = 1; k < m->nheld; k++)
				if (m->held[k].ts < held_ts)
					held_ts = m->held[k].ts;
			if (!m->nheap || m->heap[0].ts > held_ts) {
				merge_release(m);
				continue;
			}
		} else if (m->nheap == 1 && !m->follow) {
			/* the last stream left: straight through, decoded into
			 * the batch (its head, then record after record) */
			struct stream *s = &m->st[m->heap[0].id];
			bool more = true;
			/* (in locals: each event stored would make them loaded
			 * again) */
			struct ap_event *ev = m->out;
			size_t nev = m->nout, nstacks = m->nstacks;
			for (; s->bi < s->nbuf; s->bi++)
				ev[nev++] = s->buf[s->bi];
			while (nev + 2 <= AP_EVENTS_BATCH) {
				const char *why;
				int n = evdec_next(&s->d, ev + nev, nstacks, &why, false);
				if (n > 0) {
					nev += (size_t)n;
					continue;
				}
				if (n == 0 || n == DEC_SKIP)
					continue;
				m->nout = nev;
				if (n == DEC_BAD)
					stream_bad(m, s, why);
				/* the chunk's end: the next one's first record */
				if (!(more = stream_advance(m, s)))
					break;
				for (; s->bi < s->nbuf; s->bi++)
					ev[nev++] = s->buf[s->bi];
			}
			m->nout = nev;
			/* the batch is full: the stream's next head, if any */
			if (more)
				more = stream_advance(m, s);
			if (!more)
				m->nheap = 0;
			else
				m->heap[0].ts = s->buf[s->bi].ts;
			continue;
		}
		if (!m->nheap || m->heap[0].ts >= m->limit)
			break;
		struct ap_heap_key top = ap_heap_pop(m->heap, &m->nheap);
		struct stream *s = &m->st[top.id];
		if (m->track && m->nheap && m->heap[0].ts == top.ts &&
		    ev_blocked(m, top.id, &s->buf[s->bi])) {
			m->held[m->nheld++] = top;
			continue;
		}
		merge_emit(m, top.id);
	}
	return m->bad ? -1 : (ssize_t)m->nout;
}

void ap_order_follow(struct ap_order *m)
{
	m->follow = true;
}

void ap_order_grow(struct ap_order *m, size_t nstreams, size_t nstacks)
{
	m->nstacks = nstacks;
	if (nstreams <= m->nstreams)
		return;
	/* a decoder's column cursors ca, cs and cg point into itself (c0, c1,
	 * c2, c5): where, kept across the move */
	uint8_t *where = ap_xmalloc(m->nstreams + 1);
	for (size_t i = 0; i < m->nstreams; i++)
		where[i] = (uint8_t)((m->st[i].d.ca == &m->st[i].d.c1) |
				     (m->st[i].d.cs == &m->st[i].d.c2) << 1 |
				     (m->st[i].d.cg == &m->st[i].d.c5) << 2);
	m->st = ap_xrealloc(m->st, nstreams * sizeof(*m->st));
	for (size_t i = 0; i < m->nstreams; i++) {
		struct evdec *d = &m->st[i].d;
		d->ca = where[i] & 1 ? &d->c1 : &d->c0;
		d->cs = where[i] & 2 ? &d->c2 : &d->c0;
		d->cg = where[i] & 4 ? &d->c5 : &d->c0;
	}
	free(where);
	m->heap = ap_xrealloc(m->heap, nstreams * sizeof(*m->heap));
	m->held = ap_xrealloc(m->held, nstreams * sizeof(*m->held));
	m->out = ap_xrealloc(m->out, (AP_EVENTS_BATCH + nstreams + 2) * sizeof(*m->out));
	for (size_t i = m->nstreams; i < nstreams; i++) {
		m->st[i] = (struct stream){0};
		m->st[i].d.tids = m->tids;
		m->st[i].d.fring = true;	/* as ap_order_new's streams */
		m->st[i].d.anon_min = m->anon_min;
		m->st[i].d.thread = (uint32_t)i;
		/* (a stream added after the start waits for its chunks) */
		m->st[i].idle = m->started;
	}
	m->nstreams = nstreams;
}

void ap_order_limit(struct ap_order *m, uint64_t limit)
{
	m->limit = limit;
}

const char *ap_order_error(const struct ap_order *m, uint32_t *chunk)
{
	if (!m->bad)
		return NULL;
	*chunk = m->bad_id;
	return m->why;
}

bool ap_order_changed(const struct ap_order *m)
{
	return m->changed;
}

void ap_order_free(struct ap_order *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nstreams; i++) {
		free(m->st[i].d.ring);
		free(m->st[i].d.fstack);
		free(m->st[i].d.fsize);
		free(m->st[i].d.pred);
		free(m->st[i].bufs.raw);
		free(m->st[i].bufs.in);
	}
	free(m->live.slot);
	free(m->held);
	free(m->la.in);
	free(m->la.raw);
	free(m->heap);
	free(m->st);
	free(m->out);
	free(m);
}
