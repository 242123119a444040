/* ap_trace_snapshot (ap_trace_compact.h): a finished copy of a trace that
 * is still being written, from the trace and its buffers file, without
 * a word to the process that writes them. Report-side code: it mallocs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_buffers.h"
#include "ap_trace_compact.h"

static int write_all(int fd, const void *p, size_t n, off_t at)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = pwrite(fd, b, n, at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
		at += k;
	}
	return 0;
}

/* Copies slot sl (in the live mapping) into dst at `off`: its header and
 * the records its len covers, taken while its owner did not write a
 * chunk (which empties the buffer, then moves its index on: a copy
 * whose index, stream and tid held still did not see a byte of it
 * rewritten, since the owner stores in order and rewrites only after
 * moving the index). A buffer that never holds still is copied empty. */
static int copy_slot(int dst, const struct ap_slot *sl, off_t off, uint8_t *tmp)
{
	struct ap_slot h;
	uint64_t len = 0;
	for (int tries = 0; tries < 10000; tries++) {
		uint32_t index = __atomic_load_n(&sl->index, __ATOMIC_ACQUIRE);
		uint32_t stream = __atomic_load_n(&sl->stream, __ATOMIC_ACQUIRE);
		uint32_t tid = __atomic_load_n(&sl->tid, __ATOMIC_ACQUIRE);
		len = __atomic_load_n(&sl->len, __ATOMIC_ACQUIRE);
		if (len > sl->size - AP_SLOT_HDR)
			len = 0;
		memcpy(tmp, (const uint8_t *)sl + AP_SLOT_HDR, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&sl->index, __ATOMIC_ACQUIRE) == index &&
		    __atomic_load_n(&sl->stream, __ATOMIC_ACQUIRE) == stream &&
		    __atomic_load_n(&sl->tid, __ATOMIC_ACQUIRE) == tid) {
			memcpy(&h, sl, sizeof(h));
			h.index = index;
			h.stream = stream;
			h.tid = tid;
			h.len = len;
			return write_all(dst, &h, sizeof(h), off) < 0 ||
					       write_all(dst, tmp, len, off + AP_SLOT_HDR) < 0
				   ? -1
				   : 0;
		}
	}
	memcpy(&h, sl, sizeof(h));
	h.len = 0;
	return write_all(dst, &h, sizeof(h), off);
}

/* The buffers file at src (mapped: sm, size bytes) into a new file dst. */
static int copy_buffers(const uint8_t *sm, size_t size, const char *dst, struct ap_error *err)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return ap_error_set(err, "%s: %s", dst, strerror(errno));
	uint8_t *tmp = NULL;
	int rc = 0;
	if (ftruncate(fd, (off_t)size) < 0 || write_all(fd, sm, AP_BUFFERS_PAGE, 0) < 0)
		rc = -1;
	for (size_t off = AP_BUFFERS_PAGE; !rc && off + AP_SLOT_HDR <= size;) {
		const struct ap_slot *sl = (const void *)(sm + off);
		uint32_t ssize = __atomic_load_n(&sl->size, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&sl->magic, __ATOMIC_ACQUIRE) != AP_SLOT_MAGIC ||
		    ssize < AP_BUFFERS_PAGE || ssize % AP_BUFFERS_PAGE || ssize > size - off)
			break;
		tmp = ap_xrealloc(tmp, ssize);
		rc = copy_slot(fd, sl, (off_t)off, tmp);
		off += ssize;
	}
	free(tmp);
	int e = errno;
	if (rc < 0)
		close(fd);
	else if (close(fd) < 0)
		rc = -1, e = errno;
	if (rc < 0) {
		unlink(dst);
		return ap_error_set(err, "%s: %s", dst, strerror(e));
	}
	return 0;
}

/* The ring's chunks not in the trace yet (ap_trace_buffers.h), copied
 * into the buffers file's copy (dfd) at the same places, with the drain
 * lock held so that where they start in the trace (drained_size, at
 * ring_tail) holds still meanwhile. ring_on false if there is no ring in
 * use (the sampler writes the trace itself, or not at all). */
struct ring_copy {
	bool on;
	uint64_t tail, head, drained;
};

