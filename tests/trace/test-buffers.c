/* ap_trace_finish_buffers: a trace finished from the sampler's buffers
 * file once its process is gone. Each case builds a trace with the test
 * writer, cuts it where a death would have, and puts into a buffers file
 * what the sampler's buffers would hold then; the finished trace must
 * read with every event once (not twice, not lost), end as it should,
 * and the buffers file must be gone. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_buffers.h"
#include "ap_trace_compact.h"
#include "ap_trace_writer.h"
#include "ap_check.h"

#define NEV 40

static char dir[] = "/tmp/ap-test-buffers-XXXXXX";
static char path[128], side[160];

/* The writer's trace of NEV allocations of thread 100, a few per chunk,
 * with or without END. */
static uint8_t *build(size_t *len, bool end)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 48);
	uint64_t pc = 0x401000;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, 100, "t");
	for (int i = 0; i < NEV; i++)
		ap_tw_alloc(tw, 100, h.start_ns + 1000 * (uint64_t)i, 0, AP_KIND_MALLOC,
			    0x10000 + 64 * (uint64_t)i, 48, st);
	if (end) {
		struct ap_tw_end e = {.end_ns = h.start_ns + 1000000, .reason = AP_END_EXIT,
				      .calls = NEV, .bytes = 48 * NEV};
		ap_tw_end(tw, &e);
	}
	uint8_t *data;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, len, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	return data;
}

/* The last (or first) EVENTS chunk of data[0..len): its offset, stream,
 * index. */
static struct ap_chunk events_chunk(const uint8_t *data, size_t len, bool first)
{
	struct ap_chunk_walk w;
	struct ap_chunk c, pick = {0};
	char why[160];
	ap_chunk_walk_init(&w, data, len);
	while (ap_chunk_next(&w, &c, why, sizeof(why)) == AP_CHUNK_OK)
		if (c.type == AP_CHUNK_EVENTS && (!first || !pick.off))
			pick = c;
	ap_chunk_walk_release(&w);
	return pick;
}

static struct ap_chunk last_events(const uint8_t *data, size_t len)
{
	return events_chunk(data, len, false);
}

static void put_file(const char *p, const void *data, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0) {
		perror(p);
		exit(1);
	}
}

/* A buffers file: an empty META slot, and an EVENTS slot holding
 * payload[0..n) as the next chunk (`index`) of `stream`; stopped: 0 not,
 * STOPPED_OLD as files of before stop_errno, else the errno. */
#define STOPPED_OLD UINT32_MAX
static void put_buffers(uint32_t stream, uint32_t index, const uint8_t *payload, size_t n,
			uint32_t stopped)
{
	size_t slot = AP_BUFFERS_PAGE * 32, size = AP_BUFFERS_PAGE + 2 * slot;
	uint8_t *f = calloc(1, size);
	struct ap_buffers_head *h = (void *)f;
	memcpy(h->magic, AP_BUFFERS_MAGIC, sizeof(h->magic));
	h->version = AP_BUFFERS_VERSION;
	h->pid = 1000;
	h->stopped = stopped != 0;
	h->stop_errno = stopped == STOPPED_OLD ? 0 : stopped;
	struct ap_slot *m = (void *)(f + AP_BUFFERS_PAGE), *e = (void *)(f + AP_BUFFERS_PAGE + slot);
	*m = (struct ap_slot){.magic = AP_SLOT_MAGIC, .type = AP_CHUNK_META, .size = (uint32_t)slot,
			      .tid = 100, .index = 1, .len = AP_CHUNK_HDR_LEN};
	*e = (struct ap_slot){.magic = AP_SLOT_MAGIC, .type = AP_CHUNK_EVENTS,
			      .size = (uint32_t)slot, .tid = 100, .stream = stream, .index = index,
			      .len = AP_CHUNK_HDR_LEN + n};
	memcpy((uint8_t *)e + AP_SLOT_HDR + AP_CHUNK_HDR_LEN, payload, n);
	put_file(side, f, size);
	free(f);
}

/* A buffers file whose ring (a slot of its own, 2 pages) holds bytes[0..n)
 * not in the trace yet, from ring position `tail` on (past the ring's end:
 * they wrap), its drain lock held by `holder` (0: free), the trace's size
 * after the last bytes taken `drained`; then an empty META and EVENTS
 * slot (the process's buffers emptied into the ring). */
