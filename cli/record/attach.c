/* record/attach.c: `allocprof record -p PID`, the ptrace side. Loads
 * liballocprof.so into a running process by making one of its threads
 * call dlopen, then the sampler's entry points (sampler/attach.c), and
 * takes it out again. A call is made on a thread that ptrace stopped: its
 * registers (and FPU/SSE state) are kept, the call's data goes below the
 * red zone of its stack, the return address is 0, and the SIGSEGV at
 * address 0 hands the thread back, its registers put back as they were (a
 * system call it was stopped in is restarted by the kernel, as after any
 * stop: its orig_rax and -ERESTART* result are back too). The process's
 * threads are stopped only while needed: the call runs while the others go
 * on, since one of them may hold a lock dlopen or malloc takes. */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../commands.h"
#include "attach.h"

/* ---- the process's threads ------------------------------------------ */

struct thr {
	pid_t tid;
	bool stopped;
	int pending;		/* a signal its stop took: delivered on resume */
	uint64_t errno_at;	/* its errno's address (0: not asked yet) */
};

struct tracee {
	pid_t pid;
	int mem;		/* /proc/PID/mem */
	bool futex_ok;		/* no other safe point came: a futex wait will do */
	struct thr *t;
	size_t n, cap;
	struct ap_stops st;
	uint64_t all_t0;	/* every thread stopped since (0: not) */
	uint64_t call_t0;	/* the thread picked for a call stopped since */
	uint64_t errno_fn;	/* the C library's __errno_location (0: none) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void stops_add(uint64_t *sum, uint64_t *max, unsigned *n, uint64_t d)
{
	*sum += d;
	if (d > *max)
		*max = d;
	(*n)++;
}

static struct thr *thr_find(struct tracee *tr, pid_t tid)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].tid == tid)
			return &tr->t[i];
	return NULL;
}

static void thr_drop(struct tracee *tr, pid_t tid)
{
	struct thr *x = thr_find(tr, tid);
	if (x)
		*x = tr->t[--tr->n];
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* The state letter of a thread (/proc/PID/task/TID/stat: R, S, Z, ...),
 * 0 when it cannot be read (gone) */
static char task_state(pid_t pid, pid_t tid)
{
	char p[96], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *st = strrchr(buf, ')'); /* past the name, which may hold anything */
	return st && st[1] == ' ' ? st[2] : 0;
}

/* The state letter of pid's main thread */
static char proc_state(pid_t pid)
{
	return task_state(pid, pid);
}

/* out = the process's /proc file `file` (maps, mem, root, environ...):
 * /proc/PID/file, or, once its main thread has exited (pthread_exit)
 * while others run on, a live thread's /proc/PID/task/TID/file: the
 * zombie leader has no memory, root or namespaces left to show, the
 * others share the process's. */
static void proc_file(pid_t pid, const char *file, char *out, size_t n)
{
	snprintf(out, n, "/proc/%d/%s", (int)pid, file);
	char st = proc_state(pid);
	if (st != 'Z' && st != 'X')
		return;
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || tid == pid)
			continue;
		st = task_state(pid, tid);
		if (st && st != 'Z' && st != 'X') {
			snprintf(out, n, "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
			break;
		}
	}
	closedir(d);
}

/* Every thread of the process seized (not stopped), again until no new
 * one shows: 0, or -errno of the first refusal. */
static int seize_all(struct tracee *tr)
{
	for (bool more = true; more;) {
		more = false;
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)tr->pid);
		DIR *d = opendir(dir);
		if (!d)
			return -errno;
		struct dirent *de;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || thr_find(tr, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
				int e = errno;
				/* gone meanwhile; or a zombie (EPERM): the main
				 * thread, exited while others run on */
				char st = e == EPERM ? task_state(tr->pid, tid) : 0;
				if (e == ESRCH || st == 'Z' || st == 'X')
					continue;
				closedir(d);
				return -e;
			}
			if (tr->n == tr->cap) {
				tr->cap = tr->cap ? 2 * tr->cap : 16;
				tr->t = ap_xrealloc(tr->t, tr->cap * sizeof(*tr->t));
			}
			tr->t[tr->n++] = (struct thr){ tid, false, 0, 0 };
			more = true;
		}
		closedir(d);
	}
	return 0;
}

/* One wait for any of the threads: what stopped or ended is noted. Returns
 * the tid, with *sig the signal of a signal-delivery-stop (0 for a ptrace
 * event stop), or -1 and *sig -1 when the thread ended. A signal stop of a
 * thread not meant to be stopped is passed on at once. */
static pid_t wait_any(struct tracee *tr, int *sig)
{
	for (;;) {
		int st;
		pid_t tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			*sig = -1;
			return -1;
		}
		struct thr *x = thr_find(tr, tid);
		if (!x)
			continue;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			thr_drop(tr, tid);
			*sig = -1;
			return tid;
		}
		if (!WIFSTOPPED(st))
			continue;
		*sig = (st >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
		return tid;
	}
}

