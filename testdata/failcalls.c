/* testdata/failcalls: allocation calls that fail, among ones that succeed.
 * Failed: malloc(huge), calloc(quarter, 3) (overflow),
 * calloc(eighth, 1), realloc(NULL, huge), a realloc of a live
 * block to SIZE_MAX / 2 (the block stays), reallocarray(NULL, SIZE_MAX / 4, 5) (overflow),
 * aligned_alloc(64, huge), posix_memalign(.., 64, SIZE_MAX / 2),
 * memalign(64, huge): 9 per round, 10 rounds, none an allocation.
 * Succeeded: per round malloc(100), then freed. Totals: 10 allocs, 10 frees,
 * 1000 bytes; valgrind counts the same. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "tdutil.h"

/* volatile: the compiler must neither warn about nor fold the sizes */
static volatile size_t huge = SIZE_MAX / 2, quarter = SIZE_MAX / 4, eighth = SIZE_MAX / 8;

int main(int argc, char **argv)
{
	int no_realloc = argc > 1;
	(void)argv;
	unsigned failed = 0;
	for (unsigned r = 0; r < 10; r++) {
		void *p = malloc(100);
		td_touch(p, 100, (unsigned char)r);
		void *q;
		failed += (td_sink = malloc(huge)) == NULL;
		failed += (td_sink = calloc(quarter, 3)) == NULL;
		failed += (td_sink = calloc(eighth, 1)) == NULL;
		failed += (td_sink = realloc(NULL, huge)) == NULL;
		if (!no_realloc)
			failed += (q = realloc(p, huge)) == NULL;
		failed += (td_sink = reallocarray(NULL, quarter, 5)) == NULL;
		failed += (td_sink = aligned_alloc(64, huge)) == NULL;
		failed += posix_memalign(&q, 64, huge) != 0;
		failed += (td_sink = memalign(64, huge)) == NULL;
		free(p);
	}
	td_say("%u calls failed\n", failed);
	return failed == (no_realloc ? 80u : 90u) ? 0 : 1;
}
