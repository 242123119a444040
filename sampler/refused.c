/* refused.c: system calls the program's seccomp filter refuses to the
 * sampler. A program may install a filter (prctl PR_SET_SECCOMP, or the
 * seccomp system call) that answers EPERM, EACCES or ENOSYS to whatever
 * it does not allow, and the sampler's own calls (the trace descriptor's
 * check, opening a trace, gettid, getpid, the affinity read for HEADER's
 * allowed_cpus) are not on the program's list.
 * Such an answer says nothing about the file or the process: it must not
 * be taken for "closed" or "another file" (the whole trace was lost that
 * way, and read as killed). The places that make these calls ask
 * refused() and go on without the answer where they can; END names every
 * refused call (docs/trace-format.md, END key `refused`), and `record`
 * says which. A filter that kills instead (SECCOMP_RET_KILL_*) kills the
 * program at the sampler's first such call: what was flushed before it
 * stays, and prctl, through which filters are installed, flushes first. */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include "sampler-int.h"

/* The filters the program installed through prctl or syscall (which
 * libseccomp uses), copied: the sampler runs them on a call before
 * making it (may_call), so that a filter that would kill the process
 * for one of the sampler's own calls (SECCOMP_RET_KILL_*, TRAP) is not
 * given the chance; the call is then done without, as for a refusal. A
 * filter installed by a raw system call is not seen, nor one inherited
 * across exec. */
/* A system call made here, not through libc's syscall (which this
 * library interposes): libc's convention, -1 and errno. */
long raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if ((unsigned long)ret > -4096ul) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

#define FILTERS_MAX 16
static struct sock_filter *filters[FILTERS_MAX];
static unsigned short filter_len[FILTERS_MAX];
static int nfilters;	/* FILTERS_MAX + 1: one was not kept, the verdicts are unknown */
static int strict;	/* SECCOMP_MODE_STRICT: read, write, exit, sigreturn only */

/* How many filters the sampler knows of (strict mode counting many): a
 * caller that asked may_call for a call whose arguments do not matter
 * asks again only when it changed. */
unsigned filters_count(void)
{
	return (unsigned)__atomic_load_n(&nfilters, __ATOMIC_ACQUIRE) + (strict ? 1u << 20 : 0);
}

static void filter_keep(const struct sock_fprog *prog)
{
	int n = __atomic_load_n(&nfilters, __ATOMIC_ACQUIRE);
	struct sock_filter *copy = NULL;
	if (prog && prog->len && prog->len <= BPF_MAXINSNS && n < FILTERS_MAX &&
	    (copy = map_mem(prog->len * sizeof(*copy)))) {
		memcpy(copy, prog->filter, prog->len * sizeof(*copy));
		filters[n] = copy;
		filter_len[n] = prog->len;
		__atomic_store_n(&nfilters, n + 1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&nfilters, FILTERS_MAX + 1, __ATOMIC_RELEASE);
	}
}

/* One classic BPF program over d, as the kernel runs it (seccomp's
 * checker allows only these instructions); SECCOMP_RET_KILL_PROCESS for
 * anything it would not have accepted. */
