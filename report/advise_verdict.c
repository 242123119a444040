/* The advisor's verdicts (POOL_MODEL.md §8): from a site's replay results
 * and statistics to one verdict and the sentences that explain it. The
 * thresholds are here, named, in one place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise-int.h"

/* Objects never freed, as a share of requests, that make a site "escapes". */
#define ESCAPE_SHARE 0.5
/* Below this share of all allocated bytes a site is "little to gain". */
#define MIN_GAIN_SHARE 0.02
/* A pool pays from this hit rate on. */
#define GOOD_HIT_RATE 0.5
/* "too small": malloc+free (and first touch) saves less than this many
 * times the pool's own get+put, for objects up to SMALL_MAX bytes (glibc's
 * tcache and fastbin sizes, where malloc is at its cheapest: a noisy
 * calibration must not call a 32 KiB buffer small). */
#define SMALL_FACTOR 2.0
#define SMALL_MAX 1024
/* Capacities are skewed when the largest request is this many times the
 * 90th percentile... */
#define SKEW_FACTOR 16.0
/* ...and a cap is worth it when it cuts the peak held bytes this much. */
#define CAP_GAIN 4.0
/* The smallest cap suggested (what Go's fmt uses). */
#define MIN_CAP (64u << 10)
/* Size classes: clusters of sizes at least this far apart, each with at
 * least this share of the requests. */
#define CLASS_RATIO 4.0
#define CLASS_SHARE 0.1

const char *ap_verdict_name(enum ap_verdict v)
{
	switch (v) {
	case AP_VERDICT_POOL:
		return "pool";
	case AP_VERDICT_POOL_CAP:
		return "pool with cap";
	case AP_VERDICT_SIZE_CLASSES:
		return "size classes";
	case AP_VERDICT_TOO_RARE:
		return "no: too rare";
	case AP_VERDICT_TOO_SMALL:
		return "no: too small";
	case AP_VERDICT_ESCAPES:
		return "no: escapes";
	case AP_VERDICT_LITTLE_GAIN:
		return "no: little to gain";
	}
	return "?";
}

static uint64_t pow2_ceil(double x)
{
	uint64_t p = 1;
	while ((double)p < x && p < (UINT64_C(1) << 62))
		p <<= 1;
	return p;
}

static double hist_quantile(const struct site_facts *f, double q, double *max)
{
	double tot = 0, acc = 0, v = 0;
	*max = 0;
	for (unsigned b = 0; b < SIZE_BUCKETS; b++) {
		tot += f->hist[b];
		if (f->hist[b] > 0)
			*max = size_bucket_value(b);
	}
	for (unsigned b = 0; b < SIZE_BUCKETS && tot > 0; b++) {
		acc += f->hist[b];
		if (acc >= q * tot) {
			v = size_bucket_value(b);
			break;
		}
	}
	return v;
}

uint64_t advise_pick_cap(const struct site_facts *f, double gets)
{
	double max, p90 = hist_quantile(f, 0.9, &max);
	if (gets <= 0 || p90 <= 0 || max < SKEW_FACTOR * p90)
		return 0;
	uint64_t cap = pow2_ceil(4 * p90);
	if (cap < MIN_CAP)
		cap = MIN_CAP;
	return (double)cap < max ? cap : 0;
}

/* Clusters of request sizes: runs of non-empty buckets whose neighbours
 * are less than CLASS_RATIO apart. Fills the upper size of each cluster
 * with at least CLASS_SHARE of the requests; returns how many. */
static size_t size_classes(const struct site_facts *f, uint64_t *classes, size_t max)
{
	double tot = 0;
	for (unsigned b = 0; b < SIZE_BUCKETS; b++)
		tot += f->hist[b];
	size_t n = 0;
	double w = 0, last = 0;
	for (unsigned b = 0; b <= SIZE_BUCKETS; b++) {
		bool end = b == SIZE_BUCKETS;
		if (!end && f->hist[b] <= 0)
			continue;
		double v = end ? 0 : size_bucket_value(b);
		if (w > 0 && (end || v >= CLASS_RATIO * last)) {
			if (w >= CLASS_SHARE * tot && n < max)
				classes[n++] = pow2_ceil(last);
			w = 0;
		}
		if (end)
			break;
		w += f->hist[b];
		last = v;
	}
	return n;
}

