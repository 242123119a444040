/* testdata/threads1k: 1000 short threads, created and joined one after
 * another in batches of 10, each doing 5 x malloc(48) and freeing them.
 * The point is the threads themselves: whatever the profiler allocates
 * for a thread (libunwind's thread-local state) must be neither counted nor
 * show as a free of an unknown block when glibc gives it back. Totals of the
 * program's own: 5000 allocs, 5000 frees, 240000 bytes (plus what thread
 * creation allocates in libc, which valgrind sees too). */
#include <pthread.h>
#include <stdlib.h>

#include "tdutil.h"

static void *work(void *arg)
{
	void *p[5];
	for (int i = 0; i < 5; i++) {
		p[i] = malloc(48);
		td_touch(p[i], 48, (unsigned char)i);
	}
	for (int i = 0; i < 5; i++)
		free(p[i]);
	return arg;
}

int main(void)
{
	for (int b = 0; b < 100; b++) {
		pthread_t t[10];
		for (int i = 0; i < 10; i++)
			if (pthread_create(&t[i], NULL, work, NULL) != 0)
				return 1;
		for (int i = 0; i < 10; i++)
			pthread_join(t[i], NULL);
	}
	td_say("1000 threads done\n");
	return 0;
}