/* Stops tid (interrupt, wait for it): 0, or -1 if it is gone. Other
 * threads' stops meanwhile: signals passed on, unless they are meant to
 * stay stopped (stopped already). */
static int stop_thr(struct tracee *tr, struct thr *x)
{
	pid_t want = x->tid;
	if (x->stopped)
		return 0;
	if (ptrace(PTRACE_INTERRUPT, want, 0, 0) < 0)
		return -1;
	for (;;) {
		int sig;
		pid_t tid = wait_any(tr, &sig);
		if (tid < 0)
			return -1;
		if (sig < 0) {
			if (tid == want)
				return -1;
			continue;
		}
		struct thr *y = thr_find(tr, tid);
		if (tid == want) {
			y->stopped = true;
			if (sig > 0)
				y->pending = sig; /* its signal goes on when it does */
			return 0;
		}
		if (!y->stopped)
			ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
		else if (sig > 0)
			y->pending = sig;
	}
}

static void resume_thr(struct thr *x)
{
	if (!x->stopped)
		return;
	ptrace(PTRACE_CONT, x->tid, 0, (void *)(long)x->pending);
	x->pending = 0;
	x->stopped = false;
}

/* Every thread stopped, new ones seized and stopped until none is new. */
static int stop_all(struct tracee *tr)
{
	if (!tr->all_t0)
		tr->all_t0 = now_ns();
	for (;;) {
		size_t before = tr->n;
		int rc = seize_all(tr);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < tr->n;) {
			pid_t tid = tr->t[i].tid;
			if (stop_thr(tr, &tr->t[i]) == 0) {
				i++;
				continue;
			}
			thr_drop(tr, tid); /* it went (reaped or not): the array moved */
			i = 0;
		}
		if (tr->n == before && seize_all(tr) == 0 && tr->n == before)
			return 0;
	}
}

static void resume_all(struct tracee *tr, const struct thr *except)
{
	for (size_t i = 0; i < tr->n; i++)
		if (&tr->t[i] != except)
			resume_thr(&tr->t[i]);
	if (tr->all_t0) {
		stops_add(&tr->st.all_ns, &tr->st.all_max_ns, &tr->st.all_n, now_ns() - tr->all_t0);
		if (except)
			tr->call_t0 = tr->all_t0; /* it stays stopped, for the call */
		tr->all_t0 = 0;
	}
}

static void release_all(struct tracee *tr)
{
	while (tr->n) {
		struct thr *x = &tr->t[tr->n - 1];
		/* a thread must be stopped for PTRACE_DETACH */
		pid_t tid = x->tid;
		if (stop_thr(tr, x) == 0 && (x = thr_find(tr, tid)))
			ptrace(PTRACE_DETACH, tid, 0, (void *)(long)x->pending);
		thr_drop(tr, tid);
	}
}

/* ---- memory and symbols ----------------------------------------------- */

static int mem_write(struct tracee *tr, uint64_t at, const void *p, size_t n)
{
	return pwrite(tr->mem, p, n, (off_t)at) == (ssize_t)n ? 0 : -1;
}

static int mem_read(struct tracee *tr, uint64_t at, void *p, size_t n)
{
	return pread(tr->mem, p, n, (off_t)at) == (ssize_t)n ? 0 : -1;
}

/* The dynamic symbol `name` of the ELF file at path: its value, 0 if none
 * (defined ones only). *min_vaddr: the lowest PT_LOAD's page. */
static uint64_t elf_sym(const char *path, const char *name, uint64_t *min_vaddr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t val = 0;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *str = NULL;
	Elf64_Sym *syms = NULL;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
		goto out;
	*min_vaddr = UINT64_MAX;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type == PT_LOAD && (ph.p_vaddr & ~(uint64_t)4095) < *min_vaddr)
			*min_vaddr = ph.p_vaddr & ~(uint64_t)4095;
	}
	size_t shn = eh.e_shnum;
	sh = ap_xmalloc(shn * sizeof(*sh));
	if (pread(fd, sh, shn * sizeof(*sh), (off_t)eh.e_shoff) != (ssize_t)(shn * sizeof(*sh)))
		goto out;
	for (size_t i = 0; i < shn && !val; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= shn)
			continue;
		const Elf64_Shdr *ss = &sh[sh[i].sh_link];
		str = ap_xmalloc(ss->sh_size + 1);
		syms = ap_xmalloc(sh[i].sh_size);
		if (pread(fd, str, ss->sh_size, (off_t)ss->sh_offset) != (ssize_t)ss->sh_size ||
		    pread(fd, syms, sh[i].sh_size, (off_t)sh[i].sh_offset) != (ssize_t)sh[i].sh_size)
			goto out;
		str[ss->sh_size] = 0;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++)
			if (syms[k].st_shndx != SHN_UNDEF && syms[k].st_name < ss->sh_size &&
			    !strcmp(str + syms[k].st_name, name)) {
				val = syms[k].st_value;
				break;
			}
	}