void ap_advise_format_duration(char *out, size_t len, double ns)
{
	double a = fabs(ns);
	if (a >= 1e9)
		snprintf(out, len, "%.3gs", ns / 1e9);
	else if (a >= 1e6)
		snprintf(out, len, "%.3gms", ns / 1e6);
	else if (a >= 1e3)
		snprintf(out, len, "%.3gus", ns / 1e3);
	else
		snprintf(out, len, "%.0fns", ns);
}

/* "s" unless n is 1 (as printed with %.0f). */
static const char *plural(double n)
{
	return n >= 0.5 && n < 1.5 ? "" : "s";
}

static void fmt_bytes(char *out, size_t len, double b)
{
	ap_format_bytes(out, len, b);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	struct ap_buf b = AP_BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	char tmp[1024];
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	ap_buf_addstr(&b, tmp);
	return ap_buf_detach(&b, NULL);
}

void advise_judge(const struct ap_advice *a, struct ap_advise_site *s,
		  const struct site_facts *f, const struct ap_advise_options *o)
{
	const struct ap_replay_result *r = &s->r;
	char b1[32], b2[32], b3[32], d1[32], d2[32];
	double hr = r->hit_rate * 100;
	uint64_t size = (uint64_t)(s->p50_size > 0 ? s->p50_size : s->mean_size);
	double saving = ap_cost_malloc_free(o->costs, size) + ap_cost_first_touch(o->costs, size);
	double pool = ap_cost_pool(o->costs, size);

	if (r->gets <= 0) {
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		s->reasons = xasprintf("No allocation here starts an object (only reallocs of objects born elsewhere).");
	} else if (r->escaped >= ESCAPE_SHARE * r->gets) {
		/* The order of the tests is the order of the reasons' force: an
		 * object that is kept, or that is cheaper to malloc than to pool,
		 * is no candidate whatever its share of the program. */
		s->verdict = AP_VERDICT_ESCAPES;
		s->reasons = xasprintf("%.0f%% of the objects are never freed: they are results the program keeps, "
				       "so nothing comes back to a pool.", 100 * r->escaped / r->gets);
	} else if (size <= SMALL_MAX && saving < SMALL_FACTOR * pool) {
		fmt_bytes(b1, sizeof(b1), (double)size);
		s->verdict = AP_VERDICT_TOO_SMALL;
		s->reasons = xasprintf("Objects of %s cost %.0fns to malloc and free here, against %.0fns for a pool's "
				       "get and put: keep malloc.", b1, saving, pool);
	} else if (s->share < MIN_GAIN_SHARE) {
		fmt_bytes(b1, sizeof(b1), s->alloc_space);
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		s->reasons = xasprintf("The site allocates %s, %.2g%% of the program's bytes: too little to be worth "
				       "the risks of pooling (stale data, use after return).", b1, 100 * s->share);
	} else if (r->hit_rate < GOOD_HIT_RATE && s->mean_gap_ns >= 2 * a->mean_cycle_ns) {
		ap_advise_format_duration(d1, sizeof(d1), s->mean_gap_ns);
		ap_advise_format_duration(d2, sizeof(d2), a->mean_cycle_ns);
		s->verdict = AP_VERDICT_TOO_RARE;
		s->reasons = xasprintf("Requests come every %s but a cycle runs every %s, so the pool is empty at "
				       "most requests (hit rate %.0f%%).", d1, d2, hr);
	} else {
		uint64_t cl[4];
		size_t ncl = size_classes(f, cl, 4);
		bool bloated = s->capped && s->rc.peak_held_bytes * CAP_GAIN <= r->peak_held_bytes &&
			       s->rc.hit_rate >= GOOD_HIT_RATE;
		if (ncl >= 2 && r->small_hits >= 0.1 * (r->gets - r->misses)) {
			s->verdict = AP_VERDICT_SIZE_CLASSES;
			memcpy(s->classes, cl, ncl * sizeof(*cl));
			s->nclasses = ncl;
			fmt_bytes(b1, sizeof(b1), (double)cl[0]);
			fmt_bytes(b2, sizeof(b2), (double)cl[ncl - 1]);
			s->reasons = xasprintf("Requests cluster at %zu sizes (%s ... %s), each common: one pool hands "
					       "small objects to big requests (%.0f%% of hits too small); use a pool per class.",
					       ncl, b1, b2, 100 * r->small_hits / (r->gets - r->misses));
		} else if (bloated) {
			char b4[32];
			fmt_bytes(b1, sizeof(b1), r->peak_held_bytes);
			fmt_bytes(b2, sizeof(b2), s->rc.peak_held_bytes);
			fmt_bytes(b3, sizeof(b3), (double)s->cap);
			fmt_bytes(b4, sizeof(b4), s->max_size);
			s->verdict = AP_VERDICT_POOL_CAP;
			s->reasons = xasprintf("A few requests of up to %s make the pool hold %s at peak; dropping "
					       "objects above %s on Put holds %s and still hits %.0f%%.",
					       b4, b1, b3, b2, s->rc.hit_rate * 100);
		} else if (r->hit_rate >= GOOD_HIT_RATE && r->time_saved_ns > 0) {
			fmt_bytes(b1, sizeof(b1), r->bytes_avoided);
			fmt_bytes(b2, sizeof(b2), r->peak_held_bytes);
			ap_advise_format_duration(d1, sizeof(d1), r->time_saved_ns);
			s->verdict = AP_VERDICT_POOL;
			char re[64] = "";
			if (r->reallocs_avoided >= 0.5)
				snprintf(re, sizeof(re), " and %.0f realloc%s", r->reallocs_avoided,
					 plural(r->reallocs_avoided));
			s->reasons = xasprintf("%.0f%% of requests would reuse a pooled object, avoiding %.0f "
					       "allocation%s%s (%s, about %s); the pool would hold %s at peak.",
					       hr, r->allocs_avoided, plural(r->allocs_avoided), re, b1, d1, b2);
		} else {
			ap_advise_format_duration(d1, sizeof(d1), s->mean_life_ns);
			ap_advise_format_duration(d2, sizeof(d2), s->mean_gap_ns);
			s->verdict = AP_VERDICT_LITTLE_GAIN;
			s->reasons = xasprintf("Only %.0f%% of requests would find a pooled object (objects live %s, "
					       "requests come every %s): the pool would mostly add work.", hr, d1, d2);
		}
	}

	struct ap_buf t = AP_BUF_INIT;
	ap_buf_addstr(&t, ap_verdict_name(s->verdict));
	if (s->verdict == AP_VERDICT_POOL_CAP) {
		fmt_bytes(b1, sizeof(b1), (double)s->cap);
		ap_buf_addf(&t, " %s", b1);
	} else if (s->verdict == AP_VERDICT_SIZE_CLASSES) {
		for (size_t i = 0; i < s->nclasses; i++) {
			fmt_bytes(b1, sizeof(b1), (double)s->classes[i]);
			ap_buf_addf(&t, "%s%s", i ? ", " : " ", b1);
		}
	}
	s->verdict_text = ap_buf_detach(&t, NULL);
}

/* Benefit: time saved; ties (and sites that save nothing) by bytes. */
static int site_cmp(const void *x, const void *y)
{
	const struct ap_advise_site *a = x, *b = y;
	double ta = a->verdict <= AP_VERDICT_SIZE_CLASSES ? a->r.time_saved_ns : -1;
	double tb = b->verdict <= AP_VERDICT_SIZE_CLASSES ? b->r.time_saved_ns : -1;
	if (ta != tb)
		return ta > tb ? -1 : 1;
	if (a->alloc_space != b->alloc_space)
		return a->alloc_space > b->alloc_space ? -1 : 1;
	return strcmp(a->name, b->name);
}

void advise_rank(struct ap_advice *a)
{
	qsort(a->sites, a->nsites, sizeof(*a->sites), site_cmp);
}
