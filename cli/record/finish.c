/* record/finish.c: `allocprof record`, the end of a run: the wait, the sampler's buffers, the compaction, the child traces (record-int.h). */
#include "record-int.h"

#include <dirent.h>
#include <sys/random.h>

/* --compress-level's value (-1: not given), for every trace of the run. */
int rec_compress_level_opt = -1;

/* Where `allocprof symbols` reads the traces' files (its --symfs), or
 * NULL: record -p's /proc/PID/root, for a process of another mount
 * namespace or chroot. */
const char *rec_symfs;

/* The zstd level of the traces (0: count only, the file as the sampler
 * wrote it): --compress-level's, else ALLOCPROF_COMPACT_LEVEL's (0..19),
 * else AP_COMPACT_LEVEL. */
static int compact_level(void)
{
	if (rec_compress_level_opt >= 0)
		return rec_compress_level_opt;
	const char *lv = getenv("ALLOCPROF_COMPACT_LEVEL");
	if (lv && *lv >= '0' && *lv <= '9' && atoi(lv) <= 19)
		return atoi(lv);
	return AP_COMPACT_LEVEL;
}


/* Waits for the program. Meanwhile, once its trace (NULL: none) is big
 * enough to be compacted (until then it looks every 20 ms), compacts what
 * the sampler appended, every 5 ms once 256 KiB came, on the core the
 * program is not using: an --all trace grows by ~100 MB/s on a tight
 * loop, and compacting it all after the exit took as long as the run;
 * what is left at the exit is the tail the user waits for (at 20 ms and
 * 1 MiB, record --all of bench/realloc took 5 % longer: 0.565 s against
 * 0.537, 31 interleaved pairs). The signalfd of the relay wakes us the moment the
 * program exits (SIGCHLD) and forwards what record is sent meanwhile; a
 * program stopped by job control stops record too (relay_stop). *stream
 * is the live stream at the end, or NULL (never started, or given up: see
 * ap_compact_stream_feed). */
int rec_wait_program(pid_t pid, int *status, const char *trace,
		     struct ap_compact_stream **stream, struct relay *r)
{
	int level = trace ? compact_level() : 0;
	off_t fed = 0;
	/* every 20 ms until the trace is big enough to be compacted (a
	 * sampled run mostly never is), then every 5 ms */
	int wait_ms = 20;
	for (;;) {
		rec_relay_signals(r);
		pid_t w = waitpid(pid, status, WNOHANG | WUNTRACED);
		if (w == pid && WIFSTOPPED(*status)) {
			rec_relay_stop(r, WSTOPSIG(*status));
			continue;
		}
		if (w == pid)
			break;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			ap_say("waitpid: %s", strerror(errno));
			ap_compact_stream_abandon(*stream);
			*stream = NULL;
			return -1;
		}
		/* a signal (SIGCHLD when the program ends) wakes us */
		struct pollfd p = { .fd = r->sfd, .events = POLLIN };
		if (poll(&p, 1, level > 0 ? wait_ms : -1) != 0)
			continue;
		struct stat sb;
		if (stat(trace, &sb) < 0 || sb.st_size < (off_t)AP_COMPACT_MIN_BYTES)
			continue;
		wait_ms = 5;
		if (sb.st_size - fed < (off_t)(256u << 10))
			continue;
		if (!*stream)
			*stream = ap_compact_stream_start(trace, level);
		if (!*stream || ap_compact_stream_feed(*stream) < 0) {
			/* after the exit, as a whole */
			ap_compact_stream_abandon(*stream);
			*stream = NULL;
			level = 0;
			continue;
		}
		fed = sb.st_size;
	}
	return 0;
}

/* The system calls the program's seccomp filter refused to the sampler,
 * from the last END's `refused` key ("nr:errno ...", docs/trace-format.md),
 * as one line: which, and what that cost the trace. "" if none. END is
 * never compressed: only the chunk headers and that payload are read. */
/* The payload of the trace's last END into pl (at most cap bytes: a
 * longer one is not read); its length, or 0. */
static size_t last_end(const char *path, uint8_t *pl, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	uint8_t h[AP_CHUNK_HDR_LEN];
	ssize_t plen = -1;
	for (off_t off = AP_TRACE_PREAMBLE_LEN; off + AP_CHUNK_HDR_LEN <= st.st_size;) {
		if (pread(fd, h, sizeof(h), off) != (ssize_t)sizeof(h) ||
		    ap_get_u32le(h) != AP_CHUNK_MAGIC)
			break;
		uint32_t len = ap_get_u32le(h + 12);
		if (h[4] == AP_CHUNK_END)
			plen = len <= cap ? pread(fd, pl, len, off + AP_CHUNK_HDR_LEN) : -1;
		off += AP_CHUNK_HDR_LEN + (off_t)len;
	}
	close(fd);
	return plen > 0 ? (size_t)plen : 0;
}

static void end_refused(const char *path, char *line, size_t cap)
{
	line[0] = 0;
	uint8_t pl[512];
	const uint8_t *p = pl, *end = pl + last_end(path, pl, sizeof(pl));
	const char *list = NULL;
	uint64_t key, kind, v, n = 0;
	while (p < end && ap_get_uv(&p, end, &key) == 0 && ap_get_uv(&p, end, &kind) == 0 &&
	       ap_get_uv(&p, end, &v) == 0) {
		if (kind != AP_KV_STR)
			continue;
		if (v > (uint64_t)(end - p))
			break;
		if (key == AP_EK_REFUSED) {
			list = (const char *)p;
			n = v;
		}
		p += v;
	}
	if (!list || !n)
		return;
	/* the calls the sampler notes, by their x86-64 numbers */
	static const struct {
		long nr;
		const char *name, *cost;
	} calls[] = {
		{ SYS_newfstatat, "newfstatat", "the trace's descriptor went unchecked" },
		{ SYS_gettid, "gettid", "threads started since have made-up ids" },
		{ SYS_getpid, "getpid", "the process could not tell a vfork child from itself" },
		{ SYS_openat, "openat", "a trace it had to open (a forked child's, or this one "
					"again) was not: those events are lost" },
		{ SYS_getrusage, "getrusage", "the trace has no context switches or page faults "
					      "of its process (advise does without them)" },
		{ SYS_sched_getaffinity, "sched_getaffinity", "the trace does not say which CPUs "
							      "the process could use" },
		{ SYS_read, "read", "the trace has no time its threads waited for a CPU" },
		{ SYS_rt_sigprocmask, "rt_sigprocmask", "the unwinder checked addresses with "
							"process_vm_readv instead" },
		{ SYS_fcntl, "fcntl", "its trace's descriptor stayed where it was opened (a "
				      "number the program could meet), unlocked, and was not "
				      "handed to an image it exec'd (which made a trace of its own)" },
	};
	char names[256] = "", costs[512] = "";
	int err = 0;
	for (const char *q = list, *qe = list + n; q < qe;) {
		char *e;
		long nr = strtol(q, &e, 10);
		int er = *e == ':' ? (int)strtol(e + 1, &e, 10) : 0;
		if (e == q)
			break;
		if (!err)
			err = er;
		const char *name = NULL, *cost = NULL;
		for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
			if (calls[i].nr == nr)
				name = calls[i].name, cost = calls[i].cost;
		size_t nl = strlen(names), cl = strlen(costs);
		if (name)
			snprintf(names + nl, sizeof(names) - nl, "%s%s", nl ? ", " : "", name);
		else
			snprintf(names + nl, sizeof(names) - nl, "%ssystem call %ld", nl ? ", " : "", nr);
		if (cost)
			snprintf(costs + cl, sizeof(costs) - cl, "%s%s", cl ? "; " : "", cost);
		while (q < qe && *q != ' ')
			q++;
		while (q < qe && *q == ' ')
			q++;
	}
	snprintf(line, cap, "%s: the program's seccomp filter refused %s to the sampler (%s): %s",
		 path, names,
		 err ? strerror(err) : "the filter kills for them: the sampler did without",
		 costs[0] ? costs : "the trace went on without them");
}

