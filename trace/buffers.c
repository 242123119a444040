/* ap_trace_finish_buffers (ap_trace_compact.h): a trace finished from its
 * buffers file (ap_trace_buffers.h) once its process is gone. What the
 * sampler had recorded and not written (its death gave it no chance:
 * SIGKILL, an exit_group system call past exit(), a flush a fatal signal
 * gave up on, the frees glibc makes after END) becomes the trace's last
 * chunks, framed as the sampler frames them, and the trace gets the END
 * its process could not write. Report-side code: it mallocs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <signal.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_buffers.h"
#include "ap_trace_compact.h"
#include "ap_trace_encode.h"

/* What the trace holds, as far as finishing it needs. */
struct seen {
	struct ap_chunk_walk walk;
	bool header, cut;
	size_t cut_at;
	uint32_t max_stream;
	size_t end_off;	     /* the last END's chunk (0: none) */
	uint32_t end_len;
	uint64_t end_reason;
	bool data_after_end; /* META or EVENTS after the last END */
	/* where the last META and EVENTS chunks start (a ring: data_chunks
	 * of them, at most SEEN_LAST), for an END that must make room */
	size_t last_off[8];
};
#define SEEN_LAST (sizeof(((struct seen *)0)->last_off) / sizeof(size_t))

/* Walks the trace's chunks; -1 if it is corrupt (then it is left as it is). */
static int walk_trace(struct seen *s, const uint8_t *data, size_t size)
{
	ap_chunk_walk_init(&s->walk, data, size);
	/* (what the events say is not this walk's business: the compactor
	 * and the reader check their payloads) */
	s->walk.headers_only = true;
	if (size < AP_TRACE_PREAMBLE_LEN)
		return 0;
	for (;;) {
		struct ap_chunk ch;
		char why[160];
		enum ap_chunk_result r = ap_chunk_next(&s->walk, &ch, why, sizeof(why));
		if (r == AP_CHUNK_EOF)
			return 0;
		if (r == AP_CHUNK_CUT) {
			s->cut = true;
			s->cut_at = s->walk.off;
			return 0;
		}
		if (r == AP_CHUNK_BAD)
			return -1;
		s->header |= ch.type == AP_CHUNK_HEADER;
		if (ch.type == AP_CHUNK_END) {
			s->end_off = ch.off;
			s->end_len = ch.len;
			s->data_after_end = false;
			s->end_reason = AP_END_EXIT;
			const uint8_t *p = ch.payload, *end = p + ch.len;
			uint64_t key, kind, v;
			while (p < end && !ap_get_uv(&p, end, &key) && !ap_get_uv(&p, end, &kind) &&
			       !ap_get_uv(&p, end, &v)) {
				if (kind == AP_KV_STR)
					p += v <= (uint64_t)(end - p) ? v : (uint64_t)(end - p);
				else if (key == AP_EK_REASON)
					s->end_reason = v;
			}
		} else if (ch.type == AP_CHUNK_META || ch.type == AP_CHUNK_EVENTS) {
			s->data_after_end = s->end_off != 0;
			s->last_off[(s->walk.data_chunks - 1) % SEEN_LAST] = ch.off;
			if (ch.stream != AP_STREAM_NONE && ch.stream > s->max_stream)
				s->max_stream = ch.stream;
		}
	}
}

/* Whether the trace ends with a whole END chunk, by its chunk headers
 * alone (no checksum: the common case, a process that wrote END last
 * and left its buffers empty, need not read the whole trace). Read with
 * pread, one header a chunk: through a mapping, each header's page
 * fault mapped the pages around it too, all of a trace of 64 KiB chunks,
 * and the unmap cleared them again (bench/realloc's 23 MB, 362 chunks:
 * ~1 ms of record's end). */
