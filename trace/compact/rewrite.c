/* Rewriting a thread's events (compact-int.h): the sampler's raw EVENTS
 * payloads decoded and held per thread, then re-encoded (encode.c) in one
 * large chunk per thread: by the compactor's own thread, by two encoder
 * threads while it decodes, or, streaming, as they are decoded. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "compact-int.h"

/* Input bytes per output chunk where the events are held as jobs
 * (several threads): larger chunks compressed loop64 no
 * better and cost page faults for the events held. */
#define COMPACT_INPUT (4u << 20)
/* ...and where they are fed (fed(): one thread), which holds no events,
 * only the chunk's columns: a chunk's zstd frame costs ~70 bytes (its
 * header, its counts, the frame's start over), and a long run of one
 * thread repeats itself: bench/realloc's trace 5,183 -> 4,761 bytes,
 * loop64 (20 M) 13,149 -> 11,755, sqlite3 125,518 -> 123,702, for 8 MB
 * more of columns while record compacts as the program runs. Half the
 * format's limit, but frees resolved can take more than twice their
 * input: such a chunk is written early (COMPACT_PAYLOAD_MAX). */
#define FED_INPUT (8u << 20)
/* Input held back over all threads: beyond it the biggest pending thread
 * is written (many threads must not hold 4 MiB, ~60 MB of events, each). */
#define COMPACT_HELD (16u << 20)

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
	compact_live_shrink(p);
}

/* ---- encoder threads ----
 *
 * Encoding a thread's events (encode: the live map, the runs, the
 * columns, a trial compression) took 40 % of compacting loop64x2 (200 M
 * events), decoding the sampler's chunks 20 %. With two CPUs or more, up
 * to ENC_MAX threads encode while the compactor's own thread walks the
 * chunks and decodes: a pending thread's events go to them as a job, in
 * order; a job waits while its thread's earlier one is being encoded
 * (the thread's state is the encoding's), and each is written (given to
 * the writer, zwrite.c) when the ones before it are. The bytes are those
 * written without them: every job's encoding depends only on its thread's
 * state and its own events, and the writes keep their order. Whatever the
 * compactor writes or holds back itself waits until every job is written
 * (compact_encoders_drain). */
#define ENC_MAX 2
/* Jobs given and not yet written, at most (each holds up to
 * COMPACT_INPUT of the sampler's chunks decoded: ~40 bytes an event) */
#define EQ (ENC_MAX + 1)
/* Event arrays kept for reuse: as many as circulate between two threads
 * and the jobs (a new one's pages cost their zeroing: 8 % of loop64x2's
 * compaction with EQ + 1) */
#define POOL (EQ + 2)

struct ejob {
	size_t pend; /* index in c->pend */
	struct ap_event *ev;
	size_t nev, alloc;
	uint64_t base;
	bool gaps;
};

struct encoders {
	pthread_t th[ENC_MAX];
	unsigned nth, started; /* threads made, and those that took a lane */
	struct compactor *c;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* any change: a job given, taken, encoded, written */
	struct ejob q[EQ]; /* job k in q[k % EQ] */
	uint64_t given, taken, written;
	bool quit;
	bool failed; /* a write failed (err), or stopped: the rest is dropped */
	struct ap_error err;
	struct lane lane[ENC_MAX];
	/* event arrays of jobs written, for the pending threads' next */
	struct ap_event *pool[POOL];
	size_t pool_alloc[POOL], npool;
};

static void lane_release(struct lane *L)
{
	for (int k = 0; k < 8; k++)
		free(L->col[k].b);
	free(L->times.b);
	free(L->payload.b);
	free(L->sizes);
	ZSTD_freeCCtx(L->zc);
	free(L->trial.b);
	memset(L, 0, sizeof(*L));
}

/* A job's chunk that the rest of its events do not fit in (its payload
 * near the format's limit: compact_encode_part), written in the job's
 * turn (k): the rest is encoded after it, in the same turn. -1: the
 * writing failed, or stopped; nothing more of the job is written. */
static int early_write(struct compactor *c, uint64_t k, struct pending *p, struct lane *L,
		       unsigned flags, const struct ap_chunk_counts *counts)
{
	struct encoders *E = c->enc;
	pthread_mutex_lock(&E->mu);
	while (E->written != k && !E->quit && !E->failed)
		pthread_cond_wait(&E->cv, &E->mu);
	bool go = !E->failed && !E->quit;
	pthread_mutex_unlock(&E->mu);
	if (!go)
		return -1;
	if (compact_write_compressed(c, AP_CHUNK_EVENTS, (uint8_t)flags, p->tid, counts,
				     L->payload.b, L->payload.len, false) == 0)
		return 0;
	pthread_mutex_lock(&E->mu);
	E->failed = true;
	E->err = *c->err;
	pthread_mutex_unlock(&E->mu);
	return -1;
}

