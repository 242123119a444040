/* The compactor's plan for a trace of several threads (plan.h): one
 * replay of the trace, as every report replays it, that finds which FREE
 * ends which thread's block, which blocks must keep their address, and
 * the runs of each thread that give its events their new quanta. */
#include "plan.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ap_hash.h"
#include "bytes.h"
#include "compact-int.h"
#include "heap.h"
#include "stacks.h"
#include "ap_replay.h"
#include "ap_trace.h"

static void bits_set(struct bits *b, uint64_t i)
{
	if (i / 64 >= b->n) {
		size_t n = b->n ? b->n : 64;
		while (i / 64 >= n)
			n *= 2;
		b->w = ap_xrealloc(b->w, n * sizeof(*b->w));
		memset(b->w + b->n, 0, (n - b->n) * sizeof(*b->w));
		b->n = n;
	}
	b->w[i / 64] |= 1ull << (i % 64);
}

/* A replay consumer: the allocations of each thread (counted in its own
 * order, as the compactor counts them) and, per object, the thread and
 * index of its current block. A FREE or realloc by another thread is
 * noted (struct xfree): that thread's record names the block by (tid,
 * index). An allocation keeps its address (its keep bit) when another
 * thread's record names its address in the quantum of its allocation or
 * of its free: the reader's merge orders the threads' events within a
 * quantum by what addresses are live (a block freed and its address
 * taken by another thread), and an anonymous block would no longer tell
 * it. */
struct blk {
	uint32_t thread;
	uint64_t index;
};

struct shared_scan {
	uint64_t *nalloc;	  /* per thread index */
	uint64_t *nfrees;	  /* per thread index: its FREE records so far */
	struct thread_plan *plan; /* per thread index */
	struct blk *obj;	  /* per object id: its current block */
	size_t obj_alloc;
	/* the addresses named in the current quantum: the last record's
	 * thread and block (thread UINT32_MAX: a FREE that ended none) */
	uint64_t quantum;
	struct ap_u64map seen;
	struct {
		uint64_t addr;
		uint32_t thread;
		struct blk b;
	} * rec;
	size_t nrec, rec_alloc;
	/* the runs (struct run, coarse_q): every thread's events so far and
	 * its last run's vm; the current run's thread (UINT32_MAX: none yet),
	 * first event, flags, qh and vm; the last event's quantum, and the
	 * new quantum of it and of the run's last event before the current
	 * quantum; whether a time went back (then no run is written) */
	uint64_t *nev, *last_vm;
	uint32_t run_thread;
	uint64_t run_from, run_qh, run_vm;
	unsigned run_flags;
	uint64_t last_q, last_v, before_v;
	bool back;
	uint64_t tq, step; /* the trace's quantum (ns), the compactor's step */
};

static void scan_mark(struct shared_scan *s, struct blk b)
{
	if (b.thread != UINT32_MAX)
		bits_set(&s->plan[b.thread].keep, b.index);
}

/* Thread `thread`'s record names addr, for block b, at time ts. */
static void scan_named(struct shared_scan *s, uint64_t ts, uint64_t addr, uint32_t thread,
		       struct blk b)
{
	if (ts != s->quantum) {
		for (size_t k = 0; k < s->nrec; k++)
			ap_u64map_delete(&s->seen, ap_u64map_find(&s->seen, s->rec[k].addr));
		s->nrec = 0;
		s->quantum = ts;
	}
	bool made;
	struct ap_u64map_slot *sl = ap_u64map_slot_of(&s->seen, addr, &made);
	if (made) {
		AP_ALLOC_GROW(s->rec, s->nrec + 1, s->rec_alloc);
		sl->val = (uint32_t)s->nrec++;
	} else if (s->rec[sl->val].thread != thread) {
		scan_mark(s, s->rec[sl->val].b);
		scan_mark(s, b);
	}
	s->rec[sl->val].addr = addr;
	s->rec[sl->val].thread = thread;
	s->rec[sl->val].b = b;
}

static void scan_began(struct shared_scan *s, const struct ap_event *e, uint32_t obj)
{
	AP_ALLOC_GROW(s->obj, (size_t)obj + 1, s->obj_alloc);
	s->obj[obj] = (struct blk){e->thread, s->nalloc[e->thread]++};
	scan_named(s, e->ts, e->addr, e->thread, s->obj[obj]);
}

