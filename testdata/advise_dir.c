/* advise testdata: a loop that lists a directory: opendir allocates a DIR
 * and its 32 KiB buffer inside libc, closedir frees it. The allocation is
 * libc's; the place a program can pool it (or avoid it, by keeping the
 * DIR open and rewinddir) is its own call of opendir: advise must name
 * that line, via opendir (tests/advise). usage: advise_dir [TIMES] */
#include <dirent.h>
#include <stdlib.h>

#include "tdutil.h"

static unsigned list_once(const char *path)
{
	DIR *d = opendir(path); /* SITE: advise_dir */
	if (!d)
		return 0;
	unsigned n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	unsigned times = argc > 1 ? (unsigned)atoi(argv[1]) : 2000, n = 0;
	for (unsigned i = 0; i < times; i++)
		n += list_once("/");
	td_say("advise_dir: %u entries\n", n);
	return 0;
}
