/* prodcons: producer/consumer threads. A producer thread allocates
 * messages of 256 B to 2 KiB, fills them, and hands them over in
 * batches of 64 through a bounded queue (mutex and condition variables)
 * to a consumer thread, which checksums each message and frees it: every
 * object is freed on another thread than the one that allocated it.
 * A pool should help: glibc puts a block freed on the consumer into the
 * consumer's tcache or, beyond it, back into the producer's arena under
 * the arena's lock, and the producer's mallocs above tcache's range go
 * to that arena too; the pool moves messages back through the consumer
 * CPU's deque, where the producer steals them (or takes its own CPU's
 * when the two share one).
 * Twin: msg_new takes messages from a vpool, msg_free (on the consumer)
 * puts them. Threaded: run.sh runs it unpinned.
 * Each thread signals the other's condition variable while it holds the
 * queue's mutex (prodcons2.c: after it has let it go). On one CPU the
 * woken thread runs at once and blocks on the mutex: while the queue
 * runs empty that is four context switches a batch, half of which go
 * once a pool lets the producer fill the queue (bench/twins/README.md,
 * session 17). */
// site: msg_new
// threaded
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_THREADED 1
#include "twin.h"

#define BATCH 64
#define QLEN 8

struct msg {
	uint32_t len, seq;
	unsigned char data[];
};

struct batch {
	struct msg *m[BATCH];
	size_t n[BATCH];
};

static struct batch q[QLEN];
static unsigned qhead, qtail;	/* batches put, taken */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qfull = PTHREAD_COND_INITIALIZER, qempty = PTHREAD_COND_INITIALIZER;
static long nbatches;
static uint64_t csum;

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct msg *msg_new(size_t n)
{
#ifdef TWIN
	struct msg *m = tw_get(&pool, n);
#else
	struct msg *m = malloc(n);
#endif
	TW_ALLOC(n);
	if (!m)
		abort();
	m->len = (uint32_t)(n - sizeof(*m));
	return m;
}

TW_SITE static void msg_free(struct msg *m, size_t n)
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
	uint64_t rng = 0x9999888877776666ULL;
	uint32_t seq = 0;
	for (long b = 0; b < nbatches; b++) {
		struct batch local;
		for (int i = 0; i < BATCH; i++) {
			size_t n = 256 + tw_rand(&rng) % 1793;
			struct msg *m = msg_new(n);
			m->seq = seq++;
			memset(m->data, (int)(m->seq & 255), m->len);
			m->data[m->len / 2] = (unsigned char)(tw_rand(&rng) & 255);
			local.m[i] = m;
			local.n[i] = n;
		}
		pthread_mutex_lock(&qlock);
		while (qhead - qtail == QLEN)
			pthread_cond_wait(&qfull, &qlock);
		q[qhead % QLEN] = local;
		qhead++;
#ifdef SIGNAL_AFTER_UNLOCK
		pthread_mutex_unlock(&qlock);
		pthread_cond_signal(&qempty);
#else
		pthread_cond_signal(&qempty);
		pthread_mutex_unlock(&qlock);
#endif
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	for (long b = 0; b < nbatches; b++) {
		pthread_mutex_lock(&qlock);
		while (qhead == qtail)
			pthread_cond_wait(&qempty, &qlock);
		struct batch local = q[qtail % QLEN];
		qtail++;
#ifdef SIGNAL_AFTER_UNLOCK
		pthread_mutex_unlock(&qlock);
		pthread_cond_signal(&qfull);
#else
		pthread_cond_signal(&qfull);
		pthread_mutex_unlock(&qlock);
#endif
		for (int i = 0; i < BATCH; i++) {
			struct msg *m = local.m[i];
			uint64_t s = m->seq;
			for (uint32_t k = 0; k < m->len; k += 64)
				s = s * 33 + m->data[k];
			s += m->data[m->len / 2];
			sum = tw_mix(sum, s);
			msg_free(m, local.n[i]);
		}
	}
	csum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nbatches = argc > 1 ? atol(argv[1]) : 60000;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	pthread_t p, c;
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL))
		abort();
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("prodcons %ld batches checksum %016llx\n", nbatches, (unsigned long long)csum);
	return 0;
}
