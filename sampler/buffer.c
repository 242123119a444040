/* buffer.c: the thread buffers and the META buffer. Each thread that
 * records gets a 64 KiB buffer (its own stream of EVENTS chunks); emit
 * (emit_at, inline in emit.h) appends one record, with the TIME or SYNC record the clock asks for;
 * buffers are written as chunks when full, when old, at thread exit and
 * in flush_all, the META chunk always first. The owner/flusher protocol
 * that lets the owner append without an atomic instruction is described
 * above asym (own_enter: emit.h). Under `allocprof record` every buffer is a slot of the
 * buffers file (trace/ap_trace_buffers.h), mapped shared: what a process
 * recorded and had not written when it died is there for record. */
#include "emit.h"

#include <sys/statfs.h>

double tsc_per_ns;	/* 0: read the clock on every event */
double ns_per_tsc;	/* its inverse (0 with it), for the gaps */

uint64_t thr_seq;
struct ap_threads threads;
struct ap_meta meta;

/* A thread's buffer is written by its owner on every event, and by
 * another thread only in flush_all (exit, _exit, exec, fatal signals).
 * The owner announces itself with a plain store (busy) and a compiler
 * barrier; a flusher from outside takes the lock, raises claim and calls
 * membarrier(PRIVATE_EXPEDITED), which makes every running thread of the
 * process pass a full barrier: after it, either the flusher sees the owner
 * busy (and waits for it), or the owner sees the claim (and waits on the
 * lock the flusher holds). Without membarrier (old kernels, seccomp) every
 * access takes the lock: an xchg per event, ~7 % of the time of recording
 * every allocation of the 64-byte loop. */
int asym;		/* membarrier is registered */

void asym_register(void)
{
	asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* Another thread enters b (bounded waits in a signal handler, where the
 * interrupted code may be the owner). Returns 0 if it gave up. */
static int remote_enter(struct ap_thr *b, int sig)
{
	if (sig ? !lk_trylock_bounded(&b->lock) : (lk_lock(&b->lock), 0))
		return 0;
	if (!asym)
		return 1;
	__atomic_store_n(&b->claim, 1, __ATOMIC_RELAXED);
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST); /* cannot fail once registered */
	uint64_t since = 0;
	for (int i = 0; __atomic_load_n(&b->busy, __ATOMIC_ACQUIRE); i++) {
		if (sig && bounded_give_up(i, &since)) {
			__atomic_store_n(&b->claim, 0, __ATOMIC_RELEASE);
			lk_unlock(&b->lock);
			return 0;
		}
		sched_yield();
	}
	return 1;
}

static void remote_leave(struct ap_thr *b)
{
	__atomic_store_n(&b->claim, 0, __ATOMIC_RELEASE);
	lk_unlock(&b->lock);
}

/* TSC ticks per ns, over 200 us of CLOCK_MONOTONIC at start. A TSC that
 * does not advance steadily only makes TIME records come late, never
 * wrong: the deadline is a hint, the time is the clock's. */
/* A TSC reading and the clock at the same moment: the TSC read between
 * two clock reads that are close (a preemption between a clock read and
 * the TSC read made the rate 2.5 times too high under load, and the gaps
 * of --all traces as much too short). */
static void tsc_pair(uint64_t *t, uint64_t *c)
{
	for (int k = 0; k < 16; k++) {
		uint64_t a = now_ns(CLOCK_MONOTONIC);
		*c = rd_tsc();
		uint64_t b = now_ns(CLOCK_MONOTONIC);
		*t = a + (b - a) / 2;
		if (b - a < 2000)
			return;
	}
}

void tsc_calibrate(void)
{
	uint64_t t0, c0, t1, c1;
	tsc_pair(&t0, &c0);
	while (now_ns(CLOCK_MONOTONIC) - t0 < 200000)
		;
	tsc_pair(&t1, &c1);
	double r = t1 > t0 ? (double)(c1 - c0) / (double)(t1 - t0) : 0;
	tsc_per_ns = r > 0.05 && r < 100 ? r : 0;
	ns_per_tsc = tsc_per_ns > 0 ? 1 / tsc_per_ns : 0;
}

