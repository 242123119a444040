/* Reading allocprof traces (docs/trace-format.md): validates the framing,
 * decodes every chunk, and hands the report side one in-memory trace with
 * the events of all threads merged in time order. */
#ifndef AP_TRACE_H
#define AP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ap_trace_enc.h"
#include "ap_hash.h"
#include "ap_symtab.h"
#include "ap_util.h"

/* Progress callback: called now and then with how far a piece of work
 * is: `done` goes from 0 to `total`; the last call has done == total. */
typedef void (*ap_progress_fn)(void *ctx, uint64_t done, uint64_t total);

struct ap_segment {
	uint64_t vaddr, memsz, offset;
	uint32_t flags;
};

/* One loaded module as the sampler saw it. */
struct ap_mapping {
	uint64_t bias;		/* load bias (dlpi_addr) */
	uint64_t start, end;	/* lowest and highest address of its segments */
	char *path;
	uint8_t build_id[64];
	size_t build_id_len;
	struct ap_segment *segs;
	size_t nsegs;
};

struct ap_stack {
	uint32_t depth;
	uint64_t *pcs;		/* pcs[0] innermost; all return addresses */
};

struct ap_thread {
	uint32_t tid;
	char *name;		/* never NULL ("" when unknown) */
	uint64_t events;	/* events recorded on this thread */
	uint32_t proc;		/* its process in a whole run (ap_trace.procs), else 0 */
};

/* One process of a whole run (ap_run_merge). */
struct ap_process {
	char *path;		/* its trace file */
	uint64_t pid, ppid;
	char *exe, *cmdline;	/* cmdline: argv joined by spaces */
	size_t first_thread, nthreads; /* its threads in ap_trace.threads */
	uint64_t events;
	bool has_end;
	bool has_counts;	/* END has the counts (calls, bytes) */
	uint64_t calls, bytes;	/* exact totals (has_counts only) */
	uint64_t end_reason, end_status;
	bool end_status_known;
	bool forked;		/* a forked child (its HEADER has parent_trace) */
	uint64_t end_ns;	/* its END's time (has_end), else its last event's */
};

/* Event flags */
#define AP_EVF_SAMPLED 1u	/* an allocation that is a sample: counts in alloc_* with its weight */
#define AP_EVF_REALLOC 2u	/* ALLOC half of a realloc (the FREE half, if the old block was tracked, comes right before it) */
#define AP_EVF_FROM_REALLOC 4u	/* FREE half of a realloc */
/* FREE (either kind) of a chunk in columns (the frees resolved) that names the
 * block it ends: the event's stack and size are that block's. */
#define AP_EVF_RESOLVED 8u
#define AP_EVF_TEMPORARY 16u	/* with AP_EVF_RESOLVED: the block was temporary (ap_replay.h) */

/* One decoded event. A REALLOC record becomes two events: a FREE of the old
 * block with AP_EVF_FROM_REALLOC (only if it was tracked), then an ALLOC of
 * the new block with AP_EVF_REALLOC (sampled or not). */
struct ap_event {
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	uint64_t addr;
	uint64_t size;		/* ALLOC: requested size; FREE: 0, or AP_EVF_RESOLVED's */
	uint32_t stack;		/* ALLOC: stack id, 0 if none; FREE: 0, or AP_EVF_RESOLVED's */
	uint32_t thread;	/* index into ap_trace.threads (fewer than AP_MAX_THREADS) */
	uint16_t cpu;
	uint8_t type;		/* AP_EV_ALLOC or AP_EV_FREE */
	uint8_t kind;		/* enum ap_alloc_kind (ALLOC only) */
	uint8_t flags;		/* AP_EVF_* */
	/* (--all traces: AP_CHUNK_F_GAPS) ap_gap_code of the time the thread
	 * ran in the program before this call (a realloc's ALLOC half: 0) */
	uint8_t gap;
};

