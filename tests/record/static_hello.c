/* A statically linked program: `allocprof record` must refuse it, and so
 * must `record -p` (given an argument, it waits for its stdin to close). */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char c;
	(void)argv;
	if (argc > 1)
		while (read(0, &c, 1) > 0)
			;
	puts("static hello");
	return 0;
}
