/* record/drain.c: `allocprof record`, the rings of the run's traces
 * drained while their processes run (record-int.h). A process recorded
 * by record holds no descriptor of its trace's: the sampler puts its
 * chunks in the ring of the trace's buffers file (ap_trace_buffers.h,
 * sampler/tracefile.c), and this thread appends them to the trace. It
 * looks at the rings it knows every millisecond while they bring chunks
 * (a few otherwise), and for new ones (a forked child's, an exec'd
 * image's: the files named after the run's trace) as an inotify watch of
 * the directory names them, every 20 ms (a directory read each second
 * besides, and every 20 ms where inotify cannot be had); each look
 * tells the sampler record is there (drained_ns: a sampler that finds its
 * ring full and record not looking for a second writes its trace
 * itself). The finisher of a run that leaves processes behind runs one
 * of its own (rec_drain_after_fork). */
#include "record-int.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/mman.h>

struct drained {
	char *path;
	struct ap_ring_drain d;
};

static struct {
	pthread_mutex_t mx;	/* the list, and a look at the rings */
	pthread_cond_t cv;	/* the sleep without a ring to sleep on: stop wakes it */
	pthread_t th;
	bool on, stop, quiet;
	bool unwatch;		/* the program is gone: the watch is closed */
	char *dir, *base;	/* the run's trace: its directory and name */
	char *main_trace;	/* the run's trace as given */
	uint64_t run_id;	/* the run's number: other runs' rings are theirs */
	size_t baselen;
	struct drained *t;
	size_t n, alloc;
	/* the traces whose process is gone, let go: never taken again (the
	 * finisher takes what their rings hold) */
	struct rec_names gone;
	/* traces whose ring is not in use yet (its process is starting):
	 * asked again at every look, not only at the next scan (the program's
	 * own first: it may fill its ring before the next scan) */
	struct rec_names pending;
} dr = { .mx = PTHREAD_MUTEX_INITIALIZER };

#define SCAN_NS 20000000ull
#define FULL_SCAN_NS 1000000000ull	/* with inotify: in case it missed one */
#define IDLE_LOOKS 16		/* ~50 ms of looks that brought nothing */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* clk's time ns from now (a deadline for the timed waits below). */
static struct timespec deadline_in(clockid_t clk, long ns)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += ns;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static bool known(const char *path)
{
	for (size_t i = 0; i < dr.n; i++)
		if (!strcmp(dr.t[i].path, path))
			return true;
	for (size_t i = 0; i < dr.pending.n; i++)
		if (!strcmp(dr.pending.name[i], path))
			return true;
	for (size_t i = 0; i < dr.gone.n; i++)
		if (!strcmp(dr.gone.name[i], path))
			return true;
	return false;
}

/* The trace at path taken if its ring is in use (mx held). */
static bool adopt(const char *path)
{
	struct drained x = { 0 };
	struct ap_error err = { 0 };
	if (ap_ring_drain_open(&x.d, path, dr.run_id, &err) != 1)
		return false;
	x.path = ap_xstrdup(path);
	AP_ALLOC_GROW(dr.t, dr.n + 1, dr.alloc);
	dr.t[dr.n++] = x;
	return true;
}

/* Whether the buffers file `side` of a trace whose ring is taken (path)
 * is another file than every ring taken under that name: a new image's
 * (an image that recorded nothing hands its trace on, and the next one
 * makes the buffers file anew). Not yet pending either (mx held). */
static bool renewed(const char *path, const char *side)
{
	struct stat now, was;
	bool taken = false;
	if (stat(side, &now) < 0)
		return false;
	for (size_t i = 0; i < dr.n; i++) {
		if (strcmp(dr.t[i].path, path))
			continue;
		taken = true;
		if (fstat(dr.t[i].d.sfd, &was) == 0 && was.st_ino == now.st_ino &&
		    was.st_dev == now.st_dev)
			return false;
	}
	for (size_t i = 0; taken && i < dr.pending.n; i++)
		if (!strcmp(dr.pending.name[i], path))
			return false;
	return taken;
}

