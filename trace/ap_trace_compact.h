/* Compacting a finished trace: `allocprof record` rewrites the trace the
 * sampler wrote (docs/trace-format.md, "Compression") with each thread's
 * EVENTS chunks joined into large zstd-compressed chunks and META chunks
 * compressed. Report-side code: it mallocs. */
#ifndef AP_TRACE_COMPACT_H
#define AP_TRACE_COMPACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_util.h"

/* What the rewritten trace holds, counted on the way. */
struct ap_compact_stats {
	uint64_t events;	/* records of EVENTS chunks (a REALLOC once) */
	size_t nthreads;	/* distinct tids of EVENTS chunks */
	bool has_end;		/* the last complete chunk is END */
	bool cut;		/* the file ends inside a chunk (kept as it was) */
	uint64_t cut_at;	/* where that incomplete chunk starts, in the input */
	uint64_t bytes_in, bytes_out;
};

/* Rewrites the trace at `path` in place (a temporary file in the same
 * directory, renamed over it), compressing with zstd `level` (1..19).
 * Level 0 only validates and counts (st filled, the file untouched).
 * Chunks already compressed pass through; an incomplete last chunk is
 * copied as it was, so the result is truncated where the input was. On
 * failure (not a format-2 trace, a corrupt chunk, an I/O error) returns -1
 * with err set to "<path>: <why>" and leaves the file untouched. */
int ap_trace_compact(const char *path, int level, struct ap_compact_stats *st,
		     struct ap_error *err);

/* Compacting while the program still writes the trace (on a core the
 * program is not using): `record` starts a stream once the trace is
 * AP_COMPACT_MIN_BYTES, feeds it what the sampler appended now and then,
 * and finishes it when the program is gone. The result is the file
 * ap_trace_compact would make of the finished trace.
 *
 * start: NULL if the file cannot be opened or level is 0.
 * feed: compacts the complete chunks appended since the last call; -1 if
 *   the stream cannot go on (a second thread's events, whose anonymous
 *   blocks need a look at the whole trace first; a chunk compressed
 *   already; an I/O error): abandon it and call ap_trace_compact once the
 *   writer is done.
 * finish: the writer is done: compacts the rest and replaces the file
 *   (the whole file with ap_trace_compact if the rest cannot go on in the
 *   stream, as feed's -1 says); errors as ap_trace_compact's (the file
 *   then stays as it was). Frees s.
 * finish_keep: as finish, but s stays, to be freed by abandon (which then
 *   leaves the file as finish left it): `record` frees the compactor's
 *   buffers and tables while the trace's symbols are kept.
 * abandon: drops the partial output. Frees s (NULL is fine). */
struct ap_compact_stream;
struct ap_compact_stream *ap_compact_stream_start(const char *path, int level);
int ap_compact_stream_feed(struct ap_compact_stream *s);
int ap_compact_stream_finish(struct ap_compact_stream *s, struct ap_compact_stats *st,
			     struct ap_error *err);
int ap_compact_stream_finish_keep(struct ap_compact_stream *s, struct ap_compact_stats *st,
				  struct ap_error *err);
void ap_compact_stream_abandon(struct ap_compact_stream *s);

/* Finishing a trace from its buffers file (ap_trace_buffers.h), once its
 * process is gone: the records its buffers held are appended as chunks,
 * and the trace gets an END if it has none after them: a copy of its
 * last END (with the chunks counted now) when the process wrote one and
 * went on (the frees glibc makes after it), else one built from `how`
 * (how the caller saw the process end: reason AP_END_KILLED,
 * AP_END_RAW_EXIT or AP_END_GONE, the status, the time), without
 * `calls` and `bytes`. A trace cut inside its last chunk is cut back to
 * the chunks before it first (that chunk's records are in its buffer).
 * The buffers file is removed once it is finished. One process at a
 * time finishes a trace (a lock on its buffers file): one that finds
 * another at it, or its buffers file gone meanwhile, does nothing
 * (out->busy). Returns 0 (also when there is no buffers file: out->found
 * false, nothing done) or -1 with err set ("<path>: <why>"). A corrupt
 * trace is left as it is. */
struct ap_death {
	unsigned reason;
	bool status_known;
	uint64_t status;
	uint64_t end_ns;
};
struct ap_finished {
	bool found;		/* there was a buffers file */
	bool busy;		/* another process is finishing the trace from it:
				 * nothing was done */
	uint64_t chunks;	/* chunks added from it */
	bool end_added;		/* an END was added (reason: its reason) */
	unsigned reason;
	uint32_t stop_errno;	/* reason AP_END_STOPPED: why the trace stopped */
	int ring_errno;		/* the ring's chunks could not be written (errno) */
};
int ap_trace_finish_buffers(const char *path, const struct ap_death *how,
			    struct ap_finished *out, struct ap_error *err);

/* How a process nobody saw end ended: AP_END_GONE, without a status, at
 * about the last change of its trace or of its buffers file (an END's
 * end_ns, CLOCK_MONOTONIC). */
void ap_death_gone(const char *path, struct ap_death *how);

