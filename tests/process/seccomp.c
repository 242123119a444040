/* tests/process/seccomp.c: a program that installs a seccomp filter by
 * hand (prctl PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with a classic BPF
 * program; no libseccomp) refusing system calls it does not make itself
 * but the sampler does: newfstatat, openat, gettid, getpid and
 * rt_sigprocmask (issue 24). `seccomp errno`: they fail with EPERM;
 * `seccomp killall`: they kill the process (SECCOMP_RET_KILL_PROCESS);
 * `seccomp kill`: the first four kill it; `seccomp fstat`: newfstatat
 * alone fails with EPERM, and after_filter runs again in a forked child
 * (whose trace the sampler makes, and must take for its own);
 * `seccomp fcntl`: fcntl alone refused, and the forked child executes
 * /bin/true at once (its image recorded nothing: its trace would be
 * handed on);
 * `seccomp usage`: getrusage alone fails with EPERM (END's context
 * switches and faults).
 * before_filter allocates 1000 blocks and frees them, after_filter 2000;
 * stdout's buffer is made before the filter (its fstat). Exits 0. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp-filter.h"

static void *volatile sink;

__attribute__((noinline)) static void before_filter(void)
{
	for (int i = 0; i < 1000; i++) {
		sink = malloc(100 + (size_t)i);
		memset(sink, i, 100);
		free(sink);
	}
}

__attribute__((noinline)) static void after_filter(void)
{
	for (int i = 0; i < 2000; i++) {
		sink = malloc(200 + (size_t)i);
		memset(sink, i, 200);
		free(sink);
	}
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "errno";
	int fst = !strcmp(how, "fstat"), use = !strcmp(how, "usage"), fcn = !strcmp(how, "fcntl");
	int kill = strcmp(how, "errno") != 0 && !fst && !use && !fcn;
	printf("seccomp %s: start\n", how);
	fflush(stdout);
	before_filter();
	static const int getrusage_nr[] = { SYS_getrusage }, fcntl_nr[] = { SYS_fcntl };
	if ((use   ? seccomp_refuse_list(SECCOMP_RET_ERRNO | EPERM, getrusage_nr, 1, 0)
	     : fcn ? seccomp_refuse_list(SECCOMP_RET_ERRNO | EPERM, fcntl_nr, 1, 0)
		 : seccomp_refuse(kill ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | EPERM,
				  fst ? 1 : strcmp(how, "kill") ? 5 : 4, 0)) < 0) {
		perror("seccomp");
		return 2;
	}
	after_filter();
	if (fst || fcn) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			if (fcn)
				execl("/bin/true", "true", (char *)NULL);
			after_filter();
			_exit(0);
		}
		int st = -1;
		waitpid(p, &st, 0);
		printf("seccomp: done, child %d\n", st);
		return 0;
	}
	if (kill)
		printf("seccomp: done\n");
	else
		printf("seccomp: done, getpid says %s\n",
		       syscall(SYS_getpid) < 0 && errno == EPERM ? "EPERM" : "a pid");
	return 0;
}
