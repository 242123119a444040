/* sigfork: a fork from a signal handler that interrupts the allocator.
 * One thread mallocs, reallocs and frees without pause; a SIGALRM handler
 * (every millisecond) forks (fork, or _Fork with `_Fork`), and the child
 * returns from the handler into what it interrupted, makes 2000
 * malloc/free pairs and leaves by _exit(5); the parent waits for it in the
 * handler. Under record the handler lands inside the sampler as often as
 * not: fork_prepare waited for ever on a lock the interrupted code held
 * (sampled mode), and a child that reset the sampler's state under the
 * interrupted code wrote a corrupt trace. Prints "bad N", children that
 * did not exit with 5, and "forks N".
 * usage: sigfork fork|_Fork FORKS */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t forks, bad, in_child;
static int use_ufork, n;

static void on_alarm(int s)
{
	(void)s;
	int e = errno;
	if (in_child || forks >= n) /* (an alarm already pending at the last) */
		return;
	pid_t p = use_ufork ? _Fork() : fork();
	if (p == 0) {
		in_child = 1;
		errno = e;
		return;
	}
	if (p > 0) {
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 5)
			bad++;
		/* the last: no more alarms (a fork and its child can take
		 * longer than the millisecond between two, and the loop would
		 * never run again to see the count) */
		if (++forks >= n) {
			struct itimerval off = { { 0, 0 }, { 0, 0 } };
			setitimer(ITIMER_REAL, &off, NULL);
		}
	}
	errno = e;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "fork") && strcmp(argv[1], "_Fork")))
		return 2;
	use_ufork = !strcmp(argv[1], "_Fork");
	n = atoi(argv[2]);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (unsigned long k = 0;; k++) {
		if (in_child) {
			for (int j = 0; j < 2000; j++) {
				void *volatile r = malloc(48);
				free(r);
			}
			_exit(5);
		}
		if (forks >= n)
			break;
		void *volatile q = malloc(32 + (k & 255));
		if (k % 7 == 0)
			q = realloc(q, 600);
		free(q);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("bad %d\nforks %d\n", (int)bad, (int)forks);
	return 0;
}
