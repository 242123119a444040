/* advise testdata: tiny objects (24 bytes), allocated and freed at once, two
 * million of them (enough bytes for ~90 samples at the default rate).
 * Allocating them costs less than a pool's bookkeeping: verdict
 * no: too small. usage: advise_tiny [COUNT] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

struct node {
	struct node *next;
	uint64_t key, val;
};

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2000000;
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++) {
		struct node *x = malloc(sizeof(*x)); /* SITE: advise_tiny */
		x->next = NULL;
		x->key = i;
		x->val = i * 3u;
		td_sink = x;
		sum += x->val;
		free(x);
	}
	td_say("advise_tiny: %u nodes, checksum %llu\n", n, (unsigned long long)sum);
	return 0;
}
