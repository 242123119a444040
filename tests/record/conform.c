/* Exercises every malloc-family entry point and its edge cases, printing
 * what a program can observe (results, errno, alignment, contents). The
 * test runs it natively and under `allocprof record` and diffs the output:
 * a profiled program must not be able to tell. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

static void show(const char *what, const void *p, int err)
{
	printf("%-36s %s errno=%d align16=%d\n", what, p ? "ptr" : "NULL", err,
	       p ? (int)((uintptr_t)p % 16 == 0) : -1);
}

static int aligned_to(const void *p, size_t al)
{
	return (uintptr_t)p % al == 0;
}

/* Fills, then checks, a block: catches a wrong size or a moved block that
 * lost its contents. */
static int fill_check(unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i);
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i))
			return 0;
	return 1;
}

static int kept(const unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i))
			return 0;
	return 1;
}

/* Allocates until the process ends under it. */
static void *churn(void *arg)
{
	for (unsigned long i = 0;; i++) {
		void *p = malloc(i % 500 + 1);
		*(volatile char *)p = 1;
		free(p);
		if (i == 1000)
			__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Other endings, for the lifecycle tests: allocate a little, then leave
 * by _exit, by exec'ing this program again, or by a crash. */
static int other_ending(int argc, char **argv)
{
	void *keep[64];
	for (int i = 0; i < 64; i++)
		keep[i] = malloc((size_t)(i + 1) * 100);
	printf("%s: 64 blocks\n", argv[1]);
	fflush(stdout);
	if (!strcmp(argv[1], "_exit"))
		_exit(5);
	if (!strcmp(argv[1], "exec")) {
		char *args[] = { argv[0], (char *)"_exit", NULL };
		execv(argv[0], args);
		perror("execv");
		return 1;
	}
	if (!strcmp(argv[1], "threads-alive")) {
		/* exit while other threads are still allocating */
		static int started[4];
		pthread_t th;
		for (int i = 0; i < 4; i++)
			pthread_create(&th, NULL, churn, &started[i]);
		for (int i = 0; i < 4; i++)
			while (!__atomic_load_n(&started[i], __ATOMIC_ACQUIRE))
				sched_yield();
		exit(6);
	}
	if (!strcmp(argv[1], "segv")) {
		volatile int *bad = (int *)(uintptr_t)keep[0] - (uintptr_t)keep[0];
		return *bad;
	}
	(void)argc;
	return 2;
}

int main(int argc, char **argv)
{
	void *p, *q;
	int rc;
	/* volatile: the compiler must not see (and warn about) the sizes */
	volatile size_t v_big = (size_t)1 << 62, v_max = SIZE_MAX;
	size_t big = v_big, max = v_max;
	long page = sysconf(_SC_PAGESIZE);

	if (argc > 1)
		return other_ending(argc, argv);

	/* malloc */
	errno = 0;
	p = malloc(0);
	show("malloc(0)", p, errno);
	free(p);
	errno = 0;
	p = malloc(100);
	printf("malloc(100) fill=%d\n", fill_check(p, 100, 1));
	free(p);
	errno = 0;
	p = malloc(big);
	show("malloc(2^62)", p, errno);
	errno = 0;
	p = malloc(max);
	show("malloc(SIZE_MAX)", p, errno);

	/* free(NULL) keeps errno */
	errno = 1234;
	free(NULL);
	printf("free(NULL) errno=%d\n", errno);
	p = malloc(10);
	errno = 4321;
	free(p);
	printf("free(p) errno=%d\n", errno);

	/* calloc: zeroed, overflow fails with ENOMEM */
	errno = 0;
	unsigned char *c = calloc(1000, 8);
	int zero = 1;
	for (size_t i = 0; c && i < 8000; i++)
		zero &= c[i] == 0;
	show("calloc(1000,8)", c, errno);
	printf("calloc zeroed=%d\n", zero);
	free(c);
	errno = 0;
	p = calloc(max / 2, 4);
	show("calloc(SIZE_MAX/2,4) overflow", p, errno);
	errno = 0;
	p = calloc(0, 0);
	show("calloc(0,0)", p, errno);
	free(p);

	/* realloc */
	errno = 0;
	p = realloc(NULL, 50);
	show("realloc(NULL,50)", p, errno);
	printf("fill=%d\n", fill_check(p, 50, 7));
	q = realloc(p, 5000);
	printf("realloc grow kept=%d\n", kept(q, 50, 7));
	p = realloc(q, 20);
	printf("realloc shrink kept=%d\n", kept(p, 20, 7));
	errno = 0;
	q = realloc(p, big);
	show("realloc(p,2^62) fails", q, errno);
	printf("old block intact=%d\n", kept(p, 20, 7));
	errno = 0;
	q = realloc(p, 0);
	show("realloc(p,0)", q, errno);
	free(q);
	errno = 0;
	p = realloc(NULL, 0);
	show("realloc(NULL,0)", p, errno);
	free(p);

	/* reallocarray */
	errno = 0;
	p = reallocarray(NULL, 10, 10);
	show("reallocarray(NULL,10,10)", p, errno);
	errno = 0;
	q = reallocarray(p, max / 2, 3);
	show("reallocarray overflow", q, errno);
	q = reallocarray(p, 20, 10);
	show("reallocarray(p,20,10)", q, 0);
	free(q);

	/* posix_memalign */
	p = (void *)0x1;
	rc = posix_memalign(&p, 64, 100);
	printf("posix_memalign(64) rc=%d aligned=%d\n", rc, aligned_to(p, 64));
	free(p);
	p = (void *)0x1;
	rc = posix_memalign(&p, 3, 100);
	printf("posix_memalign(3) rc=%d untouched=%d\n", rc, p == (void *)0x1);
	rc = posix_memalign(&p, 4, 100); /* not a multiple of sizeof(void*) */
	printf("posix_memalign(4) rc=%d untouched=%d\n", rc, p == (void *)0x1);
	rc = posix_memalign(&p, 4096, big);
	printf("posix_memalign(4096,2^62) rc=%d untouched=%d\n", rc, p == (void *)0x1);
	rc = posix_memalign(&p, 32, 0);
	printf("posix_memalign(32,0) rc=%d\n", rc);
	free(p);

	/* aligned_alloc and memalign: glibc accepts any power of two, and
	 * rounds a non-power of two up (memalign) or fails (2.36 aligned_alloc
	 * follows memalign); whatever it does, it must do the same here. */
	size_t als[] = { 1, 8, 16, 32, 4096, 65536, 3, 24, 100 };
	for (size_t i = 0; i < sizeof(als) / sizeof(als[0]); i++) {
		char what[64];
		errno = 0;
		p = aligned_alloc(als[i], 256);
		snprintf(what, sizeof(what), "aligned_alloc(%zu,256)", als[i]);
		show(what, p, errno);
		if (p)
			printf("  aligned=%d\n", aligned_to(p, als[i] & (als[i] - 1) ? 1 : als[i]));
		free(p);
		errno = 0;
		p = memalign(als[i], 256);
		snprintf(what, sizeof(what), "memalign(%zu,256)", als[i]);
		show(what, p, errno);
		if (p)
			printf("  aligned=%d\n", aligned_to(p, als[i] & (als[i] - 1) ? 1 : als[i]));
		free(p);
	}
	errno = 0;
	p = aligned_alloc((size_t)1 << 63, 16);
	show("aligned_alloc(2^63,16)", p, errno);
	errno = 0;
	p = memalign(64, big);
	show("memalign(64,2^62)", p, errno);

	/* valloc, pvalloc: page aligned; pvalloc rounds the size up */
	errno = 0;
	p = valloc(100);
	show("valloc(100)", p, errno);
	printf("  page aligned=%d\n", aligned_to(p, (size_t)page));
	free(p);
	errno = 0;
	p = pvalloc(100);
	show("pvalloc(100)", p, errno);
	printf("  page aligned=%d usable>=page=%d\n", aligned_to(p, (size_t)page),
	       malloc_usable_size(p) >= (size_t)page);
	free(p);
	errno = 0;
	p = valloc(big);
	show("valloc(2^62)", p, errno);

	/* malloc_usable_size matches what the allocator says */
	p = malloc(1000);
	printf("usable(1000)>=1000=%d usable(NULL)=%zu\n", malloc_usable_size(p) >= 1000,
	       malloc_usable_size(NULL));
	free(p);

	/* a burst of traffic: many sizes, many live blocks, then freed */
	enum { N = 20000 };
	static void *blk[N];
	unsigned long sum = 0;
	for (int i = 0; i < N; i++) {
		size_t n = (size_t)(i * 37 % 3000);
		blk[i] = i % 3 ? malloc(n) : calloc(1, n);
		if (!blk[i] && n) {
			printf("allocation %d failed\n", i);
			return 1;
		}
		if (n)
			((unsigned char *)blk[i])[n - 1] = (unsigned char)i;
	}
	for (int i = 0; i < N; i += 2)
		blk[i] = realloc(blk[i], (size_t)(i % 5000) + 1);
	for (int i = 0; i < N; i++) {
		sum += (uintptr_t)blk[i] % 16;
		free(blk[i]);
	}
	printf("burst misaligned=%lu\n", sum);

	errno = 77;
	p = malloc(16);
	free(p);
	printf("errno after malloc+free=%d\n", errno);

	/* sigprocmask (the library's, for libunwind's calls): the program's
	 * masks are made, its errors are glibc's */
	sigset_t usr1, was, now;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	errno = 0;
	int r1 = sigprocmask(SIG_BLOCK, &usr1, &was);
	sigprocmask(SIG_SETMASK, NULL, &now);
	int blocked = sigismember(&now, SIGUSR1);
	int r2 = sigprocmask(12345, &usr1, NULL), e2 = errno;
	int r3 = sigprocmask(SIG_SETMASK, &was, NULL);
	sigprocmask(SIG_SETMASK, NULL, &now);
	printf("sigprocmask block=%d usr1_was=%d usr1_blocked=%d bad=%d errno=%d restore=%d "
	       "usr1_now=%d\n", r1, sigismember(&was, SIGUSR1), blocked, r2, e2, r3,
	       sigismember(&now, SIGUSR1));

	/* the profiler's descriptors must not shift the program's numbers */
	int fd = open("/dev/null", O_RDONLY);
	printf("next descriptor=%d\n", fd);
	return 3;
}
