/* exec.c: the exec family (execveat and fexecve too). Before an exec
 * replaces the image, its buffers reach the trace; the next image is
 * profiled if the environment passed on still preloads this library (the
 * settings are put back if missing), and left alone if the program took
 * the preload out (see exec_prepare). */
#include "sampler-int.h"

#include <linux/capability.h>
#include <spawn.h>
#include <sys/prctl.h>

/* Before exec replaces the image, its buffers must reach the file. If this
 * image recorded no event (or the next one can no longer make a trace of
 * its own) and the next one is profiled, its trace passes to the next
 * image, open (":f<fd>"), which writes it from the start; otherwise the
 * trace ends with reason exec and a profiled next image writes
 * <path>.exec<n>, told by ALLOCPROF_EXEC=<pid>.<n> in its environment.
 * exec_prepare returns the environment to pass (envp itself, or a mapping
 * the caller releases if exec fails). */
static char exec_marker[128];

/* What an exec'd image that keeps the preload needs to be profiled, saved
 * at start (a program that builds the environment it passes may leave
 * them out): every ALLOCPROF* setting but ALLOCPROF_EXEC, as "NAME=value"
 * strings one after another. */
static char *saved_cfg;
static size_t saved_cfg_len;

void exec_save_settings(void)
{
	extern char **environ;
	size_t need = 0;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "ALLOCPROF", 9) && strncmp(*e, "ALLOCPROF_EXEC=", 15))
			need += str_len(*e) + 1;
	if (!need || !(saved_cfg = map_mem(need)))
		return;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "ALLOCPROF", 9) && strncmp(*e, "ALLOCPROF_EXEC=", 15)) {
			size_t l = str_len(*e) + 1;
			memcpy(saved_cfg + saved_cfg_len, *e, l);
			saved_cfg_len += l;
		}
}

/* Whether env has a variable of the name that "NAME=..." entry has. */
static int env_has(char *const *env, size_t n, const char *entry)
{
	size_t k = 0;
	while (entry[k] && entry[k] != '=')
		k++;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], entry, k + 1))
			return 1;
	return 0;
}

/* Whether an LD_PRELOAD value names liballocprof.so. */
static int preload_has_self(const char *v)
{
	while (*v) {
		while (*v == ' ' || *v == ':')
			v++;
		const char *tok = v;
		while (*v && *v != ' ' && *v != ':')
			v++;
		const char *base = v;
		while (base > tok && base[-1] != '/')
			base--;
		if (v - base == 15 && !strncmp(base, "liballocprof.so", 15))
			return 1;
	}
	return 0;
}

/* Whether the next image can make a trace of its own next to this one's:
 * a process that changed to another user since (a daemon dropping root
 * between fork and exec) may no longer write in that directory. Then
 * this image's trace passes to the next one as if it had recorded
 * nothing (its events before exec are lost: a few, against the next
 * image's whole life). */
static int next_can_make(void)
{
	char dir[PATH_MAX];
	size_t n = str_len(tfile.path);
	while (n && tfile.path[n - 1] != '/')
		n--;
	if (n) {
		memcpy(dir, tfile.path, n);
		dir[n] = 0;
	} else {
		memcpy(dir, ".", 2);
	}
	/* The next image's rights, not this one's: a process whose user ids
	 * are none of them root's loses at exec every capability it is not
	 * given as ambient, and one that dropped root keeping them
	 * (PR_SET_KEEPCAPS: setpriv --reuid, daemons that keep
	 * CAP_NET_BIND_SERVICE) still overrides the directory's modes until
	 * then. So the check is made with this thread's effective
	 * capabilities that bypass them (DAC_OVERRIDE, DAC_READ_SEARCH) left
	 * out, put back after (capabilities are per thread). */
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2], less[2];
	uint32_t dac = 0;
	if (getuid() != 0 && geteuid() != 0 && syscall(SYS_capget, &h, caps) == 0) {
		for (unsigned c = CAP_DAC_OVERRIDE; c <= CAP_DAC_READ_SEARCH; c++)
			if ((caps[0].effective >> c & 1) &&
			    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) != 1)
				dac |= 1u << c;
	}
	if (dac) {
		memcpy(less, caps, sizeof(less));
		less[0].effective &= ~dac;
		if (syscall(SYS_capset, &h, less) < 0)
			dac = 0; /* (refused: as this image sees it) */
	}
	int ok = faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
	if (dac)
		syscall(SYS_capset, &h, caps);
	return ok;
}

