/* taskxfer: an object graph handed between threads. A producer thread
 * makes tasks: per task task_new mallocs a struct task (64 B: a link,
 * an id, a kind, parameters, the payload's pointer and length) and, at
 * a second line of its own, its payload buffer of 256 B to 8 KiB
 * (log-uniform), which the producer fills (every byte, as from a socket
 * read). The task goes through an intrusive FIFO (the tasks' own link,
 * at most 128 queued; a mutex and two condition variables, each
 * signalled after the unlock and only when the other side waits) to one
 * consumer thread, which processes it (a checksum over the payload,
 * chosen by the task's kind) and task_free frees the payload and the
 * task: two blocks born together on one thread, freed together on the
 * other. Unlike chan.c and prodcons.c (one block a message) or
 * taskpool.c (a 64-byte task alone), each object is a task owning its
 * buffer.
 * Twin: what a hand-pooler does with such tasks: a vpool of tasks with
 * their payload attached. task_new takes a task (a miss: a struct with
 * no buffer) and keeps its payload when it is big enough for the
 * request, else frees it and mallocs one of the request's size;
 * task_free, on the consumer, puts the task back whole. A task the pool
 * drops is freed with its payload. Threaded: run.sh runs it unpinned
 * (or under -P). */
// site: task_new
// threaded
// libs: -lm
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_THREADED 1
#include "twin.h"

/* The program's own work, the same code at the same alignment in plain
 * and twin (README, session 39: TW_WORK). */
#define TW_WORK __attribute__((noinline, aligned(64)))

#define QMAX 128

struct task {			/* 64 bytes */
	struct task *next;
	long id;
	uint32_t kind, flags;
	uint64_t param[2];
	unsigned char *payload;
	size_t len;
	size_t cap;		/* the twin's: the pooled payload's capacity */
};

static struct task *qfirst, *qlast;
static unsigned qlen;
static int full_waiting, empty_waiting;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long ntasks;
static uint64_t csum;
static unsigned char src[1 << 16];

#ifdef TWIN
static struct vpool pool;

static void task_release(void *obj, void *ctx)
{
	struct task *t = obj;
	(void)ctx;
	free(t->payload);
	free(t);
}
#endif

TW_SITE static struct task *task_new(long id, size_t n)
{
#ifdef TWIN
	struct task *t = vpool_get(&pool);
	if (!t) {
		t = malloc(sizeof(*t));
		if (!t)
			abort();
		t->payload = NULL;
		t->cap = 0;
	}
	if (t->cap < n) {
		free(t->payload);
		t->payload = malloc(n);
		if (!t->payload)
			abort();
		t->cap = malloc_usable_size(t->payload);
	}
#else
	struct task *t = malloc(sizeof(*t));
	if (!t)
		abort();
	t->payload = malloc(n);
	if (!t->payload)
		abort();
#endif
	TW_ALLOC(sizeof(*t));
	TW_ALLOC(n);
	t->id = id;
	t->len = n;
	t->next = NULL;
	tw_sink = t;
	return t;
}

TW_SITE static void task_free(struct task *t)
{
	TW_FREE(t->len);
	TW_FREE(sizeof(*t));
#ifdef TWIN
	vpool_put(&pool, t);
#else
	free(t->payload);
	free(t);
#endif
}

/* The producer fills a task: parameters, and the payload in pieces of
 * up to 1 KiB (every byte). */
TW_WORK static void task_fill(struct task *t, uint64_t *rng)
{
	uint64_t r = tw_rand(rng);
	t->kind = (uint32_t)(r & 3);
	t->flags = (uint32_t)(r >> 60);
	t->param[0] = r >> 8;
	t->param[1] = tw_rand(rng);
	for (size_t k = 0; k < t->len; k += 1024) {
		size_t l = t->len - k < 1024 ? t->len - k : 1024;
		memcpy(t->payload + k, src + tw_rand(rng) % (sizeof(src) - 1024), l);
	}
	t->payload[0] = (unsigned char)t->id;
}

/* The consumer processes one: a checksum of the payload by its kind. */
TW_WORK static uint64_t task_process(const struct task *t)
{
	uint64_t h = (uint64_t)t->id ^ t->param[0], w;
	const unsigned char *p = t->payload;
	size_t n = t->len;
	switch (t->kind) {
	case 0:
		for (size_t k = 0; k + 8 <= n; k += 8) {
			memcpy(&w, p + k, 8);
			h += w ^ (w >> 13);
		}
		break;
	case 1:
		for (size_t k = 0; k + 8 <= n; k += 8) {
			memcpy(&w, p + k, 8);
			h = (h ^ w) * 0x100000001b3ULL;
		}
		break;
	case 2:
		for (size_t k = 0; k < n; k++)
			h += (uint64_t)p[k] * (k | 1);
		break;
	default:
		for (size_t k = 0; k + 8 <= n; k += 16) {
			memcpy(&w, p + k, 8);
			h = tw_mix(h, w);
		}
		break;
	}
	return tw_mix(h, t->param[1] + t->flags + n);
}

static void *producer(void *arg)
{
	(void)arg;
	uint64_t rng = 0x3c6ef372fe94f82bULL;
	for (long i = 0; i < ntasks; i++) {
		/* 256 B * 2^(0..5): log-uniform */
		unsigned e = (unsigned)(tw_rand(&rng) % 5120);
		size_t n = (size_t)(256.0 * __builtin_exp2((double)e / 1024.0));
		struct task *t = task_new(i, n);
		task_fill(t, &rng);
		pthread_mutex_lock(&qlock);
		while (qlen == QMAX) {
			full_waiting++;
			pthread_cond_wait(&notfull, &qlock);
			full_waiting--;
		}
		if (qlast)
			qlast->next = t;
		else
			qfirst = t;
		qlast = t;
		qlen++;
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
	for (long i = 0; i < ntasks; i++) {
		pthread_mutex_lock(&qlock);
		while (!qfirst) {
			empty_waiting++;
			pthread_cond_wait(&notempty, &qlock);
			empty_waiting--;
		}
		struct task *t = qfirst;
		qfirst = t->next;
		if (!qfirst)
			qlast = NULL;
		qlen--;
		int wake = full_waiting;
		pthread_mutex_unlock(&qlock);
		if (wake)
			pthread_cond_signal(&notfull);
		sum = tw_mix(sum, task_process(t));
		task_free(t);
	}
	csum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	ntasks = argc > 1 ? atol(argv[1]) : 600000;
	uint64_t rng = 0xbb67ae8584caa73bULL;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(tw_rand(&rng) >> 56);
#ifdef TWIN
	tw_pool_init_release(&pool, task_release);
#endif
	pthread_t p, c;
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL))
		abort();
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("taskxfer %ld tasks checksum %016llx\n", ntasks, (unsigned long long)csum);
	return 0;
}
