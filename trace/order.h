/* The ordering stage (order.c): the k-way merge of a trace's threads'
 * event streams by time, and the order of events of different threads
 * within one time quantum.
 *
 * A stream is one thread's EVENTS chunks, in file order; the merge decodes
 * them (decode.h) a chunk at a time as it needs them, and asks its input
 * for each chunk's payload by the id it was given (the file stage reads it
 * again from the file and decompresses it; a test hands out payloads made
 * in memory). Events come out a batch at a time, ordered by time; within a
 * quantum a thread's FREE of a block another thread allocated in that
 * quantum waits for the ALLOC (and an ALLOC at an address still live waits
 * for its FREE), and each thread keeps its own order.
 *
 * Use: ap_order_new, ap_order_add for each stream (stream i is thread
 * index i: its events carry it), ap_order_next until it returns 0 (the
 * end) or -1 (a corrupt chunk: ap_order_error), ap_order_changed,
 * ap_order_free. Not thread-safe: one merge per iteration. */
#ifndef AP_TRACE_ORDER_H
#define AP_TRACE_ORDER_H

#include "ap_trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A stream's buffers, which the input reads and decompresses a chunk into
 * (growing them with ap_xrealloc); the merge owns and frees them. */
struct ap_order_bufs {
	uint8_t *in, *raw;
	size_t in_cap, raw_cap;
};

/* One chunk's payload, as the input hands it to the merge. */
struct ap_order_chunk {
	const uint8_t *payload; /* decompressed; valid until the buffers' next use */
	uint32_t len;
	unsigned columns; /* its chunk flags, as evdec_start takes them */
	bool counted;	  /* not decoded before (AP_CHUNK_F_COUNTS): at its end
			   * the merge checks it holds `want` */
	struct ap_chunk_counts want;
};

/* Where the merge's chunks come from. chunk: chunk `id`'s payload into
 * *out, read with bufs. Returns 0; 1 if it is gone (the file changed
 * since it was checked: the stream ends there, ap_order_changed); -1 if
 * it is corrupt (*why says how: the merge ends, ap_order_error). */
struct ap_order_input {
	void *ctx;
	int (*chunk)(void *ctx, uint32_t id, struct ap_order_bufs *bufs, struct ap_order_chunk *out,
		     const char **why);
};

struct ap_order;

/* A merge of nstreams streams of events at times q * quantum, whose
 * stack ids are below nstacks and whose ALLOCs at anon_min or above are of
 * anonymous blocks (new ones: ap_trace_enc.h); tids (tid -> thread index,
 * NULL: none) names the threads other threads' REFs name. `in` and `tids`
 * must outlive the merge. */
struct ap_order *ap_order_new(const struct ap_order_input *in, size_t nstreams, uint64_t quantum,
			      size_t nstacks, uint64_t anon_min, const struct ap_u64map *tids);

/* Stream `stream`'s chunks (ids for the input), in order; the array must
 * outlive the merge. Every stream is added before the first ap_order_next;
 * one not added has no events. */
void ap_order_add(struct ap_order *o, size_t stream, const uint32_t *chunks, size_t n);

/* The next batch of at most AP_EVENTS_BATCH events (a chain of unblocked
 * ones may add one per stream), in *out until the next call; 0 at the
 * end; -1 once a chunk was found corrupt (the batch it was found in is not
 * handed out, and the merge is not asked again). */
ssize_t ap_order_next(struct ap_order *o, const struct ap_event **out);

/* The corrupt chunk the merge met (its id in *chunk) and why, or NULL. */
const char *ap_order_error(const struct ap_order *o, uint32_t *chunk);

/* Did a chunk turn out to be gone (its input returned 1)? */
bool ap_order_changed(const struct ap_order *o);

void ap_order_free(struct ap_order *o);

/* ---- Following a trace still being written (trace/follow.c) ----
 * The merge goes on from where it stopped as the trace grows: after
 * ap_order_follow (before the first ap_order_next), ap_order_add may give
 * a stream its longer array of chunks (the ones handed out before first,
 * as they were) and ap_order_grow more streams (new threads) and stack
 * ids, between calls of ap_order_next; a stream that ran out of chunks
 * goes on with its next one when it comes. ap_order_limit says up to when
 * the merge may go: it hands out only the events before `limit`, which
 * the caller chooses so that no stream can get an event before it later
 * (every quantum before it complete in every stream): the order is then
 * the one the whole trace is merged in. ap_order_next returns 0 when it
 * is at the limit, and goes on after a later one. */
void ap_order_follow(struct ap_order *o);
void ap_order_grow(struct ap_order *o, size_t nstreams, size_t nstacks);
void ap_order_limit(struct ap_order *o, uint64_t limit);

#endif
