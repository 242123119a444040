/* The program of tests/record/files.sh: processes whose traces must each
 * get a file of their own (reused pids, pid namespaces, planted names),
 * and a child that drops to another user before it execs. The mode is
 * the first argument:
 *   alloc N [MS]    N malloc/free pairs of 100 bytes, MS ms of sleep after
 *   fork N          N children one after the other, 1000 pairs each, then
 *                   1000 pairs in the parent
 *   forkexec N      fork N, then exec "alloc 500"
 *   exec N [MS]     exec "alloc N" at once (after MS ms of sleep), having
 *                   allocated nothing
 *   reuse           (pid 2 of a new pid namespace) a child, then another
 *                   with the same pid, set through ns_last_pid; prints
 *                   "reused" or "not reused: why"; 1000 pairs in each
 *   dropexec [N]    a child that sets its user to 65534 (nobody), makes N
 *                   pairs (default 0) and execs "alloc 1000"; 10 pairs in
 *                   the parent
 *   groupsexec N    as dropexec, but the child stays root: it only
 *                   clears its supplementary groups
 *   dropclean       a child that sets its user to 65534 and execs "alloc
 *                   0 3000" with an environment of its own (no sampler);
 *                   the parent returns at once
 *   dropdup N       as dropexec, and before it execs the child raises its
 *                   soft RLIMIT_NOFILE to the hard one, puts /dev/null
 *                   on every descriptor above 2 it finds open (dup2) and
 *                   closes it: each must close
 *   dropsys N       as dropexec, and before it execs the child closes every
 *                   descriptor above 2 by syscall(SYS_close_range), as
 *                   programs built on a glibc without close_range() do
 *   dropfork        sets its user to 65534, then forks two children one
 *                   after the other, 100 pairs each; 10 pairs in itself
 *   touch PATH      creates PATH (the program ran) */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *volatile sink; /* keeps every malloc/free pair */

static void pairs(int n)
{
	for (int i = 0; i < n; i++) {
		sink = malloc(100);
		sink[0] = (char)i;
		free(sink);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static pid_t child_pairs(int n)
{
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		exit(1);
	}
	if (p == 0) {
		pairs(n);
		exit(0);
	}
	return p;
}

/* dropdup: /dev/null put on every descriptor above 2 open, then closed
 * (with the soft limit at the hard one: all of them in reach) */
static int dup_over_all(void)
{
	struct rlimit rl;
	int fds[64], n = 0, null = open("/dev/null", O_RDWR);
	if (null < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	while (d && (de = readdir(d)) && n < 64) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != dirfd(d) && fd != null)
			fds[n++] = fd;
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++) {
		if (dup2(null, fds[i]) < 0 || close(fds[i]) < 0) {
			perror("dup2 and close");
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(mode, "alloc")) {
		pairs(n);
		if (argc > 3)
			sleep_ms(atol(argv[3]));
		return 0;
	}
	if (!strcmp(mode, "fork") || !strcmp(mode, "forkexec")) {
		for (int i = 0; i < n; i++)
			waitpid(child_pairs(1000), NULL, 0);
		pairs(1000);
		if (!strcmp(mode, "forkexec")) {
			execl("/proc/self/exe", argv[0], "alloc", "500", (char *)NULL);
			perror("exec");
			return 1;
		}
		return 0;
	}
	if (!strcmp(mode, "reuse")) {
		pid_t a = child_pairs(1000);
		waitpid(a, NULL, 0);
		int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
		char num[24];
		int len = snprintf(num, sizeof(num), "%d", (int)a - 1);
		if (fd < 0 || write(fd, num, (size_t)len) != len) {
			printf("not reused: ns_last_pid: cannot write\n");
			return 0;
		}
		close(fd);
		pid_t b = child_pairs(1000);
		waitpid(b, NULL, 0);
		pairs(1000);
		if (b == a)
			printf("reused %d\n", (int)a);
		else
			printf("not reused: %d then %d\n", (int)a, (int)b);
		return 0;
	}
	if (!strcmp(mode, "dropclean")) {
		if (fork() == 0) {
			char *env[] = { "PATH=/usr/bin:/bin", NULL };
			if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
				_exit(1);
			pairs(5);
			execle("/proc/self/exe", argv[0], "alloc", "0", "3000", (char *)NULL, env);
			_exit(1);
		}
		pairs(10);
		return 0;
	}
	if (!strcmp(mode, "dropexec") || !strcmp(mode, "groupsexec") || !strcmp(mode, "dropdup") ||
	    !strcmp(mode, "dropsys")) {
		int root = !strcmp(mode, "groupsexec");
		pid_t p = fork();
		if (p == 0) {
			if (setgroups(0, NULL) < 0 ||
			    (!root && (setgid(65534) < 0 || setuid(65534) < 0))) {
				perror("setuid");
				_exit(1);
			}
			pairs(n);
			if (!strcmp(mode, "dropdup") && dup_over_all() < 0)
				_exit(1);
			if (!strcmp(mode, "dropsys") && syscall(SYS_close_range, 3, ~0u, 0) < 0)
				_exit(1);
			execl("/proc/self/exe", argv[0], "alloc", "1000", (char *)NULL);
			perror("exec");
			_exit(1);
		}
		int st;
		waitpid(p, &st, 0);
		pairs(10);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (!strcmp(mode, "dropfork")) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
			perror("setuid");
			return 1;
		}
		for (int w = 0; w < 2; w++)
			waitpid(child_pairs(100), NULL, 0);
		pairs(10);
		return 0;
	}
	if (!strcmp(mode, "exec") && argc > 2) {
		if (argc > 3)
			sleep_ms(atol(argv[3]));
		execl("/proc/self/exe", argv[0], "alloc", argv[2], (char *)NULL);
		perror("exec");
		return 1;
	}
	if (!strcmp(mode, "touch") && argc > 2) {
		int fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
		return fd < 0;
	}
	fprintf(stderr, "usage: files alloc N [MS] | fork N | forkexec N | exec N | reuse | dropexec [N] |\n"
			"groupsexec N | dropdup N | dropsys N | dropfork | dropclean | "
			"touch PATH\n");
	return 2;
}
