/* The replay script: a recorded run's allocation sequence as the measured
 * replay (`allocprof-replay`, measure/runner.c) executes it, written by
 * report/measure.c from an --all trace. One file, mapped read-only by the
 * runner, so that the runner's own heap holds nothing but the replayed
 * blocks.
 *
 * Layout: struct ap_rs_header, then nthreads struct ap_rs_thread, then
 * nsyncs uint32_t (each barrier's number of threads, padded to 8 bytes),
 * then the ops of every thread, each thread's contiguous
 * (ap_rs_thread.first is the index of its first op in that array). Every field is host-endian: the
 * file never leaves the machine that wrote it.
 *
 * A thread's ops run in order on one OS thread of the runner. Blocks live
 * in slots (ap_rs_header.nslots of them): a birth op puts a new block in
 * its slot, REALLOC, MOVE and FREE act on the block in theirs. Order across
 * threads is kept where it matters and nowhere else: an op whose slot was
 * last used by another thread is preceded by a WAIT for that thread's op,
 * which carries AP_RS_PUBLISH. And the threads keep in step as they ran:
 * the recorded order is cut in windows of AP_RS_WINDOW events, and a
 * thread that has events in a window and in an earlier one arrives at a
 * barrier (SYNC) before its first op of the window, and goes on once the
 * threads of the barrier AP_RS_SLACK windows back have all arrived there.
 * So no thread runs far ahead of the others (a producer that the
 * program's own queue held back must not pile up blocks the consumer has
 * not freed yet), but none waits for the others at every window either:
 * the threads run side by side as they did in the program, contending
 * for the allocator's locks and the pool's. (With no slack, barriers in
 * lock step, a producer and a consumer took turns: the pooled replay of
 * one saved 0.7 s of CPU time where its hand-pooled twin, whose threads
 * run at once, costs 1.4 s more; with 2 to 16 windows of slack the pool
 * costs 0.4 to 1.0 s.) A thread whose blocks other threads free also
 * WAITs, before some of its allocations, for such a free of 16 before in
 * the recorded order (report/measure.c, XF_LAG), so that a producer stays
 * about as far ahead of its consumers as it was; and a thread that frees
 * another's blocks WAITs, before some of those frees, for that thread's
 * birth 16 before its last one at that point of the recorded order
 * (XB_LAG), so that a consumer stays as far behind. Every wait is for ops
 * before the waiter's place in the recorded order, so the runner cannot
 * deadlock. */
#ifndef AP_RS_SCRIPT_H
#define AP_RS_SCRIPT_H

#include <stdint.h>

#define AP_RS_MAGIC "APREPLY1"
#define AP_RS_VERSION 6u
#define AP_RS_WINDOW 256u	/* events between two barriers */
#define AP_RS_SLACK 8u		/* windows a thread may run ahead */

enum ap_rs_type {
	AP_RS_MALLOC = 1,	/* arg: site; slot; n: size */
	AP_RS_CALLOC = 2,	/* the same, zeroed (from the pool: not cleared) */
	AP_RS_ALIGNED = 3,	/* the same, 64-byte aligned (the trace does not keep the alignment) */
	AP_RS_REALLOC = 4,	/* slot; n: new size */
	AP_RS_FREE = 5,		/* slot */
	AP_RS_CYCLE = 6,	/* a cycle of the pool (the model's cycle points) */
	AP_RS_WAIT = 7,		/* arg: thread; n: wait until that thread has done its op n */
	AP_RS_SPAWN = 8,	/* arg: thread to start */
	AP_RS_SYNC = 9,		/* n: the barrier to meet the others at */
	AP_RS_WORK = 10,	/* n: steps of ap_work (work.h): the program's time
				 * before its next call */
	AP_RS_SLEEP = 11,	/* n: ns to sleep: the thread was off its CPU
				 * before its next call */
	AP_RS_MOVE = 12,	/* slot; n: new size: a growth by copy (a new
				 * block, the old one's bytes copied into it and
				 * the old one freed: libstdc++'s std::string) */
};
/* The longest SLEEP a script holds (ns): a program's sleeps of a few
 * milliseconds are replayed whole (bench/twins' idle sleeps 1 ms);
 * AP_RS_SLEEP_TOTAL_NS keeps the runs short. */
#define AP_RS_SLEEP_MAX_NS 2000000u
/* The most a script sleeps in all (ns): longer, its naps are shortened
 * alike (report/measure.c, b_naps). */
#define AP_RS_SLEEP_TOTAL_NS 1000000000u

#define AP_RS_TYPE_BITS 4u
#define AP_RS_TYPE_MASK 0xfu
#define AP_RS_PUBLISH 0x10u	/* another thread waits for this op */
#define AP_RS_ARG_SHIFT 5u
#define AP_RS_ARG_MAX ((UINT32_C(1) << (32 - AP_RS_ARG_SHIFT)) - 1)
#define AP_RS_NOSITE AP_RS_ARG_MAX	/* a block of no site */

struct ap_rs_op {
	uint32_t w;		/* type | flags | arg << AP_RS_ARG_SHIFT */
	uint32_t slot;
	uint64_t n;
};

static inline unsigned ap_rs_type(const struct ap_rs_op *o)
{
	return o->w & AP_RS_TYPE_MASK;
}

static inline uint32_t ap_rs_arg(const struct ap_rs_op *o)
{
	return o->w >> AP_RS_ARG_SHIFT;
}

static inline uint32_t ap_rs_word(unsigned type, uint32_t arg)
{
	return (uint32_t)type | arg << AP_RS_ARG_SHIFT;
}

struct ap_rs_thread {
	uint64_t first;		/* its first op's index in the op array */
	uint64_t nops;
	uint32_t spawner;	/* the thread whose SPAWN starts it; UINT32_MAX: started first */
	uint32_t pad;
};

struct ap_rs_header {
	char magic[8];
	uint32_t version;
	uint32_t nthreads;
	uint64_t nslots;
	uint64_t nops;		/* ops of all threads */
	uint32_t main_thread;	/* runs on the runner's main thread (the program's main) */
	uint32_t nsites;	/* birth ops' sites are below it, or AP_RS_NOSITE */
	uint64_t nsyncs;	/* barriers */
};

/* Bytes of the barrier table of nsyncs barriers. */
static inline uint64_t ap_rs_sync_bytes(uint64_t nsyncs)
{
	return (nsyncs * sizeof(uint32_t) + 7) & ~(uint64_t)7;
}

/* Bytes of a script of nthreads threads, nsyncs barriers and nops ops. */
static inline uint64_t ap_rs_size(uint32_t nthreads, uint64_t nsyncs, uint64_t nops)
{
	return sizeof(struct ap_rs_header) + (uint64_t)nthreads * sizeof(struct ap_rs_thread) +
	       ap_rs_sync_bytes(nsyncs) + nops * sizeof(struct ap_rs_op);
}

#endif