static void scan_ended(struct shared_scan *s, const struct ap_event *e,
		       const struct ap_replay_block *ended)
{
	uint64_t addr = ended->addr;
	uint32_t obj = ended->obj;
	uint64_t ord = s->nfrees[e->thread]++;
	struct blk b = s->obj[obj];
	if (b.thread != e->thread) {
		struct thread_plan *pl = &s->plan[e->thread];
		bits_set(&s->plan[b.thread].xfreed, b.index);
		AP_ALLOC_GROW(pl->x, pl->nx + 1, pl->x_alloc);
		pl->x[pl->nx++] = (struct xfree){ord,	      b.index,		b.thread,
						 ended->stack, ended->temporary, ended->size};
	}
	scan_named(s, e->ts, addr, e->thread, b);
}

/* The current run ends before an event (of another thread) in quantum
 * qn (UINT64_MAX: the trace's end). */
static void scan_run_end(struct shared_scan *s, uint64_t qn)
{
	uint32_t th = s->run_thread;
	if (th == UINT32_MAX)
		return;
	struct thread_plan *pl = &s->plan[th];
	unsigned f = s->run_flags;
	uint64_t vt = 0;
	if (qn == s->last_q && !((f & RUN_HEAD) && s->last_q == s->run_qh)) {
		/* its last quantum is shared with the next event's: above the
		 * run's earlier ones */
		f |= RUN_TAIL;
		vt = s->last_q - s->last_q % s->step;
		if (vt < s->before_v + 1)
			vt = s->before_v + 1;
		s->last_v = vt;
	}
	AP_ALLOC_GROW(pl->runs, pl->nruns + 5 * AP_VARINT_MAX, pl->runs_alloc);
	uint8_t *p = pl->runs + pl->nruns;
	p += ap_put_uv(p, s->nev[th] - s->run_from);
	p += ap_put_uv(p, f);
	p += ap_put_uv(p, s->run_vm - s->last_vm[th]);
	if (f & RUN_HEAD)
		p += ap_put_uv(p, s->run_qh - (s->run_vm - 1));
	if (f & RUN_TAIL) {
		p += ap_put_uv(p, s->last_q - s->run_vm);
		p += ap_put_uv(p, vt - s->run_vm);
	}
	pl->nruns = (size_t)(p - pl->runs);
	s->last_vm[th] = s->run_vm;
}

/* Every event: the runs, and the new quantum (coarse_q) of each. */
static void scan_event(void *ctx, size_t i, const struct ap_event *e)
{
	struct shared_scan *s = ctx;
	uint64_t q = e->ts / s->tq;
	bool first = s->run_thread == UINT32_MAX;
	if (!first && q < s->last_q)
		s->back = true;
	if (e->thread != s->run_thread) {
		scan_run_end(s, q);
		s->run_thread = e->thread;
		s->run_from = s->nev[e->thread];
		s->run_flags = !first && q == s->last_q ? RUN_HEAD : 0;
		s->run_qh = s->last_q;
		s->run_vm = first ? 0 : s->last_v + 1;
		s->before_v = s->last_v;
	} else if (q != s->last_q) {
		s->before_v = s->last_v;
	}
	uint64_t v = q - q % s->step;
	if ((s->run_flags & RUN_HEAD) && q == s->run_qh)
		v = s->run_vm - 1;
	else if (v < s->run_vm)
		v = s->run_vm;
	s->last_q = q;
	s->last_v = v;
	s->nev[e->thread]++;
}

static void scan_alloc(void *ctx, size_t i, const struct ap_event *e,
		       const struct ap_replay_block *b)
{
	scan_began(ctx, e, b->obj);
}

static void scan_grow(void *ctx, size_t i, const struct ap_event *e,
		      const struct ap_replay_block *old, const struct ap_replay_block *b)
{
	scan_ended(ctx, e, old);
	scan_began(ctx, e, b->obj);
}

static void scan_free(void *ctx, size_t i, const struct ap_event *e,
		      const struct ap_replay_block *b)
{
	scan_ended(ctx, e, b);
}

static void scan_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	struct shared_scan *s = ctx;
	s->nfrees[e->thread]++;
	scan_named(s, e->ts, e->addr, e->thread, (struct blk){UINT32_MAX, 0});
}

/* The plan's replay of the whole trace (ap_replay: the merge, and every
 * block matched). */
