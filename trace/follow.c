/* Following a trace still being written (ap_trace_follow.h): the file
 * stage's first pass kept open and walked on as the file grows, the
 * source of its events extended, and one merge (order.c, following) that
 * goes on from where it stopped, up to the limit the buffers file allows. */
#include "ap_trace_buffers.h"
#include "ap_trace_follow.h"
#include "file.h"
#include "order.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How far before now the limit stays when every buffer is empty: a thread
 * may have taken its event's time and not yet stored the record (the
 * sampler reads the clock, then appends), and its quantum may lag the
 * clock by up to a coarse step (1 ms). */
#define NOW_MARGIN_NS 200000000ull

struct ap_follow {
	char *path, *buffers;
	struct ap_error err;	/* r.err points here */
	struct rd r;		/* pass 1, kept going */
	void *map;		/* the file mapped, r.size bytes (NULL: none) */
	struct ap_trace *t;
	struct file_src *src;	/* t->src */
	struct file_it *it;	/* the merge that goes on (order.c, following) */
	uint64_t limit;
	bool ended, has_buffers;
	bool gone;		/* ended without END: nothing writes it any more */
	pid_t writer_pid;	/* the buffers file's process (0: none read) */
	size_t nmaps;
	struct ap_mapping *maps; /* t->maps when last looked at */
	uint64_t maps_changed;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The file as it is now, mapped (the old mapping let go): r's data. */
static int remap(struct ap_follow *f)
{
	struct stat st;
	if (fstat(f->r.fd, &st) < 0)
		return ap_error_set(&f->err, "%s: %s", f->path, strerror(errno));
	size_t size = (size_t)st.st_size;
	if (f->map && size <= f->r.size)
		return 0;
	void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, f->r.fd, 0) : NULL;
	if (map == MAP_FAILED)
		return ap_error_set(&f->err, "%s: %s", f->path, strerror(errno));
	if (f->map)
		munmap(f->map, f->r.size);
	f->map = map;
	f->r.map = map;
	f->r.data = map;
	f->r.size = size;
	f->r.walk.data = map;
	f->r.walk.size = size;
	f->r.dropped = f->r.walk.off; /* (the new mapping has nothing to let go before) */
	f->r.t->file_size = size;
	return 0;
}

/* The stacks' PCs are pointers into one pool once pass 1 is done
 * (file.c); while it walks, offsets into r.pcs, which may move. */
static void stacks_to_offsets(struct ap_follow *f)
{
	struct ap_trace *t = f->t;
	f->r.pcs = t->stacks[0].pcs;
	for (size_t i = 1; i < t->nstacks; i++)
		t->stacks[i].pcs = (uint64_t *)(uintptr_t)(t->stacks[i].pcs - f->r.pcs);
}

static void stacks_to_pointers(struct ap_follow *f)
{
	struct ap_trace *t = f->t;
	if (!f->r.pcs) {
		f->r.pcs = ap_xmalloc(sizeof(*f->r.pcs));
		f->r.pcs_alloc = 1;
	}
	for (size_t i = 1; i < t->nstacks; i++)
		t->stacks[i].pcs = f->r.pcs + (uintptr_t)t->stacks[i].pcs;
	t->stacks[0].pcs = f->r.pcs;
	f->r.pcs = NULL;
}

/* Pass 1 over what the file gained, and the source told of it. */
static int walk_more(struct ap_follow *f)
{
	struct ap_trace *t = f->t;
	if (remap(f) < 0)
		return -1;
	stacks_to_offsets(f);
	enum ap_chunk_result res;
	int rc = rd_walk(&f->r, &res);
	if (!rc) {
		t->truncated = false;
		t->truncated_why[0] = 0;
		rc = rd_walk_end(&f->r, res);
	}
	stacks_to_pointers(f);
	if (rc < 0)
		return -1;
	if (t->maps != f->maps || t->nmaps != f->nmaps) {
		ap_trace_index_maps(t);
		f->maps = t->maps;
		f->nmaps = t->nmaps;
		f->maps_changed++;
	}
	if (!t->has_end)
		t->end_ns = f->r.any_event ? f->r.last_ts : t->start_ns;
	f->src->chunks = f->r.chunks;
	f->src->nchunks = f->r.nchunks;
	source_index(f->src, &f->r);
	return 0;
}