/* Whether the next image is to be profiled: the program decides, through
 * LD_PRELOAD. An environment that still preloads this library (as the
 * loader reads it: its last LD_PRELOAD) is an inheritance, whoever built
 * it (env, sh, execle with a copy): followed. One without it (no
 * LD_PRELOAD: unsetenv, clearenv, `env -i`, `env -u LD_PRELOAD`, an envp
 * made from scratch; or an LD_PRELOAD the program emptied or set to
 * something else) is what the program chose, and never undone: putting
 * the preload back would make a program that re-executes itself until
 * LD_PRELOAD is gone (a sandbox) run forever, and `env -i` would not give
 * a clean environment. Such an image runs as without allocprof: the
 * settings record passed (ALLOCPROF, ALLOCPROF_EXEC) are taken out too. */
static int keeps_preload(char *const envp[], size_t *n)
{
	const char *pre = NULL;
	size_t k = 0;
	for (; envp && envp[k]; k++)
		if (!strncmp(envp[k], "LD_PRELOAD=", 11))
			pre = envp[k] + 11;
	*n = k;
	return pre && preload_has_self(pre);
}

/* An exec's state between exec_prepare and exec_failed */
struct exec_st {
	int ended;		/* END written */
	int handed;		/* the trace's descriptor handed to the next image */
	int counted;		/* attached: counted in at_in (record's detach waits) */
	size_t mapped;		/* the environment's copy */
};

static char *const *exec_prepare(char *const envp[], struct exec_st *st)
{
	int *ended = &st->ended, *handed = &st->handed;
	size_t *mapped = &st->mapped;
	*st = (struct exec_st){ 0, -1, 0, 0 };
	if (proc.pid != sys_getpid())
		return envp; /* vfork child (its TLS is its parent's): touch nothing */
	if (attach_mode) {
		/* until the exec fails (an exec that succeeds takes the
		 * thread): a detach meanwhile waits */
		at_in++;
		st->counted = 1;
	}
	if (proc.state != AP_ON)
		return envp; /* not running: touch nothing */
	tls.guard++;
	size_t n;
	int follow = keeps_preload(envp, &n);
	/* The trace ends here if no image of ours comes next to take it
	 * over, or if this image recorded something and the next one can
	 * make a trace of its own; otherwise it is handed on, below. */
	unsigned gen = proc.gen;
	int events = events_total(), can = follow && events && next_can_make();
	/* (the next image cannot make its trace, but this one made it while
	 * it could: a root process that dropped to another user, creds.c).
	 * One that can makes its own, as its user: a trace made as root and
	 * handed to another user's image that makes its buffers file beside
	 * it is never drained by record (another user's buffers), nor opened
	 * again by the image (root's file), and its events were lost. */
	int made = follow && events && !can && tfile.next_fd >= 0;
	if (can && tfile.next_fd >= 0)
		trace_next_drop();
	/* END says the next image is not in the run by the program's doing;
	 * not under --no-children, which took the preload out itself
	 * (strip_preload): record was asked not to follow it */
	exec_unfollowed = !follow && !settings.no_children;
	if (!follow || can || made) {
		if (end_trace(AP_END_EXEC, 0, 0, 0) == 0)
			*ended = 1;
		gen++;
	}
	size_t nsaved = 0;
	for (size_t o = 0; follow && o < saved_cfg_len; o += str_len(saved_cfg + o) + 1)
		nsaved++;
	size_t sz = (n + nsaved + 2) * sizeof(char *);
	char **env = map_mem(sz);
	if (!env) {
		tls.guard--;
		return envp;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "ALLOCPROF_EXEC=", 15) ||
		    (!follow && !strncmp(envp[i], "ALLOCPROF=", 10)))
			continue;
		env[k++] = envp[i];
	}
	if (follow) {
		size_t k0 = k;
		for (size_t o = 0; o < saved_cfg_len; o += str_len(saved_cfg + o) + 1)
			if (!env_has(env, k0, saved_cfg + o))
				env[k++] = saved_cfg + o;
		/* ":q": fd 2 is not the run's stderr, the next image stays
		 * quiet; ":f<fd>": the trace was not ended (this image
		 * recorded nothing, or the next cannot make a trace of its
		 * own) and passes open to the next image: it is the next
		 * image's, which then opens nothing by name (it may no longer
		 * be allowed to: a process that dropped to another user);
		 * ":s<tail>": this trace's name past the output's, which the
		 * next image's name follows. An image that is not followed
		 * is handed nothing: the trace stays close-on-exec. */
		int quiet = !err_usable();
		const char *sfx = tfile.path + str_len(tfile.base);
		/* a trace the ring took (no descriptor held): opened again, to
		 * be handed on */
		int lost = !*ended && tfile.ring && trace_direct(1) < 0;
		int fd = tfile.fd;
		if (*ended && made && fcntl(tfile.next_fd, F_SETFD, 0) == 0) {
			*handed = tfile.next_fd; /* the next image's, made before */
			/* and named by its own path (this image's was the
			 * next one's tfile.path: opened again by it, its
			 * buffers file's name, its children's parent) */
			sfx = tfile.next_path + str_len(tfile.base);
		} else if (lost) {
			/* it could not be (the path gone, or no longer ours to
			 * open): the trace stopped there, and the next image
			 * makes its own */
			gen++;
		} else if (!*ended && fd >= 0 && fcntl(fd, F_SETFD, 0) == 0) {
			*handed = fd;
			/* what this image's buffers hold goes with it: the
			 * next image writes the trace from the start */
			buffers_stop();
			buffers_abandon();
		} else if (!*ended && fd >= 0) {
			/* not handed (a seccomp filter refuses fcntl): this
			 * image's trace ends here, and the next makes its own,
			 * .exec<n>, as after an image that recorded events */
			if (end_trace(AP_END_EXEC, 0, 0, 0) == 0)
				*ended = 1;
			gen++;
		}
		if (gen || quiet || *handed >= 0 || *sfx) {
			size_t m = 0;
			memcpy(exec_marker, "ALLOCPROF_EXEC=", 15);
			m = 15;
			m += put_dec(exec_marker + m, (uint64_t)proc.pid);
			exec_marker[m++] = '.';
			m += put_dec(exec_marker + m, gen);
			if (quiet) {
				memcpy(exec_marker + m, ":q", 2);
				m += 2;
			}
			if (*handed >= 0) {
				memcpy(exec_marker + m, ":f", 2);
				m += 2;
				m += put_dec(exec_marker + m, (uint64_t)*handed);
			}
			if (*sfx && str_len(sfx) < AP_OUTPUT_SUFFIX_MAX) {
				memcpy(exec_marker + m, ":s", 2);
				m += 2;
				memcpy(exec_marker + m, sfx, str_len(sfx));
				m += str_len(sfx);
			}
			exec_marker[m] = 0;
			env[k++] = exec_marker;
		}
	}
	env[k] = NULL;
	*mapped = sz;
	tls.guard--;
	return env;
}

