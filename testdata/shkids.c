/* testdata/shkids: a program that runs two children through one `sh -c`,
 * as make or a wrapper script does (issue 11, whole runs). The parent
 * allocates 4 x 64 bytes (2 freed) and runs system("SELF kid 3; SELF kid
 * 5"): the shell forks for the first command and execs the last. A kid N
 * allocates N blocks of 100*N bytes and frees them. So the run holds the
 * parent, the shell and the two kids; valgrind --trace-children=yes prints
 * one heap summary per process image that exits, whose sum the whole
 * run's totals must equal. Run it by a path: the command re-executes
 * argv[0].
 *
 * The shell gets a small environment: only the variables record and
 * valgrind give the programs they follow (LD_PRELOAD, ALLOCPROF*,
 * VALGRIND_LIB, LD_LIBRARY_PATH, GLIBCPP_FORCE_NEW, GLIBCXX_FORCE_NEW).
 * A shell's allocations depend on its environment (a block per variable,
 * and blocks that grow with their total length when it builds a command's
 * environment): the test gives each run the variables the other adds
 * (and valgrind's the test's ALLOCPROF_TEST_SEED, which the sampler hands
 * on to every image it follows), so that both shells see as many, of a
 * total length under dash's first block.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tdutil.h"

static void *blocks[16];

__attribute__((noinline)) static void *alloc_n(size_t size, unsigned i)
{
	void *p = malloc(size);
	td_touch(p, size, (unsigned char)i);
	return p;
}

static int kid(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		blocks[i] = alloc_n(100 * n, i);
	for (unsigned i = 0; i < n; i++)
		free(blocks[i]);
	td_say("shkids: kid %u\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "kid") == 0)
		return kid((unsigned)atoi(argv[2]) % 16);
	for (unsigned i = 0; i < 4; i++)
		blocks[i] = alloc_n(64, i);
	free(blocks[0]);
	free(blocks[1]);
	char cmd[4200];
	if (strlen(argv[0]) > 2000 || strchr(argv[0], '\''))
		return 2;
	snprintf(cmd, sizeof(cmd), "'%s' kid 3; '%s' kid 5", argv[0], argv[0]);
	extern char **environ;
	static const char *const keep[] = {"LD_PRELOAD=",	"ALLOCPROF",	     "VALGRIND_LIB=",
					   "LD_LIBRARY_PATH=", "GLIBCPP_FORCE_NEW=", "GLIBCXX_FORCE_NEW="};
	char *env[64];
	size_t n = 0;
	for (char **e = environ; *e && n + 1 < sizeof(env) / sizeof(env[0]); e++)
		for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
			if (!strncmp(*e, keep[k], strlen(keep[k])))
				env[n++] = *e;
	env[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		char *const args[] = {"sh", "-c", cmd, NULL};
		execve("/bin/sh", args, env);
		_exit(127);
	}
	int st = -1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	td_say("shkids: sh -c ended with %d\n", st);
	return st == 0 ? 0 : 1;
}
