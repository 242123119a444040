/* testdata/diskfull: the disk fills up while the program runs, then has
 * room again. argv[1] is a file on the same file system as the trace.
 * Phase 1 makes 20000 malloc(32)/free pairs; then the program fills the
 * file system with argv[1] (4 KiB writes, then single bytes, until
 * ENOSPC); phase 2 makes 20000 more pairs (the sampler's chunks no longer
 * fit); it removes argv[1] and phase 3 makes 20000 more. Exit status 0,
 * or 1 if the file system never filled up. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdutil.h"

#define PAIRS 20000

__attribute__((noinline)) static void phase(unsigned char tag)
{
	for (unsigned i = 0; i < PAIRS; i++) {
		void *p = malloc(32);
		td_touch(p, 32, tag);
		free(p);
	}
}

static int fill(const char *path)
{
	static char block[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	while (write(fd, block, sizeof(block)) > 0)
		;
	while (write(fd, block, 1) > 0)
		;
	int full = errno == ENOSPC;
	close(fd);
	return full ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	phase(1);
	int rc = fill(argv[1]);
	phase(2);
	unlink(argv[1]);
	phase(3);
	td_say("diskfull: %s\n", rc == 0 ? "filled" : "never filled");
	return rc == 0 ? 0 : 1;
}
