/* The views as lines (render.h): an advise site, a list function, top's
 * rows; the text of the commands and of the TUI. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#include "render.h"
#include "views.h"

static void emit(ap_line_fn line, void *ctx, enum ap_line_kind kind, const char *text)
{
	struct ap_line l = { .kind = kind, .text = text };
	line(ctx, &l);
}

__attribute__((format(printf, 4, 5))) static void linef(ap_line_fn line, void *ctx,
							 enum ap_line_kind kind, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	emit(line, ctx, kind, buf);
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
	/* Under "pool with cap" the numbers are the capped pool's. */
	bool cap_verdict = ap_advise_site_shape(s) == AP_VERDICT_POOL_CAP && s->capped;
	const struct ap_replay_result *r = cap_verdict ? &s->rc : &s->r;
	char b1[32], b2[32], b3[32], d[32], smp[64] = "";
	linef(line, ctx, AP_LINE_TITLE, "%zu. %s", i + 1, s->name);
	linef(line, ctx, ap_render_verdict_good(s->verdict) ? AP_LINE_GOOD : AP_LINE_BAD,
	      "   verdict: %s", s->verdict_text);
	emit(line, ctx, AP_LINE_WRAP, s->reasons);
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
		snprintf(life, sizeof(life), "; with their %ss %s (%.1f%%)", ap_advise_growth_noun(s), b2,
			 100 * s->life_share);
	}
	/* alloc_objects is top's count at the site, its reallocs and the
	 * growths by copy made there included: the objects are its Gets
	 * (git's 21414 "objects" stood beside "gets 12209" and "0.7 realloc
	 * per object"). */
	if (s->alloc_objects - r->gets >= 0.5)
		linef(line, ctx, AP_LINE_TEXT, "   allocated %s (%.1f%% of all) in %.0f allocations (%.0f "
		      "object%s, the rest %ss of them)%s%s", b1, 100 * s->share, s->alloc_objects,
		      r->gets, plural(r->gets), ap_advise_growth_noun(s), life, smp);
	else
		linef(line, ctx, AP_LINE_TEXT, "   allocated %s (%.1f%% of all), %.0f object%s%s%s", b1,
		      100 * s->share, s->alloc_objects, plural(s->alloc_objects), life, smp);
	char caps[160] = "";
	if (s->max_cap > s->max_size || s->reallocs_per_object >= 0.05)
		snprintf(caps, sizeof(caps), "; grown to p50 %.0f p90 %.0f max %.0f (%.2g %s%s per object%s%s)",
			 s->p50_cap, s->p90_cap, s->max_cap, s->reallocs_per_object,
			 ap_advise_growth_noun(s), plural(s->reallocs_per_object),
			 s->copy_share > 0 ? ", by " : "", s->copy_share > 0 ? ap_advise_growth_how(s) : "");
	linef(line, ctx, AP_LINE_TEXT, "   sizes p50 %.0f p90 %.0f max %.0f%s", s->p50_size, s->p90_size,
	      s->max_size, caps);
	char spacing[96] = "";
	if (r->gaps > 0 && s->mean_gap_ns < 1)	/* (the trace's times come in steps) */
		snprintf(spacing, sizeof(spacing), "; requests all at one time of the trace's");
	else if (r->gaps > 0) {
		ap_advise_format_duration(d, sizeof(d), s->mean_gap_ns);
		snprintf(spacing, sizeof(spacing), "; requests every %s, %.3g cycles apart", d,
			 r->gap_cycles / r->gaps);
	}
	char hre[32] = "";
	if (s->hit_rate_error > 0)
		snprintf(hre, sizeof(hre), " +-%.1f", 100 * s->hit_rate_error);
	linef(line, ctx, AP_LINE_TEXT, "   gets %.0f: hits %.0f, misses %.0f, hit rate %.1f%%%s%s", r->gets,
	      r->gets - r->misses, r->misses, 100 * r->hit_rate, hre, spacing);
	linef(line, ctx, AP_LINE_TEXT,
	      "   hits from: private %.0f, shared %.0f, stolen %.0f, victim %.0f; %.0f too small",
	      r->hits[AP_POOL_PRIVATE], r->hits[AP_POOL_SHARED], r->hits[AP_POOL_STOLEN],
	      r->hits[AP_POOL_VICTIM], r->small_hits);
	char av[256];
	int n = snprintf(av, sizeof(av), "   avoided: %.0f allocation%s", r->allocs_avoided,
			 plural(r->allocs_avoided));
	if (r->reallocs > 0)
		n += snprintf(av + n, sizeof(av) - (size_t)n, ", %.0f of %.0f %s%s", r->reallocs_avoided,
			      r->reallocs, ap_advise_growth_noun(s), plural(r->reallocs));
	ap_format_bytes(b1, sizeof(b1), r->bytes_avoided);
	if (r->bytes_avoided >= 0.5)
		n += snprintf(av + n, sizeof(av) - (size_t)n, ", %s", b1);
	/* The cost model's balance: negative when the pool's own get and put
	 * cost more than the allocations it avoids. A measured site says it
	 * on a line of its own, with the model's estimate beside it. */
	ap_advise_format_duration(d, sizeof(d), fabs(r->time_saved_ns));
	if (s->measured)
		;
	else if (r->time_saved_ns >= 0)
		snprintf(av + n, sizeof(av) - (size_t)n, "; time saved ~%s (cost model%s)", d,
			 a->sampled ? ", estimate" : "");
	else
		snprintf(av + n, sizeof(av) - (size_t)n, "; pooling would cost ~%s more (cost model)", d);
	emit(line, ctx, AP_LINE_TEXT, av);
	if (s->measured) {
		const struct ap_measured *m = &s->m;
		char d1[32], d2[32], d3[32], rss[48] = "";
		ap_advise_format_duration(d1, sizeof(d1), fabs(m->saved_ns));
		ap_advise_format_duration(d2, sizeof(d2), m->saved_ns >= 0 ? m->low_ns : -m->high_ns);
		ap_advise_format_duration(d3, sizeof(d3), m->saved_ns >= 0 ? m->high_ns : -m->low_ns);
		const struct ap_run_cost *base = ap_advise_site_base(a, s);
		double drss = (m->cost.maxrss_kb - base->maxrss_kb) * 1024;
		ap_format_bytes(b1, sizeof(b1), fabs(drss));
		snprintf(rss, sizeof(rss), "; peak RSS %s%s", drss < 0 ? "-" : "+", b1);
		linef(line, ctx, AP_LINE_TEXT,
		      "   measured: %s %s CPU (%s to %s, %.0f%%, %u runs each); faults %.0f against %.0f%s; "
		      "%s %s ~%s", m->saved_ns >= 0 ? "saves" : "costs", d1, d2, d3, 100 * m->conf,
		      m->rounds, m->cost.minflt, base->minflt, rss,
		      s->own_list ? "vpool's model" : "model", r->time_saved_ns >= 0 ? "saves" : "costs", d);
		/* A free list of each thread's own, measured in the same
		 * rounds, where the objects stay in their thread: beside
		 * vpool's figure, never the verdict (ap_advise_site.fl). */
		const struct ap_measured *f = &s->fl;
		if (s->fl_state == AP_FL_MEASURED) {
			char e1[32], e2[32], e3[32];
			ap_advise_format_duration(e1, sizeof(e1), fabs(f->saved_ns));
			ap_advise_format_duration(e2, sizeof(e2), f->saved_ns >= 0 ? f->low_ns : -f->high_ns);
			ap_advise_format_duration(e3, sizeof(e3), f->saved_ns >= 0 ? f->high_ns : -f->low_ns);
			if (s->own_list)
				/* (a Rust site: the verdict is its own free
				 * list's, `m`; vpool's beside it) */
				linef(line, ctx, AP_LINE_TEXT,
				      "   vpool (pool/vpool.h) instead: %s %s CPU (%s to %s, %.0f%%, %u runs "
				      "each); the free list: %s %s", f->saved_ns >= 0 ? "saves" : "costs", e1,
				      e2, e3, 100 * f->conf, f->rounds, m->saved_ns >= 0 ? "saves" : "costs",
				      d1);
			else
				linef(line, ctx, AP_LINE_TEXT,
				      "   a free list kept by each thread: %s %s CPU (%s to %s, %.0f%%, %u runs "
				      "each); vpool: %s %s", f->saved_ns >= 0 ? "saves" : "costs", e1, e2, e3,
				      100 * f->conf, f->rounds, m->saved_ns >= 0 ? "saves" : "costs", d1);
		} else if (s->fl_state == AP_FL_BUDGET) {
			emit(line, ctx, AP_LINE_TEXT,
			     s->own_list ? "   vpool (pool/vpool.h) instead: not measured, --measure-time "
					   "spent (a Rust site's own free list is measured first)"
					 : "   a free list kept by each thread: not measured, "
					   "--measure-time spent (vpool is measured first)");
		} else if (s->fl_state == AP_FL_NOT_MEASURED) {
			emit(line, ctx, AP_LINE_TEXT,
			     s->own_list ? "   vpool (pool/vpool.h) instead: not measured"
					 : "   a free list kept by each thread: not measured");
		}
	}
	/* A site of an object graph measured whole (printed before the
	 * sites, lettered): what the graph's pool saves, beside its own. */
	for (size_t k = 0; k < a->ngraphs; k++) {
		const struct ap_advise_graph *g = &a->graphs[k];
		bool in = g->root == s->site_id;
		for (size_t j = 0; j < g->nmembers && !in; j++)
			in = g->members[j] == s->site_id;
		if (!in || !g->measured)
			continue;
		char e1[32];
		ap_advise_format_duration(e1, sizeof(e1), fabs(g->m.saved_ns));
		const struct ap_advise_site *root = ap_advise_site_by_id(a, g->root);
		if (g->root == s->site_id)
			linef(line, ctx, AP_LINE_TEXT, "   object graph: its objects pooled whole with the blocks "
			      "they own (%zu more %s%s) %s %s", g->nmembers, g->root_via ? "kind" : "site",
			      g->nmembers == 1 ? "" : "s", g->m.saved_ns >= 0 ? "save" : "cost", e1);
		else
			linef(line, ctx, AP_LINE_TEXT, "   object graph: owned by the objects of %s; pooled whole "
			      "with them, they %s %s", root ? root->name : "?",
			      g->m.saved_ns >= 0 ? "save" : "cost", e1);
	}
	ap_format_bytes(b2, sizeof(b2), r->peak_held_bytes);
	ap_format_bytes(b3, sizeof(b3), r->mean_held_bytes);
	char steady[64] = "";
	if (r->steady_peak_held_bytes < r->peak_held_bytes) {
		ap_format_bytes(b1, sizeof(b1), r->steady_peak_held_bytes);
		snprintf(steady, sizeof(steady), " (%s until its last request)", b1);
	}
	if (s->held_known)
		linef(line, ctx, AP_LINE_TEXT,
		      "   held: peak %s%s, mean %s; lost to cycles %.0f, at thread exits %.0f; escaped %.0f",
		      b2, steady, b3, r->lost_cycle, r->lost_exit, r->escaped);
	else
		linef(line, ctx, AP_LINE_TEXT,
		      "   held: not known from samples (--all tells); lost to cycles %.0f, at thread "
		      "exits %.0f; escaped %.0f", r->lost_cycle, r->lost_exit, r->escaped);
	if (s->capped) {
		/* The other replay: the uncapped one under a cap verdict,
		 * else the capped one. */
		const struct ap_replay_result *o = cap_verdict ? &s->r : &s->rc;
		char held[96] = "";
		if (s->held_known) {
			ap_format_bytes(b2, sizeof(b2), o->peak_held_bytes);
			ap_format_bytes(b3, sizeof(b3), o->mean_held_bytes);
			snprintf(held, sizeof(held), "held peak %s, mean %s, ", b2, b3);
		}
		ap_format_bytes(b1, sizeof(b1), (double)s->cap);
		ap_advise_format_duration(d, sizeof(d), fabs(o->time_saved_ns));
		if (cap_verdict)
			linef(line, ctx, AP_LINE_TEXT,
			      "   the above with cap %s: %.0f dropped on Put; without it: hit rate %.1f%%, "
			      "%s%s%s", b1, s->rc.dropped_cap, 100 * o->hit_rate, held,
			      o->time_saved_ns >= 0 ? "time saved ~" : "costing ~", d);
		else
			linef(line, ctx, AP_LINE_TEXT,
			      "   with cap %s: hit rate %.1f%%, %s%s%s; %.0f dropped on Put", b1,
			      100 * o->hit_rate, held, o->time_saved_ns >= 0 ? "time saved ~" : "costing ~",
			      d, o->dropped_cap);
	}
}