/* A finished trace: compressed in place (ap_trace_compact: the sampler
 * writes small raw chunks; the program's own trace is mostly compressed
 * already, by `stream`, while the program ran), then its summary line,
 * counted on the way (the reader would hold every event in memory, and an
 * --all trace of a long run holds hundreds of millions). A trace that
 * cannot be compressed (corrupt) is left as it was and said so. `status`:
 * the wait status of the process that wrote it, if known (the program). */
/* CLOCK_MONOTONIC (the clock of the traces' times) in ns. */
uint64_t rec_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The trace's records left in its buffers file (the sampler's buffers,
 * which outlive its process: trace/ap_trace_buffers.h) appended, and the
 * END its process could not write added: for the program, from its wait
 * `status` and the time it ended (`end_ns`); for a process record is not
 * the parent of (status NULL), "gone", about when its files last changed.
 * What was done goes to *fin; a failure is said in one line. */
bool rec_finish_buffers(const char *path, const int *status, uint64_t end_ns,
			struct ap_finished *fin)
{
	struct ap_death how = { AP_END_GONE, false, 0, end_ns };
	if (status && WIFSIGNALED(*status)) {
		how.reason = AP_END_KILLED;
		how.status_known = true;
		how.status = (uint64_t)WTERMSIG(*status);
	} else if (status && WIFEXITED(*status)) {
		how.reason = AP_END_RAW_EXIT;
		how.status_known = true;
		how.status = (uint64_t)WEXITSTATUS(*status);
	} else {
		ap_death_gone(path, &how);
	}
	struct ap_error err;
	if (ap_trace_finish_buffers(path, &how, fin, &err) < 0)
		ap_say("%s", err.msg);
	return !fin->busy;
}

/* The value of HEADER key `key` in the trace at `path`: a string
 * (AP_KV_STR, malloc'd into *str) or a number (*num). Returns whether the
 * key was there. Reads only the first chunk, never compressed. */
static bool header_key(const char *path, uint64_t key_wanted, char **str, uint64_t *num)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	uint8_t h[AP_CHUNK_HDR_LEN];
	bool found = false;
	if (pread(fd, h, sizeof(h), AP_TRACE_PREAMBLE_LEN) == (ssize_t)sizeof(h) &&
	    ap_get_u32le(h) == AP_CHUNK_MAGIC && h[4] == AP_CHUNK_HEADER &&
	    ap_get_u32le(h + 12) <= AP_CHUNK_MAX_PAYLOAD) {
		uint32_t len = ap_get_u32le(h + 12);
		uint8_t *pl = ap_xmalloc(len ? len : 1);
		if (pread(fd, pl, len, AP_TRACE_PREAMBLE_LEN + AP_CHUNK_HDR_LEN) == (ssize_t)len) {
			const uint8_t *p = pl, *end = pl + len;
			uint64_t key, kind, v;
			while (!found && p < end && !ap_get_uv(&p, end, &key) &&
			       !ap_get_uv(&p, end, &kind) && !ap_get_uv(&p, end, &v)) {
				if (kind == AP_KV_STR && v > (uint64_t)(end - p))
					break;
				if (key == key_wanted && kind == AP_KV_STR && str) {
					struct ap_buf b = AP_BUF_INIT;
					ap_buf_add(&b, p, (size_t)v);
					*str = ap_buf_detach(&b, NULL);
					found = true;
				} else if (key == key_wanted && kind == AP_KV_UINT && num) {
					*num = v;
					found = true;
				}
				if (kind == AP_KV_STR)
					p += v;
			}
		}
		free(pl);
	}
	close(fd);
	return found;
}

/* The HEADER's malloc_owner (malloc'd), or NULL: the object whose malloc
 * the program's calls reached instead of the sampler's. */
static char *trace_malloc_owner(const char *path)
{
	char *owner = NULL;
	header_key(path, AP_HK_MALLOC_OWNER, &owner, NULL);
	return owner;
}

/* The programs of the run that ran unprofiled: images exec'd with an
 * environment that no longer preloads the sampler (END's `unfollowed`,
 * docs/trace-format.md), counted as their traces are finished, and who
 * exec'd the first two, for record's summary (rec_say_unfollowed). */
static size_t n_unfollowed;
static char *unfollowed_by[2];
/* ... and those started with posix_spawn so (END's `spawn_unfollowed`),
 * with who started the first two processes' */
static uint64_t n_spawned;
static size_t n_spawners;
static char *spawned_by[2];

/* "pid N (its command line)" of the trace at `path`, from its HEADER; the
 * command line as a shell would take it, escaped for the terminal, cut at
 * ~160 bytes. */
