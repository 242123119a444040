/* `allocprof record`: runs a program with liballocprof.so preloaded and
 * says where its trace went. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_buffers.h"
#include "ap_trace_compact.h"
#include "ap_trace_encode.h"
#include "commands.h"
#include "record/attach.h"
#include "record-live.h"

#define SAMPLER_SO "liballocprof.so"

static void record_usage(FILE *f)
{
	fputs("usage: allocprof record [OPTIONS] [--] PROGRAM [ARGS...]\n"
	      "       allocprof record -p PID [--duration SECONDS] [OPTIONS]\n\n"
	      "Runs PROGRAM with the allocprof sampler preloaded (LD_PRELOAD) and\n"
	      "writes its allocation trace. Options end at the first argument that\n"
	      "is not one, so the program's own options pass through.\n"
	      "With -p, attaches to the running process PID instead (ptrace: the\n"
	      "same user, or root), records until Ctrl-C, --duration or its exit,\n"
	      "and detaches: the process runs on as before, with the descriptors\n"
	      "it had. An exec, a crash or an _exit while attached ends the trace\n"
	      "there, with everything recorded up to it.\n\n"
	      "options:\n"
	      "  -p, --pid PID      attach to the running process PID (see ATTACH in\n"
	      "                     allocprof-record(1)); the trace's default name is\n"
	      "                     allocprof.<name>.<PID>.trace\n"
	      "      --duration SECONDS\n"
	      "                     with -p: detach after SECONDS (decimals allowed;\n"
	      "                     default: at Ctrl-C, SIGTERM, SIGHUP or the\n"
	      "                     process's exit)\n"
	      "  -o, --output PATH  trace file (default: allocprof.<program>.<pid>.trace\n"
	      "                     in the current directory, <pid> the program's); an\n"
	      "                     existing trace or empty file is replaced, a symbolic\n"
	      "                     link followed, /dev/null discards the trace, anything\n"
	      "                     else is refused, and so is a trace another record\n"
	      "                     (or a process of an earlier run) is writing\n"
	      "      --rate BYTES   mean bytes between samples (default 512K; accepts\n"
	      "                     suffixes K, M, G; 1 records every allocation)\n"
	      "      --all          record every allocation and free (same as --rate 1)\n"
	      "      --max-depth N  stack depth cap (default 64, at most 256)\n"
	      "      --no-children  profile only PROGRAM, not the programs it runs\n"
	      "                     nor the processes it forks\n"
	      "      --compress-level N\n"
	      "                     the zstd level of the trace, 0 to 19 (default 3,\n"
	      "                     with 15 on chunks that pack well); higher levels\n"
	      "                     make most traces a little smaller and record take\n"
	      "                     longer to finish; 0 leaves it as the sampler wrote it\n"
	      "      --no-symbols   do not keep the names, files and lines of the\n"
	      "                     trace's frames in it (by default they are added\n"
	      "                     when the trace is finished, so that reports read\n"
	      "                     it after the program is rebuilt, upgraded or gone)\n"
	      "      --live         show the live view (allocprof tui --follow) on the\n"
	      "                     trace while the program runs: the terminal is the\n"
	      "                     view's, the program's input /dev/null and its output\n"
	      "                     and errors in TRACE.out (named on the status line);\n"
	      "                     record says what it has to say once the view is quit\n"
	      "  -q, --quiet        no summary line at the end, nor lines about traces\n"
	      "                     still written by processes that outlive PROGRAM\n"
	      "  -h, --help         show this help\n\n"
	      "Processes PROGRAM forks write <output>.<pid>; an image that replaced\n"
	      "itself with exec after recording events leaves its trace, and the new\n"
	      "image writes <trace>.exec<n>; a program run with an environment that\n"
	      "no longer preloads the sampler (env -i, env -u LD_PRELOAD) runs\n"
	      "unprofiled, as without record. A name already taken gets -2, -3, ...\n"
	      "(<output>.<pid>-2): no file there is overwritten. A process still running when PROGRAM\n"
	      "exits (a daemon) keeps writing its trace: record names it and leaves\n"
	      "it as it is; it is complete once that process exits.\n\n"
	      "Every signal sent to allocprof goes on to PROGRAM, once (one sent to\n"
	      "the process group reaches it directly); Ctrl-Z stops both. A program\n"
	      "ended by a signal (Ctrl-C, timeout, SIGPIPE, a crash) leaves a\n"
	      "complete trace of what it did until then. So does one killed by\n"
	      "SIGKILL or ended by the exit_group system call: the sampler's\n"
	      "buffers are a file (<trace>.buffers) that record adds to the trace\n"
	      "once the process is gone.\n\n"
	      "Exit status: PROGRAM's own; if it died of a signal, allocprof dies of\n"
	      "the same signal (no core of its own) once the trace is finished; 1 if it\n"
	      "could not be run (not found, not executable, statically linked,\n"
	      "setuid or setgid: LD_PRELOAD cannot reach those) or its trace could\n"
	      "not be written (see -o); 2 for bad usage.\n"
	      "Environment: ALLOCPROF_PRELOAD overrides where liballocprof.so is\n"
	      "looked for; ALLOCPROF_COMPACT_LEVEL (0-19) is --compress-level's\n"
	      "default; ALLOCPROF_COMPACT_NO_THREAD=1 compacts the trace on\n"
	      "record's own thread only (the same file, later).\n",
	      f);
}

struct record_opts {
	const char *output;
	uint64_t rate;
	unsigned max_depth;
	bool no_children;
	bool quiet;
	bool no_symbols;
	int compress_level; /* -1: ALLOCPROF_COMPACT_LEVEL's, else the default */
	pid_t attach;	    /* -p: 0 none */
	uint64_t duration;  /* --duration, ns (0: none) */
	bool live;	    /* --live: the live view while it runs (record-live.c) */
};

/* --no-symbols: finished traces keep no SYMBOLS chunks */
static bool no_symbols;

/* Option value: "--opt VALUE" or "--opt=VALUE". */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static bool opt_is(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(arg, name, n) && (arg[n] == 0 || arg[n] == '=');
}

/* The value of option `name`, a number from lo to hi, into *out: 0, or
 * the usage error's exit status. */
static int opt_number(int argc, char **argv, int *i, const char *name, uint64_t lo, uint64_t hi,
		      uint64_t *out)
{
	const char *v = opt_value(argc, argv, i, name);
	if (!v)
		return ap_usage_error("record", "%s needs a number", name);
	char *end;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || *v < '0' || *v > '9' || *end || *out < lo || *out > hi)
		return ap_usage_error("record", "%s: '%s' is not a number from %llu to %llu", name,
				      v, (unsigned long long)lo, (unsigned long long)hi);
	return 0;
}

