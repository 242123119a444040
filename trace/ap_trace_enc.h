/* Trace format constants and encoding primitives shared by the sampler and
 * the reader. Header-only and allocation-free: the sampler includes it from
 * inside malloc. docs/trace-format.md documents every constant here. */
#ifndef AP_TRACE_ENC_H
#define AP_TRACE_ENC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AP_TRACE_MAGIC "ALLOCPRF"
#define AP_TRACE_MAGIC_LEN 8
/* The version written, and the only one the reader reads: a trace of
 * another version is recorded again. (AP_TRACE_VERSION_MIN: the same, for
 * the compactor's check.) */
#define AP_TRACE_VERSION 10u
#define AP_TRACE_VERSION_MIN AP_TRACE_VERSION
#define AP_TRACE_BOM 0x01020304u
#define AP_TRACE_PREAMBLE_LEN 16

/* The locks on a trace (docs/trace-format.md, "Live traces"), OFD locks
 * on byte ranges that do not overlap: the writer's, held by every process
 * that may still append to the trace, and the run's, held by `allocprof
 * record` from before the program starts until the trace is finished. A
 * trace is live while the writer's range is locked, in use while either
 * is. */
#define AP_LOCK_WRITER_LEN (1ll << 62)
#define AP_LOCK_RUN_AT (1ll << 62)

/* Room a trace's path needs past the output's (PATH_MAX bytes in all):
 * the longest tail of a child's or an exec'd image's trace name is
 * ".<pid>-<n>.exec<gen>-<n>" (sampler/README.md, "fork and exec"), and
 * the sampler refuses an output within this many bytes of PATH_MAX. */
#define AP_OUTPUT_PATH_ROOM 64
/* The longest tail of a trace's name handed to the next image. */
#define AP_OUTPUT_SUFFIX_MAX 40

/* The flags field of record's ALLOCPROF variable (sampler/README.md):
 * --no-children, --gaps. */
#define AP_CFG_NO_CHILDREN 1u
#define AP_CFG_GAPS 2u
/* ALLOCPROF=<pid>[.<run>[.<record's pid>]]:<rate>:<depth>:<flags>:<output>:
 * the fields after the pid's, in the order sampler/config.c reads them
 * (CFG_RATE, CFG_DEPTH, CFG_NO_CHILDREN, CFG_OUTPUT), for an unsigned
 * long long, two unsigned and a string; every writer's format. */
#define AP_CFG_SETTINGS_FMT ":%llu:%u:%u:%s"

#define AP_CHUNK_MAGIC 0x4b435041u /* "APCK" */
#define AP_CHUNK_HDR_LEN 32
/* Where the header's own CRC-32C sits; it covers the bytes before it. */
#define AP_CHUNK_HDR_CRC_OFF 28
/* The stream of HEADER and END chunks: none (docs/trace-format.md,
 * "Streams"). */
#define AP_STREAM_NONE 0xffffffffu
/* The stream of the sampler's META chunks; its thread buffers are
 * streams 1, 2, ... */
#define AP_STREAM_META 0u
/* The stream of SYMBOLS chunks (after END: docs/trace-format.md). */
#define AP_STREAM_SYMBOLS 0xfffffffeu
#define AP_CHUNK_MAX_PAYLOAD (16u << 20)

/* Chunk header byte 5: flags. ZSTD: the payload is `u32 raw_len` then one
 * zstd frame that decompresses to exactly raw_len (at most
 * AP_CHUNK_MAX_PAYLOAD) bytes, the chunk's real payload. */
#define AP_CHUNK_F_ZSTD 1u
/* EVENTS, with or without ZSTD: the (decompressed) payload is in columns:
 * `uv len1, uv len2, uv len3`, then column 0 (tags, cpus, SYNC/TIME values,
 * stacks, REALLOC flags), column 1 (len1 bytes: addresses and distances),
 * column 2 (len2 bytes: sizes), column 3 (len3 bytes: times, as pairs
 * (skip, dq): after `skip` more event records the quantum grows by dq;
 * `uv n`, the skips' low, second and third bytes, then the dq as `uv`:
 * ap_enc_time_planes, version 10). The records are the same; each field is read from its column, so
 * zstd sees each kind of field apart. */