static int copy_ring(struct ap_buffers_head *h, size_t size, int dfd, struct ring_copy *rc)
{
	memset(rc, 0, sizeof(*rc));
	uint64_t off = h->ring_off;
	if (__atomic_load_n(&h->ring_mode, __ATOMIC_ACQUIRE) != AP_RING_ON ||
	    off < AP_BUFFERS_PAGE || off % AP_BUFFERS_PAGE || off + AP_SLOT_HDR + h->ring_max > size)
		return 0;
	uint32_t me = (uint32_t)syscall(SYS_gettid), free_ = 0;
	for (int ms = 0; !__atomic_compare_exchange_n(&h->drain_lock, &free_, me, false,
						      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	     ms++) {
		if (ms > 2000)
			return 0; /* held and not let go: the copy goes without */
		free_ = 0;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	rc->tail = h->ring_tail;
	rc->head = __atomic_load_n(&h->ring_head, __ATOMIC_ACQUIRE);
	rc->drained = h->drained_size;
	/* (after head: the length its bytes are at; the copy's header says it) */
	uint64_t n = __atomic_load_n(&h->ring_size, __ATOMIC_ACQUIRE);
	int r = 0;
	if (n && n <= h->ring_max && rc->head - rc->tail <= n &&
	    write_all(dfd, &n, sizeof(n), offsetof(struct ap_buffers_head, ring_size)) == 0) {
		const uint8_t *ring = (const uint8_t *)h + off + AP_SLOT_HDR;
		uint64_t at = rc->tail % n, len = rc->head - rc->tail, first = n - at < len ? n - at : len;
		r = write_all(dfd, ring + at, first, (off_t)(off + AP_SLOT_HDR + at)) < 0 ||
				    write_all(dfd, ring, len - first, (off_t)(off + AP_SLOT_HDR)) < 0
			    ? -1
			    : 0;
		rc->on = r == 0;
	}
	__atomic_store_n(&h->drain_lock, 0, __ATOMIC_RELEASE);
	return r;
}

/* The copy's ring told where its chunks start now that the trace's copy
 * is `tsize` bytes: what record appended since copy_ring is there already
 * (a chunk it was writing, in part: the ring's bytes from there on end it). */
static int ring_copy_settle(int dfd, const struct ring_copy *rc, uint64_t tsize)
{
	uint64_t in = tsize > rc->drained ? tsize - rc->drained : 0;
	if (in > rc->head - rc->tail)
		in = rc->head - rc->tail;
	uint64_t tail = rc->tail + in;
	uint32_t zero = 0;
	return write_all(dfd, &tail, sizeof(tail), offsetof(struct ap_buffers_head, ring_tail)) < 0 ||
			       write_all(dfd, &zero, sizeof(zero),
					 offsetof(struct ap_buffers_head, drain_lock)) < 0
		       ? -1
		       : 0;
}

/* The trace's bytes as they are now into a new file dst. */
static int copy_trace(const char *src, const char *dst, struct ap_error *err)
{
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return ap_error_set(err, "%s: %s", src, strerror(errno));
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0) {
		int e = errno;
		close(in);
		return ap_error_set(err, "%s: %s", dst, strerror(e));
	}
	uint8_t buf[1 << 16];
	off_t at = 0;
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write_all(out, buf, (size_t)n, at) < 0) {
			rc = ap_error_set(err, "%s: %s", n < 0 ? src : dst, strerror(errno));
			break;
		}
		at += n;
	}
	close(in);
	if (close(out) < 0 && rc == 0)
		rc = ap_error_set(err, "%s: %s", dst, strerror(errno));
	if (rc < 0)
		unlink(dst);
	return rc;
}

