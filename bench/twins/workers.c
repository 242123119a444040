/* workers: a thread pool behind an acceptor. The acceptor thread reads
 * requests (made up here): each a buffer of 512 B to 8 KiB (log-uniform)
 * filled with the request's bytes, queued on a shared work queue of 256
 * entries (one mutex, two condition variables). Four worker threads take
 * requests off the queue, checksum them, and free them: every buffer is
 * freed on another thread than the one that made it, by one of several.
 * A pool could help: above tcache's range glibc serves the acceptor's
 * mallocs from its arena, the workers' frees go back there under the
 * arena's lock (or to their own tcache, which never serves them again);
 * the pool hands the buffers back through the CPU deques. How often the
 * workers wait on an empty queue moves with it too.
 * Twin: req_new takes buffers from a vpool, req_free (on a worker) puts
 * them. Threaded: run.sh runs it unpinned. */
// site: req_new
// threaded
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define TW_THREADED 1
#include "twin.h"
#define QCAP 256
#define WORKERS 4
struct req {
	size_t n;
	unsigned char *body;
};
static struct req q[QCAP];
static unsigned long qhead, qtail;	/* requests queued, taken */
static int done;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long nreqs;
static uint64_t sums[WORKERS];
#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static unsigned char *req_new(size_t n)
{
#ifdef TWIN
	unsigned char *b = tw_get(&pool, n);
#else
	unsigned char *b = malloc(n);
#endif
	TW_ALLOC(n);
	if (!b)
		abort();
	return b;
}

TW_SITE static void req_free(unsigned char *b, size_t n)
{
	TW_FREE(n);
	(void)n;
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

static void *acceptor(void *arg)
{
	(void)arg;
	uint64_t rng = 0x1234567890abcdefULL;
	for (long i = 0; i < nreqs; i++) {
		/* 512 B to 8 KiB, log-uniform: 2^(9 + u * 4) */
		unsigned e = 9 + (unsigned)(tw_rand(&rng) % 4);
		size_t n = ((size_t)1 << e) + (size_t)(tw_rand(&rng) % ((size_t)1 << e));
		unsigned char *b = req_new(n);
		memset(b, (int)(i & 255), n);
		b[n / 2] = (unsigned char)(tw_rand(&rng) & 255);
		pthread_mutex_lock(&qlock);
		while (qhead - qtail == QCAP)
			pthread_cond_wait(&notfull, &qlock);
		q[qhead % QCAP] = (struct req){ .n = n, .body = b };
		qhead++;
		pthread_mutex_unlock(&qlock);
		pthread_cond_signal(&notempty);
	}
	pthread_mutex_lock(&qlock);
	done = 1;
	pthread_mutex_unlock(&qlock);
	pthread_cond_broadcast(&notempty);
	return NULL;
}

static void *worker(void *arg)
{
	uint64_t *sum = arg;
	for (;;) {
		pthread_mutex_lock(&qlock);
		while (qhead == qtail && !done)
			pthread_cond_wait(&notempty, &qlock);
		if (qhead == qtail) {
			pthread_mutex_unlock(&qlock);
			break;
		}
		struct req r = q[qtail % QCAP];
		qtail++;
		pthread_mutex_unlock(&qlock);
		pthread_cond_signal(&notfull);
		uint64_t s = r.n;
		for (size_t k = 0; k < r.n; k += 64)
			s = s * 33 + r.body[k];
		s += r.body[r.n / 2];
		/* the workers' sums add up the same whoever took what */
		*sum += s;
		req_free(r.body, r.n);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	nreqs = argc > 1 ? atol(argv[1]) : 300000;
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	pthread_t a, w[WORKERS];
	for (int k = 0; k < WORKERS; k++)
		if (pthread_create(&w[k], NULL, worker, &sums[k]))
			abort();
	if (pthread_create(&a, NULL, acceptor, NULL))
		abort();
	pthread_join(a, NULL);
	uint64_t total = 0;
	for (int k = 0; k < WORKERS; k++) {
		pthread_join(w[k], NULL);
		total += sums[k];
	}
	printf("workers %ld requests checksum %016llx\n", nreqs, (unsigned long long)total);
	return 0;
}