#define AP_CHUNK_F_COLUMNS 2u
/* EVENTS in columns (version 5): a fifth column holds the distances (REF
 * fields of FREE and REALLOC) apart from the address fields, `uv len4`
 * after len3 and the column after column 3. Distances are small numbers
 * that repeat, addresses are not; zstd packs each better alone (the
 * addresses and distances of python3 with PYTHONMALLOC=malloc: 146 KB
 * together, 100 KB apart). */
#define AP_CHUNK_F_REFS 4u
/* EVENTS in columns with the distances column (version 6): a REF names
 * its block by the thread's allocation index, not by distance: the field
 * is zigzag(index - the thread's previous REF's index), and the block is
 * the anonymous one the thread's index-th allocation made. Indexes count
 * across the thread's chunks, so a block freed long after its allocation
 * (a document built, then dropped) still needs no address; frees in the
 * order of the allocations cost a repeated small step. */
#define AP_CHUNK_F_INDEX 8u
/* EVENTS in columns (version 6): the size field of ALLOC and REALLOC is
 * zigzag(size - the size the last such record of the payload with the
 * same stack gave), where struct ap_size_pred still holds that stack (0
 * where it does not). A call site allocates the same size, or one a
 * step from the last: threads that run the same loops wrote their sizes
 * column apart as 46 KB each (handoff), 0.3 KB predicted. */
#define AP_CHUNK_F_SIZES 16u
/* EVENTS with AP_CHUNK_F_INDEX (version 7): a REF of another thread's
 * allocation steps from the index after the last one the thread named of
 * that same thread (struct ap_xowners), and bit 1 of its field says the
 * tid is the one of the thread's last such REF (then it is not written).
 * python3's consumer threads, freeing what two producers made, named
 * them with one `xnext` for both: a step across the two at every switch;
 * 13 % less of the REF column. */
#define AP_CHUNK_F_XOWN 32u
/* EVENTS (version 8): the stored payload starts with what the events in
 * it add up to (struct ap_chunk_counts, not compressed), and the payload
 * as above follows. The reader takes a thread's counts and last time from
 * them, and leaves decoding (and so checking) the events to the
 * iterations over them, which compare what they decode with the counts:
 * pass 1 on the bench's 200 M events was 93 of advise's 610 instructions
 * an event. Only the compactor writes it. */
#define AP_CHUNK_F_COUNTS 64u
/* EVENTS (version 9): the records carry gaps (ap_gap_code): how long the
 * thread ran in the program since its last allocator call returned,
 * before this one was made. In rows every ALLOC, FREE and REALLOC record
 * has its own, a byte after the tag (and cpu): the sampler's, with
 * --all. In columns (the compactor's) a sixth column, `uv len5` after
 * len4 and the column after column 4, has one byte per AP_GAP_WINDOW
 * such records of the payload (the last for the rest): the mean gap of
 * the window, which each of its records has. One byte a record cost
 * zstd 1.9 MB on python3 building JSON (8.3 M records; the trace without
 * gaps: 0.2 MB, heaptrack's file 0.4 MB); a window's mean, 50 KB. What
 * advise's measured replay spins between a thread's calls; sampled
 * traces have none. */
#define AP_CHUNK_F_GAPS 128u
#define AP_GAP_WINDOW 64u

/* EVENTS in columns (version 9): the frees resolved, in every such chunk
 * (no flag). The last length, after len4 (and len5 with gaps), is that of
 * the last column, after column 4 (and the gaps'): for every FREE record
 * and every REALLOC of a tracked old block, in record order, what the
 * reports need of the block it ends, so that they keep no live block to
 * match it. A REF to one of the thread's own last AP_FREED_RING
 * allocations has no field: the reader keeps their stacks and sizes (by
 * index, over the thread's chunks), and the block was temporary when the
 * thread's last event record made it. Any other: `uv 0` when the
 * compactor found no block (an unmatched FREE, or a forked child's of an
 * inherited block); else `uv (stack << 1 | temporary) + 1` (the block's
 * stack, 0 for an unsampled one; temporary as ap_replay.h defines it) and
 * `uv size` (zstd packs a site's sizes, which repeat in this column). */