static int parse_opts(int argc, char **argv, struct record_opts *o, int *first)
{
	int i, rc;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			record_usage(stdout);
			return -1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--all")) {
			o->rate = 1;
		} else if (!strcmp(a, "--no-children")) {
			o->no_children = true;
		} else if (!strcmp(a, "--no-symbols")) {
			o->no_symbols = true;
		} else if (!strcmp(a, "--live")) {
			o->live = true;
		} else if (!strcmp(a, "-o") || opt_is(a, "--output")) {
			if (!(v = opt_value(argc, argv, &i, a[1] == 'o' ? "-o" : "--output")) || !*v)
				return ap_usage_error("record", "%s needs a path", a);
			o->output = v;
		} else if (!strncmp(a, "-o", 2)) {
			o->output = a + 2;
		} else if (opt_is(a, "--rate")) {
			if (!(v = opt_value(argc, argv, &i, "--rate")))
				return ap_usage_error("record", "--rate needs a size");
			if (ap_parse_size(v, &o->rate) < 0 || o->rate == 0)
				return ap_usage_error("record", "--rate: '%s' is not a size in bytes (like 512K)", v);
		} else if (opt_is(a, "--compress-level")) {
			uint64_t l;
			if ((rc = opt_number(argc, argv, &i, "--compress-level", 0, 19, &l)))
				return rc;
			o->compress_level = (int)l;
		} else if (!strcmp(a, "-p") || opt_is(a, "--pid")) {
			uint64_t p;
			if ((rc = opt_number(argc, argv, &i, a[1] == 'p' ? "-p" : "--pid", 1,
					     INT32_MAX, &p)))
				return rc;
			o->attach = (pid_t)p;
		} else if (opt_is(a, "--duration")) {
			char *end;
			double d;
			if (!(v = opt_value(argc, argv, &i, "--duration")))
				return ap_usage_error("record", "--duration needs a number of seconds");
			errno = 0;
			d = strtod(v, &end);
			if (errno || end == v || *end || !(d >= 0.001 && d <= 1e9))
				return ap_usage_error("record", "--duration: '%s' is not a number of "
						      "seconds from 0.001 to 1e9", v);
			o->duration = (uint64_t)(d * 1e9);
		} else if (opt_is(a, "--max-depth")) {
			uint64_t d;
			if ((rc = opt_number(argc, argv, &i, "--max-depth", 1, AP_MAX_DEPTH_CAP,
					     &d)))
				return rc;
			o->max_depth = (unsigned)d;
		} else {
			return ap_usage_error("record", "unknown option '%s'", a);
		}
	}
	if (o->attach && i < argc)
		return ap_usage_error("record", "-p attaches to a running process: no program "
				      "to run with it ('%s')", argv[i]);
	if (o->duration && !o->attach)
		return ap_usage_error("record", "--duration goes with -p");
	if (o->attach && o->no_children)
		return ap_usage_error("record", "--no-children: an attached process's children "
				      "are never recorded");
	if (o->attach) {
		*first = i;
		return 0;
	}
	if (i >= argc)
		return ap_usage_error("record", "no program to run");
	*first = i;
	return 0;
}

/* The program as execvp would find it: into `out`, or -1 with errno. */
int ap_find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		if (snprintf(out, len, "%s", prog) >= (int)len)
			return errno = ENAMETOOLONG, -1;
		return access(out, F_OK) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	int saw_eacces = 0;
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t dl = colon ? (size_t)(colon - path) : strlen(path);
		if (dl == 0)
			snprintf(out, len, "%s", prog);
		else
			snprintf(out, len, "%.*s/%s", (int)dl, path, prog);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			saw_eacces = 1;
		}
		if (!colon)
			break;
		path = colon + 1;
	}
	if (saw_eacces) {
		/* found, but not executable: report that one */
		return errno = EACCES, -1;
	}
	return errno = ENOENT, -1;
}

/* Refuses programs LD_PRELOAD cannot reach. Returns 0, or -1 after one line
 * on stderr. */
int ap_check_program(const char *shown, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		ap_say("%s: %s", shown, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		ap_say("%s: is a directory", shown);
		return -1;
	}
	if (access(path, X_OK) < 0) {
		ap_say("%s: not executable: %s", shown, strerror(errno));
		return -1;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		ap_say("%s: %s: secure-execution mode ignores LD_PRELOAD", shown,
			   st.st_mode & S_ISUID ? "setuid" : "setgid");
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* execute-only: let exec decide */
	Elf64_Ehdr eh;
	ssize_t n = pread(fd, &eh, sizeof(eh), 0);
	int rc = 0;
	if (n >= 2 && !memcmp(&eh, "#!", 2)) {
		rc = 0; /* a script: the interpreter is what gets profiled */
	} else if (n == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
			ap_say("%s: not an x86-64 ELF program: allocprof records x86-64 only", shown);
			rc = -1;
		} else {
			bool interp = false;
			for (unsigned i = 0; i < eh.e_phnum; i++) {
				Elf64_Phdr ph;
				if (pread(fd, &ph, sizeof(ph),
					  (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
				    (ssize_t)sizeof(ph))
					break;
				if (ph.p_type == PT_INTERP)
					interp = true;
			}
			if (!interp) {
				ap_say("%s: statically linked: LD_PRELOAD cannot interpose its allocator", shown);
				rc = -1;
			}
		}
	}
	close(fd);
	return rc;
}

/* liballocprof.so: $ALLOCPROF_PRELOAD, next to the build tree's binary,
 * or the installed copy (commands.h). */
int ap_find_sampler(char *out, size_t len, bool quiet)
{
	const char *env = getenv("ALLOCPROF_PRELOAD");
	if (env && *env) {
		if (access(env, R_OK) < 0) {
			if (!quiet)
				ap_say("ALLOCPROF_PRELOAD=%s: %s", env, strerror(errno));
			return -1;
		}
		if (!realpath(env, out))
			snprintf(out, len, "%s", env);
		return 0;
	}
	char self[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(cand, sizeof(cand), "%s/../sampler/" SAMPLER_SO, self);
			if (access(cand, R_OK) == 0 && realpath(cand, out))
				return 0;
		}
	}
	snprintf(cand, sizeof(cand), "%s/" SAMPLER_SO, AP_PKGLIBDIR);
	if (access(cand, R_OK) == 0 && strlen(cand) < len) {
		memcpy(out, cand, strlen(cand) + 1);
		return 0;
	}
	if (!quiet)
		ap_say("cannot find " SAMPLER_SO ": not next to this allocprof (../sampler/) "
			   "nor in %s; set ALLOCPROF_PRELOAD to its path", AP_PKGLIBDIR);
	return -1;
}

/* LD_PRELOAD splits its value at spaces and colons: a sampler path with
 * one would not load, and the program would run unprofiled. Returns 0, or
 * -1 after one line. */
static int check_preload_path(const char *so)
{
	const char *bad = strpbrk(so, " :");
	if (!bad)
		return 0;
	ap_say("%s: LD_PRELOAD cannot name this path: it holds a %s, which LD_PRELOAD "
		   "takes for a separator (install allocprof elsewhere, or set ALLOCPROF_PRELOAD "
		   "to a copy of " SAMPLER_SO " at a path without one)",
		   so, *bad == ' ' ? "space" : "colon");
	return -1;
}

/* The directory that will hold the trace at `path` (and its children's
 * traces, and record's temporary file when it compacts): it must exist
 * and be writable. Returns 0, or -1 after one line. */
static int check_trace_dir(const char *path)
{
	struct ap_buf dir = AP_BUF_INIT;
	const char *slash = strrchr(path, '/');
	if (!slash)
		ap_buf_addstr(&dir, ".");
	else if (slash == path)
		ap_buf_addstr(&dir, "/");
	else
		ap_buf_add(&dir, path, (size_t)(slash - path));
	int rc = 0;
	struct stat st;
	if (stat(dir.buf, &st) < 0) {
		ap_say("%s: cannot write the trace there: %s", dir.buf, strerror(errno));
		rc = -1;
	} else if (!S_ISDIR(st.st_mode)) {
		ap_say("%s: cannot write the trace there: not a directory", dir.buf);
		rc = -1;
	} else if (access(dir.buf, W_OK | X_OK) < 0) {
		ap_say("%s: cannot write the trace there: %s", dir.buf, strerror(errno));
		rc = -1;
	}
	ap_buf_release(&dir);
	return rc;
}

/* The file a symbolic link names when that file does not exist yet: its
 * directory resolved, its name as the link says (malloc'd), or NULL. */
static char *link_target(const char *link)
{
	char target[PATH_MAX];
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = 0;
	struct ap_buf full = AP_BUF_INIT;
	const char *slash = strrchr(link, '/');
	if (target[0] != '/' && slash)
		ap_buf_add(&full, link, (size_t)(slash - link + 1));
	ap_buf_addstr(&full, target);
	char *name = strrchr(full.buf, '/');
	char *dir = NULL;
	if (!name)
		dir = realpath(".", NULL);
	else if (name == full.buf)
		dir = realpath("/", NULL);
	else {
		*name = 0;
		dir = realpath(full.buf, NULL);
		*name = '/';
	}
	char *out = NULL;
	if (dir && *(name ? name + 1 : full.buf)) {
		struct ap_buf b = AP_BUF_INIT;
		ap_buf_addf(&b, "%s/%s", strcmp(dir, "/") ? dir : "", name ? name + 1 : full.buf);
		out = ap_buf_detach(&b, NULL);
	}
	free(dir);
	ap_buf_release(&full);
	if (!out)
		errno = ENOENT;
	return out;
}

/* What the output names, checked before the program starts. A missing
 * file, an empty one or an allocprof trace is (re)written (a trace is
 * replaced: a stale one must not pass for this run's); a symbolic link is
 * followed, and the trace goes where it points (*resolved: the target, to
 * free; the link stays); /dev/null, under any name, discards the trace
 * (*discard); anything else (a device, a FIFO, a directory, a file that is
 * not a trace) is refused and left as it is. Returns 0, or -1 after one
 * line. */
static int check_output(const char *path, bool *discard, char **resolved)
{
	struct stat st;
	*discard = false;
	*resolved = NULL;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *r = realpath(path, NULL);
		if (!r && errno == ENOENT)
			r = link_target(path);
		if (!r) {
			ap_say("%s: a symbolic link that leads nowhere (%s): not replaced; give "
				   "the trace's own path", path, strerror(errno));
			return -1;
		}
		*resolved = r;
		path = r;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT) {
			ap_say("%s: %s", path, strerror(errno));
			return -1;
		}
		return check_trace_dir(path);
	}
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
		*discard = true;
		return 0;
	}
	const char *what = S_ISDIR(st.st_mode)    ? "a directory"
			   : S_ISCHR(st.st_mode)  ? "a character device"
			   : S_ISBLK(st.st_mode)  ? "a block device"
			   : S_ISFIFO(st.st_mode) ? "a FIFO"
			   : S_ISSOCK(st.st_mode) ? "a socket"
			   : st.st_size > 0 && !ap_trace_file_is_trace(path)
				   ? "a file that is not an allocprof trace"
				   : NULL;
	if (what) {
		ap_say("%s: is %s: not overwritten (remove it or choose another -o; "
			   "-o /dev/null discards the trace)", path, what);
		return -1;
	}
	if (access(path, W_OK) < 0) {
		ap_say("%s: cannot write the trace: %s", path, strerror(errno));
		return -1;
	}
	return check_trace_dir(path);
}

