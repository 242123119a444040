/* What the sampler's own blocks would show a program under --all: the
 * heap bytes in use (mallinfo2's uordblks, every arena) that one
 * malloc(10) adds, the first in the main thread and the first in a new
 * thread (a thread's first allocation is its first unwind: libunwind's
 * thread-local block came from the program's heap there), and the
 * usable size of the aligned block asked for next. A run under record,
 * sampled or --all, must print what a run without it prints. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct seen {
	size_t grew, usable;
	void *keep[2];
};

static void first_malloc(struct seen *s)
{
	size_t before = mallinfo2().uordblks;
	s->keep[0] = malloc(10);
	s->grew = mallinfo2().uordblks - before;
	s->keep[1] = aligned_alloc(64, 64);
	s->usable = malloc_usable_size(s->keep[1]);
}

static void *thread_main(void *arg)
{
	first_malloc(arg);
	return NULL;
}

/* "loop": malloc(i) and memalign(64, i) for i = 1, 8, ... 2999, each
 * freed, the aligned block's usable size printed (how glibc splits it
 * depends on where it lands), in the main thread; "loop thread": then in
 * a new thread too. A sampled run unwinds for the first time in a thread
 * at its first sample, somewhere in it: what that unwind allocates must
 * not be on the program's heap then. */
static void *loop(void *arg)
{
	const char *who = arg;
	for (int i = 1; i < 3000; i += 7) {
		void *p = malloc((size_t)i), *q = memalign(64, (size_t)i);
		printf("%s %d %zu %zu\n", who, i, malloc_usable_size(p), malloc_usable_size(q));
		free(p);
		free(q);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		pthread_t th;
		loop("main");
		return argc > 2 && (pthread_create(&th, NULL, loop, "thread") || pthread_join(th, NULL));
	}
	struct seen m, t;
	first_malloc(&m);
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, &t) || pthread_join(th, NULL))
		return 1;
	printf("main: malloc(10) adds %zu in use, aligned_alloc(64, 64) usable %zu\n"
	       "thread: malloc(10) adds %zu in use, aligned_alloc(64, 64) usable %zu\n",
	       m.grew, m.usable, t.grew, t.usable);
	for (int i = 0; i < 2; i++) {
		free(m.keep[i]);
		free(t.keep[i]);
	}
	return 0;
}