/* How many of a thread's last allocations a resolved FREE names without
 * a field: random frees in a window of 4096 live blocks (bench/mixed)
 * cost a size each without it (+49 % of the file). */
#define AP_FREED_RING 16384u

/* A gap of ns nanoseconds as one byte: 0-7 ns exactly, then 4 steps an
 * octave (within 12 % of the step's middle; a finer step cost zstd a
 * third more bytes of the gaps, and the replay needs their sum), up to
 * 2^63 ns. */
static inline uint8_t ap_gap_code(uint64_t ns)
{
	if (ns < 8)
		return (uint8_t)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* 3..63 */
	return (uint8_t)(8 + (e - 3) * 4 + ((ns >> (e - 2)) & 3u));
}

/* The longest gap that is the program's work: one past it is a sleep, a
 * wait or a preemption (a time slice is milliseconds), which the
 * measured replay does not spin for, and which the windows of the
 * compactor's columns leave out. */
#define AP_GAP_WORK_MAX_NS 50000u

/* The nanoseconds a gap code stands for: the middle of its step. */
static inline uint64_t ap_gap_ns(uint8_t code)
{
	if (code < 8)
		return code;
	unsigned e = 3 + (code - 8u) / 4, m = (code - 8u) % 4;
	return ((uint64_t)(4 + m) << (e - 2)) + ((uint64_t)1 << (e - 2)) / 2;
}

/* What of a gap is the program's work: the gap, or 0 past
 * AP_GAP_WORK_MAX_NS. */
static inline uint64_t ap_gap_work_ns(uint8_t code)
{
	uint64_t ns = ap_gap_ns(code);
	return ns <= AP_GAP_WORK_MAX_NS ? ns : 0;
}

enum ap_chunk_type {
	AP_CHUNK_HEADER = 1,
	AP_CHUNK_META = 2,
	AP_CHUNK_EVENTS = 3,
	AP_CHUNK_END = 4,
	AP_CHUNK_SYMBOLS = 5,	/* after END only: names, files and lines of the PCs */
};

/* HEADER keys */
enum {
	AP_HK_RATE = 1,
	AP_HK_FLAGS = 2,
	AP_HK_PID = 3,
	AP_HK_PPID = 4,
	AP_HK_EXE = 5,
	AP_HK_CMDLINE = 6,
	AP_HK_CPUS = 7,
	AP_HK_START_REALTIME_NS = 8,
	AP_HK_START_NS = 9,
	AP_HK_MAX_DEPTH = 10,
	AP_HK_PAGE_SIZE = 11,
	AP_HK_SAMPLER = 12,
	AP_HK_PARENT_TRACE = 13,
	AP_HK_TIME_QUANTUM_NS = 14,
	AP_HK_TIME_STEP_NS = 15,
	AP_HK_MALLOC_OWNER = 16,
	AP_HK_ALLOWED_CPUS = 17,
	AP_HK_RUN_PID = 18,
	AP_HK_RUN_ID = 19,
};
#define AP_HFLAG_ALL 1u
/* the sampler was loaded into a running process (record -p): the trace
 * starts mid-run, and frees of blocks allocated before are expected */
#define AP_HFLAG_ATTACHED 2u

