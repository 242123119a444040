/* _Fork (glibc 2.34: a fork that runs no fork handler): 1000 blocks of
 * parent_work, a child by _Fork that makes 3000 in child_work and leaves
 * by _exit(0), then the parent prints the child's exit status and goes
 * on with 1000 more (`exit`), or kills itself with SIGKILL at once,
 * allocating nothing more (`kill`: record finishes its trace from its
 * buffers, where the child's events were left).
 * usage: ufork exit|kill */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t _Fork(void);

static void *volatile sink;

/* (each its own loop: the allocation's flat node is the function) */
__attribute__((noinline)) static void parent_work(void)
{
	for (int i = 0; i < 1000; i++) {
		sink = malloc(64);
		free(sink);
	}
}

__attribute__((noinline)) static void child_work(void)
{
	for (int i = 0; i < 3000; i++) {
		sink = malloc(80);
		free(sink);
	}
}

int main(int argc, char **argv)
{
	int kill_self = argc > 1 && !strcmp(argv[1], "kill");
	parent_work();
	pid_t pid = _Fork();
	if (pid < 0) {
		perror("_Fork");
		return 1;
	}
	if (pid == 0) {
		child_work();
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	if (kill_self)
		raise(SIGKILL);
	printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	parent_work();
	return 0;
}