struct ap_trace {
	/* HEADER */
	uint64_t rate;		/* 1 = every allocation */
	uint64_t flags;		/* AP_HFLAG_* */
	uint64_t pid, ppid;
	char *exe;		/* never NULL */
	char **argv;		/* argc entries, NULL-terminated */
	size_t argc;
	uint64_t cpus;
	uint64_t allowed_cpus;	/* CPUs its affinity let it run on (0: not said) */
	uint64_t start_realtime_ns, start_ns;
	uint64_t max_depth;
	uint64_t page_size;
	uint64_t time_quantum_ns; /* events' times are multiples of it (>= 1) */
	uint64_t time_step_ns;	/* the writer's step where times need no finer
				 * one (a multiple of the quantum; 0: not said) */
	char *sampler;		/* never NULL */
	char *parent_trace;	/* NULL unless a forked child */
	/* HEADER's `run_pid`: the pid of the process `record` launched (or
	 * attached to), whose run this trace is part of; 0: not said */
	uint64_t run_pid;
	/* HEADER's `run_id`: the run's own number beside its pid (0: not
	 * said): a later run's program may get the pid of an earlier one's */
	uint64_t run_id;
	/* NULL, or the object whose malloc the program's calls reach instead
	 * of the sampler's (its own allocator): the events are not its
	 * allocations */
	char *malloc_owner;

	/* END (has_end false when the process did not end cleanly) */
	bool has_end;
	uint64_t end_ns;	/* END's time, else the last event's */
	uint64_t end_reason, end_status;
	bool end_status_known;	/* END has a status (0 is a status too) */
	/* END has the counts: not one `record` wrote for a process that
	 * could not (AP_END_KILLED and after) */
	bool has_counts;
	uint64_t calls, bytes;	/* exact totals seen by the sampler (has_counts only) */
	uint64_t cpu_ns;	/* CPU time of the process (all threads, user and
				 * system) at END; 0 when not known */
	/* END's `run_delay_ns`: how long the thread that wrote END waited,
	 * runnable, for a CPU (has_run_delay false: not known) */
	bool has_run_delay;
	uint64_t run_delay_ns;
	/* END's `nvcsw` and `nivcsw`: the process's context switches, every
	 * thread's, voluntary (it blocked: a lock, a queue, a sleep) and
	 * involuntary (preempted), from getrusage (has_switches false: not
	 * known) */
	bool has_switches;
	uint64_t nvcsw, nivcsw;
	/* END's `minflt`: the process's minor page faults (getrusage; false:
	 * not known) */
	bool has_minflt;
	uint64_t minflt;
	/* END's `sampler_waits` and `sampler_wait_ns`: the times its threads
	 * slept waiting for record to take their events, and how long (0:
	 * none, or not said): recording's share of nvcsw and of the time off
	 * its CPU */
	uint64_t sampler_waits, sampler_wait_ns;
	/* END's `stop_errno` (reason AP_END_STOPPED): the errno of the write
	 * that stopped the trace (EFBIG: the file size limit); 0: not said */
	uint64_t stop_errno;
	/* END's `symbols` (AP_EK_SYMBOLS): how many SYMBOLS chunks were
	 * appended after it (0: none, or not said), and how many the file
	 * holds; fewer: the file was cut before them (truncated) */
	uint64_t symbols_said, symbols_chunks;
	/* END (reason exec) says the next image runs unprofiled: the
	 * environment it was given no longer preloads the sampler */
	bool exec_unfollowed;
	/* END's `spawn_unfollowed` and `spawn_first`: how many children the
	 * process started with posix_spawn or posix_spawnp and an
	 * environment that no longer preloads the sampler (they ran
	 * unprofiled), and the first one's program ("" when not said); a
	 * whole run's: the sum, and the first process's that has one */
	uint64_t spawn_unfollowed;
	char spawn_first[256];
	/* the offset of the last END chunk (has_end) */
	size_t end_off;
	/* END's `unwind_ns`: the time the sampler spent unwinding stacks
	 * (--all, with its stack cache; 0: not in the trace) */
	uint64_t unwind_ns;
	/* END's `live_peak` and `live_slack`: the sampler's count of the
	 * largest in-use bytes, every block counted by glibc's usable size,
	 * sampled or not, exact to within live_slack bytes either way
	 * (has_live_peak false: not in the trace, an older one) */
	bool has_live_peak;
	uint64_t live_peak, live_slack;
	/* END's `pooled`: the objects pool/vpool.h pools held at the exit
	 * (sorted identities; NULL and 0 when none or not known). */
	uint64_t *pooled;
	size_t npooled;

