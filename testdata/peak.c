/* testdata for the peak views: build() makes 64 MiB in 1 MiB blocks and
 * frees them all, then leak() makes 488 blocks of 1000 bytes the program
 * keeps. The peak (64 MiB live) is made by build() alone; at the end only
 * leak()'s 488,000 bytes are live. tests/e2e/peak.sh compares the peak
 * with massif's peak snapshot. After leak() the program idles 50 ms, so
 * that the end of a time axis (timeline's last bucket) holds the leak
 * alone even when a loaded machine stretched build() over that much of
 * the run.
 * `peak realloc` instead reaches its peak by a realloc and leaves it by
 * the next: malloc(100), realloc to 1,000,000 bytes (in swell()), realloc
 * to 10, then malloc(50) and its free. The peak is 1,000,000 bytes, all
 * swell()'s; massif 3.19's peak snapshot holds 60.
 * usage: peak [realloc] */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "tdutil.h"

#define NBIG 64
static char *big[NBIG];
static char *small[488];

static __attribute__((noinline)) void build(void)
{
	for (int i = 0; i < NBIG; i++) {
		big[i] = malloc(1 << 20);
		td_touch(big[i], 1 << 20, (unsigned char)i);
	}
}

static __attribute__((noinline)) void release(void)
{
	for (int i = 0; i < NBIG; i++)
		free(big[i]);
}

static __attribute__((noinline)) void leak(void)
{
	for (int i = 0; i < 488; i++) {
		small[i] = malloc(1000);
		td_touch(small[i], 1000, (unsigned char)i);
	}
}

static char *volatile kept;

static __attribute__((noinline)) void swell(void)
{
	char *p = realloc(kept, 1000000);
	if (!p)
		abort();
	td_touch(p, 1000000, 7);
	kept = p;
}

static int realloc_peak(void)
{
	kept = malloc(100);
	if (!kept)
		return 1;
	td_touch(kept, 100, 1);
	swell();
	char *p = realloc(kept, 10);
	if (!p)
		return 1;
	kept = p;
	char *q = malloc(50);
	td_sink = q;
	free(q);
	td_say("peak realloc: %d\n", kept[0]); /* 7: swell's, kept by the shrink */
	free(kept);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "realloc"))
		return realloc_peak();
	build();
	release();
	leak();
	nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	uint32_t sum = 0;
	for (int i = 0; i < 488; i++)
		sum += (uint8_t)small[i][999];
	td_say("peak: checksum %u\n", sum);
	return 0;
}
