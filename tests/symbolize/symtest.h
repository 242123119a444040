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

/* Records the stack of the wrapper's caller: frame 0 of backtrace() is the
 * wrapper itself (this is always inlined into it), so it is skipped. */
__attribute__((always_inline)) static inline void symtest_record(struct symtest_rec *r)
{
	if (!r->armed || r->n >= SYMTEST_MAXSTACKS)
		return;
	void *buf[SYMTEST_DEPTH + 1];
	int d = backtrace(buf, SYMTEST_DEPTH + 1);
	r->depth[r->n] = d > 1 ? (uint32_t)(d - 1) : 0;
	for (int i = 1; i < d; i++)
		r->pcs[r->n][i - 1] = (uint64_t)(uintptr_t)buf[i];
	r->n++;
}

#endif
