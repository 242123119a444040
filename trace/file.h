/* The reader's file stage (file.c): the trace file, opened and mapped or
 * read, its preamble and pass 1 over its chunks (struct rd, shared with
 * meta.c and decode.c), and the source of its events for pass 2 (its
 * chunks read again and merged by order.c). */
#ifndef AP_TRACE_FILE_H
#define AP_TRACE_FILE_H

#include "ap_trace.h"
#include "decode.h"
#include "trace-int.h"

#include <zstd.h>

/* An EVENTS chunk found in pass 1, as pass 2 reads it again. */
struct ev_chunk {
	const uint8_t *payload; /* where pass 1 decoded it (not kept after) */
	uint32_t len;		/* the stored payload's length */
	uint32_t thread;	/* thread index */
	uint8_t columns;	/* its encoding flags (decode.h, evdec_start) */
	bool zstd;		/* AP_CHUNK_F_ZSTD: stored compressed */
	uint8_t skip;		/* bytes of counts before the payload proper */
	bool counted;		/* AP_CHUNK_F_COUNTS: pass 1 did not decode it; pass 2
				 * checks it, against `want` */
	uint64_t off;		/* of the stored payload in the file */
	uint32_t crc;		/* the stored payload's, from its header */
	struct ap_chunk_counts want;
};

struct rd {
	struct ap_chunk_walk walk; /* the chunks, checked (chunk.c) */
	const uint8_t *data;
	size_t size;
	void *map;	 /* data, if mapped (pass 1 only) */
	int fd;		 /* the file, with map: pass 2 reads it again */
	uint8_t *buf;	 /* data, if read into memory (the reader's) */
	size_t dropped;	 /* pages before it let go (drop_behind) */
	const char *name;
	struct ap_error *err;
	struct ap_trace *t;
	ap_progress_fn progress;
	void *progress_ctx;

	size_t threads_alloc;
	struct ap_u64map tid_index; /* tid -> thread index (slot NULL until the first) */
	uint64_t *thread_nev; /* ap_events per thread (pass 1) */
	struct thread_refs *thread_refs; /* per thread, carried across its chunks */

	uint64_t *pcs; /* all stacks' pcs; stacks[i].pcs are offsets until the end */
	size_t npcs, pcs_alloc;
	size_t stacks_alloc;
	size_t maps_alloc;
	/* Modules loaded where another was before (a plugin unloaded and
	 * another loaded at its address): each such MAPPING starts an era,
	 * its addresses and its stacks' PCs in its range read with the
	 * era's tag (meta.c, AP_ERA_SHIFT), so that they resolve to it and
	 * not to the module written before at the same numbers. map_tag by
	 * mapping (0: none); remaps the tagged ones, in file order. */
	uint64_t *map_tag;
	size_t map_tag_alloc;
	struct rd_remap {
		uint64_t start, end, tag;	/* [start, end): the real range */
	} *remaps;
	size_t nremaps, remaps_alloc;
	uint64_t era_work;	/* mappings map_era compared */

	struct ev_chunk *chunks;
	size_t nchunks, chunks_alloc;
	uint8_t **owned; /* decompressed payloads */
	size_t nowned, owned_alloc;
	uint8_t *scratch; /* an EVENTS payload, decompressed for pass 1 */
	size_t scratch_cap;
	ZSTD_DCtx *zd;

	size_t chunk_off; /* header offset of the chunk being decoded */
	uint64_t last_ts;
	bool any_event;
	uint64_t meta_bytes;  /* META payload bytes read (decompressed) */
	uint64_t shared_pcs;  /* PCs that STACK_SHARED records copied */
};

/* The events of a file the reader checked (ap_trace.src): read again
 * from the file, a chunk at a time (fd), or from the reader's copy of it
 * (buf). A file is not kept mapped: another process truncating it would
 * make a mapping fault; a chunk that reads short or with another checksum
 * than pass 1 saw ends its thread's events there and marks the trace
 * changed (ap_trace_changed). */
struct file_src {
	struct ap_evsrc base;
	int fd;			/* the file; -1: in buf */
	uint8_t *buf;
	int changed;		/* atomic */
	struct ev_chunk *chunks;
	size_t nchunks;
	uint32_t *order;	/* chunk indexes grouped by thread, file order */
	size_t *start;		/* thread i's: order[start[i], start[i + 1]) */
	size_t nthreads;
	uint64_t quantum;
	uint64_t anon_min;	/* the anonymous identities' floor (ap_trace_enc.h) */
	struct ap_u64map tids; /* tid -> thread index, for REFs across threads */
	size_t nstacks;	 /* the stack ids events may use */
	char *name;	 /* the file's, for messages */
};

/* An iteration over a file's events: order.c's merge, fed chunks read
 * again from the file (with zd, the iteration's). */
struct file_it {
	struct file_src *f;
	ZSTD_DCtx *zd;
	struct ap_order *o;
};

/* The file source's iterations (struct ap_evsrc_ops). */
void *file_open(struct ap_evsrc *src);
ssize_t file_next(void *state, const struct ap_event **out, struct ap_error *err);
void file_close(void *state);

/* A new trace, empty (its strings "", stack 0 the empty one). */
void trace_init(struct ap_trace *t);
/* Checks the preamble: -1 with r's error set if it is not one this reads. */
int read_preamble(struct rd *r);
/* Pass 1 over the chunks from where r's walk is: each checked and
 * decoded, until the file ends (*res AP_CHUNK_EOF) or is cut inside a
 * chunk (AP_CHUNK_CUT: a chunk being written, or a truncated file).
 * Returns 0, or -1 with r's error set on a corrupt chunk. */
int rd_walk(struct rd *r, enum ap_chunk_result *res);
/* After the walk: what the trace says of its end (bytes_used, truncated,
 * the error of a file without a header). */
int rd_walk_end(struct rd *r, enum ap_chunk_result res);
/* After pass 1: the source of r's events, the file handed over to it
 * (its descriptor, or the reader's copy); r->chunks go to it. */
void make_source(struct rd *r);
/* The source's index of its chunks by thread made again (f->chunks and
 * nchunks set), for r's threads and stacks now; t's event counts. */
void source_index(struct file_src *f, struct rd *r);

/* Frees what pass 1 holds (its chunks, unless they went to the source). */
void rd_release(struct rd *r);

/* Sets r's error to "NAME: corrupt chunk at byte N: why"; returns -1. */
int rd_corrupt(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Index of the thread `tid`, created if new; -1 (error set) if the trace
 * has more threads than an event can name. */
long rd_thread_index(struct rd *r, uint32_t tid);
/* The checks of a compressed payload that need no decompressing. */
int zframe_check(struct rd *r, const uint8_t *payload, uint32_t len);
#endif