/* A file of the directory: if it is the buffers file of a trace named
 * after the run's, that trace added if its ring is in use, pending if not
 * yet (mx held). A name whose ring is taken already, made anew, is
 * pending too: the watch says it once, and the ring before, stopped, may
 * not have been let go yet (its new ring was found by the next second's
 * read only, the program waiting on its full ring until then). */
static void found(const char *name)
{
	size_t nl = strlen(name), sl = strlen(AP_BUFFERS_SUFFIX);
	if (nl <= sl || strncmp(name, dr.base, dr.baselen) ||
	    strcmp(name + nl - sl, AP_BUFFERS_SUFFIX))
		return;
	struct ap_buf path = AP_BUF_INIT, side = AP_BUF_INIT;
	ap_buf_addf(&path, "%s/%.*s", dr.dir, (int)(nl - sl), name);
	ap_buf_addf(&side, "%s/%s", dr.dir, name);
	if (known(path.buf) ? renewed(path.buf, side.buf) : !adopt(path.buf))
		rec_names_add(&dr.pending, ap_xstrdup(path.buf));
	ap_buf_release(&side);
	ap_buf_release(&path);
}

/* Every file of the directory (mx held). */
static void scan(void)
{
	DIR *d = opendir(dr.dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		found(de->d_name);
	closedir(d);
}

/* A watch of the run's directory for files made or moved there (-1: none
 * to be had: no inotify, or its limits reached). */
static int watch_open(int *wd)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd >= 0 && (*wd = inotify_add_watch(fd, dr.dir, IN_CREATE | IN_MOVED_TO |
									IN_ONLYDIR)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The watch removed, then closed: closing an inotify descriptor waits
 * for the kernel to destroy its marks (a grace period: 8-24 ms here,
 * which `record --no-symbols /bin/true` waited for at its end, joining
 * this thread); a watch removed first is mostly destroyed by then, and
 * that run took 8 ms instead of 14-17 (medians). */
static void watch_close(int fd, int wd)
{
	inotify_rm_watch(fd, wd);
	close(fd);
}

/* What the watch saw since the last call, each file made taken as
 * `found` takes it (mx held); false if it lost events (its queue
 * overflowed, a read failed): then only a scan tells. */
static bool watch_read(int fd)
{
	_Alignas(struct inotify_event) char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const void *)(buf + off);
			if (ev->mask & IN_Q_OVERFLOW)
				return false;
			if (ev->len && ev->name[0])
				found(ev->name);
			off += (ssize_t)sizeof(*ev) + ev->len;
		}
	}
}

/* The pending traces asked again: those whose ring is in use now taken,
 * those without a buffers file any more forgotten (mx held). */
static void pending_look(void)
{
	for (size_t i = 0; i < dr.pending.n;) {
		char *p = dr.pending.name[i];
		struct ap_buf side = AP_BUF_INIT;
		ap_buf_addf(&side, "%s%s", p, AP_BUFFERS_SUFFIX);
		bool there = access(side.buf, F_OK) == 0;
		ap_buf_release(&side);
		/* (the run's own trace stays asked until it is there) */
		if ((!there && strcmp(p, dr.main_trace)) || adopt(p)) {
			free(p);
			dr.pending.name[i] = dr.pending.name[--dr.pending.n];
			continue;
		}
		i++;
	}
}

/* One look at every ring (mx held); whether chunks came. *busiest: the
 * ring that brought the most (the first one when none did), -1 none.
 * `sweep`: rings whose process is gone (their writer's lock let go)
 * are let go after a last look: record holds descriptors and mappings
 * for the processes that run, not for every process of the run. */
