/* chan: a producer thread hands messages of 256 B to 2 KiB, one at a
 * time, through a bounded channel of 64 slots (a mutex and two condition
 * variables, each signalled after the unlock, and only when the other
 * side waits) to a consumer thread, which reads one byte of each and
 * frees it: Rust's `sync_channel(64)` of `Vec<u8>`, written in C
 * (bench/twins/README.md, session 18, has the Rust program). Every
 * object is freed on another thread than the one that made it, one at a
 * time, and the threads block on the channel (full or empty) tens of
 * thousands of times: what a pool saves here is small beside how often
 * they wait, and that moves with the pool.
 * Twin: msg_new takes messages from a vpool, msg_free (on the consumer)
 * puts them. Threaded: run.sh runs it unpinned. */
// site: msg_new
// threaded
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define TW_THREADED 1
#include "twin.h"
#define SLOTS 64
static unsigned char *q[SLOTS];
static size_t qn[SLOTS];
static unsigned long qhead, qtail;	/* messages sent, received */
static int full_waiting, empty_waiting;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long nmsgs;
static uint64_t csum;
#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static unsigned char *msg_new(size_t n)
{
#ifdef TWIN
	unsigned char *m = tw_get(&pool, n);
#else
	unsigned char *m = malloc(n);
#endif
	TW_ALLOC(n);
	if (!m)
		abort();
	return m;
}

TW_SITE static void msg_free(unsigned char *m, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, m);
#else
	free(m);
#endif
}

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 0; i < nmsgs; i++) {
		size_t n = 256 + (size_t)(i * 7919) % 1800;
		unsigned char *m = msg_new(n);
		memset(m, (int)(i & 255), n);
		pthread_mutex_lock(&qlock);
		while (qhead - qtail == SLOTS) {
			full_waiting++;
			pthread_cond_wait(&notfull, &qlock);
			full_waiting--;
		}
		q[qhead % SLOTS] = m;
		qn[qhead % SLOTS] = n;
		qhead++;
		int wake = empty_waiting;
		pthread_mutex_unlock(&qlock);
		if (wake)
			pthread_cond_signal(&notempty);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	for (long i = 0; i < nmsgs; i++) {
		pthread_mutex_lock(&qlock);
		while (qhead == qtail) {
			empty_waiting++;
			pthread_cond_wait(&notempty, &qlock);
			empty_waiting--;
		}
		unsigned char *m = q[qtail % SLOTS];
		size_t n = qn[qtail % SLOTS];
		qtail++;
		int wake = full_waiting;
		pthread_mutex_unlock(&qlock);
		if (wake)
			pthread_cond_signal(&notfull);
		sum = tw_mix(sum, (uint64_t)m[n / 2] + n);
		msg_free(m, n);
	}
	csum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nmsgs = argc > 1 ? atol(argv[1]) : 400000;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	pthread_t p, c;
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL))
		abort();
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("chan %ld messages checksum %016llx\n", nmsgs, (unsigned long long)csum);
	return 0;
}
