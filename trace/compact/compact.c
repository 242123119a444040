/* ap_trace_compact (ap_trace_compact.h): the trace `record` leaves behind,
 * rewritten after the program exited, or while it runs. The sampler writes
 * small raw chunks (64 KiB per thread, nothing allocated inside malloc, no
 * time to model anything); here each thread's events are re-encoded in
 * large chunks and compressed:
 *
 * - one chunk per thread covers up to COMPACT_INPUT bytes of the sampler's
 *   chunks, with one SYNC, so a repetitive workload is one long run of
 *   identical records (rewrite.c);
 * - every block is written without its address (anonymous), and its FREE
 *   names it by the allocating thread's allocation index
 *   (AP_CHUNK_F_INDEX), however far away, in whatever later chunk, on
 *   whichever thread (then with the allocating thread's tid): addresses
 *   are most of the entropy of a trace and only served to match the
 *   frees. With several threads a plan first finds which FREE ends
 *   which thread's block, and the blocks that must keep their address
 *   (plan.c): those whose address another thread names in the same
 *   quantum (a replay of the trace; one pass without it where the
 *   threads keep to their own addresses);
 * - stacks that share their outer frames with an earlier one name it
 *   (STACK_SHARED, stacks.c);
 * - the payload is split in columns (AP_CHUNK_F_COLUMNS) and compressed
 *   with zstd on writer threads (zwrite.c).
 *
 * Chunks already compressed (a trace compacted before) are copied as they
 * are, and the others then only compressed one by one. This file is the
 * driver: the walk over the input's chunks, the output file, the calls of
 * ap_trace_compact.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compact-int.h"

/* tid's index in c->tids, added if new. */
static size_t note_tid(struct compactor *c, uint32_t tid)
{
	for (size_t i = 0; i < c->ntids; i++)
		if (c->tids[i] == tid)
			return i;
	AP_ALLOC_GROW(c->tids, c->ntids + 1, c->tids_alloc);
	AP_ALLOC_GROW(c->dec, c->ntids + 1, c->dec_alloc);
	c->dec[c->ntids] = (struct ap_decode_thread){.thread = (uint32_t)c->ntids};
	c->tids[c->ntids++] = tid;
	return c->ntids - 1;
}

int compact_corrupt_at(struct compactor *c, size_t off, const char *why)
{
	return ap_error_set(c->err, "%s: corrupt chunk at byte %zu: %s", c->path, off, why);
}

/* Decodes a raw EVENTS payload of tid, appending to ev; counts its
 * records. */
int compact_decode_raw(struct compactor *c, size_t off, uint32_t tid, unsigned flags,
		       const uint8_t *payload, uint32_t len, struct ap_event **ev, size_t *nev,
		       size_t *alloc)
{
	const char *why;
	size_t from = *nev;
	struct ap_decode_thread *th = &c->dec[note_tid(c, tid)];
	if (flags & AP_CHUNK_F_GAPS)
		c->gaps = true;
	if (ap_trace_decode_events(payload, len, flags, c->quantum, th, ev, nev, alloc, &why) < 0)
		return compact_corrupt_at(c, off, why);
	for (size_t i = from; i < *nev; i++)
		c->st->events += !((*ev)[i].flags & AP_EVF_FROM_REALLOC);
	return 0;
}

/* The time quantum, from the HEADER chunk (the reader's own decoding). */
static int read_quantum(struct compactor *c, const uint8_t *data, size_t end)
{
	struct ap_trace *t;
	struct ap_error e;
	if (ap_trace_read_mem(data, end, c->path, &t, &e) < 0)
		return ap_error_set(c->err, "%s", e.msg);
	c->quantum = t->time_quantum_ns;
	c->step = t->time_step_ns > t->time_quantum_ns ? t->time_step_ns / t->time_quantum_ns : 1;
	ap_trace_free(t);
	return 0;
}

/* One pass over the chunks: `emit` false only looks (compressed chunks,
 * the time quantum, which thread names which address); true writes.
 * Resumes at c->off; with c->live it stops, to come back later, at a chunk
 * not yet complete (or not yet matching its checksum: being written). */
