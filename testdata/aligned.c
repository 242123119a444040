/* testdata/aligned: calloc, the aligned variants and reallocarray, with their
 * failure cases; prints each result's alignment and errno so that running
 * with and without the sampler shows conformance line by line.
 * Expected values: aligned.expected.json. Successful calls, each freed
 * at the end unless noted:
 *   calloc(10, 24)               240 bytes
 *   calloc(0, 8)                 0 bytes (glibc returns a unique pointer)
 *   posix_memalign(64, 100)      100
 *   aligned_alloc(256, 512)      512
 *   aligned_alloc(3, 100)        100 (glibc 2.36 rounds a bad alignment up)
 *   memalign(4096, 1000)         1000
 *   valloc(5000)                 5000
 *   pvalloc(5000)                8192 (pvalloc rounds the size up to a page,
 *                                and that is the size glibc allocates)
 *   reallocarray(NULL, 10, 30)   300, then
 *   reallocarray(p, 20, 30)      600 (1 alloc + 1 free), kept to the end
 * Failures, which allocate nothing: calloc overflow (ENOMEM), malloc and
 * calloc of 2^62 bytes (ENOMEM), posix_memalign with alignment 3 (EINVAL)
 * and 24 (EINVAL), posix_memalign of 2^62 bytes (ENOMEM), aligned_alloc and
 * memalign of 2^62 bytes (ENOMEM), valloc of 2^62 (ENOMEM), reallocarray
 * overflow (ENOMEM, block untouched), realloc(p, 2^62) (NULL, ENOMEM, p
 * still valid).
 * Totals: 10 allocs, 16044 bytes, 9 frees; 1 block of 600 bytes at exit.
 *
 * `aligned for-valgrind` leaves out two calls that valgrind 3.19 gets wrong,
 * so that its heap summary can be compared with ours: pvalloc (valgrind does
 * not support it and aborts the program) and the failing realloc(p, 2^62)
 * (valgrind counts it as one allocation of 2^62 bytes and one free, though
 * nothing was allocated or freed). That variant: 9 allocs, 7852 bytes,
 * 8 frees; 1 block of 600 bytes at exit.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

#define HUGE ((size_t)1 << 62)

static void *live[16];
static unsigned nlive;

static void keep(void *p)
{
	if (p)
		live[nlive++] = p;
	td_sink = p;
}

static const char *errname(int e)
{
	if (e == ENOMEM)
		return "ENOMEM";
	if (e == EINVAL)
		return "EINVAL";
	return e ? "other" : "0";
}

/* Prints one result: whether it succeeded, whether it is aligned to `align`,
 * and errno. Addresses are not printed: they differ between runs. */
static void report(const char *what, const void *p, size_t align, int err)
{
	if (p)
		td_say("%-28s ok, %s\n", what,
		       (uintptr_t)p % align == 0 ? "aligned" : "MISALIGNED");
	else
		td_say("%-28s NULL, errno %s\n", what, errname(err));
}

/* The same for posix_memalign, which returns the error instead. */
static void report_rc(const char *what, int rc, const void *p, size_t align)
{
	if (rc == 0)
		report(what, p, align, 0);
	else
		td_say("%-28s returned %s\n", what, errname(rc));
}

/* One call: errno cleared before, the result and errno reported after. The
 * label is the call as written, with HUGE and BIG in place of the volatiles. */
#define TRY(label, expr, align)                                                                    \
	({                                                                                         \
		errno = 0;                                                                         \
		void *r_ = (expr);                                                                 \
		report(label, r_, align, errno);                                                   \
		r_;                                                                                \
	})

int main(int argc, char **argv)
{
	int full = !(argc > 1 && strcmp(argv[1], "for-valgrind") == 0);
	void *p;
	int rc;
	/* volatile: the compiler must not see the overflow coming. */
	volatile size_t big = SIZE_MAX / 2, huge = HUGE;

	p = TRY("calloc(10, 24)", calloc(10, 24), 16);
	if (p) {
		unsigned nonzero = 0;
		for (unsigned i = 0; i < 240; i++)
			nonzero += ((unsigned char *)p)[i] != 0;
		td_say("calloc zeroed: %s\n", nonzero ? "no" : "yes");
	}
	keep(p);
	keep(TRY("calloc(0, 8)", calloc(0, 8), 16));
	rc = posix_memalign(&p, 64, 100);
	report_rc("posix_memalign(64, 100)", rc, p, 64);
	if (rc == 0)
		keep(p);
	keep(TRY("aligned_alloc(256, 512)", aligned_alloc(256, 512), 256));
	keep(TRY("aligned_alloc(3, 100)", aligned_alloc(3, 100), 4));
	keep(TRY("memalign(4096, 1000)", memalign(4096, 1000), 4096));
	keep(TRY("valloc(5000)", valloc(5000), 4096));
	if (full)
		keep(TRY("pvalloc(5000)", pvalloc(5000), 4096));

	/* volatile: after a failed reallocarray/realloc the block is still
	 * valid, which -Wuse-after-free cannot know. */
	void *volatile arr = TRY("reallocarray(NULL, 10, 30)", reallocarray(NULL, 10, 30), 16);
	td_touch(arr, 300, 3);
	p = TRY("reallocarray(p, 20, 30)", reallocarray(arr, 20, 30), 16);
	if (p)
		arr = p;

	/* Failures: nothing is allocated, errno says why. */
	TRY("calloc(SIZE_MAX/2, 4)", calloc(big, 4), 1);
	TRY("malloc(2^62)", malloc(huge), 1);
	TRY("calloc(2^62, 1)", calloc(huge, 1), 1);
	void *q = NULL;
	rc = posix_memalign(&q, 3, 100);
	report_rc("posix_memalign(3, 100)", rc, q, 1);
	rc = posix_memalign(&q, 24, 100);
	report_rc("posix_memalign(24, 100)", rc, q, 1);
	rc = posix_memalign(&q, 64, huge);
	report_rc("posix_memalign(64, 2^62)", rc, q, 1);
	TRY("aligned_alloc(64, 2^62)", aligned_alloc(64, huge), 1);
	TRY("memalign(64, 2^62)", memalign(64, huge), 1);
	TRY("valloc(2^62)", valloc(huge), 1);
	TRY("reallocarray(p, overflow)", reallocarray(arr, big, 4), 1);
	if (full)
		TRY("realloc(p, 2^62)", realloc(arr, huge), 1);
	td_say("block kept after failed realloc: %s\n",
	       ((unsigned char *)arr)[0] == 3 ? "intact" : "CHANGED");

	for (unsigned i = 0; i < nlive; i++)
		free(live[i]);
	td_sink = arr; /* kept to the end: 600 bytes in use at exit */
	td_say("aligned: %u blocks freed, 1 kept\n", nlive);
	return 0;
}