/* exec failed: this image goes on, and so does its trace (a reader takes
 * chunks after an END as the continuation). */
static void exec_failed(char *const *env, const struct exec_st *st)
{
	int saved = errno;
	if (st->handed >= 0)
		fcntl(st->handed, F_SETFD, FD_CLOEXEC);
	if (st->mapped)
		munmap((void *)env, st->mapped);
	if (st->ended)
		__atomic_store_n(&proc.state, AP_ON, __ATOMIC_RELEASE);
	if (st->counted)
		at_in--;
	errno = saved;
}

/* execve, execvpe, fexecve: the real call between exec_prepare and
 * exec_failed. The rest of the family calls them here directly (by name
 * they would be the C library's when record -p loaded this library). */
#define EXEC_WRAPPER(name, first_t)                                           \
	static int do_##name(first_t first, char *const argv[], char *const envp[]) \
	{                                                                     \
		struct exec_st st;                                            \
		char *const *env = exec_prepare(envp, &st);                   \
		int rc = real_##name(first, argv, env);                        \
		exec_failed(env, &st);                                        \
		return rc;                                                    \
	}                                                                     \
	EXPORT int name(first_t first, char *const argv[], char *const envp[]) \
	{                                                                     \
		return do_##name(first, argv, envp);                          \
	}

EXEC_WRAPPER(execve, const char *)
EXEC_WRAPPER(execvpe, const char *)
EXEC_WRAPPER(fexecve, int)

/* glibc's fexecve is execveat(fd, "", AT_EMPTY_PATH) (or an execve of
 * /proc/self/fd/N when the kernel lacks it), made inside libc: the
 * wrapper above sees it. execveat itself (glibc 2.34 and later) is the
 * system call, made here the same way. */
