/* record/drain.c: `allocprof record`, the rings of the run's traces
 * drained while their processes run (record-int.h). A process recorded
 * by record holds no descriptor of its trace's: the sampler puts its
 * chunks in the ring of the trace's buffers file (ap_trace_buffers.h,
 * sampler/tracefile.c), and this thread appends them to the trace. It
 * looks at the rings it knows every millisecond while they bring chunks
 * (a few otherwise), and for new ones (a forked child's, an exec'd
 * image's: the files named after the run's trace) every 20 ms; each look
 * tells the sampler record is there (drained_ns: a sampler that finds its
 * ring full and record not looking for a second writes its trace
 * itself). The finisher of a run that leaves processes behind runs one
 * of its own (rec_drain_after_fork). */
#include "record-int.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/mman.h>

struct drained {
	char *path;
	struct ap_ring_drain d;
};

static struct {
	pthread_mutex_t mx;	/* the list, and a look at the rings */
	pthread_t th;
	bool on, stop, quiet;
	char *dir, *base;	/* the run's trace: its directory and name */
	size_t baselen;
	struct drained *t;
	size_t n, alloc;
	/* the traces whose process is gone, let go: never taken again (the
	 * finisher takes what their rings hold) */
	struct rec_names gone;
} dr = { .mx = PTHREAD_MUTEX_INITIALIZER };

#define SCAN_NS 20000000ull
#define IDLE_LOOKS 16		/* ~50 ms of looks that brought nothing */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool known(const char *path)
{
	for (size_t i = 0; i < dr.n; i++)
		if (!strcmp(dr.t[i].path, path))
			return true;
	for (size_t i = 0; i < dr.gone.n; i++)
		if (!strcmp(dr.gone.name[i], path))
			return true;
	return false;
}

/* The traces named after the run's whose buffers file has a ring in use
 * now: added (mx held). */
static void scan(void)
{
	DIR *d = opendir(dr.dir);
	if (!d)
		return;
	struct dirent *de;
	size_t sl = strlen(AP_BUFFERS_SUFFIX);
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (nl <= sl || strncmp(de->d_name, dr.base, dr.baselen) ||
		    strcmp(de->d_name + nl - sl, AP_BUFFERS_SUFFIX))
			continue;
		struct ap_buf path = AP_BUF_INIT;
		ap_buf_addf(&path, "%s/%.*s", dr.dir, (int)(nl - sl), de->d_name);
		if (known(path.buf)) {
			ap_buf_release(&path);
			continue;
		}
		struct drained x = { 0 };
		struct ap_error err = { 0 };
		if (ap_ring_drain_open(&x.d, path.buf, &err) == 1) {
			x.path = ap_xstrdup(path.buf);
			AP_ALLOC_GROW(dr.t, dr.n + 1, dr.alloc);
			dr.t[dr.n++] = x;
		}
		ap_buf_release(&path);
	}
	closedir(d);
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
	uint64_t scanned = 0;
	unsigned idle = 0;
	ssize_t bell = -1;
	for (;;) {
		pthread_mutex_lock(&dr.mx);
		if (dr.stop) {
			pthread_mutex_unlock(&dr.mx);
			break;
		}
		uint64_t now = mono_ns();
		bool sweep = now - scanned >= SCAN_NS;
		if (sweep) {
			scan();
			scanned = now;
		}
		ssize_t busiest;
		bool came = look(&busiest, sweep);
		idle = came ? 0 : idle + 1;
		if (came)
			bell = busiest;
		else if (bell >= (ssize_t)dr.n || bell < 0)
			bell = busiest;
		/* Looking every few ms costs record a context switch each
		 * (on the program's CPU, pinned): once every ring has been
		 * idle for IDLE_LOOKS looks, the drain sleeps on the doorbell
		 * of the ring that brought chunks last (the sampler rings it
		 * a quarter full), SCAN_NS at most */
		struct ap_ring_drain sleeper = { -1, -1, NULL, 0 };
		if (idle >= IDLE_LOOKS && bell >= 0)
			sleeper = dr.t[bell].d;
		pthread_mutex_unlock(&dr.mx);
		if (sleeper.map) {
			/* (the mapping stays: only this thread unmaps) */
			ap_ring_drain_sleep(&sleeper, SCAN_NS / 1000000);
		} else {
			struct timespec ts = { 0, came ? 1000000 : idle >= IDLE_LOOKS ? SCAN_NS : 3000000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void drain_thread(void)
{
	dr.stop = false;
	dr.on = pthread_create(&dr.th, NULL, drain_main, NULL) == 0;
}

void rec_drain_start(const char *trace, bool quiet)
{
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

/* The thread stopped, the rings let go (record's end). */
void rec_drain_stop(void)
{
	if (!dr.on)
		return;
	pthread_mutex_lock(&dr.mx);
	dr.stop = true;
	pthread_mutex_unlock(&dr.mx);
	pthread_join(dr.th, NULL);
	dr.on = false;
	for (size_t i = 0; i < dr.n; i++) {
		ap_ring_drain_close(&dr.t[i].d);
		free(dr.t[i].path);
	}
	free(dr.t);
	dr.t = NULL;
	dr.n = dr.alloc = 0;
	rec_names_release(&dr.gone);
	free(dr.dir);
	free(dr.base);
	dr.dir = dr.base = NULL;
}
