/* semantics: what a program must still find true of its blocks when
 * `allocprof try` serves its sites from a pool. Each check prints one
 * line; a failure prints FAIL and exits 1, so a run under the pool whose
 * output is not the baseline's shows in try's comparison, and try-e2e.py
 * checks the pool really served these sites (hits > 0).
 * Sites (each a function of its own, never inlined): buf_site (malloc),
 * zero_site (calloc), align_site (aligned_alloc or malloc on one line:
 * one site, two call instructions), memalign_site (posix_memalign),
 * node_site (the threads' blocks).
 * Argument: `all` (every check), `noalign` (align_site never runs), or
 * `vfork` (all, after a vfork child that ends by _exit: the counts must
 * stay the parent's; record loses what follows a vfork, so the trace is
 * recorded with `all`). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SITE __attribute__((noipa))

static void *volatile sink;
static volatile size_t huge_count = SIZE_MAX / 2;	/* times 3 overflows */
static int failed;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL %s\n", what);
		failed = 1;
	}
}

SITE static void *buf_site(size_t n)
{
	void *p = malloc(n);
	sink = p;
	return p;
}

SITE static void *zero_site(size_t n, size_t m)
{
	void *p = calloc(n, m);
	sink = p;
	return p;
}

SITE static void *align_site(size_t a, size_t n)
{
	void *p = a > 16 ? aligned_alloc(a, n) : malloc(n); sink = p; return p; // one line: one site
}

SITE static void *memalign_site(size_t a, size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, a, n))
		return NULL;
	sink = p;
	return p;
}

SITE static void *node_site(size_t n)
{
	void *p = malloc(n);
	sink = p;
	return p;
}

/* Sizes: each block holds what was asked, usable size says at least that. */
static void sizes(void)
{
	for (int r = 0; r < 200; r++) {
		size_t n = 1 + (size_t)(r * 37 % 3000);
		unsigned char *p = buf_site(n);
		check(p != NULL && malloc_usable_size(p) >= n, "usable size below the request");
		memset(p, 0xab, malloc_usable_size(p));
		check((uintptr_t)p % 16 == 0, "malloc block not 16-aligned");
		free(p);
	}
	printf("sizes ok\n");
}

/* calloc: zero after a dirty reuse. */
static void zeroing(void)
{
	for (int r = 0; r < 200; r++) {
		size_t n = 64 + (size_t)(r % 7) * 100;
		unsigned char *p = zero_site(1, n);
		int zero = 1;
		for (size_t i = 0; i < n; i++)
			zero &= p[i] == 0;
		check(zero, "calloc block not zeroed");
		memset(p, 0xcd, malloc_usable_size(p));
		free(p);
	}
	/* overflow is refused, as glibc does */
	check(zero_site(huge_count, 3) == NULL, "calloc overflow not refused");
	printf("zeroing ok\n");
}

/* Alignment: a site whose requests ask for different alignments never
 * gets a block less aligned than asked, whatever the pool held. */
static void alignment(void)
{
	static const size_t al[] = { 16, 64, 256, 4096, 16, 32 };
	for (int r = 0; r < 240; r++) {
		size_t a = al[r % 6], n = a * (1 + (size_t)r % 5);
		char *p = align_site(a, n);
		check(p && (uintptr_t)p % a == 0, "aligned block misaligned");
		memset(p, 0x5a, n);
		free(p);
		void *q = memalign_site(a < 16 ? 16 : a, 100);
		check(q && (uintptr_t)q % (a < 16 ? 16 : a) == 0, "posix_memalign block misaligned");
		free(q);
	}
	printf("alignment ok\n");
}

