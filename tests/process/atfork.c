/* tests/process/atfork.c: fork with handlers that allocate, registered
 * before the sampler's (atfork_lib's constructor) and after it (here, in
 * main). Forks twice; each child allocates 5 blocks in child_work and
 * frees them, says so with write(2) and ends with _exit. Under
 * `record --all` the child trace holds the child handlers' blocks
 * (lib_child 1, main_child 2) and child_work's 5; the parent's, the
 * prepare and parent handlers' (issue 24). A second thread allocates and
 * frees all along (thread_work), so that the sampler's locks are
 * contended while fork holds them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int atfork_lib_forks(void);
static void *volatile keep[8];

__attribute__((noinline)) static void main_prepare(void)
{
	keep[0] = malloc(111);
	memset(keep[0], 1, 111);
}

__attribute__((noinline)) static void main_parent(void)
{
	free(keep[0]);
	keep[0] = NULL;
	free(keep[1]);
	keep[1] = malloc(112);
	memset(keep[1], 2, 112);
}

__attribute__((noinline)) static void main_child(void)
{
	for (int i = 2; i < 4; i++) {
		keep[i] = malloc(113);
		memset(keep[i], 3, 113);
	}
}

__attribute__((noinline)) static void child_work(void)
{
	for (int i = 0; i < 5; i++) {
		keep[4] = malloc(120);
		memset(keep[4], i, 120);
		free(keep[4]);
	}
}

static volatile int stop;

__attribute__((noinline)) static void *thread_work(void *arg)
{
	unsigned long n = 0;
	while (!stop) {
		void *volatile p = malloc(48 + n % 200);
		memset(p, 1, 48);
		free(p);
		n++;
	}
	return arg;
}

int main(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, thread_work, NULL) != 0)
		return 1;
	pthread_atfork(main_prepare, main_parent, main_child);
	for (int round = 0; round < 2; round++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			child_work();
			static const char msg[] = "child: fork returned\n";
			if (write(1, msg, sizeof(msg) - 1) < 0)
				_exit(2);
			_exit(0);
		}
		int st = -1;
		if (waitpid(pid, &st, 0) != pid)
			return 1;
		printf("parent: fork returned, child status %d\n", st);
	}
	stop = 1;
	pthread_join(th, NULL);
	printf("library handlers ran %d times\n", atfork_lib_forks());
	return 0;
}
