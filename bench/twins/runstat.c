/* runstat: runs a program once and prints what it cost, from wait4's
 * rusage (microsecond CPU times, not /usr/bin/time's 10 ms ticks):
 *	user_us sys_us wall_us minflt maxrss_kb status
 * on one line to stderr (or to -r FILE), with -s two more fields, its
 * voluntary and involuntary context switches. The program's stdout goes
 * to -o FILE (default: inherited); -c CPU pins it to one CPU first.
 * Part of bench/twins (run.sh). Exit: the program's status, or 125 if it
 * could not be run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
	fputs("usage: runstat [-c CPU] [-o OUT] [-r REPORT] [-s] PROGRAM [ARGS...]\n", stderr);
	exit(125);
}

int main(int argc, char **argv)
{
	const char *out = NULL, *rep = NULL;
	int cpu = -1, opt, switches = 0;
	while ((opt = getopt(argc, argv, "+c:o:r:s")) != -1) {
		switch (opt) {
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'o':
			out = optarg;
			break;
		case 'r':
			rep = optarg;
			break;
		case 's':
			switches = 1;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	FILE *rf = stderr;
	if (rep && !(rf = fopen(rep, "w"))) {
		fprintf(stderr, "runstat: %s: %s\n", rep, strerror(errno));
		return 125;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0) {
		perror("runstat: fork");
		return 125;
	}
	if (!pid) {
		if (cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			if (sched_setaffinity(0, sizeof(set), &set)) {
				perror("runstat: sched_setaffinity");
				_exit(125);
			}
		}
		if (out) {
			int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
				fprintf(stderr, "runstat: %s: %s\n", out, strerror(errno));
				_exit(125);
			}
			close(fd);
		}
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "runstat: %s: %s\n", argv[optind], strerror(errno));
		_exit(125);
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("runstat: wait4");
			return 125;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long long wall = (t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	fprintf(rf, "%lld %lld %lld %ld %ld %d",
		(long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
		(long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, wall, ru.ru_minflt,
		ru.ru_maxrss, code);
	if (switches)
		fprintf(rf, " %ld %ld", ru.ru_nvcsw, ru.ru_nivcsw);
	fputc('\n', rf);
	if (rf != stderr && fclose(rf)) {
		perror("runstat: report");
		return 125;
	}
	return code;
}
