/* vfork, the child leaves by _exit (or _Exit, or exec of a program that
 * does not exist, then _exit), and the parent goes on allocating: 1000
 * blocks of 64 bytes from parent_work, each freed. The child shares the
 * parent's memory until it leaves: nothing of the sampler's may change
 * there (a trace ended for the parent, a guard left raised).
 * usage: vfork exit|Exit|exec */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;

__attribute__((noinline)) static void parent_work(void)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(64);
		if (!p)
			abort();
		memset(p, i, 64);
		sink = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	pid_t pid = vfork();
	if (pid == 0) {
		if (!strcmp(how, "exec"))
			execl("/nonexistent/allocprof-test", "x", (char *)NULL);
		if (!strcmp(how, "Exit"))
			_Exit(3);
		_exit(3);
	}
	if (pid < 0)
		return 1;
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
		return 2;
	parent_work();
	printf("child exited 3, parent allocated\n");
	return 0;
}
