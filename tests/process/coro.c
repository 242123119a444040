/* tests/process/coro.c: coroutines on small stacks (issue 24). `coro N`
 * runs coro_entry on a makecontext stack of N bytes (4096, 6144, 8192:
 * glibc's malloc fits in 4 KiB); it calls coro_work, which makes 2000
 * rounds of malloc (1000 + i bytes), realloc to 40000 + i and free, 82 MB
 * in all (about 160 samples at the default rate), swapping back to main
 * every 500 rounds. Prints a checksum of what it wrote, so that the
 * blocks are used.
 * `coro sigalt`: the same kind of small stack for a signal handler: an
 * 8 KiB sigaltstack, on which a SIGUSR1 handler (raised 10 times) makes
 * 100 malloc/free pairs in handler_work. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

static ucontext_t main_ctx, coro_ctx;
static unsigned long sum;

__attribute__((noinline)) static void coro_work(int from, int to)
{
	for (int i = from; i < to; i++) {
		unsigned char *p = malloc(1000 + (size_t)i);
		if (!p)
			exit(1);
		memset(p, i & 0xff, 1000 + (size_t)i);
		unsigned char *q = realloc(p, 40000 + (size_t)i);
		if (!q)
			exit(1);
		q[39999] = 1;
		sum += q[i] + q[39999];
		free(q);
	}
}

__attribute__((noinline)) static void coro_entry(void)
{
	for (int part = 0; part < 4; part++) {
		coro_work(part * 500, part * 500 + 500);
		swapcontext(&coro_ctx, &main_ctx);
	}
}

static void *volatile sink;
static volatile sig_atomic_t handled;

__attribute__((noinline)) static void handler_work(void)
{
	for (int i = 0; i < 100; i++) {
		sink = malloc(64 + (size_t)i);
		if (sink)
			memset(sink, i, 64);
		free(sink);
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	handler_work();
	handled++;
}

static int sigalt(void)
{
	stack_t ss = { .ss_sp = malloc(8192), .ss_size = 8192, .ss_flags = 0 };
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	if (!ss.ss_sp || sigaltstack(&ss, NULL) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
		return 1;
	for (int i = 0; i < 10; i++)
		raise(SIGUSR1);
	printf("handler on an 8 KiB sigaltstack ran %d times\n", (int)handled);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sigalt"))
		return sigalt();
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
	void *stack = malloc(size);
	if (!stack || getcontext(&coro_ctx) < 0)
		return 1;
	coro_ctx.uc_stack.ss_sp = stack;
	coro_ctx.uc_stack.ss_size = size;
	coro_ctx.uc_link = &main_ctx;
	makecontext(&coro_ctx, coro_entry, 0);
	int switches = 0;
	for (int part = 0; part < 4; part++) {
		if (swapcontext(&main_ctx, &coro_ctx) < 0)
			return 1;
		switches++;
	}
	free(stack);
	printf("coroutine on %zu bytes: %d switches, sum %lu\n", size, switches, sum);
	return 0;
}
