/* taskpool: a thread pool running small tasks. The submitting thread
 * cuts a job (a 1 MiB table of numbers, made once) into tasks of 64-4096
 * elements, each task a 64-byte struct malloc'd by the submitter (the
 * function to run, its range, a seed, the slot for its result), pushed
 * on a bounded queue of 512 under a mutex; three workers pop tasks under
 * the same mutex, run them (a hash of the range, mixed with the seed),
 * add the result to their own sum, and free the task. The submitter
 * waits when the queue is full; a worker when it is empty.
 * Unlike workers.c (buffers of 512 B-8 KiB, filled by the acceptor),
 * the blocks are tiny and touched twice; unlike prodcons.c the frees are
 * on one of three threads, one block at a time. glibc's tcache takes the
 * workers' frees of the submitter's blocks (7 a size class), the rest go
 * back to the main arena under its lock; the submitter's tcache is
 * always empty.
 * Twin: task_new takes tasks from a vpool, the worker puts them back
 * (the CPU deques move them back to the submitter). */
// site: task_new
// threaded
// libs: -lm
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define TW_THREADED 1
#include "twin.h"

#define QCAP 512
#define WORKERS 3
#define TABLE (1 << 17)

struct task {
	uint64_t (*fn)(const uint64_t *, unsigned, uint64_t);
	const uint64_t *base;
	unsigned len;
	uint64_t seed;
	uint64_t *result;
	long id;
	uint64_t pad[2];
};

static struct task *q[QCAP];
static unsigned long qhead, qtail;
static int done;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static uint64_t sums[WORKERS];
static uint64_t table[TABLE];
#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct task *task_new(void)
{
#ifdef TWIN
	struct task *t = tw_get(&pool, sizeof(struct task));
#else
	struct task *t = malloc(sizeof(struct task));
#endif
	TW_ALLOC(sizeof(struct task));
	if (!t)
		abort();
	return t;
}

TW_SITE static void task_free(struct task *t)
{
	TW_FREE(sizeof(struct task));
#ifdef TWIN
	vpool_put(&pool, t);
#else
	free(t);
#endif
}

static uint64_t hash_range(const uint64_t *b, unsigned n, uint64_t seed)
{
	uint64_t h = seed;
	for (unsigned i = 0; i < n; i++)
		h = tw_mix(h, b[i]);
	return h;
}

static void *worker(void *arg)
{
	uint64_t *sum = arg;
	for (;;) {
		pthread_mutex_lock(&qlock);
		while (qtail == qhead && !done)
			pthread_cond_wait(&notempty, &qlock);
		if (qtail == qhead) {
			pthread_mutex_unlock(&qlock);
			break;
		}
		struct task *t = q[qtail++ % QCAP];
		if (qhead - qtail == QCAP / 2)
			pthread_cond_signal(&notfull);
		pthread_mutex_unlock(&qlock);
		uint64_t r = t->fn(t->base, t->len, t->seed);
		*sum += tw_mix(r, (uint64_t)t->id);
		task_free(t);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400000;
	uint64_t rng = 0x0ddba11cafe0babeULL;
	pthread_t th[WORKERS];
	for (unsigned i = 0; i < TABLE; i++)
		table[i] = tw_rand(&rng);
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, &sums[i]))
			abort();
	for (long i = 0; i < n; i++) {
		uint64_t r = tw_rand(&rng);
		/* 64 * 2^(0..6): log-uniform 64-4096 elements */
		unsigned len = (unsigned)(64.0 * __builtin_exp2((double)(r % 6000) / 1000.0));
		struct task *t = task_new();
		t->fn = hash_range;
		t->len = len;
		t->base = table + (r >> 20) % (TABLE - len);
		t->seed = r;
		t->result = NULL;
		t->id = i;
		pthread_mutex_lock(&qlock);
		while (qhead - qtail == QCAP)
			pthread_cond_wait(&notfull, &qlock);
		q[qhead++ % QCAP] = t;
		pthread_cond_signal(&notempty);
		pthread_mutex_unlock(&qlock);
	}
	pthread_mutex_lock(&qlock);
	done = 1;
	pthread_cond_broadcast(&notempty);
	pthread_mutex_unlock(&qlock);
	uint64_t s = 0;
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(th[i], NULL);
		s += sums[i];	/* which worker ran which task varies: the sum does not */
	}
	printf("taskpool %ld tasks checksum %016llx\n", n, (unsigned long long)s);
	return 0;
}