/* END keys */
enum {
	AP_EK_END_NS = 1,
	AP_EK_REASON = 2,
	AP_EK_STATUS = 3,
	AP_EK_CALLS = 4,
	AP_EK_BYTES = 5,
	AP_EK_CHUNKS = 6,
	AP_EK_CPU_NS = 7,
	AP_EK_POOLED = 8,
	AP_EK_REFUSED = 9,
	AP_EK_LIVE_PEAK = 10,
	AP_EK_LIVE_SLACK = 11,
	AP_EK_RUN_DELAY_NS = 12,
	AP_EK_NVCSW = 13,
	AP_EK_NIVCSW = 14,
	AP_EK_UNWIND_NS = 15,
	AP_EK_MINFLT = 16,
	AP_EK_STOP_ERRNO = 17,
	/* the SYMBOLS chunks after this END: the compactor writes 0 (one
	 * byte), `allocprof symbols` sets it in place to how many it
	 * appended (at most AP_END_SYMBOLS_MAX), so that a file cut before
	 * them reads as cut */
	AP_EK_SYMBOLS = 18,
	/* reason exec: 1 when the next image is not profiled, its
	 * environment no longer preloading the sampler (clearenv, env -i) */
	AP_EK_UNFOLLOWED = 19,
	/* how many children the process started with posix_spawn or
	 * posix_spawnp and an environment that no longer preloads the
	 * sampler (they ran unprofiled), and the first one's program */
	AP_EK_SPAWN_UNFOLLOWED = 20,
	AP_EK_SPAWN_FIRST = 21,
	/* the times the process's threads slept waiting for record to take
	 * their events (a full ring), and how long: recording's share of
	 * nvcsw and of the time off its CPU */
	AP_EK_SAMPLER_WAITS = 22,
	AP_EK_SAMPLER_WAIT_NS = 23,
};
#define AP_END_SYMBOLS_MAX 127u
enum ap_end_reason {
	AP_END_EXIT = 0,
	AP_END_UNDERSCORE_EXIT = 1,
	AP_END_SIGNAL = 2,
	AP_END_EXEC = 3,
	/* written by `allocprof record` from the buffers file, for a process
	 * that could write no END: killed by a signal the sampler cannot
	 * catch (status: the signal), ended by the exit_group system call
	 * without exit() (status: the exit status), or gone in a way record
	 * did not see (a process it is not the parent of: no status) */
	AP_END_KILLED = 4,
	AP_END_RAW_EXIT = 5,
	AP_END_GONE = 6,
	/* written by `allocprof snapshot` to its copy of a trace whose
	 * process was still running: the copy holds what the process had
	 * recorded up to end_ns (no status) */
	AP_END_SNAPSHOT = 7,
	/* the sampler was detached from a process that runs on (record -p) */
	AP_END_DETACH = 8,
	/* written by `allocprof record` from the buffers file of a process
	 * whose trace stopped at a chunk that did not fit (its RLIMIT_FSIZE,
	 * a full disk: END key stop_errno says which): the process ran on,
	 * and what it did after is not in the trace (no status) */
	AP_END_STOPPED = 9,
};

/* key/value kinds */
#define AP_KV_UINT 0
#define AP_KV_STR 1

/* META tags */
enum {
	AP_META_MAPPING = 1,
	AP_META_STACK = 2,
	AP_META_THREAD = 3,
	AP_META_STACK_SHARED = 4, /* version 4 */
};

/* EVENTS: tag = type | (ref ? 0x08 : 0) | kind << 4 | (cpu follows ? 0x80 : 0) */
enum ap_ev_type {
	AP_EV_ALLOC = 1,
	AP_EV_FREE = 2,
	AP_EV_REALLOC = 3,
	AP_EV_TRACK = 4,
	AP_EV_TIME = 5,
	AP_EV_SYNC = 6,
};
enum ap_alloc_kind {
	AP_KIND_MALLOC = 0,
	AP_KIND_CALLOC = 1,
	AP_KIND_REALLOC = 2,
	AP_KIND_ALIGNED = 3,
	AP_KIND_REALLOCARRAY = 4,
};
#define AP_TAG_CPU 0x80u
/* FREE / REALLOC: the (old) block by ring distance; ALLOC: an anonymous
 * block (no address field: the reader gives it an identity of its own) */
#define AP_TAG_REF 0x08u
#define AP_TAG_TYPE(t) ((t) & 0x07u)
#define AP_TAG_KIND(t) (((t) >> 4) & 0x07u)
#define AP_TAG(type, kind) ((uint8_t)((type) | ((kind) << 4)))