	struct ap_mapping *maps;
	size_t nmaps;
	struct ap_stack *stacks; /* indexed by stack id; stacks[0] is empty */
	size_t nstacks;		/* highest id + 1 */
	struct ap_thread *threads;
	size_t nthreads;
	/* SYMBOLS chunks: names, files and lines of PCs, kept with the trace
	 * by `record` (ap_symtab.h; no modules when it has none). */
	struct ap_symtab symtab;
	/* The events are read by ap_events_open/next (below), streamed from
	 * the file: nev counts them, last_ts is the latest one's time (0
	 * with none). `ev` is NULL from the reader; code that builds a trace
	 * in memory (tests) may set ev[0, nev) instead, and then those are
	 * the events. */
	struct ap_event *ev;
	size_t nev;
	uint64_t last_ts;

	/* Truncation: true when the file ends inside a chunk, has no END, or
	 * its END says the trace stopped (AP_END_STOPPED) */
	bool truncated;
	char truncated_why[256];
	uint64_t file_size;
	uint64_t bytes_used;	/* bytes of complete chunks */

	/* Records as written (a REALLOC counts once; ev holds two events for
	 * it when the old block was tracked). */
	uint64_t nrecords;
	/* Every EVENTS chunk is the compactor's, in columns, whose frees are
	 * resolved (docs/trace-format.md, "Frees resolved"): the replay needs
	 * no live map (ap_replay.h). */
	bool resolved;
	/* Records with a gap (AP_CHUNK_F_GAPS): with --all, every one. */
	uint64_t ngap_records;
	/* A whole run of several processes (ap_run_merge), in the order
	 * read; NULL and 0 for a single trace. The header fields above are
	 * the first process's, the END totals the sums. */
	struct ap_process *procs;
	size_t nprocs;
	/* Private to the reader: the mapping lookup index, and where the
	 * events come from. */
	struct ap_map_range *map_index;
	size_t nmap_index;
	struct ap_evsrc *src;
	ap_progress_fn events_progress; /* ap_events_progress */
	void *events_progress_ctx;
	int events_stop;	/* ap_events_stop (atomic) */
};

/* The latest time in the trace: END's, or its last event's if later. */
static inline uint64_t ap_trace_end_ns(const struct ap_trace *t)
{
	return t->last_ts > t->end_ns ? t->last_ts : t->end_ns;
}

/* ---- The events ----
 * A trace's events in order: every thread's merged by time, each
 * thread's own order kept, decoded from the file a batch at a time, so
 * memory does not grow with the trace (each thread being merged holds one
 * decoded chunk). Any number of iterations may run, one after another or
 * at once. The order is the same every time; event i is the i-th handed
 * out. */
struct ap_events;

/* Starts an iteration over t's events (t must outlive it). */
struct ap_events *ap_events_open(const struct ap_trace *t);
/* The next events, as read(2) returns bytes: *out points at up to a few
 * thousand of them, valid until the next call, and it returns how many;
 * 0 at the end; -1 when the events cannot go on: ap_events_error says
 * why, and every later call returns -1 too. (ap_trace_read checks every
 * chunk, but decodes the events of those that carry their counts,
 * AP_CHUNK_F_COUNTS, the compactor's, only when a pass comes to them:
 * one found corrupt then ends the pass with this error, in every pass.) */
ssize_t ap_events_next(struct ap_events *it, const struct ap_event **out);
/* Why ap_events_next returned -1 ("FILE: corrupt chunk at byte N: why",
 * the words ap_trace_read uses), valid until ap_events_close; NULL while
 * it has not. */
const char *ap_events_error(const struct ap_events *it);
void ap_events_close(struct ap_events *it);

/* Progress of iterations: `fn` is called now and then with the events
 * handed out so far and t->nev (the last call with done == total) by
 * every iteration over t started after this call; NULL stops it. */
void ap_events_progress(struct ap_trace *t, ap_progress_fn fn, void *ctx);

/* True when a pass over the events found the file changed since it was
 * read (truncated, or overwritten in place): that thread's events ended
 * there, and what the reports count is short. */
bool ap_trace_changed(const struct ap_trace *t);

/* Ends every iteration over t at its next batch, as if the events ended
 * there, from any thread: for one that must stop a replay running on
 * another, whose results it will not use. */
void ap_events_stop(struct ap_trace *t);

/* Decodes every event into t->ev (random access, for tests and tools:
 * memory grows with the events; the commands never call it). NULL: no
 * trace, nothing done. Returns 0, or -1 with err set (ap_events_next's
 * error; t->ev stays NULL). */
