/* A trace writer for tests and tools: builds byte-exact format-v2 traces
 * (docs/trace-format.md) from plain calls, in memory or into a file. It is
 * report-side code (it mallocs, aborts on out-of-memory through ap_xmalloc)
 * and is never used by the sampler. Golden tests build synthetic traces with
 * it, so the values a test expects are known by construction.
 *
 * Typical use:
 *
 *	struct ap_tw_header h;
 *	ap_tw_header_init(&h);		// rate 1 (--all), pid 1000, exe "/bin/test"...
 *	h.rate = 4096;
 *	struct ap_tw *tw = ap_tw_new(&h);
 *	ap_tw_mapping(tw, 0x400000, "/bin/test", NULL, 0, segs, nsegs);
 *	uint64_t pcs[] = { 0x401234, 0x401100 };
 *	uint32_t st = ap_tw_stack(tw, pcs, 2);	// dedups: same pcs, same id
 *	ap_tw_thread(tw, 1000, "main");
 *	ap_tw_alloc(tw, 1000, ts, cpu, AP_KIND_MALLOC, 0x1000, 64, st);
 *	ap_tw_free(tw, 1000, ts + 10, cpu, 0x1000);
 *	ap_tw_end(tw, &end);		// leave out for a truncated trace
 *	ap_tw_close(tw, "out.trace", &err);	// or ap_tw_close_mem()
 *
 * Layout decisions the writer makes for you, all as the sampler does them:
 * the preamble and the HEADER chunk come first; META records (mappings,
 * stacks, threads) collect in a buffer that becomes a META chunk before any
 * EVENTS chunk is written (so a stack is always defined before it is used)
 * or when it reaches the chunk size (and at least 64 KiB);
 * each tid has its own event buffer that becomes an EVENTS chunk when it
 * reaches the chunk size (ap_tw_set_chunk_size, default 64 KiB), when you
 * call ap_tw_flush, at ap_tw_end and at close. Thread buffers are flushed in
 * order of the tids' first event. The writer never reorders events of one
 * tid: within a tid, timestamps must not decrease (the call fails if they
 * do).
 *
 * Errors (a decreasing timestamp, a record the format cannot hold) are
 * sticky: the failing call returns -1, and ap_tw_close / ap_tw_close_mem
 * fail with the first error's text. */
#ifndef AP_TRACE_WRITER_H
#define AP_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ap_trace.h"

/* HEADER fields. Strings may be NULL (the key is then left out, except exe
 * and sampler which are written as ""). argv has argc entries; they are
 * written as the cmdline key (each followed by a NUL). */
struct ap_tw_header {
	uint64_t rate;	/* 1 = every allocation */
	uint64_t flags; /* AP_HFLAG_*; ap_tw_header_init sets ALL when rate is 1 */
	uint64_t pid, ppid;
	const char *exe;
	const char *const *argv;
	size_t argc;
	uint64_t cpus;
	uint64_t allowed_cpus; /* HEADER allowed_cpus, written if not 0 */
	uint64_t start_realtime_ns, start_ns;
	uint64_t max_depth;
	uint64_t page_size;
	uint64_t time_quantum_ns; /* events' times are rounded down to multiples of it */
	uint64_t time_step_ns;	  /* HEADER time_step_ns, written if not 0 */
	const char *sampler;
	const char *parent_trace;
};

/* Fills defaults: rate 1, flags ALL, pid 1000, ppid 1, exe "/bin/test",
 * argv { "/bin/test" }, cpus 2, start_realtime_ns 1700000000000000000,
 * start_ns 1000000000, max_depth 64, page_size 4096, time_quantum_ns 1
 * (every timestamp exact), time_step_ns 0 and allowed_cpus 0 (not written), sampler "test",
 * parent_trace NULL. */
void ap_tw_header_init(struct ap_tw_header *h);

/* END fields (see the format doc for reason codes). */
struct ap_tw_end {
	uint64_t end_ns;
	uint64_t reason; /* enum ap_end_reason */
	uint64_t status;
	uint64_t calls, bytes;
	/* the sampler's live-byte peak and its slack (END keys 10 and 11),
	 * written when live_peak is not 0 */
	uint64_t live_peak, live_slack;
	/* the process's context switches (END keys 13 and 14), written when
	 * has_switches */
	bool has_switches;
	uint64_t nvcsw, nivcsw;
	uint64_t unwind_ns;	/* END key 15, written when not 0 */
	bool has_minflt;	/* END key 16 */
	uint64_t minflt;
	uint64_t sampler_waits, sampler_wait_ns;	/* END keys 22, 23 (0: left out) */
};

