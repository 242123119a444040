/* ap_trace_compact (ap_trace_compact.h): the trace `record` leaves behind,
 * rewritten after the program exited. The sampler writes small raw chunks
 * (64 KiB per thread, nothing allocated inside malloc, no time to model
 * anything); here each thread's events are re-encoded in large chunks and
 * compressed:
 *
 * - one chunk per thread covers up to COMPACT_INPUT bytes of the sampler's
 *   chunks, with one SYNC, so a repetitive workload is one long run of
 *   identical records;
 * - every block is written without its address (anonymous), and its FREE
 *   names it by the allocating thread's allocation index
 *   (AP_CHUNK_F_INDEX), however far away, in whatever later chunk, on
 *   whichever thread (then with the allocating thread's tid): addresses
 *   are most of the entropy of a trace and only served to match the
 *   frees. With several threads a replay first finds which FREE ends
 *   which thread's block, and the blocks that must keep their address
 *   (find_shared): those whose address another thread names in the same
 *   quantum;
 * - the payload is split in columns (AP_CHUNK_F_COLUMNS) and compressed
 *   with zstd.
 *
 * Chunks already compressed (a trace compacted before) are copied as they
 * are, and the others then only compressed one by one. */
#include "ap_trace_compact.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ap_trace.h"
#include "ap_hash.h"
#include "ap_replay.h"
#include "ap_trace_encode.h"

/* Input bytes per output chunk (the re-encoding is never longer than its
 * input plus a few bytes: far under the format's limit). Larger chunks
 * compressed loop64 no better and cost page faults for the events held. */
#define COMPACT_INPUT (4u << 20)
/* Input held back over all threads: beyond it the biggest pending thread
 * is written (many threads must not hold 4 MiB, ~60 MB of events, each). */
#define COMPACT_HELD (16u << 20)
/* META records held back: the sampler's META chunks are joined into one
 * until an EVENTS chunk (or HEADER, END, a copied chunk) is written, up to
 * this many bytes. Stacks share much across chunks, which zstd finds only
 * within one (level 10: python3 52 KB of stacks in 7 chunks, 49 KB in 3;
 * cppcheck 993 KB in 359, 873 KB in 18). */
#define COMPACT_META (4u << 20)
/* Payload bytes tried at AP_COMPACT_DENSE_LEVEL too (write_compressed). */
#define DENSE_BUDGET (128u << 20)


/* A bit per allocation of a thread. */
struct bits {
	uint64_t *w;
	size_t n; /* words */
};

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

static bool bits_get(const struct bits *b, uint64_t i)
{
	return i / 64 < b->n && (b->w[i / 64] >> (i % 64) & 1);
}

/* A FREE (or realloc) of one thread that ends another thread's block:
 * the thread's FREE records are counted (`ordinal`), and this one names
 * allocation `index` of thread plan[`plan`]. */
struct xfree {
	uint64_t ordinal, index;
	uint32_t plan;
};

/* A run: a thread's events that no other thread's event comes between,
 * in the merged order. Its events are written in a quantum of their own
 * (see coarse_q); struct thread_plan keeps one record per run, as
 * varints: `n` (its events), flags (RUN_HEAD: its first quantum is the
 * last of the event before it, of another thread; RUN_TAIL: its last
 * quantum is the first of the event after it), vm - the thread's last
 * run's vm, then qh - (vm - 1) with RUN_HEAD, qt - vm and vt - vm with
 * RUN_TAIL. */
#define RUN_HEAD 1u
#define RUN_TAIL 2u
struct run {
	uint64_t to; /* the thread's events up to and with the run */
	uint64_t vm, qh, qt, vt;
	unsigned flags;
};

/* What the replay (find_shared) found for one thread of several. */
struct thread_plan {
	uint32_t tid;
	struct bits keep;    /* its allocations that keep their address */
	struct bits xfreed;  /* those another thread ends */
	struct xfree *x;     /* its FREEs of other threads' blocks, in order */
	size_t nx, x_alloc;
	uint8_t *runs;	     /* its runs (struct run), in order */
	size_t nruns, runs_alloc; /* (bytes) */
};

/* A live anonymous block: its allocation index, and the position of the
 * block live at the same address before it (AP_U64MAP_NONE: none). */
struct live_at {
	uint64_t index;
	uint32_t older;
};

/* A thread's events waiting to be written, in file order. */
struct pending {
	uint32_t tid;
	struct ap_event *ev;
	size_t nev, alloc;
	size_t input; /* bytes of the sampler's payloads they came from */
	/* what its chunks carry over (AP_CHUNK_F_INDEX): its allocations so
	 * far, the index after its last REF's, and its live anonymous blocks:
	 * address -> position in at[] of the latest (spare: positions free
	 * again) */
	uint64_t nalloc, next;
	/* several threads: its plan, the next of its xfree entries, its FREE
	 * records so far, and `next` for REFs to each other thread
	 * (AP_CHUNK_F_XOWN) */
	const struct thread_plan *plan;
	size_t xpos;
	uint64_t nfrees;
	struct ap_xowners xo;
	/* its events before p->ev[0], and its current run (coarse_q) and
	 * where the next one is in plan->runs */
	uint64_t base;
	struct run run;
	size_t rpos;
	struct ap_u64map live;
	struct live_at *at;
	size_t nat, at_alloc;
	uint32_t *spare;
	size_t nspare, spare_alloc;
};

struct bytes {
	uint8_t *b;
	size_t len, alloc;
};

/* Room for n more bytes at the end of o, for an encoder's cursor. */
static uint8_t *room(struct bytes *o, size_t n)
{
	AP_ALLOC_GROW(o->b, o->len + n, o->alloc);
	return o->b + o->len;
}

static void put_bytes(struct bytes *o, const uint8_t *src, size_t n)
{
	if (!n) /* (o->b may be NULL, src too) */
		return;
	memcpy(room(o, n), src, n);
	o->len += n;
}

static void put_uv(struct bytes *o, uint64_t v)
{
	o->len += ap_put_uv(room(o, AP_VARINT_MAX), v);
}

/* The stacks of the META records re-encoded so far, for STACK_SHARED:
 * each stack's PCs by id, and every suffix (outermost frames) of each, by
 * hash, to the first stack that has it. */
struct suffix {
	uint64_t h;
	uint32_t id, len; /* len 0: empty slot */
};

struct stack_table {
	uint64_t *pcs;
	size_t npcs, pcs_alloc;
	size_t *off;	 /* off[id]: its PCs in pcs */
	uint32_t *depth; /* depth[id]; 0: not known (not re-encoded here) */
	size_t nids, ids_alloc; /* ids 1 .. nids - 1 seen */
	struct suffix *sfx;
	size_t mask, nsfx;
	uint64_t shared_pcs, meta_bytes; /* as the reader counts them */
	bool lost; /* a META chunk was copied unread: ids and counts unknown */
};

