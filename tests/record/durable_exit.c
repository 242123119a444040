/* 10,000 mallocs, then the exit_group system call, past exit() and
 * _exit() (what every Go program with cgo does): the sampler sees no end,
 * and its buffers must still reach the trace. The blocks stay live (a
 * global array), so the compiler keeps every call. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 10000
static void *volatile keep[N];

int main(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = malloc(24 + (size_t)(i & 7) * 8);
	syscall(SYS_exit_group, 7);
	return 1;
}