static int plan_replay(const char *path, uint64_t quantum, uint64_t step,
		       struct thread_plan **plan, size_t *nplan, struct ap_error *err)
{
	struct ap_trace *t;
	struct ap_error e;
	if (ap_trace_read(path, &t, &e, NULL, NULL) < 0)
		return ap_error_set(err, "%s", e.msg);
	struct shared_scan s = {
	    .quantum = UINT64_MAX, .run_thread = UINT32_MAX, .tq = quantum, .step = step};
	s.nalloc = ap_xcalloc(t->nthreads + 1, sizeof(*s.nalloc));
	s.nfrees = ap_xcalloc(t->nthreads + 1, sizeof(*s.nfrees));
	s.nev = ap_xcalloc(t->nthreads + 1, sizeof(*s.nev));
	s.last_vm = ap_xcalloc(t->nthreads + 1, sizeof(*s.last_vm));
	s.plan = ap_xcalloc(t->nthreads + 1, sizeof(*s.plan));
	ap_u64map_init(&s.seen, 64);
	/* (the runs only when coarse_q has a step to round to) */
	const struct ap_replay_ops ops = {.blocks = true,
					  .event = step > 1 ? scan_event : NULL,
					  .alloc = scan_alloc,
					  .grow = scan_grow,
					  .free = scan_free,
					  .unmatched = scan_unmatched};
	struct ap_replay_consumer con = {&ops, &s};
	int rc = ap_replay(t, &con, 1, NULL, err);
	scan_run_end(&s, UINT64_MAX);
	for (size_t k = 0; s.back && k <= t->nthreads; k++)
		s.plan[k].nruns = 0; /* (a time went back: kept, every one) */
	*nplan = t->nthreads;
	*plan = s.plan;
	for (size_t k = 0; k < t->nthreads; k++)
		s.plan[k].tid = t->threads[k].tid;
	int changed = ap_trace_changed(t);
	ap_trace_free(t);
	free(s.nalloc);
	free(s.nfrees);
	free(s.nev);
	free(s.last_vm);
	free(s.obj);
	free(s.rec);
	ap_u64map_release(&s.seen);
	if (rc < 0)
		return -1;
	if (changed)
		return ap_error_set(err, "%s: the trace changed while it was compacted", path);
	return 0;
}

/* ---- the plan without the replay ----------------------------------------
 *
 * Most programs' threads keep to addresses of their own (glibc gives each
 * thread its arena; loop64x2 entirely). When no address is named by two
 * threads, the replay finds nothing but the runs:
 * - no FREE ends another thread's block: the replay's rule (a FREE ends
 *   the latest live block at its address) finds the thread's own, as the
 *   rewrite's live map does;
 * - no block keeps its address: no two threads name one in a quantum;
 * - the merge holds no stream back (order.c, ev_blocked) unless its head
 *   is a FREE of an address not live or an ALLOC at one that is (the
 *   thread's own addresses: its own events say which), and even then only
 *   while another thread has events in the same quantum. When none is
 *   held, the merge is a sort by (quantum, thread index), each thread in
 *   its own order, and the runs follow from when each thread has events:
 *   one step per quantum and thread, not one per event.
 * So one pass over the threads' events in file order, decoded once, with
 * no merge and no map of blocks (an address's owner and its live count,
 * and most addresses are freed by the thread's very next event), gives
 * the plan the replay would, or finds it cannot (an address two threads
 * name, a held stream possible, a chunk or record it does not read): then
 * the replay makes it. The thread indexes are the reader's: in the order
 * of each tid's first EVENTS chunk or META THREAD record. */

/* A thread of the quick plan. */
struct qthread {
	uint32_t tid;
	struct ap_decode_thread dec;
	/* its last ALLOC, not yet counted live (most are freed next) */
	bool pend;
	uint64_t pend_addr;
	uint64_t last_addr; /* an address known to be its own */
	/* its quanta: (quantum - the last one, events) per quantum it has
	 * events in, as varints; the current one's quantum and events */
	struct bytes groups;
	uint64_t q, n, prev_q;
	bool any;
	/* the quanta of its events a held stream could be (ascending) */
	uint64_t *odd;
	size_t nodd, odd_alloc;
};

/* An address's thread and its live blocks, in a map value. */
#define Q_LIVE_BITS 8
#define Q_LIVE_MAX ((1u << Q_LIVE_BITS) - 1)
#define Q_THREADS_MAX (1u << 22)

