/* testdata/live: a server-like program for the live view (tests/tui/
 * follow.sh, record --live): it runs until the file argv[1] exists,
 * a round every 20 ms. Each round the main thread makes 100 requests
 * (make_request: malloc(64)), the worker thread frees the first 50 and
 * the main thread the others, and the main thread keeps one result
 * (keep_result: malloc(1000), never freed). Every 10 rounds it says
 * "round N" on standard output; at the end "rounds N", and exits 0. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tdutil.h"

#define REQUESTS 100

static void *req[REQUESTS];
static pthread_barrier_t made, freed;
static volatile int done;

__attribute__((noinline)) static void *make_request(unsigned i)
{
	void *p = malloc(64);
	td_touch(p, 64, (unsigned char)i);
	return p;
}

__attribute__((noinline)) static void keep_result(unsigned round)
{
	void *p = malloc(1000);
	td_touch(p, 1000, (unsigned char)round);
	td_sink = p;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_barrier_wait(&made);
		if (done)
			return NULL;
		for (unsigned i = 0; i < REQUESTS / 2; i++)
			free(req[i]);
		pthread_barrier_wait(&freed);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		td_say("usage: live STOPFILE\n");
		return 2;
	}
	pthread_t th;
	pthread_barrier_init(&made, NULL, 2);
	pthread_barrier_init(&freed, NULL, 2);
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	unsigned round = 0;
	while (access(argv[1], F_OK) != 0) {
		for (unsigned i = 0; i < REQUESTS; i++)
			req[i] = make_request(i);
		pthread_barrier_wait(&made);
		pthread_barrier_wait(&freed);
		for (unsigned i = REQUESTS / 2; i < REQUESTS; i++)
			free(req[i]);
		keep_result(round);
		if (++round % 10 == 0)
			td_say("round %u\n", round);
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	done = 1;
	pthread_barrier_wait(&made);
	pthread_join(th, NULL);
	td_say("rounds %u\n", round);
	return 0;
}
