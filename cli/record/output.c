/* record/output.c: `allocprof record`, the trace's path, checked and claimed before the program starts (record-int.h). */
#include "record-int.h"

/* LD_PRELOAD splits its value at spaces and colons: a sampler path with
 * one would not load, and the program would run unprofiled. Returns 0, or
 * -1 after one line. */
int rec_check_preload_path(const char *so)
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
int rec_check_trace_dir(const char *path)
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
int rec_check_output(const char *path, bool *discard, char **resolved)
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
		return rec_check_trace_dir(path);
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
	return rec_check_trace_dir(path);
}


/* Closes what a claim holds (its locks go with it). */
void rec_claim_release(struct claim *c)
{
	int *fds[] = { &c->hand, &c->run, &c->old };
	for (size_t i = 0; i < AP_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* The program never ran: the trace claimed at `path`, if it is still the
 * claim's and empty, goes (not a 0-byte trace that reads as empty). */
void rec_claim_abandon(struct claim *c, const char *path)
{
	struct stat a, b;
	if (c->run >= 0 && fstat(c->run, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev && S_ISREG(b.st_mode) && b.st_size == 0)
		unlink(path);
	rec_claim_release(c);
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
int rec_claim_output(const char *path, struct claim *c)
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
	rec_claim_release(c);
	return -1;
}