static bool look(ssize_t *busiest, bool sweep)
{
	bool came = false;
	uint64_t most = 0;
	*busiest = dr.n ? 0 : -1;
	for (size_t i = 0; i < dr.n;) {
		uint64_t bytes;
		bool gone = sweep && ap_ring_drain_writer_gone(&dr.t[i].d);
		int r = ap_ring_drain(&dr.t[i].d, &bytes);
		if (gone && r == 0)
			r = 1; /* (the finisher takes the rest) */
		came |= bytes > 0;
		if (r == 0 && bytes > most) {
			most = bytes;
			*busiest = (ssize_t)i;
		}
		if (r < 0 && !dr.quiet)
			ap_say("%s: %s: the trace ends here; the program goes on", dr.t[i].path,
			       strerror(errno));
		if (r != 0) {
			/* done with: its process gone (never taken again), or
			 * the ring no longer in use */
			ap_ring_drain_close(&dr.t[i].d);
			if (gone)
				rec_names_add(&dr.gone, dr.t[i].path);
			else
				free(dr.t[i].path);
			dr.t[i] = dr.t[--dr.n];
			if (*busiest >= (ssize_t)dr.n)
				*busiest = dr.n ? 0 : -1;
			continue;
		}
		i++;
	}
	return came;
}

static void *drain_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* record's signals are the relay's */
	uint64_t scanned = 0, swept = 0;
	unsigned idle = 0;
	ssize_t bell = -1;
	/* (its own: a finisher's thread does not share record's) */
	int wd = -1, watch = watch_open(&wd);
	for (;;) {
		pthread_mutex_lock(&dr.mx);
		if (dr.stop) {
			pthread_mutex_unlock(&dr.mx);
			break;
		}
		if (dr.unwatch && watch >= 0) {
			/* (here, while record finishes the trace, not at its
			 * end: see watch_close) */
			pthread_mutex_unlock(&dr.mx);
			watch_close(watch, wd);
			watch = -1;
			continue;
		}
		uint64_t now = mono_ns();
		bool sweep = now - swept >= SCAN_NS;
		if (sweep)
			swept = now;
		/* the directory read where the watch cannot say (a big
		 * directory read every 20 ms cost record 30 ms of CPU a
		 * second with 2,000 files there) */
		bool rescan = now - scanned >= (watch >= 0 ? FULL_SCAN_NS : SCAN_NS);
		if (sweep && watch >= 0 && !watch_read(watch))
			rescan = true;
		if (rescan) {
			scan();
			scanned = now;
		}
		if (dr.pending.n)
			pending_look();
		ssize_t busiest;
		bool came = look(&busiest, sweep);
		idle = came ? 0 : idle + 1;
		if (came)
			bell = busiest;
		else if (bell >= (ssize_t)dr.n || bell < 0)
			bell = busiest;
		/* The drain sleeps on the doorbell of the ring that brought
		 * chunks last (the sampler rings it once its ring is a quarter
		 * full: a busy program never waits for the next look), 1 ms
		 * after a look that took chunks, 3 ms after, 20 ms once every
		 * ring has been idle for IDLE_LOOKS looks (a look costs record
		 * a context switch, on the program's CPU when pinned) */
		unsigned ms = came ? 1 : idle >= IDLE_LOOKS ? (unsigned)(SCAN_NS / 1000000) : 3;
		/* the program's own ring not found yet: it starts now, and may
		 * fill its ring before a longer sleep is over */
		if (dr.main_trace && dr.pending.n && !strcmp(dr.pending.name[0], dr.main_trace))
			ms = 1;
		struct ap_ring_drain sleeper = { -1, -1, NULL, 0 };
		if (bell >= 0)
			sleeper = dr.t[bell].d;
		pthread_mutex_unlock(&dr.mx);
		if (sleeper.map) {
			/* (the mapping stays: only this thread unmaps) */
			ap_ring_drain_sleep(&sleeper, ms);
		} else {
			struct timespec ts = deadline_in(CLOCK_MONOTONIC, (long)ms * 1000000);
			pthread_mutex_lock(&dr.mx);
			if (!dr.stop)
				pthread_cond_timedwait(&dr.cv, &dr.mx, &ts);
			pthread_mutex_unlock(&dr.mx);
		}
	}
	if (watch >= 0)
		watch_close(watch, wd);
	return NULL;
}

