/* testdata/sigfork: a SIGCHLD handler that frees and allocates while the
 * main thread forks in a loop (issue 9: the handler's free, arriving
 * inside fork(), used to deadlock on a lock the profiler's fork handler
 * held). 300 children, each exiting at once; the handler reaps them and
 * replaces one of 64 blocks (free, then malloc(48): glibc serves both
 * from its thread cache, so the handler takes no lock of glibc's). Prints
 * the number of children reaped. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdutil.h"

#define N_CHILD 300
#define N_POOL 64

static void *pool[N_POOL];
static volatile sig_atomic_t reaped;
static unsigned turn;

static void on_chld(int sig)
{
	int saved = errno;
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		reaped++;
	free(pool[turn]);
	pool[turn] = malloc(48);
	td_touch(pool[turn], 48, (unsigned char)turn);
	turn = (turn + 1) % N_POOL;
	errno = saved;
}

int main(void)
{
	for (int i = 0; i < N_POOL; i++) {
		pool[i] = malloc(48);
		td_touch(pool[i], 48, (unsigned char)i);
	}
	struct sigaction sa = { .sa_handler = on_chld, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	for (int i = 0; i < N_CHILD; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0)
			return 1;
	}
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	while (reaped < N_CHILD) {
		struct timespec ts = { 0, 10000000 };
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		nanosleep(&ts, NULL); /* a SIGCHLD ends it early */
		sigprocmask(SIG_BLOCK, &chld, NULL);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			reaped++;
	}
	for (int i = 0; i < N_POOL; i++)
		free(pool[i]);
	td_say("reaped %d children\n", (int)reaped);
	return 0;
}