AP_MUST_CHECK int ap_trace_load_events(struct ap_trace *t, struct ap_error *err);

/* Reads the trace at `path`: checks every chunk, decodes the header,
 * metadata and end, and counts the events (which ap_events_open then
 * streams from the file, kept open). `progress` is told how far, in
 * bytes of the file. On success returns 0 and *out owns a trace to
 * release with ap_trace_free(). On failure (missing file, not a trace, bad
 * version, corrupt chunk) returns -1 with err set to "<path>: <why>". A
 * truncated file is not a failure: the trace says truncated and holds the
 * complete prefix. `progress` may be NULL. */
int ap_trace_read(const char *path, struct ap_trace **out, struct ap_error *err,
		  ap_progress_fn progress, void *progress_ctx);

/* The same from memory (the buffer is not kept). `name` is used in errors. */
int ap_trace_read_mem(const void *data, size_t len, const char *name,
		      struct ap_trace **out, struct ap_error *err);

void ap_trace_free(struct ap_trace *t);

/* What one thread's EVENTS payloads carry over to its next: its number
 * (in anonymous blocks' identities), its allocations so far and the index
 * after the one its last REF named (docs/trace-format.md). Zero before its
 * first payload. */
struct ap_decode_thread {
	uint32_t thread;
	uint64_t nalloc, next;
	struct ap_xowners xo; /* (AP_CHUNK_F_XOWN) */
};

/* Decodes one (decompressed) EVENTS payload of thread `th` (updated), for
 * tools that rewrite traces (trace/compact/): its events are appended to
 * *ev (*nev used of *alloc, grown with AP_ALLOC_GROW). `flags`: its chunk's,
 * 0 (rows) or AP_CHUNK_F_COLUMNS, _REFS, _INDEX and _XOWN (with _SIZES or
 * not; any other set is refused); `quantum` the HEADER's
 * time_quantum_ns. Stack ids are not checked. In columns, a FREE of one of
 * the thread's last AP_FREED_RING allocations is resolved without its
 * stack and size (0: this call keeps no ring of them; the reader's
 * passes do). Returns 0, or -1 with *why set (a static string). */
int ap_trace_decode_events(const uint8_t *payload, size_t len, unsigned flags, uint64_t quantum,
			   struct ap_decode_thread *th, struct ap_event **ev, size_t *nev,
			   size_t *alloc, const char **why);

/* Weight of a sample of `size` bytes in this trace (1 with rate 1). */
double ap_trace_weight(const struct ap_trace *t, uint64_t size);

/* The mapping that holds `pc`, or NULL. */
const struct ap_mapping *ap_trace_mapping_for(const struct ap_trace *t, uint64_t pc);

/* Totals over the trace, weights applied (see `allocprof stats`). */
struct ap_trace_totals {
	double alloc_objects, alloc_space;
	double free_objects;
	double inuse_objects, inuse_space;	/* live at the end */
	/* The standard deviation of inuse_objects as an estimate (0 with
	 * rate 1), sqrt(sum w(w-1)) over the live samples, and how many
	 * samples are live. The estimate is heavy-tailed: a block much
	 * smaller than the rate is rarely sampled and weighs ~rate/size when
	 * it is, so most runs read low and the sd from the samples seen
	 * understates it; a few runs read far high. */
	double inuse_objects_sd;
	uint64_t inuse_samples;
	/* The largest live-bytes value after any event. Sampled, it is the
	 * largest of many estimates, so it is biased upward (one live 4 kB
	 * sample at the default rate reads 512 kB); peak_inuse_space_sd is
	 * the standard deviation of the estimate at that point (0 with
	 * rate 1, where the peak is exact). */
	double peak_inuse_space, peak_inuse_space_sd;
	/* Blocks freed by their own thread's next event (ap_replay.h),
	 * weighted; exact with rate 1 only, where every event is in the
	 * trace. temporary_heaptrack: heaptrack's count of that name, by its
	 * rule: frees (a realloc's included) whose event comes right after
	 * an allocation with the freed block's stack and size, in the
	 * trace's order of all threads' events, whichever block that made. */
	double temporary, temporary_heaptrack;
	/* The threads' time in the program between their allocator calls,
	 * summed over the records' gaps (AP_CHUNK_F_GAPS: --all traces;
	 * the trace's ngap_records says whether there are any). */
	uint64_t gap_ns;
	uint64_t events;
	uint64_t samples;
	/* FREE events with no live block at their address (ignored above):
	 * should be 0 for a sound trace. */
	uint64_t unmatched_frees;
	/* FREEs in a forked child of blocks it did not allocate: blocks it
	 * inherited from its parent, live at the fork (ap_replay.h). Not
	 * unmatched, and not the child's allocations either. */
	uint64_t inherited_frees;
	/* FREEs, in a trace of a sampler attached to a running process
	 * (record -p, AP_HFLAG_ATTACHED), of blocks allocated before the
	 * attach: not unmatched, the trace starts mid-run. */
	uint64_t pre_attach_frees;
	/* Blocks live when their image exec'd another (END reason exec):
	 * that heap is gone, so they are not in inuse_*; weighted as the
	 * samples are. */
	double exec_dropped_objects, exec_dropped_space;
};
/* Returns 0, or -1 with err set when the pass over the events failed
 * (ap_replay). */
