/* maxrss CMD ARGS...: runs CMD and prints, on fd 3, the largest resident
 * set (KiB) of it and of the descendants it waited for (RUSAGE_CHILDREN);
 * exits with CMD's status. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 2;
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	dprintf(3, "%ld\n", ru.ru_maxrss);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
