/* tracefile.c: the trace file and its descriptor. Opens the trace (path,
 * mode, the writer's OFD lock, the HEADER), writes chunks whole or ends
 * the trace (trace_write), writes END (end_trace), and keeps the
 * descriptor out of the program's way: high numbers, and the interposed
 * pipe2, close, close_range, closefrom, dup2 and dup3, through which the
 * program can neither see nor close it. */
#include "sampler-int.h"
#include "selfinfo.h"

#include <linux/futex.h>

struct ap_tracefile tfile = { .fd = -1, .next_fd = -1 };

/* The trace's descriptor sits high (the program's own open() calls get the
 * numbers they would get without us), and every chunk checks it is still
 * our file: a program that closes every descriptor, or puts another file
 * in its place, never gets trace chunks written into its files, and the
 * trace goes on through the same file opened again by its path. The
 * program's close, close_range, closefrom, dup2 and dup3 are interposed
 * so that it cannot close the trace's descriptor: as without us, it is
 * not open (EBADF), and a dup2 onto its number moves the trace away and
 * gives the program that number. Raw system calls are caught by the check. */
#define TRACE_FD_MIN 700
#define FD_TOP 8		/* with a lower limit: the sampler's slots under its top */
static dev_t trace_dev;
static ino_t trace_ino;

/* The lowest descriptor the sampler takes: TRACE_FD_MIN, or the top
 * FD_TOP under a lower soft limit (F_DUPFD cannot go past it); -1 when
 * the limit leaves no room. */
static int fd_floor(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > TRACE_FD_MIN + FD_TOP)
		return TRACE_FD_MIN;
	return rl.rlim_cur > 2 * FD_TOP ? (int)rl.rlim_cur - FD_TOP : -1;
}

/* fd moved above the soft RLIMIT_NOFILE (the original closed), where the
 * program cannot meet it: open() and dup give numbers under the limit
 * only, and F_DUPFD, dup2 and dup3 refuse a number at or past it, as
 * without us. Putting it there takes the soft limit raised for the one
 * F_DUPFD and put back. With no room under the hard limit (`ulimit -n N`
 * in a shell sets both), the hard one is raised too, which takes
 * CAP_SYS_RESOURCE (root's, outside containers that drop it), and put
 * back (lowering it takes nothing); failing that, what room there is, or
 * the sampler's range under the soft limit (fd_floor), where the program
 * can see it. fd itself if it cannot move. */
static int fd_high_errno(int fd, int cloexec);

/* (the program's errno as it was: a refused setrlimit must not show) */
static int fd_high(int fd, int cloexec)
{
	int saved = errno, r = fd_high_errno(fd, cloexec);
	errno = saved;
	return r;
}

static int fd_high_errno(int fd, int cloexec)
{
	int cmd = cloexec ? F_DUPFD_CLOEXEC : F_DUPFD;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)INT_MAX - FD_TOP) {
		if ((rlim_t)fd >= rl.rlim_cur)
			return fd;
		struct rlimit up = { rl.rlim_cur + FD_TOP, rl.rlim_max };
		int raised = -1;
		if (up.rlim_cur > rl.rlim_max) {
			up.rlim_max = up.rlim_cur;
			if ((raised = setrlimit(RLIMIT_NOFILE, &up)) < 0)
				up = (struct rlimit){ rl.rlim_max, rl.rlim_max };
		}
		if (raised < 0 && up.rlim_cur > rl.rlim_cur)
			raised = setrlimit(RLIMIT_NOFILE, &up);
		if (raised == 0) {
			int high = fcntl(fd, cmd, (int)rl.rlim_cur);
			setrlimit(RLIMIT_NOFILE, &rl);
			if (high >= 0) {
				sys_close(fd);
				return high;
			}
		}
	}
	int floor = fd_floor();
	if (floor < 0 || fd >= floor)
		return fd;
	int high = fcntl(fd, cmd, floor);
	if (high < 0)
		return fd;
	sys_close(fd);
	return high;
}

static int is_own_fd(int fd)
{
	return fd >= 0 && (fd == __atomic_load_n(&tfile.fd, __ATOMIC_RELAXED) ||
			   fd == __atomic_load_n(&tfile.next_fd, __ATOMIC_RELAXED));
}

/* tfile.lock, re-entered by a signal handler of the thread holding it;
 * returns whether it was taken (0: nested or given up, in a handler). */
static int trace_enter(int *nested)
{
	uint32_t me = sys_gettid();
	*nested = __atomic_load_n(&tfile.owner, __ATOMIC_RELAXED) == me;
	if (*nested)
		return 1;
	if (tfile.in_signal ? !lk_trylock_bounded(&tfile.lock) : (lk_lock(&tfile.lock), 0))
		return 0;
	__atomic_store_n(&tfile.owner, me, __ATOMIC_RELAXED);
	return 1;
}

static void trace_leave(int nested)
{
	if (nested)
		return;
	__atomic_store_n(&tfile.owner, 0, __ATOMIC_RELAXED);
	lk_unlock(&tfile.lock);
}

static void trace_flock(int fd);

/* Whether fd is still the trace. newfstatat is asked (glibc's fstat, made
 * here by name, so that a refusal names it); a seccomp filter's refusal
 * is no answer (refused.c): only a raw system call could have put
 * another file at that number since the last check, and the trace goes
 * on there rather than stopping. */
static int trace_fd_is_ours(int fd)
{
	struct stat st;
	if (!may_call(SYS_newfstatat, (uint64_t)fd, (uintptr_t)"", (uintptr_t)&st, AT_EMPTY_PATH))
		return 1;
	if (syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) == 0)
		return st.st_dev == trace_dev && st.st_ino == trace_ino;
	return errno != EBADF && refused(SYS_newfstatat, errno);
}

/* The trace opened again by its path, appending, if the path still names
 * it; -1 otherwise (then the trace stops). */
static int trace_reopen(int rdwr)
{
	/* never through a link, never waiting on a FIFO put in its place */
	int flags = (rdwr ? O_RDWR : O_WRONLY) | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	if (!may_call(SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)tfile.path, (uint64_t)flags, 0))
		return -1;
	int fd = sys_open(tfile.path, flags, 0);
	if (fd < 0) {
		refused(SYS_openat, errno);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_dev != trace_dev || st.st_ino != trace_ino) {
		sys_close(fd);
		return -1;
	}
	fd = fd_high(fd, 1);
	trace_flock(fd);
	return fd;
}

/* Set while this thread writes the trace: a SIGXFSZ then is ours (the
 * program's RLIMIT_FSIZE reached by the trace), and sig_entry drops it. */
__thread int in_trace_write __attribute__((tls_model("initial-exec")));

/* A chunk did not fit (disk full, file size limit, I/O error): the
 * trace ends with the chunks before it. Its first `done` bytes go, so
 * that the file holds whole chunks only, and nothing more is written: a
 * chunk after a lost one would be out of its stream's order, and the
 * reader would call the file corrupt (docs/trace-format.md, "Streams").
 * The descriptor stays open: another thread may be about to write to
 * it, and its number must not pass to a file of the program's. */
