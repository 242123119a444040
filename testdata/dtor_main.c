/* testdata/dtor_main: linked with dtor_lib, whose destructor frees the 200
 * blocks its constructor allocated; main allocates 10 blocks of 100 bytes
 * and frees them. valgrind: 210 allocs, 210 frees, 0 in use at exit. */
#include <stdlib.h>

#include "tdutil.h"

void *dtor_lib_get(unsigned i);

int main(void)
{
	void *b[10];
	for (unsigned i = 0; i < 10; i++) {
		b[i] = malloc(100);
		td_touch(b[i], 100, (unsigned char)i);
	}
	for (unsigned i = 0; i < 10; i++)
		free(b[i]);
	td_sink = dtor_lib_get(3);
	return 0;
}
