/* The replay: one pass over a trace's merged events that matches every
 * FREE and realloc to the block it ends, once, in one place, and calls
 * its consumers back. Every report that needs to know which blocks are
 * live (stats, top/list's in-use values, advise) is a consumer of it.
 *
 * The rules:
 * - An ALLOC starts a block at its address. A FREE ends the most recent
 *   live block at its address (blocks at one address form a list: a second
 *   ALLOC at a live address happens only when a free was lost, and the
 *   older block is live again once the newer one is freed). A FREE that
 *   finds no block is unmatched.
 * - A realloc is the FREE half of the old block (AP_EVF_FROM_REALLOC)
 *   followed by the ALLOC half of the new one (AP_EVF_REALLOC) on the same
 *   thread: the two are one growth of the same object. An object is a
 *   block and every block it grew into by realloc; it has an id (`obj`),
 *   dense, reused once the object is freed, so consumers can keep their
 *   per-object state in arrays indexed by it.
 * - An unsampled block (the ALLOC half of a realloc continuing a tracked
 *   chain in a sampled trace) is tracked so that its FREE matches, with
 *   weight 0 and stack 0.
 * - A block is temporary, as heaptrack counts them, when the FREE that
 *   ends it (a realloc's FREE half included) is its thread's next event
 *   after the ALLOC that made it: nothing allocated or freed by that
 *   thread in between. Meaningful with --all only (a sampled trace does
 *   not hold the events in between).
 * Events are handed over in the trace's order, with their index.
 *
 * Memory. A trace whose frees are resolved (ap_trace.resolved: every
 * EVENTS chunk the compactor's, in columns) says with each FREE
 * the stack, size and temporariness of the block it ends, as the
 * compactor matched it by these rules; the replay then keeps no block,
 * only how many are live per (process, stack, size), so that it needs
 * memory for sites, stacks and sizes, not for live blocks (a program
 * with 20 M blocks live). Such a replay's blocks have no object
 * (UINT32_MAX); their address is the one their events name them by (the
 * ALLOC's, which the FREE that ends the block names too: an anonymous
 * block's identity, or its address), and 0 in live_at_end and
 * exec_dropped, which see the blocks of one (process, stack, size) one
 * after another (counted only when a consumer takes either). A consumer that needs the live blocks kept (their
 * objects, the blocks live at the end one by one: advise's script, the
 * compactor's plan) says so (`blocks`), and the replay keeps the live map
 * for it, as for every trace not resolved. */
#ifndef AP_REPLAY_H
#define AP_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "ap_trace.h"

struct ap_replay_block {
	uint64_t addr, size;
	uint32_t stack;		/* 0 for an unsampled block */
	double w;		/* its sample weight (1 with --all), 0 unsampled */
	uint32_t obj;		/* the object it belongs to */
	bool temporary;		/* ended blocks (free, grow's old): see above */
	/* Where the replay is, for a consumer without `event` (stats' rule
	 * of heaptrack's temporary allocations looks at the event before
	 * a free). grow's old block: the index of the realloc's FREE half
	 * that ended it (UINT64_MAX: a growth by copy's, whose FREE comes
	 * later). free's block: the index of the event the replay is at,
	 * `i` but for a realloc's FREE half that no ALLOC half followed,
	 * handed over at its thread's next FREE or ALLOC, or after the last
	 * event (then that event's). 0 elsewhere. */
	uint64_t at;
};

/* A consumer: any callback may be NULL. `e` is the event (valid during
 * the call only), `i` its index in the trace. */
struct ap_replay_ops {
	/* Needs each block's address and object (see "Memory" above). */
	bool blocks;
	/* Every event, first, in the trace's order (a realloc's two halves
	 * included). */
	void (*event)(void *ctx, size_t i, const struct ap_event *e);
	/* A block that starts an object. */
	void (*alloc)(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b);
	/* A realloc: `old` ended, `b` (the same object) began. A realloc
	 * whose old block was not tracked is an alloc. */
	void (*grow)(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		     const struct ap_replay_block *b);
	/* The object's last block was freed. */
	void (*free)(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b);
	/* A FREE that found no live block. */
	void (*unmatched)(void *ctx, size_t i, const struct ap_event *e);
	/* After the last event, once per block still live (most recent
	 * first at an address). */
	void (*live_at_end)(void *ctx, const struct ap_replay_block *b);
	/* Optional: a consumer that has it gets here, instead of in
	 * live_at_end, the blocks still live of a process whose image was
	 * replaced by exec (its END's reason): that heap is gone. In a whole
	 * run whose every consumer has it, they come when the exec was:
	 * before the first event after the process's END time (so the
	 * consumer's live bytes drop there); else after the last event. */
	void (*exec_dropped)(void *ctx, const struct ap_replay_block *b);
	/* Optional: in a whole run, the blocks still live of a process that
	 * ended (exit, _exit, a signal, killed or gone; not exec, which
	 * drops them, nor a detach or a snapshot, after which it runs on),
	 * before the first event after its END's time: its heap is gone
	 * from the run's time line then (a later peak does not hold it).
	 * They still come to live_at_end after the last event: what the
	 * process left in use at its exit. */
	void (*exited)(void *ctx, const struct ap_replay_block *b);
	/* Optional: a FREE that found no live block in its process, in a
	 * forked child (HEADER's parent_trace): a block it inherited from its
	 * parent; without it, such a FREE is unmatched. */
	void (*inherited)(void *ctx, size_t i, const struct ap_event *e);
	/* Optional: how a consumer that cannot go on (a file it writes is
	 * full, ...) stops the replay. Asked after each batch of events (a
	 * few thousand), before the blocks live at the end and after them:
	 * 0 to go on; -1, with err set, and the replay calls no consumer
	 * again and returns -1 with that error. A consumer that fails within
	 * a batch is still called for the rest of that batch. */
	int (*failed)(void *ctx, struct ap_error *err);
};

