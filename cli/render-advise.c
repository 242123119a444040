/* One advise site as lines (render.h): the text of `advise` and of the
 * TUI's site page. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#include "render.h"

__attribute__((format(printf, 4, 5))) static void linef(ap_line_fn line, void *ctx,
							 enum ap_line_kind kind, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	line(ctx, kind, buf);
}

/* "s" unless n is 1 (as printed with %.0f). */
static const char *plural(double n)
{
	return n >= 0.5 && n < 1.5 ? "" : "s";
}

int ap_render_verdict_good(enum ap_verdict v)
{
	return v == AP_VERDICT_POOL || v == AP_VERDICT_POOL_CAP || v == AP_VERDICT_SIZE_CLASSES;
}

void ap_render_advise_site(const struct ap_advice *a, size_t i, ap_line_fn line, void *ctx)
{
	const struct ap_advise_site *s = &a->sites[i];
	const struct ap_replay_result *r = &s->r;
	char b1[32], b2[32], b3[32], d[32], smp[64] = "";
	linef(line, ctx, AP_LINE_TITLE, "%zu. %s", i + 1, s->name);
	linef(line, ctx, ap_render_verdict_good(s->verdict) ? AP_LINE_GOOD : AP_LINE_BAD,
	      "   verdict: %s", s->verdict_text);
	line(ctx, AP_LINE_WRAP, s->reasons);
	if (a->sampled)
		snprintf(smp, sizeof(smp), ", %llu sample%s, +-%.0f%%", (unsigned long long)s->samples,
			 plural((double)s->samples), 100 * s->rel_error);
	ap_format_bytes(b1, sizeof(b1), s->alloc_space);
	if (s->verdict == AP_VERDICT_ELSEWHERE || r->gets <= 0) {
		linef(line, ctx, AP_LINE_TEXT, "   allocated %s (%.1f%% of all) in %.0f allocation%s%s", b1,
		      100 * s->share, s->alloc_objects, plural(s->alloc_objects), smp);
		return;
	}
	char life[96] = "";
	if (s->life_share > 1.05 * s->share) {
		ap_format_bytes(b2, sizeof(b2), s->life_share * a->total_alloc_space);
		snprintf(life, sizeof(life), "; with their reallocs %s (%.1f%%)", b2, 100 * s->life_share);
	}
	linef(line, ctx, AP_LINE_TEXT, "   allocated %s (%.1f%% of all), %.0f object%s%s%s", b1,
	      100 * s->share, s->alloc_objects, plural(s->alloc_objects), life, smp);
	char caps[160] = "";
	if (s->max_cap > s->max_size || s->reallocs_per_object >= 0.05)
		snprintf(caps, sizeof(caps), "; grown to p50 %.0f p90 %.0f max %.0f (%.2g realloc%s per object)",
			 s->p50_cap, s->p90_cap, s->max_cap, s->reallocs_per_object,
			 plural(s->reallocs_per_object));
	linef(line, ctx, AP_LINE_TEXT, "   sizes p50 %.0f p90 %.0f max %.0f%s", s->p50_size, s->p90_size,
	      s->max_size, caps);
	char spacing[96] = "";
	if (r->gaps > 0) {
		ap_advise_format_duration(d, sizeof(d), s->mean_gap_ns);
		snprintf(spacing, sizeof(spacing), "; requests every %s, %.3g cycles apart", d,
			 r->gap_cycles / r->gaps);
	}
	linef(line, ctx, AP_LINE_TEXT, "   gets %.0f: hits %.0f, misses %.0f, hit rate %.1f%%%s", r->gets,
	      r->gets - r->misses, r->misses, 100 * r->hit_rate, spacing);
	linef(line, ctx, AP_LINE_TEXT,
	      "   hits from: private %.0f, shared %.0f, stolen %.0f, victim %.0f; %.0f too small",
	      r->hits[AP_POOL_PRIVATE], r->hits[AP_POOL_SHARED], r->hits[AP_POOL_STOLEN],
	      r->hits[AP_POOL_VICTIM], r->small_hits);
	char av[256];
	int n = snprintf(av, sizeof(av), "   avoided: %.0f allocation%s", r->allocs_avoided,
			 plural(r->allocs_avoided));
	if (r->reallocs > 0)
		n += snprintf(av + n, sizeof(av) - (size_t)n, ", %.0f of %.0f realloc%s", r->reallocs_avoided,
			      r->reallocs, plural(r->reallocs));
	ap_format_bytes(b1, sizeof(b1), r->bytes_avoided);
	if (r->bytes_avoided >= 0.5)
		n += snprintf(av + n, sizeof(av) - (size_t)n, ", %s", b1);
	/* The cost model's balance: negative when the pool's own get and put
	 * cost more than the allocations it avoids. */
	ap_advise_format_duration(d, sizeof(d), fabs(r->time_saved_ns));
	if (r->time_saved_ns >= 0)
		snprintf(av + n, sizeof(av) - (size_t)n, "; time saved ~%s", d);
	else
		snprintf(av + n, sizeof(av) - (size_t)n, "; pooling would cost ~%s more", d);
	line(ctx, AP_LINE_TEXT, av);
	ap_format_bytes(b2, sizeof(b2), r->peak_held_bytes);
	ap_format_bytes(b3, sizeof(b3), r->mean_held_bytes);
	linef(line, ctx, AP_LINE_TEXT,
	      "   held: peak %s, mean %s; lost to cycles %.0f, to P changes %.0f; escaped %.0f", b2, b3,
	      r->lost_cycle, r->lost_pchange, r->escaped);
	if (s->capped) {
		ap_format_bytes(b1, sizeof(b1), (double)s->cap);
		ap_format_bytes(b2, sizeof(b2), s->rc.peak_held_bytes);
		ap_format_bytes(b3, sizeof(b3), s->rc.mean_held_bytes);
		linef(line, ctx, AP_LINE_TEXT,
		      "   with cap %s: hit rate %.1f%%, held peak %s, mean %s; %.0f dropped on Put", b1,
		      100 * s->rc.hit_rate, b2, b3, s->rc.dropped_cap);
	}
}