out:
	free(sh);
	free(str);
	free(syms);
	close(fd);
	return val;
}

/* A mapping of the process: the first one of a file whose name ends with
 * `tail` (or is `path`, when exact). */
struct mapping {
	uint64_t lo, hi, off;
	char perms[8];
	char path[PATH_MAX];
};

/* Calls fn on each mapping of pid until it returns nonzero; returns that. */
static int maps_each(pid_t pid, int (*fn)(const struct mapping *, void *), void *arg)
{
	char p[96];
	proc_file(pid, "maps", p, sizeof(p));
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 256];
	int rc = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		struct mapping m = { 0 };
		int at = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", (unsigned long *)&m.lo,
			   (unsigned long *)&m.hi, m.perms, (unsigned long *)&m.off, &at) < 4)
			continue;
		snprintf(m.path, sizeof(m.path), "%s", line + at);
		m.path[strcspn(m.path, "\n")] = 0;
		rc = fn(&m, arg);
	}
	fclose(f);
	return rc;
}

struct find_lib {
	const char *name;	/* a base name prefix ("libc.so."), or a whole path */
	bool exact;
	struct mapping m;
};

static int find_lib_fn(const struct mapping *m, void *arg)
{
	struct find_lib *fl = arg;
	if (m->off != 0 || m->path[0] != '/')
		return 0;
	const char *bn = strrchr(m->path, '/') + 1;
	size_t n = strlen(fl->name);
	/* exact: the path, or the path of a file replaced since (" (deleted)") */
	if (fl->exact ? strncmp(m->path, fl->name, n) ||
				(m->path[n] && strcmp(m->path + n, " (deleted)"))
		      : strncmp(bn, fl->name, n))
		return 0;
	fl->m = *m;
	return 1;
}

static bool find_lib(pid_t pid, const char *name, bool exact, struct mapping *out)
{
	struct find_lib fl = { name, exact, { 0 } };
	if (maps_each(pid, find_lib_fn, &fl) != 1)
		return false;
	*out = fl.m;
	return true;
}

/* The address in pid of `sym` of the library mapped at m: 0 if none. The
 * file is read through /proc/PID/root: the process's own view of it. */
static uint64_t remote_sym(pid_t pid, const struct mapping *m, const char *sym)
{
	char p[PATH_MAX + 96];
	proc_file(pid, "root", p, 96);
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "%s", m->path);
	uint64_t minv = 0, v = elf_sym(p, sym, &minv);
	return v ? m->lo - minv + v : 0;
}

/* ---- calls in the process --------------------------------------------- */

#define RED_ZONE 128

/* fn(args) on the stopped thread x, data (if any) copied below its red
 * zone and its address passed as the first argument; back (backlen bytes)
 * read from there afterwards. *ret: the call's rax. 0; -1 if the thread
 * or process went (*gone), the process is another image than the one
 * looked at (*exec_d: nothing done), or the call faulted. x stays
 * stopped. */
static int remote_call_as_is(struct tracee *tr, struct thr *x, uint64_t fn,
			     const uint64_t args[3], const void *data, size_t dlen, void *back,
			     size_t backlen, uint64_t *ret, bool *gone, bool *exec_d);

/* fn(args) on the stopped thread x (remote_call_as_is), its errno kept:
 * the thread's code goes on after the call as if it had not been made
 * (the calls set it: a failed dlopen's search, ENOENT, over a program's
 * `errno = 0; readdir(); if (errno)`). Its address comes from a call of
 * the C library's __errno_location, once per thread. */
static int remote_call(struct tracee *tr, struct thr *x, uint64_t fn, const uint64_t args[3],
		       const void *data, size_t dlen, void *back, size_t backlen, uint64_t *ret,
		       bool *gone, bool *exec_d)
{
	static const uint64_t none[3] = { 0, 0, 0 };
	uint64_t at = 0;
	int32_t was = 0;
	if (tr->errno_fn && !x->errno_at &&
	    remote_call_as_is(tr, x, tr->errno_fn, none, NULL, 0, NULL, 0, &at, gone, exec_d) == 0)
		x->errno_at = at;
	if (*gone || *exec_d)
		return -1;
	bool keep = x->errno_at && mem_read(tr, x->errno_at, &was, sizeof(was)) == 0;
	int rc = remote_call_as_is(tr, x, fn, args, data, dlen, back, backlen, ret, gone, exec_d);
	if (keep && !*gone && !*exec_d)
		mem_write(tr, x->errno_at, &was, sizeof(was));
	return rc;
}