/* n bytes at ring position pos (wrapped) of the ring at file offset
 * `data` (size bytes); false if they cannot be read. */
static bool ring_read(int fd, uint64_t data, uint64_t size, uint64_t pos, void *buf, size_t n)
{
	uint64_t at = pos % size, first = size - at < n ? size - at : n;
	return pread(fd, buf, first, (off_t)(data + at)) == (ssize_t)first &&
	       pread(fd, (uint8_t *)buf + first, n - first, (off_t)data) == (ssize_t)(n - first);
}

/* The earliest time of the EVENTS chunks the ring holds and the trace
 * has not got yet (their SYNC records), against `earliest`; 0 (from the
 * start) when the ring changes under us. */
static uint64_t ring_earliest(const struct ap_follow *f, int fd, const struct ap_buffers_head *h,
			      uint64_t earliest)
{
	struct stat st;
	if (h->ring_mode != AP_RING_ON || !h->ring_size || fstat(fd, &st) < 0 ||
	    h->ring_off % AP_BUFFERS_PAGE || h->ring_off + AP_SLOT_HDR + h->ring_size > (uint64_t)st.st_size)
		return earliest;
	uint64_t data = h->ring_off + AP_SLOT_HDR, size = h->ring_size;
	if (h->ring_head - h->ring_tail > size)
		return 0;
	for (uint64_t pos = h->ring_tail; pos < h->ring_head;) {
		uint8_t rec[AP_CHUNK_HDR_LEN + 1 + AP_VARINT_MAX];
		uint64_t left = h->ring_head - pos;
		size_t n = left < sizeof(rec) ? (size_t)left : sizeof(rec);
		if (n < AP_CHUNK_HDR_LEN || !ring_read(fd, data, size, pos, rec, n) ||
		    ap_get_u32le(rec) != AP_CHUNK_MAGIC)
			return 0;
		uint64_t len = AP_CHUNK_HDR_LEN + (uint64_t)ap_get_u32le(rec + 12);
		if (rec[4] == AP_CHUNK_EVENTS) {
			const uint8_t *p = rec + AP_CHUNK_HDR_LEN + 1, *end = rec + n;
			uint64_t q;
			if (n <= AP_CHUNK_HDR_LEN || rec[AP_CHUNK_HDR_LEN] != AP_EV_SYNC ||
			    ap_get_uv(&p, end, &q) < 0)
				return 0;
			if (q < UINT64_MAX / f->t->time_quantum_ns &&
			    q * f->t->time_quantum_ns < earliest)
				earliest = q * f->t->time_quantum_ns;
		}
		if (len > left)
			return 0;
		pos += len;
	}
	return earliest;
}

/* The earliest time a thread's buffer holds in the buffers file: the
 * quantum of the SYNC record the sampler opens every buffer with. *have:
 * whether there is a buffers file; *pid: the process it is of (0: not
 * read). UINT64_MAX when every buffer is empty. */
