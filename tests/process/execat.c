/* tests/process/execat.c: an image replaced through execveat(2) or
 * fexecve(3) (issue 24). The first image allocates 300 blocks of 32 bytes
 * in first_image, then executes itself ("next") by
 *   fexecve FD       (glibc: execveat(fd, "", AT_EMPTY_PATH))
 *   execveat-fd      execveat(fd, "", ..., AT_EMPTY_PATH)
 *   execveat-path    execveat(AT_FDCWD, argv[0], ..., 0)
 *   syscall-execveat syscall(SYS_execveat, fd, "", ..., AT_EMPTY_PATH)
 *   syscall-execve   syscall(SYS_execve, argv[0], ...)
 * The next image allocates 200 blocks of 48 bytes in next_image and
 * exits 5. Both images' blocks belong to the run. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *volatile keep[300];

__attribute__((noinline)) static void first_image(void)
{
	for (int i = 0; i < 300; i++) {
		keep[i] = malloc(32);
		memset(keep[i], i, 32);
	}
}

__attribute__((noinline)) static void next_image(void)
{
	for (int i = 0; i < 200; i++) {
		keep[i] = malloc(48);
		memset(keep[i], i, 48);
	}
}

int main(int argc, char **argv)
{
	extern char **environ;
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "next")) {
		next_image();
		printf("next image\n");
		return 5;
	}
	first_image();
	printf("first image, %s\n", argv[1]);
	fflush(stdout);
	char *args[] = { argv[0], "next", NULL };
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	if (!strcmp(argv[1], "fexecve"))
		fexecve(fd, args, environ);
	else if (!strcmp(argv[1], "execveat-fd"))
		execveat(fd, "", args, environ, AT_EMPTY_PATH);
	else if (!strcmp(argv[1], "execveat-path"))
		execveat(AT_FDCWD, argv[0], args, environ, 0);
	else if (!strcmp(argv[1], "syscall-execveat"))
		syscall(SYS_execveat, fd, "", args, environ, AT_EMPTY_PATH);
	else if (!strcmp(argv[1], "syscall-execve"))
		syscall(SYS_execve, argv[0], args, environ);
	perror("exec");
	return 1;
}