AP_MUST_CHECK int ap_trace_totals(const struct ap_trace *t, struct ap_trace_totals *out,
				  struct ap_error *err);

/* What a live block of weight w and weighted bytes `space` (w * size)
 * adds to the variance of a live-bytes estimate (Horvitz-Thompson:
 * w(w-1)size^2, as (w-1)/w * space^2); 0 for w <= 1. */
static inline double ap_trace_block_var(double w, double space)
{
	return w > 1 ? (w - 1) / w * space * space : 0;
}

/* ---- Whole runs ----
 * `record` writes one trace per process and per exec'd image: the
 * program's at PATH, then PATH.<pid> for the processes it started (and
 * theirs), PATH.<pid>.exec<n> and PATH.exec<n> for the images a process
 * exec'd into. A whole run is those traces read as one: one time line,
 * every process's allocations and stacks, each process's addresses kept
 * apart by putting process i's (code and heap) at i << AP_RUN_SHIFT
 * (user addresses are below 2^47 on x86-64 and 2^48 on arm64); frames are
 * named by module and offset, which the shift does not change. */
#define AP_RUN_SHIFT 48
#define AP_RUN_MAX_PROCS 65535
/* An address of a whole run's trace as its process saw it. */
static inline uint64_t ap_run_addr(uint64_t a)
{
	return a & ((UINT64_C(1) << AP_RUN_SHIFT) - 1);
}

/* True when `s` is the suffix of a child trace: .<pid>, .<pid>.exec<n> or
 * .exec<n>, each part with -<k> after it when its first name was taken
 * (.<pid>-2, .<pid>-2.exec1-3). */
bool ap_trace_is_child_suffix(const char *s);

/* Why a trace with END reason AP_END_STOPPED ends where it does, from
 * its stop_errno (0: not said), into buf (one phrase, no full stop). */
void ap_trace_stop_why(uint64_t stop_errno, char *buf, size_t len);

/* Whether the file at `path` (not through a symbolic link) starts with
 * the trace magic. */
bool ap_trace_file_is_trace(const char *path);

/* The traces of the processes and images that followed the program whose
 * trace is `path` (PATH + a child suffix), regular files modified at
 * `since` or later, sorted by name, as paths into *out (the strings and
 * the array are the caller's); returns their count. */
size_t ap_trace_children(const char *path, time_t since, char ***out);

/* Several traces read for one report: paths[i] is the file traces[i] was
 * read from. */
struct ap_run {
	struct ap_trace **traces;
	char **paths;
	size_t n;
};

/* Reads each of `paths` and, when `children`, the child traces of each
 * (ap_trace_children) that began after it (older ones are left from an
 * earlier run written to the same path); a path given twice is read once.
 * Returns 0, or -1 with err set (nothing to release then). */
int ap_run_read(struct ap_run *run, const char *const *paths, size_t n, bool children,
		struct ap_error *err, ap_progress_fn progress, void *progress_ctx);

/* Merges the traces of `run` into one (*out), consuming them (`run` is
 * released): the events of all merged by time, threads, stacks and
 * mappings renumbered, procs filled in. One trace is handed over as it
 * is, without procs. Fails (-1, err set; `run` untouched) when the traces
 * were recorded at different rates or hold too many threads. */
