/* creds.c: the calls through which a process running as root gives up
 * the right to open its trace by its path: the user and group ids
 * (setuid, setresuid, ... setgroups), capabilities (capset) and its root
 * directory (chroot). A trace whose chunks go through the ring holds no
 * descriptor (tracefile.c): an exec hands the next image the trace by a
 * descriptor opened again by its path, and the sampler falls back to one
 * when record stops draining. Before such a call the descriptor is opened
 * while it still can be (trace_direct) and kept from then on, and so is
 * the trace of the image it may exec into (trace_next_make): a daemon
 * that drops root (its workers forked, setuid to a worker user, exec'd;
 * sudo -u, runuser) has the events of the image that dropped root and of
 * the next ones, at the cost of those two descriptors (allocprof-record(1),
 * DESCRIPTORS). A raw system call (not through
 * libc's wrapper, nor its syscall()) is not seen. */
#include "sampler-int.h"

#include <grp.h>
#include <sys/syscall.h>

/* Before a call that may take the right away: only root's (another user
 * cannot change to a user whose files it could not open already), only
 * the process's own (a vfork child shares its parent's state). */
static void creds_hold(void)
{
	if (!__atomic_load_n(&tfile.ring, __ATOMIC_RELAXED) || proc.pid != sys_getpid() ||
	    geteuid() != 0)
		return;
	int saved = errno;
	tls.guard++;
	if (trace_direct(1) == 0)
		trace_next_make();
	tls.guard--;
	errno = saved;
}

/* The C library's function `name`, found once. */
static void *next(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		tls.guard++;
		f = dlsym(RTLD_NEXT, name);
		tls.guard--;
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

#define CREDS_WRAPPER(name, params, args)                                    \
	EXPORT int name params                                                \
	{                                                                     \
		static void *real;                                            \
		int (*f) params = (int (*) params)next(&real, #name);         \
		if (!f) {                                                     \
			errno = ENOSYS;                                       \
			return -1;                                            \
		}                                                             \
		creds_hold();                                                 \
		return f args;                                                \
	}

CREDS_WRAPPER(setuid, (uid_t u), (u))
CREDS_WRAPPER(seteuid, (uid_t u), (u))
CREDS_WRAPPER(setreuid, (uid_t r, uid_t e), (r, e))
CREDS_WRAPPER(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
CREDS_WRAPPER(setgid, (gid_t g), (g))
CREDS_WRAPPER(setegid, (gid_t g), (g))
CREDS_WRAPPER(setregid, (gid_t r, gid_t e), (r, e))
CREDS_WRAPPER(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
CREDS_WRAPPER(setgroups, (size_t n, const gid_t *l), (n, l))
CREDS_WRAPPER(chroot, (const char *p), (p))
int capset(void *h, void *d); /* (glibc declares it in no header) */
CREDS_WRAPPER(capset, (void *h, void *d), (h, d))

/* The same calls made through syscall() (libcap's capset, programs that
 * change ids per thread): whether nr is one. */
int creds_call(long nr)
{
	switch (nr) {
	case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid:
	case SYS_setresuid: case SYS_setresgid: case SYS_setgroups: case SYS_setfsuid:
	case SYS_setfsgid: case SYS_capset: case SYS_chroot: case SYS_pivot_root:
		creds_hold();
		return 1;
	default:
		return 0;
	}
}
