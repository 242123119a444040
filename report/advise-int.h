/* Internals shared by the advisor's files (advise.c, advise_verdict.c,
 * advise_sites.c); not part of the public API. */
#ifndef AP_ADVISE_INT_H
#define AP_ADVISE_INT_H

#include <stdint.h>

#include "ap_advise.h"

/* addr -> uint32 hash map (addresses are never 0). */
struct amap_ent {
	uint64_t key;
	uint32_t val;
};
struct amap {
	struct amap_ent *e;	/* key and value side by side: one cache miss */
	size_t cap, n;
};
void amap_init(struct amap *m);
void amap_release(struct amap *m);
void amap_put(struct amap *m, uint64_t addr, uint32_t v);
uint32_t amap_take(struct amap *m, uint64_t addr);

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
