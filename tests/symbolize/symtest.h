/* Helpers for the symbolizer tests: capture real stacks (return addresses,
 * innermost first, the way the sampler records them) from allocation
 * wrappers, and describe the loaded modules as the sampler does. */
#ifndef SYMTEST_H
#define SYMTEST_H

#include <execinfo.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYMTEST_MAXSTACKS 2048
#define SYMTEST_DEPTH 32

struct symtest_rec {
	bool armed;
	int n;
	uint32_t depth[SYMTEST_MAXSTACKS];
	uint64_t pcs[SYMTEST_MAXSTACKS][SYMTEST_DEPTH];
};

/* Records the stack of the wrapper's caller, from the wrapper's return
 * address on (this is always inlined into the wrapper): the frames above
 * it are the wrapper's own and, under ASan, its backtrace interceptor. */
__attribute__((always_inline)) static inline void symtest_record(struct symtest_rec *r)
{
	if (!r->armed || r->n >= SYMTEST_MAXSTACKS)
		return;
	void *ra = __builtin_return_address(0);
	void *buf[SYMTEST_DEPTH + 4];
	int d = backtrace(buf, SYMTEST_DEPTH + 4);
	int from = 0;
	while (from < d && buf[from] != ra)
		from++;
	uint32_t n = 0;
	for (int i = from; i < d && n < SYMTEST_DEPTH; i++)
		r->pcs[r->n][n++] = (uint64_t)(uintptr_t)buf[i];
	r->depth[r->n] = n;
	r->n++;
}

#endif