static char *trace_who(const char *path)
{
	char *cmd = NULL;
	uint64_t pid = 0;
	header_key(path, AP_HK_PID, NULL, &pid);
	struct ap_buf b = AP_BUF_INIT, words = AP_BUF_INIT, safe = AP_BUF_INIT;
	ap_buf_addf(&b, "pid %llu", (unsigned long long)pid);
	if (header_key(path, AP_HK_CMDLINE, &cmd, NULL) && cmd && cmd[0]) {
		/* (HEADER's string has its arguments NUL-separated; header_key
		 * gave it a NUL after) */
		size_t len = 0;
		while (cmd[len] || cmd[len + 1])
			len++;
		for (const char *a = cmd; a < cmd + len + 1; a += strlen(a) + 1) {
			if (a != cmd)
				ap_buf_addstr(&words, " ");
			ap_buf_add_shell_word(&words, a);
		}
		size_t cut = words.len;
		if (cut > 160) {
			cut = 160;
			while (cut && ((unsigned char)words.buf[cut] & 0xc0) == 0x80)
				cut--; /* (not inside a UTF-8 character) */
			words.buf[cut] = 0;
		}
		ap_buf_addf(&b, " (%s%s)", ap_safe_name(&safe, words.buf),
			    cut < words.len ? "..." : "");
	}
	free(cmd);
	ap_buf_release(&words);
	ap_buf_release(&safe);
	return ap_buf_detach(&b, NULL);
}

/* Counts the trace at `path` if its process exec'd a program that ran
 * unprofiled (its last END: reason exec, `unfollowed` 1). */
static void count_unfollowed(const char *path)
{
	uint8_t pl[512];
	const uint8_t *p = pl, *end = pl + last_end(path, pl, sizeof(pl));
	uint64_t key, kind, v, reason = 0, unfollowed = 0, spawned = 0;
	while (p < end && ap_get_uv(&p, end, &key) == 0 && ap_get_uv(&p, end, &kind) == 0 &&
	       ap_get_uv(&p, end, &v) == 0) {
		if (kind == AP_KV_STR) {
			if (v > (uint64_t)(end - p))
				break;
			p += v;
		} else if (key == AP_EK_REASON) {
			reason = v;
		} else if (key == AP_EK_UNFOLLOWED) {
			unfollowed = v;
		} else if (key == AP_EK_SPAWN_UNFOLLOWED) {
			spawned = v;
		}
	}
	if (spawned) {
		if (n_spawners < 2)
			spawned_by[n_spawners] = trace_who(path);
		n_spawners++;
		n_spawned += spawned;
	}
	if (reason != AP_END_EXEC || !unfollowed)
		return;
	if (n_unfollowed < 2)
		unfollowed_by[n_unfollowed] = trace_who(path);
	n_unfollowed++;
}

/* "pid 1 (a)", "pid 1 (a) and pid 2 (b)", "pid 1 (a), pid 2 (b) and 3 more"
 * of the first two of n processes */
static void add_who(struct ap_buf *by, char *const who[2], size_t n)
{
	ap_buf_addstr(by, who[0]);
	if (n == 2)
		ap_buf_addf(by, " and %s", who[1]);
	else if (n > 2)
		ap_buf_addf(by, ", %s and %zu more", who[1], n - 2);
}

void rec_say_unfollowed(bool quiet)
{
	size_t n = n_unfollowed;
	struct ap_buf by = AP_BUF_INIT;
	if (n && !quiet) {
		add_who(&by, unfollowed_by, n);
		fprintf(stderr, "allocprof: %zu program%s exec'd with an environment that no longer "
			"preloads the sampler (clearenv, env -i) ran unprofiled, not in the run: "
			"exec'd by %s\n", n, n == 1 ? "" : "s", by.buf);
	}
	if (n_spawned && !quiet) {
		ap_buf_reset(&by);
		add_who(&by, spawned_by, n_spawners);
		fprintf(stderr, "allocprof: %llu program%s started with posix_spawn and an environment "
			"that no longer preloads the sampler ran unprofiled, not in the run: started "
			"by %s\n", (unsigned long long)n_spawned, n_spawned == 1 ? "" : "s", by.buf);
	}
	ap_buf_release(&by);
	for (size_t i = 0; i < 2; i++) {
		free(unfollowed_by[i]);
		unfollowed_by[i] = NULL;
		free(spawned_by[i]);
		spawned_by[i] = NULL;
	}
	n_unfollowed = 0;
	n_spawned = 0;
	n_spawners = 0;
}

uint64_t rec_trace_start_ns(const char *path)
{
	uint64_t ns = 0;
	header_key(path, AP_HK_START_REALTIME_NS, NULL, &ns);
	return ns;
}

/* Whether the child trace at `path`, begun at `began`, is of the run of
 * `main_pid` that began at since_ns, while a later run at the same -o
 * began at upto_ns (UINT64_MAX: none): its HEADER's run_pid says whose
 * run it is (a daemon's child forked, or image exec'd, after the later
 * run began is still its own run's; the start guards against a pid
 * reused by a later run's program, and run_id, when both runs said
 * theirs, against a program of a later run with the pid of an earlier
 * run's); a trace of before run_pid, by its start alone. */
static bool of_this_run(const char *path, uint64_t began, pid_t main_pid, uint64_t since_ns,
			uint64_t upto_ns, uint64_t run_id)
{
	uint64_t run = 0, id = 0;
	if (!began)
		return true; /* no HEADER yet: its process is at its start */
	/* (run_id: a later run's program may have the pid of an earlier
	 * run's, the next in a pid namespace of its own, say) */
	if (run_id && header_key(path, AP_HK_RUN_ID, NULL, &id) && id != run_id)
		return false;
	if (header_key(path, AP_HK_RUN_PID, NULL, &run))
		return run == (uint64_t)main_pid && began >= since_ns;
	return began >= since_ns && began < upto_ns;
}

const char *rec_program_trace(const char *output, pid_t pid, uint64_t run_id, char *buf,
			      size_t size)
{
	struct stat st;
	if (stat(output, &st) == 0 && st.st_size > 0)
		return output;
	/* trace_create's names: the first free one of <output>-2, -3, ... */
	for (unsigned k = 2; k <= 1000; k++) {
		uint64_t hp = 0, id = 0;
		if ((size_t)snprintf(buf, size, "%s-%u", output, k) >= size || lstat(buf, &st) < 0)
			break;
		if (S_ISREG(st.st_mode) && header_key(buf, AP_HK_PID, NULL, &hp) &&
		    hp == (uint64_t)pid &&
		    !(run_id && header_key(buf, AP_HK_RUN_ID, NULL, &id) && id != run_id))
			return buf;
	}
	return output;
}

