/* The mapping index: which mapping holds a PC (ap_trace_mapping_for). */
#include "ap_trace.h"
#include "trace-int.h"
#include "search.h"

#include <stdlib.h>
#include <string.h>

/* One entry of the mapping lookup index: disjoint, sorted by start. */
struct ap_map_range {
	uint64_t start, end;
	size_t map;
};

/* ---- mappings ---- */

static int range_cmp(const void *a, const void *b)
{
	const struct ap_map_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Builds the disjoint lookup index: each mapping in order cuts what it
 * overlaps out of the ranges of the ones before it. */
void ap_trace_index_maps(struct ap_trace *t)
{
	struct ap_map_range *ix = NULL;
	size_t n = 0, alloc = 0;
	for (size_t m = 0; m < t->nmaps; m++) {
		uint64_t s = t->maps[m].start, e = t->maps[m].end;
		if (s >= e)
			continue;
		size_t out = 0;
		size_t nold = n;
		AP_ALLOC_GROW(ix, n + 2, alloc);
		for (size_t i = 0; i < nold; i++) {
			struct ap_map_range x = ix[i];
			if (x.end <= s || x.start >= e) {
				ix[out++] = x;
				continue;
			}
			if (x.start < s)
				ix[out++] = (struct ap_map_range){x.start, s, x.map};
			if (x.end > e) {
				/* a range cut in two: the right part goes at the end */
				AP_ALLOC_GROW(ix, n + 2, alloc);
				ix[n++] = (struct ap_map_range){e, x.end, x.map};
			}
		}
		/* move the right parts added past nold down after `out` */
		size_t extra = n - nold;
		memmove(ix + out, ix + nold, extra * sizeof(*ix));
		n = out + extra;
		AP_ALLOC_GROW(ix, n + 1, alloc);
		ix[n++] = (struct ap_map_range){s, e, m};
	}
	if (n)
		qsort(ix, n, sizeof(*ix), range_cmp);
	t->map_index = ix;
	t->nmap_index = n;
}

const struct ap_mapping *ap_trace_mapping_for(const struct ap_trace *t, uint64_t pc)
{
	/* the first range with start > pc: the one before may hold pc */
	size_t lo = AP_UPPER_BOUND(t->map_index, t->nmap_index, start, pc);
	if (!lo)
		return NULL;
	const struct ap_map_range *x = &t->map_index[lo - 1];
	return pc < x->end ? &t->maps[x->map] : NULL;
}