static int remote_call_as_is(struct tracee *tr, struct thr *x, uint64_t fn,
			     const uint64_t args[3], const void *data, size_t dlen, void *back,
			     size_t backlen, uint64_t *ret, bool *gone, bool *exec_d)
{
	struct user_regs_struct saved, r;
	struct user_fpregs_struct fsaved;
	*gone = *exec_d = false;
	if (ptrace(PTRACE_GETREGS, x->tid, 0, &saved) < 0 ||
	    ptrace(PTRACE_GETFPREGS, x->tid, 0, &fsaved) < 0) {
		*gone = true;
		return -1;
	}
	r = saved;
	uint64_t top = (saved.rsp - RED_ZONE - dlen) & ~(uint64_t)15;
	uint64_t zero = 0, code;
	/* /proc/PID/mem stays the memory of the image it was opened on: if
	 * the process exec'd since, nothing there is what we looked up */
	if (mem_read(tr, fn, &code, sizeof(code)) < 0) {
		*exec_d = true;
		return -1;
	}
	if ((dlen && mem_write(tr, top, data, dlen) < 0) || mem_write(tr, top - 8, &zero, 8) < 0)
		return -1;
	r.rsp = top - 8; /* as after a call: rsp + 8 aligned to 16 */
	r.rip = fn;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* not in a system call: nothing to restart */
	r.rdi = dlen ? top : args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.eflags &= ~(1ull << 10); /* DF clear, as the ABI wants at a call */
	if (ptrace(PTRACE_SETREGS, x->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_CONT, x->tid, 0, 0) < 0) {
		*gone = true;
		return -1;
	}
	x->stopped = false;
	int rc = -1;
	for (;;) {
		int sig;
		pid_t tid = wait_any(tr, &sig);
		if (tid < 0 || (tid == x->tid && sig < 0)) {
			*gone = true;
			return -1;
		}
		struct thr *y = thr_find(tr, tid);
		if (sig < 0)
			continue;
		if (tid != x->tid) {
			if (!y->stopped)
				ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
			else if (sig > 0)
				y->pending = sig;
			continue;
		}
		if (sig == SIGSEGV) {
			ptrace(PTRACE_GETREGS, x->tid, 0, &r);
			*ret = r.rax;
			rc = r.rip == 0 ? 0 : -1;
			break;
		}
		/* a group stop, or a signal of the program's: it goes on
		 * (its handler runs on top of the call) */
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
	}
	x->stopped = true;
	if (rc == 0 && backlen && mem_read(tr, top, back, backlen) < 0)
		rc = -1;
	/* as it was; the SIGSEGV is ours and is not delivered */
	if (ptrace(PTRACE_SETREGS, x->tid, 0, &saved) < 0 ||
	    ptrace(PTRACE_SETFPREGS, x->tid, 0, &fsaved) < 0)
		*gone = true;
	return rc;
}

/* ---- a thread at a safe point ----------------------------------------- */

struct text {
	uint64_t lo[8], hi[8];
	int n;
};

static int text_fn(const struct mapping *m, void *arg)
{
	struct text *t = arg;
	const char *bn = strrchr(m->path, '/');
	if (!bn || m->perms[2] != 'x' || t->n == 8)
		return 0;
	bn++;
	if (!strncmp(bn, "libc.so", 7) || !strncmp(bn, "ld-linux", 8) ||
	    !strncmp(bn, "libpthread", 10) || !strncmp(bn, "libdl", 5) ||
	    !strncmp(bn, "liballocprof", 12)) {
		t->lo[t->n] = m->lo;
		t->hi[t->n++] = m->hi;
	}
	return 0;
}

/* Whether a thread stopped here may make the calls: not inside the C
 * library or the loader, where it may hold a lock that dlopen or malloc
 * takes (a malloc arena's, the loader's), except waiting in a system call
 * that holds none. A futex wait (a condition variable, a join, a lock's
 * wait) is taken only when nothing else came for a second: a thread waits
 * there in pthread_cond_wait or pthread_join holding nothing, but may
 * wait for a lock of the C library's while it holds another. */
static bool in_futex(pid_t pid, pid_t tid);

static bool safe_point(const struct user_regs_struct *r, const struct text *t, bool futex_ok,
		       pid_t pid, pid_t tid)
{
	if (futex_ok && (long)r->orig_rax == 202)
		return true;
	/* restart_syscall: a wait that a stop interrupted (every thread
	 * stops for each of record's calls) goes on through it: a sleep's
	 * (nanosleep, clock_nanosleep), a poll's, or a futex wait's with a
	 * timeout; which, the thread's wait channel says */
	if ((long)r->orig_rax == 219)
		return futex_ok || !in_futex(pid, tid);
	switch ((long)r->orig_rax) {
	case 0: case 7: case 23: case 34: case 35: case 43: case 45: case 47: case 61:
	case 128: case 130: case 230: case 232: case 270: case 271: case 281: case 288:
		/* read, poll, select, pause, nanosleep, accept, recvfrom,
		 * recvmsg, wait4, rt_sigtimedwait, rt_sigsuspend,
		 * clock_nanosleep, epoll_wait, pselect6, ppoll, epoll_pwait,
		 * accept4: waiting for the world, no lock of libc's held */
		return true;
	default:
		break;
	}
	for (int i = 0; i < t->n; i++)
		if (r->rip >= t->lo[i] && r->rip < t->hi[i])
			return false;
	return true;
}

