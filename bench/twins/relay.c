/* relay: a two-stage pipeline. A reader thread makes records of 1 to 8
 * KiB (filled), and queues them in a ring of 1024 slots (a mutex and two
 * condition variables); a worker checksums every byte of each record and
 * frees it. The worker is the slower stage: the ring fills, and the
 * reader waits until the worker has drained it to half (it is woken then,
 * not at every slot freed), so the threads switch once per ~512 records,
 * not per record as chan's do. Every object is freed on another thread
 * than the one that made it.
 * Twin: msg_new takes records from a vpool, msg_free (on the worker) puts
 * them (with RELAY_CLASSES, relaycls.c's: a vpool per size class, each
 * request rounded up). Threaded: run.sh runs it unpinned. */
// site: msg_new
// threaded
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define TW_THREADED 1
#include "twin.h"
#define SLOTS 1024
static unsigned char *q[SLOTS];
static size_t qn[SLOTS];
static unsigned long qhead, qtail;	/* messages sent, received */
static int full_waiting, empty_waiting;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long nmsgs;
static uint64_t csum;
#if defined(TWIN) && defined(RELAY_CLASSES)
static struct vpool pools[4];
/* the class of a request of n bytes: 1 KiB << k, the first that holds it */
static unsigned cls(size_t n)
{
	unsigned k = 0;
	while (k < 3 && n > ((size_t)1024 << k))
		k++;
	return k;
}
static unsigned char *cls_get(size_t n)
{
	unsigned k = cls(n);
	unsigned char *m = vpool_get(&pools[k]);
	return m ? m : malloc((size_t)1024 << k);
}
#define RELAY_GET(n) cls_get(n)
#define RELAY_PUT(m, n) vpool_put(&pools[cls(n)], (m))
#elif defined(TWIN)
static struct vpool pool;
#define RELAY_GET(n) tw_get(&pool, (n))
#define RELAY_PUT(m, n) vpool_put(&pool, (m))
#endif

TW_SITE static unsigned char *msg_new(size_t n)
{
#ifdef TWIN
	unsigned char *m = RELAY_GET(n);
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
	RELAY_PUT(m, n);
#else
	free(m);
#endif
}

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 0; i < nmsgs; i++) {
		size_t n = (1024 + (size_t)(i * 7919) % 7169) & ~(size_t)7;
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
		/* the reader is woken once the ring is half empty */
		int wake = full_waiting && qhead - qtail <= SLOTS / 2;
		pthread_mutex_unlock(&qlock);
		if (wake)
			pthread_cond_signal(&notfull);
		for (size_t k = 0; k < n; k += 8) {
			uint64_t w;
			memcpy(&w, m + k, 8);
			sum = tw_mix(sum, w);
		}
		msg_free(m, n);
	}
	csum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nmsgs = argc > 1 ? atol(argv[1]) : 200000;
#ifdef TWIN
#ifdef RELAY_CLASSES
	for (int k = 0; k < 4; k++)
		tw_pool_init(&pools[k]);
#else
	tw_pool_init(&pool);
#endif
#endif
	pthread_t p, c;
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL))
		abort();
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("relay %ld records checksum %016llx\n", nmsgs, (unsigned long long)csum);
	return 0;
}