static uint32_t bpf_run(const struct sock_filter *f, unsigned len, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	for (unsigned pc = 0; pc < len; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? x : k;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;
			if (BPF_MODE(i->code) == BPF_ABS && k <= sizeof(*d) - 4 && !(k & 3))
				memcpy(&v, (const uint8_t *)d + k, 4);
			else if (BPF_MODE(i->code) == BPF_IMM)
				v = k;
			else if (BPF_MODE(i->code) == BPF_MEM && k < BPF_MEMWORDS)
				v = mem[k];
			else if (BPF_MODE(i->code) == BPF_LEN)
				v = sizeof(*d);
			else
				return SECCOMP_RET_KILL_PROCESS;
			if (BPF_CLASS(i->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return SECCOMP_RET_KILL_PROCESS;
			mem[k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV: if (!src) return 0; a /= src; break;
			case BPF_MOD: if (!src) return 0; a %= src; break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			break;
		case BPF_JMP: {
			int t;
			switch (BPF_OP(i->code)) {
			case BPF_JA: pc += k; continue;
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			pc += t ? i->jt : i->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? a : k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;
}

/* Whether the sampler may make system call nr with these arguments: 1
 * unless a filter it knows would refuse it (noted: refused) or kill the
 * process for it (noted with errno 0); 0 then, and the caller does
 * without. The most restrictive verdict of all filters wins. */
int may_call(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	int n = __atomic_load_n(&nfilters, __ATOMIC_ACQUIRE);
	if (LIKELY(!n && !strict))
		return 1;
	if (strict || n > FILTERS_MAX)
		return refused(nr, 0), 0;
	struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64,
				  .args = { a0, a1, a2, a3, 0, 0 } };
	uint32_t worst = SECCOMP_RET_ALLOW;
	for (int i = 0; i < n; i++) {
		uint32_t r = bpf_run(filters[i], filter_len[i], &d);
		if ((int32_t)(r & SECCOMP_RET_ACTION_FULL) < (int32_t)(worst & SECCOMP_RET_ACTION_FULL))
			worst = r;
	}
	uint32_t act = worst & SECCOMP_RET_ACTION_FULL;
	if (act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG)
		return 1;
	refused(nr, act == SECCOMP_RET_ERRNO ? (int)(worst & SECCOMP_RET_DATA) : 0);
	return 0;
}

#define REFUSED_MAX 8
static struct {
	int nr, err;
} refusals[REFUSED_MAX];
static int nrefusals;

/* Whether a seccomp filter is in force: prctl answers 2, or is refused
 * itself. */
static int filtered(void)
{
	if (__atomic_load_n(&nfilters, __ATOMIC_ACQUIRE) || strict)
		return 1; /* and prctl may be one the filter kills for */
	int saved = errno;
	long r = raw_syscall6(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0);
	errno = saved;
	return r != 0;
}

/* err: what the call answered, or 0 for a call a known filter would
 * have killed the process for (may_call), which was not made. */
int refused(int nr, int err)
{
	if (err && err != EPERM && err != EACCES && err != ENOSYS)
		return 0;
	if (err && err != ENOSYS && !filtered())
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

/* A seccomp filter, or the no_new_privs it needs first, is on its way,
 * after which the sampler's writes or its checks may be refused or
 * fatal: everything recorded so far goes to the trace first. */
static void flush_before_filter(void)
{
	if (__atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) != AP_ON || tls.guard)
		return;
	int saved = errno;
	tls.guard++;
	flush_all(0);
	tls.guard--;
	errno = saved;
}

/* prctl: filters installed by PR_SET_SECCOMP are kept (may_call). */
int prctl(int option, ...);

EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP || option == PR_SET_NO_NEW_PRIVS)
		flush_before_filter();
	long rc = raw_syscall6(SYS_prctl, option, (long)a2, (long)a3, (long)a4, (long)a5, 0);
	if (rc == 0 && option == PR_SET_SECCOMP) {
		if (a2 == SECCOMP_MODE_FILTER)
			filter_keep((const struct sock_fprog *)a3);
		else if (a2 == SECCOMP_MODE_STRICT)
			strict = 1;
	}
	return (int)rc;
}

/* syscall: libseccomp installs its filters with syscall(SYS_seccomp, ...),
 * kept as prctl's are; an exec made through it (syscall(SYS_execveat,
 * ...), syscall(SYS_execve, ...)) goes to the exec wrappers, as execveat(3)
 * and execve(3) do: the image it replaces ended its trace as if it had
 * exited by exit_group, and the new one took the launched process's
 * trace name with -2 and left its buffers file; every other call passes
 * straight through. */
long syscall(long nr, ...);

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (UNLIKELY(nr == SYS_seccomp) && (a[0] == SECCOMP_SET_MODE_FILTER ||
					     a[0] == SECCOMP_SET_MODE_STRICT)) {
		flush_before_filter();
		long rc = raw_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (rc >= 0 && a[0] == SECCOMP_SET_MODE_FILTER)
			filter_keep((const struct sock_fprog *)a[2]);
		else if (rc >= 0)
			strict = 1;
		return rc;
	}
	if (UNLIKELY(nr == SYS_write) && (int)a[0] == UNW_FD_W &&
	    from_unwinder(__builtin_return_address(0)))
		return unw_check((const void *)a[1]);
	if (UNLIKELY(tfile.ring))
		creds_call(nr); /* (before ids change: creds.c) */
	/* the descriptor calls that would reach the sampler's own (programs
	 * built on a glibc without close_range() make it through syscall()):
	 * as the interposed ones do them (tracefile.c) */
	if (UNLIKELY(tfile.fd >= 0 || tfile.next_fd >= 0)) {
		switch (nr) {
		case SYS_close:
			return close((int)a[0]);
		case SYS_close_range:
			return close_range((unsigned)a[0], (unsigned)a[1], (int)a[2]);
		case SYS_dup2:
			return dup2((int)a[0], (int)a[1]);
		case SYS_dup3:
			return dup3((int)a[0], (int)a[1], (int)a[2]);
		default:
			break;
		}
	}
	if (UNLIKELY(nr == SYS_execve))
		return execve((const char *)a[0], (char *const *)a[1], (char *const *)a[2]);
	if (UNLIKELY(nr == SYS_execveat))
		return execveat((int)a[0], (const char *)a[1], (char *const *)a[2],
				(char *const *)a[3], (int)a[4]);
	return raw_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