/* The trace `record -o` writes, made before the program starts and held
 * until it is finished (claim_output). */
struct claim {
	int hand;	/* the trace, open for the program's sampler (-1: none) */
	int run;	/* the same file opened again, holding the run's lock */
	int old;	/* the trace it replaced, its run's lock held (-1: none) */
};

/* Closes what a claim holds (its locks go with it). */
static void claim_release(struct claim *c)
{
	int *fds[] = { &c->hand, &c->run, &c->old };
	for (size_t i = 0; i < AP_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* An OFD lock on [at, at + len): F_OFD_SETLK with `set`, else only asks
 * (F_OFD_GETLK). Returns whether it was taken (set) or is free (ask). */
static bool ofd_lock(int fd, bool set, off_t at, off_t len)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = len };
	if (set)
		return fcntl(fd, F_OFD_SETLK, &lk) == 0;
	return fcntl(fd, F_OFD_GETLK, &lk) == 0 && lk.l_type == F_UNLCK;
}

/* The lowest descriptor the sampler keeps its own at (sampler/tracefile.c,
 * fd_floor): the trace handed to the program goes there, out of the way
 * of the numbers the program's own open() calls get. */
static int sampler_fd_floor(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 708)
		return 700;
	return rl.rlim_cur > 16 ? (int)rl.rlim_cur - 8 : -1;
}

/* Puts `tmp` (locked) at `path` without replacing anything: link, or
 * renameat2's RENAME_NOREPLACE where the file system has no links. */
static int publish_noreplace(const char *tmp, const char *path)
{
	if (link(tmp, path) == 0) {
		unlink(tmp);
		return 0;
	}
	if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK)
		return -1;
	return (int)syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, 1 /* RENAME_NOREPLACE */);
}

/* Makes the trace at `path` for this run and locks it, before the
 * program starts (docs/trace-format.md, "Live traces"): a new file,
 * locked with the run's lock before it takes the name, so that two
 * records given one -o cannot both have it. A trace already there is
 * replaced only while nobody uses it: the run's lock taken on it (another
 * record holds it until its trace is finished) and its writer's lock free
 * (a process of an earlier run may still append to it); its run's lock
 * stays held, so that a record that opened it a moment ago cannot take
 * it either. Returns 0, or -1 after one line. */
static int claim_output(const char *path, struct claim *c)
{
	c->hand = c->run = c->old = -1;
	struct ap_buf tmp = AP_BUF_INIT;
	ap_buf_addf(&tmp, "%s.record.XXXXXX", path);
	int fd = mkostemp(tmp.buf, O_CLOEXEC);
	if (fd < 0) {
		ap_say("%s: %s", tmp.buf, strerror(errno));
		ap_buf_release(&tmp);
		return -1;
	}
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0644 & ~um); /* as the sampler makes every trace of the run */
	struct stat a, b;
	int floor = sampler_fd_floor();
	c->hand = floor < 0 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (c->hand < 0)
		c->hand = fd;
	else if (c->hand != fd)
		close(fd);
	c->run = open(tmp.buf, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	const char *why = NULL;
	errno = 0;
	if (c->run < 0 || fstat(c->run, &a) < 0 || fstat(c->hand, &b) < 0 ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev ||
	    !ofd_lock(c->run, true, AP_LOCK_RUN_AT, 1)) {
		ap_say("%s: %s", tmp.buf, errno ? strerror(errno) : "replaced meanwhile");
		goto fail;
	}
	for (int tries = 0; tries < 100; tries++) {
		if (publish_noreplace(tmp.buf, path) == 0) {
			ap_buf_release(&tmp);
			return 0;
		}
		if (errno != EEXIST) {
			ap_say("%s: %s", path, strerror(errno));
			goto fail;
		}
		int old = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (old < 0 && errno == ENOENT)
			continue; /* gone meanwhile */
		struct stat st;
		if (old < 0 && errno == ELOOP) {
			ap_say("%s: is a symbolic link now: not followed (choose another -o)", path);
			goto fail;
		}
		if (old < 0 || fstat(old, &st) < 0) {
			ap_say("%s: %s", path, strerror(errno));
			goto fail;
		}
		if (!S_ISREG(st.st_mode))
			why = "not a regular file any more";
		else if (!ofd_lock(old, true, AP_LOCK_RUN_AT, 1))
			why = "in use: another allocprof record is writing it";
		else if (!ofd_lock(old, false, 0, AP_LOCK_WRITER_LEN))
			why = "in use: a process of an earlier run is still writing it";
		if (why) {
			ap_say("%s: %s (choose another -o)", path, why);
			close(old);
			goto fail;
		}
		if (rename(tmp.buf, path) < 0) {
			ap_say("%s: %s", path, strerror(errno));
			close(old);
			goto fail;
		}
		c->old = old;
		ap_buf_release(&tmp);
		return 0;
	}
	ap_say("%s: replaced again and again while record was taking it", path);
fail:
	unlink(tmp.buf);
	ap_buf_release(&tmp);
	claim_release(c);
	return -1;
}

