/* ap_trace_snapshot (ap_trace_compact.h): a finished copy of a trace that
 * is still being written, from the trace and its buffers file, without
 * a word to the process that writes them. Report-side code: it mallocs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
	sm = mmap(NULL, (size_t)ss.st_size, PROT_READ, MAP_SHARED, sfd, 0);
	if (sm == MAP_FAILED) {
		ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	const struct ap_buffers_head *head = (const void *)sm;
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
	if (copy_trace(trace, tmp.buf, err) < 0) {
		unlink(tmp_side.buf);
		goto out;
	}
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