void ap_render_print(void *ctx, const struct ap_line *line)
{
	/* one line: a newline or a control in a name (the program's) shows
	 * escaped (ap_util.h, "Text for a terminal"); tabs stay (source) */
	struct ap_buf b = AP_BUF_INIT;
	ap_buf_addstr(&b, line->kind == AP_LINE_WRAP ? "   " : "");
	ap_buf_add_safe(&b, line->text, strlen(line->text), AP_SAFE_TABS);
	if (line->body)
		ap_buf_add_safe(&b, line->body, strlen(line->body), AP_SAFE_TABS);
	ap_buf_addstr(&b, "\n");
	fwrite(b.buf, 1, b.len, ctx ? ctx : stdout);
	ap_buf_release(&b);
}

/* A value of `list`, or pprof's dot for a zero. */
static void list_value(char *out, size_t len, enum ap_sample_index si, double v)
{
	if (v != 0)
		ap_view_format(out, len, si, v);
	else
		snprintf(out, len, ".");
}

void ap_render_list_func(const struct ap_list *l, const struct ap_list_func *f, ap_line_fn line,
			 void *ctx)
{
	enum ap_sample_index si = l->sample_index;
	char a[32], b[32], c[32], fixed[96];
	if (!f->file) {
		/* As pprof -list: one line, and none at all when the
		 * function also has a file (its entry follows: by name,
		 * then file, no file first). */
		size_t i = (size_t)(f - l->funcs);
		if (i + 1 < l->nfuncs && !strcmp(l->funcs[i + 1].name, f->name))
			return;
		linef(line, ctx, AP_LINE_TITLE, "No source information for %s", f->name);
		return;
	}
	/* pprof names the recorded file, cleaned, wherever it was read */
	struct ap_buf file = AP_BUF_INIT;
	ap_report_clean_path(&file, f->file);
	linef(line, ctx, AP_LINE_TITLE, "ROUTINE ======================== %s in %s", f->name,
	      file.buf);
	ap_buf_release(&file);
	/* pprof's totals are the sums over the routine's lines: a stack
	 * through two of its lines (recursion) counts in both */
	double flat = 0, cum = 0;
	for (size_t k = 0; k < f->nlines; k++) {
		flat += f->lines[k].flat;
		cum += f->lines[k].cum;
	}
	ap_view_format(a, sizeof(a), si, flat);
	ap_view_format(b, sizeof(b), si, cum);
	ap_view_percent(c, sizeof(c), cum, l->total);
	linef(line, ctx, AP_LINE_TEXT, "%10s %10s (flat, cum) %s of Total", a, b, c);
	if (!f->path)
		linef(line, ctx, AP_LINE_TEXT,
		      " note: source file not found (see --source-path); showing the lines with "
		      "allocations only");
	for (size_t k = 0; k < f->nlines; k++) {
		const struct ap_list_line *ln = &f->lines[k];
		list_value(a, sizeof(a), si, ln->flat);
		list_value(b, sizeof(b), si, ln->cum);
		snprintf(fixed, sizeof(fixed), "%10s %10s %6d:", a, b, ln->line);
		struct ap_line out = { .kind = AP_LINE_SOURCE, .text = fixed,
				       .body = ln->source ? ln->source : "", .lineno = ln->line,
				       .hot = ln->flat != 0 || ln->cum != 0 };
		line(ctx, &out);
	}
}