/* A trace its process and record both left unfinished (killed together:
 * `kill -9` of the process group): finished from its buffers file as
 * record would have (ap_trace_finish_buffers, ap_death_gone), for a
 * reader. Only where nothing writes it any more: no process holds the
 * trace's writer's lock, and no process of the buffers file's pid has
 * the file mapped (or none runs).
 * Another process finishing it meanwhile is waited for (up to 10 s).
 * Returns as ap_trace_finish_buffers (out->found false: nothing left,
 * or it is not time). */
int ap_trace_finish_left(const char *path, struct ap_finished *out, struct ap_error *err);

/* A trace's ring (ap_trace_buffers.h), drained by `allocprof record`
 * while the process runs: the chunks the sampler put there appended to
 * the trace, whole, in the order they were put. */
struct ap_ring_drain {
	int tfd;		/* the trace, appending */
	int sfd;		/* the buffers file (its ring's room grown) */
	uint8_t *map;		/* the buffers file, up to the ring's end */
	size_t maplen;
};
/* Opens the ring of the trace at `path`: 1 if it has one in use, 0 if
 * not (no buffers file, no ring, the sampler writes the trace itself,
 * another run's: run_id, unless 0), -1 with err set. */
int ap_ring_drain_open(struct ap_ring_drain *d, const char *path, uint64_t run_id,
		       struct ap_error *err);
/* Appends what the ring holds to the trace (another process at it: its
 * turn). Returns 0, or 1 once the ring is done with (the sampler took
 * over, the trace stopped or was finished), or -1 when a write failed
 * (errno): the trace cut back to its whole chunks, and stopped, which
 * the sampler sees; *bytes: how many it appended. */
int ap_ring_drain(struct ap_ring_drain *d, uint64_t *bytes);
void ap_ring_drain_close(struct ap_ring_drain *d);
/* Sleeps up to ms milliseconds, or until the ring's sampler, finding it
 * a quarter full, rings (its doorbell): how the drain waits once every
 * ring has been idle a while. 0, or -1 without a ring. */
int ap_ring_drain_sleep(struct ap_ring_drain *d, unsigned ms);
/* Rings the doorbell: a drain asleep on it wakes (record's end does not
 * wait for the sleep to be over). */
void ap_ring_drain_wake(struct ap_ring_drain *d);
/* Whether no process holds the trace's writer's lock any more (its
 * process exited or exec'd): the finisher takes what is left. */
bool ap_ring_drain_writer_gone(const struct ap_ring_drain *d);

/* A copy at `out` of the trace at `trace` that a process is still
 * writing under `allocprof record`, with what its buffers file holds
 * (every thread's records up to now, which the trace has not got yet),
 * finished as ap_trace_finish_buffers finishes a trace, with an END of
 * reason AP_END_SNAPSHOT: the reports read everything the process had
 * recorded, and the process goes on, unaware (nothing of it is touched).
 * Each buffer is copied whole or not at all (its owner may be writing
 * it: copied again until its chunk index and stream held still). `out`
 * is made aside and renamed into place; an existing file there is
 * replaced. Returns 0, or -1 with err set ("<path>: <why>"); a trace
 * without a buffers file is no running trace of record's (said). */
int ap_trace_snapshot(const char *trace, const char *out, struct ap_finished *fin,
		      struct ap_error *err);

/* The level `allocprof record` uses by default (`record --compress-level`
 * and ALLOCPROF_COMPACT_LEVEL choose another). The user waits for the
 * compaction: level 10 compacted bench/mixed's --all trace (random sizes,
 * 20 M events) in 1.8 s of CPU against level 3's 1.1 s, for a file 0.13 %
 * smaller, and its bigger tables cost ~10 ms more on a 500 kB trace; level 3 costs
 * 0.5-6 ms on traces of 1-500 kB and makes them 3-400 times smaller. */
#define AP_COMPACT_LEVEL 3
/* ...and where level 1 packs a chunk to an eighth or less, this one is
 * used instead at levels AP_COMPACT_LEVEL to 11 (trace/compact/zwrite.c,
 * compact_write_compressed): on repetitive events it costs little more and packs
 * much more (bench's sqlite3: 173 K at level 3, 129 K so; heaptrack's
 * 156 K). Level 15 packed it to 121 K, and cppcheck's 2,869,110 bytes to
 * 2,863,772, for a third more of record's CPU: once the program's side
 * had become cheaper (sampler/cfi.c), the compaction was what the user
 * waited for (cppcheck recorded --all: 2.30 s at 15, 1.81 s at 12,
 * heaptrack 4.1 s; bench/README.md, session 37). */
#define AP_COMPACT_DENSE_LEVEL 12
/* ...but this one for the last chunk of a trace of one thread, which
 * record compresses after the program's exit, while the user waits
 * (rewrite.c, flush_fed): level 15 on bench/realloc's last 7 MB took
 * 40-80 ms of the 0.5 s run, level 9 10 ms, for the same bytes there
 * (python3's 60,000 rounds, one chunk: 23,193 bytes -> 23,246). */
#define AP_COMPACT_LAST_LEVEL 9
/* The trace's size from which `record` compacts it while the program runs. */
#define AP_COMPACT_MIN_BYTES (2u << 20)

#endif