static int walk_chunks(struct compactor *c, const uint8_t *data, size_t size, bool emit)
{
	if (!c->off) {
		/* each walk decodes the threads' chunks from their first */
		for (size_t i = 0; i < c->ntids; i++)
			c->dec[i] = (struct ap_decode_thread){.thread = (uint32_t)i};
		ap_chunk_walk_release(&c->walk);
		ap_chunk_walk_init(&c->walk, data, size);
		uint8_t pre[AP_TRACE_PREAMBLE_LEN];
		if (emit && compact_out_write(c, pre, ap_put_preamble(pre)) < 0)
			return -1;
	}
	c->walk.data = data; /* (mapped again, maybe longer) */
	c->walk.size = size;
	for (;;) {
		c->off = c->walk.off;
		struct ap_chunk ch;
		char why[160];
		enum ap_chunk_result res = ap_chunk_next(&c->walk, &ch, why, sizeof(why));
		if (res == AP_CHUNK_EOF)
			break;
		if (res == AP_CHUNK_CUT) {
			if (c->live)
				return 0;
			/* the incomplete last chunk: kept as it was, after the rest */
			c->st->cut = true;
			c->st->cut_at = c->off;
			if (emit && (compact_flush_all(c) < 0 ||
				     compact_out_write(c, data + c->off, size - c->off) < 0))
				return -1;
			return 0;
		}
		/* a corrupt chunk: the trace is left as it is; while the trace
		 * is written, bytes that may be a chunk not yet whole wait */
		if (res == AP_CHUNK_BAD)
			return c->live && c->walk.maybe_unwritten
				   ? 0
				   : compact_corrupt_at(c, c->off, why);
		size_t off = ch.off;
		const uint8_t *payload = ch.payload;
		uint32_t len = ch.len, tid = ch.tid;
		uint8_t type = ch.type, flags = ch.flags;
		/* the sampler's EVENTS, in rows (with gaps or not) */
		bool raw = type == AP_CHUNK_EVENTS && !(flags & ~AP_CHUNK_F_GAPS);
		int rc = 0;
		if (c->stream) {
			/* one pass: the quantum here; anonymous blocks need to
			 * know no other thread names them, which one pass over
			 * one thread's events knows */
			if (type == AP_CHUNK_EVENTS && (!raw || (c->ntids && c->tids[0] != tid))) {
				c->gave_up = true;
				return 0;
			}
			if (type == AP_CHUNK_HEADER && off == AP_TRACE_PREAMBLE_LEN &&
			    read_quantum(c, data, off + AP_CHUNK_HDR_LEN + len) < 0)
				return -1;
		}
		if (!emit && c->count_only && type != AP_CHUNK_HEADER) {
			/* level 0: what the summary line says, nothing written
			 * (the HEADER, for the quantum, is read as below) */
			if (type == AP_CHUNK_EVENTS) {
				note_tid(c, tid);
				c->nscratch = 0;
				if (raw &&
				    compact_decode_raw(c, off, tid, flags, payload, len, &c->scratch,
						       &c->nscratch, &c->scratch_alloc) < 0)
					return -1;
			}
			if (type != AP_CHUNK_SYMBOLS)
				c->st->has_end = type == AP_CHUNK_END;
			continue;
		}
		if (!emit) {
			if (type == AP_CHUNK_HEADER && off == AP_TRACE_PREAMBLE_LEN) {
				if (read_quantum(c, data, off + AP_CHUNK_HDR_LEN + len) < 0)
					return -1;
			} else if (type == AP_CHUNK_EVENTS && !raw) {
				c->transcode = false;
			} else if (type == AP_CHUNK_EVENTS) {
				/* the first look: one thread, or several? */
				if (c->ntids && c->tids[0] != tid)
					c->threads = true;
				note_tid(c, tid);
			}
		} else if (raw) {
			note_tid(c, tid);
			if (!c->transcode) {
				c->nscratch = 0;
				rc = compact_decode_raw(c, off, tid, flags, payload, len, &c->scratch,
							&c->nscratch, &c->scratch_alloc);
				if (!rc)
					rc = compact_write_compressed(c, type, flags, tid, NULL,
								      payload, len, false);
			} else {
				rc = compact_events(c, off, tid, flags, payload, len);
			}
		} else if (type == AP_CHUNK_META && !flags) {
			rc = compact_hold_meta(c, off, tid, payload, len);
		} else {
			/* HEADER, END, chunks compressed already: everything
			 * before them stays before them */
			if (type == AP_CHUNK_EVENTS)
				note_tid(c, tid);
			if (type == AP_CHUNK_META)
				c->stacks.lost = true;
			if (type != AP_CHUNK_META)
				rc = compact_flush_all(c);
			if (!rc && type == AP_CHUNK_END)
				rc = compact_write_end(c, off, tid, payload, len);
			else if (!rc)
				rc = compact_write_chunk(c, type, flags, tid, payload, len);
		}
		if (rc < 0)
			return -1;
		if (emit && type != AP_CHUNK_SYMBOLS)
			c->st->has_end = type == AP_CHUNK_END;
	}
	c->off = c->walk.off;
	return emit && !c->live ? compact_flush_all(c) : 0;
}