static void put_ring(const uint8_t *bytes, size_t n, uint64_t tail, uint32_t holder,
		     uint64_t drained)
{
	size_t rslot = 2 * AP_BUFFERS_PAGE, slot = AP_BUFFERS_PAGE * 4;
	size_t size = AP_BUFFERS_PAGE + rslot + 2 * slot;
	uint8_t *f = calloc(1, size);
	struct ap_buffers_head *h = (void *)f;
	memcpy(h->magic, AP_BUFFERS_MAGIC, sizeof(h->magic));
	h->version = AP_BUFFERS_VERSION;
	h->pid = 1000;
	h->ring_off = AP_BUFFERS_PAGE;
	h->ring_size = rslot - AP_SLOT_HDR;
	h->ring_tail = tail;
	h->ring_head = tail + n;
	h->drain_lock = holder;
	h->drained_size = drained;
	h->ring_mode = AP_RING_ON;
	struct ap_slot *r = (void *)(f + AP_BUFFERS_PAGE);
	*r = (struct ap_slot){.magic = AP_SLOT_MAGIC, .type = AP_SLOT_RING, .size = (uint32_t)rslot,
			      .len = AP_CHUNK_HDR_LEN};
	uint8_t *ring = (uint8_t *)r + AP_SLOT_HDR;
	for (size_t i = 0; i < n; i++)
		ring[(tail + i) % h->ring_size] = bytes[i];
	struct ap_slot *m = (void *)(f + AP_BUFFERS_PAGE + rslot),
		       *e = (void *)(f + AP_BUFFERS_PAGE + rslot + slot);
	*m = (struct ap_slot){.magic = AP_SLOT_MAGIC, .type = AP_CHUNK_META, .size = (uint32_t)slot,
			      .tid = 100, .len = AP_CHUNK_HDR_LEN};
	*e = (struct ap_slot){.magic = AP_SLOT_MAGIC, .type = AP_CHUNK_EVENTS,
			      .size = (uint32_t)slot, .tid = 100, .len = AP_CHUNK_HDR_LEN};
	put_file(side, f, size);
	free(f);
}

/* Finishes the trace as killed by SIGKILL; reads it back. */
static struct ap_trace *finish(const char *what, struct ap_finished *fin)
{
	struct ap_death how = {AP_END_KILLED, true, 9, 2000000000};
	struct ap_error err;
	CHECK(ap_trace_finish_buffers(path, &how, fin, &err) == 0, "%s: %s", what, err.msg);
	CHECK(access(side, F_OK) < 0, "%s: the buffers file is left", what);
	struct ap_trace *t = NULL;
	if (ap_trace_read(path, &t, &err, NULL, NULL) < 0) {
		CHECK(0, "%s: %s", what, err.msg);
		return NULL;
	}
	CHECK(!t->truncated, "%s: truncated: %s", what, t->truncated_why);
	return t;
}

static void killed_as(const char *what, const struct ap_trace *t)
{
	CHECK(t->has_end && t->end_reason == AP_END_KILLED && t->end_status_known &&
		      t->end_status == 9 && !t->has_counts,
	      "%s: end %d reason %llu status %llu counts %d", what, t->has_end,
	      (unsigned long long)t->end_reason, (unsigned long long)t->end_status, t->has_counts);
}

/* The trace stopped at the file size limit (c: its last EVENTS chunk,
 * the one that did not fit): an END that says so, and none of the
 * buffers' records after the lost chunk; under a limit that leaves no
 * room for the END, the END takes the last chunk's place. */
