/* What the compactor's units share (trace/compact/): the compactor's
 * state, and each unit's calls on it. Not part of the public API
 * (ap_trace_compact.h).
 *
 *   compact.c  the driver: the public calls, the walk over the input's
 *              chunks, the output file
 *   plan.c     several threads: which blocks another thread ends (plan.h)
 *   rewrite.c  a thread's events held, then re-encoded with the plan
 *              (on encoder threads, with two CPUs)
 *   stacks.c   META's stacks that share their outer frames (stacks.h)
 *   zwrite.c   the output's chunks: zstd on writer threads, the level,
 *              their order, END's chunk count */
#ifndef AP_COMPACT_INT_H
#define AP_COMPACT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "ap_hash.h"
#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "ap_trace_encode.h"
#include "bytes.h"
#include "plan.h"
#include "stacks.h"

/* A live block of the thread's own that it frees itself: its allocation
 * index (| LIVE_KEPT: it keeps its address, and its FREE names that), the
 * position of the block live at the same address before it
 * (AP_U64MAP_NONE: none), and its stack and size (the frees resolved). */
struct live_at {
	uint64_t index;
	uint64_t size;
	uint32_t older;
	uint32_t stack;
};
#define LIVE_KEPT (1ull << 63)

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
	bool last_alloc; /* its last event was an allocation (index nalloc - 1) */
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
	/* its latest live block, not yet in the map (encode puts it there
	 * before it returns): most blocks are freed by the thread's next
	 * event, and then never go in */
	bool held;
	uint64_t held_addr;
	struct live_at held_at;
	struct ap_gapq gq; /* its windows' gaps (AP_GAP_WINDOW) so far */
	/* an encoder thread encodes its events (under the encoders' lock):
	 * everything above but ev, nev, alloc, input and base is its own
	 * until then */
	bool busy;
};

/* A compressed payload's buffer. */
struct zout {
	uint8_t *b;
	size_t cap;
};

/* What encoding one thread's events takes besides the thread's own state
 * (rewrite.c): the columns (col[5]: the sizes, not predicted; col[6]:
 * gaps; col[7]: the blocks the frees end), the payload, the size
 * predictor (AP_CHUNK_F_SIZES) and the trial compressor. One per encoder
 * thread, and the compactor's own. */
/* A chunk being encoded (rewrite.c's encode_begin, _feed, _end): the
 * encoder's state between the batches of events it is fed. */
struct lane_chunk {
	struct ap_evenc enc;
	size_t nrec, last_step, nalloc, nev;
	uint64_t wsum, wn; /* the gaps' window so far */
	uint64_t last_ts, q, qr;
	bool open;
};
struct lane {
	struct lane_chunk chunk;
	struct bytes col[8], payload;
	struct bytes times; /* col[3] as the times column's planes */
	struct ap_size_pred *sizes;
	ZSTD_CCtx *zc;
	struct zout trial;
};
struct encoders;