/* An encoder thread: the oldest job not taken, once its thread's earlier
 * one is encoded; encoded in its lane; written in its turn. */
static void *enc_main(void *arg)
{
	struct encoders *E = arg;
	struct compactor *c = E->c;
	pthread_mutex_lock(&E->mu);
	struct lane *L = &E->lane[E->started++];
	for (;;) {
		while (!E->quit &&
		       (E->taken == E->given || c->pend[E->q[E->taken % EQ].pend].busy))
			pthread_cond_wait(&E->cv, &E->mu);
		if (E->quit)
			break;
		uint64_t k = E->taken++;
		struct ejob j = E->q[k % EQ];
		struct pending *p = &c->pend[j.pend];
		bool failed = E->failed;
		p->busy = true;
		pthread_mutex_unlock(&E->mu);
		struct ap_chunk_counts counts;
		unsigned flags = 0;
		if (!failed) {
			size_t done = 0;
			flags = compact_encode_part(c, L, p, j.ev, j.nev, j.base, j.gaps, &done,
						    &counts);
			while (done < j.nev && early_write(c, k, p, L, flags, &counts) == 0)
				flags = compact_encode_part(c, L, p, j.ev, j.nev, j.base, j.gaps,
							    &done, &counts);
			compact_live_shrink(p);
		}
		pthread_mutex_lock(&E->mu);
		p->busy = false;
		pthread_cond_broadcast(&E->cv);
		while (E->written != k && !E->quit)
			pthread_cond_wait(&E->cv, &E->mu);
		if (!E->failed && !E->quit) {
			pthread_mutex_unlock(&E->mu);
			int rc = compact_write_compressed(c, AP_CHUNK_EVENTS, (uint8_t)flags,
							  p->tid, &counts, L->payload.b,
							  L->payload.len, false);
			pthread_mutex_lock(&E->mu);
			if (rc < 0) {
				E->failed = true;
				E->err = *c->err;
			}
		}
		if (E->npool < POOL) {
			E->pool[E->npool] = j.ev;
			E->pool_alloc[E->npool++] = j.alloc;
		} else {
			free(j.ev);
		}
		E->written++;
		pthread_cond_broadcast(&E->cv);
	}
	pthread_mutex_unlock(&E->mu);
	return NULL;
}

/* Whether c encodes each sampler chunk's events as it decodes them (the
 * lane's one chunk open, no event arrays held): a stream (it has one
 * core), and the events of one thread, whose chunks are encoded in turn
 * anyway: held as jobs, they took 250 MB to compact bench/realloc's 23 MB
 * raw trace after the exit (five arrays of 40 bytes an event), fed 70 MB
 * (its mapping and the chunks in compression included). The bytes are
 * the same either way. */
static bool fed(const struct compactor *c)
{
	return c->stream || !c->threads;
}

/* The encoder threads, if there are CPUs for them (none when fed, or with
 * ALLOCPROF_COMPACT_NO_THREAD=1); NULL if not. */
