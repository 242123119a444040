/* testdata/sigrealloc: a profiling timer's handler frees and allocates
 * while the main thread reallocs in a loop (issue 9: a handler's free
 * arriving while the profiler held its pointer-set lock on the realloc path
 * deadlocked). The handler replaces one of 64 blocks (free, then
 * malloc(40): glibc's thread cache serves both, no lock of glibc's); the
 * loop grows and shrinks 16 blocks by realloc until 1000 signals came or
 * 4 M reallocs were made. Prints "done", and how many of the handler's
 * blocks came from outside the program's heap (between its first block
 * and the break), if any: none natively, and none under record (a
 * handler that interrupted the sampler was served from its own arena,
 * which starved glibc's thread cache of the blocks the handler's frees
 * and mallocs trade, and glibc's realloc then found its bins corrupted
 * about once in 40 runs on a loaded CPU). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>

#include "tdutil.h"

#define N_POOL 64

static void *pool[N_POOL];
static volatile sig_atomic_t hits, outside;
static char *heap_lo;

static void on_prof(int sig)
{
	int saved = errno;
	unsigned k = (unsigned)hits % N_POOL;
	(void)sig;
	free(pool[k]);
	pool[k] = malloc(40);
	if ((char *)pool[k] < heap_lo || (char *)pool[k] >= (char *)sbrk(0))
		outside++;
	td_touch(pool[k], 40, (unsigned char)k);
	hits++;
	errno = saved;
}

int main(void)
{
	void *blk[16] = { 0 };
	for (int i = 0; i < N_POOL; i++) {
		pool[i] = malloc(40);
		td_touch(pool[i], 40, (unsigned char)i);
	}
	heap_lo = (char *)pool[0] - 4096;
	struct sigaction sa = { .sa_handler = on_prof, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_PROF, &it, NULL);
	for (unsigned long i = 0; hits < 1000 && i < 4000000; i++) {
		unsigned k = i % 16;
		void *q = realloc(blk[k], 64 + (i % 3) * 200);
		if (!q)
			return 1;
		blk[k] = q;
		td_touch(q, 64, (unsigned char)i);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	for (int k = 0; k < 16; k++)
		free(blk[k]);
	for (int i = 0; i < N_POOL; i++)
		free(pool[i]);
	if (outside)
		td_say("%d of the handler's blocks outside the heap\n", (int)outside);
	td_say("done\n");
	return 0;
}