/* Checks the preamble of a trace. */
static int check_preamble(const char *path, const uint8_t *data, size_t size, struct ap_error *err)
{
	if (size < AP_TRACE_PREAMBLE_LEN || memcmp(data, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN))
		return ap_error_set(err, "%s: not an allocprof trace", path);
	uint32_t version = ap_get_u32le(data + 8);
	if (version < AP_TRACE_VERSION_MIN || version > AP_TRACE_VERSION)
		return ap_error_set(err,
				    "%s: trace format version %u, this allocprof reads %u to %u",
				    path, version, AP_TRACE_VERSION_MIN, AP_TRACE_VERSION);
	return 0;
}

/* The temporary output next to path, and the compressor. */
static int open_output(struct compactor *c, struct ap_buf *tmp)
{
	ap_buf_addf(tmp, "%s.compact.XXXXXX", c->path);
	c->fd = mkostemp(tmp->buf, O_CLOEXEC);
	if (c->fd < 0)
		return ap_error_set(c->err, "%s: %s", tmp->buf, strerror(errno));
	compact_writer_start(c);
	return 0;
}

/* The output is complete: it takes the input's place. */
static int replace_input(struct compactor *c, struct ap_buf *tmp, mode_t mode)
{
	if (compact_drain(c) < 0)
		return -1;
	fchmod(c->fd, mode & 07777);
	int rc = close(c->fd);
	c->fd = -1;
	if (rc < 0)
		return ap_error_set(c->err, "%s: %s", tmp->buf, strerror(errno));
	if (rename(tmp->buf, c->path) < 0)
		return ap_error_set(c->err, "%s: %s", c->path, strerror(errno));
	c->st->nthreads = c->ntids;
	return 0;
}

/* Frees what a compactor holds; removes its output if it did not replace
 * the input. */
static void compactor_release(struct compactor *c, struct ap_buf *tmp, bool done)
{
	compact_encoders_stop(c); /* first: they give the writer chunks */
	compact_writer_stop(c);	  /* then: it may be writing to c->fd */
	if (c->fd >= 0)
		close(c->fd);
	if (!done && tmp->len)
		unlink(tmp->buf);
	ap_buf_release(tmp);
	compact_rewrite_release(c);
	free(c->dec);
	compact_plan_free(c->plan, c->nplan);
	free(c->scratch);
	free(c->meta.b);
	compact_stacks_release(&c->stacks);
	free(c->tids);
	ap_chunk_walk_release(&c->walk);
	ap_streams_release(&c->out_streams);
}

/* The file's current contents, mapped. */
static const uint8_t *map_file(int fd, const char *path, size_t *size, mode_t *mode,
			       struct ap_error *err)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		int e = errno;
		ap_error_set(err, "%s: %s", path, e ? strerror(e) : "not a regular file");
		return NULL;
	}
	*size = (size_t)sb.st_size;
	*mode = sb.st_mode;
	void *map = *size ? mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (map == MAP_FAILED) {
		ap_error_set(err, "%s: %s", path, *size ? strerror(errno) : "empty file");
		return NULL;
	}
	return map;
}