static uint64_t buffers_earliest(const struct ap_follow *f, bool *have, pid_t *pid)
{
	*have = false;
	*pid = 0;
	int fd = open(f->buffers, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	struct ap_buffers_head h;
	uint64_t earliest = UINT64_MAX;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, AP_BUFFERS_MAGIC, sizeof(h.magic)) || h.version != AP_BUFFERS_VERSION)
		goto out;
	*have = true;
	*pid = (pid_t)h.pid;
	for (off_t off = AP_BUFFERS_PAGE;;) {
		struct ap_slot s;
		uint8_t rec[AP_CHUNK_HDR_LEN + 1 + AP_VARINT_MAX];
		if (pread(fd, &s, sizeof(s), off) != (ssize_t)sizeof(s) || s.magic != AP_SLOT_MAGIC ||
		    s.size < AP_SLOT_HDR || s.size % AP_BUFFERS_PAGE)
			break;
		if (s.type == AP_CHUNK_EVENTS && s.len > AP_CHUNK_HDR_LEN) {
			ssize_t n = pread(fd, rec, sizeof(rec), off + AP_SLOT_HDR);
			const uint8_t *p = rec + AP_CHUNK_HDR_LEN + 1, *end = rec + (n > 0 ? n : 0);
			uint64_t q;
			/* a buffer changing under us reads as anything: a
			 * record that is no SYNC says "from the start" */
			if (n <= (ssize_t)AP_CHUNK_HDR_LEN || rec[AP_CHUNK_HDR_LEN] != AP_EV_SYNC ||
			    ap_get_uv(&p, end, &q) < 0)
				earliest = 0;
			else if (q < UINT64_MAX / f->t->time_quantum_ns &&
				 q * f->t->time_quantum_ns < earliest)
				earliest = q * f->t->time_quantum_ns;
		}
		off += s.size;
	}
	earliest = ring_earliest(f, fd, &h, earliest);
out:
	close(fd);
	return earliest;
}

/* Whether someone holds a lock on len bytes of the trace from `at`: the
 * sampler's writer's lock (0 to 2^62) or record's run's lock (byte 2^62)
 * (docs/trace-format.md, "Live traces"). */
static bool lock_held(const struct ap_follow *f, off_t at, off_t len)
{
	struct flock lk = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = len };
	return fcntl(f->r.fd, F_OFD_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
}

static bool writer_holds(const struct ap_follow *f)
{
	return lock_held(f, 0, (off_t)AP_LOCK_WRITER_LEN);
}

/* Whether a trace without END has nobody left to write or finish it: no
 * writer's lock, no run's lock (record gone too: killed, or a program
 * run under the sampler without it), and the process of its buffers
 * file, if any, gone (a process that closed every descriptor drops its
 * lock but may open its trace again). */
static bool writers_gone(const struct ap_follow *f)
{
	if (writer_holds(f) || lock_held(f, (off_t)AP_LOCK_RUN_AT, 1))
		return false;
	return !f->writer_pid || (kill(f->writer_pid, 0) < 0 && errno == ESRCH);
}

int ap_follow_update(struct ap_follow *f, struct ap_error *err)
{
	if (f->ended)
		return 1;
	/* Before the file: a chunk a buffer was written to after this is in
	 * the file by the time it is read, or still in the buffer. */
	uint64_t now = mono_ns();
	uint64_t earliest = buffers_earliest(f, &f->has_buffers, &f->writer_pid);
	/* (and if nothing writes it any more, the END read below is the last
	 * word) */
	bool done = !f->has_buffers && !writer_holds(f);
	bool gone = writers_gone(f);
	if (walk_more(f) < 0) {
		*err = f->err;
		return -1;
	}
	struct ap_trace *t = f->t;
	uint64_t limit = f->limit;
	if ((done && t->has_end) || (gone && !t->has_end)) {
		/* (gone: the file is all there will be; what the buffers
		 * file still holds, ap_follow_gone says) */
		limit = UINT64_MAX;
		f->ended = true;
		f->gone = !t->has_end;
	} else if (f->has_buffers) {
		uint64_t bound = now > NOW_MARGIN_NS ? now - NOW_MARGIN_NS : 0;
		if (earliest < bound)
			bound = earliest;
		bound -= bound % t->time_quantum_ns;
		if (bound > limit)
			limit = bound;
	}
	f->limit = limit;
	ap_order_grow(f->it->o, t->nthreads, t->nstacks);
	for (size_t i = 0; i < t->nthreads; i++)
		ap_order_add(f->it->o, i, f->src->order + f->src->start[i],
			     f->src->start[i + 1] - f->src->start[i]);
	ap_order_limit(f->it->o, limit);
	return f->ended;
}

