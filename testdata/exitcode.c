/* testdata/exitcode: ends with a known status, the way argv[1] says:
 * "return N" from main, "exit N" through exit(). It makes 10 malloc(32)
 * calls first, all freed, so that its trace has events. */
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

static void *blocks[10];

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int n = atoi(argv[2]);
	for (unsigned i = 0; i < 10; i++) {
		blocks[i] = malloc(32);
		td_touch(blocks[i], 32, (unsigned char)i);
	}
	for (unsigned i = 0; i < 10; i++)
		free(blocks[i]);
	if (!strcmp(argv[1], "exit"))
		exit(n);
	return n;
}