struct ap_replay_consumer {
	const struct ap_replay_ops *ops;
	void *ctx;
};

/* Growth by copy: a program that grows an object by hand (a new block, the
 * old one copied into it and freed: libstdc++'s std::string and
 * std::vector, Rust's Vec through its allocator's realloc fallback, C code
 * that does the same) makes blocks that are one object, as a realloc's
 * are. The replay cannot tell them from unrelated blocks; advise can
 * (report/advise_chains.c) and hands the replay its joins, ascending by
 * `i`: the new block's ALLOC at event i continues the object of the live
 * block at `addr`, whose FREE comes later. With joins, the consumers see
 * that ALLOC as a `grow` (whose event has no AP_EVF_REALLOC: a growth by
 * copy) and nothing of the old block's FREE but its `event`. Only a
 * replay that keeps the live map (a trace not resolved, or a consumer
 * that asks for blocks) joins; the consumers of a resolved trace's
 * replay without it apply the joins themselves (advise's walk). */
struct ap_replay_join {
	uint64_t i;
	uint64_t addr;
	/* the old block's size and stack (what its FREE will say: a walk
	 * without the live map takes them from here) */
	uint64_t size;
	uint32_t stack;
};

/* A pass over a resolved trace's events without the replay (its rules
 * once, here): whether FREE e is one the replay hands to `free` at e
 * itself, ending the block it names. Not: a FREE the compactor found no
 * block for (unmatched or inherited), nor a realloc's FREE half, which
 * waits for its ALLOC half (a `grow`, or a `free` at its thread's next
 * FREE or ALLOC). */
static inline bool ap_replay_resolved_free(const struct ap_event *e)
{
	return (e->flags & (AP_EVF_RESOLVED | AP_EVF_FROM_REALLOC)) == AP_EVF_RESOLVED;
}

/* Replays `t` once, calling every consumer for every event, in the order
 * given. The largest object id used + 1 is returned in *nobj (may be
 * NULL). Returns 0; or -1 with err set when the events cannot go on
 * (ap_events_next's error, "FILE: corrupt chunk at byte N: why") or a
 * consumer failed (`failed`): the consumers have seen part of the trace
 * then, and no live_at_end. */
AP_MUST_CHECK int ap_replay(const struct ap_trace *t, const struct ap_replay_consumer *c, size_t nc,
			    size_t *nobj, struct ap_error *err);
/* ap_replay with joins (above; NULL, 0: none). */
AP_MUST_CHECK int ap_replay_joined(const struct ap_trace *t, const struct ap_replay_join *joins,
				   size_t njoins, const struct ap_replay_consumer *c, size_t nc,
				   size_t *nobj, struct ap_error *err);

/* ---- A replay that goes on as the events come ----
 * (`allocprof tui --follow`, a trace still being written, fed as it
 * grows: trace/follow.c.) ap_replay is ap_replay_start, ap_replay_feed
 * with every batch of the trace's events, in order, and ap_replay_finish.
 * Between feeds the consumers have seen the events so far and nothing at
 * the end (no pending realloc half flushed, no live_at_end): they hold
 * the state of the run up to the last event fed. `t` may grow meanwhile
 * (more threads and stacks, between feeds, never during one); `c` must
 * outlive the run. The ends of a whole run's processes (exec_dropped,
 * exited) are taken from `t` when the run starts: a followed trace is
 * one process's (trace/follow.c reads no child trace), whose END is its
 * last record, so none come later (tests/tui/follow-peak.sh). */
struct ap_replay_run;
struct ap_replay_run *ap_replay_start(const struct ap_trace *t, const struct ap_replay_consumer *c,
				      size_t nc);
/* The next n events (their indexes go on from the last feed's). Returns
 * 0, or -1 with err set when a consumer failed (then only
 * ap_replay_abandon). */
AP_MUST_CHECK int ap_replay_feed(struct ap_replay_run *r, const struct ap_event *ev, size_t n,
				 struct ap_error *err);
/* The end: realloc halves left pending are frees, the live blocks go to
 * live_at_end; returns as ap_replay, and frees r. */
AP_MUST_CHECK int ap_replay_finish(struct ap_replay_run *r, size_t *nobj, struct ap_error *err);
/* Frees a run without its end (NULL: nothing). */
void ap_replay_abandon(struct ap_replay_run *r);

#endif