/* realloc: in place within the capacity, content kept beyond it; 0 frees. */
static void reallocs(void)
{
	for (int r = 0; r < 100; r++) {
		unsigned char *p = buf_site(1000);
		for (int i = 0; i < 1000; i++)
			p[i] = (unsigned char)(i * 7 + r);
		unsigned char *q = realloc(p, 500);
		check(q != NULL, "shrinking realloc failed");
		int same = 1;
		for (int i = 0; i < 500; i++)
			same &= q[i] == (unsigned char)(i * 7 + r);
		check(same, "shrinking realloc lost content");
		unsigned char *g = realloc(q, 200000);
		check(g != NULL && malloc_usable_size(g) >= 200000, "growing realloc too small");
		for (int i = 0; i < 500; i++)
			same &= g[i] == (unsigned char)(i * 7 + r);
		check(same, "growing realloc lost content");
		memset(g + 500, 1, 200000 - 500);
		unsigned char *h = reallocarray(g, 1000, 300);
		check(h != NULL, "reallocarray failed");
		check(reallocarray(h, huge_count, 3) == NULL, "reallocarray overflow not refused");
		free(h);
		/* a pooled block of grown capacity serves a small request */
		unsigned char *s = buf_site(10);
		check(s && malloc_usable_size(s) >= 10, "small request after growth");
		free(s);
	}
	printf("realloc ok\n");
}

/* Blocks allocated on one thread and freed on another. */
#define NQ 64
static void *queue[NQ];
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qc = PTHREAD_COND_INITIALIZER;
static int qn, qdone;

static void *consumer(void *arg)
{
	(void)arg;
	unsigned long sum = 0;
	for (;;) {
		pthread_mutex_lock(&qm);
		while (!qn && !qdone)
			pthread_cond_wait(&qc, &qm);
		if (!qn && qdone) {
			pthread_mutex_unlock(&qm);
			break;
		}
		unsigned char *p = queue[--qn];
		pthread_cond_broadcast(&qc);
		pthread_mutex_unlock(&qm);
		sum += p[0] + p[99];
		free(p);
	}
	return (void *)sum;
}

static void cross_thread(void)
{
	pthread_t th;
	pthread_create(&th, NULL, consumer, NULL);
	unsigned long want = 0;
	for (int i = 0; i < 20000; i++) {
		unsigned char *p = node_site(100);
		p[0] = (unsigned char)i;
		p[99] = (unsigned char)(i >> 3);
		want += p[0] + p[99];
		pthread_mutex_lock(&qm);
		while (qn == NQ)
			pthread_cond_wait(&qc, &qm);
		queue[qn++] = p;
		pthread_cond_broadcast(&qc);
		pthread_mutex_unlock(&qm);
	}
	pthread_mutex_lock(&qm);
	qdone = 1;
	pthread_cond_broadcast(&qc);
	pthread_mutex_unlock(&qm);
	void *got;
	pthread_join(th, &got);
	check((unsigned long)got == want, "cross-thread blocks changed");
	printf("cross-thread ok\n");
}

/* fork from a thread while others churn the pool: the child must find
 * no pool lock held, and allocate and free at the site itself. */
static volatile int stop_churn;

static void *churn(void *arg)
{
	(void)arg;
	for (int n = 0; !stop_churn && n < 20000; n++) {
		void *v[8];
		for (int i = 0; i < 8; i++)
			v[i] = node_site(48 + (size_t)i);
		for (int i = 0; i < 8; i++)
			free(v[i]);
	}
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	int bad = 0;
	for (int k = 0; k < 10; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 1000; i++) {
				void *p = node_site(64);
				memset(p, 1, 64);
				free(p);
			}
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	return (void *)(intptr_t)bad;
}

static void fork_churn(void)
{
	pthread_t c[3], f;
	for (int i = 0; i < 3; i++)
		pthread_create(&c[i], NULL, churn, NULL);
	pthread_create(&f, NULL, forker, NULL);
	void *bad;
	pthread_join(f, &bad);
	stop_churn = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(c[i], NULL);
	check(!bad, "a child forked while others churned failed");
	printf("fork ok\n");
}

/* A vfork child shares the parent's memory: its _exit must not write the
 * parent's counts for it (try would then find none). */
static void vfork_exit(void)
{
	pid_t pid = vfork();
	if (pid == 0)
		_exit(0);
	int st;
	check(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st), "vfork child");
}

int main(int argc, char **argv)
{
	int noalign = argc > 1 && !strcmp(argv[1], "noalign");
	if (argc > 1 && !strcmp(argv[1], "vfork"))
		vfork_exit();	/* first: the sites' counts all come after it */
	sizes();
	zeroing();
	if (!noalign)
		alignment();
	reallocs();
	cross_thread();
	fork_churn();
	return failed;
}
