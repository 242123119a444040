/* frames: stacks through frames of every shape the sampler's walk by the
 * unwind tables meets (sampler/cfi.c; tests/e2e/unwind.sh builds it with
 * gcc and clang, with and without frame pointers): alloca and a VLA (CFA
 * by rbp), a stack realigned for an over-aligned local, recursion to 50
 * frames, three threads, and a signal handler that allocates (its stacks
 * cross the kernel's signal frame: the walk gives up there, libunwind
 * unwinds them). Prints the allocations it made. */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static volatile sig_atomic_t in_handler;

__attribute__((noinline)) static void leaf(int n)
{
	void *p = malloc((size_t)n + 1);
	sink = p;
	free(p);
}

__attribute__((noinline)) static void with_alloca(int n)
{
	char *b = alloca((size_t)n * 64 + 16);
	memset(b, 1, (size_t)n * 64 + 16);
	sink = b;
	leaf(n);
}

__attribute__((noinline)) static void with_vla(int n)
{
	char b[n * 32 + 8];
	memset(b, 2, sizeof(b));
	sink = b;
	with_alloca(n);
}

__attribute__((noinline)) static void realigned(int n)
{
	_Alignas(64) char b[128];
	memset(b, 3, sizeof(b));
	sink = b;
	with_vla(n);
}

__attribute__((noinline)) static void recurse(int d, int n)
{
	if (d)
		recurse(d - 1, n);
	else
		realigned(n);
	sink = &d; /* not a tail call */
}

static void handler(int s)
{
	(void)s;
	void *p = malloc(77);
	sink = p;
	free(p);
	in_handler++;
}

static void *thread(void *a)
{
	for (int i = 0; i < 2000; i++)
		recurse(i % 40, i % 7);
	return a;
}

int main(void)
{
	signal(SIGALRM, handler);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, thread, NULL))
			return 1;
	for (int i = 0; i < 3000; i++) {
		recurse(i % 50, i % 5);
		if (i % 500 == 0)
			raise(SIGALRM);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("frames: %d allocations, %d in a signal handler\n", 3 * 2000 + 3000 + in_handler,
	       (int)in_handler);
	return 0;
}
