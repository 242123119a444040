/* A descriptor of the program's own at the number record handed its
 * trace on (ALLOCPROF_EXEC :f<fd>) by the time the sampler looks, and
 * no fstat (handed_pre.c, a linked library's constructor, put both
 * there): the sampler must tell the file is no trace without moving its
 * offset. Prints what a read of it gives from where its offset is, after
 * a malloc. A run under record prints what a run without it prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern int handed_pre_fd;
static char *volatile sink;

int main(void)
{
	sink = malloc(100);
	free(sink);
	char buf[64];
	ssize_t n = read(handed_pre_fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		printf("read: %s\n", strerror(errno));
		return 1;
	}
	buf[n] = 0;
	printf("read %zd bytes: %s\n", n, buf);
	return 0;
}
