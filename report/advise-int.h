/* Internals shared by the advisor's files (advise.c, advise_verdict.c,
 * advise_sites.c); not part of the public API. */
#ifndef AP_ADVISE_INT_H
#define AP_ADVISE_INT_H

#include <stdint.h>

#include "ap_advise.h"

/* Request sizes of a site: a weighted histogram with 4 buckets per power
 * of two. */
#define SIZE_BUCKETS 256
double size_bucket_value(unsigned b);
unsigned size_bucket(uint64_t size);

/* What the verdict needs beyond the replay results. */
struct site_facts {
	double hist[SIZE_BUCKETS];
};

/* Fills site->verdict, verdict_text and reasons. */
void advise_judge(const struct ap_advice *a, struct ap_advise_site *site,
		  const struct site_facts *f, const struct ap_advise_options *o);

/* The cap to evaluate for a site with these sizes, or 0 when its
 * capacities are not skewed. */
uint64_t advise_pick_cap(const struct site_facts *f, double gets);

/* Sorts a->sites by estimated benefit. */
void advise_rank(struct ap_advice *a);

#endif
