/* refused.c: system calls the program's seccomp filter refuses to the
 * sampler. A program may install a filter (prctl PR_SET_SECCOMP, or the
 * seccomp system call) that answers EPERM, EACCES or ENOSYS to whatever
 * it does not allow, and the sampler's own calls (the trace descriptor's
 * check, opening a trace, gettid, getpid) are not on the program's list.
 * Such an answer says nothing about the file or the process: it must not
 * be taken for "closed" or "another file" (the whole trace was lost that
 * way, and read as killed). The places that make these calls ask
 * refused() and go on without the answer where they can; END names every
 * refused call (docs/trace-format.md, END key `refused`), and `record`
 * says which. A filter that kills instead (SECCOMP_RET_KILL_*) kills the
 * program at the sampler's first such call: what was flushed before it
 * stays, and prctl, through which filters are installed, flushes first. */
#include <sys/prctl.h>
#include "sampler-int.h"

#define REFUSED_MAX 8
static struct {
	int nr, err;
} refusals[REFUSED_MAX];
static int nrefusals;

/* Whether a seccomp filter is in force: prctl answers 2, or is refused
 * itself. */
static int filtered(void)
{
	int saved = errno;
	long r = syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0);
	errno = saved;
	return r != 0;
}

int refused(int nr, int err)
{
	if (err != EPERM && err != EACCES && err != ENOSYS)
		return 0;
	if (err != ENOSYS && !filtered())
		return 0; /* a real EPERM or EACCES (opening a file, say) */
	int n = __atomic_load_n(&nrefusals, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && i < REFUSED_MAX; i++)
		if (refusals[i].nr == nr)
			return 1;
	int at = __atomic_fetch_add(&nrefusals, 1, __ATOMIC_ACQ_REL);
	if (at < REFUSED_MAX) {
		refusals[at].nr = nr;
		refusals[at].err = err;
	}
	return 1;
}

/* END's `refused` key ("nr:errno nr:errno ..."), at p; 0 bytes if no call
 * was refused. At most REFUSED_PUT_MAX bytes. */
size_t refused_put(uint8_t *p)
{
	int n = __atomic_load_n(&nrefusals, __ATOMIC_ACQUIRE);
	if (n > REFUSED_MAX)
		n = REFUSED_MAX;
	if (!n)
		return 0;
	char s[REFUSED_MAX * 24];
	size_t k = 0;
	for (int i = 0; i < n; i++) {
		if (!refusals[i].nr)
			continue; /* being noted by another thread */
		if (k)
			s[k++] = ' ';
		k += put_dec(s + k, (uint64_t)refusals[i].nr);
		s[k++] = ':';
		k += put_dec(s + k, (uint64_t)refusals[i].err);
	}
	return ap_put_kv_str(p, AP_EK_REFUSED, s, k);
}

/* prctl: a seccomp filter, or the no_new_privs it needs first, may be on
 * its way, after which the sampler's writes or its checks may be refused
 * or fatal: everything recorded so far goes to the trace first. */
int prctl(int option, ...);

EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if ((option == PR_SET_SECCOMP || option == PR_SET_NO_NEW_PRIVS) &&
	    __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) == AP_ON && !tls.guard) {
		int saved = errno;
		tls.guard++;
		flush_all(0);
		tls.guard--;
		errno = saved;
	}
	return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
}