struct quick {
	struct qthread *th;
	size_t nth, th_alloc;
	struct ap_u64map tid_index; /* tid -> index in th */
	struct ap_u64map addr;	    /* address -> thread << Q_LIVE_BITS | live */
	struct ap_event *ev;
	size_t nev, ev_alloc;
	uint64_t quantum;
	bool back; /* a thread's time went back */
};

/* tid's index, the reader's (made if new); -1: too many threads. */
static long quick_thread(struct quick *k, uint32_t tid)
{
	uint32_t i = ap_u64map_get(&k->tid_index, tid);
	if (i != AP_U64MAP_NONE)
		return i;
	if (k->nth >= Q_THREADS_MAX)
		return -1;
	AP_ALLOC_GROW(k->th, k->nth + 1, k->th_alloc);
	k->th[k->nth] = (struct qthread){.tid = tid, .last_addr = UINT64_MAX};
	k->th[k->nth].dec.thread = (uint32_t)k->nth;
	ap_u64map_put(&k->tid_index, tid, (uint32_t)k->nth);
	return (long)k->nth++;
}

/* The THREAD records of a META payload (the reader's thread order);
 * false if a record does not read. */
static bool quick_meta(struct quick *k, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	while (p < end) {
		uint8_t tag = *p++;
		uint64_t v[4];
		if (tag == 0)
			return true; /* padding */
		if (!compact_meta_skip(tag, &p, end, v) ||
		    (tag == AP_META_THREAD && (v[0] > UINT32_MAX || quick_thread(k, (uint32_t)v[0]) < 0)))
			return false;
	}
	return true;
}

/* The thread's current quantum, into its groups. */
static void quick_group_end(struct qthread *q)
{
	if (!q->n)
		return;
	put_uv(&q->groups, q->q - q->prev_q);
	put_uv(&q->groups, q->n);
	q->prev_q = q->q;
	q->n = 0;
}

/* Event e of thread ti, in its own order; false if another thread named
 * its address. */
static bool quick_event(struct quick *k, uint32_t ti, const struct ap_event *e)
{
	struct qthread *q = &k->th[ti];
	uint64_t qn = e->ts / k->quantum;
	if (q->any && qn < q->q)
		k->back = true;
	if (!q->any || qn != q->q) {
		if (!k->back)
			quick_group_end(q);
		q->q = qn;
		q->any = true;
	}
	q->n++;
	uint64_t a = e->addr;
	bool alloc = e->type == AP_EV_ALLOC;
	/* the common case: its last ALLOC, freed now */
	if (q->pend && !alloc && a == q->pend_addr) {
		q->pend = false;
		return true;
	}
	bool made;
	struct ap_u64map_slot *sl = ap_u64map_slot_of(&k->addr, a, &made);
	if (made)
		sl->val = ti << Q_LIVE_BITS;
	else if (a != q->last_addr && sl->val >> Q_LIVE_BITS != ti)
		return false;
	q->last_addr = a;
	/* live blocks at a, as the merge counts them (its pend too) */
	uint32_t live = sl->val & Q_LIVE_MAX;
	bool blocked = alloc ? live || (q->pend && q->pend_addr == a)
			     : !live && !(q->pend && q->pend_addr == a);
	if (blocked && (!q->nodd || q->odd[q->nodd - 1] != qn)) {
		AP_ALLOC_GROW(q->odd, q->nodd + 1, q->odd_alloc);
		q->odd[q->nodd++] = qn;
	}
	if (q->pend) {
		/* the pending ALLOC is live now (a slot of the map may have
		 * moved: looked up again) */
		q->pend = false;
		struct ap_u64map_slot *ps =
		    q->pend_addr == a ? sl : ap_u64map_find(&k->addr, q->pend_addr);
		if ((ps->val & Q_LIVE_MAX) == Q_LIVE_MAX)
			return false; /* (beyond the count: the replay's turn) */
		ps->val++;
	}
	if (alloc) {
		q->pend = true;
		q->pend_addr = a;
	} else if (sl->val & Q_LIVE_MAX) {
		sl->val--;
	}
	return true;
}

/* The threads' quanta merged as the merge orders their events, by
 * (quantum, thread index): the runs (into s, when step > 1); false if a
 * held stream was possible (an odd event in a quantum another thread has
 * events in). */