/* A compressed payload's buffer. */
struct zout {
	uint8_t *b;
	size_t cap;
};

struct compactor {
	const char *path;
	struct ap_error *err;
	int fd;
	int level;
	uint64_t quantum;
	uint64_t step; /* HEADER time_step_ns in quanta (1: times kept) */
	bool transcode; /* no chunk was compressed before: re-encode them all */
	bool threads;	/* EVENTS of more than one tid: track who names what */
	struct zworker *zw; /* compresses and writes the payloads (zw_give) */
	ZSTD_CCtx *ztrial;  /* trial_size's, and write_compressed's */
	struct zout trial;
	size_t dense; /* payload bytes given AP_COMPACT_DENSE_LEVEL so far */
	struct pending *pend;
	size_t npend, pend_alloc;
	size_t held; /* sum of the pending input */
	/* several threads: what find_shared found, per thread */
	struct thread_plan *plan;
	size_t nplan;
	struct ap_event *scratch;
	size_t nscratch, scratch_alloc;
	/* the event array of the thread written last, for the next thread
	 * that needs one: the arrays follow the events held, not the
	 * threads (a run of thousands of short threads) */
	struct ap_event *spare_ev;
	size_t spare_alloc;
	struct bytes col[6], payload; /* col[5]: the sizes, not predicted */
	struct ap_size_pred *sizes; /* the encoder's (AP_CHUNK_F_SIZES) */
	struct bytes meta; /* META records not written yet (COMPACT_META) */
	uint32_t meta_tid; /* the tid of their first chunk */
	struct stack_table stacks;
	uint32_t *tids; /* distinct tids seen, for the count */
	size_t ntids, tids_alloc;
	/* decoding tids[i]'s raw chunks in this walk: what they carry over */
	struct ap_decode_thread *dec;
	size_t dec_alloc;
	bool count_only;	/* level 0: count events and threads only */
	struct ap_compact_stats *st;
	/* streaming (ap_compact_stream_*): the file may still grow */
	size_t off;	/* where the next chunk starts (0: the preamble is next) */
	bool live;	/* an incomplete tail is not yet complete, not cut */
	bool stream;	/* one pass, one thread: give up on anything else */
	bool gave_up;
	struct ap_chunk_walk walk; /* the input's chunks, checked */
	struct ap_streams out_streams; /* the output's chunk indices */
	uint64_t data_chunks;	/* META and EVENTS chunks written */
};

/* ---- output ----
 *
 * zstd is most of what compacting repetitive events costs (python3's
 * threads: 5.6 s at AP_COMPACT_DENSE_LEVEL of 11 s), the re-encoding the
 * rest: writer threads (struct zworker, one per CPU up to ZW_MAX)
 * compress the payloads while the next ones are encoded, and write them
 * in the order given. Whatever else the compactor writes waits until all
 * that was given is written (zw_drain), so the bytes are those written in
 * turn, with or without threads. Without (none could be made) a payload
 * is compressed and written at once. */

#define ZW_MAX 4
/* Payloads given and not yet written, at most. */
#define ZQ (ZW_MAX + 1)

struct zjob {
	uint8_t type, flags;
	uint32_t tid;
	int level;
	uint8_t *raw;
	size_t len, cap;
	struct zout z;		/* ZPRE bytes of room, then the frame */
	size_t zlen;		/* its frame's size, or SIZE_MAX */
	uint8_t pre[AP_CHUNK_COUNTS_MAX]; /* what the payload starts with, as stored */
	uint8_t npre;			  /* (EVENTS' counts) */
};

struct zworker {
	pthread_t th[ZW_MAX];
	unsigned nth;		/* threads running */
	pthread_mutex_t mu;
	pthread_cond_t more, done; /* a job given / a job written */
	struct zjob q[ZQ];	/* job k in q[k % ZQ] */
	uint64_t given, taken, written;
	bool quit;
	bool failed;		/* a write failed: err says why, the rest is dropped */
	struct ap_error err;
	ZSTD_CCtx *zc;		/* without threads */
};

static int cwrite(struct compactor *c, struct ap_error *err, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = write(c->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ap_error_set(err, "%s: %s", c->path, strerror(errno));
		p += n;
		len -= (size_t)n;
		c->st->bytes_out += (uint64_t)n;
	}
	return 0;
}

/* One chunk as it is. */
static int emit_chunk(struct compactor *c, struct ap_error *err, uint8_t type, uint8_t flags,
		      uint32_t tid, const uint8_t *payload, size_t len)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	uint32_t stream = ap_stream_of(type, tid);
	c->data_chunks += type == AP_CHUNK_META || type == AP_CHUNK_EVENTS;
	ap_chunk_header_flags(hdr, type, flags, tid, stream, ap_streams_next(&c->out_streams, stream),
			      payload, (uint32_t)len);
	if (cwrite(c, err, hdr, sizeof(hdr)) < 0)
		return -1;
	return cwrite(c, err, payload, len);
}

/* Room before a compressed frame: a chunk's counts and its `u32 raw_len`. */
#define ZPRE (AP_CHUNK_COUNTS_MAX + 4)

/* raw compressed at `level` into o after ZPRE bytes: its size, or
 * SIZE_MAX. The room is there for raw itself, too. */
static size_t zcompress(ZSTD_CCtx *zc, struct zout *o, const uint8_t *raw, size_t len, int level)
{
	size_t bound = ZSTD_compressBound(len) + ZPRE;
	if (bound > o->cap) {
		free(o->b);
		o->cap = bound;
		o->b = ap_xmalloc(bound);
	}
	size_t z = ZSTD_compressCCtx(zc, o->b + ZPRE, o->cap - ZPRE, raw, len, level);
	return ZSTD_isError(z) ? SIZE_MAX : z;
}

static void zjob_compress(ZSTD_CCtx *zc, struct zjob *j)
{
	j->zlen = zcompress(zc, &j->z, j->raw, j->len, j->level);
}

/* The job's chunk: compressed when that made it smaller, after the
 * counts it starts with (put in front of it in z, which has the room). */
static int zjob_emit(struct compactor *c, struct ap_error *err, struct zjob *j)
{
	uint8_t *at = j->z.b + AP_CHUNK_COUNTS_MAX - j->npre;
	if (j->zlen == SIZE_MAX || j->zlen + 4 >= j->len ||
	    j->zlen + 4 + j->npre > AP_CHUNK_MAX_PAYLOAD) {
		if (!j->npre)
			return emit_chunk(c, err, j->type, j->flags, j->tid, j->raw, j->len);
		/* (at least its bound, which is more than len) */
		memcpy(j->z.b + AP_CHUNK_COUNTS_MAX, j->raw, j->len);
		memcpy(at, j->pre, j->npre);
		return emit_chunk(c, err, j->type, j->flags, j->tid, at, j->npre + j->len);
	}
	ap_put_u32le(j->z.b + AP_CHUNK_COUNTS_MAX, (uint32_t)j->len);
	memcpy(at, j->pre, j->npre);
	return emit_chunk(c, err, j->type, j->flags | AP_CHUNK_F_ZSTD, j->tid, at,
			  j->npre + j->zlen + 4);
}