uint64_t rec_new_run_id(void)
{
	uint64_t id = 0;
	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		id = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^
		     (uint64_t)getpid() << 32;
	}
	id &= (1ull << 48) - 1;
	return id ? id : 1;
}

/* The program's trace keeps its symbols through a helper started with
 * the program (`allocprof symbols --ready-fd`): while the program runs it
 * opens the files the trace's frames are in, on the core the program
 * leaves (reading libc6-dbg's compressed DWARF alone took 35 ms of the
 * ~45 ms record spent on the symbols after the exit); keep_symbols then
 * tells it `go` and waits. Closing fd without `go` ends it. */
static struct {
	pid_t pid;	/* -1: none */
	int fd;		/* the pipe's end we write */
	char *path;	/* the trace it follows */
} ahead = { -1, -1, NULL };

/* What rec_finish_trace leaves to be done while the symbols are kept
 * (the helper's work after `go`, 6 ms at bench/realloc's, on the core
 * the program has left): the stream's memory freed (its tables and
 * buffers, 2.5 ms), and the pages of the trace as the sampler wrote it
 * dropped (23 MB there: 3 ms) once the compacted trace has its name:
 * record's own exit would free them after the helper's end instead. */
static struct {
	struct ap_compact_stream *stream; /* finished, not yet freed */
	int raw;			  /* rec_finish_raw_fd's */
} later_work = { NULL, -1 };

void rec_finish_raw_fd(int fd)
{
	later_work.raw = fd;
}

static void while_symbols(void)
{
	ap_compact_stream_abandon(later_work.stream); /* (finished: only freed) */
	later_work.stream = NULL;
	int fd = later_work.raw;
	later_work.raw = -1;
	struct stat st;
	/* Only with no name left (the compacted trace was renamed over it:
	 * nothing can open it by its name again) and no other descriptor or
	 * mapping of it anywhere: a write lease is refused while another
	 * one is open (a follower's, `tui --follow` or --live's view, maps
	 * it, and would fault on pages cut). The run's lock stays on it. An
	 * open meanwhile (by /proc/PID/fd: it has no name) waits for the
	 * lease's end, and its break signal is SIGURG, ignored (SIGIO's
	 * default would end record). */
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 ||
	    st.st_size == 0 || fcntl(fd, F_SETSIG, SIGURG) < 0 ||
	    fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
		return;
	if (ftruncate(fd, 0) < 0) {
		/* (left as it is: its pages go with the descriptor) */
	}
	fcntl(fd, F_SETLEASE, F_UNLCK);
}

#ifdef AP_LAUNCHER
void rec_symbols_ahead(const char *path)
{
	if (rec_no_symbols || ahead.pid > 0)
		return;
	int p[2];
	if (pipe(p) < 0)
		return;
	/* ours closed on exec (no other child holds it, and the helper sees
	 * its end when we are gone); the helper's inherited as it is */
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	char level[16], fd[16], report[PATH_MAX + 64];
	snprintf(level, sizeof(level), "%d", compact_level());
	snprintf(fd, sizeof(fd), "%d", p[0]);
	ap_report_path(report, sizeof(report));
	char *argv[] = {(char *)"allocprof", (char *)"symbols", (char *)"-q",
			(char *)"--if-finished", (char *)"--compress-level", level,
			(char *)"--ready-fd", fd, (char *)"--", (char *)path, NULL};
	/* With record's mask while the program runs, every signal blocked: a
	 * Ctrl-C to the process group leaves it, as it left the symbols of a
	 * run that ended so; it ends with the pipe. */
	fflush(NULL);
	pid_t pid;
	int e = posix_spawn(&pid, report, NULL, NULL, argv, environ);
	close(p[0]);
	if (e) {
		close(p[1]); /* keep_symbols runs it as before, and says so */
		return;
	}
	ahead.pid = pid;
	ahead.fd = p[1];
	ahead.path = ap_xstrdup(path);
}

/* The helper's exit status once told `go` (or not: go false), or -1 */
static int ahead_end(bool go)
{
	if (ahead.pid <= 0)
		return -1;
	if (go) {
		ssize_t w;
		while ((w = write(ahead.fd, "g", 1)) < 0 && errno == EINTR)
			;
		if (w != 1)
			go = false;
	}
	if (go)
		while_symbols();
	close(ahead.fd);
	if (!go)
		kill(ahead.pid, SIGKILL); /* nothing of it is wanted */
	int st;
	pid_t w;
	while ((w = waitpid(ahead.pid, &st, 0)) < 0 && errno == EINTR)
		;
	ahead.pid = -1;
	ahead.fd = -1;
	free(ahead.path);
	ahead.path = NULL;
	return w > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#else
void rec_symbols_ahead(const char *path)
{
	(void)path;
}

static int ahead_end(bool go)
{
	(void)go;
	return -1;
}
#endif

void rec_symbols_ahead_end(void)
{
	ahead_end(false);
}

void rec_names_add(struct rec_names *l, char *name)
{
	AP_ALLOC_GROW(l->name, l->n + 1, l->alloc);
	l->name[l->n++] = name;
}

void rec_names_release(struct rec_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->name[i]);
	free(l->name);
	memset(l, 0, sizeof(*l));
}

/* Child traces per `allocprof symbols` run: its command line stays far
 * below ARG_MAX */
#define SYMBOLS_BATCH 256

/* The traces keep their frames' names and lines (allocprof symbols, in
 * allocprof-report: the launcher links no symbolizer), SYMBOLS_BATCH
 * traces per run: the traces of one run share their files (libc, the
 * program), which one run opens and reads once for all of them (each
 * `ls` of a shell loop cost ~75 ms of libc6-dbg's DWARF, run by run). */
static void keep_symbols(char *const *paths, size_t n)
{
	if (n == 1 && ahead.pid > 0 && !strcmp(ahead.path, paths[0])) {
		if (ahead_end(true))
			ap_say("%s: the trace keeps no symbols: the reports name its frames "
			       "from the program's files", paths[0]);
		return;
	}
	char level[16];
	snprintf(level, sizeof(level), "%d", compact_level());
	for (size_t at = 0; at < n; at += SYMBOLS_BATCH) {
		size_t k = n - at < SYMBOLS_BATCH ? n - at : SYMBOLS_BATCH;
		char *argv[9 + SYMBOLS_BATCH] = {(char *)"symbols", (char *)"-q",
			(char *)"--if-finished", (char *)"--compress-level", level};
		int na = 5;
		if (rec_symfs) {
			argv[na++] = (char *)"--symfs";
			argv[na++] = (char *)rec_symfs;
		}
		argv[na++] = (char *)"--";
		memcpy(argv + na, paths + at, k * sizeof(*argv));
		argv[na + k] = NULL;
#ifdef AP_LAUNCHER
		int rc = ap_run_report_child(argv);
#else
		int rc = cmd_symbols((int)(na + k), argv);
#endif
		if (rc && k == 1)
			ap_say("%s: the trace keeps no symbols: the reports name its frames "
			       "from the program's files", paths[at]);
		else if (rc)
			ap_say("%s and %zu more child traces: some keep no symbols: the reports "
			       "name their frames from the program's files", paths[at], k - 1);
	}
}