int ap_run_merge(struct ap_run *run, struct ap_trace **out, struct ap_error *err);

void ap_run_release(struct ap_run *run);

/* Chunk streams (docs/trace-format.md, "Streams"): the next index of each
 * stream seen. Writers ask it for the index of their next chunk; readers
 * check that every stream's chunks come 0, 1, 2, ... in file order, which
 * finds a duplicated or a missing chunk. Zero-initialised is empty. */
struct ap_streams {
	struct ap_u64map next;	/* stream -> its next index (ap_hash.h; slot NULL: empty) */
};

void ap_streams_release(struct ap_streams *s);

/* The index the next chunk of `stream` gets, counted as written. */
uint32_t ap_streams_next(struct ap_streams *s, uint32_t stream);

/* Checks chunk `index` of `stream` for a chunk of `type`: HEADER and END
 * are in no stream (AP_STREAM_NONE, index 0), every other chunk in one,
 * with the index the stream is at. Returns 0 and counts the chunk, or -1
 * with *why set to what is wrong (a duplicated chunk, missing chunks). */
int ap_streams_check(struct ap_streams *s, uint8_t type, uint32_t stream, uint32_t index,
		     char *why, size_t whylen);

/* The stream writers other than the sampler (the test writer, the
 * compactor) put a chunk in: META chunks in AP_STREAM_META, a thread's
 * EVENTS in a stream of its own. */
static inline uint32_t ap_stream_of(uint8_t type, uint32_t tid)
{
	if (type == AP_CHUNK_META)
		return AP_STREAM_META;
	if (type == AP_CHUNK_EVENTS)
		return tid + 1 >= AP_STREAM_SYMBOLS ? AP_STREAM_SYMBOLS - 1 : tid + 1;
	if (type == AP_CHUNK_SYMBOLS)
		return AP_STREAM_SYMBOLS;
	return AP_STREAM_NONE;
}

/* The chunk walker: one chunk after another from a trace in memory,
 * each checked as docs/trace-format.md ("Reading a trace", step 2) says
 * (framing, checksums, flags, the first chunk HEADER and only one, stream
 * order), for the reader and the compactor alike. Payloads are handed out
 * as stored (compressed or not). */
struct ap_chunk {
	size_t off;		/* of its header in the file */
	uint8_t type, flags;	/* AP_CHUNK_*, AP_CHUNK_F_* */
	uint32_t tid, stream, index;
	const uint8_t *payload; /* in the file */
	uint32_t len;
};

struct ap_chunk_walk {
	const uint8_t *data;	/* the file, `size` bytes (may grow between calls) */
	size_t size;
	size_t off;		/* where the next chunk starts */
	bool have_header;
	uint8_t last_type;	/* the type of the last chunk handed out */
	uint64_t data_chunks;	/* META and EVENTS chunks handed out */
	struct ap_streams streams;
	/* after AP_CHUNK_BAD: the bytes may be a chunk still being written
	 * (a bad magic or checksum), not one written wrong */
	bool maybe_unwritten;
	/* set by the caller: the payloads of META and EVENTS chunks are not
	 * read (their checksums not checked), only their headers: a walk for
	 * the chunks' order and streams (the buffers' finisher) reads a page
	 * a chunk, not the whole file (600 MB for 200 M events) */
	bool headers_only;
};

enum ap_chunk_result {
	AP_CHUNK_OK = 0,    /* *c is the next chunk; w->off is past it */
	AP_CHUNK_EOF = 1,   /* the file ends where the last chunk ended */
	AP_CHUNK_CUT = 2,   /* the truncated tail starts at w->off */
	AP_CHUNK_BAD = -1,  /* corrupt at w->off: why (no "corrupt chunk" prefix) */
};

/* Starts a walk over data[0, size) at the first chunk (after the
 * preamble, which the caller checks). */
void ap_chunk_walk_init(struct ap_chunk_walk *w, const uint8_t *data, size_t size);
void ap_chunk_walk_release(struct ap_chunk_walk *w);
/* The next chunk; see enum ap_chunk_result. After CUT or BAD, w->off stays
 * at that chunk, and a call with more of the file (w->data, w->size
 * updated) tries it again. */
enum ap_chunk_result ap_chunk_next(struct ap_chunk_walk *w, struct ap_chunk *c, char *why,
				   size_t whylen);

#endif