/* A writer thread: takes the next job, compresses it, writes it when the
 * ones before are written. */
static void *zw_main(void *arg)
{
	struct compactor *c = arg;
	struct zworker *zw = c->zw;
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	if (!zc)
		abort(); /* out of memory, as ap_xmalloc */
	pthread_mutex_lock(&zw->mu);
	for (;;) {
		while (zw->taken == zw->given && !zw->quit)
			pthread_cond_wait(&zw->more, &zw->mu);
		if (zw->taken == zw->given)
			break;
		uint64_t k = zw->taken++;
		struct zjob *j = &zw->q[k % ZQ];
		bool failed = zw->failed;
		pthread_mutex_unlock(&zw->mu);
		if (!failed)
			zjob_compress(zc, j);
		pthread_mutex_lock(&zw->mu);
		while (zw->written != k)
			pthread_cond_wait(&zw->done, &zw->mu);
		if (!zw->failed) {
			pthread_mutex_unlock(&zw->mu);
			int rc = zjob_emit(c, &zw->err, j);
			pthread_mutex_lock(&zw->mu);
			zw->failed = rc < 0;
		}
		zw->written++;
		pthread_cond_broadcast(&zw->done);
	}
	pthread_mutex_unlock(&zw->mu);
	ZSTD_freeCCtx(zc);
	return NULL;
}

/* The writer, and its threads if they can be made (signals stay with the
 * threads that were there: record's handlers are not for them). A stream
 * (c->stream) is compacted while the program runs, on the one core it
 * does not use: no threads. */
static void zw_start(struct compactor *c)
{
	struct zworker *zw = ap_xcalloc(1, sizeof(*zw));
	c->zw = zw;
	pthread_mutex_init(&zw->mu, NULL);
	pthread_cond_init(&zw->more, NULL);
	pthread_cond_init(&zw->done, NULL);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want = cpus < 1 ? 1 : cpus > ZW_MAX ? ZW_MAX : (unsigned)cpus;
	const char *nt = getenv("ALLOCPROF_COMPACT_NO_THREAD");
	if (c->stream || (nt && !strcmp(nt, "1")))
		want = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (zw->nth < want && pthread_create(&zw->th[zw->nth], NULL, zw_main, c) == 0)
		zw->nth++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!zw->nth && !(zw->zc = ZSTD_createCCtx()))
		abort(); /* out of memory, as ap_xmalloc */
}

/* What the writer failed at, as the compactor's error. */
static int zw_failed(struct compactor *c)
{
	*c->err = c->zw->err;
	return -1;
}

/* Hands a payload over, to be compressed at `level` and written after
 * those given before, behind the npre bytes pre (not compressed). */
static int zw_give(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
		   const uint8_t *pre, size_t npre, const uint8_t *raw, size_t len, int level)
{
	struct zworker *zw = c->zw;
	if (!zw->nth) {
		struct zjob *j = &zw->q[0];
		*j = (struct zjob){ type, flags, tid, level, (uint8_t *)raw, len, len, j->z, 0, {0},
				    (uint8_t)npre };
		memcpy(j->pre, pre, npre);
		zjob_compress(zw->zc, j);
		int rc = zjob_emit(c, &zw->err, j);
		j->raw = NULL;
		return rc < 0 ? zw_failed(c) : 0;
	}
	pthread_mutex_lock(&zw->mu);
	while (zw->given - zw->written == ZQ)
		pthread_cond_wait(&zw->done, &zw->mu);
	bool failed = zw->failed;
	struct zjob *j = &zw->q[zw->given % ZQ];
	pthread_mutex_unlock(&zw->mu);
	if (failed)
		return zw_failed(c);
	AP_ALLOC_GROW(j->raw, len ? len : 1, j->cap);
	memcpy(j->raw, raw, len);
	memcpy(j->pre, pre, npre);
	j->npre = (uint8_t)npre;
	j->type = type;
	j->flags = flags;
	j->tid = tid;
	j->level = level;
	j->len = len;
	pthread_mutex_lock(&zw->mu);
	zw->given++;
	pthread_cond_signal(&zw->more);
	pthread_mutex_unlock(&zw->mu);
	return 0;
}

/* Waits until everything given is written. */
static int zw_drain(struct compactor *c)
{
	struct zworker *zw = c->zw;
	if (!zw)
		return 0;
	pthread_mutex_lock(&zw->mu);
	while (zw->written != zw->given)
		pthread_cond_wait(&zw->done, &zw->mu);
	bool failed = zw->failed;
	pthread_mutex_unlock(&zw->mu);
	return failed ? zw_failed(c) : 0;
}

static void zw_stop(struct compactor *c)
{
	struct zworker *zw = c->zw;
	if (!zw)
		return;
	pthread_mutex_lock(&zw->mu);
	zw->quit = true;
	pthread_cond_broadcast(&zw->more);
	pthread_mutex_unlock(&zw->mu);
	for (unsigned i = 0; i < zw->nth; i++)
		pthread_join(zw->th[i], NULL);
	for (int k = 0; k < ZQ; k++) {
		if (zw->nth)
			free(zw->q[k].raw);
		free(zw->q[k].z.b);
	}
	ZSTD_freeCCtx(zw->zc);
	pthread_mutex_destroy(&zw->mu);
	pthread_cond_destroy(&zw->more);
	pthread_cond_destroy(&zw->done);
	free(zw);
	c->zw = NULL;
}

static int flush_meta(struct compactor *c);

/* Bytes the compactor writes itself, after what the writer was given. */
static int out_write(struct compactor *c, const void *data, size_t len)
{
	return zw_drain(c) < 0 ? -1 : cwrite(c, c->err, data, len);
}

/* Writes one chunk as it is, after the META records held back (which
 * every chunk after them in the input came after, too). */
static int write_chunk(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
		       const uint8_t *payload, size_t len)
{
	if (c->meta.len && flush_meta(c) < 0)
		return -1;
	if (zw_drain(c) < 0)
		return -1;
	return emit_chunk(c, c->err, type, flags, tid, payload, len);
}

/* A payload, compressed when that makes it smaller, after the META held
 * back. A payload that zstd's level 1 packs to an eighth or less repeats
 * itself, and a deeper search (level AP_COMPACT_DENSE_LEVEL) packs it
 * much smaller than the level: it gets that level, for the first
 * DENSE_BUDGET bytes of such payloads. python3's threads handing dicts
 * over (PYTHONMALLOC=malloc, 147 MB raw): 1.31 MB at level 3, 694 K so
 * (heaptrack's file: 2.99 MB) for 5.7 s of compaction's CPU instead of
 * 4.7 s, most of it on the writer threads; level 17 there: 659 K for
 * 6.2 s. Random events (bench/mixed: 3 times smaller at level 3) would
 * pay for nothing, and the budget bounds what a long run pays. */
