/* A statically linked program: `allocprof record` must refuse it. */
#include <stdio.h>

int main(void)
{
	puts("static hello");
	return 0;
}
