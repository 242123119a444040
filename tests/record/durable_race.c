/* Four threads allocate and free as fast as they can, each malloc counted
 * in a shared file mapping (argv[1], 8 bytes) once it returned: however
 * the process ends, the count is what it allocated, give or take the one
 * call each thread may be in. Main sleeps 200 ms, then ends the process
 * as argv[2] says, while the threads run: "_exit", "exit" (exit(3): the
 * handlers, then exit_group), "signal" (SIGTERM, default action),
 * "exitsignal" (exit(3), and SIGTERM from another thread 1 ms into it),
 * or "join" (stops the threads and returns: nothing runs at the end). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
static unsigned long *count;
static volatile int stop, exiting;

static void note_exiting(void)
{
	exiting = 1;
}

static void *terminate(void *arg)
{
	(void)arg;
	while (!exiting)
		;
	struct timespec ts = { 0, 1000000 };
	nanosleep(&ts, NULL);
	kill(getpid(), SIGTERM);
	for (;;)
		pause();
	return NULL;
}

static void *work(void *arg)
{
	void *volatile keep = NULL;
	(void)arg;
	while (!stop) {
		void *p = malloc(40);
		__atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
		free(keep);
		keep = p;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return 2;
	count = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (count == MAP_FAILED)
		return 2;
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, work, NULL))
			return 2;
	struct timespec ts = { 0, 200000000 };
	nanosleep(&ts, NULL);
	if (!strcmp(argv[2], "_exit"))
		_exit(0);
	if (!strcmp(argv[2], "exit"))
		exit(0);
	if (!strcmp(argv[2], "exitsignal")) {
		pthread_t k;
		if (atexit(note_exiting) || pthread_create(&k, NULL, terminate, NULL))
			return 2;
		exit(0);
	}
	if (!strcmp(argv[2], "signal"))
		kill(getpid(), SIGTERM);
	stop = 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