static int write_compressed(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
			    const struct ap_chunk_counts *counts, const uint8_t *raw, size_t len)
{
	uint8_t pre[AP_CHUNK_COUNTS_MAX];
	size_t npre = counts ? ap_put_chunk_counts(pre, counts) : 0;
	if (c->meta.len && flush_meta(c) < 0)
		return -1;
	int level = c->level;
	if (c->level >= AP_COMPACT_LEVEL && c->level < AP_COMPACT_DENSE_LEVEL &&
	    c->dense < DENSE_BUDGET && len >= 4096) {
		size_t z = zcompress(c->ztrial, &c->trial, raw, len, 1);
		if (z != SIZE_MAX && z <= len / 8) {
			level = AP_COMPACT_DENSE_LEVEL;
			c->dense += len;
		}
	}
	return zw_give(c, type, flags | (counts ? AP_CHUNK_F_COUNTS : 0), tid, pre, npre, raw, len,
		       level);
}


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

/* The size of raw compressed at level 1: a trial of two columns. */
static size_t trial_size(struct compactor *c, const uint8_t *raw, size_t len)
{
	return zcompress(c->ztrial, &c->trial, raw, len, 1);
}

/* The quantum written for event `o` of p's thread (in its order), whose
 * quantum is q. The sampler's quantum (10 us) is fine enough for the
 * merge to order the events of several threads; the times themselves
 * need no more than the step the sampler keeps with one thread (HEADER
 * time_step_ns, 1 ms), and the merge needs only how the events of
 * different threads compare: <, = or >. So the events get new quanta,
 * computed over the merged order by find_shared: never later than their
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
	while (o >= run->to) {
		/* the thread's next run */
		if (!pl || p->rpos >= pl->nruns)
			return q; /* (no runs: times kept) */
		const uint8_t *at = pl->runs + p->rpos, *end = pl->runs + pl->nruns;
		uint64_t n = 0, f = 0, d = 0, qh = 0, qt = 0, vt = 0;
		ap_get_uv(&at, end, &n);
		ap_get_uv(&at, end, &f);
		ap_get_uv(&at, end, &d);
		if (f & RUN_HEAD)
			ap_get_uv(&at, end, &qh);
		if (f & RUN_TAIL) {
			ap_get_uv(&at, end, &qt);
			ap_get_uv(&at, end, &vt);
		}
		p->rpos = (size_t)(at - pl->runs);
		run->to += n;
		run->vm += d;
		run->flags = (unsigned)f;
		run->qh = run->vm - 1 + qh;
		run->qt = run->vm + qt;
		run->vt = run->vm + vt;
	}
	if ((run->flags & RUN_HEAD) && q == run->qh)
		return run->vm - 1;
	if ((run->flags & RUN_TAIL) && q == run->qt)
		return run->vt;
	return r > run->vm ? r : run->vm;
}

/* One thread's pending events as one EVENTS payload in five columns
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
	for (int k = 0; k < 6; k++)
		col[k].len = 0;
	size_t nrec = 0, last_step = 0, nalloc = 0;
	if (!c->sizes)
		c->sizes = ap_xcalloc(1, sizeof(*c->sizes));
	struct ap_evenc enc = {.sizes = c->sizes};
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
				     .cpu = e->cpu, .addr = a->addr, .size = a->size,
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
		if (r.type != AP_EV_FREE)
			col[5].len += ap_put_uv(room(&col[5], AP_VARINT_MAX), r.size);
		col[0].len += (size_t)(c0 - s0);
		col[1].len += (size_t)(c1 - s1);
		col[2].len += (size_t)(c2 - s2);
		col[4].len += (size_t)(c4 - s4);
	}
	*counts = (struct ap_chunk_counts){nrec, p->nev, nalloc, enc.q};
	unsigned flags = AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX | AP_CHUNK_F_SIZES |
			 AP_CHUNK_F_XOWN;
	if (trial_size(c, col[5].b, col[5].len) < trial_size(c, col[2].b, col[2].len)) {
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
	for (int k = 0; k < 5; k++)
		put_bytes(out, c->col[k].b, c->col[k].len);
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
	int rc = write_compressed(c, AP_CHUNK_EVENTS, (uint8_t)flags, p->tid, &counts, c->payload.b,
				  c->payload.len);
	pending_shrink(c, p);
	return rc;
}

/* The META records held back, as one chunk. */
static int flush_meta(struct compactor *c)
{
	size_t len = c->meta.len;
	if (!len)
		return 0;
	c->meta.len = 0; /* (so that write_chunk does not come back here) */
	return write_compressed(c, AP_CHUNK_META, 0, c->meta_tid, NULL, c->meta.b, len);
}