static void trace_write_failed(int fd, size_t done, int err)
{
	__atomic_store_n(&tfile.fd, -1, __ATOMIC_RELAXED);
	buffers_stop_why(err); /* before buffers_stop: record's END says it */
	struct stat st;
	if (done && fstat(fd, &st) == 0 && (uint64_t)st.st_size >= done)
		(void)!ftruncate(fd, st.st_size - (off_t)done);
	char why[160];
	const char *e = strerror(err);
	static const char tail[] = ": the trace ends here; the program goes on";
	size_t n = str_len(e);
	if (n > sizeof(why) - sizeof(tail))
		n = sizeof(why) - sizeof(tail);
	memcpy(why, e, n);
	memcpy(why + n, tail, sizeof(tail));
	say(tfile.path, why);
}

/* ---- the ring ---------------------------------------------------------
 *
 * Under `allocprof record` the trace's descriptor is closed once the
 * HEADER is written (open_trace): the writer's lock stays held by a page
 * of the trace mapped (tfile.lockmap: a mapping holds its file, and the
 * file its OFD lock, until the process exits or execs, as the descriptor
 * did), and every chunk goes whole into the ring of the buffers file
 * (ap_trace_buffers.h), which record's drain thread appends to the trace.
 * The program has no descriptor of ours to meet: F_DUPFD, open() up to
 * RLIMIT_NOFILE and /proc/self/fd are as without us, whatever the limits.
 * A ring that stays full while record has not looked for a second
 * (record killed, or gone while a daemon of the run lives on) is taken
 * over: the sampler opens the trace again by its path and writes the
 * ring's bytes and its chunks itself from then on (ring_direct). */
#define DRAIN_GONE_NS 1000000000ull
#define END_STALE_NS 100000000ull	/* five of record's looks missed */
static uint32_t drainer_known;	/* the ring's drainer (a forked child keeps its parent's) */
#define DRAIN_LOCK_WAIT_MS 5000

static int ring_direct(int rdwr, const void *data, size_t len);

/* Whether record's drain is gone (record killed while the program ran:
 * what the ring holds would never reach the trace). Its pid, stored at
 * each of its looks, answers at once where kill finds it alive and not a
 * zombie (a zombie has no memory: process_vm_readv says ESRCH). Where it
 * does not (gone, or in another pid namespace than this process, where
 * record's pid means nothing), its heartbeat does: the drain is woken
 * (the doorbell) and given `stale` ns to look again. A takeover record
 * did not need is harmless: the drain lock orders it, and the process
 * then holds a descriptor. */
static int ring_unattended(struct ap_buffers_head *h, uint64_t stale)
{
	uint32_t pid = __atomic_load_n(&h->drainer_pid, __ATOMIC_ACQUIRE);
	int saved = errno;
	if (pid && may_call(SYS_kill, pid, 0, 0, 0) &&
	    raw_syscall6(SYS_kill, pid, 0, 0, 0, 0, 0) == 0) {
		char byte;
		struct iovec here = { &byte, 1 }, there = { NULL, 1 };
		if (!may_call(SYS_process_vm_readv, pid, (uintptr_t)&here, 1, (uintptr_t)&there) ||
		    raw_syscall6(SYS_process_vm_readv, pid, (long)&here, 1, (long)&there, 1, 0) >= 0 ||
		    errno != ESRCH) {
			errno = saved;
			return 0;
		}
	}
	errno = saved;
	uint64_t seen = __atomic_load_n(&h->drained_ns, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&h->doorbell, 1, __ATOMIC_RELEASE);
	if (may_call(SYS_futex, (uintptr_t)&h->doorbell, FUTEX_WAKE, 1, 0))
		raw_syscall6(SYS_futex, (long)&h->doorbell, FUTEX_WAKE, 1, 0, 0, 0);
	for (uint64_t waited = 0; waited < stale; waited += 1000000) {
		if (__atomic_load_n(&h->drained_ns, __ATOMIC_ACQUIRE) != seen)
			return 0;
		sys_nap_ms(1);
	}
	errno = saved;
	return 1;
}

/* The times a thread slept in ring_put, waiting for record to make room,
 * and how long, since the trace opened: END's sampler_waits and
 * sampler_wait_ns (the program's voluntary switches and time off its CPU
 * that are recording's, not its own). */
static uint64_t ring_waits, ring_waited_ns;

/* Puts one chunk in the ring (tfile.lock held). 0, or -1 if the trace
 * stopped. The ring is taken over when it is full and record has not
 * looked at it for a second or is gone, and at END when record is gone
 * (killed while the program runs: the chunks it holds would otherwise
 * never reach the trace). A sleep waiting for room is counted in
 * ring_waits. */
static int ring_put(const void *data, size_t len)
{
	uint8_t *ring;
	struct ap_buffers_head *h = ring_of_buffers(&ring);
	if (!h)
		return ring_direct(0, data, len);
	uint64_t t0 = 0;
	/* END, and nobody to take it (record killed while the program ran:
	 * what the ring holds would never reach the trace) */
	if (__atomic_load_n(&tfile.ender, __ATOMIC_RELAXED) && ring_unattended(h, END_STALE_NS))
		return ring_direct(0, data, len);
	for (;;) {
		if (__atomic_load_n(&h->stopped, __ATOMIC_ACQUIRE)) {
			/* record could not write the trace (it said why) */
			__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
			return -1;
		}
		uint64_t head = h->ring_head, tail = __atomic_load_n(&h->ring_tail, __ATOMIC_ACQUIRE);
		/* the room record has written since, taken while the ring is
		 * empty (its positions change with its length); stored before
		 * the next head, which the drain reads first */
		uint64_t room = __atomic_load_n(&h->ring_room, __ATOMIC_ACQUIRE);
		if (head == tail && room > h->ring_size && room <= h->ring_max)
			__atomic_store_n(&h->ring_size, room, __ATOMIC_RELEASE);
		uint64_t size = h->ring_size;
		if (len <= size - (head - tail)) {
			uint64_t at = head % size, first = size - at < len ? size - at : len;
			memcpy(ring + at, data, first);
			memcpy(ring, (const uint8_t *)data + first, len - first);
			__atomic_store_n(&h->ring_head, head + len, __ATOMIC_RELEASE);
			/* record's drain asleep on this ring (all of them idle
			 * for a while): woken once a quarter of it is in use */
			if (UNLIKELY(__atomic_load_n(&h->drain_asleep, __ATOMIC_ACQUIRE)) &&
			    head + len - tail >= size / 4 &&
			    __atomic_exchange_n(&h->drain_asleep, 0, __ATOMIC_ACQ_REL)) {
				__atomic_add_fetch(&h->doorbell, 1, __ATOMIC_RELEASE);
				if (may_call(SYS_futex, (uintptr_t)&h->doorbell, FUTEX_WAKE, 1, 0))
					raw_syscall6(SYS_futex, (long)&h->doorbell, FUTEX_WAKE, 1, 0,
						     0, 0);
			}
			return 0;
		}
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		if (!t0)
			t0 = now;
		uint64_t seen = __atomic_load_n(&h->drained_ns, __ATOMIC_ACQUIRE);
		if (len > h->ring_max || (now > seen && now - seen > DRAIN_GONE_NS) ||
		    (tfile.in_signal && now - t0 > 2 * DRAIN_GONE_NS))
			return ring_direct(0, data, len);
		/* wait for record to take some: on ring_seq, which it bumps;
		 * its drain woken first if it sleeps on this ring */
		if (__atomic_exchange_n(&h->drain_asleep, 0, __ATOMIC_ACQ_REL)) {
			__atomic_add_fetch(&h->doorbell, 1, __ATOMIC_RELEASE);
			if (may_call(SYS_futex, (uintptr_t)&h->doorbell, FUTEX_WAKE, 1, 0))
				raw_syscall6(SYS_futex, (long)&h->doorbell, FUTEX_WAKE, 1, 0, 0, 0);
		}
		uint32_t seq = __atomic_load_n(&h->ring_seq, __ATOMIC_ACQUIRE);
		__atomic_store_n(&h->ring_waiting, 1, __ATOMIC_RELEASE);
		if (__atomic_load_n(&h->ring_tail, __ATOMIC_ACQUIRE) != tail)
			continue;
		struct timespec ts = { 0, 2000000 };
		long slept = 0;
		if (may_call(SYS_futex, (uintptr_t)&h->ring_seq, FUTEX_WAIT, seq, (uintptr_t)&ts))
			slept = raw_syscall6(SYS_futex, (long)&h->ring_seq, FUTEX_WAIT, seq, (long)&ts, 0, 0);
		else
			sys_nap_ms(2);
		/* (EAGAIN: record took some meanwhile, no sleep) */
		uint64_t woke = now_ns(CLOCK_MONOTONIC);
		if (slept != -EAGAIN) {
			__atomic_add_fetch(&ring_waits, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&ring_waited_ns, woke > now ? woke - now : 0, __ATOMIC_RELAXED);
		}
	}
}

