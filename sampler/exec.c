/* exec.c: the exec family. Before an exec replaces the image, its
 * buffers reach the trace, and the next image's environment is made to
 * profile it too (the preload and settings put back, ALLOCPROF_EXEC
 * naming its trace); --no-children takes the preload out instead. */
#include "sampler-int.h"

/* Before exec replaces the image, its buffers must reach the file. If this
 * image recorded no event its trace is worthless, and the next image (same
 * pid, same path) simply overwrites it; otherwise the trace ends with
 * reason exec and the next image writes <path>.exec<n>, told by
 * ALLOCPROF_EXEC=<pid>.<n> in its environment. Returns the environment to
 * pass (envp itself, or a mapping the caller releases if exec fails). */
static char exec_marker[128];

/* What an exec'd image needs to be profiled, saved at start (the program
 * may clear its environment: `env -i`, execle with an empty one): this
 * library's path for LD_PRELOAD, and every ALLOCPROF* setting but
 * ALLOCPROF_EXEC, as "NAME=value" strings one after another. */
static char self_path[PATH_MAX];
static char *saved_cfg;
static size_t saved_cfg_len;

void exec_save_settings(void)
{
	extern char **environ;
	Dl_info di;
	if (dladdr((void *)exec_save_settings, &di) && di.dli_fname &&
	    str_len(di.dli_fname) < sizeof(self_path))
		memcpy(self_path, di.dli_fname, str_len(di.dli_fname) + 1);
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
	if (!n)
		return faccessat(AT_FDCWD, ".", W_OK | X_OK, AT_EACCESS) == 0;
	memcpy(dir, tfile.path, n);
	dir[n] = 0;
	return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
}

/* Whether the environment env[0..n) preloads this library. */
static int next_profiled(char *const *env, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], "LD_PRELOAD=", 11))
			return preload_has_self(env[i] + 11);
	return 0;
}

static char *const *exec_prepare(char *const envp[], int *ended, size_t *mapped, int *handed)
{
	*ended = 0;
	*mapped = 0;
	*handed = -1;
	if (proc.state != AP_ON || proc.pid != sys_getpid())
		return envp; /* vfork child or not running: touch nothing */
	tls.guard++;
	unsigned gen = proc.gen;
	size_t n = 0, pre_len = 0;
	while (envp && envp[n]) {
		if (!strncmp(envp[n], "LD_PRELOAD=", 11))
			pre_len = str_len(envp[n]);
		n++;
	}
	size_t nsaved = 0;
	for (size_t o = 0; o < saved_cfg_len; o += str_len(saved_cfg + o) + 1)
		nsaved++;
	size_t ptrs = (n + nsaved + 3) * sizeof(char *);
	size_t sz = ptrs + pre_len + str_len(self_path) + 16;
	char **env = map_mem(sz);
	if (!env) {
		tls.guard--;
		return envp;
	}
	size_t k = 0;
	int have_pre = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "ALLOCPROF_EXEC=", 15))
			continue;
		if (!strncmp(envp[i], "LD_PRELOAD=", 11) && !have_pre && self_path[0] &&
		    !preload_has_self(envp[i] + 11)) {
			/* the program set a preload of its own: ours first */
			char *v = (char *)env + ptrs;
			size_t m = str_len(self_path);
			memcpy(v, "LD_PRELOAD=", 11);
			memcpy(v + 11, self_path, m);
			v[11 + m] = ':';
			memcpy(v + 12 + m, envp[i] + 11, pre_len - 11 + 1);
			env[k++] = v;
			have_pre = 1;
			continue;
		}
		if (!strncmp(envp[i], "LD_PRELOAD=", 11))
			have_pre = 1;
		env[k++] = envp[i];
	}
	/* an environment without us: the preload and settings go back in */
	if (!have_pre && self_path[0]) {
		char *v = (char *)env + ptrs;
		memcpy(v, "LD_PRELOAD=", 11);
		memcpy(v + 11, self_path, str_len(self_path) + 1);
		env[k++] = v;
	}
	size_t k0 = k;
	for (size_t o = 0; o < saved_cfg_len; o += str_len(saved_cfg + o) + 1)
		if (!env_has(env, k0, saved_cfg + o))
			env[k++] = saved_cfg + o;
	/* ":q": fd 2 is not the run's stderr, the next image stays quiet;
	 * ":f<fd>": this image recorded nothing, and its trace passes open to
	 * the next (if that one is profiled): it is the next image's, which
	 * then opens nothing by name (it may no longer be allowed to: a
	 * process that dropped to another user); ":s<tail>": this trace's
	 * name past the output's, which the next image's name follows */
	int quiet = !err_usable();
	const char *sfx = tfile.path + str_len(tfile.base);
	int profiled = next_profiled(env, k);
	if (events_total() && (!profiled || next_can_make())) {
		if (end_trace(AP_END_EXEC, 0, 0, 0) == 0)
			*ended = 1;
		gen++;
	}
	int fd = tfile.fd;
	if (!*ended && fd >= 0 && profiled && fcntl(fd, F_SETFD, 0) == 0) {
		*handed = fd;
		/* what this image's buffers hold goes with it: the next
		 * image writes the trace from the start */
		buffers_stop();
		buffers_abandon();
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
	env[k] = NULL;
	*mapped = sz;
	tls.guard--;
	return env;
}

/* exec failed: this image goes on, and so does its trace (a reader takes
 * chunks after an END as the continuation). */
static void exec_failed(char *const *env, int ended, size_t mapped, int handed)
{
	int saved = errno;
	if (handed >= 0)
		fcntl(handed, F_SETFD, FD_CLOEXEC);
	if (mapped)
		munmap((void *)env, mapped);
	if (ended)
		__atomic_store_n(&proc.state, AP_ON, __ATOMIC_RELEASE);
	errno = saved;
}

/* execve, execvpe, fexecve: the real call between exec_prepare and
 * exec_failed. */
#define EXEC_WRAPPER(name, first_t)                                           \
	EXPORT int name(first_t first, char *const argv[], char *const envp[]) \
	{                                                                     \
		int ended, handed;                                            \
		size_t mapped;                                                \
		char *const *env = exec_prepare(envp, &ended, &mapped, &handed); \
		int rc = real_##name(first, argv, env);                        \
		exec_failed(env, ended, mapped, handed);                      \
		return rc;                                                    \
	}

EXEC_WRAPPER(execve, const char *)
EXEC_WRAPPER(execvpe, const char *)
EXEC_WRAPPER(fexecve, int)

EXPORT int execv(const char *path, char *const argv[])
{
	extern char **environ;
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	extern char **environ;
	return execvpe(file, argv, environ);
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
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	extern char **environ;
	va_list ap;
	GATHER_ARGS(arg, ap, argv, (void)0);
	return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char **envp;
	GATHER_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
	return execve(path, argv, envp);
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