#define AP_RF_NEW_SAMPLED 1u
#define AP_RF_OLD_TRACKED 2u
#define AP_RF_NEW_ANON 4u /* the new block is anonymous: no new-address field */

/* The PCs STACK_SHARED records of a trace may copy from earlier stacks,
 * in all: AP_SHARED_PCS_PER_BYTE per byte of META payload (decompressed)
 * up to and including the record's chunk, plus AP_SHARED_PCS_SLACK (a
 * deep recursion's stacks, which differ in their innermost frame only,
 * take about 20 per byte), so that a small file cannot make the reader
 * hold much more. */
#define AP_SHARED_PCS_PER_BYTE 32u
#define AP_SHARED_PCS_SLACK 65536u

/* Identities the reader gives anonymous blocks: never a user-space
 * address (x86-64 user space ends below 2^47, 2^56 with five-level page
 * tables). The thread's index-th allocation (ALLOC or REALLOC, from 0,
 * over all its chunks) is AP_ANON_BASE | thread << 40 | index for the
 * first 65535 threads of a trace (thread 0xffff there stands for a thread
 * the trace never names), AP_ANON_MIN | (thread - 65535) << 40 | index
 * for the others, up to AP_MAX_THREADS; a thread makes at most
 * AP_THREAD_ALLOCS_MAX allocations. An address field at AP_ANON_BASE or
 * above is corrupt, and in a trace of more than 65535 threads one at
 * AP_ANON_MIN or above. */
#define AP_ANON_BASE 0xff00000000000000ull
#define AP_ANON_MIN 0x8000000000000000ull
#define AP_THREAD_ALLOCS_MAX (1ull << 40)
#define AP_ANON_LOW_THREADS 0xffffu
#define AP_MAX_THREADS (AP_ANON_LOW_THREADS + (uint32_t)((AP_ANON_BASE - AP_ANON_MIN) >> 40))

/* The identity of thread `thread`'s index-th allocation (above). */
static inline uint64_t ap_anon_id(uint32_t thread, uint64_t index)
{
	return thread < AP_ANON_LOW_THREADS
		       ? AP_ANON_BASE | (uint64_t)thread << 40 | index
		       : AP_ANON_MIN | (uint64_t)(thread - AP_ANON_LOW_THREADS) << 40 | index;
}

#define AP_VARINT_MAX 10

/* CPUs a trace can have: an event's cpu is at most 65535. */
#define AP_MAX_CPUS 65536u

/* Default time quantum of the sampler (HEADER time_quantum_ns). */
#define AP_DEFAULT_QUANTUM_NS 1000000u
/* The quantum the sampler writes in HEADER: 10 us. A process with one
 * thread steps its TIME records by AP_DEFAULT_QUANTUM_NS (1 ms) only. */
#define AP_FINE_QUANTUM_NS 10000u
/* Recent allocations a FREE can name by distance (1 = the last ALLOC or
 * REALLOC of the chunk, counted from its start or its last SYNC). */
#define AP_RING 65536u

/* The sizes of AP_CHUNK_F_SIZES: a direct-mapped table of the payload's
 * last size per stack id, AP_SIZE_PRED entries by stack & (entries - 1).
 * Both the compactor and the reader keep one; a generation empties it
 * (at a payload's start and at SYNC) without touching its 64 KiB. */
#define AP_SIZE_PRED_BITS 12
#define AP_SIZE_PRED (1u << AP_SIZE_PRED_BITS)

struct ap_size_pred {
	struct {
		uint32_t stack, gen;
		uint64_t size;
	} e[AP_SIZE_PRED];
	uint32_t gen; /* entries of another generation are empty */
};

static inline void ap_size_pred_reset(struct ap_size_pred *p)
{
	if (++p->gen == 0) { /* (after 2^32 resets: empty them for real) */
		memset(p->e, 0, sizeof(p->e));
		p->gen = 1;
	}
}

/* The size predicted for the next record at `stack`. */
static inline uint64_t ap_size_pred_get(const struct ap_size_pred *p, uint32_t stack)
{
	const uint32_t k = stack & (AP_SIZE_PRED - 1);
	return p->e[k].gen == p->gen && p->e[k].stack == stack ? p->e[k].size : 0;
}

