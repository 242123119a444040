/* testdata/ctor_main: links libctoralloc.so, whose constructor allocates
 * before the sampler starts (ctor_lib.c), and frees those blocks in main:
 * 1800 frees of blocks allocated early, 1 realloc'd block freed, plus its
 * own 10 x malloc(100), freed. Counts are compared with valgrind's
 * (tests/e2e/exact.sh). */
#include <stdlib.h>

#include "tdutil.h"

extern void *ctor_blocks[];
extern void *ctor_grown;
unsigned ctor_count(void);

int main(void)
{
	unsigned n = ctor_count();
	for (unsigned i = 0; i < n; i++)
		free(ctor_blocks[i]);
	free(ctor_grown);
	for (unsigned i = 0; i < 10; i++) {
		void *p = malloc(100);
		td_touch(p, 100, (unsigned char)i);
		free(p);
	}
	td_say("freed %u early blocks\n", n);
	return 0;
}
