/* tests/process/reexec.c: programs that take LD_PRELOAD out (issue 24).
 *
 * `reexec sandbox`: the pattern of a sandbox: remove LD_PRELOAD and
 * execute itself again with a marker argument; an image that still finds
 * LD_PRELOAD set tries again (a loop, cut at 20 here: exit 99). Natively
 * the second image runs, allocates and exits 7.
 * `reexec plain`: allocates 300 blocks of 48 bytes in plain_work and says
 * whether LD_PRELOAD and ALLOCPROF are set (under `record env -i` or
 * `env -u LD_PRELOAD` neither may be; under `record sh -c` the run must
 * hold its 300 blocks).
 * `reexec spawn` and `reexec spawnp`: runs `reexec plain` with
 * posix_spawn or posix_spawnp (glibc's clone and exec inside libc, not
 * through the exec functions) and its own environment, and exits with
 * its status; `reexec spawn-clean` and `spawnp-clean` the same with an
 * environment of PATH alone. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep[300];

__attribute__((noinline)) static void plain_work(void)
{
	for (int i = 0; i < 300; i++) {
		keep[i] = malloc(48);
		memset(keep[i], i, 48);
	}
}

static const char *set(const char *name)
{
	return getenv(name) ? "set" : "unset";
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "plain")) {
		plain_work();
		printf("plain: LD_PRELOAD %s, ALLOCPROF %s\n", set("LD_PRELOAD"), set("ALLOCPROF"));
		return 3;
	}
	if (argc > 1 && !strncmp(argv[1], "spawn", 5)) {
		extern char **environ;
		char *args[] = { argv[0], "plain", NULL }, *clean[] = { "PATH=/usr/bin:/bin", NULL };
		char *const *env = strstr(argv[1], "-clean") ? clean : environ;
		pid_t pid;
		int st, e = argv[1][5] == 'p' ? posix_spawnp(&pid, argv[0], NULL, NULL, args, env)
					      : posix_spawn(&pid, argv[0], NULL, NULL, args, env);
		if (e || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
			return 1;
		return WEXITSTATUS(st);
	}
	if (argc < 2 || strcmp(argv[1], "sandbox"))
		return 2;
	int round = argc > 2 ? atoi(argv[2]) : 0;
	if (round > 0 && !getenv("LD_PRELOAD")) {
		plain_work();
		printf("sandbox: inside after %d exec, ALLOCPROF %s\n", round, set("ALLOCPROF"));
		return 7;
	}
	if (round >= 20) {
		printf("sandbox: LD_PRELOAD came back %d times\n", round);
		return 99;
	}
	unsetenv("LD_PRELOAD");
	char next[16];
	snprintf(next, sizeof(next), "%d", round + 1);
	char *args[] = { argv[0], "sandbox", next, NULL };
	fflush(stdout);
	execv(argv[0], args);
	perror("execv");
	return 1;
}