/* ---- the buffers file -------------------------------------------------
 *
 * A process recorded by `allocprof record` keeps its buffers in
 * `<trace>.buffers`, mapped MAP_SHARED: the pages outlive the process,
 * whatever ends it (SIGKILL, an exit_group system call past exit(), a
 * flush a fatal signal gave up on, the frees glibc makes after END), and
 * record, once the process is gone, writes the whole records each buffer
 * holds as the trace's last chunks (trace/buffers.c). A buffer's length
 * is published after each record (slot_publish: one store), and a chunk
 * written to the trace first empties its buffer, then moves the slot's
 * index on: a buffer whose chunk is in the file is either empty or names
 * a chunk the file already has. The bytes of a buffer are written (zeros)
 * before the program's stores can reach them, so that the file system has
 * set their room aside (a full disk never becomes a SIGBUS in the
 * program); fallocate would do that too, but freeing allocated blocks
 * made removing the file cost milliseconds, which written pages not yet
 * on disk do not. A thread's slot is written whole (68 KiB); the META
 * slot (1 MiB, mostly unused) META_STEP at a time as its records grow
 * (meta_reserve). A slot the file cannot give is private memory (not
 * durable, as before). Without record (the separate ALLOCPROF_*
 * variables) every slot is private memory. */
static char bufs_path[PATH_MAX];
static int bufs_on;		/* slots come from the file */
static uint64_t bufs_end;	/* its bytes so far (threads.lock) */
static struct ap_buffers_head *bufs_head;
#define META_STEP (64u << 10)
static uint64_t meta_off;	/* the META slot's offset in the file (0: private) */
static size_t meta_room;	/* META payload bytes set aside (meta.lock) */

static size_t page_up(size_t n)
{
	return (n + AP_BUFFERS_PAGE - 1) & ~(size_t)(AP_BUFFERS_PAGE - 1);
}

/* [off, off + n) of fd written with zeros (from a mapping of the zero
 * page: no memory of ours), unless the program's RLIMIT_FSIZE is in the
 * way of `end`: past it the kernel would send the program SIGXFSZ. */
static int reserve(int fd, uint64_t off, size_t n, uint64_t end)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 ||
	    (rl.rlim_cur != RLIM_INFINITY && end > (uint64_t)rl.rlim_cur))
		return -1;
	void *z = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (z == MAP_FAILED)
		return -1;
	ssize_t w = sys_pwrite(fd, z, n, (off_t)off);
	munmap(z, n);
	return w == (ssize_t)n ? 0 : -1;
}

/* A slot of `size` bytes for a buffer of `type`, at `at` (a slot being
 * replaced: MAP_FIXED) or anywhere; its header filled in. NULL if there
 * is no memory at all. */
static struct ap_slot *slot_map(uint8_t type, size_t size, void *at)
{
	int fixed = at ? MAP_FIXED : 0;
	void *p = MAP_FAILED;
	size_t now = type == AP_CHUNK_META ? META_STEP : size; /* set aside now */
	if (type == AP_CHUNK_META) {
		meta_off = 0;
		meta_room = META_BUF_SIZE;
	}
	if (bufs_on) {
		int fd = sys_open(bufs_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
		if (fd >= 0) {
			if (reserve(fd, bufs_end, now, bufs_end + size) == 0 &&
			    (now == size || ftruncate(fd, (off_t)(bufs_end + size)) == 0)) {
				p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd,
					 (off_t)bufs_end);
				if (p != MAP_FAILED && type == AP_CHUNK_META) {
					meta_off = bufs_end;
					meta_room = now - AP_SLOT_HDR - AP_CHUNK_HDR_LEN;
				}
				if (p != MAP_FAILED)
					bufs_end += size;
			}
			sys_close(fd);
		}
	}
	if (p == MAP_FAILED)
		p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct ap_slot *sl = p;
	sl->type = type;
	/* --all: every record has its gap (settings are read before the
	 * first slot is made) */
	sl->flags = type == AP_CHUNK_EVENTS && settings.gaps ? AP_CHUNK_F_GAPS : 0;
	sl->size = (uint32_t)size;
	sl->len = AP_CHUNK_HDR_LEN;
	__atomic_store_n(&sl->magic, AP_SLOT_MAGIC, __ATOMIC_RELEASE);
	return sl;
}