/* Whether tid waits in the kernel's futex code (its wait channel, which
 * a tracer may read); true when unknown. */
static bool in_futex(pid_t pid, pid_t tid)
{
	char path[64], wchan[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, wchan, sizeof(wchan) - 1);
	close(fd);
	if (n <= 0 || !strcmp(wchan, "0"))
		return true;
	wchan[n] = 0;
	return strstr(wchan, "futex") != NULL;
}

/* One thread stopped at a safe point, the others running: it, or NULL if
 * none came in ~5 s (or the process is gone: *gone). */
static struct thr *pick_thread(struct tracee *tr, bool *gone)
{
	*gone = false;
	for (int round = 0; round < 500; round++) {
		struct text t = { .n = 0 };
		maps_each(tr->pid, text_fn, &t);
		if (stop_all(tr) < 0 || tr->n == 0) {
			*gone = true;
			return NULL;
		}
		struct thr *pick = NULL;
		for (size_t i = 0; i < tr->n && !pick; i++) {
			struct user_regs_struct r;
			if (round == 100)
				tr->futex_ok = true; /* for the calls after this one too */
			if (ptrace(PTRACE_GETREGS, tr->t[i].tid, 0, &r) == 0 &&
			    safe_point(&r, &t, tr->futex_ok, tr->pid, tr->t[i].tid))
				pick = &tr->t[i];
		}
		if (pick) {
			pid_t tid = pick->tid;
			resume_all(tr, pick);
			return thr_find(tr, tid);
		}
		resume_all(tr, NULL);
		pause_ms(10);
	}
	return NULL;
}

/* ---- refusals ---------------------------------------------------------- */

static bool has_ptrace_cap(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	char line[256];
	unsigned long long eff = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff & (1ull << 19); /* CAP_SYS_PTRACE */
}

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Why ptrace was refused (err) on pid, as one line. */
static void say_ptrace_refused(pid_t pid, int err)
{
	struct stat st;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	int scope = yama_scope();
	bool cap = has_ptrace_cap();
	if (stat(p, &st) == 0 && st.st_uid != geteuid() && !cap)
		ap_say("process %d: it belongs to another user (uid %u): attaching needs "
		       "CAP_SYS_PTRACE (run allocprof as root)", (int)pid, (unsigned)st.st_uid);
	else if (scope == 1 && !cap)
		ap_say("process %d: ptrace not permitted: /proc/sys/kernel/yama/ptrace_scope is 1 "
		       "(only a parent may trace); set it to 0, or run allocprof with "
		       "CAP_SYS_PTRACE", (int)pid);
	else if (scope == 2 && !cap)
		ap_say("process %d: ptrace not permitted: /proc/sys/kernel/yama/ptrace_scope is 2 "
		       "(CAP_SYS_PTRACE only): run allocprof as root, with CAP_SYS_PTRACE", (int)pid);
	else if (scope == 3)
		ap_say("process %d: ptrace not permitted: /proc/sys/kernel/yama/ptrace_scope is 3 "
		       "(no process may be traced until reboot)", (int)pid);
	else if (err == EPERM && !cap)
		ap_say("process %d: ptrace not permitted: %s (no CAP_SYS_PTRACE; a container or "
		       "seccomp policy may forbid ptrace)", (int)pid, strerror(err));
	else
		ap_say("process %d: ptrace not permitted: %s (is it traced already, by a "
		       "debugger or strace?)", (int)pid, strerror(err));
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static bool env_has_sampler(pid_t pid)
{
	char p[96];
	proc_file(pid, "environ", p, sizeof(p));
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	static char buf[1 << 16];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	for (char *s = buf; s < buf + n; s += strlen(s) + 1)
		if ((!strncmp(s, "LD_PRELOAD=", 11) && strstr(s, "liballocprof")) ||
		    !strncmp(s, "ALLOCPROF=", 10))
			return true;
	return false;
}

/* 0 if pid's main thread is not a zombie, else the process's thread
 * count (/proc/PID/status Threads:, the zombie leader included): 1, a
 * process that has ended, more, one whose main thread has */
static int zombie_leader(pid_t pid)
{
	char p[64], line[256];
	if (proc_state(pid) != 'Z')
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	int threads = 1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &threads) == 1)
			break;
	if (f)
		fclose(f);
	return threads > 0 ? threads : 1;
}

bool ap_attach_other_root(pid_t pid)
{
	char a[96], b[96];
	proc_file(pid, "ns/mnt", a, sizeof(a));
	if (!same_file(a, "/proc/self/ns/mnt"))
		return true;
	proc_file(pid, "root", b, sizeof(b));
	return !same_file(b, "/proc/self/root");
}