static bool ends_with_end(int fd, size_t size)
{
	uint8_t last = 0;
	size_t off = AP_TRACE_PREAMBLE_LEN;
	while (off < size) {
		uint8_t h[AP_CHUNK_HDR_LEN];
		if (size - off < AP_CHUNK_HDR_LEN ||
		    pread(fd, h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h) ||
		    ap_get_u32le(h) != AP_CHUNK_MAGIC)
			return false;
		uint64_t next = off + AP_CHUNK_HDR_LEN + (uint64_t)ap_get_u32le(h + 12);
		if (next > size)
			return false;
		last = h[4];
		off = (size_t)next;
	}
	return last == AP_CHUNK_END;
}

/* Whether some slot of the buffers file holds records. */
static bool slots_hold_records(const uint8_t *sm, size_t size)
{
	for (size_t off = AP_BUFFERS_PAGE; off + AP_SLOT_HDR <= size;) {
		const struct ap_slot *sl = (const void *)(sm + off);
		if (sl->magic != AP_SLOT_MAGIC || sl->size < AP_BUFFERS_PAGE ||
		    sl->size % AP_BUFFERS_PAGE || sl->size > size - off)
			break;
		if (sl->len > AP_CHUNK_HDR_LEN)
			return true;
		off += sl->size;
	}
	return false;
}

static int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One chunk of `type` around payload[0..len). */
static int put_chunk(int fd, uint8_t type, uint8_t flags, uint32_t tid, uint32_t stream,
		     uint32_t index, const uint8_t *payload, size_t len)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	ap_chunk_header_flags(hdr, type, flags, tid, stream, index, payload, (uint32_t)len);
	return write_all(fd, hdr, sizeof(hdr)) < 0 ? -1 : write_all(fd, payload, len);
}

/* The END: the last one's fields with the chunks counted now (the
 * process wrote it, then went on: the frees glibc makes after it), or a
 * new one saying how the process ended, without the counts the sampler
 * kept in its threads' memory. */
static int put_end(int fd, const struct seen *s, const uint8_t *data,
		   const struct ap_buffers_head *head, const struct ap_death *how, uint64_t chunks,
		   unsigned *reason)
{
	uint8_t buf[8 * AP_KV_UINT_MAX + AP_CHUNK_MAX_PAYLOAD / 1024];
	size_t n = 0;
	bool copy = s->end_off && s->end_reason != AP_END_EXEC &&
		    s->end_len <= sizeof(buf) - AP_KV_UINT_MAX;
	if (copy) {
		const uint8_t *p = data + s->end_off + AP_CHUNK_HDR_LEN, *end = p + s->end_len;
		while (p < end) {
			const uint8_t *at = p;
			uint64_t key, kind, v;
			if (ap_get_uv(&p, end, &key) < 0 || ap_get_uv(&p, end, &kind) < 0 ||
			    ap_get_uv(&p, end, &v) < 0)
				break;
			if (kind == AP_KV_STR)
				p += v <= (uint64_t)(end - p) ? v : (uint64_t)(end - p);
			if (key != AP_EK_CHUNKS) {
				memcpy(buf + n, at, (size_t)(p - at));
				n += (size_t)(p - at);
			}
		}
		*reason = (unsigned)s->end_reason;
	} else {
		*reason = how->reason;
		n += ap_put_kv_uint(buf + n, AP_EK_END_NS, how->end_ns);
		n += ap_put_kv_uint(buf + n, AP_EK_REASON, how->reason);
		if (how->status_known)
			n += ap_put_kv_uint(buf + n, AP_EK_STATUS, how->status);
		/* the live-byte peak the sampler kept in the buffers file */
		if (head->live_slack) {
			n += ap_put_kv_uint(buf + n, AP_EK_LIVE_PEAK, head->live_peak);
			n += ap_put_kv_uint(buf + n, AP_EK_LIVE_SLACK, head->live_slack);
		}
	}
	n += ap_put_kv_uint(buf + n, AP_EK_CHUNKS, chunks);
	return put_chunk(fd, AP_CHUNK_END, 0, 0, AP_STREAM_NONE, 0, buf, n);
}