int ap_trace_compact(const char *path, int level, struct ap_compact_stats *st, struct ap_error *err)
{
	memset(st, 0, sizeof(*st));
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return ap_error_set(err, "%s: %s", path, strerror(errno));
	size_t size;
	mode_t mode;
	const uint8_t *data = map_file(in, path, &size, &mode, err);
	close(in);
	if (!data)
		return -1;
	st->bytes_in = size;
	int rc = -1;
	struct ap_buf tmp = AP_BUF_INIT;
	struct compactor c = {.path = path,
			      .err = err,
			      .fd = -1,
			      .level = level,
			      .quantum = 1,
			      .transcode = true,
			      .st = st,
			      .count_only = level == 0};
	if (check_preamble(path, data, size, err) < 0)
		goto out;
	/* first: the quantum, compressed chunks, and whether several threads
	 * write events; then, for several, which thread names which address */
	if (walk_chunks(&c, data, size, false) < 0)
		goto out;
	if (level == 0) {
		/* count only: the file stays as the sampler wrote it */
		st->nthreads = c.ntids;
		st->bytes_out = size;
		rc = 0;
		goto out;
	}
	c.ntids = 0;
	if (c.threads && c.transcode &&
	    compact_plan(path, data, size, c.quantum, c.step, &c.plan, &c.nplan, err) < 0)
		goto out;
	st->cut = false; /* counted again by the pass that writes */
	st->events = 0;
	c.off = 0;
	if (open_output(&c, &tmp) < 0 || walk_chunks(&c, data, size, true) < 0 ||
	    replace_input(&c, &tmp, mode) < 0)
		goto out;
	rc = 0;
out:
	compactor_release(&c, &tmp, rc == 0);
	munmap((void *)data, size);
	return rc;
}

/* ---- compacting while the trace is written ----------------------------- */

struct ap_compact_stream {
	struct compactor c;
	struct ap_compact_stats st;
	struct ap_error err;
	struct ap_buf tmp;
	int in;
	char *path;
	bool done;     /* the output took the input's place */
	bool released; /* the compactor's memory is freed already */
};

struct ap_compact_stream *ap_compact_stream_start(const char *path, int level)
{
	if (level <= 0)
		return NULL;
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return NULL;
	struct ap_compact_stream *s = ap_xcalloc(1, sizeof(*s));
	s->in = in;
	s->path = ap_xstrdup(path);
	s->tmp = (struct ap_buf)AP_BUF_INIT;
	s->c = (struct compactor){.path = s->path,
				  .err = &s->err,
				  .fd = -1,
				  .level = level,
				  .quantum = 1,
				  .transcode = true,
				  .st = &s->st,
				  .stream = true,
				  .live = true};
	if (open_output(&s->c, &s->tmp) < 0) {
		ap_compact_stream_abandon(s);
		return NULL;
	}
	return s;
}

/* Walks what the file holds now. */
static int stream_walk(struct ap_compact_stream *s, mode_t *mode)
{
	size_t size;
	mode_t m;
	const uint8_t *data = map_file(s->in, s->path, &size, &m, &s->err);
	if (!data)
		return -1;
	if (mode)
		*mode = m;
	s->st.bytes_in = size;
	int rc = (s->c.off || check_preamble(s->path, data, size, &s->err) == 0) &&
			 walk_chunks(&s->c, data, size, true) == 0 && !s->c.gave_up
		     ? 0
		     : -1;
	munmap((void *)data, size);
	return rc;
}

int ap_compact_stream_feed(struct ap_compact_stream *s)
{
	return stream_walk(s, NULL);
}

/* finish, without freeing: *whole says the rest could not go on in the
 * stream (the file stays as it was, for ap_trace_compact). */
static int stream_end(struct ap_compact_stream *s, bool *whole)
{
	mode_t mode = 0;
	s->c.live = false;
	int rc = stream_walk(s, &mode);
	*whole = rc < 0 && s->c.gave_up;
	if (rc == 0)
		rc = replace_input(&s->c, &s->tmp, mode);
	s->done = rc == 0;
	return rc;
}

int ap_compact_stream_finish_keep(struct ap_compact_stream *s, struct ap_compact_stats *st,
				  struct ap_error *err)
{
	bool whole;
	int rc = stream_end(s, &whole);
	if (rc == 0)
		*st = s->st;
	else
		*err = s->err;
	if (!whole)
		return rc;
	/* what came since the last feed cannot go on in one pass (a second
	 * thread's first events, written as it exited): the whole file, as
	 * feed's caller would have done, the stream's memory freed first */
	compactor_release(&s->c, &s->tmp, false);
	s->released = true;
	return ap_trace_compact(s->path, s->c.level, st, err);
}

int ap_compact_stream_finish(struct ap_compact_stream *s, struct ap_compact_stats *st,
			     struct ap_error *err)
{
	int rc = ap_compact_stream_finish_keep(s, st, err);
	ap_compact_stream_abandon(s);
	return rc;
}

void ap_compact_stream_abandon(struct ap_compact_stream *s)
{
	if (!s)
		return;
	if (!s->released)
		compactor_release(&s->c, &s->tmp, s->done);
	close(s->in);
	free(s->path);
	free(s);
}
