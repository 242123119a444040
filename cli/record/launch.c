/* record/launch.c: `allocprof record`, finding the program and the sampler, and starting the program (record-int.h). */
#include "record-int.h"

#include <sys/statvfs.h>
#include <sys/xattr.h>

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

/* A program exec found missing (ENOENT) that is there: a script whose
 * interpreter (its #! line) is not. Puts the interpreter in `out`. */
bool rec_missing_interpreter(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char b[256];
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n < 3 || b[0] != '#' || b[1] != '!')
		return false;
	b[n] = 0;
	char *p = b + 2;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t k = strcspn(p, " \t\r\n");
	if (!k || k >= len)
		return false;
	for (size_t i = 0; i < k; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return false;	/* not printed: a control character */
	memcpy(out, p, k);
	out[k] = 0;
	return access(out, F_OK) < 0;
}

/* Why exec would run the program in secure-execution mode (AT_SECURE),
 * where the dynamic linker ignores LD_PRELOAD, or NULL. The kernel sets
 * it when the exec changes the effective user or group from the real one
 * (commoncap's __is_setuid/__is_setgid), or, for all but root, when the
 * file's capabilities raise the process's: a set-user-ID bit alone
 * (a program owned by the user who runs it, a set-user-ID-root one run
 * by root, a file on a nosuid mount) changes nothing, and the program is
 * recorded as any other. */
static const char *secure_exec_why(const char *path, const struct stat *st)
{
	struct statvfs vfs;
	if (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		return NULL;
	if ((st->st_mode & S_ISUID) && st->st_uid != getuid())
		return "setuid";
	if ((st->st_mode & S_ISGID) && (st->st_mode & S_IXGRP) && st->st_gid != getgid())
		return "setgid";
	if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
		return "file capabilities";
	return NULL;
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
	const char *secure = secure_exec_why(path, &st);
	if (secure) {
		ap_say("%s: %s: secure-execution mode ignores LD_PRELOAD", shown, secure);
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
pid_t rec_launch(struct launch *L)
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
 * string cfg, which rec_launch() completes), in the places setenv would put
 * them; ALLOCPROF_EXEC (the sampler's own, for exec'd images) dropped,
 * and exec_var (rec_launch() completes it too: the trace record made) added
 * unless NULL. */
char **rec_program_env(char *preload, char *cfg, char *exec_var)
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