struct ap_tw;

/* Starts a trace: the preamble and the HEADER chunk are written at once.
 * Never returns NULL. Release with ap_tw_close, ap_tw_close_mem or
 * ap_tw_discard. */
struct ap_tw *ap_tw_new(const struct ap_tw_header *h);

/* Target payload size of EVENTS chunks: a thread's buffer is written as a
 * chunk as soon as it holds at least `bytes` (the chunk may be larger by one
 * record). Clamped to 16 .. 16 MiB - 1 KiB. */
void ap_tw_set_chunk_size(struct ap_tw *tw, size_t bytes);

/* META: a MAPPING record. segs[i].vaddr/memsz/offset/flags as p_vaddr,
 * p_memsz, p_offset, p_flags; build_id may be NULL when build_id_len is 0. */
int ap_tw_mapping(struct ap_tw *tw, uint64_t bias, const char *path, const uint8_t *build_id,
		  size_t build_id_len, const struct ap_segment *segs, size_t nsegs);

/* META: the id of the stack `pcs[0..depth)` (pcs[0] innermost). The same PC
 * array always gets the same id; a new one gets the next id (from 1) and a
 * STACK record. depth 0 is allowed (an empty stack, still a real id). */
uint32_t ap_tw_stack(struct ap_tw *tw, const uint64_t *pcs, uint32_t depth);

/* META: a THREAD record naming `tid`. */
int ap_tw_thread(struct ap_tw *tw, uint32_t tid, const char *name);

/* EVENTS, appended to tid's buffer. `ts` is CLOCK_MONOTONIC ns (the format's
 * clock: start_ns and end_ns are on it too), `cpu` the CPU the record ran
 * on (written only when it changes within a chunk). `kind` is an
 * enum ap_alloc_kind. */
int ap_tw_alloc(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, unsigned kind,
		uint64_t addr, uint64_t size, uint32_t stack);
int ap_tw_free(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, uint64_t addr);
/* flags: AP_RF_NEW_SAMPLED and/or AP_RF_OLD_TRACKED; stack 0 unless the new
 * block is sampled. */
int ap_tw_realloc(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, unsigned kind,
		  uint64_t old_addr, uint64_t new_addr, uint64_t size, uint32_t stack,
		  unsigned flags);

/* From here on, EVENTS chunks carry a gap per record (AP_CHUNK_F_GAPS, as
 * the sampler's with --all); flushes what is buffered first. */
void ap_tw_set_gaps(struct ap_tw *tw);
/* The gap (ap_gap_code) of the next ALLOC, FREE or REALLOC written (then
 * 0 again). */
void ap_tw_gap(struct ap_tw *tw, uint8_t code);

/* Writes the pending META records and every thread's buffered events as
 * chunks now. */
void ap_tw_flush(struct ap_tw *tw);

/* Writes thread tid's buffer as a chunk now, as the sampler does when a
 * thread exits; the writer then holds nothing for it until its next
 * event (a trace of many short threads). */
void ap_tw_flush_thread(struct ap_tw *tw, uint32_t tid);

/* Flushes, then writes an END chunk. May be called more than once (a trace
 * may go on after an END). */
void ap_tw_end(struct ap_tw *tw, const struct ap_tw_end *end);

/* Appends a raw chunk (any type, any payload) after flushing: for tests of
 * the reader's handling of odd files. */
void ap_tw_raw_chunk(struct ap_tw *tw, uint8_t type, uint32_t tid, const void *payload, size_t len);

/* Bytes of the trace so far (complete chunks). */
size_t ap_tw_size(const struct ap_tw *tw);

/* Flushes what is pending (without an END: call ap_tw_end first for a
 * complete trace), writes the file at `path` and frees the writer. Returns
 * 0, or -1 with err set (a sticky error, or the file could not be
 * written). */
int ap_tw_close(struct ap_tw *tw, const char *path, struct ap_error *err);

/* The same into memory: *data (malloc'd, the caller frees) and *len. */
int ap_tw_close_mem(struct ap_tw *tw, uint8_t **data, size_t *len, struct ap_error *err);

/* Frees the writer without writing anything. NULL is fine. (ap_tw_free is
 * the FREE event, hence the name.) */
void ap_tw_discard(struct ap_tw *tw);

#endif