static inline void ap_size_pred_put(struct ap_size_pred *p, uint32_t stack, uint64_t size)
{
	const uint32_t k = stack & (AP_SIZE_PRED - 1);
	p->e[k].stack = stack;
	p->e[k].gen = p->gen;
	p->e[k].size = size;
}

/* AP_CHUNK_F_XOWN: of the AP_XOWNERS other threads a thread named last
 * (tid[0] the last), the index after the last allocation of each it
 * named. Naming another one forgets the least recent (a thread it names
 * again starts from 0). The compactor and the reader keep one per
 * thread, never reset. */
#define AP_XOWNERS 8

struct ap_xowners {
	uint32_t tid[AP_XOWNERS];
	uint64_t next[AP_XOWNERS];
	unsigned n; /* entries used */
};

/* Owner tid's `next`, its entry made the most recent first. */
static inline uint64_t *ap_xowners_use(struct ap_xowners *x, uint32_t tid)
{
	unsigned k = 0;
	while (k < x->n && x->tid[k] != tid)
		k++;
	uint64_t next = 0;
	if (k < x->n)
		next = x->next[k];
	else if (x->n < AP_XOWNERS)
		k = x->n++;
	else
		k = AP_XOWNERS - 1;
	for (; k > 0; k--) {
		x->tid[k] = x->tid[k - 1];
		x->next[k] = x->next[k - 1];
	}
	x->tid[0] = tid;
	x->next[0] = next;
	return &x->next[0];
}

/* Writes v as LEB128 at p; returns the number of bytes (1..10). One and
 * two bytes, most fields, without the loop. */