struct compactor {
	const char *path;
	struct ap_error *err;
	int fd;
	int level;
	uint64_t quantum;
	uint64_t step;	    /* HEADER time_step_ns in quanta (1: times kept) */
	bool transcode;	    /* no chunk was compressed before: re-encode them all */
	bool threads;	    /* EVENTS of more than one tid: track who names what */
	struct zworker *zw; /* compresses and writes the payloads (zwrite.c) */
	ZSTD_CCtx *ztrial;  /* write_compressed's trial */
	struct zout trial;
	size_t dense; /* payload bytes given AP_COMPACT_DENSE_LEVEL so far */
	struct pending *pend;
	size_t npend, pend_alloc;
	size_t held; /* sum of the pending input */
	/* several threads: what compact_plan found, per thread */
	struct thread_plan *plan;
	size_t nplan;
	struct ap_event *scratch;
	size_t nscratch, scratch_alloc;
	/* the event array of the thread written last, for the next thread
	 * that needs one: the arrays follow the events held, not the
	 * threads (a run of thousands of short threads) */
	struct ap_event *spare_ev;
	size_t spare_alloc;
	/* the largest event array made so far (events): a new one is made
	 * that large at once (rewrite.c, reserve_events) */
	size_t ev_alloc_max;
	struct lane lane;	  /* encoding here, without encoder threads */
	struct encoders *enc;	  /* the encoder threads (rewrite.c), or NULL */
	bool enc_tried;		  /* (made at the first chunk encoded, if they can be) */
	bool gaps;		  /* the raw events have gaps (AP_CHUNK_F_GAPS) */
	struct bytes meta;	      /* META records not written yet (COMPACT_META) */
	uint32_t meta_tid;	      /* the tid of their first chunk */
	struct stack_table stacks;
	uint32_t *tids; /* distinct tids seen, for the count */
	size_t ntids, tids_alloc;
	/* decoding tids[i]'s raw chunks in this walk: what they carry over */
	struct ap_decode_thread *dec;
	size_t dec_alloc;
	bool count_only; /* level 0: count events and threads only */
	struct ap_compact_stats *st;
	/* streaming (ap_compact_stream_*): the file may still grow */
	size_t off;  /* where the next chunk starts (0: the preamble is next) */
	bool live;   /* an incomplete tail is not yet complete, not cut */
	bool stream; /* one pass, one thread: give up on anything else */
	bool gave_up;
	struct ap_chunk_walk walk;     /* the input's chunks, checked */
	struct ap_streams out_streams; /* the output's chunk indices */
	uint64_t data_chunks;	       /* META and EVENTS chunks written */
};

/* ---- compact.c: the driver ---- */

/* Sets c->err to "<path>: corrupt chunk at byte <off>: <why>"; -1. */
int compact_corrupt_at(struct compactor *c, size_t off, const char *why);
/* Decodes a raw EVENTS payload of tid (at `off` in the input), appending
 * to ev; counts its records. -1 (c->err set) if it does not decode. */
int compact_decode_raw(struct compactor *c, size_t off, uint32_t tid, unsigned flags,
		       const uint8_t *payload, uint32_t len, struct ap_event **ev, size_t *nev,
		       size_t *alloc);

/* ---- rewrite.c: events held per thread and re-encoded ---- */

/* encode.c: a thread's events as one EVENTS payload in L->payload (its
 * flags returned, its counts in *counts), begun at the time of its first
 * event (the thread's `base`), fed in one batch or many, ended; or at
 * once (compact_encode_part). */
void compact_encode_begin(const struct compactor *c, struct lane *L, struct pending *p,
			  uint64_t ts, uint64_t base);
void compact_encode_feed(const struct compactor *c, struct lane *L, struct pending *p,
			 const struct ap_event *ev, size_t nev, uint64_t base, bool gaps);
unsigned compact_encode_end(struct lane *L, struct pending *p, bool gaps,
			    struct ap_chunk_counts *counts);
/* A chunk is written before its payload could pass this (the format's
 * 16 MiB, less the counts and room for a slice of events): a FREE of a
 * block allocated in an earlier chunk takes 2 bytes of the sampler's and
 * 5 to 9 or more once resolved (its tag, its index, the block's stack and
 * size), so a chunk's input does not bound its payload. */
#define COMPACT_PAYLOAD_MAX (AP_CHUNK_MAX_PAYLOAD - (1u << 20))
/* Events encoded between two looks at that bound (at most ~150 bytes of
 * columns each: 600 KiB). */
#define COMPACT_SLICE 4096u
/* At least the payload compact_encode_end would make of the chunk open
 * in L now (its columns so far). */
size_t compact_encode_bound(const struct lane *L);
/* How many events of ev from `done` (of n) to encode next: a slice, and
 * never a realloc's FREE without its ALLOC (one record). */
