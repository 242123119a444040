/* The sampler's buffers file: what a process had recorded and not yet
 * written to its trace, kept where its death cannot take it. The sampler
 * (sampler/buffer.c) keeps its META buffer and every thread buffer in a
 * MAP_SHARED mapping of `<trace>.buffers`, and publishes each buffer's
 * length after every record it appends; once the process is gone (a
 * SIGKILL, an exit_group past exit(), a fatal signal whose flush gave up,
 * the frees glibc makes after END), `allocprof record` turns what the
 * buffers hold into the trace's last chunks (ap_trace_finish_buffers).
 * Header-only layout, shared by both sides; docs/trace-format.md,
 * "Buffers file", is its documentation. */
#ifndef AP_TRACE_BUFFERS_H
#define AP_TRACE_BUFFERS_H

#include <stdint.h>

#include "ap_trace_enc.h"

/* The file: a header page, then slots, each page-aligned, one after the
 * other in the order the sampler made them; bytes past the last slot are
 * zero (a slot header with magic 0 ends the walk). */
#define AP_BUFFERS_SUFFIX ".buffers"
#define AP_BUFFERS_MAGIC "APBUFFRS"
#define AP_BUFFERS_VERSION 1u
#define AP_BUFFERS_PAGE 4096u

struct ap_buffers_head {
	char magic[8];		/* AP_BUFFERS_MAGIC */
	uint32_t version;	/* AP_BUFFERS_VERSION */
	uint32_t pid;		/* the process whose buffers these are */
	uint32_t stopped;	/* 1: the trace stopped (a write failed): add no chunk */
	/* the errno of the write that failed (EFBIG: the file size limit),
	 * stored before `stopped`; 0 in files of before it */
	uint32_t stop_errno;
	/* The sampler's live-byte peak and its slack (END keys live_peak
	 * and live_slack), kept up to date; live_slack 0: not counted.
	 * Files of before them have zeros here. */
	uint64_t live_peak, live_slack;
	/* The ring (ring_off 0: none; the sampler writes its chunks to the
	 * trace itself). A process recorded by `allocprof record` holds no
	 * descriptor: once its HEADER is in the trace, every chunk it would
	 * have written goes whole into the ring, a slot of this file (type
	 * 0, ring_size bytes after its slot header), and record (its drain
	 * thread, then its finisher) appends the ring's bytes to the trace.
	 * ring_head counts the bytes ever put (the sampler, release, after
	 * the chunk is whole in the ring), ring_tail those ever taken
	 * (record, release, once they are in the trace): [tail, head) are
	 * whole chunks not in the trace yet. */
	uint64_t ring_off, ring_size;
	uint64_t ring_head, ring_tail;
	/* CLOCK_MONOTONIC of record's last look at the ring: a sampler that
	 * finds it full and record not looking for a second writes the
	 * trace itself (ring_mode AP_RING_DIRECT) */
	uint64_t drained_ns;
	/* the trace's size after the last bytes taken: what one who takes
	 * over from a drainer that died while writing cuts the trace to */
	uint64_t drained_size;
	uint32_t ring_seq;	/* futex: bumped each time bytes are taken */
	uint32_t ring_waiting;	/* the sampler waits on ring_seq */
	/* the pid of the process writing the ring's bytes to the trace now
	 * (0: none): record's drain, record's finisher, or the sampler
	 * taking over; taken with compare-and-swap, and from a dead holder */
	uint32_t drain_lock;
	uint32_t ring_mode;	/* AP_RING_* */
	/* the process that drains the ring: record, its finisher later
	 * (each look stores it; 0 before the first): one that is gone leaves
	 * the ring to the sampler at once */
	uint32_t drainer_pid;
	/* The ring's room: ring_size is the ring's length now (the sampler
	 * sets it, only while its ring is empty, before the next ring_head);
	 * ring_room how many bytes of the slot the file has written
	 * (record grows it as it drains, up to ring_max, the slot's bytes
	 * after its header): the sampler starts small and takes the room
	 * once its ring is empty. */
	uint32_t doorbell;	/* futex: bumped by a sampler that wakes the drain */
	uint64_t ring_room, ring_max;
	/* the drain sleeps on this ring's doorbell (every ring idle): the
	 * sampler whose ring is a quarter full wakes it */
	uint32_t drain_asleep;
	uint32_t pad_;
	/* the run's number (HEADER run_id; 0: none): a record drains the
	 * rings of its own run only (two records given one -o, in pid
	 * namespaces of their own, have processes of the same pids) */
	uint64_t run_id;
};

#define AP_RING_ON 1u		/* chunks go through the ring, record writes them */
/* drain_lock's flag for a sampler taking the ring over (its thread id is
 * its pid namespace's): never taken from it while its process lives */
#define AP_DRAIN_SAMPLER 0x80000000u
#define AP_RING_DIRECT 2u	/* the sampler writes the trace itself (record gone) */
/* the type of the ring's slot (neither META nor EVENTS: no records) */
#define AP_SLOT_RING 0u

#define AP_SLOT_MAGIC 0x544f4c53u /* "SLOT" */
#define AP_SLOT_HDR 64u

/* A slot: this header, then the buffer (a chunk header's room, then the
 * records), `size` bytes in all. Written by the buffer's owner only; the
 * fields other than len change when a chunk is written or the buffer
 * passes to another thread. */
struct ap_slot {
	uint32_t magic;		/* AP_SLOT_MAGIC */
	uint8_t type;		/* AP_CHUNK_META or AP_CHUNK_EVENTS */
	uint8_t flags;		/* its chunks' flags: EVENTS, AP_CHUNK_F_GAPS or 0 */
	uint8_t pad[2];
	uint32_t size;		/* bytes of the slot, header included (page multiple) */
	uint32_t tid;		/* the tid its next chunk carries */
	uint32_t stream;	/* its stream (EVENTS: 0 until its first chunk) */
	uint32_t index;		/* the index its next chunk gets in that stream */
	uint64_t len;		/* bytes in use after the header: the chunk header's
				 * room (AP_CHUNK_HDR_LEN) and whole records; stored
				 * with release after every record */
	uint8_t reserved[AP_SLOT_HDR - 32];
};
_Static_assert(sizeof(struct ap_slot) == AP_SLOT_HDR, "slot header size");

#endif