static void ring_create(void);
static void ring_drop(int keep_private);
static void privatize(void *p, size_t len);

/* The buffers file of tfile.path, made anew (a file of that name is an
 * earlier image's or run's); bufs_on if it could be made. */
static void bufs_create(void)
{
	bufs_on = 0;
	bufs_end = 0;
	bufs_head = NULL;
	live_mirror(NULL);
	size_t n = str_len(tfile.path);
	if (!cfg_from_record() || n + sizeof(AP_BUFFERS_SUFFIX) > sizeof(bufs_path))
		return;
	struct stat st;
	if (stat(tfile.path, &st) == 0 && S_ISCHR(st.st_mode))
		return; /* -o /dev/null: nothing to finish */
	memcpy(bufs_path, tfile.path, n);
	memcpy(bufs_path + n, AP_BUFFERS_SUFFIX, sizeof(AP_BUFFERS_SUFFIX));
	/* an earlier image's or run's buffers go; a file of another kind is
	 * not ours to remove (then O_EXCL fails, and the buffers are private) */
	if (lstat(bufs_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size) {
		char magic[sizeof(bufs_head->magic)] = { 0 };
		int old = sys_open(bufs_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
		if (old >= 0) {
			if (sys_read(old, magic, sizeof(magic)) < 0)
				magic[0] = 0;
			sys_close(old);
		}
		if (!memcmp(magic, AP_BUFFERS_MAGIC, sizeof(magic)))
			unlink(bufs_path);
	} else if (lstat(bufs_path, &st) == 0 && (S_ISLNK(st.st_mode) || S_ISREG(st.st_mode))) {
		unlink(bufs_path); /* empty, or a link: nobody's data */
	}
	int fd = sys_open(bufs_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	void *h = MAP_FAILED;
	if (reserve(fd, 0, AP_BUFFERS_PAGE, AP_BUFFERS_PAGE) == 0)
		h = mmap(NULL, AP_BUFFERS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	sys_close(fd);
	if (h == MAP_FAILED) {
		unlink(bufs_path);
		return;
	}
	bufs_head = h;
	memcpy(bufs_head->magic, AP_BUFFERS_MAGIC, sizeof(bufs_head->magic));
	bufs_head->version = AP_BUFFERS_VERSION;
	bufs_head->pid = (uint32_t)proc.pid;
	uint64_t run_id;
	cfg_run_pid(&run_id, NULL);
	bufs_head->run_id = run_id;
	bufs_end = AP_BUFFERS_PAGE;
	bufs_on = 1;
	live_mirror(bufs_head);
}

/* ---- the ring -------------------------------------------------------
 *
 * The chunks of a process recorded by `allocprof record` go through a
 * ring in its buffers file (ap_trace_buffers.h), which record drains into
 * the trace: the process holds no descriptor of the trace's (a program
 * whose soft and hard RLIMIT_NOFILE are equal would otherwise see it under
 * its limit). Its slot is RING_SLOT_SIZE bytes of the file, of which the
 * first RING_START are written (reserve) before its first use; record
 * writes more as it drains (ap_trace_buffers.h ring_room), which the
 * sampler takes once its ring is empty (tracefile.c ring_put): a process
 * that writes little (a shell loop's /bin/true) pays a tenth of a
 * millisecond for its ring, not the 0.8 ms 2 MiB of zeros take. The rest
 * of the slot is a hole until record writes it, never touched before:
 * a full disk never becomes a SIGBUS in the program. */
#define RING_SLOT_SIZE (2u << 20)
#define RING_START (256u << 10)
#define RING_ROOM (64ull << 20)	/* free space a ring needs beside it */
static struct ap_slot *ring_slot;	/* NULL: no ring */

static void ring_create(void)
{
	int fd = sys_open(bufs_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return;
	/* A file system without room for many rings more (a small tmpfs, a
	 * disk nearly full) keeps its room for the trace: the descriptor
	 * then stays the way chunks are written. */
	struct statfs sf;
	if (fstatfs(fd, &sf) == 0 && sf.f_bsize > 0 &&
	    (uint64_t)sf.f_bavail < (uint64_t)RING_ROOM / (uint64_t)sf.f_bsize) {
		sys_close(fd);
		return;
	}
	void *r = MAP_FAILED;
	if (reserve(fd, bufs_end, RING_START, bufs_end + RING_SLOT_SIZE) == 0 &&
	    ftruncate(fd, (off_t)(bufs_end + RING_SLOT_SIZE)) == 0)
		r = mmap(NULL, RING_SLOT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 (off_t)bufs_end);
	sys_close(fd);
	if (r == MAP_FAILED)
		return;
	ring_slot = r;
	ring_slot->type = AP_SLOT_RING;
	ring_slot->size = RING_SLOT_SIZE;
	ring_slot->len = AP_CHUNK_HDR_LEN; /* no records: the finisher skips it */
	__atomic_store_n(&ring_slot->magic, AP_SLOT_MAGIC, __ATOMIC_RELEASE);
	bufs_head->ring_size = bufs_head->ring_room = RING_START - AP_SLOT_HDR;
	bufs_head->ring_max = RING_SLOT_SIZE - AP_SLOT_HDR;
	__atomic_store_n(&bufs_head->ring_off, bufs_end, __ATOMIC_RELEASE);
	bufs_end += RING_SLOT_SIZE;
}

/* The buffers file's ring made (once the HEADER is in the trace: a
 * disk short of room takes it from the ring, not from the trace). Its
 * header, or NULL; its bytes in *data. */
struct ap_buffers_head *ring_make(uint8_t **data)
{
	if (bufs_on && bufs_head && !ring_slot)
		ring_create();
	return ring_of_buffers(data);
}

/* The buffers file's header if it has a ring, else NULL; its bytes in
 * *data. */
struct ap_buffers_head *ring_of_buffers(uint8_t **data)
{
	if (!bufs_on || !bufs_head || !ring_slot)
		return NULL;
	*data = (uint8_t *)ring_slot + AP_SLOT_HDR;
	return bufs_head;
}

/* The ring no longer this process's to write (a fork's child: its
 * parent's; one made inside the sampler: kept private, as the slots). */
static void ring_drop(int keep_private)
{
	if (!ring_slot)
		return;
	if (keep_private)
		privatize(ring_slot, RING_SLOT_SIZE);
	else
		munmap(ring_slot, RING_SLOT_SIZE);
	ring_slot = NULL;
}

/* Whether the buffers outlive the process (record finishes them). */
int buffers_durable(void)
{
	return bufs_on;
}

/* The trace could not be opened: no buffers file either. */
void buffers_abandon(void)
{
	if (bufs_on)
		unlink(bufs_path);
	bufs_on = 0;
}

void buffers_stop_why(int err)
{
	if (bufs_head && err > 0)
		__atomic_store_n(&bufs_head->stop_errno, (uint32_t)err, __ATOMIC_RELEASE);
}

/* The trace stopped (a write failed): what the buffers hold must not be
 * added after the chunk that was lost. */
void buffers_stop(void)
{
	if (bufs_head)
		__atomic_store_n(&bufs_head->stopped, 1, __ATOMIC_RELEASE);
}

#define THR_SLOT_SIZE page_up(AP_SLOT_HDR + THR_BUF_SIZE)
#define META_SLOT_SIZE page_up(AP_SLOT_HDR + AP_CHUNK_HDR_LEN + META_BUF_SIZE)

/* The bytes a thread buffer and the META buffer hold before they are
 * written as a chunk: the buffers' sizes, unless the program's
 * RLIMIT_FSIZE is small: a trace stops at the first chunk that does not
 * fit under it (tracefile.c), so that chunks of a sixteenth of the limit
 * (at least 2 KiB) fill it with events where one 64 KiB chunk would not
 * fit under a limit of 64 KiB and leave the trace empty. */
size_t thr_flush_at = THR_BUF_SIZE;
static size_t meta_flush_at = META_BUF_SIZE;

static void chunk_sizes_fit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	size_t at = rl.rlim_cur / 16 < 2048 ? 2048 : (size_t)(rl.rlim_cur / 16);
	if (at < thr_flush_at)
		thr_flush_at = at;
	if (at < meta_flush_at)
		meta_flush_at = at;
}

/* The slot's tid, stream and index, from its buffer's. */
static void slot_sync(struct ap_thr *b)
{
	struct ap_slot *sl = slot_of(b->buf);
	sl->tid = b->tid;
	sl->stream = b->stream;
	__atomic_store_n(&sl->index, b->nchunks, __ATOMIC_RELEASE);
}

/* At start (ap_init): the buffers file, the META buffer and the shared
 * fallback buffer. -1 if memory ran out. */
int buffers_init(void)
{
	chunk_sizes_fit();
	bufs_create();
	/* META chunks of a quarter of a ring as it starts at most: two fit
	 * with room */
	if (bufs_on && meta_flush_at > (RING_START >> 2))
		meta_flush_at = RING_START >> 2;
	struct ap_slot *m = slot_map(AP_CHUNK_META, META_SLOT_SIZE, NULL);
	struct ap_slot *f = slot_map(AP_CHUNK_EVENTS, THR_SLOT_SIZE, NULL);
	void *ring = map_mem(RING_SIZE * sizeof(struct ap_ring_ent));
	if (!m || !f || !ring)
		return -1;
	meta.buf = (uint8_t *)m + AP_SLOT_HDR;
	threads.fallback.buf = (uint8_t *)f + AP_SLOT_HDR;
	threads.fallback.ring.ent = ring;
	return 0;
}

/* A forked child: its buffers are still the parent's slots, which it
 * must never write. Each becomes a slot of the child's own buffers file
 * (tfile.path is the child's trace by now) when it records, private
 * memory when not (recording nothing). Contents start over. */
void buffers_detach(void)
{
	if (!meta.buf)
		return;
	live_mirror(NULL); /* the parent's file */
	ring_drop(0);
	if (bufs_head)
		munmap(bufs_head, AP_BUFFERS_PAGE);
	if (__atomic_load_n(&proc.state, __ATOMIC_RELAXED) == AP_ON && !settings.no_children)
		bufs_create();
	else
		bufs_on = 0, bufs_head = NULL;
	slot_map(AP_CHUNK_META, META_SLOT_SIZE, slot_of(meta.buf));
	slot_map(AP_CHUNK_EVENTS, THR_SLOT_SIZE, slot_of(threads.fallback.buf));
	for (struct ap_thr *b = threads.all; b; b = b->next)
		slot_map(AP_CHUNK_EVENTS, THR_SLOT_SIZE, slot_of(b->buf));
}

/* The mapping at p (len bytes) made private, its bytes kept: a copy put
 * in its place in one mremap, so that code using it meanwhile never
 * finds it gone. */
static void privatize(void *p, size_t len)
{
	void *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return;
	memcpy(c, p, len);
	if (mremap(c, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, p) == MAP_FAILED)
		munmap(c, len);
}

void buffers_privatize(void)
{
	if (!meta.buf)
		return;
	bufs_on = 0;
	ring_drop(1);
	if (bufs_head)
		privatize(bufs_head, AP_BUFFERS_PAGE);
	privatize(slot_of(meta.buf), META_SLOT_SIZE);
	privatize(slot_of(threads.fallback.buf), THR_SLOT_SIZE);
	for (struct ap_thr *b = threads.all; b; b = b->next)
		privatize(slot_of(b->buf), THR_SLOT_SIZE);
}

/* Writes out the pending META records; meta.lock held. */
static void meta_flush_locked(void)
{
	if (!meta.len || !trace_writable()) {
		if (!trace_writable())
			buffers_stop();
		return;
	}
	uint8_t *payload = meta.buf + AP_CHUNK_HDR_LEN;
	ap_chunk_header(meta.buf, AP_CHUNK_META, tls.tid, AP_STREAM_META, meta.nchunks++, payload,
			(uint32_t)meta.len);
	trace_write_data(meta.buf, AP_CHUNK_HDR_LEN + meta.len);
	meta.len = 0;
	/* empty first, then the index on (see above) */
	slot_publish(meta.buf, AP_CHUNK_HDR_LEN);
	__atomic_store_n(&slot_of(meta.buf)->index, meta.nchunks, __ATOMIC_RELEASE);
	if (!trace_writable())
		buffers_stop();
}

/* The META slot's room set aside grown to `want` payload bytes, if the
 * file gives it (meta.lock held). */
static void meta_grow(size_t want)
{
	if (!meta_off || !bufs_on)
		return;
	int fd = sys_open(bufs_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return;
	while (meta_room < want && meta_room < META_BUF_SIZE) {
		uint64_t at = meta_off + AP_SLOT_HDR + AP_CHUNK_HDR_LEN + meta_room;
		size_t n = META_BUF_SIZE - meta_room < META_STEP ? META_BUF_SIZE - meta_room
								 : META_STEP;
		if (reserve(fd, at, n, at + n) < 0)
			break;
		meta_room += n;
	}
	sys_close(fd);
}

/* Room for n bytes of META records; meta.lock held. */
uint8_t *meta_reserve(size_t n)
{
	if (meta.len + n > meta_room)
		meta_grow(meta.len + n);
	if (meta.len + n > meta_room || (meta.len && meta.len + n > meta_flush_at))
		meta_flush_locked();
	return meta.buf + AP_CHUNK_HDR_LEN + meta.len;
}

void meta_thread(uint32_t tid)
{
	char path[64] = "/proc/self/task/";
	char name[64];
	size_t n = 16;
	n += put_dec(path + n, tid);
	memcpy(path + n, "/comm", 6);
	ssize_t got = 0;
	int fd = sys_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0) {
		got = sys_read(fd, name, sizeof(name));
		sys_close(fd);
	}
	if (got < 0)
		got = 0;
	while (got > 0 && name[got - 1] == '\n')
		got--;
	lk_lock(&meta.lock);
	uint8_t *p = meta_reserve(AP_META_THREAD_MAX(sizeof(name)));
	meta_commit(ap_put_thread(p, tid, name, (size_t)got));
	lk_unlock(&meta.lock);
}

/* ---- event buffers ----------------------------------------------------- */

/* Writes out a buffer's events (buffer lock held), META first so every id
 * the events use is already in the file. */
void thr_flush_locked(struct ap_thr *b)
{
	if (b->len <= EV_HDR || !trace_writable()) {
		if (!trace_writable())
			buffers_stop();
		b->len = EV_HDR;
		slot_publish(b->buf, EV_HDR);
		return;
	}
	if (tfile.in_signal) {
		/* The crashed code may hold meta.lock: without the META records
		 * these events could name stacks the file lacks, so they stay. */
		if (!lk_trylock_bounded(&meta.lock))
			return;
	} else {
		lk_lock(&meta.lock);
	}
	meta_flush_locked();
	lk_unlock(&meta.lock);
	/* One stream per buffer: its chunks are written in order, under its
	 * lock, whichever thread it serves (docs/trace-format.md, "Streams") */
	if (!b->stream) {
		b->stream = __atomic_add_fetch(&threads.nstreams, 1, __ATOMIC_RELAXED);
		slot_sync(b); /* before the chunk can be in the file */
	}
	ap_chunk_header_flags(b->buf, AP_CHUNK_EVENTS, slot_of(b->buf)->flags, b->tid, b->stream,
			      b->nchunks++, b->buf + AP_CHUNK_HDR_LEN,
			      (uint32_t)(b->len - AP_CHUNK_HDR_LEN));
	trace_write_data(b->buf, b->len);
	b->len = EV_HDR;
	slot_publish(b->buf, EV_HDR); /* empty first, then the index on */
	slot_sync(b);
	if (!trace_writable())
		buffers_stop();
}

void emit_shared(struct ap_tls *t, unsigned type, unsigned kind, uint64_t addr,
		 uint64_t addr2, uint64_t size, uint32_t stack, unsigned flags, uint64_t at)
{
	emit_in(t, &threads.fallback, 1, type, kind, addr, addr2, size, stack, flags, at);
}

void emit(struct ap_tls *t, unsigned type, unsigned kind, uint64_t addr,
		 uint64_t addr2, uint64_t size, uint32_t stack, unsigned flags)
{
	emit_at(t, type, kind, addr, addr2, size, stack, flags, 0);
}


static struct ap_thr *thr_new(void)
{
	struct ap_thr *b = threads.free_list;
	if (b) {
		threads.free_list = b->next_free;
		return b;
	}
	size_t hdr = (sizeof(struct ap_thr) + 63) & ~(size_t)63;
	uint8_t *mem = map_mem(hdr + RING_SIZE * sizeof(struct ap_ring_ent));
	struct ap_slot *sl = mem ? slot_map(AP_CHUNK_EVENTS, THR_SLOT_SIZE, NULL) : NULL;
	if (!sl) {
		if (mem)
			munmap(mem, hdr + RING_SIZE * sizeof(struct ap_ring_ent));
		return NULL;
	}
	b = (struct ap_thr *)mem;
	b->buf = (uint8_t *)sl + AP_SLOT_HDR;
	b->ring.ent = (struct ap_ring_ent *)(mem + hdr);
	b->next = threads.all;
	threads.all = b;
	return b;
}

/* First slow-path call of a thread: its buffer, its key, its countdown. */
void thr_register(struct ap_tls *t)
{
	t->tid = sys_gettid();
	uint64_t seq = __atomic_fetch_add(&thr_seq, 1, __ATOMIC_RELAXED);
	uint64_t seed = settings.seed ? settings.seed + seq * 0x9e3779b97f4a7c15ull
				: now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)t->tid << 32) ^
					  (uintptr_t)t;
	seed = (seed ^ (seed >> 31)) * 0xbf58476d1ce4e5b9ull;
	t->rng = seed ? seed : 1;
	lk_lock(&threads.lock);
	struct ap_thr *b = thr_new();
	if (b) {
		b->tid = t->tid;
		b->tls = t;
		b->sc_epoch++; /* another thread, another stack */
		b->sc_bank = 0;
		b->sc_hits = 0;
		b->gap_from = b->gap_at = 0;
		b->len = EV_HDR;
		b->events = 0;
		b->lock = b->busy = b->claim = 0;
		slot_publish(b->buf, EV_HDR);
		slot_sync(b);
		__atomic_store_n(&b->live, 1, __ATOMIC_RELEASE);
		if (++live_bytes.threads > live_bytes.threads_max) {
			__atomic_store_n(&live_bytes.threads_max, live_bytes.threads,
					 __ATOMIC_RELAXED);
			live_mirror_update();
		}
	}
	lk_unlock(&threads.lock);
	t->thr = b ? b : &threads.dead;
	struct ap_hold h = hold(t);
	if (b)
		pthread_setspecific(threads.key, b); /* may allocate the key's page */
	if (sig_on)
		alt_install();
	meta_thread(t->tid);
	unhold(t, h);
	/* The countdown ran from 0 until now: start a real interval. */
	t->interval = draw_interval(t);
	t->countdown += t->interval;
}

/* A forked child (the calling thread t is its only one): the other
 * threads' buffers are free again, and every buffer, with the META
 * buffer, starts over in the child's new file (its streams too). */
void buffers_forget(struct ap_tls *t)
{
	threads.free_list = NULL;
	for (struct ap_thr *b = threads.all; b; b = b->next) {
		b->lock = b->busy = b->claim = 0;
		b->len = EV_HDR;
		b->events = 0;
		b->stream = b->nchunks = 0; /* a new file: its streams start over */
		b->unw_ticks = 0;	     /* and its unwinding time */
		slot_sync(b);
		if (b == t->thr)
			continue;
		b->live = 0;
		b->tls = NULL;
		b->next_free = threads.free_list;
		threads.free_list = b;
	}
	if (t->thr && t->thr != &threads.dead) {
		t->thr->tid = t->tid;
		t->thr->sc_epoch++; /* the cached ids are the parent's */
	}
	if (t->thr && t->thr != &threads.dead)
		slot_sync(t->thr); /* (its new tid) */
	threads.fallback.len = EV_HDR;
	threads.fallback.events = 0;
	threads.fallback.stream = threads.fallback.nchunks = 0;
	slot_sync(&threads.fallback);
	threads.nstreams = 0;
	threads.exited_calls = threads.exited_consumed = 0;
	/* the child's heap is the parent's as it was (less what other
	 * threads had not folded): its peak starts there */
	live_fold_all(t);
	live_bytes.threads = live_bytes.threads_max =
		t->thr && t->thr != &threads.dead ? 1 : 0;
	live_bytes.peak = live_bytes.cur;
	if (bufs_head) { /* its own file's copy starts there too */
		bufs_head->live_peak = 0;
		live_mirror_update();
	}
	meta.len = 0;
	meta.nchunks = 0;
	slot_of(meta.buf)->index = 0;
}

/* pthread key destructor: the thread is exiting. */
void thr_exit(void *arg)
{
	struct ap_thr *b = arg;
	struct ap_tls *t = &tls;
	t->guard++;
	int locked = own_enter(b, 0);
	thr_flush_locked(b);
	own_leave(b, locked);
	__atomic_fetch_add(&threads.exited_calls, t->calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&threads.exited_consumed,
			   t->consumed + (uint64_t)(t->interval - t->countdown),
			   __ATOMIC_RELAXED);
	t->calls = 0;
	t->consumed = 0;
	t->interval = t->countdown;
	t->thr = &threads.dead;
	/* what it frees from now on (other keys' destructors, the C
	 * library's own at thread exit) is folded at once */
	live_dead(t);
	lk_lock(&threads.lock);
	live_bytes.threads--;
	__atomic_store_n(&b->live, 0, __ATOMIC_RELEASE);
	b->tls = NULL;
	b->next_free = threads.free_list;
	threads.free_list = b;
	lk_unlock(&threads.lock);
	alt_remove();
	slow_stack_release();
	t->guard--;
}

/* Flushes every buffer; with `sig` set, never waits on a lock for long. */
void flush_all(int sig)
{
	if (sig ? !lk_trylock_bounded(&threads.lock) : (lk_lock(&threads.lock), 0))
		return;
	for (struct ap_thr *b = threads.all; b; b = b->next) {
		if (!__atomic_load_n(&b->live, __ATOMIC_ACQUIRE))
			continue;
		if (b == tls.thr && asym) {
			/* Ours: if a signal interrupted this thread inside emit, the
			 * events up to len are complete, and the interrupted code
			 * never resumes (the process is ending). */
			thr_flush_locked(b);
			continue;
		}
		if (!remote_enter(b, sig))
			continue;
		thr_flush_locked(b);
		remote_leave(b);
	}
	lk_unlock(&threads.lock);
	if (sig ? lk_trylock_bounded(&threads.fallback.lock) : (lk_lock(&threads.fallback.lock), 1)) {
		thr_flush_locked(&threads.fallback);
		lk_unlock(&threads.fallback.lock);
	}
	if (sig ? lk_trylock_bounded(&meta.lock) : (lk_lock(&meta.lock), 1)) {
		meta_flush_locked();
		lk_unlock(&meta.lock);
	}
}

uint64_t events_total(void)
{
	uint64_t n = threads.fallback.events;
	for (struct ap_thr *b = threads.all; b; b = b->next)
		n += b->events;
	return n;
}


/* The ticks every thread of the trace spent unwinding (stack_here), as
 * ns; 0 when the TSC's rate is not known. For END's unwind_ns. */
uint64_t unwind_ns_all(void)
{
	uint64_t ticks = 0;
	for (struct ap_thr *b = threads.all; b; b = b->next)
		ticks += __atomic_load_n(&b->unw_ticks, __ATOMIC_RELAXED);
	return (uint64_t)((double)ticks * ns_per_tsc);
}
