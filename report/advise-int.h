/* Internals shared by the advisor's files (advise.c, advise_verdict.c,
 * advise_sites.c); not part of the public API. */
#ifndef AP_ADVISE_INT_H
#define AP_ADVISE_INT_H

#include <stdint.h>

#include "ap_advise.h"

/* Sizes of a site: a weighted histogram with 4 buckets per power of two,
 * with the smallest size seen in each bucket and the largest overall, so
 * that quantiles and the maximum are sizes that occurred. */
#define SIZE_BUCKETS 256
struct size_hist {
	double w[SIZE_BUCKETS];
	double lo[SIZE_BUCKETS];	/* smallest size seen in the bucket */
	double total, sum, max;
};
double size_bucket_value(unsigned b);
/* The smallest size of the bucket holding quantile q (0 when empty). */
double size_hist_quantile(const struct size_hist *h, double q);

/* What the verdict needs beyond the replay results. */
struct site_facts {
	struct size_hist req;	/* request sizes, one per object born */
	struct size_hist cap;	/* capacities of freed objects (largest size reached) */
};

/* Fills site->verdict, verdict_text and reasons. */
void advise_judge(const struct ap_advice *a, struct ap_advise_site *site,
		  const struct site_facts *f, const struct ap_advise_options *o);

/* The cap to evaluate for a site with these capacities, or 0 when they are
 * not skewed. */
uint64_t advise_pick_cap(const struct site_facts *f, double gets);

/* Judges a measured site again from its measurement (s->m). */
void advise_judge_measured(const struct ap_advice *a, struct ap_advise_site *s);

/* Sorts a->sites: the sites a pool pays at first, measured ones before
 * estimated ones, each by the CPU time saved; then the rest by bytes. */
void advise_rank(struct ap_advice *a);

#endif