void ap_render_top_showing(const struct ap_report *r, int unit, char *out, size_t len)
{
	enum ap_sample_index si = r->sample_index;
	char a[32], b[32], c[32];
	double shown = 0;
	for (size_t i = 0; i < r->nrows; i++)
		shown += r->rows[i].flat;
	ap_view_format_in(a, sizeof(a), si, shown, unit);
	ap_view_percent(b, sizeof(b), shown, r->total);
	ap_view_format_in(c, sizeof(c), si, r->total, unit);
	snprintf(out, len, "Showing nodes accounting for %s, %s of %s total", a, b + strspn(b, " "), c);
}

void ap_render_top_row(const struct ap_report *r, size_t i, double sum, int unit, char *fixed,
		       size_t len, struct ap_buf *name)
{
	enum ap_sample_index si = r->sample_index;
	const struct ap_report_row *row = &r->rows[i];
	char a[32], b[32], c[32], d[32], e[32];
	ap_view_format_in(a, sizeof(a), si, row->flat, unit);
	ap_view_percent(b, sizeof(b), row->flat, r->total);
	ap_view_percent(c, sizeof(c), sum, r->total);
	ap_view_format_in(d, sizeof(d), si, row->cum, unit);
	ap_view_percent(e, sizeof(e), row->cum, r->total);
	snprintf(fixed, len, "%10s %s %s %10s %s  ", a, b, c, d, e);
	ap_buf_reset(name);
	ap_buf_add_safe(name, row->name, strlen(row->name), 0);
	if (row->inline_mark)
		ap_buf_addf(name, " %s", row->inline_mark);
}

void ap_render_top_head(const struct ap_report *r, int unit)
{
	char line[192], a[32];
	ap_render_top_showing(r, unit, line, sizeof(line));
	printf("%s\n", line);
	if (r->total != 0 && r->dropped) {
		ap_view_format_in(a, sizeof(a), r->sample_index, r->dropped_cutoff, unit);
		printf("Dropped %zu node%s (cum <= %s)\n", r->dropped, r->dropped > 1 ? "s" : "", a);
	}
	if (r->total != 0 && r->nrows < r->nodes)
		printf("Showing top %zu nodes out of %zu\n", r->nrows, r->nodes);
}
