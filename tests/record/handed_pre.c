/* The constructor of a library the program links (initialized before
 * the preloaded sampler, which comes after it in the load order): with
 * HANDED_FILE set, it opens that file read-write, reads its first 4
 * bytes, puts it at the number record handed the trace on by
 * (ALLOCPROF_EXEC :f<fd>; 9 without it), and installs a seccomp filter
 * that refuses newfstatat, fstat and statx (EPERM), as a sandboxing
 * library may. DATA_FD says where. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../process/seccomp-filter.h"

int handed_pre_fd = -1;

__attribute__((constructor)) static void handed_pre(void)
{
	const char *file = getenv("HANDED_FILE");
	if (!file)
		return;
	const char *e = getenv("ALLOCPROF_EXEC"), *f = e ? strstr(e, ":f") : NULL;
	int at = f ? atoi(f + 2) : 9;
	int fd = open(file, O_RDWR);
	char head[4];
	if (fd < 0 || read(fd, head, sizeof(head)) != (ssize_t)sizeof(head) ||
	    (fd != at && (dup2(fd, at) < 0 || close(fd) < 0)))
		_exit(10);
	static const int refused[] = { SYS_newfstatat, SYS_fstat, SYS_statx };
	if (seccomp_refuse_list(SECCOMP_RET_ERRNO | EPERM, refused, 3, 0) < 0)
		_exit(12);
	handed_pre_fd = at;
}