/* While set (rec_finish_children), finished traces are listed here and
 * keep their symbols together at the end */
static struct rec_names *symbols_later;

/* How many traces a child trace's line is said for (rec_finish_children):
 * with more, one line counts them instead, and only those that ended
 * abnormally are named, at most this many. A shell loop's run has a
 * trace per process (860 lines for 2 s of `seq | sort | gzip`). */
#define CHILD_LINES 3

/* While set (rec_finish_children, quiet or not), a warning of a child
 * trace's is said once for all the traces it is true of: the first
 * trace's line, then how many more (a shell loop's processes, each with
 * a malloc of its own, made a line each). */
enum { WARN_REFUSED, WARN_OWNER, WARN_KINDS };
static struct child_warns {
	size_t n[WARN_KINDS];
	char *first[WARN_KINDS];
} *child_warns;

/* Says `line` (a whole line, "allocprof: ...\n", freed here), or keeps
 * it for child_warns_say. */
static void warn_line(int kind, char *line)
{
	struct child_warns *w = child_warns;
	if (!w) {
		fputs(line, stderr);
		free(line);
	} else if (w->n[kind]++) {
		free(line);
	} else {
		w->first[kind] = line;
	}
}

static void child_warns_say(struct child_warns *w, const char *output)
{
	static const char *const too[WARN_KINDS] = {
		[WARN_REFUSED] = "system calls of the sampler's refused",
		[WARN_OWNER] = "a program with a malloc of its own",
	};
	for (int k = 0; k < WARN_KINDS; k++) {
		if (!w->first[k])
			continue;
		fputs(w->first[k], stderr);
		if (w->n[k] > 1)
			fprintf(stderr, "allocprof: and in %zu more child trace%s %s.*: %s\n",
				w->n[k] - 1, w->n[k] == 2 ? "" : "s", output, too[k]);
		free(w->first[k]);
	}
}

/* What becomes of a trace left live (rec_say_live, child_tally_say). */
#define LIVE_THEN "finished (compacted, its symbols kept) once"

/* While set (rec_finish_children, not quiet), the child traces' lines
 * are kept here, and said by child_tally_say. */
static struct child_tally {
	size_t n;		/* child traces finished */
	uint64_t events;
	size_t odd;		/* of them, ended abnormally */
	struct rec_names line;	/* the first CHILD_LINES lines */
	struct rec_names odd_line; /* those of the first CHILD_LINES odd ones */
	size_t live;		/* child traces left live */
	struct rec_names live_line; /* the first CHILD_LINES lines of those */
	/* Their processes (a process that exec'd has two: its fork's,
	 * which the new image will not write again, and its exec's, each
	 * left to the finisher while it runs), the first CHILD_LINES
	 * first: live_procs of them. */
	pid_t *live_pid;
	size_t live_procs, live_pid_alloc;
} *child_tally;

static void child_tally_add(struct child_tally *t, char *line, uint64_t events, bool odd)
{
	t->n++;
	t->events += events;
	if (odd && t->odd++ < CHILD_LINES)
		rec_names_add(&t->odd_line, ap_xstrdup(line));
	if (t->line.n < CHILD_LINES)
		rec_names_add(&t->line, line);
	else
		free(line);
}

/* Up to CHILD_LINES child traces, each one's line; more, one line that
 * counts them (the name they share, their events, how many ended
 * abnormally), then the lines of those that did (the first few). So for
 * the traces left live: a daemon's workers, or a shell's background
 * jobs, are counted with the first few processes named. */
static void child_tally_say(const struct child_tally *t, const char *output)
{
	if (t->live <= CHILD_LINES) {
		for (size_t i = 0; i < t->live_line.n; i++)
			fputs(t->live_line.name[i], stderr);
	} else {
		fprintf(stderr, "allocprof: %zu child traces %s.* are still being written by %zu "
			"process%s that outlived the program (", t->live, output, t->live_procs,
			t->live_procs == 1 ? "" : "es");
		size_t shown = t->live_procs < CHILD_LINES ? t->live_procs : CHILD_LINES;
		for (size_t i = 0; i < shown; i++)
			fprintf(stderr, "%s%d", i ? ", " : "", (int)t->live_pid[i]);
		if (t->live_procs > shown)
			fprintf(stderr, " and %zu more", t->live_procs - shown);
		fprintf(stderr, "); each trace is %s its process exits\n", LIVE_THEN);
	}
	if (t->n <= CHILD_LINES) {
		for (size_t i = 0; i < t->line.n; i++)
			fputs(t->line.name[i], stderr);
		return;
	}
	fprintf(stderr, "allocprof: %zu child traces %s.* (%llu event%s)", t->n, output,
		(unsigned long long)t->events, t->events == 1 ? "" : "s");
	if (!t->odd)
		fprintf(stderr, ", each ended normally\n");
	else if (t->odd <= CHILD_LINES)
		fprintf(stderr, "; %zu ended abnormally:\n", t->odd);
	else
		fprintf(stderr, "; %zu ended abnormally, the first %d:\n", t->odd, CHILD_LINES);
	for (size_t i = 0; i < t->odd_line.n; i++)
		fputs(t->odd_line.name[i], stderr);
}

/* What a SIGSYS says: a seccomp filter killed the process for a system
 * call, which may be the program's own (it dies so without us too) as
 * well as one the sampler makes; record cannot tell which. */
#define SIGSYS_WHY "a seccomp filter's, for a system call of the program's or one the " \
		   "sampler makes: see SECCOMP in allocprof-record(1)"

/* Whether a trace of `size` bytes as the sampler wrote it, without an
 * END, stopped at the file size limit: the program's RLIMIT_FSIZE
 * (record's, which the program inherited) leaves no room for one more
 * chunk (sampler/buffer.c writes chunks of at most 64 KiB, smaller under
 * a small limit). *limit: the limit. */
