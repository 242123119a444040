/* exact_peak: programs whose in-use bytes the tests know (issue 24, "Exact
 * where it is easy to be exact"). Every block goes through the malloc
 * family by a call glibc cannot drop (-fno-builtin, and each block is
 * written), and the program keeps its own sums: requested bytes and
 * malloc_usable_size bytes, with their peaks.
 *
 *   exact_peak peak      threads, realloc, calloc, the aligned calls, mapped
 *                        blocks, frees in another thread; prints
 *                        "requested_peak=R usable_peak=U blocks_at_peak=B
 *                        mapped=M" (M: of the 3 blocks of ~300 kB, those
 *                        glibc mapped on their own: all, by default)
 *   exact_peak small     a peak of about 4 kB (the bar case)
 *   exact_peak fork      allocates 300 blocks, forks; the child frees them
 *                        all, allocates 5 and frees them; the parent waits
 *   exact_peak exec      allocates 100 blocks and leaves them live, then
 *                        execs /usr/bin/env, which execs `exact_peak small`
 *   exact_peak kill      200 blocks of 1000 bytes, frees 100, prints its
 *                        sums and dies of SIGKILL (no END of its own)
 *   exact_peak join      the program's first other thread allocates 50
 *                        blocks; main joins it and frees them at once
 */
#include <signal.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long req, use, req_peak, use_peak, blocks, blocks_at_peak;
static int mapped;	/* big blocks glibc gave mappings of their own */

static void got(void *p, size_t n)
{
	if (!p)
		abort();
	memset(p, 1, n < 64 ? n : 64);
	pthread_mutex_lock(&mu);
	req += (long long)n;
	use += (long long)malloc_usable_size(p);
	blocks++;
	if (use > use_peak) {
		use_peak = use;
		blocks_at_peak = blocks;
	}
	if (req > req_peak)
		req_peak = req;
	pthread_mutex_unlock(&mu);
}

static void drop(void *p, size_t n)
{
	pthread_mutex_lock(&mu);
	req -= (long long)n;
	use -= (long long)malloc_usable_size(p);
	blocks--;
	pthread_mutex_unlock(&mu);
	free(p);
}

#define NB 4000
static void *blk[NB];
static size_t len[NB];

/* frees the odd blocks main allocated, then allocates and frees its own */
static void *worker(void *arg)
{
	(void)arg;
	for (int i = 1; i < NB; i += 2)
		drop(blk[i], len[i]);
	void *mine[500];
	for (int i = 0; i < 500; i++) {
		mine[i] = malloc(200 + (size_t)i);
		got(mine[i], 200 + (size_t)i);
	}
	for (int i = 0; i < 500; i++)
		drop(mine[i], 200 + (size_t)i);
	return NULL;
}

static int peak(void)
{
	for (int i = 0; i < NB; i++) {
		size_t n = 16 + (size_t)(i * 37 % 1000);
		void *p;
		switch (i % 5) {
		case 0:
			p = malloc(n);
			break;
		case 1:
			p = calloc(1, n);
			break;
		case 2:
			if (posix_memalign(&p, 64, n))
				p = NULL;
			break;
		case 3:
			p = aligned_alloc(32, n);
			break;
		default: /* grown by realloc from a small block */
			p = malloc(8);
			got(p, 8);
			pthread_mutex_lock(&mu);
			req -= 8;
			use -= (long long)malloc_usable_size(p);
			blocks--;
			pthread_mutex_unlock(&mu);
			p = realloc(p, n);
			break;
		}
		got(p, n);
		blk[i] = p;
		len[i] = n;
	}
	/* three mapped blocks at the top */
	void *big[3];
	for (int i = 0; i < 3; i++) {
		big[i] = malloc(300000 + (size_t)i * 4096);
		got(big[i], 300000 + (size_t)i * 4096);
		/* a mapped chunk is whole pages, 16 bytes of them its header */
		mapped += malloc_usable_size(big[i]) % 4096 == 4096 - 16;
	}
	for (int i = 0; i < 3; i++)
		drop(big[i], 300000 + (size_t)i * 4096);
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	pthread_join(th, NULL);
	for (int i = 0; i < NB; i += 2)
		drop(blk[i], len[i]);
	/* a small tail, far below the peak */
	for (int i = 0; i < 100; i++) {
		void *p = malloc(1000);
		got(p, 1000);
		drop(p, 1000);
	}
	return 0;
}

static int small(void)
{
	void *v[40];
	for (int i = 0; i < 40; i++) {
		v[i] = malloc(100);
		got(v[i], 100);
	}
	for (int i = 0; i < 40; i++)
		drop(v[i], 100);
	return 0;
}

static int forked(void)
{
	void *v[300];
	for (int i = 0; i < 300; i++) {
		v[i] = malloc(1000);
		got(v[i], 1000);
	}
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 0; i < 300; i++)
			drop(v[i], 1000);
		for (int i = 0; i < 5; i++) {
			void *p = malloc(64);
			got(p, 64);
			drop(p, 64);
		}
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	for (int i = 0; i < 300; i++)
		drop(v[i], 1000);
	return 0;
}

static void print_sums(void);

static int killed(void)
{
	void *v[200];
	for (int i = 0; i < 200; i++) {
		v[i] = malloc(1000);
		got(v[i], 1000);
	}
	for (int i = 0; i < 100; i++)
		drop(v[i], 1000);
	print_sums();
	return kill(getpid(), SIGKILL);
}

static int exec_chain(const char *self)
{
	for (int i = 0; i < 100; i++) {
		void *p = malloc(500);
		got(p, 500); /* live at the exec */
	}
	execl("/usr/bin/env", "env", self, "small", (char *)NULL);
	return 1;
}

static void *join_thread(void *arg)
{
	void **v = arg;
	for (int i = 0; i < 50; i++) {
		v[i] = malloc(16 + 8 * (size_t)i);
		got(v[i], 16 + 8 * (size_t)i);
	}
	return NULL;
}

static int joined(void)
{
	void *v[50];
	pthread_t th;
	if (pthread_create(&th, NULL, join_thread, v) || pthread_join(th, NULL))
		return 1;
	for (int i = 0; i < 50; i++)
		drop(v[i], 16 + 8 * (size_t)i);
	return 0;
}

static void print_sums(void)
{
	char line[160];
	int k = snprintf(line, sizeof(line),
			 "requested_peak=%lld usable_peak=%lld blocks_at_peak=%lld mapped=%d\n",
			 req_peak, use_peak, blocks_at_peak, mapped);
	if (write(1, line, (size_t)k) != k)
		_exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int rc;
	if (!strcmp(argv[1], "peak"))
		rc = peak();
	else if (!strcmp(argv[1], "small"))
		rc = small();
	else if (!strcmp(argv[1], "fork"))
		rc = forked();
	else if (!strcmp(argv[1], "exec"))
		rc = exec_chain(argv[0]);
	else if (!strcmp(argv[1], "kill"))
		rc = killed();
	else if (!strcmp(argv[1], "join"))
		rc = joined();
	else
		return 2;
	print_sums();
	return rc;
}