static int flush_all(struct compactor *c)
{
	for (size_t i = 0; i < c->npend; i++)
		if (flush_pending(c, &c->pend[i]) < 0)
			return -1;
	return flush_meta(c);
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
			abort(); /* out of memory, as ap_xmalloc */
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

/* tid's index in c->tids, added if new. */
static size_t note_tid(struct compactor *c, uint32_t tid)
{
	for (size_t i = 0; i < c->ntids; i++)
		if (c->tids[i] == tid)
			return i;
	AP_ALLOC_GROW(c->tids, c->ntids + 1, c->tids_alloc);
	AP_ALLOC_GROW(c->dec, c->ntids + 1, c->dec_alloc);
	c->dec[c->ntids] = (struct ap_decode_thread){.thread = (uint32_t)c->ntids};
	c->tids[c->ntids++] = tid;
	return c->ntids - 1;
}

static int corrupt_at(struct compactor *c, size_t off, const char *why)
{
	return ap_error_set(c->err, "%s: corrupt chunk at byte %zu: %s", c->path, off, why);
}

/* ---- META: stacks that share their outer frames ---------------------- */

static uint64_t suffix_hash(uint64_t h, uint64_t pc)
{
	h ^= pc;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static struct suffix *suffix_slot(struct stack_table *s, uint64_t h, uint32_t len)
{
	size_t i = (size_t)(h ^ len) & s->mask;
	while (s->sfx[i].len && (s->sfx[i].h != h || s->sfx[i].len != len))
		i = (i + 1) & s->mask;
	return &s->sfx[i];
}

static void suffix_grow(struct stack_table *s)
{
	struct suffix *old = s->sfx;
	size_t omask = s->mask;
	s->mask = old ? omask * 2 + 1 : 1023;
	s->sfx = ap_xcalloc(s->mask + 1, sizeof(*s->sfx));
	for (size_t i = 0; old && i <= omask; i++)
		if (old[i].len)
			*suffix_slot(s, old[i].h, old[i].len) = old[i];
	free(old);
}

/* Stack `id` (the next one) of `depth` PCs: the earlier stack whose
 * outermost frames are its longest suffix (*shared of them, 0: none),
 * and the stack remembered with its suffixes. */
static uint32_t stack_share(struct stack_table *s, uint32_t id, const uint64_t *pcs,
			    uint32_t depth, uint32_t *shared)
{
	AP_ALLOC_GROW(s->off, id + 1, s->ids_alloc);
	s->depth = ap_xrealloc(s->depth, s->ids_alloc * sizeof(*s->depth));
	s->nids = id + 1;
	s->depth[id] = 0;
	*shared = 0;
	if (depth == 0 || depth > AP_MAX_DEPTH_CAP)
		return 0;
	uint64_t h[AP_MAX_DEPTH_CAP + 1];
	h[depth] = 0x2545f4914f6cdd1dull;
	for (uint32_t k = depth; k-- > 0;)
		h[k] = suffix_hash(h[k + 1], pcs[k]);
	if ((s->nsfx + depth) * 2 > s->mask + 1 || !s->sfx)
		while ((s->nsfx + depth) * 2 > s->mask + 1 || !s->sfx)
			suffix_grow(s);
	uint32_t base = 0;
	for (uint32_t k = 0; k < depth && !base; k++) {
		const struct suffix *e = suffix_slot(s, h[k], depth - k);
		if (!e->len)
			continue;
		const uint64_t *b = s->pcs + s->off[e->id] + s->depth[e->id] - e->len;
		if (!memcmp(b, pcs + k, e->len * sizeof(*pcs))) {
			base = e->id;
			*shared = e->len;
		}
	}
	AP_ALLOC_GROW(s->pcs, s->npcs + depth, s->pcs_alloc);
	memcpy(s->pcs + s->npcs, pcs, depth * sizeof(*pcs));
	s->off[id] = s->npcs;
	s->depth[id] = depth;
	s->npcs += depth;
	for (uint32_t k = 0; k < depth; k++) {
		struct suffix *e = suffix_slot(s, h[k], depth - k);
		if (!e->len) {
			*e = (struct suffix){h[k], id, depth - k};
			s->nsfx++;
		}
	}
	return base;
}

static void stack_table_release(struct stack_table *s)
{
	free(s->pcs);
	free(s->off);
	free(s->depth);
	free(s->sfx);
}

/* A raw META payload with each STACK that shares two or more outer frames
 * with an earlier stack written as STACK_SHARED (MAPPING, THREAD and
 * what is not understood here copied as they are; the reader checks them),
 * added to the META records held back (its padding left out: padding ends
 * a payload). Never more shared frames than the reader takes per byte of
 * META (AP_SHARED_PCS_PER_BYTE). */
static int write_meta(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		      size_t len)
{
	struct stack_table *s = &c->stacks;
	struct bytes *o = &c->meta;
	if (o->len && o->len + len > COMPACT_META && flush_meta(c) < 0)
		return -1;
	if (!o->len)
		c->meta_tid = tid;
	size_t start = o->len;
	const uint8_t *p = payload, *end = payload + len;
	uint64_t pcs[AP_MAX_DEPTH_CAP];
	while (p < end) {
		const uint8_t *rec = p;
		uint8_t tag = *p++;
		uint64_t v[4], n;
		bool ok = true;
		if (tag == 0) {
			p = rec; /* padding: copied */
			break;
		} else if (tag == AP_META_MAPPING) {
			ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &n) &&
			     n <= (uint64_t)(end - p);
			p += ok ? n : 0;
			ok = ok && !ap_get_uv(&p, end, &n) && n <= (uint64_t)(end - p);
			p += ok ? n : 0;
			ok = ok && !ap_get_uv(&p, end, &n) && n <= (uint64_t)(end - p);
			for (uint64_t i = 0; ok && i < 4 * n; i++)
				ok = !ap_get_uv(&p, end, &v[0]);
		} else if (tag == AP_META_THREAD) {
			ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &n) &&
			     n <= (uint64_t)(end - p);
			p += ok ? n : 0;
		} else if (tag == AP_META_STACK) {
			ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &v[1]);
			uint64_t pc = 0;
			bool keep = ok && !s->lost && v[0] == (s->nids ? s->nids : 1) &&
				    v[0] < UINT32_MAX && v[1] <= AP_MAX_DEPTH_CAP;
			for (uint64_t i = 0; ok && i < v[1]; i++) {
				int64_t d = 0;
				ok = i ? !ap_get_sv(&p, end, &d) : !ap_get_uv(&p, end, &pc);
				pc += (uint64_t)d;
				if (keep)
					pcs[i] = pc;
			}
			if (ok && keep) {
				uint32_t shared, base = stack_share(s, (uint32_t)v[0], pcs,
								    (uint32_t)v[1], &shared);
				uint64_t cap = AP_SHARED_PCS_PER_BYTE *
						   (s->meta_bytes + o->len - start) +
					       AP_SHARED_PCS_SLACK;
				if (base && shared >= 2 && s->shared_pcs + shared <= cap) {
					s->shared_pcs += shared;
					o->len += ap_put_stack_shared(
					    room(o, AP_META_STACK_MAX(v[1]) + 2 * AP_VARINT_MAX),
					    (uint32_t)v[0], pcs, (uint32_t)v[1], base, shared);
					continue;
				}
			} else if (ok && v[0] == (s->nids ? s->nids : 1)) {
				s->nids = v[0] + 1; /* ids stay in step; not shared */
			}
		} else if (tag == AP_META_STACK_SHARED) {
			/* (written by an earlier compaction; kept, not shared) */
			ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &v[1]) &&
			     !ap_get_uv(&p, end, &v[2]) && !ap_get_uv(&p, end, &v[3]) &&
			     v[3] <= v[1];
			for (uint64_t i = 0; ok && i < v[1] - v[3]; i++)
				ok = !ap_get_uv(&p, end, &n);
			if (ok && v[0] == (s->nids ? s->nids : 1))
				s->nids = v[0] + 1;
			s->shared_pcs += ok ? v[3] : 0;
		} else {
			ok = false;
		}
		if (!ok)
			return corrupt_at(c, off, "META record does not decode");
		put_bytes(o, rec, (size_t)(p - rec));
	}
	s->meta_bytes += o->len - start;
	return 0;
}

/* END's `pooled` list (docs/trace-format.md) with the blocks this
 * compactor made anonymous named by their thread and allocation index
 * (their addresses are no longer in the file). Appends the key/value to
 * out (room for 2 * AP_VARINT_MAX per entry of `len` bytes, and 3 more).
 * Returns its length, or 0 if the list does not decode. */
static size_t pooled_anon(const struct compactor *c, const uint8_t *s, size_t len, uint8_t *out)
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
			struct ap_u64map_slot *sl = q->live.slot ? ap_u64map_find(&q->live, x >> 1) : NULL;
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

/* An END with the chunk count of the output (AP_EK_CHUNKS): its other
 * fields as they were, in their order (`pooled` with the blocks made
 * anonymous named by index). The input's count is checked as the reader
 * checks it: its last value, if it has one. */
