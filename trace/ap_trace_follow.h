/* Following a trace while its program still writes it (`allocprof tui
 * --follow`, `record --live`): the reader's first pass goes on from where
 * it stopped as the file grows, and the merge hands out the events that
 * have come since, in the order the whole trace is merged in, so that a
 * replay fed with them (ap_replay_start) keeps its state instead of
 * starting again.
 *
 * Events come out up to a limit: the time before which every thread's
 * events are in the file. A thread's events since its last chunk wait in
 * its buffer (the sampler writes a buffer when it is full, at the thread's
 * exit and at the end), so the limit is the earliest time a buffer still
 * holds, read from the trace's buffers file (`<trace>.buffers`, which
 * `record` makes: docs/trace-format.md, "Buffers file"), or a little
 * before now when every buffer is empty. Without a buffers file the limit
 * stays where it is until the trace ends. Once the trace ends (its END
 * read, its writer's lock and its buffers file gone) every event comes
 * out. */
#ifndef AP_TRACE_FOLLOW_H
#define AP_TRACE_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ap_trace.h"

struct ap_follow;

/* Opens the trace at `path` (as ap_trace_read: a file whose first chunk,
 * the header, is there) to follow it. Returns 0 with *out set, or -1 with
 * err set. */
int ap_follow_open(const char *path, struct ap_follow **out, struct ap_error *err);

/* The trace as far as it was read: its metadata (threads, stacks,
 * mappings, symbols) grows with every ap_follow_update, whose arrays may
 * move then; valid until ap_follow_close. Its own events (ap_events_open)
 * are every event read so far, in a merge of their own (the last quanta
 * perhaps incomplete). */
struct ap_trace *ap_follow_trace(struct ap_follow *f);

/* Reads what the file gained: new chunks checked and decoded, and the new
 * limit. Returns 0; 1 once the trace has ended (every event can come out:
 * the calls after it do nothing); -1 with err set when a chunk is corrupt
 * (the trace then stays as it was). */
int ap_follow_update(struct ap_follow *f, struct ap_error *err);

/* The next events before the limit, as ap_events_next: *out valid until
 * the next call; 0 when there are no more until an update moves the
 * limit; -1 with err set when a chunk turns out corrupt (and every later
 * call). */
ssize_t ap_follow_next(struct ap_follow *f, const struct ap_event **out, struct ap_error *err);

/* The limit (UINT64_MAX once ended; 0 before any). */
uint64_t ap_follow_limit(const struct ap_follow *f);
/* Whether the trace ended without END: nothing writes or finishes it any
 * more (its program and `record` killed, say), and the events that were
 * still in the buffers file then are not in it (`allocprof snapshot`
 * copies them). */
bool ap_follow_gone(const struct ap_follow *f);
/* Whether a buffers file said where the threads are (else the events wait
 * for the end). */
bool ap_follow_has_buffers(const struct ap_follow *f);
/* How many times the mappings changed (a dlopen): what holds pointers
 * into them (a symbolizer) is made again when it moves. */
uint64_t ap_follow_maps_changed(const struct ap_follow *f);

/* Frees f and its trace (NULL: nothing). */
void ap_follow_close(struct ap_follow *f);

#endif