int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags);

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags)
{
	struct exec_st st;
	char *const *env = exec_prepare(envp, &st);
	/* (not syscall(): ours sends SYS_execveat here) */
	int rc = (int)raw_syscall6(SYS_execveat, dirfd, (long)path, (long)argv, (long)env, flags, 0);
	exec_failed(env, &st);
	return rc;
}

EXPORT int execv(const char *path, char *const argv[])
{
	extern char **environ;
	return do_execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	extern char **environ;
	return do_execvpe(file, argv, environ);
}

/* The execl family, with their argument lists gathered on the stack. */
#define GATHER_ARGS(first, ap, argv, extra)                                   \
	size_t argc_ = 1; /* glibc declares `arg` nonnull */                  \
	va_start(ap, first);                                                  \
	while (va_arg(ap, char *))                                            \
		argc_++;                                                      \
	va_end(ap);                                                           \
	if (argc_ > 65536) {                                                  \
		errno = E2BIG;                                                \
		return -1;                                                    \
	}                                                                     \
	char *argv[argc_ + 1];                                                \
	va_start(ap, first);                                                  \
	argv[0] = (char *)(first);                                            \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                \
		argv[i_] = va_arg(ap, char *);                                \
	extra;                                                                \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...)
{
	extern char **environ;
	va_list ap;
	GATHER_ARGS(arg, ap, argv, (void)0);
	return do_execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	extern char **environ;
	va_list ap;
	GATHER_ARGS(arg, ap, argv, (void)0);
	return do_execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char **envp;
	GATHER_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
	return do_execve(path, argv, envp);
}

/* --no-children: take ourselves out of LD_PRELOAD so that programs this
 * one runs are not profiled. Edited in place: no allocation. */
void strip_preload(void)
{
	extern char **environ;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		char *s = *e + 11, *w = s;
		while (*s) {
			while (*s == ' ' || *s == ':')
				s++;
			char *tok = s;
			while (*s && *s != ' ' && *s != ':')
				s++;
			size_t len = (size_t)(s - tok);
			if (!len)
				break;
			const char *base = tok + len;
			while (base > tok && base[-1] != '/')
				base--;
			if ((size_t)(tok + len - base) == 15 &&
			    !strncmp(base, "liballocprof.so", 15))
				continue;
			if (w != *e + 11)
				*w++ = ':';
			memmove(w, tok, len);
			w += len;
		}
		*w = 0;
	}
}


/* posix_spawn and posix_spawnp: glibc's clone and exec inside libc, which
 * the wrappers above do not see. A child started with an environment that
 * keeps the preload loads the sampler and is followed, as a forked child
 * is. One whose environment no longer preloads it runs unprofiled, the
 * program's choice as for exec (keeps_preload): counted, with the first
 * one's program, for END (spawn_put), as an exec's END says it. */
static uint64_t spawned_unfollowed;
static char spawned_first[256];

static void spawned(const char *path, char *const envp[])
{
	size_t n;
	if (proc.pid != sys_getpid() || settings.no_children || keeps_preload(envp, &n))
		return; /* (--no-children took the preload out: asked for) */
	if (__atomic_fetch_add(&spawned_unfollowed, 1, __ATOMIC_RELAXED) == 0) {
		size_t l = path ? str_len(path) : 0;
		if (l >= sizeof(spawned_first))
			l = sizeof(spawned_first) - 1;
		memcpy(spawned_first, path, l);
		spawned_first[l] = 0;
	}
}

size_t spawn_put(uint8_t *p)
{
	uint64_t n = __atomic_load_n(&spawned_unfollowed, __ATOMIC_RELAXED);
	if (!n)
		return 0;
	size_t k = ap_put_kv_uint(p, AP_EK_SPAWN_UNFOLLOWED, n);
	return k + ap_put_kv_str(p + k, AP_EK_SPAWN_FIRST, spawned_first, str_len(spawned_first));
}

typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);

#define SPAWN_WRAPPER(name)                                                       \
	EXPORT int name(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, \
			const posix_spawnattr_t *at, char *const argv[], char *const envp[]) \
	{                                                                         \
		static spawn_fn *real;                                            \
		if (!real)                                                        \
			real = (spawn_fn *)must_sym(#name);                       \
		int rc = real(pid, path, fa, at, argv, envp);                     \
		if (!rc)                                                          \
			spawned(path, envp);                                      \
		return rc;                                                        \
	}

SPAWN_WRAPPER(posix_spawn)
SPAWN_WRAPPER(posix_spawnp)