static int write_end(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		     size_t len)
{
	/* (the chunks counted are those written: all of them, first) */
	if (zw_drain(c) < 0)
		return -1;
	uint8_t *out = ap_xmalloc(2 * len * AP_VARINT_MAX + 4 * AP_VARINT_MAX + AP_KV_UINT_MAX);
	size_t n = 0;
	const uint8_t *p = payload, *end = payload + len;
	uint64_t chunks = 0;
	while (p < end) {
		const uint8_t *at = p;
		uint64_t key, kind, v;
		if (ap_get_uv(&p, end, &key) < 0 || ap_get_uv(&p, end, &kind) < 0 || kind > AP_KV_STR ||
		    ap_get_uv(&p, end, &v) < 0 || (kind == AP_KV_STR && v > (uint64_t)(end - p))) {
			free(out);
			return corrupt_at(c, off, "END record does not decode");
		}
		if (kind == AP_KV_STR)
			p += v;
		if (key == AP_EK_CHUNKS && kind == AP_KV_UINT)
			chunks = v;
		if (key == AP_EK_POOLED && kind == AP_KV_STR) {
			size_t k = pooled_anon(c, p - v, (size_t)v, out + n);
			if (!k) {
				free(out);
				return corrupt_at(c, off, "END's pooled list does not decode");
			}
			n += k;
		} else if (key != AP_EK_CHUNKS) {
			memcpy(out + n, at, (size_t)(p - at));
			n += (size_t)(p - at);
		}
	}
	if (chunks > c->walk.data_chunks) {
		free(out);
		return corrupt_at(c, off, "missing chunks: the END counts more META and "
				  "EVENTS chunks than the file holds before it");
	}
	n += ap_put_kv_uint(out + n, AP_EK_CHUNKS, c->data_chunks);
	int rc = write_chunk(c, AP_CHUNK_END, 0, tid, out, n);
	free(out);
	return rc;
}

/* Decodes a raw EVENTS payload of tid, appending to ev; counts its
 * records. */
static int decode_raw(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		      uint32_t len, struct ap_event **ev, size_t *nev, size_t *alloc)
{
	const char *why;
	size_t from = *nev;
	struct ap_decode_thread *th = &c->dec[note_tid(c, tid)];
	if (ap_trace_decode_events(payload, len, 0, c->quantum, th, ev, nev, alloc, &why) < 0)
		return corrupt_at(c, off, why);
	for (size_t i = from; i < *nev; i++)
		c->st->events += !((*ev)[i].flags & AP_EVF_FROM_REALLOC);
	return 0;
}

/* The time quantum, from the HEADER chunk (the reader's own decoding). */
static int read_quantum(struct compactor *c, const uint8_t *data, size_t end)
{
	struct ap_trace *t;
	struct ap_error e;
	if (ap_trace_read_mem(data, end, c->path, &t, &e) < 0)
		return ap_error_set(c->err, "%s", e.msg);
	c->quantum = t->time_quantum_ns;
	c->step = t->time_step_ns > t->time_quantum_ns ? t->time_step_ns / t->time_quantum_ns : 1;
	ap_trace_free(t);
	return 0;
}

/* One pass over the chunks: `emit` false only looks (compressed chunks,
 * the time quantum, which thread names which address); true writes.
 * Resumes at c->off; with c->live it stops, to come back later, at a chunk
 * not yet complete (or not yet matching its checksum: being written). */
static int walk_chunks(struct compactor *c, const uint8_t *data, size_t size, bool emit)
{
	if (!c->off) {
		/* each walk decodes the threads' chunks from their first */
		for (size_t i = 0; i < c->ntids; i++)
			c->dec[i] = (struct ap_decode_thread){.thread = (uint32_t)i};
		ap_chunk_walk_release(&c->walk);
		ap_chunk_walk_init(&c->walk, data, size);
		uint8_t pre[AP_TRACE_PREAMBLE_LEN];
		if (emit && out_write(c, pre, ap_put_preamble(pre)) < 0)
			return -1;
	}
	c->walk.data = data; /* (mapped again, maybe longer) */
	c->walk.size = size;
	for (;;) {
		c->off = c->walk.off;
		struct ap_chunk ch;
		char why[160];
		enum ap_chunk_result res = ap_chunk_next(&c->walk, &ch, why, sizeof(why));
		if (res == AP_CHUNK_EOF)
			break;
		if (res == AP_CHUNK_CUT) {
			if (c->live)
				return 0;
			/* the incomplete last chunk: kept as it was, after the rest */
			c->st->cut = true;
			c->st->cut_at = c->off;
			if (emit && (flush_all(c) < 0 || out_write(c, data + c->off, size - c->off) < 0))
				return -1;
			return 0;
		}
		/* a corrupt chunk: the trace is left as it is; while the trace
		 * is written, bytes that may be a chunk not yet whole wait */
		if (res == AP_CHUNK_BAD)
			return c->live && c->walk.maybe_unwritten ? 0 : corrupt_at(c, c->off, why);
		size_t off = ch.off;
		const uint8_t *payload = ch.payload;
		uint32_t len = ch.len, tid = ch.tid;
		uint8_t type = ch.type, flags = ch.flags;
		int rc = 0;
		if (c->stream) {
			/* one pass: the quantum here; anonymous blocks need to
			 * know no other thread names them, which one pass over
			 * one thread's events knows */
			if (type == AP_CHUNK_EVENTS &&
			    (flags || (c->ntids && c->tids[0] != tid))) {
				c->gave_up = true;
				return 0;
			}
			if (type == AP_CHUNK_HEADER && off == AP_TRACE_PREAMBLE_LEN &&
			    read_quantum(c, data, off + AP_CHUNK_HDR_LEN + len) < 0)
				return -1;
		}
		if (!emit && c->count_only && type != AP_CHUNK_HEADER) {
			/* level 0: what the summary line says, nothing written
			 * (the HEADER, for the quantum, is read as below) */
			if (type == AP_CHUNK_EVENTS) {
				note_tid(c, tid);
				c->nscratch = 0;
				if (!flags && decode_raw(c, off, tid, payload, len, &c->scratch,
							 &c->nscratch, &c->scratch_alloc) < 0)
					return -1;
			}
			if (type != AP_CHUNK_SYMBOLS)
				c->st->has_end = type == AP_CHUNK_END;
			continue;
		}
		if (!emit) {
			if (type == AP_CHUNK_HEADER && off == AP_TRACE_PREAMBLE_LEN) {
				if (read_quantum(c, data, off + AP_CHUNK_HDR_LEN + len) < 0)
					return -1;
			} else if (type == AP_CHUNK_EVENTS && flags) {
				c->transcode = false;
			} else if (type == AP_CHUNK_EVENTS) {
				/* the first look: one thread, or several? */
				if (c->ntids && c->tids[0] != tid)
					c->threads = true;
				note_tid(c, tid);
			}
		} else if (type == AP_CHUNK_EVENTS && !flags) {
			note_tid(c, tid);
			if (!c->transcode) {
				c->nscratch = 0;
				rc = decode_raw(c, off, tid, payload, len, &c->scratch, &c->nscratch,
						&c->scratch_alloc);
				if (!rc)
					rc = write_compressed(c, type, 0, tid, NULL, payload, len);
			} else {
				struct pending *p = pending_for(c, tid);
				if (p->input + len > COMPACT_INPUT)
					rc = flush_pending(c, p);
				/* every event record takes 2 bytes or more */
				reserve_events(c, p, p->nev + len / 2 + 2);
				if (!rc)
					rc = decode_raw(c, off, tid, payload, len, &p->ev, &p->nev, &p->alloc);
				p->input += len;
				c->held += len;
				while (!rc && c->held > COMPACT_HELD) {
					struct pending *big = &c->pend[0];
					for (size_t i = 1; i < c->npend; i++)
						if (c->pend[i].input > big->input)
							big = &c->pend[i];
					rc = flush_pending(c, big);
				}
			}
		} else if (type == AP_CHUNK_META && !flags) {
			rc = write_meta(c, off, tid, payload, len);
		} else {
			/* HEADER, END, chunks compressed already: everything
			 * before them stays before them */
			if (type == AP_CHUNK_EVENTS)
				note_tid(c, tid);
			if (type == AP_CHUNK_META)
				c->stacks.lost = true;
			if (type != AP_CHUNK_META)
				rc = flush_all(c);
			if (!rc && type == AP_CHUNK_END)
				rc = write_end(c, off, tid, payload, len);
			else if (!rc)
				rc = write_chunk(c, type, flags, tid, payload, len);
		}
		if (rc < 0)
			return -1;
		if (emit && type != AP_CHUNK_SYMBOLS)
			c->st->has_end = type == AP_CHUNK_END;
	}
	c->off = c->walk.off;
	return emit && !c->live ? flush_all(c) : 0;
}

