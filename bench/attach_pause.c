/* bench/attach_pause.c: how long `record -p` keeps a process's threads
 * from their own code, as the threads see it (bench/attach.sh). T ticker
 * threads (default 2) each wake every 100 us (clock_nanosleep, timer
 * slack 1 ns) and keep the longest lateness of a wake-up; a reader
 * thread, made after them, takes commands on stdin: "mark" prints
 * "late_us A B ..." (each ticker's longest lateness since the last mark,
 * in creation order) and starts again; "quit" ends. The main thread waits
 * in pthread_join (a futex): record -p calls into the process on the first
 * thread it finds at a safe point, the first ticker, so that ticker's
 * number is the calls' time plus the stops, the others' the stops alone.
 * Usage: attach_pause [T]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAXT 16
#define TICK_NS 100000L

static long late[MAXT];	/* ns, the longest since the last mark: atomics */
static int nt;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *ticker(void *arg)
{
	long *mine = arg;
	prctl(PR_SET_TIMERSLACK, 1UL);
	long next = now_ns() + TICK_NS;
	for (;;) {
		struct timespec ts = { next / 1000000000L, next % 1000000000L };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		long t = now_ns(), l = t - next;
		if (l > __atomic_load_n(mine, __ATOMIC_RELAXED))
			__atomic_store_n(mine, l, __ATOMIC_RELAXED);
		next = t + TICK_NS;
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "quit", 4))
			break;
		if (strncmp(line, "mark", 4))
			continue;
		printf("late_us");
		for (int i = 0; i < nt; i++)
			printf(" %.1f", (double)__atomic_exchange_n(&late[i], 0, __ATOMIC_RELAXED) / 1e3);
		printf("\n");
		fflush(stdout);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	nt = argc > 1 ? atoi(argv[1]) : 2;
	if (nt < 1 || nt > MAXT)
		return 2;
	pthread_t th;
	for (int i = 0; i < nt; i++)
		if (pthread_create(&th, NULL, ticker, &late[i]))
			return 1;
	if (pthread_create(&th, NULL, reader, NULL))
		return 1;
	pthread_join(th, NULL);
	return 0;
}