static void stopped_end(const uint8_t *full, struct ap_chunk c)
{
	struct ap_death how = {AP_END_KILLED, true, 9, 2000000000};
	struct ap_finished fin;
	struct ap_error err;
	struct ap_trace *t;
	uint64_t before = 0;
	for (int tight = 0; tight < 2; tight++) {
		const char *what = tight ? "stopped, no room" : "stopped";
		put_file(path, full, c.off);
		put_buffers(c.stream, c.index + 1, c.payload, c.len, EFBIG);
		struct rlimit was;
		CHECK(getrlimit(RLIMIT_FSIZE, &was) == 0, "getrlimit");
		if (tight) {
			/* 10 bytes of room: less than any END */
			struct rlimit rl = {(rlim_t)c.off + 10, was.rlim_max};
			CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit");
		}
		int rc = ap_trace_finish_buffers(path, &how, &fin, &err);
		CHECK(setrlimit(RLIMIT_FSIZE, &was) == 0, "setrlimit back");
		CHECK(rc == 0 && fin.found && fin.end_added && fin.reason == AP_END_STOPPED &&
			      fin.stop_errno == EFBIG && fin.chunks == 0,
		      "%s: rc %d added %d reason %u errno %u chunks %llu: %s", what, rc,
		      fin.end_added, fin.reason, fin.stop_errno, (unsigned long long)fin.chunks,
		      rc ? err.msg : "");
		CHECK(access(side, F_OK) < 0, "%s: the buffers file is left", what);
		if (ap_trace_read(path, &t, &err, NULL, NULL) < 0) {
			CHECK(0, "%s: %s", what, err.msg);
			continue;
		}
		CHECK(t->has_end && t->end_reason == AP_END_STOPPED && t->stop_errno == EFBIG &&
			      t->truncated && strstr(t->truncated_why, "file size limit") &&
			      !t->end_status_known,
		      "%s: end %d reason %llu errno %llu truncated %d: %s", what, t->has_end,
		      (unsigned long long)t->end_reason, (unsigned long long)t->stop_errno,
		      t->truncated, t->truncated_why);
		if (!tight)
			before = t->nrecords;
		CHECK(tight ? t->nrecords < before && t->file_size <= (uint64_t)c.off + 10
			    : t->nrecords > 0 && t->nrecords < NEV,
		      "%s: %llu records (%llu before), %llu bytes", what,
		      (unsigned long long)t->nrecords, (unsigned long long)before,
		      (unsigned long long)t->file_size);
		ap_trace_free(t);
	}
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/t.trace", dir);
	snprintf(side, sizeof(side), "%s%s", path, AP_BUFFERS_SUFFIX);
	size_t len;
	uint8_t *full = build(&len, false);
	struct ap_chunk c = last_events(full, len);
	CHECK(c.off > 0 && c.index > 0, "the writer wrote one EVENTS chunk");
	struct ap_finished fin;
	struct ap_trace *t;

	/* died between writing its last chunk and emptying the buffer: the
	 * chunk is in the file, and must not come twice */
	put_file(path, full, len);
	put_buffers(c.stream, c.index, c.payload, c.len, 0);
	if ((t = finish("written", &fin))) {
		CHECK(t->nrecords == NEV, "written: %llu records", (unsigned long long)t->nrecords);
		CHECK(fin.chunks == 0 && fin.end_added, "written: %llu chunks", (unsigned long long)fin.chunks);
		killed_as("written", t);
		ap_trace_free(t);
	}

	/* died while writing it: the file ends inside the chunk, whose
	 * records are still in the buffer */
	put_file(path, full, c.off + AP_CHUNK_HDR_LEN + c.len / 2);
	put_buffers(c.stream, c.index, c.payload, c.len, 0);
	if ((t = finish("cut", &fin))) {
		CHECK(t->nrecords == NEV, "cut: %llu records", (unsigned long long)t->nrecords);
		CHECK(fin.chunks == 1, "cut: %llu chunks", (unsigned long long)fin.chunks);
		killed_as("cut", t);
		ap_trace_free(t);
	}

	/* Chunks in the ring record had not taken yet (ring_tail near the
	 * ring's end: they wrap): the finisher takes them first, whole, in
	 * order; then END */
	{
		struct ap_chunk c0 = events_chunk(full, len, true);
		CHECK(c0.off > 0 && len - c0.off > 200 && len - c0.off < 2 * AP_BUFFERS_PAGE - 200,
		      "ring: the chunks from the first EVENTS one fit a 2-page ring (%zu bytes)",
		      len - c0.off);
		uint64_t tail = 2 * AP_BUFFERS_PAGE - AP_SLOT_HDR - 100 + 3 * (2 * AP_BUFFERS_PAGE);
		put_file(path, full, c0.off);
		put_ring(full + c0.off, len - c0.off, tail, 0, c0.off);
		if ((t = finish("ring", &fin))) {
			CHECK(t->nrecords == NEV, "ring: %llu records", (unsigned long long)t->nrecords);
			CHECK(fin.chunks == 0 && fin.end_added, "ring: %llu chunks from the slots",
			      (unsigned long long)fin.chunks);
			killed_as("ring", t);
			ap_trace_free(t);
		}
		/* record died while it wrote some of them (half a chunk is in
		 * the trace past drained_size), its drain lock still held: the
		 * finisher takes the lock from the dead thread, cuts the trace
		 * back to drained_size, and takes them all once */
		pid_t dead = fork();
		if (dead == 0)
			_exit(0);
		waitpid(dead, NULL, 0);
		put_file(path, full, c0.off + AP_CHUNK_HDR_LEN + 5);
		put_ring(full + c0.off, len - c0.off, tail, (uint32_t)dead, c0.off);
		if ((t = finish("ring, drainer died", &fin))) {
			CHECK(t->nrecords == NEV, "ring, drainer died: %llu records",
			      (unsigned long long)t->nrecords);
			killed_as("ring, drainer died", t);
			ap_trace_free(t);
		}
	}

	/* died before its buffer was ever written: a stream of its own */
	put_file(path, full, c.off);
	put_buffers(0, 0, c.payload, c.len, 0);
	if ((t = finish("unwritten", &fin))) {
		CHECK(t->nrecords == NEV, "unwritten: %llu records", (unsigned long long)t->nrecords);
		killed_as("unwritten", t);
		ap_trace_free(t);
	}

	/* a stream that lost a chunk (the one before): nothing may follow */
	put_file(path, full, c.off);
	put_buffers(c.stream, c.index + 1, c.payload, c.len, 0);
	if ((t = finish("gap", &fin))) {
		CHECK(fin.chunks == 0, "gap: %llu chunks", (unsigned long long)fin.chunks);
		ap_trace_free(t);
	}

	/* an earlier EVENTS payload that does not match its checksum (a bit
	 * flipped on disk): the finisher reads the chunks' headers only (a
	 * page a chunk, not the whole file), so the buffer's chunk and END
	 * go after it; the reader then names the bad chunk */
	{
		struct ap_chunk_walk w;
		struct ap_chunk e, first_ev = {0};
		char why[160];
		ap_chunk_walk_init(&w, full, c.off);
		while (ap_chunk_next(&w, &e, why, sizeof(why)) == AP_CHUNK_OK)
			if (e.type == AP_CHUNK_EVENTS && !first_ev.off)
				first_ev = e;
		ap_chunk_walk_release(&w);
		CHECK(first_ev.off && first_ev.off < c.off, "an EVENTS chunk before the last");
		uint8_t *bad = malloc(c.off);
		memcpy(bad, full, c.off);
		bad[first_ev.off + AP_CHUNK_HDR_LEN] ^= 0x40;
		put_file(path, bad, c.off);
		free(bad);
		put_buffers(c.stream, c.index, c.payload, c.len, 0);
		struct ap_death how = {AP_END_KILLED, true, 9, 2000000000};
		struct ap_error err;
		CHECK(ap_trace_finish_buffers(path, &how, &fin, &err) == 0 && fin.chunks == 1 &&
			      fin.end_added,
		      "bad payload: %s, %llu chunks, end added %d", err.msg,
		      (unsigned long long)fin.chunks, fin.end_added);
		CHECK(access(side, F_OK) < 0, "bad payload: the buffers file is left");
		t = NULL;
		CHECK(ap_trace_read(path, &t, &err, NULL, NULL) < 0 &&
			      strstr(err.msg, "payload checksum mismatch"),
		      "bad payload: read as %s", t ? "fine" : err.msg);
		ap_trace_free(t);
	}

	/* the trace stopped (a write failed), the sampler of before
	 * stop_errno: left as it is */
	put_file(path, full, c.off);
	put_buffers(c.stream, c.index, c.payload, c.len, STOPPED_OLD);
	struct ap_death how = {AP_END_KILLED, true, 9, 2000000000};
	struct ap_error err;
	CHECK(ap_trace_finish_buffers(path, &how, &fin, &err) == 0 && fin.found && !fin.end_added,
	      "stopped: %s", err.msg);
	stopped_end(full, c);

	/* c.payload points into this trace: kept until the last use of c */
	uint8_t *first = full;

	/* a clean END with the buffer's events after it (the frees glibc
	 * makes in exit()): they come after it, and a copy of it ends the
	 * trace, counts and all */
	full = build(&len, true);
	put_file(path, full, len);
	put_buffers(c.stream, c.index + 1, c.payload, c.len, 0);
	if ((t = finish("late", &fin))) {
		CHECK(t->nrecords > NEV && fin.chunks == 1, "late: %llu records, %llu chunks",
		      (unsigned long long)t->nrecords, (unsigned long long)fin.chunks);
		CHECK(t->has_end && t->end_reason == AP_END_EXIT && t->has_counts && t->calls == NEV,
		      "late: reason %llu counts %d calls %llu", (unsigned long long)t->end_reason,
		      t->has_counts, (unsigned long long)t->calls);
		ap_trace_free(t);
	}

	/* END last, buffers empty: nothing to do but remove the file */
	put_file(path, full, len);
	put_buffers(c.stream, c.index + 1, c.payload, 0, 0);
	if ((t = finish("clean", &fin))) {
		CHECK(fin.chunks == 0 && !fin.end_added && t->nrecords == NEV,
		      "clean: %llu chunks", (unsigned long long)fin.chunks);
		ap_trace_free(t);
	}
	free(full);
	free(first);
	unlink(path);
	rmdir(dir);
	return failures ? 1 : 0;
}