/* ---- several threads: which blocks another thread ends ---------------- */

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
	uint64_t *nalloc; /* per thread index */
	uint64_t *nfrees; /* per thread index: its FREE records so far */
	struct thread_plan *plan; /* per thread index */
	struct blk *obj;  /* per object id: its current block */
	size_t obj_alloc;
	/* the addresses named in the current quantum: the last record's
	 * thread and block (thread UINT32_MAX: a FREE that ended none) */
	uint64_t quantum;
	struct ap_u64map seen;
	struct {
		uint64_t addr;
		uint32_t thread;
		struct blk b;
	} *rec;
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

static void scan_ended(struct shared_scan *s, const struct ap_event *e, uint64_t addr,
		       uint32_t obj)
{
	uint64_t ord = s->nfrees[e->thread]++;
	struct blk b = s->obj[obj];
	if (b.thread != e->thread) {
		struct thread_plan *pl = &s->plan[e->thread];
		bits_set(&s->plan[b.thread].xfreed, b.index);
		AP_ALLOC_GROW(pl->x, pl->nx + 1, pl->x_alloc);
		pl->x[pl->nx++] = (struct xfree){ord, b.index, b.thread};
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
	scan_ended(ctx, e, old->addr, old->obj);
	scan_began(ctx, e, b->obj);
}

static void scan_free(void *ctx, size_t i, const struct ap_event *e,
		      const struct ap_replay_block *b)
{
	scan_ended(ctx, e, e->addr, b->obj);
}

static void scan_unmatched(void *ctx, size_t i, const struct ap_event *e)
{
	struct shared_scan *s = ctx;
	s->nfrees[e->thread]++;
	scan_named(s, e->ts, e->addr, e->thread, (struct blk){UINT32_MAX, 0});
}

/* The trace's events matched as every report matches them (ap_replay),
 * into c->plan: which allocations keep their address, and which FREEs
 * name another thread's block. */
static int find_shared(struct compactor *c)
{
	struct ap_trace *t;
	struct ap_error e;
	if (ap_trace_read(c->path, &t, &e, NULL, NULL) < 0)
		return ap_error_set(c->err, "%s", e.msg);
	struct shared_scan s = {.quantum = UINT64_MAX, .run_thread = UINT32_MAX,
				.tq = c->quantum, .step = c->step};
	s.nalloc = ap_xcalloc(t->nthreads + 1, sizeof(*s.nalloc));
	s.nfrees = ap_xcalloc(t->nthreads + 1, sizeof(*s.nfrees));
	s.nev = ap_xcalloc(t->nthreads + 1, sizeof(*s.nev));
	s.last_vm = ap_xcalloc(t->nthreads + 1, sizeof(*s.last_vm));
	s.plan = ap_xcalloc(t->nthreads + 1, sizeof(*s.plan));
	ap_u64map_init(&s.seen, 64);
	/* (the runs only when coarse_q has a step to round to) */
	const struct ap_replay_ops ops = {.event = c->step > 1 ? scan_event : NULL,
					  .alloc = scan_alloc,
					  .grow = scan_grow,
					  .free = scan_free,
					  .unmatched = scan_unmatched};
	struct ap_replay_consumer con = {&ops, &s};
	int rc = ap_replay(t, &con, 1, NULL, c->err);
	scan_run_end(&s, UINT64_MAX);
	for (size_t k = 0; s.back && k <= t->nthreads; k++)
		s.plan[k].nruns = 0; /* (a time went back: kept, every one) */
	c->nplan = t->nthreads;
	c->plan = s.plan;
	for (size_t k = 0; k < t->nthreads; k++)
		c->plan[k].tid = t->threads[k].tid;
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
		return ap_error_set(c->err, "%s: the trace changed while it was compacted", c->path);
	return 0;
}

/* Checks the preamble of a trace. */
static int check_preamble(const char *path, const uint8_t *data, size_t size,
			  struct ap_error *err)
{
	if (size < AP_TRACE_PREAMBLE_LEN || memcmp(data, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN))
		return ap_error_set(err, "%s: not an allocprof trace", path);
	uint32_t version = ap_get_u32le(data + 8);
	if (version < AP_TRACE_VERSION_MIN || version > AP_TRACE_VERSION)
		return ap_error_set(err, "%s: trace format version %u, this allocprof reads %u to %u",
				    path, version, AP_TRACE_VERSION_MIN, AP_TRACE_VERSION);
	return 0;
}

/* The temporary output next to path, and the compressor. */
static int open_output(struct compactor *c, struct ap_buf *tmp)
{
	ap_buf_addf(tmp, "%s.compact.XXXXXX", c->path);
	c->fd = mkostemp(tmp->buf, O_CLOEXEC);
	if (c->fd < 0)
		return ap_error_set(c->err, "%s: %s", tmp->buf, strerror(errno));
	c->ztrial = ZSTD_createCCtx();
	if (!c->ztrial)
		abort(); /* out of memory, as ap_xmalloc */
	zw_start(c);
	return 0;
}

/* The output is complete: it takes the input's place. */
static int replace_input(struct compactor *c, struct ap_buf *tmp, mode_t mode)
{
	if (zw_drain(c) < 0)
		return -1;
	fchmod(c->fd, mode & 07777);
	int rc = close(c->fd);
	c->fd = -1;
	if (rc < 0)
		return ap_error_set(c->err, "%s: %s", tmp->buf, strerror(errno));
	if (rename(tmp->buf, c->path) < 0)
		return ap_error_set(c->err, "%s: %s", c->path, strerror(errno));
	c->st->nthreads = c->ntids;
	return 0;
}

/* Frees what a compactor holds; removes its output if it did not replace
 * the input. */
static void compactor_release(struct compactor *c, struct ap_buf *tmp, bool done)
{
	zw_stop(c); /* first: it may be writing to c->fd */
	if (c->fd >= 0)
		close(c->fd);
	if (!done && tmp->len)
		unlink(tmp->buf);
	ap_buf_release(tmp);
	for (size_t i = 0; i < c->npend; i++) {
		free(c->pend[i].ev);
		if (c->pend[i].live.slot)
			ap_u64map_release(&c->pend[i].live);
		free(c->pend[i].at);
		free(c->pend[i].spare);
	}
	free(c->pend);
	free(c->dec);
	for (size_t i = 0; i < c->nplan; i++) {
		free(c->plan[i].keep.w);
		free(c->plan[i].xfreed.w);
		free(c->plan[i].x);
		free(c->plan[i].runs);
	}
	free(c->plan);
	free(c->scratch);
	free(c->spare_ev);
	for (int k = 0; k < 6; k++)
		free(c->col[k].b);
	free(c->payload.b);
	free(c->sizes);
	free(c->meta.b);
	stack_table_release(&c->stacks);
	free(c->tids);
	free(c->trial.b);
	ZSTD_freeCCtx(c->ztrial);
	ap_chunk_walk_release(&c->walk);
	ap_streams_release(&c->out_streams);
}

/* The file's current contents, mapped. */
static const uint8_t *map_file(int fd, const char *path, size_t *size, mode_t *mode,
			       struct ap_error *err)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		int e = errno;
		ap_error_set(err, "%s: %s", path, e ? strerror(e) : "not a regular file");
		return NULL;
	}
	*size = (size_t)sb.st_size;
	*mode = sb.st_mode;
	void *map = *size ? mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (map == MAP_FAILED) {
		ap_error_set(err, "%s: %s", path, *size ? strerror(errno) : "empty file");
		return NULL;
	}
	return map;
}

