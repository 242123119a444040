/* Under a small file size limit (RLIMIT_FSIZE, set by the test): catches
 * SIGXFSZ and counts it, makes argv[1] allocations (kept 64 at a time),
 * then writes 128 KiB to the file argv[2] itself, past the limit. Prints
 * the allocations, what its write got (bytes, errno) and the SIGXFSZ it
 * caught, and exits with status 3: a run under record must print the
 * same (the sampler's writes past the limit get no signal to the
 * program, the program's own get theirs). With a third argument N it
 * sets its own soft limit to N KiB first (record's own limit stays as it
 * was: only the trace can say why it stops). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static volatile sig_atomic_t xfsz;

static void on_xfsz(int s)
{
	(void)s;
	xfsz++;
}

static __attribute__((noinline)) void *fsize_site(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* kept: GCC drops a malloc/free pair */
	return p;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[1]);
	if (argc > 3) {
		struct rlimit rl;
		getrlimit(RLIMIT_FSIZE, &rl);
		rl.rlim_cur = (rlim_t)atol(argv[3]) << 10;
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			return 4;
	}
	signal(SIGXFSZ, on_xfsz);
	void *keep[64] = { 0 };
	for (long i = 0; i < n; i++) {
		free(keep[i % 64]);
		keep[i % 64] = fsize_site(16 + (size_t)(i % 100));
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	static char block[128 << 10];
	ssize_t w = fd >= 0 ? write(fd, block, sizeof(block)) : -1;
	ssize_t w2 = fd >= 0 ? write(fd, block, sizeof(block)) : -1;
	int err = errno;
	printf("allocations %ld, wrote %zd then %zd (%s), SIGXFSZ %d\n", n, w, w2,
	       w2 < 0 ? strerror(err) : "no error", (int)xfsz);
	return 3;
}
