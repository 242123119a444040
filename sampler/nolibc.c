/* nolibc.c: the sampler's helpers that stand in for libc where libc
 * might allocate: mmap'd memory, raw system calls, decimal conversion, and
 * the one-line messages on stderr (say), written with write(2) and only
 * while fd 2 is still the stderr the process started with. Safe inside
 * malloc and, but for say's fstat, in a signal handler. */
#include "sampler-int.h"

/* A bounded wait in a signal handler (the interrupted code may be what
 * it waits for) gives up after `tries` yields, or BOUNDED_WAIT_NS after
 * the first (*since, 0 before it), whichever comes first: where busy
 * threads share the CPU each sched_yield waits out their slices, and a
 * fatal signal that interrupted the sampler's own flush at exit() took
 * 10 to 20 s to end the process. */
#define BOUNDED_WAIT_NS 100000000ull

int bounded_give_up(int tries, uint64_t *since)
{
	if (tries >= 2000)
		return 1;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	if (!*since)
		*since = now;
	return now - *since > BOUNDED_WAIT_NS;
}

/* For signal context: give up rather than wait forever on a lock the
 * interrupted code may hold. */
int lk_trylock_bounded(int *l)
{
	uint64_t since = 0;
	for (int i = 0;; i++) {
		if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return 1;
		if (bounded_give_up(i + 1, &since))
			return 0;
		sched_yield();
	}
}

/* gettid and getpid cannot fail but by a seccomp filter's refusal
 * (refused.c): then the thread's id is the one it had, or a made-up one
 * above any pid (pid_max is at most 2^22), and the process's pid the one
 * it had (0 in a forked child, which then does not record). */
static long sys_ask(long nr)
{
	if (!may_call((int)nr, 0, 0, 0, 0))
		return -1;
	long r = syscall(nr);
	if (LIKELY(r > 0))
		return r;
	int saved = errno;
	refused((int)nr, errno);
	errno = saved;
	return -1;
}

uint32_t sys_gettid(void)
{
	static uint32_t made_up;
	long r = sys_ask(SYS_gettid);
	if (LIKELY(r > 0))
		return (uint32_t)r;
	return tls.tid ? tls.tid : 0x40000000u + __atomic_add_fetch(&made_up, 1, __ATOMIC_RELAXED);
}

pid_t sys_getpid(void)
{
	long r = sys_ask(SYS_getpid);
	return r > 0 ? (pid_t)r : proc.pid;
}

/* The sampler's own file calls, made as system calls, not through the C
 * library's wrappers, which are cancellation points: a thread the program
 * cancels (pthread_cancel, deferred) would otherwise act on it inside the
 * sampler, in the middle of a trace write with its lock held, and every
 * other thread would wait on that lock for ever. (libc's convention: -1
 * and errno.) */
int sys_open(const char *path, int flags, mode_t mode)
{
	return (int)raw_syscall6(SYS_openat, AT_FDCWD, (long)path, flags, mode, 0, 0);
}

ssize_t sys_read(int fd, void *buf, size_t n)
{
	return raw_syscall6(SYS_read, fd, (long)buf, (long)n, 0, 0, 0);
}

ssize_t sys_pwrite(int fd, const void *buf, size_t n, off_t at)
{
	return raw_syscall6(SYS_pwrite64, fd, (long)buf, (long)n, (long)at, 0, 0);
}

void sys_nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	raw_syscall6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}

/* Returns 0 once every byte is written, else the errno of the write that
 * failed, with *done the bytes that were. */
int write_some(int fd, const void *data, size_t len, size_t *done)
{
	const char *p = data;
	*done = 0;
	while (len) {
		ssize_t n = raw_syscall6(SYS_write, fd, (long)p, (long)len, 0, 0, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += n;
		len -= (size_t)n;
		*done += (size_t)n;
	}
	return 0;
}

/* Returns 0 once every byte is written, else the errno. */
static int write_all(int fd, const void *data, size_t len)
{
	size_t done;
	return write_some(fd, data, len, &done);
}

int sys_close(int fd)
{
	return (int)raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
}

size_t str_len(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* The process's executable (readlink, into buf of n bytes, not
 * NUL-terminated) and its /proc file `name` opened (cmdline), as the
 * calling thread sees them: through /proc/thread-self, which a process
 * whose main thread has exited (pthread_exit) still has where
 * /proc/self's, the zombie main thread's, are empty; /proc/self's when
 * that fails (a /proc without thread-self: before Linux 3.17). One call
 * each in the usual case, as before: a seccomp filter of the program's
 * meets no new system call. */
ssize_t self_exe(char *buf, size_t n)
{
	ssize_t r = readlink("/proc/thread-self/exe", buf, n);
	return r >= 0 ? r : readlink("/proc/self/exe", buf, n);
}

int self_open(const char *name)
{
	char p[64] = "/proc/thread-self/";
	size_t d = str_len(p), k = str_len(name);
	if (d + k >= sizeof(p))
		return -1;
	memcpy(p + d, name, k + 1);
	int fd = sys_open(p, O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0)
		return fd;
	memcpy(p, "/proc/self/", 12);
	memcpy(p + 11, name, k + 1);
	return sys_open(p, O_RDONLY | O_CLOEXEC, 0);
}

/* Decimal digits of v at p; returns the count. */
size_t put_dec(char *p, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

uint64_t parse_u64(const char *s, uint64_t dflt)
{
	if (!s || !*s)
		return dflt;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return dflt;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

/* stderr as the process started with it (fstat of fd 2 in ap_init): a
 * program that closes it may open a file of its own as fd 2, and our
 * messages must not land there. */
int err_state;		/* 0: not known yet, 1: open, -1: closed */
static dev_t err_dev;
static ino_t err_ino;

void err_init(void)
{
	struct stat st;
	err_state = fstat(STDERR_FILENO, &st) == 0 ? 1 : -1;
	err_dev = st.st_dev;
	err_ino = st.st_ino;
}

/* Whether fd 2 is still the stderr the process started with. */
int err_usable(void)
{
	struct stat st;
	return err_state == 0 ||
	       (err_state > 0 &&
		may_call(SYS_newfstatat, STDERR_FILENO, (uintptr_t)"", (uintptr_t)&st, AT_EMPTY_PATH) &&
		fstat(STDERR_FILENO, &st) == 0 && st.st_dev == err_dev && st.st_ino == err_ino);
}

/* One line on stderr without stdio: "allocprof: a: b"; none if fd 2 is
 * no longer the stderr the process started with. */
void say(const char *a, const char *b)
{
	if (!err_usable())
		return;
	char line[PATH_MAX + 256];
	size_t n = 0;
	const char *parts[] = { "allocprof: ", a, ": ", b, "\n" };
	for (size_t i = 0; i < 5; i++) {
		size_t l = str_len(parts[i]);
		if (n + l >= sizeof(line))
			l = sizeof(line) - n - 1;
		memcpy(line + n, parts[i], l);
		n += l;
	}
	write_all(STDERR_FILENO, line, n);
}