int ap_trace_compact(const char *path, int level, struct ap_compact_stats *st,
		     struct ap_error *err)
{
	memset(st, 0, sizeof(*st));
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return ap_error_set(err, "%s: %s", path, strerror(errno));
	size_t size;
	mode_t mode;
	const uint8_t *data = map_file(in, path, &size, &mode, err);
	close(in);
	if (!data)
		return -1;
	st->bytes_in = size;
	int rc = -1;
	struct ap_buf tmp = AP_BUF_INIT;
	struct compactor c = {
	    .path = path, .err = err, .fd = -1, .level = level, .quantum = 1, .transcode = true,
	    .st = st, .count_only = level == 0};
	if (check_preamble(path, data, size, err) < 0)
		goto out;
	/* first: the quantum, compressed chunks, and whether several threads
	 * write events; then, for several, which thread names which address */
	if (walk_chunks(&c, data, size, false) < 0)
		goto out;
	if (level == 0) {
		/* count only: the file stays as the sampler wrote it */
		st->nthreads = c.ntids;
		st->bytes_out = size;
		rc = 0;
		goto out;
	}
	c.ntids = 0;
	if (c.threads && c.transcode && find_shared(&c) < 0)
		goto out;
	st->cut = false; /* counted again by the pass that writes */
	st->events = 0;
	c.off = 0;
	if (open_output(&c, &tmp) < 0 || walk_chunks(&c, data, size, true) < 0 ||
	    replace_input(&c, &tmp, mode) < 0)
		goto out;
	rc = 0;
out:
	compactor_release(&c, &tmp, rc == 0);
	munmap((void *)data, size);
	return rc;
}

/* ---- compacting while the trace is written ----------------------------- */

struct ap_compact_stream {
	struct compactor c;
	struct ap_compact_stats st;
	struct ap_error err;
	struct ap_buf tmp;
	int in;
	char *path;
};

struct ap_compact_stream *ap_compact_stream_start(const char *path, int level)
{
	if (level <= 0)
		return NULL;
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return NULL;
	struct ap_compact_stream *s = ap_xcalloc(1, sizeof(*s));
	s->in = in;
	s->path = ap_xstrdup(path);
	s->tmp = (struct ap_buf)AP_BUF_INIT;
	s->c = (struct compactor){
	    .path = s->path, .err = &s->err, .fd = -1, .level = level, .quantum = 1,
	    .transcode = true, .st = &s->st, .stream = true, .live = true};
	if (open_output(&s->c, &s->tmp) < 0) {
		ap_compact_stream_abandon(s);
		return NULL;
	}
	return s;
}

/* Walks what the file holds now. */
static int stream_walk(struct ap_compact_stream *s, mode_t *mode)
{
	size_t size;
	mode_t m;
	const uint8_t *data = map_file(s->in, s->path, &size, &m, &s->err);
	if (!data)
		return -1;
	if (mode)
		*mode = m;
	s->st.bytes_in = size;
	int rc = (s->c.off || check_preamble(s->path, data, size, &s->err) == 0) &&
			 walk_chunks(&s->c, data, size, true) == 0 && !s->c.gave_up
		     ? 0
		     : -1;
	munmap((void *)data, size);
	return rc;
}

int ap_compact_stream_feed(struct ap_compact_stream *s)
{
	return stream_walk(s, NULL);
}

int ap_compact_stream_finish(struct ap_compact_stream *s, struct ap_compact_stats *st,
			     struct ap_error *err)
{
	mode_t mode = 0;
	s->c.live = false;
	int rc = stream_walk(s, &mode);
	bool whole = rc < 0 && s->c.gave_up;
	if (rc == 0)
		rc = replace_input(&s->c, &s->tmp, mode);
	if (rc == 0)
		*st = s->st;
	else
		*err = s->err;
	compactor_release(&s->c, &s->tmp, rc == 0);
	close(s->in);
	int level = s->c.level;
	char *path = s->path;
	free(s);
	/* what came since the last feed cannot go on in one pass (a second
	 * thread's first events, written as it exited): the whole file, as
	 * feed's caller would have done */
	if (whole)
		rc = ap_trace_compact(path, level, st, err);
	free(path);
	return rc;
}

void ap_compact_stream_abandon(struct ap_compact_stream *s)
{
	if (!s)
		return;
	compactor_release(&s->c, &s->tmp, false);
	close(s->in);
	free(s->path);
	free(s);
}