/* Signals. Every catchable signal sent to record goes on to the program,
 * once: record blocks them all and reads them from a signalfd while the
 * program runs. A signal sent to the process group (Ctrl-C, `kill -INT
 * -PGID`, timeout, shells) reaches the program directly, and record must
 * not send a second copy; but siginfo does not say whether a signal was
 * sent to a process or to its group. The sentinel tells: a small process
 * of record's, in the same process group, that blocks every signal and
 * takes none unless record asks. When record reads a signal, it asks the
 * sentinel to take the same one: if it had it pending, the signal was sent
 * to the group (the kernel signals a group's members newest first, so
 * the sentinel, started last, has its copy before record has its own),
 * and the program has its copy already. Only the others go on to the
 * program: kill() for a plain signal (the program sees record as the
 * sender), sigqueue's own siginfo (value included) for a queued one.
 * Signals record sends itself (SIGPIPE of its own writes) and SIGCHLD are
 * not forwarded.
 *
 * Job control: when the program stops from SIGTSTP, SIGTTIN or SIGTTOU
 * (Ctrl-Z reaches both; one sent to record's pid is forwarded), record
 * stops itself with the same signal, so that its caller sees the job
 * stopped; SIGCONT resumes both (sent to the group, or forwarded). */
struct relay {
	sigset_t set;		/* what record blocks and reads from sfd */
	sigset_t mask;		/* record's mask before */
	int sfd;		/* signalfd of set, or -1 */
	pid_t sentinel;		/* or -1: every signal is forwarded */
	int req, rep;		/* pipes to and from the sentinel */
	pid_t program;
};

/* Whether record takes signal s through its signalfd while the program
 * runs (all but SIGCHLD are forwarded; SIGCHLD wakes the wait). */
static bool relayed(int s)
{
	return s != SIGKILL && s != SIGSTOP;
}

#define SENTINEL_STACK (16u << 10)

static long sentinel_sys(long nr, long a, long b, long c, long d)
{
	/* raw system calls: the sentinel shares record's memory and TLS, so
	 * it may not touch errno (record's) nor call into libc */
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The sentinel's body: every signal blocked; for each signal number record
 * writes, takes one pending instance of it if there is one and answers
 * 1 (there was) or 0. It dies with record (PR_SET_PDEATHSIG). */
static int sentinel_main(void *arg)
{
	const struct relay *r = arg;
	uint64_t all = ~0ull;
	sentinel_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all));
	sentinel_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
	for (;;) {
		unsigned char sig, had;
		if (sentinel_sys(SYS_read, r->req, (long)&sig, 1, 0) != 1)
			break;
		uint64_t one = 1ull << (sig - 1);
		struct timespec zero = { 0, 0 };
		had = sentinel_sys(SYS_rt_sigtimedwait, (long)&one, 0, (long)&zero, sizeof(one)) == sig;
		if (sentinel_sys(SYS_write, r->rep, (long)&had, 1, 0) != 1)
			break;
	}
	sentinel_sys(SYS_exit, 0, 0, 0, 0);
	return 0;
}

/* Starts the sentinel (it must join the group after record: the
 * kernel signals the newest members first). Without one every signal is
 * forwarded. */
static void relay_sentinel(struct relay *r)
{
	static char stack[SENTINEL_STACK] __attribute__((aligned(64)));
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) < 0)
		return;
	if (pipe2(b, O_CLOEXEC) < 0) {
		close(a[0]);
		close(a[1]);
		return;
	}
	r->req = a[1];
	r->rep = b[0];
	struct relay view = *r;
	view.req = a[0];
	view.rep = b[1];
	static struct relay sentinel_view;
	sentinel_view = view; /* the sentinel reads it: not on our stack */
	pid_t pid = clone(sentinel_main, stack + sizeof(stack), CLONE_VM | SIGCHLD, &sentinel_view);
	close(a[0]);
	close(b[1]);
	if (pid < 0) {
		close(r->req);
		close(r->rep);
		r->req = r->rep = -1;
		return;
	}
	r->sentinel = pid;
}

/* Blocks every relayed signal and opens the signalfd; before the launch
 * (the program gets r->mask back). Returns 0, or -1 after one line. */
static int relay_start(struct relay *r)
{
	r->sentinel = -1;
	r->req = r->rep = -1;
	sigemptyset(&r->set);
	for (int s = 1; s < NSIG; s++)
		if (relayed(s))
			sigaddset(&r->set, s);
	sigprocmask(SIG_BLOCK, &r->set, &r->mask);
	r->sfd = signalfd(-1, &r->set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sfd < 0) {
		ap_say("signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &r->mask, NULL);
		return -1;
	}
	r->program = 0;
	relay_sentinel(r);
	return 0;
}

/* Whether the sentinel had a pending s: then s was sent to the group. */
static bool sent_to_group(struct relay *r, int s)
{
	unsigned char sig = (unsigned char)s, had = 0;
	if (r->sentinel < 0 || write(r->req, &sig, 1) != 1 || read(r->rep, &had, 1) != 1)
		return false;
	return had;
}

/* Forwards what record was sent; 1 if a SIGCHLD came (the program may
 * have changed state). */
static int relay_signals(struct relay *r)
{
	struct signalfd_siginfo si;
	int chld = 0;
	while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int s = (int)si.ssi_signo;
		if (s == SIGCHLD) {
			chld = 1;
			continue;
		}
		if (r->program <= 0)
			continue; /* the launch failed */
		if ((pid_t)si.ssi_pid == getpid() && si.ssi_code != SI_QUEUE)
			continue; /* our own (SIGPIPE from a write) */
		if (sent_to_group(r, s))
			continue;
		if (si.ssi_code == SI_QUEUE) {
			siginfo_t q;
			memset(&q, 0, sizeof(q));
			q.si_signo = s;
			q.si_code = SI_QUEUE;
			q.si_pid = (pid_t)si.ssi_pid;
			q.si_uid = si.ssi_uid;
			q.si_value.sival_ptr = (void *)(uintptr_t)si.ssi_ptr;
			if (syscall(SYS_rt_sigqueueinfo, r->program, s, &q) == 0)
				continue;
		}
		kill(r->program, s);
	}
	return chld;
}

/* The program stopped by s: record stops the same way, and goes on when
 * continued. */
static void relay_stop(struct relay *r, int s)
{
	if (s != SIGTSTP && s != SIGTTIN && s != SIGTTOU)
		return; /* SIGSTOP from a debugger, say: not a job's stop */
	relay_signals(r); /* the group's copies are answered for first */
	struct sigaction dfl, was;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(s, &dfl, &was);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, s);
	kill(getpid(), s);
	sigprocmask(SIG_UNBLOCK, &one, NULL); /* stops here */
	sigprocmask(SIG_BLOCK, &one, NULL);
	sigaction(s, &was, NULL);
}

/* The program has ended: its signals are record's own again. */
static void relay_end(struct relay *r)
{
	if (r->sfd < 0)
		return;
	relay_signals(r);
	if (r->sentinel > 0) {
		close(r->req);
		close(r->rep);
		kill(r->sentinel, SIGKILL);
		waitpid(r->sentinel, NULL, __WALL);
	}
	close(r->sfd);
	r->sfd = -1;
	/* a signal that came since goes to record now */
	sigprocmask(SIG_SETMASK, &r->mask, NULL);
}

/* --compress-level's value (-1: not given), for every trace of the run. */
static int compress_level_opt = -1;

/* The zstd level of the traces (0: count only, the file as the sampler
 * wrote it): --compress-level's, else ALLOCPROF_COMPACT_LEVEL's (0..19),
 * else AP_COMPACT_LEVEL. */
static int compact_level(void)
{
	if (compress_level_opt >= 0)
		return compress_level_opt;
	const char *lv = getenv("ALLOCPROF_COMPACT_LEVEL");
	if (lv && *lv >= '0' && *lv <= '9' && atoi(lv) <= 19)
		return atoi(lv);
	return AP_COMPACT_LEVEL;
}


