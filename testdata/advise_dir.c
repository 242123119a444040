/* advise testdata: a loop that lists a directory: opendir allocates a DIR
 * and its 32 KiB buffer inside libc, closedir frees it. The allocation is
 * libc's; the place a program can pool it (or avoid it, by keeping the
 * DIR open and rewinddir) is its own call of opendir: advise must name
 * that line, via opendir (tests/advise). glibc's opendir tail-calls
 * opendir_tail, which allocates: the name is the function called, not
 * that one, and so at each line marked VIA (fopen's FILE, made by
 * __fopen_internal; fprintf's buffer, by __fprintf, fprintf's own name in
 * glibc; setenv's copy, by __add_to_environ). asprintf's buffer, which
 * vfprintf grows by copy (100, 300, 700, 1500 bytes) and asprintf then
 * fits to the message, is one site, the program's line marked ONE, its
 * growths the object's. getline, an inline function of glibc's
 * <bits/stdio.h> at -O2 that calls __getdelim, is named as the program's
 * source calls it. usage: advise_dir [TIMES] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static unsigned file_once(unsigned i)
{
	FILE *f = fopen("/dev/null", "w"); /* VIA: fopen */
	if (!f)
		return 0;
	fprintf(f, "%u\n", i); /* VIA: fprintf */
	char *msg = NULL;
	int len = asprintf(&msg, "%u:%*s", i, (int)(300 + i % 900), ""); /* ONE */
	if (len > 0)
		fputs(msg, f);
	free(msg);
	fclose(f);
	char text[400];
	memset(text, 'x', sizeof(text) - 2);
	text[sizeof(text) - 2] = '\n';
	text[sizeof(text) - 1] = 0;
	FILE *m = fmemopen(text, strlen(text), "r");
	if (m) {
		char *line = NULL;
		size_t cap = 0;
		ssize_t got = getline(&line, &cap, m); /* VIA: getline */
		free(line);
		fclose(m);
		len += got > 0 ? (int)got : 0;
	}
	char v[16];
	snprintf(v, sizeof(v), "%u", i);
	setenv("ADVISE_DIR_LAST", v, 1); /* VIA: setenv */
	return len > 0 ? (unsigned)len : 0;
}

int main(int argc, char **argv)
{
	unsigned times = argc > 1 ? (unsigned)atoi(argv[1]) : 2000, n = 0, chars = 0;
	for (unsigned i = 0; i < times; i++) {
		n += list_once("/");
		if (i % 20 == 0)
			chars += file_once(i);
	}
	td_say("advise_dir: %u entries, %u characters formatted\n", n, chars);
	return 0;
}