static inline size_t ap_put_uv(uint8_t *p, uint64_t v)
{
	if (v < 0x80) {
		p[0] = (uint8_t)v;
		return 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return 2;
	}
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline uint64_t ap_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t ap_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline size_t ap_put_sv(uint8_t *p, int64_t v)
{
	return ap_put_uv(p, ap_zigzag(v));
}

/* Reads a LEB128 varint from [*p, end). Returns 0 and advances *p, or -1 if
 * the varint runs past end or is longer than 10 bytes. */
static inline int ap_get_uv(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static inline int ap_get_sv(const uint8_t **p, const uint8_t *end, int64_t *out)
{
	uint64_t u;
	if (ap_get_uv(p, end, &u) < 0)
		return -1;
	*out = ap_unzigzag(u);
	return 0;
}

static inline void ap_put_u32le(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* x86-64 only: little-endian */
}

static inline uint32_t ap_get_u32le(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline void ap_put_u64le(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint64_t ap_get_u64le(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Address fields: the difference d = addr - prev as
 * uv(zigzag(d >> 4) << 1 | (d & 15 ? 1 : 0)), then u8 (d & 15) if that bit
 * is set. 16-byte aligned addresses (every malloc) cost no extra byte.
 * Returns the bytes written (at most AP_VARINT_MAX + 1). */
static inline size_t ap_put_addr(uint8_t *p, uint64_t addr, uint64_t prev)
{
	uint64_t d = addr - prev;
	uint64_t lo = d & 15;
	uint64_t v = ap_zigzag((int64_t)d >> 4);
	size_t n = ap_put_uv(p, v << 1 | (lo != 0));
	if (lo)
		p[n++] = (uint8_t)lo;
	return n;
}

/* The rest of an address field whose varint v was read: the low-nibble
 * byte if v says so. Sets *out = prev + difference; -1 if the byte is
 * missing or not 1..15. */
static inline int ap_addr_finish(const uint8_t **p, const uint8_t *end, uint64_t v,
				 uint64_t prev, uint64_t *out)
{
	uint64_t d = (uint64_t)ap_unzigzag(v >> 1) << 4;
	if (v & 1) {
		if (*p >= end || **p == 0 || **p > 15)
			return -1;
		d |= *(*p)++;
	}
	*out = prev + d;
	return 0;
}

/* Reads an address field relative to prev; -1 if it runs past end or the
 * varint is bad. */
static inline int ap_get_addr(const uint8_t **p, const uint8_t *end, uint64_t prev, uint64_t *out)
{
	uint64_t v;
	if (ap_get_uv(p, end, &v) < 0)
		return -1;
	return ap_addr_finish(p, end, v, prev, out);
}

/* AP_CHUNK_F_COUNTS: `uv records, uv events, uv allocs, uv last_q` at
 * the start of the stored payload: its event records (ALLOC, FREE,
 * REALLOC and TRACK), the ap_events they decode to, the ALLOCs and
 * REALLOCs among them (the thread's allocation indexes they take), and the
 * time quantum of the last record (0 without any). */
struct ap_chunk_counts {
	uint64_t records, events, allocs, last_q;
};
#define AP_CHUNK_COUNTS_MAX (4 * AP_VARINT_MAX)

static inline size_t ap_put_chunk_counts(uint8_t *p, const struct ap_chunk_counts *c)
{
	size_t n = ap_put_uv(p, c->records);
	n += ap_put_uv(p + n, c->events);
	n += ap_put_uv(p + n, c->allocs);
	return n + ap_put_uv(p + n, c->last_q);
}

/* Reads them from *p (moved past them); -1 if they run past end. */
static inline int ap_get_chunk_counts(const uint8_t **p, const uint8_t *end,
				      struct ap_chunk_counts *c)
{
	return ap_get_uv(p, end, &c->records) < 0 || ap_get_uv(p, end, &c->events) < 0 ||
			       ap_get_uv(p, end, &c->allocs) < 0 || ap_get_uv(p, end, &c->last_q) < 0
		   ? -1
		   : 0;
}

/* CRC-32C (Castagnoli), reflected, init/xorout 0xffffffff. Uses the SSE4.2
 * instruction when the CPU has it, a table otherwise. Allocation-free. */
uint32_t ap_crc32c(const void *data, size_t len);

/* Fills a chunk header with flags (AP_CHUNK_F_*) for a payload already in
 * place: chunk `index` (0, 1, 2, ...) of stream `stream` (AP_STREAM_NONE
 * for HEADER and END, with index 0). */
static inline void ap_chunk_header_flags(uint8_t hdr[AP_CHUNK_HDR_LEN], uint8_t type,
					 uint8_t flags, uint32_t tid, uint32_t stream,
					 uint32_t index, const uint8_t *payload, uint32_t len)
{
	ap_put_u32le(hdr, AP_CHUNK_MAGIC);
	hdr[4] = type;
	hdr[5] = flags;
	hdr[6] = 0;
	hdr[7] = 0;
	ap_put_u32le(hdr + 8, tid);
	ap_put_u32le(hdr + 12, len);
	ap_put_u32le(hdr + 16, ap_crc32c(payload, len));
	ap_put_u32le(hdr + 20, stream);
	ap_put_u32le(hdr + 24, index);
	ap_put_u32le(hdr + AP_CHUNK_HDR_CRC_OFF, ap_crc32c(hdr, AP_CHUNK_HDR_CRC_OFF));
}

static inline void ap_chunk_header(uint8_t hdr[AP_CHUNK_HDR_LEN], uint8_t type,
				   uint32_t tid, uint32_t stream, uint32_t index,
				   const uint8_t *payload, uint32_t len)
{
	ap_chunk_header_flags(hdr, type, 0, tid, stream, index, payload, len);
}

/* Whether a chunk header's own checksum holds. */
static inline int ap_chunk_header_ok(const uint8_t hdr[AP_CHUNK_HDR_LEN])
{
	return ap_crc32c(hdr, AP_CHUNK_HDR_CRC_OFF) == ap_get_u32le(hdr + AP_CHUNK_HDR_CRC_OFF);
}

/* The sampling weight of a sample of `size` bytes at mean interval `rate`:
 * how many allocations it stands for (bytes: size times this). */
double ap_sample_weight(uint64_t size, uint64_t rate);

#endif