/* Waits for the program. Meanwhile, once its trace (NULL: none) is big
 * enough to be compacted, compacts what the sampler appended, every 20 ms
 * or so, on the core the program is not using: an --all trace grows by
 * ~100 MB/s on a tight loop, and compacting it all after the exit took as
 * long as the run. The signalfd of the relay wakes us the moment the
 * program exits (SIGCHLD) and forwards what record is sent meanwhile; a
 * program stopped by job control stops record too (relay_stop). *stream
 * is the live stream at the end, or NULL (never started, or given up: see
 * ap_compact_stream_feed). */
static int wait_program(pid_t pid, int *status, const char *trace,
			struct ap_compact_stream **stream, struct relay *r)
{
	int level = trace ? compact_level() : 0;
	off_t fed = 0;
	for (;;) {
		relay_signals(r);
		pid_t w = waitpid(pid, status, WNOHANG | WUNTRACED);
		if (w == pid && WIFSTOPPED(*status)) {
			relay_stop(r, WSTOPSIG(*status));
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
		if (poll(&p, 1, level > 0 ? 20 : -1) != 0)
			continue;
		struct stat sb;
		if (stat(trace, &sb) < 0 || sb.st_size < (off_t)AP_COMPACT_MIN_BYTES ||
		    sb.st_size - fed < (off_t)(1u << 20))
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
static void end_refused(const char *path, char *line, size_t cap)
{
	line[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	uint8_t h[AP_CHUNK_HDR_LEN], pl[512];
	ssize_t plen = -1;
	for (off_t off = AP_TRACE_PREAMBLE_LEN; off + AP_CHUNK_HDR_LEN <= st.st_size;) {
		if (pread(fd, h, sizeof(h), off) != (ssize_t)sizeof(h) ||
		    ap_get_u32le(h) != AP_CHUNK_MAGIC)
			break;
		uint32_t len = ap_get_u32le(h + 12);
		if (h[4] == AP_CHUNK_END)
			plen = len <= sizeof(pl) ? pread(fd, pl, len, off + AP_CHUNK_HDR_LEN) : -1;
		off += AP_CHUNK_HDR_LEN + (off_t)len;
	}
	close(fd);
	const uint8_t *p = pl, *end = pl + (plen > 0 ? plen : 0);
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
static uint64_t mono_ns(void)
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
static void finish_buffers(const char *path, const int *status, uint64_t end_ns,
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
		/* the later of the trace's and the buffers' last change */
		struct stat st;
		struct ap_buf side = AP_BUF_INIT;
		ap_buf_addf(&side, "%s" AP_BUFFERS_SUFFIX, path);
		struct timespec rt;
		clock_gettime(CLOCK_REALTIME, &rt);
		int64_t last = 0, now = (int64_t)rt.tv_sec * 1000000000ll + rt.tv_nsec;
		if (stat(path, &st) == 0)
			last = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
		if (stat(side.buf, &st) == 0 &&
		    (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec > last)
			last = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
		ap_buf_release(&side);
		uint64_t ago = last && now > last ? (uint64_t)(now - last) : 0;
		how.end_ns = mono_ns() - (ago < mono_ns() ? ago : 0);
	}
	struct ap_error err;
	if (ap_trace_finish_buffers(path, &how, fin, &err) < 0)
		ap_say("%s", err.msg);
}

/* The HEADER's malloc_owner (malloc'd), or NULL: the object whose malloc
 * the program's calls reached instead of the sampler's. */
static char *trace_malloc_owner(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	uint8_t h[AP_CHUNK_HDR_LEN];
	char *owner = NULL;
	if (pread(fd, h, sizeof(h), AP_TRACE_PREAMBLE_LEN) == (ssize_t)sizeof(h) &&
	    ap_get_u32le(h) == AP_CHUNK_MAGIC && h[4] == AP_CHUNK_HEADER &&
	    ap_get_u32le(h + 12) <= AP_CHUNK_MAX_PAYLOAD) {
		uint32_t len = ap_get_u32le(h + 12);
		uint8_t *pl = ap_xmalloc(len ? len : 1);
		if (pread(fd, pl, len, AP_TRACE_PREAMBLE_LEN + AP_CHUNK_HDR_LEN) == (ssize_t)len) {
			const uint8_t *p = pl, *end = pl + len;
			uint64_t key, kind, v;
			while (!owner && p < end && !ap_get_uv(&p, end, &key) &&
			       !ap_get_uv(&p, end, &kind) && !ap_get_uv(&p, end, &v)) {
				if (kind != AP_KV_STR)
					continue;
				if (v > (uint64_t)(end - p))
					break;
				if (key == AP_HK_MALLOC_OWNER) {
					struct ap_buf b = AP_BUF_INIT;
					ap_buf_add(&b, p, (size_t)v);
					owner = ap_buf_detach(&b, NULL);
				}
				p += v;
			}
		}
		free(pl);
	}
	close(fd);
	return owner;
}

/* The trace keeps its frames' names and lines (allocprof symbols, in
 * allocprof-report: the launcher links no symbolizer). */
static void keep_symbols(const char *path)
{
	char level[16];
	snprintf(level, sizeof(level), "%d", compact_level());
	char *argv[] = {(char *)"symbols", (char *)"-q", (char *)"--if-finished",
			(char *)"--compress-level", level, (char *)"--", (char *)path, NULL};
#ifdef AP_LAUNCHER
	int rc = ap_run_report_child(argv);
#else
	int rc = cmd_symbols(7, argv);
#endif
	if (rc)
		ap_say("%s: the trace keeps no symbols: the reports name its frames from the "
			   "program's files", path);
}

static void finish_trace(const char *path, const char *what, bool quiet,
			 struct ap_compact_stream *stream, const int *status,
			 const struct ap_finished *fin)
{
	struct stat st;
	if (stat(path, &st) < 0 || st.st_size == 0) {
		ap_say("%s: no trace was written (%s): the program was not profiled "
			   "(did it clear LD_PRELOAD, or is it statically linked?)",
			   path, errno == ENOENT ? "missing" : "empty");
		ap_compact_stream_abandon(stream);
		return;
	}
	struct ap_compact_stats c;
	struct ap_error err;
	if (stream ? ap_compact_stream_finish(stream, &c, &err) < 0
		   : ap_trace_compact(path, compact_level(), &c, &err) < 0) {
		ap_say("%s", err.msg[0] ? err.msg : "the trace could not be compacted; it is left "
			   "as the sampler wrote it");
		return;
	}
	char refusal[1024];
	end_refused(path, refusal, sizeof(refusal));
	if (refusal[0])
		ap_say("%s", refusal);
	if (!no_symbols)
		keep_symbols(path);
	char *owner = trace_malloc_owner(path);
	if (owner)
		ap_say("%s: the program has a malloc of its own (in %s): its allocations never "
			   "reach the sampler, and the trace does not count them", path, owner);
	free(owner);
	if (quiet)
		return;
	char trunc[200] = "";
	if (c.cut)
		snprintf(trunc, sizeof(trunc), "file ends inside a chunk at byte %llu",
			 (unsigned long long)c.cut_at);
	else if (!c.has_end && status && WIFSIGNALED(*status))
		snprintf(trunc, sizeof(trunc), "no end record: the program was killed by SIG%s%s",
			 sigabbrev_np(WTERMSIG(*status)) ? sigabbrev_np(WTERMSIG(*status)) : "?",
			 WTERMSIG(*status) == SIGSYS
				 ? " (a seccomp filter that kills on a system call the sampler "
				   "makes: see SECCOMP in allocprof-record(1))"
				 : "");
	else if (!c.has_end && status)
		snprintf(trunc, sizeof(trunc), "no end record, though the program exited "
			 "with status %d", WEXITSTATUS(*status));
	else if (!c.has_end)
		snprintf(trunc, sizeof(trunc), "no end record: the process ended in a way the "
			 "sampler cannot see (SIGKILL, say)");
	char late[320] = "";
	if (fin && fin->end_added && fin->reason >= AP_END_KILLED) {
		int sys = status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGSYS;
		const char *how = sys ? "killed by SIGSYS (a seccomp filter that kills on a system "
					"call the sampler makes: see SECCOMP in allocprof-record(1))"
				  : fin->reason == AP_END_KILLED ? "killed by a signal it cannot catch"
				  : fin->reason == AP_END_RAW_EXIT
				      ? "ended by the exit_group system call, without exit()"
				      : "gone without an end record";
		snprintf(late, sizeof(late), "; the process was %s: %llu chunk%s from its "
			 "buffers, and its end", how, (unsigned long long)fin->chunks,
			 fin->chunks == 1 ? "" : "s");
	} else if (fin && fin->chunks) {
		snprintf(late, sizeof(late), "; %llu chunk%s from its buffers (what it did "
			 "after its end record)", (unsigned long long)fin->chunks,
			 fin->chunks == 1 ? "" : "s");
	}
	fprintf(stderr, "allocprof: %s %s (%llu events, %zu thread%s%s%s%s)\n", what, path,
		(unsigned long long)c.events, c.nthreads, c.nthreads == 1 ? "" : "s",
		trunc[0] ? "; truncated: " : "", trunc, late);
}

/* A trace is live while some process holds the writer's lock the sampler
 * takes on it: an OFD lock on its open file, which a forked child shares
 * until it has opened a trace of its own, and which goes when the last
 * process holding the file exits or execs. Never rewrite a live trace:
 * its writer would go on appending to the file the rename unlinked. */
static bool trace_is_live(const char *path)
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
static bool wait_released(const char *path)
{
	for (int ms = 0; ms < RELEASE_WAIT_MS; ms += 2) {
		if (!trace_is_live(path))
			return true;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	return !trace_is_live(path);
}

static bool pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
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

/* Tells where the trace of a process that outlived the program is. */
static void say_live(const char *path, const char *what, pid_t pid, bool quiet)
{
	if (quiet)
		return; /* the trace is as it should be: nothing went wrong */
	if (pid_alive(pid))
		ap_say("%s %s: process %d is still running and writing it; the trace is "
			   "complete once it exits (stats, top read it then)", what, path, (int)pid);
	else
		ap_say("%s %s: still open in a process the program started; the trace is "
			   "complete once that process exits (stats, top read it then)", what, path);
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

/* Finishes the child traces of `output` except live ones
 * (trace_is_live, or without END while their process runs), which are
 * named instead. A live trace whose process
 * is gone is held by a child of that process which has not opened its
 * own trace yet: once it is released, the directory is read again for
 * that child's trace. Returns how many child traces there were. */
static size_t finish_children(const char *output, time_t since, bool quiet, pid_t main_pid,
			      const int *main_status, uint64_t main_end_ns)
{
	char **done = NULL;
	size_t ndone = 0, done_alloc = 0;
	size_t olen = strlen(output);
	for (bool again = true; again;) {
		again = false;
		char **names;
		size_t n = ap_trace_children(output, since, &names);
		for (size_t i = 0; i < n; i++) {
			if (listed(done, ndone, names[i])) {
				free(names[i]);
				continue;
			}
			pid_t who = suffix_pid(names[i] + olen, main_pid);
			bool live = trace_is_live(names[i]);
			if (live && !pid_alive(who) && wait_released(names[i])) {
				live = false;
				again = true;
			}
			/* a process that closed every descriptor holds no lock,
			 * but may open its trace again to go on */
			if (!live && who != main_pid && pid_alive(who) && !trace_has_end(names[i]))
				live = true;
			if (live) {
				say_live(names[i], "child trace", who, quiet);
			} else {
				/* an image of the program (.exec<n>) ended as the
				 * program did; any other process unseen */
				struct ap_finished fin;
				finish_buffers(names[i], who == main_pid ? main_status : NULL,
					       main_end_ns, &fin);
				finish_trace(names[i], "child trace", quiet, NULL, NULL, &fin);
			}
			AP_ALLOC_GROW(done, ndone + 1, done_alloc);
			done[ndone++] = names[i];
		}
		free(names);
	}
	for (size_t i = 0; i < ndone; i++)
		free(done[i]);
	free(done);
	return ndone;
}

/* The program died of signal s: record, its trace finished, dies of the
 * same signal, so that its parent sees what it would have seen without
 * us (WIFSIGNALED, a shell's "Terminated", Python's returncode -15).
 * Without a core dump of record's: the program's own is the program's
 * business. Returns only if s does not end record (then the caller exits
 * with 128 + s). */
static void die_like(int s)
{
	fflush(NULL);
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(s, &dfl, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, s);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(s);
	exit(128 + s);
}

/* What the vfork child of launch() needs, all prepared beforehand: it
 * borrows our memory until execve, so it may not allocate. */
struct launch {
	const char *path;
	char *const *argv;
	char **sh_argv;		/* /bin/sh path args...: for a script without #! */
	char **env;		/* holds cfg, which the child completes */
	char *cfg;		/* room for "ALLOCPROF=<pid>" cfg_mid [<pid> out_suffix] */
	const char *cfg_mid;
	const char *out_suffix;	/* NULL: the output path holds no pid */
	char *out_path;		/* room for the default output's path (out_suffix) */
	const char *out_pre;	/* its start */
	int hand_fd;		/* the trace made for the program (-o), or -1 */
	int out_fd, in_fd;	/* --live: the program's output and input, or -1 */
	char *exec_var;		/* room for "ALLOCPROF_EXEC=<pid>.0:f<hand_fd>" */
	int sigpipe_default;
	const sigset_t *mask;	/* the signal mask to exec with */
	int err;		/* exec's errno, set by the child */
};

static void put_s(char **p, const char *s)
{
	while (*s)
		*(*p)++ = *s++;
}

static void put_pid(char **p, long v)
{
	char d[24];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*(*p)++ = d[--n];
}

/* Starts the program: vfork, not fork, whose copy of allocprof's page
 * tables (and the copy-on-write faults after it) took 4 of the 12 ms of
 * `record /bin/true` on this VM. The child writes its pid into the
 * settings (the sampler's, and the default trace name), restores SIGPIPE
 * (main() ignores it for allocprof's own output; the program must get it
 * as allocprof did) and the signal mask (record blocks every signal while
 * the program runs) and execs. Returns the pid, with L->err set if exec
 * failed (the child has exited then), or -1. */
static pid_t launch(struct launch *L)
{
	L->err = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		long me = (long)getpid();
		char *p = L->cfg;
		put_s(&p, "ALLOCPROF=");
		put_pid(&p, me);
		put_s(&p, L->cfg_mid);
		if (L->out_suffix) {
			put_pid(&p, me);
			put_s(&p, L->out_suffix);
			/* the default name holds this pid: a file of that
			 * name is left from an earlier process of this pid,
			 * and the sampler makes its trace only where no file
			 * is */
			char *q = L->out_path;
			put_s(&q, L->out_pre);
			put_pid(&q, me);
			put_s(&q, L->out_suffix);
			*q = 0;
			unlink(L->out_path);
		}
		*p = 0;
		if (L->hand_fd >= 0) {
			/* the sampler takes the trace record made (lifecycle.c,
			 * exec_parse) */
			p = L->exec_var;
			put_s(&p, "ALLOCPROF_EXEC=");
			put_pid(&p, me);
			put_s(&p, ".0:f");
			put_pid(&p, L->hand_fd);
			*p = 0;
			fcntl(L->hand_fd, F_SETFD, 0);
		}
		if (L->out_fd >= 0) {
			/* --live: the terminal is the view's */
			dup2(L->in_fd, STDIN_FILENO);
			dup2(L->out_fd, STDOUT_FILENO);
			dup2(L->out_fd, STDERR_FILENO);
		}
		if (L->sigpipe_default)
			signal(SIGPIPE, SIG_DFL);
		/* the mask allocprof was given (record blocks every signal
		 * while the program runs: relay_start) */
		sigprocmask(SIG_SETMASK, L->mask, NULL);
		execve(L->path, L->argv, L->env);
		int e = errno;
		if (e == ENOEXEC) /* what execvp and the shells do with a script without #! */
			execve("/bin/sh", L->sh_argv, L->env);
		L->err = e;
		_exit(127);
	}
	return pid;
}

/* The program's environment: ours, with the sampler first in LD_PRELOAD
 * (the string preload) and the settings in one variable, ALLOCPROF (the
 * string cfg, which launch() completes), in the places setenv would put
 * them; ALLOCPROF_EXEC (the sampler's own, for exec'd images) dropped,
 * and exec_var (launch() completes it too: the trace record made) added
 * unless NULL. */
static char **program_env(char *preload, char *cfg, char *exec_var)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = ap_xmalloc((n + 4) * sizeof(*env));
	size_t k = 0;
	bool have_pre = false, have_cfg = false;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "LD_PRELOAD=", 11)) {
			if (!have_pre)
				env[k++] = preload;
			have_pre = true;
		} else if (!strncmp(environ[i], "ALLOCPROF=", 10)) {
			if (!have_cfg)
				env[k++] = cfg;
			have_cfg = true;
		} else if (strncmp(environ[i], "ALLOCPROF_EXEC=", 15)) {
			env[k++] = environ[i];
		}
	}
	if (!have_pre)
		env[k++] = preload;
	if (!have_cfg)
		env[k++] = cfg;
	if (exec_var)
		env[k++] = exec_var;
	env[k] = NULL;
	return env;
}

/* ALLOCPROF_TEST_STOPTIME=1 (bench/attach.sh): how long the attach or
 * the detach held the process's threads stopped, one line */
static void say_stops(const char *what, const struct ap_stops *s)
{
	if (!getenv("ALLOCPROF_TEST_STOPTIME"))
		return;
	fprintf(stderr, "allocprof: %s stopped: every thread %u times, %.0f us, longest %.0f us; "
		"the calls' thread %u times, %.0f us, longest %.0f us\n", what, s->all_n,
		(double)s->all_ns / 1e3, (double)s->all_max_ns / 1e3, s->call_n,
		(double)s->call_ns / 1e3, (double)s->call_max_ns / 1e3);
}

/* record -p: attach, wait for Ctrl-C (SIGINT, SIGTERM, SIGHUP), the
 * duration or the process's exit, detach, finish the trace. */
static int record_attached(const struct record_opts *o)
{
	char so[PATH_MAX], comm[64] = "process", p[64];
	if (ap_find_sampler(so, sizeof(so), false) < 0)
		return AP_EXIT_FAIL;
	char *so_abs = realpath(so, NULL);
	if (!so_abs) {
		ap_say("%s: %s", so, strerror(errno));
		return AP_EXIT_FAIL;
	}
	snprintf(p, sizeof(p), "/proc/%d/comm", (int)o->attach);
	FILE *f = fopen(p, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	for (char *c = comm; *c; c++)
		if (*c == '/' || *c == ' ')
			*c = '_';
	char cwd[PATH_MAX], out[PATH_MAX * 2];
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), ".");
	bool discard = false;
	char *resolved = NULL;
	int rc = AP_EXIT_FAIL;
	if (o->output && check_output(o->output, &discard, &resolved) < 0)
		goto out;
	const char *given = resolved ? resolved : o->output;
	if (discard)
		snprintf(out, sizeof(out), "/dev/null");
	else if (given && given[0] == '/')
		snprintf(out, sizeof(out), "%s", given);
	else if (given)
		snprintf(out, sizeof(out), "%s/%s", cwd, given);
	else
		snprintf(out, sizeof(out), "%s/allocprof.%s.%d.trace", cwd, comm, (int)o->attach);
	if (!o->output && check_output(out, &discard, &resolved) < 0)
		goto out;
	if (strlen(out) >= PATH_MAX - AP_OUTPUT_PATH_ROOM) {
		ap_say("%s: the trace's path is too long: choose a shorter -o", out);
		goto out;
	}
	if (ap_attach_check(o->attach, so_abs, out) < 0)
		goto out;
	if (!discard) {
		if (trace_is_live(out)) {
			ap_say("%s: another process is writing this trace: choose another -o", out);
			goto out;
		}
		unlink(out); /* the sampler makes it anew (checked above: a trace, or empty) */
	}
	/* ALLOCPROF=<pid>:<rate>:<depth>:<no_children>:<output> (sampler/README.md) */
	char cfg[PATH_MAX * 2 + 128];
	snprintf(cfg, sizeof(cfg), "%d:%llu:%u:1:%s", (int)ap_pid_inside(o->attach),
		 (unsigned long long)o->rate, o->max_depth, out);

	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int pfd = (int)syscall(SYS_pidfd_open, o->attach, 0);
	struct ap_attached a;
	if (ap_attach(o->attach, so_abs, cfg, &a) < 0)
		goto out_sig;
	if (!o->quiet)
		fprintf(stderr, "allocprof: attached to %d (%s), recording into %s; %s\n",
			(int)o->attach, comm, a.trace,
			o->duration ? "detaching at the end of --duration or at Ctrl-C"
				    : "Ctrl-C detaches");
	say_stops("attach", &a.attach_stops);
	uint64_t end = o->duration ? mono_ns() + o->duration : 0;
	for (;;) {
		struct pollfd pf[2] = { { sfd, POLLIN, 0 }, { pfd, POLLIN, 0 } };
		int ms = -1;
		if (end) {
			uint64_t now = mono_ns();
			if (now >= end)
				break;
			ms = (int)((end - now) / 1000000) + 1;
		}
		/* every second: an exec is no event of the pidfd's */
		if (ms < 0 || ms > 1000)
			ms = 1000;
		int n = poll(pf, pfd >= 0 ? 2 : 1, ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (pf[0].revents & POLLIN)) {
			struct signalfd_siginfo si; /* taken: it ends nothing but the wait */
			if (read(sfd, &si, sizeof(si)) < 0)
				si.ssi_signo = 0;
			break;
		}
		if ((n > 0 && (pf[1].revents & POLLIN)) || !pid_alive(o->attach) ||
		    (n == 0 && !ap_attached_here(&a)))
			break;
	}
	int d = ap_detach(&a);
	if (d < 0)
		goto out_sig;
	if (d == 0)
		say_stops("detach", &a.detach_stops);
	if (d == 1 && !o->quiet)
		fprintf(stderr, "allocprof: process %d is gone: the trace ends with it\n",
			(int)o->attach);
	else if (d == 2 && !o->quiet)
		fprintf(stderr, "allocprof: process %d exec'd another program: the trace ends at the "
			"exec\n", (int)o->attach);
	if (!discard && !wait_released(a.trace)) {
		say_live(a.trace, "trace", o->attach, o->quiet);
	} else if (!discard) {
		finish_trace(a.trace, d > 0 ? "wrote" : "detached; wrote", o->quiet, NULL, NULL,
			     NULL);
	}
	rc = AP_EXIT_OK;
out_sig:
	if (pfd >= 0)
		close(pfd);
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	free(so_abs);
	free(resolved);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { NULL, AP_DEFAULT_RATE, AP_DEFAULT_DEPTH, false, false, false, -1,
				 0, 0, false };
	int first = 0;
	int rc = parse_opts(argc, argv, &o, &first);
	if (rc)
		return rc < 0 ? AP_EXIT_OK : rc;
	if (o.live && o.attach)
		return ap_usage_error("record", "--live views a program record starts, not one it "
				      "attaches to (-p): open allocprof tui --follow on the trace");
	if (o.live && live_check() < 0)
		return AP_EXIT_FAIL;
	compress_level_opt = o.compress_level;
	no_symbols = o.no_symbols;
	if (o.attach)
		return record_attached(&o);
	const char *prog = argv[first];
	if (!*prog)
		return ap_usage_error("record", "the program's name is empty");
	char path[PATH_MAX], so[PATH_MAX];
	if (ap_find_program(prog, path, sizeof(path)) < 0) {
		if (errno == ENOENT && !strchr(prog, '/'))
			ap_say("%s: command not found", prog);
		else
			ap_say("%s: %s", prog, strerror(errno));
		return AP_EXIT_FAIL;
	}
	if (ap_check_program(prog, path) < 0 || ap_find_sampler(so, sizeof(so), false) < 0 ||
	    check_preload_path(so) < 0)
		return AP_EXIT_FAIL;

	/* The trace's path; the default name holds the program's pid, which
	 * the vfork child fills in (launch). */
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), ".");
	const char *bn = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
	struct ap_buf out_pre = AP_BUF_INIT, cfg_mid = AP_BUF_INIT;
	bool discard = false;
	char *resolved = NULL;
	if (o.output && check_output(o.output, &discard, &resolved) < 0)
		return AP_EXIT_FAIL;
	if (resolved)
		o.output = resolved; /* the link's target, where the trace goes */
	if (o.output && o.output[0] == '/')
		ap_buf_addstr(&out_pre, o.output);
	else if (o.output)
		ap_buf_addf(&out_pre, "%s/%s", cwd, o.output);
	else
		ap_buf_addf(&out_pre, "%s/allocprof.%s.", cwd, bn);
	if (!o.output && check_trace_dir(out_pre.buf) < 0) {
		ap_buf_release(&out_pre);
		return AP_EXIT_FAIL;
	}
	/* the sampler names the traces of children and later images after
	 * it, and needs this room past it (it would turn itself off) */
	size_t out_len = out_pre.len + (o.output ? 0 : strlen(".trace") + 10);
	if (!discard && out_len >= PATH_MAX - AP_OUTPUT_PATH_ROOM) {
		ap_say("%s: the trace's path is too long (%zu bytes; at most %d): choose "
			   "a shorter -o", o.output ? out_pre.buf : cwd, out_len,
			   PATH_MAX - AP_OUTPUT_PATH_ROOM - 1);
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	struct claim claim = { -1, -1, -1 };
	if (o.output && !discard && claim_output(out_pre.buf, &claim) < 0) {
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	struct record_live live = { .out_fd = -1, .in_fd = -1, .saved_err = -1, .held = -1,
				    .view = -1 };
	if (o.live && (discard ? ap_usage_error("record", "--live shows the trace: it "
							  "cannot be discarded") :
				 live_prepare(&live, out_pre.buf) < 0 ? AP_EXIT_FAIL : 0)) {
		claim_release(&claim);
		ap_buf_release(&out_pre);
		free(resolved);
		return discard ? AP_EXIT_USAGE : AP_EXIT_FAIL;
	}
	/* ALLOCPROF=<pid>:<rate>:<depth>:<no_children>:<output> (sampler/README.md) */
	ap_buf_addf(&cfg_mid, ":%llu:%u:%d:%s", (unsigned long long)o.rate, (unsigned)o.max_depth,
		    o.no_children ? 1 : 0, out_pre.buf);
	struct launch L = {
		.path = path,
		.argv = argv + first,
		.cfg_mid = cfg_mid.buf,
		.out_suffix = o.output ? NULL : ".trace",
		.sigpipe_default = !ap_sigpipe_ignored,
		.out_fd = live.out_fd,
		.in_fd = live.in_fd,
	};
	L.cfg = ap_xmalloc(cfg_mid.len + 64);
	L.out_pre = out_pre.buf;
	L.out_path = ap_xmalloc(out_pre.len + 64);
	L.hand_fd = claim.hand;
	L.exec_var = claim.hand >= 0 ? ap_xmalloc(64) : NULL;
	const char *pre = getenv("LD_PRELOAD");
	struct ap_buf preload = AP_BUF_INIT;
	ap_buf_addf(&preload, "LD_PRELOAD=%s%s%s", so, pre && *pre ? ":" : "", pre ? pre : "");
	L.env = program_env(preload.buf, L.cfg, L.exec_var);
	int nargs = argc - first;
	L.sh_argv = ap_xmalloc(((size_t)nargs + 2) * sizeof(*L.sh_argv));
	L.sh_argv[0] = (char *)"/bin/sh";
	L.sh_argv[1] = (char *)path;
	for (int i = 1; i <= nargs; i++)
		L.sh_argv[i + 1] = argv[first + i];

	/* Signals are relayed from before the program starts: a SIGTERM
	 * sent to us right after the launch must reach the program, not end
	 * us and leave it running. */
	struct relay relay;
	if (relay_start(&relay) < 0) {
		live_release(&live);
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	L.mask = &relay.mask;

	fflush(NULL);
	time_t start = time(NULL);
	pid_t pid = launch(&L);
	int e = L.err;
	free(L.sh_argv);
	free(L.env);
	free(L.cfg);
	free(L.out_path);
	free(L.exec_var);
	if (claim.hand >= 0) { /* the program has it now */
		close(claim.hand);
		claim.hand = -1;
	}
	ap_buf_release(&preload);
	ap_buf_release(&cfg_mid);
	if (pid < 0 || e) {
		int err = pid < 0 ? errno : e;
		if (pid > 0)
			waitpid(pid, NULL, 0);
		relay_end(&relay);
		live_release(&live);
		ap_say("%s: %s", prog, strerror(err));
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	relay.program = pid;
	char output[PATH_MAX + 64], abs_out[PATH_MAX * 2 + 64];
	if (o.output)
		snprintf(output, sizeof(output), "%s", o.output);
	else
		snprintf(output, sizeof(output), "allocprof.%s.%d.trace", bn, (int)pid);
	if (o.output)
		snprintf(abs_out, sizeof(abs_out), "%s", out_pre.buf);
	else
		snprintf(abs_out, sizeof(abs_out), "%s%d.trace", out_pre.buf, (int)pid);
	ap_buf_release(&out_pre);
	live_start(&live, abs_out, pid, &relay.mask);
	int status;
	struct ap_compact_stream *stream = NULL;
	int wrc = wait_program(pid, &status, discard ? NULL : abs_out, &stream, &relay);
	uint64_t end_ns = mono_ns();
	relay_end(&relay);
	if (wrc < 0) {
		live_end(&live);
		claim_release(&claim);
		free(resolved);
		return AP_EXIT_FAIL;
	}

	if (discard) {
		if (!o.quiet)
			fprintf(stderr, "allocprof: trace discarded (%s)\n", output);
	} else if (wait_released(output)) {
		/* until the program's forked children have opened their own
		 * traces they hold its trace too (trace_is_live) */
		struct ap_finished fin;
		finish_buffers(output, &status, end_ns, &fin);
		finish_trace(output, "wrote", o.quiet, stream, &status, &fin);
	} else {
		ap_compact_stream_abandon(stream);
		say_live(output, "trace", -1, o.quiet);
	}
	if (!discard && finish_children(output, start, o.quiet, pid, &status, end_ns) && !o.quiet)
		fprintf(stderr,
			"allocprof: the reports read %s with its child traces as one run "
			"(allocprof top %s); --by-process shows each process, "
			"--no-children the program's trace alone\n",
			output, output);
	live_end(&live); /* (the view says the end, then is quit) */
	claim_release(&claim); /* the run's lock: finished */
	free(resolved);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		die_like(WTERMSIG(status));
	return AP_EXIT_FAIL;
}