int ap_attach_check(pid_t pid, const char *so, const char *trace)
{
	char p[PATH_MAX + 64];
	if (kill(pid, 0) < 0 && errno == ESRCH) {
		ap_say("process %d: no such process", (int)pid);
		return -1;
	}
	if (pid == getpid()) {
		ap_say("process %d: that is allocprof itself", (int)pid);
		return -1;
	}
	/* A zombie has no maps, nor can it be traced: not a refusal of
	 * ptrace's, nor a process to attach to. A zombie main thread whose
	 * others run on (pthread_exit) is read and traced through them. */
	if (zombie_leader(pid) == 1) {
		ap_say("process %d: it has ended (a zombie its parent has not reaped yet)", (int)pid);
		return -1;
	}
	/* maps is readable to who may trace the process */
	proc_file(pid, "maps", p, sizeof(p));
	FILE *f = fopen(p, "re");
	char line[64];
	if (!f || !fgets(line, sizeof(line), f)) {
		say_ptrace_refused(pid, f ? (ferror(f) ? errno : EPERM) : errno);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	struct mapping m;
	if (!find_lib(pid, "libc.so.", false, &m)) {
		/* the dynamic loader there without the C library: a process
		 * that has just started (a dlopen called into it now would
		 * run in a C library not set up yet) */
		if (find_lib(pid, "ld-linux", false, &m) && !find_lib(pid, "libc-", false, &m))
			ap_say("process %d: it is still starting (its dynamic loader has not loaded "
			       "the C library yet): try again in a moment", (int)pid);
		else
			ap_say("process %d: it has no libc.so (statically linked?): the sampler "
			       "cannot be loaded into it", (int)pid);
		return -1;
	}
	/* an earlier attach's sampler, its file replaced since: record would
	 * read the entry points' places from the new file */
	struct mapping old;
	size_t sl = strlen(so);
	if (find_lib(pid, so, true, &old) && old.path[sl]) {
		ap_say("process %d: the sampler an earlier attach loaded into it (%s) was replaced "
		       "since (a rebuild or an upgrade): it can be attached again once it restarts",
		       (int)pid, so);
		return -1;
	}
	if (env_has_sampler(pid)) {
		ap_say("process %d: it already has the sampler (it was started by allocprof record "
		       "or with liballocprof.so in LD_PRELOAD)", (int)pid);
		return -1;
	}
	/* Another mount namespace (a container) or root (a chroot): the
	 * sampler and the trace are opened there, by these paths. */
	if (ap_attach_other_root(pid)) {
		proc_file(pid, "root", p, 96);
		snprintf(p + strlen(p), sizeof(p) - strlen(p), "%s", so);
		if (!same_file(p, so)) {
			ap_say("process %d: it is in another mount namespace or root (a container, a "
			       "chroot?), where %s is not this file: copy liballocprof.so into its file system and "
			       "point ALLOCPROF_PRELOAD at it as seen from both sides",
			       (int)pid, so);
			return -1;
		}
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", trace);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = 0;
		proc_file(pid, "root", p, 96);
		snprintf(p + strlen(p), sizeof(p) - strlen(p), "%s", dir);
		if (!same_file(p, dir)) {
			ap_say("process %d: it is in another mount namespace or root (a container, a "
			       "chroot?), where %s is not this directory: choose a -o in a directory both sides "
			       "share", (int)pid, dir);
			return -1;
		}
	}
	return 0;
}

pid_t ap_pid_inside(pid_t pid)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	pid_t in = pid;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		char *last = strrchr(line, '\t');
		if (last && atoi(last + 1) > 0)
			in = (pid_t)atoi(last + 1);
		break;
	}
	if (f)
		fclose(f);
	return in;
}

/* ---- attach and detach ---------------------------------------------- */

static int tracee_open(struct tracee *tr, pid_t pid)
{
	memset(tr, 0, sizeof(*tr));
	tr->pid = pid;
	char p[96];
	int rc = seize_all(tr);
	proc_file(pid, "mem", p, sizeof(p));
	if (rc == 0 && (tr->mem = open(p, O_RDWR | O_CLOEXEC)) < 0)
		rc = -errno;
	if (rc < 0) {
		say_ptrace_refused(pid, -rc);
		release_all(tr);
		free(tr->t);
		return -1;
	}
	struct mapping libc;
	if (find_lib(pid, "libc.so.", false, &libc))
		tr->errno_fn = remote_sym(pid, &libc, "__errno_location");
	return 0;
}

static void tracee_close(struct tracee *tr)
{
	release_all(tr);
	if (tr->mem >= 0)
		close(tr->mem);
	free(tr->t);
	tr->t = NULL;
}

/* The call on a thread at a safe point; its result in *ret. 0, -1 after
 * saying why (what: the call's name). */