static void drain_thread(void)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dr.cv, &ca);
	pthread_condattr_destroy(&ca);
	dr.stop = dr.unwatch = false;
	dr.on = pthread_create(&dr.th, NULL, drain_main, NULL) == 0;
}

void rec_drain_start(const char *trace, uint64_t run_id, bool quiet)
{
	dr.run_id = run_id;
	const char *slash = strrchr(trace, '/');
	if (slash) {
		dr.dir = ap_xstrdup(trace);
		dr.dir[slash == trace ? 1 : slash - trace] = 0;
	} else {
		dr.dir = ap_xstrdup(".");
	}
	dr.base = ap_xstrdup(slash ? slash + 1 : trace);
	dr.baselen = strlen(dr.base);
	dr.quiet = quiet;
	/* the program's own trace, asked at every look until its ring is in
	 * use (its buffers file may not be there yet either) */
	dr.main_trace = ap_xstrdup(trace);
	rec_names_add(&dr.pending, ap_xstrdup(trace));
	drain_thread();
}

/* Around a fork of record's (its finisher): the thread holds no lock of
 * the list meanwhile, and the child, which has no thread of it, starts
 * its own. */
void rec_drain_before_fork(void)
{
	if (dr.on)
		pthread_mutex_lock(&dr.mx);
}

void rec_drain_after_fork(bool child)
{
	if (!dr.on)
		return;
	pthread_mutex_unlock(&dr.mx);
	if (!child)
		return;
	/* the child closes every descriptor it was given (the rings' traces'
	 * too): the rings are looked up again */
	dr.on = false;
}

/* In the child, once it has closed the descriptors it was given: a drain
 * thread of its own, which finds the rings again. */
void rec_drain_restart(void)
{
	if (!dr.base || dr.on)
		return;
	for (size_t i = 0; i < dr.n; i++) {
		if (dr.t[i].d.map)
			munmap(dr.t[i].d.map, dr.t[i].d.maplen);
		free(dr.t[i].path);
	}
	dr.n = 0;
	drain_thread();
}

/* Wakes the thread: wait, what stop and unwatch say is to be done. */
static void drain_wake(void)
{
	pthread_cond_broadcast(&dr.cv);
	for (size_t i = 0; i < dr.n; i++)
		ap_ring_drain_wake(&dr.t[i].d);
}

/* The program has exited: the watch of the directory goes now (a forked
 * child's ring is still found, by the directory's reads), so that record's
 * end does not wait for its close. */
void rec_drain_unwatch(void)
{
	if (!dr.on)
		return;
	pthread_mutex_lock(&dr.mx);
	dr.unwatch = true;
	drain_wake();
	pthread_mutex_unlock(&dr.mx);
}

/* The thread stopped, the rings let go (record's end). */
void rec_drain_stop(void)
{
	if (!dr.on)
		return;
	/* Woken from its sleep (20 ms once the rings are idle: record's end
	 * waited for it, 10 ms on average), on the ring it may be about to
	 * sleep on as often as it takes. */
	for (;;) {
		pthread_mutex_lock(&dr.mx);
		dr.stop = true;
		drain_wake();
		pthread_mutex_unlock(&dr.mx);
		/* (pthread_timedjoin_np's clock is CLOCK_REALTIME) */
		struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000);
		int e = pthread_timedjoin_np(dr.th, NULL, &ts);
		if (e != ETIMEDOUT)
			break;
	}
	pthread_cond_destroy(&dr.cv);
	dr.on = false;
	for (size_t i = 0; i < dr.n; i++) {
		ap_ring_drain_close(&dr.t[i].d);
		free(dr.t[i].path);
	}
	free(dr.t);
	dr.t = NULL;
	dr.n = dr.alloc = 0;
	rec_names_release(&dr.gone);
	rec_names_release(&dr.pending);
	free(dr.main_trace);
	dr.main_trace = NULL;
	free(dr.dir);
	free(dr.base);
	dr.dir = dr.base = NULL;
}