static struct encoders *encoders_start(struct compactor *c)
{
	if (fed(c) || compact_cpus() < 2)
		return NULL;
	struct encoders *E = ap_xcalloc(1, sizeof(*E));
	E->c = c;
	pthread_mutex_init(&E->mu, NULL);
	pthread_cond_init(&E->cv, NULL);
	/* (signals stay with the threads that were there, as the writer's) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&E->mu);
	while (E->nth < ENC_MAX && pthread_create(&E->th[E->nth], NULL, enc_main, E) == 0)
		E->nth++;
	pthread_mutex_unlock(&E->mu);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!E->nth) {
		pthread_mutex_destroy(&E->mu);
		pthread_cond_destroy(&E->cv);
		free(E);
		return NULL;
	}
	return E;
}

int compact_encoders_drain(struct compactor *c)
{
	struct encoders *E = c->enc;
	if (!E)
		return 0;
	pthread_mutex_lock(&E->mu);
	while (E->written != E->given)
		pthread_cond_wait(&E->cv, &E->mu);
	bool failed = E->failed;
	if (failed)
		*c->err = E->err;
	pthread_mutex_unlock(&E->mu);
	return failed ? -1 : 0;
}

void compact_encoders_stop(struct compactor *c)
{
	struct encoders *E = c->enc;
	if (!E)
		return;
	pthread_mutex_lock(&E->mu);
	E->quit = true;
	pthread_cond_broadcast(&E->cv);
	pthread_mutex_unlock(&E->mu);
	for (unsigned i = 0; i < E->nth; i++)
		pthread_join(E->th[i], NULL);
	for (uint64_t k = E->taken; k < E->given; k++)
		free(E->q[k % EQ].ev);
	for (size_t i = 0; i < E->npool; i++)
		free(E->pool[i]);
	for (unsigned i = 0; i < ENC_MAX; i++)
		lane_release(&E->lane[i]);
	pthread_mutex_destroy(&E->mu);
	pthread_cond_destroy(&E->cv);
	free(E);
	c->enc = NULL;
}

/* p's events given to the encoder threads as a job (after those given
 * before); p starts over with no array. */
static int give_job(struct compactor *c, struct pending *p)
{
	struct encoders *E = c->enc;
	pthread_mutex_lock(&E->mu);
	while (E->given - E->written >= EQ && !E->failed)
		pthread_cond_wait(&E->cv, &E->mu);
	if (E->failed) {
		*c->err = E->err;
		pthread_mutex_unlock(&E->mu);
		return -1;
	}
	E->q[E->given % EQ] = (struct ejob){(size_t)(p - c->pend), p->ev, p->nev, p->alloc,
					    p->base, c->gaps};
	E->given++;
	pthread_cond_broadcast(&E->cv);
	pthread_mutex_unlock(&E->mu);
	p->ev = NULL;
	p->alloc = 0;
	return 0;
}

/* The chunk open in the lane written (last: the trace's end). */
static int write_fed(struct compactor *c, struct pending *p, bool last)
{
	struct lane *L = &c->lane;
	struct ap_chunk_counts counts;
	unsigned flags = compact_encode_end(L, p, c->gaps, &counts);
	int rc = compact_write_compressed(c, AP_CHUNK_EVENTS, (uint8_t)flags, p->tid, &counts,
					  L->payload.b, L->payload.len, last);
	c->held -= p->input;
	p->input = 0;
	compact_live_shrink(p);
	return rc;
}

/* The n events ev (the thread's p->base the first) fed to the chunk open
 * in the lane (begun if none is), in slices, the chunk written whenever
 * its payload nears the format's limit (never between a realloc's FREE
 * and its ALLOC: one record). Where that happens depends on the events
 * only, so a stream and the whole file write the same chunks. */
static int feed_events(struct compactor *c, struct pending *p, const struct ap_event *ev,
		       size_t n)
{
	struct lane *L = &c->lane;
	for (size_t done = 0; done < n;) {
		size_t m = compact_encode_slice(ev, done, n);
		if (!L->chunk.open)
			compact_encode_begin(c, L, p, ev[done].ts, p->base);
		compact_encode_feed(c, L, p, ev + done, m, p->base, c->gaps);
		p->base += m;
		done += m;
		if (compact_encode_bound(L) > COMPACT_PAYLOAD_MAX && write_fed(c, p, false) < 0)
			return -1;
	}
	return 0;
}

/* Streaming (one thread, no encoder threads): the thread's events are
 * encoded as they are decoded, into the compactor's lane, and only the
 * sampler's chunk in hand is held as events (40 bytes each: a chunk of
 * 4 MiB of input was ~1 M of them, 40-70 MB of fresh memory zeroed per
 * chunk, most of what record spent compacting sqlite3). The bytes are
 * those of encoding the chunk's events at once. A FREE a realloc made
 * that ends the batch waits for its ALLOC (they are one record). */
static int feed_pending(struct compactor *c, struct pending *p)
{
	size_t n = p->nev;
	if (!n)
		return 0;
	const struct ap_event *last = &p->ev[n - 1];
	size_t keep = last->type == AP_EV_FREE && (last->flags & AP_EVF_FROM_REALLOC);
	if (n == keep)
		return 0;
	int rc = feed_events(c, p, p->ev, n - keep);
	if (keep)
		p->ev[0] = p->ev[n - 1];
	p->nev = keep;
	return rc;
}

/* (last: the trace's end, where what is left is written) */
static int flush_fed(struct compactor *c, struct pending *p, bool last)
{
	if (p->nev) {
		int rc = feed_events(c, p, p->ev, p->nev);
		p->nev = 0;
		if (rc < 0)
			return -1;
	}
	return c->lane.chunk.open ? write_fed(c, p, last) : 0;
}

static int flush_pending(struct compactor *c, struct pending *p, bool last)
{
	if (fed(c))
		return flush_fed(c, p, last);
	if (!p->nev)
		return 0;
	if (!c->enc_tried) {
		c->enc_tried = true;
		c->enc = encoders_start(c);
	}
	int rc;
	if (c->enc) {
		rc = give_job(c, p);
	} else {
		rc = 0;
		for (size_t done = 0; !rc && done < p->nev;) {
			struct ap_chunk_counts counts;
			unsigned flags = compact_encode_part(c, &c->lane, p, p->ev, p->nev, p->base,
							     c->gaps, &done, &counts);
			rc = compact_write_compressed(c, AP_CHUNK_EVENTS, (uint8_t)flags, p->tid,
						      &counts, c->lane.payload.b,
						      c->lane.payload.len, false);
		}
		pending_shrink(c, p);
	}
	c->held -= p->input;
	p->base += p->nev;
	p->nev = 0;
	p->input = 0;
	return rc;
}

int compact_flush_all(struct compactor *c)
{
	for (size_t i = 0; i < c->npend; i++)
		if (flush_pending(c, &c->pend[i], true) < 0)
			return -1;
	if (compact_encoders_drain(c) < 0)
		return -1;
	return compact_flush_meta(c);
}

/* Room for `n` events in p->ev. Page faults were a quarter of the time
 * (they cost microseconds in a VM): the array is aligned for transparent
 * huge pages, as the reader's is. A new array is made as large as the
 * largest made before (its pages are touched only as events come): the
 * arrays that circulate between the threads and the jobs (five with two
 * threads) each grew from 1 MiB by doubling, copied and faulted in anew
 * at every step (bench/loop64x2's 40 M events: 30 arrays, 625 MB of
 * fresh pages where 5 now do; clear_page was 23 % of the samples). */
static void reserve_events(struct compactor *c, struct pending *p, size_t n)
{
	if (n <= p->alloc)
		return;
	struct encoders *E = c->enc;
	if (!p->nev && !p->ev && E) {
		/* (the largest array a job is done with: it holds what the
		 * thread's next job will) */
		pthread_mutex_lock(&E->mu);
		size_t best = E->npool;
		for (size_t i = 0; i < E->npool; i++)
			if (E->pool_alloc[i] >= n &&
			    (best == E->npool || E->pool_alloc[i] > E->pool_alloc[best]))
				best = i;
		if (best < E->npool) {
			p->ev = E->pool[best];
			p->alloc = E->pool_alloc[best];
			E->pool[best] = E->pool[--E->npool];
			E->pool_alloc[best] = E->pool_alloc[E->npool];
		}
		pthread_mutex_unlock(&E->mu);
		if (p->ev)
			return;
	}
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
	if (alloc < c->ev_alloc_max)
		alloc = c->ev_alloc_max;
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
	if (p->alloc > c->ev_alloc_max)
		c->ev_alloc_max = p->alloc;
}

static struct pending *pending_for(struct compactor *c, uint32_t tid)
{
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].tid == tid)
			return &c->pend[i];
	/* (the array may move: the encoder threads must be done with it) */
	if (c->npend + 1 > c->pend_alloc && compact_encoders_drain(c) < 0)
		return NULL;
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
			/* (a block that keeps its address is named by it) */
			if (sl && !(q->at[sl->val].index & LIVE_KEPT)) {
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
	if (!p)
		return -1;
	if (p->input + len > (fed(c) ? FED_INPUT : COMPACT_INPUT))
		rc = flush_pending(c, p, false);
	/* every event record takes 2 bytes or more */
	reserve_events(c, p, p->nev + len / 2 + 2);
	if (!rc)
		rc = compact_decode_raw(c, off, tid, flags, payload, len, &p->ev, &p->nev,
					&p->alloc);
	p->input += len;
	c->held += len;
	if (!rc && fed(c))
		rc = feed_pending(c, p);
	while (!rc && c->held > COMPACT_HELD) {
		struct pending *big = &c->pend[0];
		for (size_t i = 1; i < c->npend; i++)
			if (c->pend[i].input > big->input)
				big = &c->pend[i];
		rc = flush_pending(c, big, false);
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
	lane_release(&c->lane);
}