/* From the ring to writing the trace itself: the drain lock taken (from
 * a dead holder too: then what it was writing is cut off the trace), the
 * trace opened again by its path (for reading too with rdwr: to be
 * handed to an exec'd image), the ring's bytes written, then data (len
 * bytes, none with len 0); from then on tfile.fd. tfile.lock held.
 * 0, or -1 if the trace stops. */
static int ring_direct(int rdwr, const void *data, size_t len)
{
	uint8_t *ring;
	struct ap_buffers_head *h = ring_of_buffers(&ring);
	int saved = errno, stolen = 0;
	/* (flagged: record never takes the lock from a sampler by its id,
	 * which is another pid namespace's maybe; see ring_take) */
	uint32_t me = sys_gettid() | AP_DRAIN_SAMPLER;
	/* tfile.ring stays set until tfile.fd is: another thread's flush
	 * that found neither would drop its buffer as for a stopped trace
	 * (it waits on tfile.lock, which this thread holds, instead) */
	if (!h) {
		__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
		return -1; /* the ring is gone (a fork inside the sampler's child) */
	}
	{
		for (int ms = 0;; ms++) {
			uint32_t holder = 0;
			if (__atomic_compare_exchange_n(&h->drain_lock, &holder, me, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				break;
			/* record's drain holds it: taken from it only when it has
			 * not looked for DRAIN_GONE_NS (gone while it wrote; its
			 * pid is no answer from another pid namespace) */
			if (holder && ring_unattended(h, DRAIN_GONE_NS) &&
			    __atomic_compare_exchange_n(&h->drain_lock, &holder, me, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				stolen = 1;
				break;
			}
			if (ms >= DRAIN_LOCK_WAIT_MS) {
				/* record holds it and does not go on (stopped?) */
				__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
				buffers_stop();
				errno = saved;
				return -1;
			}
			sys_nap_ms(1);
		}
		if (__atomic_load_n(&h->stopped, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&h->drain_lock, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
			errno = saved;
			return -1;
		}
	}
	int fd = trace_reopen(rdwr);
	if (fd < 0) {
		__atomic_store_n(&h->drain_lock, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
		buffers_stop();
		say(tfile.path, "could not be opened again when record stopped taking its "
				"chunks: the trace ends here; the program goes on");
		errno = saved;
		return -1;
	}
	int rc = 0;
	{
		if (stolen)
			(void)!ftruncate(fd, (off_t)h->drained_size);
		uint64_t size = h->ring_size, head = h->ring_head, tail = h->ring_tail;
		uint64_t at = tail % size, n = head - tail, first = size - at < n ? size - at : n;
		size_t done;
		int err = write_some(fd, ring + at, first, &done);
		if (!err)
			err = write_some(fd, ring, n - first, &done);
		if (err) {
			__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
			trace_write_failed(fd, 0, err);
			rc = -1;
		}
		__atomic_store_n(&h->ring_tail, head, __ATOMIC_RELEASE);
		__atomic_store_n(&h->ring_mode, AP_RING_DIRECT, __ATOMIC_RELEASE);
		__atomic_store_n(&h->drain_lock, 0, __ATOMIC_RELEASE);
	}
	if (rc == 0) {
		/* the descriptor holds the writer's lock now */
		if (tfile.lockmap) {
			munmap(tfile.lockmap, AP_BUFFERS_PAGE);
			tfile.lockmap = NULL;
		}
		trace_flock(fd);
		__atomic_store_n(&tfile.fd, fd, __ATOMIC_RELAXED);
		__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
		if (len) {
			size_t done;
			int err = write_some(fd, data, len, &done);
			if (err) {
				trace_write_failed(fd, done, err);
				rc = -1;
			}
		}
	}
	errno = saved;
	return rc;
}

/* The trace written by its descriptor from now on (for reading too with
 * rdwr), if the ring took its chunks: an exec hands the descriptor to
 * the next image. 0, or -1 (no descriptor). */
int trace_direct(int rdwr)
{
	if (!__atomic_load_n(&tfile.ring, __ATOMIC_RELAXED))
		return tfile.fd >= 0 ? 0 : -1;
	int nested;
	if (!trace_enter(&nested))
		return -1;
	int rc = tfile.ring ? ring_direct(rdwr, NULL, 0) : tfile.fd >= 0 ? 0 : -1;
	trace_leave(nested);
	return rc;
}

/* A process running as root is about to give up the right to make files
 * where the run's traces go (creds.c): the trace its next image will
 * write, should this one record events and then exec, is made now (the
 * name that image takes, PATH[.pid].exec<n>) and kept open, hidden as the
 * trace's descriptor is, and locked, so that record takes it for a
 * trace being written; an exec hands it on (exec.c), and the image
 * before keeps its own trace and its events. Left empty if it never is
 * (record removes an empty trace once nothing holds it; the reports
 * skip one). */
void trace_next_make(void)
{
	if (tfile.next_fd >= 0 || base_is_device())
		return;
	char path[PATH_MAX];
	make_path(path, proc.gen + 1);
	int fd = trace_create(path);
	if (fd < 0)
		return;
	fd = fd_high(fd, 1);
	trace_flock(fd);
	memcpy(tfile.next_path, path, sizeof(path));
	__atomic_store_n(&tfile.next_fd, fd, __ATOMIC_RELAXED);
}

/* The trace trace_next_make made, not to be used (the next image makes
 * its own): removed if its name is still it, and closed. */
void trace_next_drop(void)
{
	int fd = __atomic_exchange_n(&tfile.next_fd, -1, __ATOMIC_RELAXED);
	struct stat a, b;
	if (fd < 0)
		return;
	if (fstat(fd, &a) == 0 && a.st_size == 0 && lstat(tfile.next_path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlink(tfile.next_path);
	sys_close(fd);
}

/* Writes one chunk (or the preamble and HEADER). Returns 0 if it is in the
 * file whole (or the ring), else -1. */
static int trace_write(const void *data, size_t len)
{
	int nested;
	if (!trace_writable() || !trace_enter(&nested))
		return -1;
	if (tfile.ring) {
		int r = ring_put(data, len);
		trace_leave(nested);
		return r;
	}
	int fd = tfile.fd;
	if (fd >= 0 && !trace_fd_is_ours(fd)) {
		fd = trace_reopen(0); /* closed, or another file now: not ours */
		__atomic_store_n(&tfile.fd, fd, __ATOMIC_RELAXED);
	}
	int rc = -1;
	if (fd >= 0) {
		size_t done;
		in_trace_write++;
		int err = write_some(fd, data, len, &done);
		if (!err) {
			rc = 0;
		} else {
			if (err == EFBIG) {
				/* the file size limit: a SIGXFSZ left pending
				 * where the program blocks it is ours too */
				sigset_t x, pend;
				sigemptyset(&x);
				sigaddset(&x, SIGXFSZ);
				const struct timespec zero = { 0, 0 };
				if (sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ))
					sigtimedwait(&x, NULL, &zero);
			}
			trace_write_failed(fd, done, err);
		}
		in_trace_write--;
	}
	trace_leave(nested);
	return rc;
}

/* A META or EVENTS chunk, counted once it is written. */
void trace_write_data(const void *data, size_t len)
{
	if (trace_write(data, len) == 0)
		__atomic_add_fetch(&tfile.chunks, 1, __ATOMIC_RELAXED);
}

/* libunwind opens a pipe at its first use and keeps it, to check that
 * an address is readable before it reads it (frames without unwind
 * tables, followed by their frame pointers, and the outermost frames):
 * it writes the byte to the pipe and takes EFAULT for "not readable".
 * Asked by libunwind (its return address in libunwind's text), the pipe
 * is not made at all: libunwind gets two numbers no descriptor can have
 * (UNW_FD_R, UNW_FD_W); its check, which it makes through
 * syscall(SYS_write, UNW_FD_W, addr, 1), is answered by unw_check (the
 * exported syscall sends it there), and its read of UNW_FD_R by the
 * exported read (EAGAIN: "the pipe is fine"). The process holds no
 * descriptor of libunwind's, which would count against its RLIMIT_NOFILE
 * and be visible to F_DUPFD; a program that uses libunwind itself gets
 * the same numbers (a pipe at its own numbers was read and written by
 * the sampler's unwinds after the program had closed it and put a file
 * of its own there). Everyone else's pipe2 (a signal handler that
 * interrupted the sampler, say) passes straight through. */
EXPORT int pipe2(int fds[2], int flags)
{
	if (from_unwinder(__builtin_return_address(0))) {
		fds[0] = UNW_FD_R;
		fds[1] = UNW_FD_W;
		return 0;
	}
	if (!real_pipe2)
		resolve();
	return real_pipe2(fds, flags);
}

/* libunwind's check that the word at addr is readable: 1 if it is, else
 * -1 with errno EFAULT (its write's answers). The kernel reads the new
 * signal mask from addr before it looks at `how`, and a `how` that is no
 * operation changes nothing: rt_sigprocmask with an invalid `how` answers
 * EFAULT exactly where a read of those 8 bytes would fault (as libunwind's
 * write did: memory mapped execute-only included), EINVAL otherwise,
 * without a descriptor, without a thread id, and with a call the
 * sampler needs anyway (a seccomp filter that refuses it refuses the
 * sampler its locks). 8 bytes: libunwind reads a word there next. */
long unw_check(const void *addr)
{
	/* how: 0 rt_sigprocmask; 1 process_vm_readv of this thread (a
	 * seccomp filter refused the first: every later check asking the
	 * filter again made --all fifty times slower); 2 neither: the word
	 * counts as unreadable, and the stack ends there */
	static int how;
	int saved = errno, h = __atomic_load_n(&how, __ATOMIC_RELAXED);
	long r = -1;
	int e = EPERM; /* (not made: a filter would refuse it) */
	static unsigned filters_asked; /* (refused.c's filters, asked once) */
	if (h == 0) {
		unsigned nf = filters_count();
		if ((filters_asked == nf ||
		     (may_call(SYS_rt_sigprocmask, 0x7fff, (uintptr_t)addr, 0, sizeof(uint64_t)) &&
		      (filters_asked = nf, 1))) &&
		    (r = raw_syscall6(SYS_rt_sigprocmask, 0x7fff, (long)addr, 0, sizeof(uint64_t), 0,
				      0)) < 0 &&
		    (e = errno) == EINVAL) {
			errno = saved;
			return 1;
		}
		if (e == EFAULT && r < 0) {
			errno = EFAULT;
			return -1;
		}
		refused(SYS_rt_sigprocmask, e);
		__atomic_store_n(&how, h = 1, __ATOMIC_RELAXED);
	}
	if (h == 1) {
		char byte[sizeof(uint64_t)];
		struct iovec here = { byte, sizeof(byte) }, there = { (void *)(uintptr_t)addr, sizeof(byte) };
		pid_t me = (pid_t)sys_gettid();
		if (me >= 0x40000000)
			me = proc.pid; /* (a made-up id: gettid refused) */
		if (may_call(SYS_process_vm_readv, (uint64_t)me, (uintptr_t)&here, 1, (uintptr_t)&there)) {
			r = raw_syscall6(SYS_process_vm_readv, me, (long)&here, 1, (long)&there, 1, 0);
			e = errno;
			if (r == (long)sizeof(byte)) {
				errno = saved;
				return 1;
			}
			if (r >= 0 || e == EFAULT) {
				errno = EFAULT;
				return -1;
			}
		}
		__atomic_store_n(&how, 2, __ATOMIC_RELAXED);
	}
	errno = EFAULT;
	return -1;
}

/* libunwind's read of its pipe's reading end, before each check: the
 * "pipe" is always fine (EAGAIN, no byte). No system call: read is a
 * cancellation point, and libunwind checks addresses inside the sampler. */
static ssize_t (*real_read)(int, void *, size_t);

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	if (UNLIKELY(fd == UNW_FD_R) && from_unwinder(__builtin_return_address(0))) {
		errno = EAGAIN;
		return -1;
	}
	ssize_t (*f)(int, void *, size_t) = __atomic_load_n(&real_read, __ATOMIC_ACQUIRE);
	if (UNLIKELY(!f)) {
		f = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
		if (!f)
			return sys_read(fd, buf, n);
		__atomic_store_n(&real_read, f, __ATOMIC_RELEASE);
	}
	return f(fd, buf, n);
}

/* libunwind masks every signal around its frame lookups (a
 * dl_iterate_phdr at each step its caches do not answer) and its memory
 * pool's lock, and puts the mask back after: two rt_sigprocmask calls,
 * hundreds a second on a thread whose stacks are new (python3). Putting
 * the mask back makes the kernel look at the signals pending for the
 * process, and a signal sent to the process that another thread was woken
 * for (Ctrl-C for the main thread asleep in time.sleep) was taken by the
 * thread that unmasked, whose handler ran while the main thread slept on
 * (1 run in 10 beside a loaded machine). Inside the sampler, libunwind is
 * never entered again on the same thread (a handler's allocation there is
 * not unwound), so the masks protect nothing: they are not made, and the
 * set "saved" is the one asked for. A program with libunwind of its own
 * (unw_masks_kept) keeps them: its handlers may unwind with it. */
int unw_masks_kept;

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (UNLIKELY(from_unwinder(__builtin_return_address(0))) && tls.guard &&
	    !__atomic_load_n(&unw_masks_kept, __ATOMIC_RELAXED)) {
		if (old && set)
			*old = *set;
		return 0;
	}
	int (*f)(int, const sigset_t *, sigset_t *) =
		__atomic_load_n(&real_sigprocmask, __ATOMIC_ACQUIRE);
	return f ? f(how, set, old) : ap_sigprocmask_glibc(how, set, old); /* (before resolve) */
}

/* The program's descriptor calls: the sampler's own descriptors are not
 * open as far as the program can tell (see trace_write). */
EXPORT int close(int fd)
{
	if (!real_close)
		resolve();
	if (is_own_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	return real_close(fd);
}

/* close_range over [first, last] without the sampler's descriptors (the
 * trace's, the next image's trace's), in up to three ranges around them. */
static int close_range_skip(unsigned first, unsigned last, int flags)
{
	int a = __atomic_load_n(&tfile.fd, __ATOMIC_RELAXED);
	int b = __atomic_load_n(&tfile.next_fd, __ATOMIC_RELAXED);
	unsigned own[2], n = 0;
	if (a >= 0)
		own[n++] = (unsigned)a;
	if (b >= 0 && b != a)
		own[n++] = (unsigned)b;
	if (n == 2 && own[0] > own[1]) {
		unsigned t = own[0];
		own[0] = own[1];
		own[1] = t;
	}
	if (first > last)
		return (int)raw_syscall6(SYS_close_range, first, last, flags, 0, 0, 0);
	for (unsigned i = 0; i < n && first <= last; i++) {
		if (own[i] < first || own[i] > last)
			continue;
		if (own[i] > first &&
		    raw_syscall6(SYS_close_range, first, own[i] - 1, flags, 0, 0, 0) < 0)
			return -1;
		if (own[i] == last)
			return 0;
		first = own[i] + 1;
	}
	return (int)raw_syscall6(SYS_close_range, first, last, flags, 0, 0, 0);
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	return close_range_skip(first, last, flags);
}

EXPORT void closefrom(int low)
{
	if (low < 0)
		low = 0;
	if (close_range_skip((unsigned)low, ~0u, 0) == 0 || errno != ENOSYS)
		return;
	void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "closefrom");
	if (real)
		real(low); /* no close_range: glibc's threads.fallback, catching ours by fstat */
}

/* The sampler's descriptor moves out of the way of a dup2 onto its number. */
static void fd_evict(int fd)
{
	int nested = 1;
	/* (the next image's trace: only written at an exec, no lock) */
	int *own = fd >= 0 && fd == tfile.next_fd ? &tfile.next_fd : &tfile.fd;
	if (fd != *own || (own == &tfile.fd && !trace_enter(&nested)))
		return;
	struct rlimit rl;
	if (fd == *own && (getrlimit(RLIMIT_NOFILE, &rl) < 0 || (rlim_t)fd < rl.rlim_cur)) {
		/* (past the soft limit the kernel refuses the dup2 itself;
		 * a user that cannot raise the limits moves it under them) */
		int to = fd_high(fd, 1), floor;
		if (to == fd && (floor = fd_floor()) >= 0 &&
		    (to = fcntl(fd, F_DUPFD_CLOEXEC, floor)) >= 0)
			sys_close(fd);
		if (to >= 0 && to != fd)
			__atomic_store_n(own, to, __ATOMIC_RELAXED);
	}
	trace_leave(nested);
}

EXPORT int dup2(int old, int fd)
{
	if (is_own_fd(old)) {
		errno = EBADF;
		return -1;
	}
	if (old != fd)
		fd_evict(fd);
	return (int)raw_syscall6(SYS_dup2, old, fd, 0, 0, 0, 0);
}

EXPORT int dup3(int old, int fd, int flags)
{
	if (is_own_fd(old)) {
		errno = EBADF;
		return -1;
	}
	if (old != fd)
		fd_evict(fd);
	return (int)raw_syscall6(SYS_dup3, old, fd, flags, 0, 0, 0);
}

/* ---- the trace file ---------------------------------------------------- */

#define CMDLINE_MAX (256u << 10)

/* How many CPUs the process may run on: its affinity mask's (taskset,
 * cgroup cpusets), which advise's measured replay runs on (a threaded
 * pool's cost depends on the CPUs its threads share). 0 when unknown:
 * more CPUs than a cpu_set_t holds, or the call refused. glibc's wrapper
 * is a bare system call, and CPU_COUNT a loop: nothing that allocates. */
static uint64_t allowed_cpus(void)
{
	cpu_set_t set;
	if (!may_call(SYS_sched_getaffinity, 0, sizeof(set), (uintptr_t)&set, 0))
		return 0;
	int saved = errno;
	int r = sched_getaffinity(0, sizeof(set), &set);
	if (r < 0)
		refused(SYS_sched_getaffinity, errno);
	errno = saved;
	return r < 0 ? 0 : (uint64_t)CPU_COUNT(&set);
}

/* The process's context switches and minor page faults so far, every
 * thread's (getrusage of RUSAGE_SELF: voluntary, it blocked; involuntary,
 * it was preempted): advise weighs a pool's saving for objects handed
 * between threads against how often the program's threads waited, and
 * its replay's page faults against the program's (docs/pool-model.md,
 * §9). A raw system call, as run_delay_ns; false when refused. */
static bool usage(uint64_t *vol, uint64_t *invol, uint64_t *minflt)
{
	struct rusage ru;
	if (!may_call(SYS_getrusage, (uint64_t)RUSAGE_SELF, (uintptr_t)&ru, 0, 0) ||
	    syscall(SYS_getrusage, RUSAGE_SELF, &ru) != 0)
		return false;
	*vol = (uint64_t)ru.ru_nvcsw;
	*invol = (uint64_t)ru.ru_nivcsw;
	*minflt = (uint64_t)ru.ru_minflt;
	return true;
}

/* How long the calling thread waited, runnable, for a CPU (the second
 * field of /proc/thread-self/schedstat, the kernel's run_delay): with its
 * CPU time, what of its wall time it was off its CPU by its own doing
 * (asleep, waiting for input), which advise's replay sleeps. Raw system
 * calls (END may be written in a signal handler); false when the file
 * cannot be read (no /proc, a seccomp filter, no schedstats). */
static bool run_delay_ns(uint64_t *out)
{
	char b[128];
	static const char path[] = "/proc/thread-self/schedstat";
	/* a seccomp filter that would kill the process for them: not made */
	if (!may_call(SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)path, O_RDONLY | O_CLOEXEC, 0))
		return false;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (!may_call(SYS_read, (uint64_t)fd, (uintptr_t)b, sizeof(b) - 1, 0)) {
		sys_close(fd);
		return false;
	}
	long n = syscall(SYS_read, fd, b, sizeof(b) - 1);
	sys_close(fd);
	if (n <= 0)
		return false;
	b[n] = 0;
	const char *q = b;
	while (*q >= '0' && *q <= '9')
		q++;
	if (*q != ' ')
		return false;
	uint64_t v = 0;
	int digits = 0;
	for (q++; *q >= '0' && *q <= '9'; q++, digits++)
		v = v * 10 + (uint64_t)(*q - '0');
	if (!digits)
		return false;
	*out = v;
	return true;
}
/* The counts and the CPU time when this trace started: an exec'd
 * image's process keeps its predecessor's (getrusage and the process
 * CPU clock survive execve), an attached one what it had used before
 * the attach; END writes what the trace's own run made. So does the
 * starting thread's wait for a CPU (delay0, of thread delay_tid): its
 * run_delay counts from the thread's birth, across execve, and a shell
 * that waited 0.5 s for a CPU before it exec'd a program that slept
 * 40 ms made the program's time asleep come out below zero. */
static uint64_t vol0, invol0, minflt0, cpu0, delay0;
static uint32_t delay_tid;

/* Preamble and HEADER chunk, one write. */
static void write_header(const char *parent)
{
	size_t cap = 3 * PATH_MAX + CMDLINE_MAX + 1024;
	uint8_t *buf = map_mem(cap);
	if (!buf)
		return;
	ap_put_preamble(buf);
	uint8_t *hdr = buf + AP_TRACE_PREAMBLE_LEN;
	uint8_t *p = hdr + AP_CHUNK_HDR_LEN;
	size_t k = 0;
	char exe[PATH_MAX];
	ssize_t elen = self_exe(exe, sizeof(exe) - 1);
	if (elen < 0)
		elen = 0;
	char *cmd = (char *)buf + cap - CMDLINE_MAX;
	ssize_t clen = 0;
	int fd = self_open("cmdline");
	if (fd >= 0) {
		ssize_t r;
		while (clen < (ssize_t)CMDLINE_MAX &&
		       (r = read(fd, cmd + clen, CMDLINE_MAX - (size_t)clen)) > 0)
			clen += r;
		close(fd);
	}
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	k += ap_put_kv_uint(p + k, AP_HK_RATE, settings.rate);
	k += ap_put_kv_uint(p + k, AP_HK_FLAGS,
			     (settings.all ? AP_HFLAG_ALL : 0) | (attach_mode ? AP_HFLAG_ATTACHED : 0));
	k += ap_put_kv_uint(p + k, AP_HK_PID, (uint64_t)proc.pid);
	k += ap_put_kv_uint(p + k, AP_HK_PPID, (uint64_t)getppid());
	k += ap_put_kv_str(p + k, AP_HK_EXE, exe, (size_t)elen);
	k += ap_put_kv_str(p + k, AP_HK_CMDLINE, cmd, (size_t)clen);
	k += ap_put_kv_uint(p + k, AP_HK_CPUS, cpus > 0 ? (uint64_t)cpus : 1);
	uint64_t allowed = allowed_cpus();
	if (allowed)
		k += ap_put_kv_uint(p + k, AP_HK_ALLOWED_CPUS, allowed);
	k += ap_put_kv_uint(p + k, AP_HK_START_REALTIME_NS, now_ns(CLOCK_REALTIME));
	k += ap_put_kv_uint(p + k, AP_HK_START_NS, now_ns(CLOCK_MONOTONIC));
	k += ap_put_kv_uint(p + k, AP_HK_MAX_DEPTH, settings.max_depth);
	k += ap_put_kv_uint(p + k, AP_HK_PAGE_SIZE, (uint64_t)sysconf(_SC_PAGESIZE));
	k += ap_put_kv_uint(p + k, AP_HK_TIME_QUANTUM_NS, settings.quantum);
	/* the step of a process with one thread: the compactor may round
	 * the times where no other thread is near as coarsely */
	k += ap_put_kv_uint(p + k, AP_HK_TIME_STEP_NS, settings.quantum * settings.coarse_step);
	static const char ver[] = "allocprof-sampler " AP_VERSION;
	k += ap_put_kv_str(p + k, AP_HK_SAMPLER, ver, sizeof(ver) - 1);
	if (parent)
		k += ap_put_kv_str(p + k, AP_HK_PARENT_TRACE, parent, str_len(parent));
	if (malloc_owner())
		k += ap_put_kv_str(p + k, AP_HK_MALLOC_OWNER, malloc_owner(), str_len(malloc_owner()));
	/* the run's: a daemon's child forked, or image exec'd, after a later
	 * record took the same -o is still this run's (cli/record/finish.c) */
	uint64_t run_id, run = cfg_run_pid(&run_id, NULL);
	if (run)
		k += ap_put_kv_uint(p + k, AP_HK_RUN_PID, run);
	if (run && run_id)
		k += ap_put_kv_uint(p + k, AP_HK_RUN_ID, run_id);
	ap_chunk_header(hdr, AP_CHUNK_HEADER, tls.tid ? tls.tid : sys_gettid(), AP_STREAM_NONE, 0,
			p, (uint32_t)k);
	trace_write(buf, AP_TRACE_PREAMBLE_LEN + AP_CHUNK_HDR_LEN + k);
	munmap(buf, cap);
}

/* A device (record -o /dev/null: discard) takes every trace as it is:
 * /dev/null.<pid> would be a file in /dev. */
int base_is_device(void)
{
	struct stat st;
	return may_call(SYS_newfstatat, (uint64_t)AT_FDCWD, (uintptr_t)tfile.base, (uintptr_t)&st,
			0) &&
	       stat(tfile.base, &st) == 0 && S_ISCHR(st.st_mode);
}

/* The path of this image's trace: ALLOCPROF_OUTPUT for the launched
 * process, ALLOCPROF_OUTPUT.<pid> for the others, plus .exec<n> for the
 * n-th image a process exec'd into after an image that recorded events. */
void make_path(char *out, unsigned gen)
{
	size_t n = str_len(tfile.base);
	memcpy(out, tfile.base, n);
	if (base_is_device()) {
		out[n] = 0;
		return;
	}
	uint64_t run_id;
	if (cfg_run_pid(&run_id, NULL) != (uint64_t)proc.pid) {
		out[n++] = '.';
		n += put_dec(out + n, (uint64_t)proc.pid);
	}
	if (gen) {
		memcpy(out + n, ".exec", 5);
		n += 5;
		n += put_dec(out + n, gen);
	}
	out[n] = 0;
}

/* The mode of every trace of the run: that of the launched process's
 * trace, 0644 under the umask record ran with (the first image creates it
 * before its main runs; record removed any older file of that name),
 * never the umask the program set since. Forked children inherit it. */
static mode_t trace_mode = 0644;

void trace_mode_init(void)
{
	struct stat st;
	if (stat(tfile.base, &st) == 0 && S_ISREG(st.st_mode)) {
		trace_mode = st.st_mode & 0777;
	} else {
		mode_t m = umask(0);
		umask(m);
		trace_mode = 0644 & ~m;
	}
}

/* The writer's lock on a trace descriptor (docs/trace-format.md, "Live
 * traces"): an OFD lock belongs to the open file, so a forked child
 * shares it until it has opened its own trace, and it goes when the last
 * process holding the file exits, execs or closes it. A trace opened
 * again takes it again. */
static void trace_flock(int fd)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = AP_LOCK_WRITER_LEN };
	fcntl(fd, F_OFD_SETLK, &lk);
}

/* open(), unless a seccomp filter the sampler knows of would refuse it
 * or kill the process for it (refused.c): -1 with EPERM then. */
static int open_allowed(const char *path, int flags, mode_t mode)
{
	if (!may_call(SYS_openat, (uint64_t)AT_FDCWD, (uintptr_t)path, (uint64_t)flags, mode))
		return errno = EPERM, -1;
	return open(path, flags, mode);
}

/* Names tried after the first one is taken: <path>-2 ... <path>-<n>. */
#define CREATE_TRIES 1000

/* Creates the trace at `path` (PATH_MAX bytes), a file of its own: never
 * through a symbolic link, never an existing file (a process of an
 * earlier run, a reused pid, another pid namespace's process of the same
 * pid, or a link planted in a directory others can write: the name is
 * taken, and the trace goes to <path>-2, -3, ... instead, changed in
 * place). A device (-o /dev/null) is opened as it is. Returns the
 * descriptor, or -1 with errno. Made before the buffers file, which is
 * named after the trace. */
int trace_create(char *path)
{
	if (!strcmp(path, tfile.base) && base_is_device())
		return open_allowed(path, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
	size_t n = str_len(path);
	for (unsigned k = 1; k <= CREATE_TRIES; k++) {
		if (k > 1) {
			path[n] = '-';
			path[n + 1 + put_dec(path + n + 1, k)] = 0;
		}
		/* read too: the next image checks what it is handed */
		int fd = open_allowed(path,
				      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC,
				      trace_mode);
		if (fd >= 0) {
			fchmod(fd, trace_mode); /* ours: whatever the umask is now */
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	int e = errno;
	path[n] = 0;
	errno = e;
	return -1;
}

/* Whether fd is a trace handed over: a regular file open for reading and
 * writing, empty (record's) or an allocprof trace (an image's that
 * recorded no event). Anything else at that number is the program's, and
 * left alone. */
static int is_handed_trace(int fd)
{
	struct stat st;
	char magic[AP_TRACE_MAGIC_LEN];
	int fl = fcntl(fd, F_GETFL);
	/* (a filter's refusal of fcntl: the probe below reads, and a
	 * descriptor not open for reading fails it) */
	if (fl < 0 ? !refused(SYS_fcntl, errno) : (fl & O_ACCMODE) != O_RDWR)
		return 0;
	if (fstat(fd, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return 0;
	} else if (!refused(SYS_newfstatat, errno)) {
		return 0;
	}
	/* Without fstat (a seccomp filter's refusal: the fork child's own
	 * trace, just made, was taken for another file and left empty
	 * beside a second one), pread tells as well, and moves no offset (an
	 * lseek to the end moved the program's, if the descriptor is its):
	 * a pipe or a socket refuses it, and an empty file has nothing at 0 */
	ssize_t n = pread(fd, magic, sizeof(magic), 0);
	return n == 0 ||
	       (n == (ssize_t)sizeof(magic) && !memcmp(magic, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN));
}

int trace_handed_or_create(int fd)
{
	return is_handed_trace(fd) ? fd : trace_create(tfile.path);
}

/* Once the HEADER is in the trace: the chunks into the ring and the
 * descriptor closed (see "the ring"), where the buffers file has one (a
 * process under record) and the trace is a regular file that a page
 * mapping can hold the lock of. Attached, the trace keeps its descriptor:
 * the process's buffers are private (attach.c). */
static void ring_start(int fd, const struct stat *st)
{
	uint8_t *ring;
	if (attach_mode || tfile.fd != fd || !S_ISREG(st->st_mode))
		return;
	struct ap_buffers_head *h = ring_make(&ring);
	if (!h)
		return;
	void *m = mmap(NULL, AP_BUFFERS_PAGE, PROT_NONE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return;
	struct stat now;
	if (fstat(fd, &now) < 0) {
		munmap(m, AP_BUFFERS_PAGE);
		return;
	}
	h->drained_size = (uint64_t)now.st_size;
	__atomic_store_n(&h->drained_ns, now_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
	/* who drains it, until record's first look says: what a forked
	 * child's parent knew, else record, named in the settings, or the
	 * parent of the process it started (an exec keeps the parent). An
	 * exec'd image of a child (a shell's command) whose ring record has
	 * not looked at yet would otherwise wait at its END for that look
	 * (record's next scan: ~15 ms a process) to know record is there. */
	uint64_t run_id, rec;
	pid_t parent = getppid();
	uint64_t launched = cfg_run_pid(&run_id, &rec);
	if (!drainer_known && rec)
		drainer_known = (uint32_t)rec;
	else if (launched == (uint64_t)proc.pid && parent > 1)
		drainer_known = (uint32_t)parent;
	__atomic_store_n(&h->drainer_pid, drainer_known, __ATOMIC_RELEASE);

	__atomic_store_n(&h->ring_mode, AP_RING_ON, __ATOMIC_RELEASE);
	tfile.lockmap = m;
	__atomic_store_n(&tfile.ring, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&tfile.fd, -1, __ATOMIC_RELAXED);
	sys_close(fd);
}

/* Opens this image's trace at tfile.path (which create_trace may change),
 * or takes `fd`, the trace handed over by `record` or the image before
 * this one (ALLOCPROF_EXEC): a file this run created, emptied and written
 * from the start, without opening anything by its name (the process may
 * no longer be allowed to: a daemon that dropped to another user). */
int open_trace(const char *parent, int fd)
{
	struct stat st;
	if (fd >= 0 && !is_handed_trace(fd))
		fd = -1; /* not a trace handed over: make one */
	/* appending, as every trace: record's (mkostemp) is not, and the
	 * image that handed it on left its offset past what it wrote */
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	if (fd >= 0 && fl < 0 && refused(SYS_fcntl, errno)) {
		/* A seccomp filter refuses fcntl: the descriptor stays as it
		 * came (the fork child's own trace, just made, appends and is
		 * close-on-exec already; one handed over does neither),
		 * emptied and written from byte 0 by this image alone. Making
		 * another left this one empty, and the run unreadable. */
		if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
			fd = -1;
	} else if (fd >= 0 && (fl < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 ||
			       ftruncate(fd, 0) < 0 || fcntl(fd, F_SETFL, fl | O_APPEND) < 0)) {
		fd = -1;
	}
	if (fd < 0)
		fd = trace_create(tfile.path);
	if (fd < 0) {
		int err = errno;
		int filter = refused(SYS_openat, err);
		/* Refused by the directory's modes: the process runs as a user
		 * that may not make files where the run's traces go (record
		 * made the program's own there, as the user it runs as), which
		 * a process can come to only by changing its ids (a daemon's
		 * worker forked after its parent gave up root, or an image it
		 * exec'd): it runs unprofiled, and says nothing on the
		 * program's stderr (allocprof-record(1), DESCRIPTORS) */
		if (!filter && (err == EACCES || err == EPERM))
			return -1;
		say(tfile.path, filter ? "the program's seccomp filter refuses openat to the sampler: "
					 "this process is not profiled"
				       : strerror(err));
		return -1;
	}
	fd = fd_high(fd, 1);
	trace_flock(fd);
	if (fstat(fd, &st) < 0) {
		if (!refused(SYS_newfstatat, errno)) {
			say(tfile.path, strerror(errno));
			sys_close(fd);
			return -1;
		}
		/* a seccomp filter's refusal is no answer: the file is the
		 * one just made (or handed over), and trace_fd_is_ours takes
		 * the refusals to come as "still ours". Giving up left an
		 * empty file that made the whole run unreadable. */
		st.st_dev = 0;
		st.st_ino = 0;
	}
	trace_dev = st.st_dev;
	trace_ino = st.st_ino;
	tfile.fd = fd;
	if (!usage(&vol0, &invol0, &minflt0))
		vol0 = invol0 = minflt0 = 0;
	__atomic_store_n(&ring_waits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ring_waited_ns, 0, __ATOMIC_RELAXED);
	cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	delay_tid = run_delay_ns(&delay0) ? sys_gettid() : 0;
	write_header(parent);
	ring_start(fd, &st);
	return 0;
}

/* Ends the trace: everything flushed, END written. Returns 0 if this call
 * ended it, -1 if it was not running. No more events after it, but where
 * the process ends (exit, _exit, a fatal signal) with buffers that
 * outlive it: its other threads run on until the kernel ends them, and
 * what they allocate meanwhile (while END is written too, milliseconds
 * with a full ring) is recorded after END, which record's copy of END
 * then ends the trace with (ap_buffers_finish). tfile.final: such an END
 * was written, or is being written, and no other. */
int exec_unfollowed;

int end_trace(unsigned reason, int have_status, uint64_t status, int sig)
{
	int on = AP_ON;
	int final = buffers_durable() && (reason == AP_END_EXIT || reason == AP_END_UNDERSCORE_EXIT ||
					  reason == AP_END_SIGNAL);
	int none = 0;
	if (proc.pid != sys_getpid())
		return -1;
	/* (the state never leaves AP_ON for a final END: a call in another
	 * thread that saw it otherwise would go unrecorded) */
	if (final ? __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) != AP_ON ||
			    !__atomic_compare_exchange_n(&tfile.final, &none, 1, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
		  : !__atomic_compare_exchange_n(&proc.state, &on, AP_ENDED, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -1;
	__atomic_store_n(&tfile.ender, (uint32_t)sys_gettid(), __ATOMIC_RELEASE);
	flush_all(sig);
	uint64_t calls = threads.exited_calls, consumed = threads.exited_consumed;
	for (struct ap_thr *b = threads.all; b; b = b->next) {
		struct ap_tls *t = b->tls;
		if (__atomic_load_n(&b->live, __ATOMIC_ACQUIRE) && t) {
			calls += t->calls;
			consumed += t->consumed + (uint64_t)(t->interval - t->countdown);
		}
	}
	uint8_t buf[AP_CHUNK_HDR_LEN + 20 * 3 * AP_VARINT_MAX + REFUSED_PUT_MAX + SPAWN_PUT_MAX];
	uint8_t *p = buf + AP_CHUNK_HDR_LEN;
	size_t k = 0;
	k += ap_put_kv_uint(p + k, AP_EK_END_NS, now_ns(CLOCK_MONOTONIC));
	k += ap_put_kv_uint(p + k, AP_EK_REASON, reason);
	if (reason == AP_END_EXEC && exec_unfollowed)
		k += ap_put_kv_uint(p + k, AP_EK_UNFOLLOWED, 1);
	if (have_status)
		k += ap_put_kv_uint(p + k, AP_EK_STATUS, status);
	k += ap_put_kv_uint(p + k, AP_EK_CALLS, calls);
	k += ap_put_kv_uint(p + k, AP_EK_BYTES, consumed >= calls ? consumed - calls : 0);
	k += ap_put_kv_uint(p + k, AP_EK_CHUNKS, __atomic_load_n(&tfile.chunks, __ATOMIC_RELAXED));
	uint64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	k += ap_put_kv_uint(p + k, AP_EK_CPU_NS, cpu >= cpu0 ? cpu - cpu0 : cpu);
	uint64_t delay;
	if (run_delay_ns(&delay))
		k += ap_put_kv_uint(p + k, AP_EK_RUN_DELAY_NS,
				    sys_gettid() == delay_tid && delay >= delay0 ? delay - delay0 : delay);
	/* --all with the stack cache: the time unwinding took, which a
	 * replay's one call site, always in the cache, does not show */
	uint64_t unw = settings.all && sc_on ? unwind_ns_all() : 0;
	if (unw)
		k += ap_put_kv_uint(p + k, AP_EK_UNWIND_NS, unw);
	uint64_t vol, invol, minflt;
	if (usage(&vol, &invol, &minflt)) {
		k += ap_put_kv_uint(p + k, AP_EK_NVCSW, vol >= vol0 ? vol - vol0 : vol);
		k += ap_put_kv_uint(p + k, AP_EK_NIVCSW, invol >= invol0 ? invol - invol0 : invol);
		k += ap_put_kv_uint(p + k, AP_EK_MINFLT, minflt >= minflt0 ? minflt - minflt0 : minflt);
	}
	uint64_t waits = __atomic_load_n(&ring_waits, __ATOMIC_RELAXED);
	if (waits) {
		k += ap_put_kv_uint(p + k, AP_EK_SAMPLER_WAITS, waits);
		k += ap_put_kv_uint(p + k, AP_EK_SAMPLER_WAIT_NS,
				    __atomic_load_n(&ring_waited_ns, __ATOMIC_RELAXED));
	}
	k += refused_put(p + k);
	k += spawn_put(p + k);
	if (live_on && !malloc_owner()) {
		uint64_t slack;
		int64_t pk = live_peak_now(&slack);
		k += ap_put_kv_uint(p + k, AP_EK_LIVE_PEAK, pk > 0 ? (uint64_t)pk : 0);
		k += ap_put_kv_uint(p + k, AP_EK_LIVE_SLACK, slack);
	}
	/* At a normal exit: what the registered pools hold (pools.c), after
	 * the time taken. Not from a signal handler, nor at _exit (a forked
	 * child's pools may hold a lock of a thread it does not have). */
	uint8_t *pooled = NULL;
	void *map = NULL;
	size_t maplen = 0, npooled = 0;
	if (reason == AP_END_EXIT)
		npooled = pools_end_kv(sizeof(buf), &pooled, &map, &maplen);
	if (npooled) {
		/* the fixed keys and the header go right before the list */
		uint8_t *q = pooled - k;
		for (size_t i = 0; i < k; i++)
			q[i] = p[i];
		ap_chunk_header(q - AP_CHUNK_HDR_LEN, AP_CHUNK_END, tls.tid, AP_STREAM_NONE, 0, q,
				(uint32_t)(k + npooled));
		trace_write(q - AP_CHUNK_HDR_LEN, AP_CHUNK_HDR_LEN + k + npooled);
	} else {
		ap_chunk_header(buf, AP_CHUNK_END, tls.tid, AP_STREAM_NONE, 0, p, (uint32_t)k);
		trace_write(buf, AP_CHUNK_HDR_LEN + k);
	}
	if (map)
		munmap(map, maplen);
	__atomic_store_n(&tfile.end_done, 1, __ATOMIC_RELEASE);
	return 0;
}

/* A fatal signal found the trace ending in another thread (a second
 * SIGTERM, say: record forwards one while `pkill` or a process group's
 * kill sends the same one straight to the program): waits, up to 2 s,
 * for it to write END, since dying now would cut the trace before it.
 * The process dies of the signal after that, as it would have. */
void end_wait(void)
{
	uint32_t me = (uint32_t)sys_gettid();
	for (int i = 0; i < 2000; i++) {
		if (proc.pid != sys_getpid() ||
		    (__atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) != AP_ENDED &&
		     !__atomic_load_n(&tfile.final, __ATOMIC_ACQUIRE)) ||
		    __atomic_load_n(&tfile.end_done, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&tfile.ender, __ATOMIC_ACQUIRE) == me)
			return;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

