/* testdata/single: one thread, a fixed mix of sizes from four known call
 * sites, some blocks kept to the end. Expected values: single.expected.json.
 *   make_node()    malloc(24)     x 1000, 990 freed
 *   make_record()  malloc(1000)   x 200, all freed
 *   make_image()   malloc(100000) x 20, 15 freed
 *   make_empty()   malloc(0)      x 1, kept
 * plus free(NULL) x 3, which is no event at all.
 * Totals: 1221 allocs, 2224000 bytes, 1205 frees; at exit 16 blocks,
 * 10*24 + 5*100000 = 500240 bytes in use. */
#include <stdlib.h>

#include "tdutil.h"

#define N_NODE 1000
#define N_RECORD 200
#define N_IMAGE 20

static void *nodes[N_NODE];
static void *records[N_RECORD];
static void *images[N_IMAGE];
static void *empty;

__attribute__((noinline)) static void *make_node(unsigned i)
{
	void *p = malloc(24);
	td_touch(p, 24, (unsigned char)i);
	return p;
}

__attribute__((noinline)) static void *make_record(unsigned i)
{
	void *p = malloc(1000);
	td_touch(p, 1000, (unsigned char)i);
	return p;
}

__attribute__((noinline)) static void *make_image(unsigned i)
{
	void *p = malloc(100000);
	td_touch(p, 100000, (unsigned char)i);
	return p;
}

__attribute__((noinline)) static void *make_empty(void)
{
	void *p = malloc(0);
	td_sink = p;
	return p;
}

int main(void)
{
	unsigned long sum = 0;
	/* Interleave the sites so the order of events is not one site after
	 * the other. */
	for (unsigned i = 0; i < N_NODE; i++) {
		nodes[i] = make_node(i);
		if (i % 5 == 0)
			records[i / 5] = make_record(i);
		if (i % 50 == 0)
			images[i / 50] = make_image(i);
	}
	empty = make_empty();
	for (unsigned i = 0; i < N_NODE; i++) {
		sum += ((unsigned char *)nodes[i])[0];
		if (i >= 10)
			free(nodes[i]);
	}
	for (unsigned i = 0; i < N_RECORD; i++) {
		sum += ((unsigned char *)records[i])[999];
		free(records[i]);
	}
	for (unsigned i = 0; i < N_IMAGE; i++) {
		sum += ((unsigned char *)images[i])[0];
		if (i >= 5)
			free(images[i]);
	}
	void *volatile nothing = NULL;
	for (int i = 0; i < 3; i++)
		free(nothing);
	td_say("single: %u allocations, checksum %lu\n", N_NODE + N_RECORD + N_IMAGE + 1, sum);
	return 0;
}
