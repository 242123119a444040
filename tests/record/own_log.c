/* A program with a function of its own named `log` (a logging function,
 * as many have), exported (-rdynamic, for its plugins): it must stay the
 * program's. 100,000 blocks of 1000 bytes (195 samples expected at the
 * default rate), then how often its `log` ran and whether libm is loaded
 * (the program does not use it). */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static int nlog;

void log(const char *msg);
void log(const char *msg)
{
	nlog++;
	fprintf(stderr, "log: %s\n", msg);
}

static int find_libm(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libm.so"))
		*(int *)arg = 1;
	return 0;
}

int main(void)
{
	for (int i = 0; i < 100000; i++) {
		sink = malloc(1000);
		free(sink);
	}
	int libm = 0;
	dl_iterate_phdr(find_libm, &libm);
	printf("log calls %d, libm %s\n", nlog, libm ? "loaded" : "not loaded");
	return 0;
}