static bool quick_runs(struct quick *k, struct shared_scan *s)
{
	struct ap_heap_key *heap = ap_xmalloc((k->nth + 1) * sizeof(*heap));
	size_t nheap = 0;
	/* each thread's place in its groups, and its next odd quantum */
	const uint8_t **at = ap_xcalloc(k->nth + 1, sizeof(*at));
	uint64_t *n = ap_xcalloc(k->nth + 1, sizeof(*n));
	size_t *odd = ap_xcalloc(k->nth + 1, sizeof(*odd));
	size_t *now = ap_xmalloc((k->nth + 1) * sizeof(*now));
	bool ok = true;
	for (size_t i = 0; i < k->nth; i++) {
		struct qthread *q = &k->th[i];
		quick_group_end(q);
		at[i] = q->groups.b;
		uint64_t d;
		if (q->groups.len && !ap_get_uv(&at[i], q->groups.b + q->groups.len, &d) &&
		    !ap_get_uv(&at[i], q->groups.b + q->groups.len, &n[i]))
			ap_heap_push(heap, &nheap, (struct ap_heap_key){d, i});
	}
	while (ok && nheap) {
		/* every thread with events in the next quantum, by index */
		uint64_t qn = heap[0].ts;
		size_t nnow = 0;
		while (nheap && heap[0].ts == qn)
			now[nnow++] = ap_heap_pop(heap, &nheap).id;
		for (size_t j = 0; j < nnow; j++) {
			size_t i = now[j];
			struct qthread *q = &k->th[i];
			while (odd[i] < q->nodd && q->odd[odd[i]] < qn)
				odd[i]++;
			if (nnow > 1 && odd[i] < q->nodd && q->odd[odd[i]] == qn)
				ok = false;
			if (s->step > 1) {
				struct ap_event e = {.ts = qn * k->quantum, .thread = (uint32_t)i};
				scan_event(s, 0, &e);
				s->nev[i] += n[i] - 1; /* (the rest change nothing else) */
			}
			const uint8_t *end = q->groups.b + q->groups.len;
			uint64_t d;
			if (at[i] < end && !ap_get_uv(&at[i], end, &d) &&
			    !ap_get_uv(&at[i], end, &n[i]))
				ap_heap_push(heap, &nheap, (struct ap_heap_key){qn + d, i});
		}
	}
	free(heap);
	free(at);
	free(n);
	free(odd);
	free(now);
	return ok;
}

static void quick_release(struct quick *k)
{
	for (size_t i = 0; i < k->nth; i++) {
		free(k->th[i].groups.b);
		free(k->th[i].odd);
	}
	free(k->th);
	free(k->ev);
	ap_u64map_release(&k->tid_index);
	ap_u64map_release(&k->addr);
}

/* One walk of the quick plan: every thread's index, and the events of
 * the threads whose index is `lane` modulo `nlanes`. */
struct qwalk {
	struct quick k;
	const uint8_t *data;
	size_t size;
	unsigned lane, nlanes;
	bool ok;
};

static void *quick_walk(void *arg)
{
	struct qwalk *q = arg;
	struct quick *k = &q->k;
	struct ap_chunk_walk w;
	ap_chunk_walk_init(&w, q->data, q->size);
	bool ok = true;
	while (ok) {
		struct ap_chunk ch;
		char why[160];
		enum ap_chunk_result res = ap_chunk_next(&w, &ch, why, sizeof(why));
		if (res == AP_CHUNK_EOF || res == AP_CHUNK_CUT)
			break; /* (a cut chunk: the reader does not read it either) */
		if (res == AP_CHUNK_BAD) {
			ok = false; /* (the replay says why) */
		} else if (ch.type == AP_CHUNK_META) {
			ok = !ch.flags && quick_meta(k, ch.payload, ch.len);
		} else if (ch.type == AP_CHUNK_EVENTS) {
			/* the sampler's rows only (a trace to transcode) */
			long ti = ch.flags & ~AP_CHUNK_F_GAPS ? -1 : quick_thread(k, ch.tid);
			if (ti < 0 || (unsigned long)ti % q->nlanes != q->lane) {
				ok = ti >= 0;
				continue;
			}
			const char *bad;
			k->nev = 0;
			ok = ap_trace_decode_events(ch.payload, ch.len, ch.flags, k->quantum,
						    &k->th[ti].dec, &k->ev, &k->nev, &k->ev_alloc,
						    &bad) == 0;
			for (size_t i = 0; ok && i < k->nev; i++)
				ok = quick_event(k, (uint32_t)ti, &k->ev[i]);
		}
	}
	ap_chunk_walk_release(&w);
	q->ok = ok;
	return NULL;
}