static bool stopped_by_fsize(off_t size, unsigned long long *limit)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return false;
	*limit = (unsigned long long)rl.rlim_cur;
	return (unsigned long long)size + AP_SAMPLER_CHUNK + 4096 > rl.rlim_cur;
}

void rec_finish_trace(const char *path, const char *what, bool quiet,
		      struct ap_compact_stream *stream, const int *status,
		      const struct ap_finished *fin)
{
	struct stat st;
	int missing = stat(path, &st) < 0;
	if (missing || st.st_size == 0) {
		/* (errno is stale after a stat that worked) */
		ap_say("%s: no trace was written (%s): the program was not profiled "
			   "(did it clear LD_PRELOAD, or is it statically linked?)",
			   path, missing ? "missing" : "empty");
		ap_compact_stream_abandon(stream);
		return;
	}
	struct ap_compact_stats c;
	struct ap_error err;
	if (stream ? ap_compact_stream_finish_keep(stream, &c, &err) < 0
		   : ap_trace_compact(path, compact_level(), &c, &err) < 0) {
		ap_compact_stream_abandon(stream);
		ap_say("%s", err.msg[0] ? err.msg : "the trace could not be compacted; it is left "
			   "as the sampler wrote it");
		return;
	}
	later_work.stream = stream; /* freed while the symbols are kept */
	count_unfollowed(path);
	char refusal[1024];
	end_refused(path, refusal, sizeof(refusal));
	if (refusal[0]) {
		struct ap_buf lb = AP_BUF_INIT;
		ap_buf_addf(&lb, "allocprof: %s\n", refusal);
		warn_line(WARN_REFUSED, ap_buf_detach(&lb, NULL));
	}
	if (!rec_no_symbols && symbols_later)
		rec_names_add(symbols_later, ap_xstrdup(path));
	else if (!rec_no_symbols)
		keep_symbols((char *const *)&path, 1);
	while_symbols(); /* (if keep_symbols did not) */
	char *owner = trace_malloc_owner(path);
	if (owner) {
		struct ap_buf safe = AP_BUF_INIT, lb = AP_BUF_INIT; /* a file the program names */
		ap_buf_addf(&lb, "allocprof: %s: the program has a malloc of its own (in %s): its "
			    "allocations never reach the sampler, and the trace does not count them\n",
			    path, ap_safe_name(&safe, owner));
		ap_buf_release(&safe);
		warn_line(WARN_OWNER, ap_buf_detach(&lb, NULL));
	}
	free(owner);
	if (quiet)
		return;
	char trunc[300] = "";
	unsigned long long limit = 0;
	/* the sampler's trace stopped at a chunk that did not fit: the END
	 * added from its buffers file says so, and why */
	bool stopped = fin && fin->reason == AP_END_STOPPED;
	if (c.cut)
		snprintf(trunc, sizeof(trunc), "file ends inside a chunk at byte %llu",
			 (unsigned long long)c.cut_at);
	else if ((!c.has_end || stopped) && stopped_by_fsize(st.st_size, &limit))
		snprintf(trunc, sizeof(trunc), "the trace reached the file size "
			 "limit (RLIMIT_FSIZE, %llu bytes: ulimit -f) at byte %llu and stops "
			 "there, the program ran on; raise the limit to record it whole",
			 limit, (unsigned long long)st.st_size);
	else if (!c.has_end && status && WIFSIGNALED(*status))
		snprintf(trunc, sizeof(trunc), "no end record: the program was killed by SIG%s%s",
			 sigabbrev_np(WTERMSIG(*status)) ? sigabbrev_np(WTERMSIG(*status)) : "?",
			 WTERMSIG(*status) == SIGSYS ? " (" SIGSYS_WHY ")" : "");
	else if (!c.has_end && status)
		snprintf(trunc, sizeof(trunc), "no end record, though the program exited "
			 "with status %d", WEXITSTATUS(*status));
	else if (stopped)
		ap_trace_stop_why(fin->stop_errno, trunc, sizeof(trunc));
	else if (!c.has_end)
		snprintf(trunc, sizeof(trunc), "no end record: the process ended in a way the "
			 "sampler cannot see (SIGKILL, say)");
	char late[320] = "";
	bool late_odd = fin && fin->end_added && fin->reason >= AP_END_KILLED && !stopped;
	if (late_odd) {
		int sys = status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGSYS;
		const char *how = sys ? "killed by SIGSYS (" SIGSYS_WHY ")"
				  : fin->reason == AP_END_KILLED ? "killed by a signal it cannot catch"
				  : fin->reason == AP_END_RAW_EXIT
				      ? "ended by the exit_group system call, without exit()"
				      : "gone without an end record";
		snprintf(late, sizeof(late), "; the process was %s: %llu chunk%s from its "
			 "buffers, and its end", how, (unsigned long long)fin->chunks,
			 fin->chunks == 1 ? "" : "s");
	} else if (fin && fin->chunks && !stopped) {
		snprintf(late, sizeof(late), "; %llu chunk%s from its buffers (what it did "
			 "after its end record)", (unsigned long long)fin->chunks,
			 fin->chunks == 1 ? "" : "s");
	}
	struct ap_buf lb = AP_BUF_INIT;
	ap_buf_addf(&lb, "allocprof: %s %s (%llu event%s, %zu thread%s%s%s%s)\n", what, path,
		    (unsigned long long)c.events, c.events == 1 ? "" : "s", c.nthreads, c.nthreads == 1 ? "" : "s",
		    trunc[0] ? "; truncated: " : "", trunc, late);
	char *line = ap_buf_detach(&lb, NULL);
	if (child_tally) {
		/* (truncated, or the process gone without its end) */
		child_tally_add(child_tally, line, c.events, trunc[0] || late_odd);
		return;
	}
	fputs(line, stderr);
	free(line);
}

/* A trace is live while some process holds the writer's lock the sampler
 * takes on it: an OFD lock on its open file, which a forked child shares
 * until it has opened a trace of its own, and which goes when the last
 * process holding the file exits or execs. Never rewrite a live trace:
 * its writer would go on appending to the file the rename unlinked. */
bool rec_trace_is_live(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	struct flock lk = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = AP_LOCK_WRITER_LEN };
	bool live = fcntl(fd, F_OFD_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
	close(fd);
	return live;
}

/* How long a trace whose own process is gone may stay live: a forked
 * child holds its parent's trace only until it has opened its own. */
#define RELEASE_WAIT_MS 2000