int ap_trace_snapshot(const char *trace, const char *out, struct ap_finished *fin,
		      struct ap_error *err)
{
	struct ap_buf side = AP_BUF_INIT, tmp = AP_BUF_INIT, tmp_side = AP_BUF_INIT;
	ap_buf_addf(&side, "%s%s", trace, AP_BUFFERS_SUFFIX);
	ap_buf_addf(&tmp, "%s.partial-%ld", out, (long)getpid());
	ap_buf_addf(&tmp_side, "%s%s", tmp.buf, AP_BUFFERS_SUFFIX);
	int rc = -1, sfd = -1;
	uint8_t *sm = MAP_FAILED;
	struct stat ss, ts;
	if (stat(trace, &ts) < 0) {
		ap_error_set(err, "%s: %s", trace, strerror(errno));
		goto out;
	}
	if (S_ISDIR(ts.st_mode)) {
		ap_error_set(err, "%s: %s", trace, strerror(EISDIR));
		goto out;
	}
	if (!ap_trace_file_is_trace(trace)) {
		ap_error_set(err, "%s: not an allocprof trace", trace);
		goto out;
	}
	sfd = open(side.buf, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (sfd < 0 && errno == EACCES) /* (another user's: read only, no ring then) */
		sfd = open(side.buf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (sfd < 0 && errno == ENOENT) {
		ap_error_set(err, "%s: no buffers file (%s): not a trace `allocprof record` is "
				  "writing; a finished trace is read as it is",
			     trace, side.buf);
		goto out;
	}
	if (sfd < 0 || fstat(sfd, &ss) < 0) {
		ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	if (!S_ISREG(ss.st_mode) || ss.st_size < (off_t)AP_BUFFERS_PAGE) {
		ap_error_set(err, "%s: not a buffers file", side.buf);
		goto out;
	}
	int acc = fcntl(sfd, F_GETFL);
	bool rw = acc >= 0 && (acc & O_ACCMODE) == O_RDWR;
	sm = mmap(NULL, (size_t)ss.st_size, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, sfd,
		  0);
	if (sm == MAP_FAILED) {
		ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	struct ap_buffers_head *head = (void *)sm;
	if (memcmp(head->magic, AP_BUFFERS_MAGIC, sizeof(head->magic)) ||
	    head->version != AP_BUFFERS_VERSION) {
		ap_error_set(err, "%s: not a buffers file of this allocprof", side.buf);
		goto out;
	}
	/* the buffers first, then the trace: a chunk written in between is
	 * in the trace's copy, and its buffer's copy is left out as one the
	 * trace holds already; the other way round it would be in neither */
	unlink(tmp.buf);
	unlink(tmp_side.buf);
	if (copy_buffers(sm, (size_t)ss.st_size, tmp_side.buf, err) < 0)
		goto out;
	/* the ring's chunks after the slots, before the trace: a chunk
	 * record appends in between is in the trace's copy, and the ring's
	 * copy starts after it (ring_copy_settle) */
	struct ring_copy ring = { 0 };
	int dfd = open(tmp_side.buf, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	uint32_t off_ = 0;
	if (dfd < 0 || (rw && copy_ring(head, (size_t)ss.st_size, dfd, &ring) < 0) ||
	    /* a ring not copied is none to the finisher */
	    (!ring.on && write_all(dfd, &off_, sizeof(off_),
				   offsetof(struct ap_buffers_head, ring_mode)) < 0)) {
		ap_error_set(err, "%s: %s", tmp_side.buf, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		unlink(tmp_side.buf);
		goto out;
	}
	if (copy_trace(trace, tmp.buf, err) < 0) {
		close(dfd);
		unlink(tmp_side.buf);
		goto out;
	}
	struct stat cs;
	if (ring.on && (stat(tmp.buf, &cs) < 0 || ring_copy_settle(dfd, &ring, (uint64_t)cs.st_size) < 0)) {
		ap_error_set(err, "%s: %s", tmp_side.buf, strerror(errno));
		close(dfd);
		unlink(tmp.buf);
		unlink(tmp_side.buf);
		goto out;
	}
	close(dfd);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	struct ap_death how = {
	    .reason = AP_END_SNAPSHOT,
	    .end_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
	};
	struct ap_error ferr;
	if (ap_trace_finish_buffers(tmp.buf, &how, fin, &ferr) < 0) {
		ap_error_set(err, "%s: %s", out, ferr.msg);
		unlink(tmp.buf);
		unlink(tmp_side.buf);
		goto out;
	}
	unlink(tmp_side.buf); /* (finish leaves it for a corrupt trace) */
	if (rename(tmp.buf, out) < 0) {
		ap_error_set(err, "%s: %s", out, strerror(errno));
		unlink(tmp.buf);
		goto out;
	}
	rc = 0;
out:
	if (sm != MAP_FAILED)
		munmap(sm, (size_t)ss.st_size);
	if (sfd >= 0)
		close(sfd);
	ap_buf_release(&side);
	ap_buf_release(&tmp);
	ap_buf_release(&tmp_side);
	return rc;
}