/* The END of a trace that stopped at a chunk that did not fit (the
 * sampler's write failed with `stop_errno`): reason AP_END_STOPPED, so
 * that a report read later, elsewhere, says why the trace ends where it
 * does. `record` runs under the program's RLIMIT_FSIZE too: an END that
 * would not fit under it takes the place of the last chunks (a write
 * past the limit would send record SIGXFSZ); 0 with *added false if
 * even that cannot be. */
static int put_stopped_end(int fd, const struct seen *s, size_t size, const struct ap_death *how,
			   uint32_t stop_errno, bool *added)
{
	uint64_t chunks = s->walk.data_chunks;
	uint8_t chunk[AP_CHUNK_HDR_LEN + 4 * AP_KV_UINT_MAX];
	size_t n, want = size;
	for (;;) {
		uint8_t *payload = chunk + AP_CHUNK_HDR_LEN;
		n = ap_put_kv_uint(payload, AP_EK_END_NS, how->end_ns);
		n += ap_put_kv_uint(payload + n, AP_EK_REASON, AP_END_STOPPED);
		n += ap_put_kv_uint(payload + n, AP_EK_STOP_ERRNO, stop_errno);
		n += ap_put_kv_uint(payload + n, AP_EK_CHUNKS, chunks);
		ap_chunk_header(chunk, AP_CHUNK_END, 0, AP_STREAM_NONE, 0, payload, (uint32_t)n);
		n += AP_CHUNK_HDR_LEN;
		struct rlimit rl;
		if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
		    (uint64_t)want + n <= (uint64_t)rl.rlim_cur)
			break;
		uint64_t kept = s->walk.data_chunks - chunks;
		if (!chunks || kept >= SEEN_LAST) {
			*added = false;
			return 0;
		}
		want = s->last_off[(chunks - 1) % SEEN_LAST];
		chunks--;
	}
	if (want < size && ftruncate(fd, (off_t)want) < 0)
		return -1;
	*added = true;
	return write_all(fd, chunk, n);
}

/* ---- the ring ---------------------------------------------------------- */

/* Whether the header's ring lies inside a file of `size` bytes. */
static bool ring_fits(const struct ap_buffers_head *h, size_t size)
{
	uint64_t off = __atomic_load_n(&h->ring_off, __ATOMIC_ACQUIRE), n = h->ring_size;
	return off >= AP_BUFFERS_PAGE && off % AP_BUFFERS_PAGE == 0 && n > 0 &&
	       off + AP_SLOT_HDR + n <= size && off + AP_SLOT_HDR + n > off;
}

