/* testdata/daemon: a daemon's allocations. The parent forks and exits at
 * once; the child (a new session, like a daemon) waits for `delay_ms`
 * (argv[1], default 300) so that `allocprof record` has returned, then
 * makes 2000 malloc(64) calls, frees them and exits 0. argv[2], if given,
 * is a file the child writes its pid to before it starts; argv[3]
 * "closefds": the child first closes every descriptor from 3 on, as many
 * daemons do; "drip": the child makes its blocks one every 100 ms for
 * `delay_ms` instead (a daemon at work when it is killed), then frees them.
 * Child totals: 2000 allocs, 128000 bytes, 2000 frees (drip: delay_ms /
 * 100 of each, 64 bytes each). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tdutil.h"

#define N_BLOCKS 2000

static void *blocks[N_BLOCKS];

__attribute__((noinline)) static void *make_block(unsigned i)
{
	void *p = malloc(64);
	td_touch(p, 64, (unsigned char)i);
	return p;
}

int main(int argc, char **argv)
{
	long delay_ms = argc > 1 ? atol(argv[1]) : 300;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0)
		return 0;
	setsid();
	if (argc > 3 && !strcmp(argv[3], "closefds"))
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	if (argc > 2) {
		/* no stdio: its FILE would be one more allocation */
		char line[32];
		int n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			if (write(fd, line, (size_t)n) != n)
				return 1;
			close(fd);
		}
	}
	unsigned n = N_BLOCKS;
	if (argc > 3 && !strcmp(argv[3], "drip")) {
		n = (unsigned)(delay_ms / 100) < N_BLOCKS ? (unsigned)(delay_ms / 100) : N_BLOCKS;
		for (unsigned i = 0; i < n; i++) {
			struct timespec tick = { 0, 100000000L };
			nanosleep(&tick, NULL);
			blocks[i] = make_block(i);
		}
	} else {
		struct timespec ts = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		for (unsigned i = 0; i < n; i++)
			blocks[i] = make_block(i);
	}
	for (unsigned i = 0; i < n; i++)
		free(blocks[i]);
	return 0;
}
