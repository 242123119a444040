/* ctor_thread: lets ctor_thread_lib's thread run 20 ms from before the
 * sampler's start, stops it and frees what it kept. Natively nothing is
 * in use at the end (valgrind: every block freed). With
 * CTOR_THREAD_FORKS set, prints how many children the thread forked and
 * how many of them failed; else how many allocations and reallocs of the
 * thread's succeeded. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long ctor_thread_stop(long *failed, long *ncalls);

int main(void)
{
	usleep(20000);
	long failed, calls, forks = ctor_thread_stop(&failed, &calls);
	if (getenv("CTOR_THREAD_FORKS"))
		printf("forks %ld failed %ld\n", forks, failed);
	else
		printf("calls %ld\n", calls);
	return 0;
}
