/* Module list of the running process, as the sampler records it, and
 * source markers. */
#ifndef SYMTEST_MAPS_H
#define SYMTEST_MAPS_H

#include <stdio.h>

#include "ap_trace.h"

/* Fills t->maps / t->nmaps from dl_iterate_phdr (skips the vdso). */
void symtest_maps(struct ap_trace *t);
void symtest_maps_free(struct ap_trace *t);
/* A deep copy of t->maps (t->nmaps entries), for tests that edit it;
 * release by putting it in a trace and calling symtest_maps_free. */
struct ap_mapping *symtest_maps_copy(const struct ap_trace *t);

/* The line of the comment "SITE:<name>" in a source file: expected call
 * sites fixed by the source itself. -1 when absent. */
int symtest_site_line(const char *file, const char *name);

#endif
