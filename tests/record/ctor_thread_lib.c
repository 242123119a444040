/* A library whose constructor starts a thread that allocates and frees
 * without pause (as gRPC's and some runtimes' do): it runs while the
 * sampler starts (ap_init comes after the program's libraries'
 * constructors), and the blocks it gets then are the program's. The
 * thread keeps the last 1024 blocks, reallocating one a round (and
 * failing to, to 2^62 bytes, every 1000th); ctor_thread_stop() joins it,
 * frees them and says how many allocations and reallocs succeeded. With CTOR_THREAD_FORKS set, the thread also forks as soon
 * as the sampler's start has begun (ALLOCPROF_EXEC, which record sets,
 * has left the environment; natively at once) and every 2000 rounds
 * after: each child makes 100 malloc/free pairs and leaves by _exit(0). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;
static pthread_t th;
static void *keep[1024];
static int forking;
static long forks, bad, calls;
static void *volatile sink;

static void fork_one(void)
{
	pid_t c = fork();
	if (c == 0) {
		for (int k = 0; k < 100; k++) {
			sink = malloc(64);
			free(sink);
		}
		_exit(0);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		bad++;
	forks++;
}

static void *churn(void *arg)
{
	(void)arg;
	unsigned long from = 0;
	int started = 0;
	for (unsigned long i = 0; !atomic_load(&stop); i++) {
		size_t n = 24 + (i % 7) * 8;
		char *p = malloc(n);
		if (!p)
			abort();
		calls++;
		memset(p, 1, n);
		free(keep[i % 1024]);
		keep[i % 1024] = p;
		/* and one realloc a round, moving blocks as often as not */
		size_t j = (i + 512) % 1024;
		if (keep[j]) {
			char *r = realloc(keep[j], 16 + (i % 13) * 24);
			if (!r)
				abort();
			keep[j] = r;
			calls++;
		}
		/* and one that fails now and then: nothing happened */
		if (i % 1000 == 0 && (sink = realloc(keep[j], (size_t)1 << 62)) != NULL)
			abort();
		if (forking && !started && !getenv("ALLOCPROF_EXEC")) {
			started = 1;
			from = i;
		}
		if (started && (i - from) % 2000 == 0)
			fork_one();
	}
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	forking = getenv("CTOR_THREAD_FORKS") != NULL;
	if (pthread_create(&th, NULL, churn, NULL))
		abort();
}

long ctor_thread_stop(long *failed, long *ncalls);
long ctor_thread_stop(long *failed, long *ncalls)
{
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	for (int i = 0; i < 1024; i++)
		free(keep[i]);
	*failed = bad;
	*ncalls = calls;
	return forks;
}
