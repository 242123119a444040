/* A program with libunwind of its own (tests/record/unwinder.sh ownpipe):
 * one unw_backtrace, which sets libunwind up (its address-checking pipe,
 * natively at 3 and 4), then it closes every descriptor from 3 up, as
 * daemons do, makes a pipe of its own (3 and 4 again), writes HELLO into
 * it, allocates through deep stacks (the sampler unwinds them with the
 * same libunwind), and reads the pipe back: HELLO, as natively. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unwinder_deep.h"

int main(void)
{
	void *bt[32];
	if (unw_backtrace(bt, 32) < 1)
		return 1;
	for (int fd = 3; fd < 64; fd++)
		close(fd);
	int p[2];
	if (pipe(p) || write(p[1], "HELLO", 5) != 5)
		return 1;
	for (int i = 0; i < 200; i++)
		deep(i % 60);
	close(p[1]);
	char buf[64];
	ssize_t n = read(p[0], buf, sizeof(buf));
	printf("read back: %.*s\n", n > 0 ? (int)n : 0, buf);
	return 0;
}
