/* The sampler's unwinding, as the program may meet it (tests/record/
 * unwinder.sh). usage: unwinder MODE [N]
 *   cancel N    N rounds: a thread that allocates through deep stacks is
 *               cancelled (pthread_cancel, deferred: pthread_testcancel
 *               now and then) and joined; prints the rounds
 *   sigpipe2    a SIGALRM every 50 us whose handler makes a pipe (pipe2),
 *               writes a byte into it and closes it, while the main
 *               thread allocates through deep stacks (the handler often
 *               interrupts the sampler); prints how many pipes were made
 *               and how many were not usable pipes
 *   seccomp     a seccomp filter that refuses gettid and process_vm_readv
 *               (EPERM), then 1000 allocations at work(): their stacks
 *               must still name work
 * Allocations through a volatile sink: GCC keeps every malloc/free pair. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "unwinder_deep.h"

static void *canceled(void *arg)
{
	for (unsigned i = 0;; i++) {
		deep((int)(i % 40));
		if ((i & 1023) == 0)
			pthread_testcancel();
	}
	return arg;
}

static volatile sig_atomic_t pipes, bad;

static void on_alarm(int s)
{
	(void)s;
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return;
	pipes++;
	if (p[0] < 0 || p[1] < 0 || write(p[1], "x", 1) != 1 || close(p[0]) || close(p[1]))
		bad++;
}

static __attribute__((noinline)) void work(void)
{
	for (int i = 0; i < 1000; i++) {
		sink = malloc(100);
		free(sink);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "cancel")) {
		int rounds = argc > 2 ? atoi(argv[2]) : 10;
		for (int r = 0; r < rounds; r++) {
			pthread_t t;
			pthread_create(&t, NULL, canceled, NULL);
			usleep(20000);
			pthread_cancel(t);
			pthread_join(t, NULL);
		}
		printf("rounds %d\n", rounds);
		return 0;
	}
	if (!strcmp(argv[1], "sigpipe2")) {
		struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = { { 0, 50 }, { 0, 50 } }, off = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_REAL, &it, NULL);
		for (int i = 0; i < 200000; i++)
			deep(i % 30);
		setitimer(ITIMER_REAL, &off, NULL);
		printf("pipes %s, bad %d\n", pipes > 0 ? "made" : "none", (int)bad);
		return 0;
	}
	if (!strcmp(argv[1], "seccomp")) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettid, 1, 0),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog p = { sizeof(f) / sizeof(f[0]), f };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p)) {
			perror("seccomp");
			return 1;
		}
		work();
		puts("done");
		return 0;
	}
	return 2;
}
