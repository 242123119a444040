/* tests/process/seccomp-filter.h: a seccomp filter installed by hand (a
 * classic BPF program, no libseccomp) that refuses system calls the
 * sampler makes and the test programs do not: newfstatat, openat, gettid,
 * getpid, rt_sigprocmask, the first n of them, with action
 * (SECCOMP_RET_KILL_PROCESS, or SECCOMP_RET_ERRNO | an errno). Installed
 * with prctl(PR_SET_SECCOMP), or with the seccomp system call through
 * syscall(3) when by_syscall (as libseccomp does). 0, or -1 and errno.
 * seccomp_refuse_list: the n calls of nrs instead. */
#ifndef TESTS_SECCOMP_FILTER_H
#define TESTS_SECCOMP_FILTER_H
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int seccomp_refuse_list(unsigned action, const int *refused, size_t n,
				      int by_syscall)
{
	struct sock_filter f[2 + 2 * 16];
	unsigned k = 0;
	if (n > 16)
		return -1;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned)refused[i], 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { .len = (unsigned short)k, .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	if (by_syscall)
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static inline int seccomp_refuse(unsigned action, size_t n, int by_syscall)
{
	static const int refused[] = { SYS_newfstatat, SYS_openat, SYS_gettid, SYS_getpid,
				       SYS_rt_sigprocmask };
	return seccomp_refuse_list(action, refused, n < 5 ? n : 5, by_syscall);
}
#endif
