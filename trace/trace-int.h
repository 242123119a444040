/* Shared by the trace/ sources only. */
#ifndef AP_TRACE_INT_H
#define AP_TRACE_INT_H

#include "ap_trace.h"

/* (Re)builds t->map_index, the disjoint lookup index over t->maps that
 * ap_trace_mapping_for searches: each mapping in order cuts what it
 * overlaps out of the ranges of the ones before it. */
void ap_trace_index_maps(struct ap_trace *t);

#endif