size_t compact_encode_slice(const struct ap_event *ev, size_t done, size_t n);
/* The thread's events ev (the thread's `base` the first) from *done on,
 * as one chunk: begun, fed in slices until they are all in or its
 * payload nears COMPACT_PAYLOAD_MAX, ended; *done moves past those fed.
 * A caller writes the chunk and calls again while *done < n: the bytes
 * are those of compact_encode_begin, _feed and _end of them at once
 * wherever the chunk stays under the bound. */
unsigned compact_encode_part(const struct compactor *c, struct lane *L, struct pending *p,
			     const struct ap_event *ev, size_t n, uint64_t base, bool gaps,
			     size_t *done, struct ap_chunk_counts *counts);
/* A thread written out drops its live map once no block is left in it. */
void compact_live_shrink(struct pending *p);

/* A raw EVENTS payload of tid (at `off` in the input): its events held
 * with the thread's, and the threads' held events written (re-encoded:
 * anonymous blocks, frees by index, columns) once a thread holds enough
 * or all of them hold too much. */
int compact_events(struct compactor *c, size_t off, uint32_t tid, unsigned flags,
		   const uint8_t *payload, uint32_t len);
/* Writes every thread's held events, then the META held back. */
int compact_flush_all(struct compactor *c);
/* END's `pooled` list (docs/trace-format.md) with the blocks this
 * compactor made anonymous named by their thread and allocation index
 * (their addresses are no longer in the file). Appends the key/value to
 * out (room for 2 * AP_VARINT_MAX per entry of `len` bytes, and 3 more).
 * Returns its length, or 0 if the list does not decode. */
size_t compact_pooled_anon(const struct compactor *c, const uint8_t *s, size_t len, uint8_t *out);
/* Frees the held events, the live maps and the encoder's buffers. */
void compact_rewrite_release(struct compactor *c);
/* Waits until the encoder threads encoded and wrote (gave the writer)
 * every thread's events given them; -1 (c->err set) if a write failed.
 * Whatever else is written, or held back (META), waits for this. */
int compact_encoders_drain(struct compactor *c);
/* Stops the encoder threads (dropping what they did not write); before
 * the writer stops. */
void compact_encoders_stop(struct compactor *c);

/* ---- zwrite.c: the output's chunks ---- */

/* The CPUs the compactor's threads may use: the affinity mask's
 * (ap_cpus_here), 0 with ALLOCPROF_COMPACT_NO_THREAD=1 (no threads). */
unsigned compact_cpus(void);

/* The writer (and its threads, if it can have some), and the trial
 * compressor. */
void compact_writer_start(struct compactor *c);
/* Waits until every payload given is written; -1 (c->err set) if a
 * write failed. */
int compact_drain(struct compactor *c);
/* Stops the writer's threads, drops what they did not write, frees the
 * writer. */
void compact_writer_stop(struct compactor *c);
/* Bytes written as they are, after every payload given. */
int compact_out_write(struct compactor *c, const void *data, size_t len);
/* One chunk as it is, after the META records held back. */
int compact_write_chunk(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
			const uint8_t *payload, size_t len);
/* A payload given to the writer, to be compressed when that makes it
 * smaller (the level chosen here), after the META held back; `counts`
 * (EVENTS) go in front of it, not compressed. */
int compact_write_compressed(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
			     const struct ap_chunk_counts *counts, const uint8_t *raw, size_t len,
			     bool last);
/* The size of raw compressed at level 1 with zc (its frame in *o;
 * SIZE_MAX: it does not compress). */
size_t compact_trial_size(ZSTD_CCtx *zc, struct zout *o, const uint8_t *raw, size_t len);
/* A raw META payload of tid (at `off`) re-encoded (stacks.h) into the
 * META records held back, which are written as one chunk before the next
 * other chunk, or once they are large. */
int compact_hold_meta(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		      size_t len);
/* The META records held back, as one chunk. */
int compact_flush_meta(struct compactor *c);
/* An END (at `off`) with the chunk count of the output, after every
 * payload given: its other fields as they were, in their order (`pooled`
 * with the blocks made anonymous named by index). */
int compact_write_end(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		      size_t len);

#endif