static int call_in(struct tracee *tr, const char *what, uint64_t fn, const uint64_t args[3],
		   const void *data, size_t dlen, void *back, size_t backlen, uint64_t *ret)
{
	bool gone;
	struct thr *x = pick_thread(tr, &gone);
	if (!x) {
		if (gone)
			ap_say("process %d: it is gone", (int)tr->pid);
		else
			ap_say("process %d: none of its threads came out of the C library within "
			       "5 s to call %s: try again", (int)tr->pid, what);
		return -1;
	}
	bool exec_d;
	int rc = remote_call(tr, x, fn, args, data, dlen, back, backlen, ret, &gone, &exec_d);
	if (!gone)
		resume_thr(x);
	if (tr->call_t0)
		stops_add(&tr->st.call_ns, &tr->st.call_max_ns, &tr->st.call_n,
			  now_ns() - tr->call_t0);
	tr->call_t0 = 0;
	if (rc < 0) {
		if (gone)
			ap_say("process %d: it is gone", (int)tr->pid);
		else if (exec_d)
			ap_say("process %d: it exec'd another program meanwhile: try again",
			       (int)tr->pid);
		else
			ap_say("process %d: %s failed inside it (a fault): the process may not "
			       "be well", (int)tr->pid, what);
		return -1;
	}
	return 0;
}

/* The sampler's TLS variables of every thread as a new thread's (zeros):
 * an attach after a detach starts from scratch (its counters, its
 * buffers). All threads stopped. info: struct allocprof_attach_info's
 * tls_off[8], tls_size[8]. */
static void reset_tls(struct tracee *tr, const uint64_t *info)
{
	static const uint8_t zeros[256];
	for (size_t i = 0; i < tr->n; i++) {
		struct user_regs_struct r;
		if (ptrace(PTRACE_GETREGS, tr->t[i].tid, 0, &r) < 0)
			continue;
		for (int k = 0; k < 8 && info[8 + k]; k++)
			if (info[8 + k] <= sizeof(zeros))
				mem_write(tr, r.fs_base + info[k], zeros, info[8 + k]);
	}
}

int ap_attach(pid_t pid, const char *so, const char *cfg, struct ap_attached *a)
{
	struct tracee tr;
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	if (tracee_open(&tr, pid) < 0)
		return -1;
	int rc = -1;
	struct mapping libc, lib;
	uint64_t ret, args[3] = { 0, RTLD_NOW | RTLD_LOCAL, 0 };
	if (!find_lib(pid, "libc.so.", false, &libc)) {
		ap_say("process %d: it has no libc.so (statically linked?)", (int)pid);
		goto out;
	}
	uint64_t fn_dlopen = remote_sym(pid, &libc, "dlopen");
	uint64_t fn_dlerror = remote_sym(pid, &libc, "dlerror");
	if (!fn_dlopen) {
		/* before glibc 2.34, in libdl if the program has it, else libc's own */
		struct mapping dl;
		if (find_lib(pid, "libdl.so.", false, &dl)) {
			fn_dlopen = remote_sym(pid, &dl, "dlopen");
			fn_dlerror = remote_sym(pid, &dl, "dlerror");
		} else {
			fn_dlopen = remote_sym(pid, &libc, "__libc_dlopen_mode");
			fn_dlerror = 0;
		}
	}
	if (!fn_dlopen) {
		ap_say("process %d: no dlopen found in its C library (%s)", (int)pid, libc.path);
		goto out;
	}
	if (call_in(&tr, "dlopen", fn_dlopen, args, so, strlen(so) + 1, NULL, 0, &ret) < 0)
		goto out;
	if (!ret) {
		char msg[512] = "";
		uint64_t e = 0, none[3] = { 0, 0, 0 };
		if (fn_dlerror && call_in(&tr, "dlerror", fn_dlerror, none, NULL, 0, NULL, 0, &e) == 0 &&
		    e)
			mem_read(&tr, e, msg, sizeof(msg) - 1); /* may stop short of a page end */
		msg[sizeof(msg) - 1] = 0;
		ap_say("process %d: the sampler could not be loaded: %s", (int)pid,
		       msg[0] ? msg : "dlopen failed");
		goto out;
	}
	if (!find_lib(pid, so, true, &lib)) {
		ap_say("process %d: %s is not among its mappings after dlopen", (int)pid, so);
		goto out;
	}
	a->lib_base = lib.lo;
	snprintf(a->lib, sizeof(a->lib), "%s", so);
	uint64_t minv = 0;
	uint64_t v_prep = elf_sym(so, "allocprof_attach_prepare", &minv);
	uint64_t v_att = elf_sym(so, "allocprof_attach", &minv);
	uint64_t v_det = elf_sym(so, "allocprof_detach", &minv);
	uint64_t v_fin = elf_sym(so, "allocprof_attach_finish", &minv);
	uint64_t v_info = elf_sym(so, "allocprof_attach_info", &minv);
	if (!v_prep || !v_att || !v_det || !v_fin || !v_info) {
		ap_say("%s: not a sampler that can be attached (an older build?)", so);
		goto out;
	}
	uint64_t base = lib.lo - minv;
	a->fn_detach = base + v_det;
	a->fn_finish = base + v_fin;
	a->info_addr = base + v_info;
	uint64_t none[3] = { 0, 0, 0 };
	if (call_in(&tr, "the sampler's preparation", base + v_prep, none, NULL, 0, NULL, 0,
		    &ret) < 0)
		goto out;
	if ((int64_t)ret == -EBUSY || (int64_t)ret == -EEXIST) {
		ap_say("process %d: it already has the sampler (%s)", (int)pid,
		       (int64_t)ret == -EEXIST ? "preloaded" : "another allocprof record -p is "
							 "attached to it");
		goto out;
	} else if ((int64_t)ret < 0) {
		ap_say("process %d: the sampler could not prepare: %s", (int)pid,
		       strerror((int)-(int64_t)ret));
		goto out;
	}
	/* struct allocprof_attach_info: tls_off[8], tls_size[8], in_off,
	 * text_lo, text_hi */
	uint64_t info[19];
	if (mem_read(&tr, a->info_addr, info, sizeof(info)) < 0) {
		ap_say("process %d: its memory cannot be read", (int)pid);
		goto out;
	}
	a->in_off = (int64_t)info[16];
	a->text_lo = info[17];
	a->text_hi = info[18];
	if (stop_all(&tr) == 0)
		reset_tls(&tr, info);
	else {
		resume_all(&tr, NULL);
		ap_say("process %d: the sampler's thread state could not be reset", (int)pid);
		goto out;
	}
	resume_all(&tr, NULL);
	char buf[PATH_MAX + 256];
	memset(buf, 0, sizeof(buf));
	snprintf(buf, sizeof(buf), "%s", cfg);
	if (call_in(&tr, "the sampler's start", base + v_att, none, buf, sizeof(buf), buf,
		    sizeof(buf), &ret) < 0)
		goto out;
	if ((int64_t)ret < 0) {
		ap_say("process %d: the sampler could not start: %s%s", (int)pid,
		       strerror((int)-(int64_t)ret),
		       (int64_t)ret == -EIO ? " (could the process not create the trace?)" : "");
		goto out;
	}
	buf[sizeof(a->trace) - 1] = 0; /* the sampler's path is shorter than PATH_MAX */
	memcpy(a->trace, buf, sizeof(a->trace));
	rc = 0;
out:
	a->futex_ok = tr.futex_ok;
	a->attach_stops = tr.st;
	tracee_close(&tr);
	return rc;
}

