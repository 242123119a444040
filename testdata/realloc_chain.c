/* testdata/realloc_chain: buffers grown by doubling with realloc (the
 * bytes.Buffer pattern), realloc(NULL, n), realloc(p, 0), shrinking reallocs.
 * Counted as glibc and valgrind do: realloc(NULL, n) is one allocation,
 * realloc(p, n) with p != NULL and n > 0 is one allocation of n bytes plus
 * one free (even when the block stays in place), realloc(p, 0) is one free.
 * Expected values: realloc_chain.expected.json.
 *   10 x grow_and_drop(): realloc(NULL,16), then 32, 64, ..., 65536 (12
 *        reallocs), a shrink to 100, then realloc(p, 0):
 *        14 allocs, 14 frees, (131072 - 16) + 100 = 131156 bytes each
 *   1 x grow_and_keep(): realloc(NULL,16) then 32 .. 1024 (6 reallocs), kept:
 *        7 allocs, 6 frees, 2048 - 16 = 2032 bytes; 1 block of 1024 at exit
 *   1 x realloc(NULL, 0) then free: 1 alloc of 0 bytes, 1 free
 * Totals: 148 allocs, 1313592 bytes, 147 frees; 1 block, 1024 bytes in use.
 * Exits with status 3. */
#include <stdlib.h>

#include "tdutil.h"

static unsigned long sum;

/* Appends `n` bytes to buf, doubling its capacity as needed. */
__attribute__((noinline)) static char *append(char *buf, size_t *len, size_t *cap, size_t n,
					      unsigned char v)
{
	while (*len + n > *cap) {
		*cap = *cap ? *cap * 2 : 16;
		buf = realloc(buf, *cap);
	}
	for (size_t i = 0; i < n; i++)
		buf[*len + i] = (char)v;
	*len += n;
	td_sink = buf;
	return buf;
}

__attribute__((noinline)) static void grow_and_drop(unsigned round)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	/* 16 bytes at a time up to 65536: capacities 16, 32, ..., 65536. */
	while (len < 65536)
		buf = append(buf, &len, &cap, 16, (unsigned char)(round + len));
	sum += (unsigned char)buf[len - 1];
	/* Shrink to what a reader would keep. */
	buf = realloc(buf, 100);
	td_touch(buf, 100, 1);
	sum += (unsigned char)buf[50];
	/* realloc(p, 0) frees p and returns NULL in glibc. */
	buf = realloc(buf, 0);
	if (buf != NULL)
		td_say("realloc_chain: realloc(p, 0) returned non-NULL\n");
}

__attribute__((noinline)) static char *grow_and_keep(void)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	while (len < 1024)
		buf = append(buf, &len, &cap, 8, 7);
	return buf;
}

int main(void)
{
	for (unsigned r = 0; r < 10; r++)
		grow_and_drop(r);
	char *kept = grow_and_keep();
	sum += (unsigned char)kept[1023];
	void *zero = realloc(NULL, 0);
	td_sink = zero;
	free(zero);
	td_say("realloc_chain: 10 chains to 65536 bytes, kept %d bytes, checksum %lu\n", 1024, sum);
	return 3;
}