/* Walks of the quick plan at once (their threads apart), with two CPUs or
 * more: decoding the chunks is most of it. */
#define QLANES 2

/* The plan without the replay (above), from the trace's `size` bytes at
 * `data`: 0 with *plan, 1 if the replay must make it. */
static int plan_quick(const uint8_t *data, size_t size, uint64_t quantum, uint64_t step,
		      struct thread_plan **plan, size_t *nplan)
{
	struct qwalk w[QLANES];
	unsigned nlanes = QLANES;
	if (compact_cpus() < 2)
		nlanes = 1;
	for (unsigned l = 0; l < nlanes; l++) {
		w[l] = (struct qwalk){.k = {.quantum = quantum ? quantum : 1},
				      .data = data,
				      .size = size,
				      .lane = l,
				      .nlanes = nlanes};
		ap_u64map_init(&w[l].k.tid_index, 16);
		ap_u64map_init(&w[l].k.addr, 1024);
	}
	/* lanes 1.. on threads of their own (signals stay with the threads
	 * that were there), lane 0 here */
	pthread_t th[QLANES];
	bool made[QLANES] = {false};
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned l = 1; l < nlanes; l++)
		made[l] = pthread_create(&th[l], NULL, quick_walk, &w[l]) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	quick_walk(&w[0]);
	for (unsigned l = 1; l < nlanes; l++) {
		if (made[l])
			pthread_join(th[l], NULL);
		else
			quick_walk(&w[l]);
	}
	struct quick *k = &w[0].k;
	bool ok = true;
	for (unsigned l = 0; l < nlanes; l++) {
		ok &= w[l].ok;
		k->back |= w[l].k.back;
	}
	/* one thread's addresses are not another's across lanes either;
	 * each lane's threads, their quanta */
	for (unsigned l = 1; ok && l < nlanes; l++) {
		const struct ap_u64map *m = &w[l].k.addr;
		for (size_t i = 0; ok && i <= m->mask; i++)
			ok = m->slot[i].val == AP_U64MAP_NONE || !ap_u64map_find(&k->addr, m->slot[i].key);
		for (size_t i = l; ok && i < k->nth; i += nlanes) {
			struct qthread t = k->th[i];
			k->th[i] = w[l].k.th[i];
			w[l].k.th[i] = t;
		}
	}
	struct shared_scan s = {
	    .quantum = UINT64_MAX, .run_thread = UINT32_MAX, .tq = k->quantum, .step = step};
	s.nev = ap_xcalloc(k->nth + 1, sizeof(*s.nev));
	s.last_vm = ap_xcalloc(k->nth + 1, sizeof(*s.last_vm));
	s.plan = ap_xcalloc(k->nth + 1, sizeof(*s.plan));
	if (ok && k->back) {
		/* a time went back: no runs (as the replay's plan), and
		 * without the quanta in order, no odd event allowed */
		for (size_t i = 0; ok && i < k->nth; i++)
			ok = !k->th[i].nodd;
	} else if (ok) {
		ok = quick_runs(k, &s);
		scan_run_end(&s, UINT64_MAX);
	}
	for (size_t i = 0; i < k->nth; i++)
		s.plan[i].tid = k->th[i].tid;
	free(s.nev);
	free(s.last_vm);
	if (ok) {
		*plan = s.plan;
		*nplan = k->nth;
	} else {
		compact_plan_free(s.plan, k->nth + 1);
	}
	for (unsigned l = 0; l < nlanes; l++)
		quick_release(&w[l].k);
	return ok ? 0 : 1;
}

int compact_plan(const char *path, const uint8_t *data, size_t size, uint64_t quantum,
		 uint64_t step, struct thread_plan **plan, size_t *nplan, struct ap_error *err)
{
	if (data && !getenv("ALLOCPROF_TEST_REPLAY_PLAN") &&
	    plan_quick(data, size, quantum, step, plan, nplan) == 0)
		return 0;
	return plan_replay(path, quantum, step, plan, nplan, err);
}

void compact_plan_free(struct thread_plan *plan, size_t nplan)
{
	for (size_t i = 0; plan && i < nplan; i++) {
		free(plan[i].keep.w);
		free(plan[i].xfreed.w);
		free(plan[i].x);
		free(plan[i].runs);
	}
	free(plan);
}
