/* testdata/forkexec: allocates, forks; the child allocates a known amount and
 * execs this program again (`forkexec exec`), which allocates a known amount
 * and exits 7; the parent waits, allocates a little more and exits 0.
 * Expected values: forkexec.expected.json, per process:
 *   parent:        10 x malloc(100) before the fork (5 freed after it),
 *                  2 x malloc(50) after the child ended (freed):
 *                  12 allocs, 1100 bytes, 7 frees; 5 blocks, 500 bytes at exit
 *   forked child:  7 x malloc(200), 3 freed, before the exec:
 *                  7 allocs, 1400 bytes, 3 frees (the 5 blocks it inherited
 *                  from the parent are not its allocations and it does not
 *                  touch them); at the exec 4 blocks, 800 bytes are live
 *   exec'd image:  3 x malloc(300), all freed: 3 allocs, 900 bytes, 3 frees
 * Output: the exec'd image prints its line, then the parent prints the
 * child's status (the parent waits, so the order is fixed). Run it by a path
 * or a name in PATH: the child re-executes argv[0]. */
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

static int exec_image(void)
{
	for (unsigned i = 0; i < 3; i++)
		blocks[i] = alloc_n(300, i);
	for (unsigned i = 0; i < 3; i++)
		free(blocks[i]);
	td_say("forkexec: exec'd child allocated 3 blocks\n");
	return 7;
}

/* Re-executes this program by argv[0] (execvp: a path, or a name looked up
 * in PATH). Not /proc/self/exe: under valgrind that is valgrind's own tool. */
static void child(const char *self)
{
	for (unsigned i = 0; i < 7; i++)
		blocks[i] = alloc_n(200, i);
	for (unsigned i = 0; i < 3; i++)
		free(blocks[i]);
	char *const args[] = {(char *)self, "exec", NULL};
	execvp(self, args);
	td_say("forkexec: execv failed\n");
	_exit(127);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "exec") == 0)
		return exec_image();
	void *mine[10];
	for (unsigned i = 0; i < 10; i++)
		mine[i] = alloc_n(100, i);
	pid_t pid = fork();
	if (pid < 0) {
		td_say("forkexec: fork failed\n");
		return 1;
	}
	if (pid == 0)
		child(argv[0]);
	for (unsigned i = 0; i < 5; i++)
		free(mine[i]);
	int status = 0;
	if (waitpid(pid, &status, 0) != pid) {
		td_say("forkexec: waitpid failed\n");
		return 1;
	}
	for (unsigned i = 0; i < 2; i++)
		free(alloc_n(50, i));
	td_sink = mine[5];
	if (WIFEXITED(status))
		td_say("forkexec: child exited with status %d\n", WEXITSTATUS(status));
	else
		td_say("forkexec: child died of signal %d\n", WTERMSIG(status));
	return 0;
}
