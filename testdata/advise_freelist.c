/* advise testdata: a site whose objects stay in their thread, and one
 * whose objects cross threads (tests/advise, "freelist": advise measures
 * a free list of each thread's own beside the vpool at the first, not at
 * the second).
 *
 * A worker thread makes 32 nodes of 2 KiB (above glibc's tcache, which
 * keeps blocks up to 1 KiB), writes and sums them, and frees them all,
 * ROUNDS times: its own objects, taken and given back by the one thread,
 * which a free list of its spares serves without a lock.
 * Meanwhile a producer thread makes messages of 3 KiB in batches of 64 and
 * hands each batch to a consumer thread, which reads and frees them; the
 * producer makes the next batch once the consumer is done (a turn each,
 * under a mutex). Every message is freed on another thread than the one
 * that made it.
 * usage: advise_freelist [ROUNDS [BATCHES]]  (default 2000, 200) */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdturn.h"
#include "tdutil.h"

#define NODES 32
#define NODE_SIZE 2048
#define BATCH 64
#define MSG_SIZE 3072

static long rounds, batches;
static uint64_t node_sum, msg_sum;

__attribute__((noinline)) static unsigned char *node_new(void)
{
	unsigned char *n = malloc(NODE_SIZE); /* SITE: advise_freelist */
	if (!n)
		abort();
	td_sink = n;
	return n;
}

static void *worker(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	unsigned char *n[NODES];
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < NODES; i++) {
			n[i] = node_new();
			memset(n[i], (int)(r + i), 64);
		}
		for (int i = 0; i < NODES; i++) {
			sum = sum * 31 + n[(i * 7) % NODES][i];
			free(n[i]);
		}
	}
	node_sum = sum;
	return NULL;
}

static unsigned char *q[BATCH];

__attribute__((noinline)) static unsigned char *msg_new(void)
{
	unsigned char *m = malloc(MSG_SIZE); /* XSITE: advise_freelist */
	if (!m)
		abort();
	td_sink = m;
	return m;
}

static void *producer(void *arg)
{
	(void)arg;
	for (long b = 0; b < batches; b++) {
		td_wait_turn(0);
		for (int j = 0; j < BATCH; j++) {
			q[j] = msg_new();
			memset(q[j], (int)(b + j), 64);
		}
		td_give_turn(1);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	for (long b = 0; b < batches; b++) {
		td_wait_turn(1);
		for (int j = 0; j < BATCH; j++) {
			sum = sum * 31 + q[j][j];
			free(q[j]);
		}
		td_give_turn(0);
	}
	msg_sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 2000;
	batches = argc > 2 ? atol(argv[2]) : 200;
	pthread_t w, p, c;
	if (pthread_create(&w, NULL, worker, NULL) || pthread_create(&p, NULL, producer, NULL) ||
	    pthread_create(&c, NULL, consumer, NULL))
		abort();
	pthread_join(w, NULL);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	td_say("advise_freelist: %ld rounds, %ld batches, checksums %llx %llx\n", rounds, batches,
	       (unsigned long long)node_sum, (unsigned long long)msg_sum);
	return 0;
}