/* Waits up to RELEASE_WAIT_MS for `path` to stop being live; true if it
 * is not live (any more). */
bool rec_wait_released(const char *path)
{
	for (int ms = 0; ms < RELEASE_WAIT_MS; ms += 2) {
		if (!rec_trace_is_live(path))
			return true;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	return !rec_trace_is_live(path);
}

/* When process `pid` started (/proc/PID/stat's starttime, in clock
 * ticks since boot), or 0 if unknown. */
static unsigned long long pid_start(pid_t pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	line[n] = 0;
	/* after the command's ")" (which may hold spaces): state is field 3,
	 * starttime 22 */
	char *p = strrchr(line, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* The processes rec_pid_alive has seen, and when each started: a pid
 * whose process started at another time since is another process's (a
 * daemon killed, its pid reused), and the one seen is gone. Inherited by
 * the finisher. */
static struct {
	pid_t pid;
	unsigned long long start;
} *seen_pids;
static size_t n_seen, seen_alloc;

bool rec_pid_alive(pid_t pid)
{
	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return false;
	unsigned long long start = pid_start(pid);
	if (!start)
		return true; /* (no /proc: as kill says) */
	for (size_t i = 0; i < n_seen; i++)
		if (seen_pids[i].pid == pid)
			return seen_pids[i].start == start;
	AP_ALLOC_GROW(seen_pids, n_seen + 1, seen_alloc);
	seen_pids[n_seen].pid = pid;
	seen_pids[n_seen++].start = start;
	return true;
}

unsigned long long rec_self_start(void)
{
	return pid_start(getpid());
}

/* Whether the process of a child trace named by `who` may still be
 * running: a pid alive now, the program's, or one whose process started
 * since record did (span->record_start): a pid of a pid namespace of the
 * run's own names another process outside it, which started before
 * record when it is a kernel thread or a process of before the run. */
static bool child_alive(pid_t who, pid_t main_pid, const struct rec_span *span)
{
	if (!rec_pid_alive(who))
		return false;
	if (who == main_pid || !span->record_start)
		return true;
	unsigned long long start = pid_start(who);
	return !start || start >= span->record_start;
}

/* Whether process `pid` may run the sampler: liballocprof.so in its
 * mappings, or its mappings not to be read. */
static bool runs_sampler(pid_t pid)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/liballocprof.so") != NULL;
	found |= ferror(f) != 0;
	fclose(f);
	return found;
}

/* Whether the trace at `path` has an END chunk: its process ended, or
 * exec'd into an image with a trace of its own. Reads only the chunk
 * headers. */
static bool trace_has_end(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	bool end = false;
	uint8_t h[AP_CHUNK_HDR_LEN];
	for (off_t off = AP_TRACE_PREAMBLE_LEN; !end && off + AP_CHUNK_HDR_LEN <= st.st_size;) {
		if (pread(fd, h, sizeof(h), off) != (ssize_t)sizeof(h) ||
		    ap_get_u32le(h) != AP_CHUNK_MAGIC)
			break;
		end = h[4] == AP_CHUNK_END;
		off += AP_CHUNK_HDR_LEN + (off_t)ap_get_u32le(h + 12);
	}
	close(fd);
	return end;
}

/* Tells where the trace of a process that outlived the program is, and
 * (`later`) that record's finisher (rec_finish_later) finishes it. */
void rec_say_live(const char *path, const char *what, pid_t pid, bool alive, bool quiet,
		  bool later)
{
	if (quiet)
		return; /* the trace is as it should be: nothing went wrong */
	struct ap_buf lb = AP_BUF_INIT;
	const char *then = later ? "it is " LIVE_THEN : "the trace is complete once";
	if (alive)
		ap_buf_addf(&lb, "allocprof: %s %s: process %d is still running and writing it; "
			    "%s it exits\n", what, path, (int)pid, then);
	else
		ap_buf_addf(&lb, "allocprof: %s %s: still open in a process the program started; "
			    "%s that process exits\n", what, path, then);
	char *line = ap_buf_detach(&lb, NULL);
	struct child_tally *t = child_tally; /* (set only while child traces are finished) */
	if (!t) {
		fputs(line, stderr);
		free(line);
		return;
	}
	if (t->live < CHILD_LINES)
		rec_names_add(&t->live_line, line);
	else
		free(line);
	t->live++;
	size_t i = 0;
	while (i < t->live_procs && t->live_pid[i] != pid)
		i++;
	if (i == t->live_procs) {
		AP_ALLOC_GROW(t->live_pid, t->live_procs + 1, t->live_pid_alloc);
		t->live_pid[t->live_procs++] = pid;
	}
}

/* The pid whose trace a child suffix names (".<pid>..."); ".exec<n>" is an
 * image of the program itself, `main_pid`. */
static pid_t suffix_pid(const char *suffix, pid_t main_pid)
{
	if (suffix[1] < '0' || suffix[1] > '9')
		return main_pid;
	return (pid_t)strtol(suffix + 1, NULL, 10);
}

static bool listed(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* The buffers file of trace `path`, if it is one of this user's regular
 * files (never what a link points to). */
static void unlink_buffers(const char *path)
{
	struct ap_buf side = AP_BUF_INIT;
	ap_buf_addf(&side, "%s%s", path, AP_BUFFERS_SUFFIX);
	struct stat st;
	if (lstat(side.buf, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		unlink(side.buf);
	ap_buf_release(&side);
}

/* Finishes the child traces of `output` except live ones
 * (trace_is_live, or without END while their process runs), which are
 * named instead (unless `said`: the finisher's later calls); those in
 * `done` were finished before, and those finished now join it. A live
 * trace whose process is gone is held by a child of that process which
 * has not opened its own trace yet: once it is released, the directory
 * is read again for that child's trace. Returns how many child traces
 * there are, *live how many of them are left live. */
size_t rec_finish_children(const char *output, const struct rec_span *span, bool quiet,
			   pid_t main_pid, const int *main_status, uint64_t main_end_ns,
			   struct rec_names *done, size_t *live_left)
{
	struct rec_names live_now = { 0 }, finished = { 0 };
	symbols_later = &finished;
	struct child_tally tally = { 0 };
	struct child_warns warns = { 0 };
	if (!quiet)
		child_tally = &tally;
	child_warns = &warns;
	size_t olen = strlen(output);
	for (bool again = true; again;) {
		again = false;
		char **names;
		size_t n = ap_trace_children(output, (time_t)(span->since_ns / 1000000000u), &names);
		/* A later record given the same -o (its trace at `output`
		 * now, begun after ours) owns the child traces begun since;
		 * read after the listing, so that a child trace listed has
		 * its program's HEADER there */
		uint64_t upto = rec_trace_start_ns(output);
		if (!upto || upto == span->main_start_ns)
			upto = UINT64_MAX;
		for (size_t i = 0; i < n; i++) {
			/* another run's (an earlier run's daemon, still writing,
			 * and the children it makes while this run is on: its
			 * record's finisher finishes them): of_this_run */
			uint64_t began = rec_trace_start_ns(names[i]);
			if (listed(done->name, done->n, names[i]) ||
			    listed(live_now.name, live_now.n, names[i]) ||
			    !of_this_run(names[i], began, main_pid, span->since_ns, upto, span->run_id)) {
				free(names[i]);
				continue;
			}
			pid_t who = suffix_pid(names[i] + olen, main_pid);
			bool live = rec_trace_is_live(names[i]);
			bool held = live;
			bool alive = child_alive(who, main_pid, span);
			if (live && !alive && rec_wait_released(names[i])) {
				live = false;
				again = true;
			}
			/* a process that closed every descriptor holds no lock,
			 * but may open its trace again to go on */
			if (!live && who != main_pid && alive && !trace_has_end(names[i]))
				live = true;
			/* Empty: a trace made for an image that never came (a
			 * root process that dropped to another user makes its
			 * next image's trace before, sampler/creds.c), removed
			 * once nothing holds it and its process is gone, or
			 * runs an image without the sampler (exec'd with an
			 * environment of its own: nothing opens it again, and
			 * the finisher waited for a daemon's whole life); while
			 * it is held, waited for without a word. Its buffers
			 * file goes with it: a process killed as its image's
			 * sampler started made both and wrote no header (a
			 * shell loop stopped by Ctrl-C left a 1.1 MB one). */
			struct stat est;
			if (stat(names[i], &est) == 0 && est.st_size == 0) {
				if (!held && alive && !runs_sampler(who))
					alive = false;
				if (!held && !alive) {
					unlink(names[i]);
					unlink_buffers(names[i]);
					rec_names_add(done, names[i]);
					continue;
				}
				if (live) {
					rec_names_add(&live_now, names[i]);
					continue;
				}
			}
			if (live) {
				rec_say_live(names[i], "child trace", who, alive, quiet, true);
				rec_names_add(&live_now, names[i]);
			} else {
				/* an image of the program (.exec<n>) ended as the
				 * program did; any other process unseen */
				struct ap_finished fin;
				if (rec_finish_buffers(names[i], who == main_pid ? main_status : NULL,
						       main_end_ns, &fin))
					rec_finish_trace(names[i], "child trace", quiet, NULL, NULL, &fin);
				rec_names_add(done, names[i]); /* (or another's, finishing it) */
			}
		}
		free(names);
	}
	symbols_later = NULL;
	child_tally = NULL;
	child_warns = NULL;
	child_warns_say(&warns, output);
	child_tally_say(&tally, output);
	rec_names_release(&tally.line);
	rec_names_release(&tally.odd_line);
	rec_names_release(&tally.live_line);
	free(tally.live_pid);
	keep_symbols(finished.name, finished.n);
	rec_names_release(&finished);
	*live_left = live_now.n;
	rec_names_release(&live_now);
	return done->n + *live_left;
}

/* Closes every descriptor from `first` on but `keep`, at any number (a
 * caller's pipe at 1500 kept open would keep its reader waiting for the
 * daemon's whole life): close_range, else what /proc/self/fd lists, else
 * each up to the descriptor limit. */
static void close_all_but(int first, int keep)
{
	unsigned lo = (unsigned)first, k = keep >= first ? (unsigned)keep : 0;
	if (k ? (k == lo || syscall(SYS_close_range, lo, k - 1, 0) == 0) &&
		    syscall(SYS_close_range, k + 1, ~0u, 0) == 0
	      : syscall(SYS_close_range, lo, ~0u, 0) == 0)
		return;
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		int *fds = NULL;
		size_t n = 0, alloc = 0;
		struct dirent *de;
		while ((de = readdir(d))) {
			int fd = atoi(de->d_name);
			if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && fd >= first &&
			    fd != keep && fd != dirfd(d)) {
				AP_ALLOC_GROW(fds, n + 1, alloc);
				fds[n++] = fd;
			}
		}
		closedir(d);
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		free(fds);
		return;
	}
	struct rlimit rl;
	int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
			  rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : 1 << 20;
	for (int fd = first; fd < max; fd++)
		if (fd != keep)
			close(fd);
}

/* Traces the run left live, a daemon's (a process that outlives the
 * program) or the program's own (held by a child that has not opened its
 * trace yet), are finished once their processes are gone by a process of
 * record's that outlives it: their buffers' last records appended, then
 * compacted with their symbols kept and their buffers files removed, as
 * record does for the others. It is in a session of its own, its
 * standard descriptors on /dev/null (a caller reading record's output
 * sees its end when record ends), and holds the run's lock (`run_fd`,
 * on the program's trace as it was before it was finished: a later record
 * may take -o, and owns the child traces begun after it, `span`) until it
 * is done; it looks every 200 ms, every 2 s after a minute (a
 * daemon may run for months). Returns its pid, or -1. */
pid_t rec_finish_later(const char *output, const struct rec_span *span, pid_t main_pid,
		       const int *main_status, uint64_t main_end_ns, bool main_live,
		       struct rec_names *done, int run_fd)
{
	fflush(NULL);
	rec_drain_before_fork();
	pid_t pid = fork();
	rec_drain_after_fork(pid == 0);
	if (pid != 0)
		return pid;
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd <= 2 && null >= 0; fd++)
		if (fd != null)
			dup2(null, fd);
	close_all_but(3, run_fd);
	rec_drain_restart();
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	size_t left = 1;
	for (unsigned looks = 0; main_live || left; looks++) {
		struct timespec ts = { looks < 300 ? 0 : 2, looks < 300 ? 200000000 : 0 };
		nanosleep(&ts, NULL);
		if (main_live && !rec_trace_is_live(output)) {
			struct ap_finished fin;
			if (rec_finish_buffers(output, main_status, main_end_ns, &fin))
				rec_finish_trace(output, "wrote", true, NULL, main_status, &fin);
			main_live = false;
		}
		rec_finish_children(output, span, true, main_pid, main_status, main_end_ns, done,
				    &left);
	}
	_exit(0);
}
