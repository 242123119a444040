/* attach.py 'asleep': N times, errno set to 0, a nanosleep of MS
 * milliseconds, then errno printed (record -p attaches while it sleeps:
 * its calls in the process must leave the thread's errno as it was).
 * usage: attach_sleeper N MS */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, ms = argc > 2 ? atoi(argv[2]) : 1000;
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
		errno = 0;
		int rc = nanosleep(&ts, NULL);
		printf("sleep %d: rc %d errno %d\n", i, rc, errno);
		fflush(stdout);
	}
	return 0;
}