static uint32_t own_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static void ring_wake(struct ap_buffers_head *h)
{
	__atomic_add_fetch(&h->ring_seq, 1, __ATOMIC_ACQ_REL);
	if (__atomic_exchange_n(&h->ring_waiting, 0, __ATOMIC_ACQ_REL))
		syscall(SYS_futex, &h->ring_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* The ring's whole chunks [tail, head) appended to the trace (tfd), with
 * the drain lock (ap_trace_buffers.h): taken from a dead holder too,
 * whose half-written bytes are cut off first; a live one's turn is
 * waited for with `wait` (the process is gone: finishing), else left to
 * it. `done`: the process is gone and this is the last take: the ring is
 * done with. Returns the bytes appended, 0 if none, -1 if a write failed
 * (errno): the trace cut back, the ring stopped. */
static int64_t ring_take(struct ap_buffers_head *h, const uint8_t *ring, int tfd, bool wait,
			 bool done)
{
	uint32_t me = own_tid();
	bool stolen = false;
	/* the sampler's own now (it took the ring over): nothing to take */
	if (!done && __atomic_load_n(&h->ring_mode, __ATOMIC_ACQUIRE) != AP_RING_ON)
		return 0;
	for (;;) {
		uint32_t holder = 0;
		if (__atomic_compare_exchange_n(&h->drain_lock, &holder, me, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
		/* a drain of record's that died (record's pid namespace: its
		 * thread id means something here); a sampler's only once its
		 * process is gone (`done`: finishing), whatever its id says */
		bool dead = holder & AP_DRAIN_SAMPLER
				    ? done
				    : holder && kill((pid_t)holder, 0) < 0 && errno == ESRCH;
		if (dead && __atomic_compare_exchange_n(&h->drain_lock, &holder, me, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			stolen = true;
			break;
		}
		if (!wait)
			return 0;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	int64_t rc = 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	__atomic_store_n(&h->drainer_pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
	if (__atomic_load_n(&h->stopped, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&h->ring_mode, __ATOMIC_ACQUIRE) != AP_RING_ON)
		goto out;
	if (stolen && ftruncate(tfd, (off_t)h->drained_size) < 0) {
		rc = -1;
		goto stop;
	}
	/* head first: the length the sampler stored before it is the one
	 * its bytes are at */
	uint64_t head = __atomic_load_n(&h->ring_head, __ATOMIC_ACQUIRE),
		 size = __atomic_load_n(&h->ring_size, __ATOMIC_ACQUIRE), tail = h->ring_tail;
	if (head != tail && head - tail <= size) {
		struct stat st;
		if (fstat(tfd, &st) < 0) {
			rc = -1;
			goto stop;
		}
		uint64_t at = tail % size, n = head - tail, first = size - at < n ? size - at : n;
		if (write_all(tfd, ring + at, first) < 0 || write_all(tfd, ring, n - first) < 0) {
			int e = errno;
			(void)!ftruncate(tfd, st.st_size);
			errno = e;
			rc = -1;
			goto stop;
		}
		h->drained_size = (uint64_t)st.st_size + n;
		__atomic_store_n(&h->ring_tail, head, __ATOMIC_RELEASE);
		rc = (int64_t)n;
	}
	goto out;
stop:
	__atomic_store_n(&h->stop_errno, (uint32_t)(errno ? errno : EIO), __ATOMIC_RELEASE);
	__atomic_store_n(&h->stopped, 1, __ATOMIC_RELEASE);
out:
	__atomic_store_n(&h->drained_ns,
			 (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, __ATOMIC_RELEASE);
	if (done)
		__atomic_store_n(&h->ring_mode, 0, __ATOMIC_RELEASE);
	int e = errno;
	__atomic_store_n(&h->drain_lock, 0, __ATOMIC_RELEASE);
	ring_wake(h);
	errno = e;
	return rc;
}

int ap_ring_drain_open(struct ap_ring_drain *d, const char *path, uint64_t run_id,
		       struct ap_error *err)
{
	d->tfd = d->sfd = -1;
	d->map = NULL;
	d->maplen = 0;
	struct ap_buf side = AP_BUF_INIT;
	ap_buf_addf(&side, "%s%s", path, AP_BUFFERS_SUFFIX);
	int rc = 0, sfd = open(side.buf, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat ss;
	struct ap_buffers_head head;
	if (sfd < 0 || fstat(sfd, &ss) < 0 || !S_ISREG(ss.st_mode) ||
	    ss.st_size < (off_t)AP_BUFFERS_PAGE ||
	    pread(sfd, &head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head.magic, AP_BUFFERS_MAGIC, sizeof(head.magic)) ||
	    head.version != AP_BUFFERS_VERSION || head.ring_mode != AP_RING_ON ||
	    (run_id && head.run_id != run_id) ||
	    !ring_fits(&head, (size_t)ss.st_size) || head.ring_max < head.ring_size ||
	    head.ring_off + AP_SLOT_HDR + head.ring_max > (uint64_t)ss.st_size)
		goto out; /* none, or not one in use (yet) */
	d->maplen = (size_t)(head.ring_off + AP_SLOT_HDR + head.ring_max);
	void *m = mmap(NULL, d->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (m == MAP_FAILED) {
		rc = ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	d->map = m;
	d->tfd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat ts;
	if (d->tfd < 0 || fstat(d->tfd, &ts) < 0) {
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
		ap_ring_drain_close(d);
		goto out;
	}
	/* the sampler's own files, each of one name, this user's: never
	 * another file linked in under the trace's name (a link planted
	 * beside a planted buffers file would have record append to it), nor
	 * another user's buffers file mapped (truncated, it would kill record
	 * with SIGBUS). A process of the run that made its files as another
	 * user writes its trace itself once its ring is full. */
	if (!S_ISREG(ts.st_mode) || ts.st_nlink != 1 || ss.st_nlink != 1 ||
	    ts.st_uid != ss.st_uid || ss.st_uid != geteuid()) {
		ap_ring_drain_close(d);
		goto out;
	}
	rc = 1;
	d->sfd = sfd;
	sfd = -1;
out:
	if (sfd >= 0)
		close(sfd);
	ap_buf_release(&side);
	return rc;
}

/* The ring's room doubled (up to its slot), written with zeros before the
 * sampler may use it: a full disk refuses it here, never in the program. */
static void ring_grow(struct ap_ring_drain *d, struct ap_buffers_head *h)
{
	uint64_t room = __atomic_load_n(&h->ring_room, __ATOMIC_ACQUIRE), max = h->ring_max;
	if (d->sfd < 0 || room >= max)
		return;
	uint64_t more = room < max - room ? room : max - room;
	static const uint8_t zeros[64 << 10];
	uint64_t at = h->ring_off + AP_SLOT_HDR + room;
	for (uint64_t done = 0; done < more;) {
		size_t n = more - done < sizeof(zeros) ? (size_t)(more - done) : sizeof(zeros);
		if (pwrite(d->sfd, zeros, n, (off_t)(at + done)) != (ssize_t)n)
			return; /* (no room: the ring stays as it is) */
		done += n;
	}
	__atomic_store_n(&h->ring_room, room + more, __ATOMIC_RELEASE);
}

int ap_ring_drain(struct ap_ring_drain *d, uint64_t *bytes)
{
	*bytes = 0;
	struct ap_buffers_head *h = (struct ap_buffers_head *)d->map;
	if (!h)
		return 1;
	const uint8_t *ring = d->map + h->ring_off + AP_SLOT_HDR;
	int64_t n = ring_take(h, ring, d->tfd, false, false);
	if (n < 0)
		return -1;
	if (n > 0)
		ring_grow(d, h); /* (a ring that brings chunks) */
	*bytes = (uint64_t)n;
	return __atomic_load_n(&h->ring_mode, __ATOMIC_ACQUIRE) != AP_RING_ON ||
	       __atomic_load_n(&h->stopped, __ATOMIC_ACQUIRE);
}

bool ap_ring_drain_writer_gone(const struct ap_ring_drain *d)
{
	struct flock lk = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = AP_LOCK_WRITER_LEN };
	return d->tfd >= 0 && fcntl(d->tfd, F_OFD_GETLK, &lk) == 0 && lk.l_type == F_UNLCK;
}

int ap_ring_drain_sleep(struct ap_ring_drain *d, unsigned ms)
{
	struct ap_buffers_head *h = (struct ap_buffers_head *)d->map;
	if (!h)
		return -1;
	uint32_t bell = __atomic_load_n(&h->doorbell, __ATOMIC_ACQUIRE);
	__atomic_store_n(&h->drain_asleep, 1, __ATOMIC_RELEASE);
	/* (chunks put meanwhile: no sleep) */
	if (__atomic_load_n(&h->ring_head, __ATOMIC_ACQUIRE) == h->ring_tail) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
		syscall(SYS_futex, &h->doorbell, FUTEX_WAIT, bell, &ts, NULL, 0);
	}
	__atomic_store_n(&h->drain_asleep, 0, __ATOMIC_RELEASE);
	return 0;
}

void ap_ring_drain_wake(struct ap_ring_drain *d)
{
	struct ap_buffers_head *h = (struct ap_buffers_head *)d->map;
	if (!h)
		return;
	__atomic_add_fetch(&h->doorbell, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &h->doorbell, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

void ap_ring_drain_close(struct ap_ring_drain *d)
{
	if (d->map)
		munmap(d->map, d->maplen);
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->sfd >= 0)
		close(d->sfd);
	d->map = NULL;
	d->tfd = d->sfd = -1;
}

int ap_trace_finish_buffers(const char *path, const struct ap_death *how,
			    struct ap_finished *out, struct ap_error *err)
{
	memset(out, 0, sizeof(*out));
	struct ap_buf side = AP_BUF_INIT;
	ap_buf_addf(&side, "%s%s", path, AP_BUFFERS_SUFFIX);
	int rc = 0, sfd = open(side.buf, O_RDWR | O_CLOEXEC | O_NOFOLLOW), tfd = -1;
	uint8_t *sm = MAP_FAILED, *tm = MAP_FAILED;
	struct stat ss, ts;
	struct seen s;
	memset(&s, 0, sizeof(s));
	if (sfd < 0) {
		if (errno != ENOENT)
			rc = ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	if (fstat(sfd, &ss) < 0 || !S_ISREG(ss.st_mode) || ss.st_size < (off_t)AP_BUFFERS_PAGE)
		goto out; /* not a buffers file: not ours to remove */
	/* one finisher at a time (two that both appended its chunks made the
	 * trace unreadable): the other one skips it; the lock goes with the
	 * file, removed once the trace has them */
	if (flock(sfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			out->busy = true;
		else
			rc = ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	/* a finisher that held it before has removed it meanwhile: done */
	struct stat now;
	if (stat(side.buf, &now) < 0 || now.st_ino != ss.st_ino || now.st_dev != ss.st_dev) {
		out->busy = true;
		goto out;
	}
	sm = mmap(NULL, (size_t)ss.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (sm == MAP_FAILED) {
		rc = ap_error_set(err, "%s: %s", side.buf, strerror(errno));
		goto out;
	}
	struct ap_buffers_head *head = (void *)sm;
	if (memcmp(head->magic, AP_BUFFERS_MAGIC, sizeof(head->magic)) ||
	    head->version != AP_BUFFERS_VERSION)
		goto out;
	out->found = true;
	/* the chunks the ring holds go first (the sampler put them before
	 * anything its slots hold): the drain thread's turn waited for */
	if (head->ring_mode == AP_RING_ON && ring_fits(head, (size_t)ss.st_size)) {
		int rfd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
		if (rfd < 0) {
			rc = ap_error_set(err, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (ring_take(head, sm + head->ring_off + AP_SLOT_HDR, rfd, true, true) < 0)
			out->ring_errno = errno;
		close(rfd);
	}
	/* a chunk was lost: no chunk may follow it, but an END that says why
	 * (not in files of before stop_errno) */
	bool stopped = head->stopped;
	if (stopped && !head->stop_errno)
		goto done;
	tfd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (tfd < 0 || fstat(tfd, &ts) < 0) {
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (ts.st_size > 0 && !stopped && !slots_hold_records(sm, (size_t)ss.st_size) &&
	    ends_with_end(tfd, (size_t)ts.st_size))
		goto done; /* ended as it should, nothing left over */
	if (ts.st_size > 0) {
		tm = mmap(NULL, (size_t)ts.st_size, PROT_READ, MAP_SHARED, tfd, 0);
		if (tm == MAP_FAILED) {
			rc = ap_error_set(err, "%s: %s", path, strerror(errno));
			goto out;
		}
	}
	if (walk_trace(&s, tm == MAP_FAILED ? NULL : tm, (size_t)ts.st_size) < 0 || !s.header)
		goto done; /* corrupt, or cut before its HEADER: left as it is */
	if (stopped) {
		/* an END of its own (what came after it was lost) stays the end */
		if (!s.end_off && !s.cut) {
			if (put_stopped_end(tfd, &s, (size_t)ts.st_size, how, head->stop_errno,
					    &out->end_added) < 0)
				rc = ap_error_set(err, "%s: %s", path, strerror(errno));
			out->reason = AP_END_STOPPED;
			out->stop_errno = head->stop_errno;
		}
		goto done;
	}

	/* The chunks the buffers hold that the trace lacks: each slot's
	 * records, as the next chunk of its stream (a new stream for a
	 * buffer that never wrote one). A slot whose chunk is in the file
	 * already (its process died between writing it and emptying the
	 * buffer) or whose stream lost one is left out. */
	struct {
		const struct ap_slot *sl;
		uint32_t stream;
	} *add = NULL;
	size_t nadd = 0, add_alloc = 0;
	uint32_t next_stream = s.max_stream;
	for (size_t off = AP_BUFFERS_PAGE; off + AP_SLOT_HDR <= (size_t)ss.st_size;) {
		const struct ap_slot *sl = (const void *)(sm + off);
		if (sl->magic != AP_SLOT_MAGIC || sl->size < AP_BUFFERS_PAGE ||
		    sl->size % AP_BUFFERS_PAGE || sl->size > (size_t)ss.st_size - off)
			break;
		off += sl->size;
		uint64_t len = sl->len;
		if (len <= AP_CHUNK_HDR_LEN || len > sl->size - AP_SLOT_HDR ||
		    len - AP_CHUNK_HDR_LEN > AP_CHUNK_MAX_PAYLOAD ||
		    (sl->type != AP_CHUNK_META && sl->type != AP_CHUNK_EVENTS) ||
		    (sl->flags & ~(sl->type == AP_CHUNK_EVENTS ? AP_CHUNK_F_GAPS : 0)))
			continue;
		uint32_t stream = sl->type == AP_CHUNK_META ? AP_STREAM_META : sl->stream;
		char why[160];
		if (sl->type == AP_CHUNK_EVENTS && !stream) {
			if (sl->index)
				continue;
			stream = ++next_stream;
		}
		if (ap_streams_check(&s.walk.streams, sl->type, stream, sl->index, why,
				     sizeof(why)) < 0)
			continue;
		AP_ALLOC_GROW(add, nadd + 1, add_alloc);
		add[nadd].sl = sl;
		add[nadd++].stream = stream;
	}
	/* an END that is the last chunk stays the end */
	bool need_end = !(s.end_off && !s.data_after_end && !nadd && !s.cut);
	if (!need_end) {
		free(add);
		goto done;
	}
	/* an incomplete last chunk was being written at the death: its
	 * records are still in its buffer */
	if (s.cut && ftruncate(tfd, (off_t)s.cut_at) < 0) {
		free(add);
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	uint64_t chunks = s.walk.data_chunks;
	for (size_t i = 0; i < nadd && rc == 0; i++) {
		const struct ap_slot *sl = add[i].sl;
		const uint8_t *payload = (const uint8_t *)sl + AP_SLOT_HDR + AP_CHUNK_HDR_LEN;
		if (put_chunk(tfd, sl->type, sl->flags, sl->tid, add[i].stream, sl->index, payload,
			      (size_t)(sl->len - AP_CHUNK_HDR_LEN)) < 0)
			rc = ap_error_set(err, "%s: %s", path, strerror(errno));
		chunks++;
		out->chunks++;
	}
	free(add);
	if (rc == 0 && put_end(tfd, &s, tm, head, how, chunks, &out->reason) < 0)
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
	out->end_added = rc == 0;
done:
	if (rc == 0)
		unlink(side.buf);
out:
	ap_chunk_walk_release(&s.walk);
	if (tm != MAP_FAILED)
		munmap(tm, (size_t)ts.st_size);
	if (sm != MAP_FAILED)
		munmap(sm, (size_t)ss.st_size);
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	ap_buf_release(&side);
	return rc;
}

void ap_death_gone(const char *path, struct ap_death *how)
{
	struct stat st;
	struct ap_buf side = AP_BUF_INIT;
	ap_buf_addf(&side, "%s%s", path, AP_BUFFERS_SUFFIX);
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	int64_t last = 0, now = (int64_t)rt.tv_sec * 1000000000ll + rt.tv_nsec;
	if (stat(path, &st) == 0)
		last = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	if (stat(side.buf, &st) == 0 &&
	    (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec > last)
		last = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	ap_buf_release(&side);
	uint64_t m = (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec;
	uint64_t ago = last && now > last ? (uint64_t)(now - last) : 0;
	memset(how, 0, sizeof(*how));
	how->reason = AP_END_GONE;
	how->end_ns = m - (ago < m ? ago : 0);
}

#define FINISH_WAIT_MS 10000

/* Whether process `pid` may be the one whose buffers file (inode `ino`)
 * it is: a process of that pid runs here, and it has the file mapped
 * (the sampler maps it for the process's life), or its mappings cannot
 * be read (another user's). The pid is the process's in its own pid
 * namespace: outside one (unshare -p), pid 1 or 2 is init or kthreadd,
 * running for ever, and the trace of a process killed there was never
 * finished. (The inode alone: an overlay's device in the maps is its
 * upper layer's.) */
static bool buffers_writer_runs(pid_t pid, ino_t ino)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;
	char line[4096];
	bool mapped = false;
	while (!mapped && fgets(line, sizeof(line), f)) {
		unsigned long long i;
		if (sscanf(line, "%*s %*s %*s %*s %llu", &i) == 1 && i == (unsigned long long)ino)
			mapped = true;
		/* (the rest of a line longer than the buffer) */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	bool unreadable = ferror(f);
	fclose(f);
	return mapped || unreadable;
}

int ap_trace_finish_left(const char *path, struct ap_finished *out, struct ap_error *err)
{
	memset(out, 0, sizeof(*out));
	struct ap_buf side = AP_BUF_INIT;
	ap_buf_addf(&side, "%s%s", path, AP_BUFFERS_SUFFIX);
	struct ap_buffers_head h;
	int sfd = open(side.buf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	ap_buf_release(&side);
	if (sfd < 0)
		return 0;
	struct stat st;
	bool left = fstat(sfd, &st) == 0 && S_ISREG(st.st_mode) &&
		    pread(sfd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
		    !memcmp(h.magic, AP_BUFFERS_MAGIC, sizeof(h.magic)) && h.pid &&
		    !buffers_writer_runs((pid_t)h.pid, st.st_ino);
	int tfd = left ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) : -1;
	if (tfd < 0) {
		close(sfd);
		return 0;
	}
	struct flock lk = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = AP_LOCK_WRITER_LEN };
	left = fcntl(tfd, F_OFD_GETLK, &lk) == 0 && lk.l_type == F_UNLCK;
	close(tfd);
	int rc = 0;
	struct ap_death how;
	if (left) {
		ap_death_gone(path, &how);
		rc = ap_trace_finish_buffers(path, &how, out, err);
	}
	/* Another process finishing it (a report run at the same time): its
	 * end waited for (its lock let go), and the trace then finished here
	 * if it is not yet (the file is gone if it is). Read meanwhile, it
	 * was read as truncated, without what the buffers held. A finisher
	 * that does not end within FINISH_WAIT_MS: read as it is. */
	for (int ms = 0; left && rc == 0 && out->busy && ms < FINISH_WAIT_MS; ms += 10) {
		if (flock(sfd, LOCK_SH | LOCK_NB) == 0) {
			flock(sfd, LOCK_UN);
			rc = ap_trace_finish_buffers(path, &how, out, err);
			continue;
		}
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	close(sfd);
	return rc;
}