int ap_follow_open(const char *path, struct ap_follow **out, struct ap_error *err)
{
	/* O_NONBLOCK: a FIFO nobody writes to would block the open for ever
	 * (and is refused); a regular file reads the same with it */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return ap_error_set(err, "%s: %s", path, strerror(errno));
	struct stat st = { .st_mode = S_IFREG }; /* (fstat failing: its errno said) */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = errno;
		close(fd);
		return ap_error_set(err, "%s: %s", path,
				    S_ISREG(st.st_mode) ? strerror(e) : "not a regular file");
	}
	struct ap_follow *f = ap_xcalloc(1, sizeof(*f));
	f->path = ap_xstrdup(path);
	size_t n = strlen(path);
	f->buffers = ap_xmalloc(n + sizeof(AP_BUFFERS_SUFFIX));
	memcpy(f->buffers, path, n);
	memcpy(f->buffers + n, AP_BUFFERS_SUFFIX, sizeof(AP_BUFFERS_SUFFIX));
	f->r = (struct rd){ .fd = fd, .name = f->path, .err = &f->err };
	f->t = f->r.t = ap_xmalloc(sizeof(*f->t));
	trace_init(f->t);
	/* the first pass, as ap_trace_read's */
	int rc = remap(f);
	if (!rc)
		rc = read_preamble(&f->r);
	enum ap_chunk_result res;
	if (!rc) {
		ap_chunk_walk_init(&f->r.walk, f->r.data, f->r.size);
		/* never resolved (its replay keeps every block, as for a
		 * trace with raw chunks): the resolved replay sizes its
		 * tables by the stacks at its start, and following adds
		 * stacks */
		f->r.t->resolved = false;
		rc = rd_walk(&f->r, &res);
	}
	if (!rc)
		rc = rd_walk_end(&f->r, res);
	if (rc < 0) {
		*err = f->err;
		ap_follow_close(f);
		return -1;
	}
	stacks_to_pointers(f);
	ap_trace_index_maps(f->t);
	f->maps = f->t->maps;
	f->nmaps = f->t->nmaps;
	if (!f->t->has_end)
		f->t->end_ns = f->r.any_event ? f->r.last_ts : f->t->start_ns;
	/* the source shares the chunks pass 1 goes on adding to */
	make_source(&f->r);
	f->src = (struct file_src *)f->t->src;
	f->r.chunks = f->src->chunks;
	f->it = file_open(&f->src->base);
	ap_order_follow(f->it->o);
	if (ap_follow_update(f, err) < 0) {
		ap_follow_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

struct ap_trace *ap_follow_trace(struct ap_follow *f)
{
	return f->t;
}

ssize_t ap_follow_next(struct ap_follow *f, const struct ap_event **out, struct ap_error *err)
{
	return file_next(f->it, out, err);
}

uint64_t ap_follow_limit(const struct ap_follow *f)
{
	return f->limit;
}

bool ap_follow_gone(const struct ap_follow *f)
{
	return f->gone;
}

bool ap_follow_has_buffers(const struct ap_follow *f)
{
	return f->has_buffers;
}

uint64_t ap_follow_maps_changed(const struct ap_follow *f)
{
	return f->maps_changed;
}

void ap_follow_close(struct ap_follow *f)
{
	if (!f)
		return;
	if (f->it)
		file_close(f->it);
	if (f->map)
		munmap(f->map, f->r.size);
	if (f->src)
		f->r.chunks = NULL; /* the source's */
	else
		close(f->r.fd);
	rd_release(&f->r);
	ap_trace_free(f->t);
	free(f->path);
	free(f->buffers);
	free(f);
}