/* Whether some thread is inside the sampler: its thunk counter set, or
 * its instruction pointer in the library's text. All threads stopped. */
static bool any_inside(struct tracee *tr, const struct ap_attached *a)
{
	for (size_t i = 0; i < tr->n; i++) {
		struct user_regs_struct r;
		uint32_t in = 0;
		if (ptrace(PTRACE_GETREGS, tr->t[i].tid, 0, &r) < 0)
			continue;
		if (r.rip >= a->text_lo && r.rip < a->text_hi)
			return true;
		if (mem_read(tr, r.fs_base + (uint64_t)a->in_off, &in, sizeof(in)) == 0 && in)
			return true;
	}
	return false;
}

/* Whether pid has ended: gone, or a zombie (whose maps are empty: no
 * exec to be told from its end) */
static bool ended(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	char st = proc_state(pid);
	/* (a zombie main thread with others running on is not the end) */
	return !st || st == 'X' || (st == 'Z' && zombie_leader(pid) <= 1);
}

bool ap_attached_here(const struct ap_attached *a)
{
	/* (find_lib takes a sampler whose file was replaced since: a
	 * rebuild, an upgrade) */
	struct mapping lib;
	return find_lib(a->pid, a->lib, true, &lib) && lib.lo == a->lib_base;
}

int ap_detach(struct ap_attached *a)
{
	struct tracee tr;
	if (ended(a->pid))
		return 1;
	/* an exec replaced the image (and the sampler with it) */
	if (!ap_attached_here(a))
		return ended(a->pid) ? 1 : 2;
	if (tracee_open(&tr, a->pid) < 0)
		return ended(a->pid) ? 1 : -1;
	tr.futex_ok = a->futex_ok;
	int rc = -1;
	uint64_t ret, none[3] = { 0, 0, 0 };
	if (call_in(&tr, "the sampler's detach", a->fn_detach, none, NULL, 0, NULL, 0, &ret) < 0)
		goto out;
	/* no thread inside the sampler any more: up to ~10 s */
	bool inside = true;
	for (int i = 0; i < 10000 && inside; i++) {
		if (stop_all(&tr) < 0)
			goto out;
		inside = any_inside(&tr, a);
		resume_all(&tr, NULL);
		if (inside)
			pause_ms(1);
	}
	if (inside) {
		ap_say("process %d: a thread stayed inside the sampler for 10 s: the trace is "
		       "left open and the sampler running idle", (int)a->pid);
		goto out;
	}
	if (call_in(&tr, "the sampler's end", a->fn_finish, none, NULL, 0, NULL, 0, &ret) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0 && ended(a->pid)) /* (its last threads went meanwhile) */
		rc = 1;
	a->detach_stops = tr.st;
	tracee_close(&tr);
	return rc;
}
