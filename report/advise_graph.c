/* Object graphs measured whole (struct ap_advise_graph): their verdicts
 * and texts. A graph's root objects own the blocks of its member sites
 * (report/measure_graph.c); the measured replay pooled the roots with
 * those blocks kept in them (the runner's --graph), as a hand-pooler
 * keeps a request's context with its buffers and nodes. The verdict is
 * the measurement's, by the rule a site's is (AP_MIN_SAVE_SHARE); the
 * sites' own verdicts stay theirs: a pool of one line, beside it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise-int.h"

/* "ctxgraph.c:113" for a member in the root's file, else its name; a
 * member of the root's own line by what the line called for it ("its
 * own line, via alloc::string::ToString::to_string"). */
static void member_words(struct ap_buf *b, const struct ap_advise_site *root,
			 const struct ap_advise_site *s, const char *via)
{
	if (!s) {
		ap_buf_addstr(b, "?");
		return;
	}
	if (s == root && via) {
		ap_buf_addf(b, "its own line, via %s", *via ? via : "?");
		return;
	}
	if (s->file && root->file && !strcmp(s->file, root->file) && s->line > 0) {
		const char *base = strrchr(s->file, '/');
		ap_buf_addf(b, "%s:%d", base ? base + 1 : s->file, s->line);
	} else {
		ap_buf_addstr(b, s->name ? s->name : "?");
	}
}

const struct ap_advise_site *ap_advise_site_by_id(const struct ap_advice *a, uint32_t id)
{
	for (size_t i = 0; i < a->nsites; i++)
		if (a->sites[i].site_id == id)
			return &a->sites[i];
	return NULL;
}

static int graph_cmp(const void *x, const void *y)
{
	const struct ap_advise_graph *a = x, *b = y;
	double sa = a->measured ? a->m.saved_ns : -INFINITY, sb = b->measured ? b->m.saved_ns : -INFINITY;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	return a->root < b->root ? -1 : a->root > b->root;
}

static void judge(const struct ap_advice *a, struct ap_advise_graph *g)
{
	const struct ap_advise_site *root = ap_advise_site_by_id(a, g->root);
	struct ap_buf b = AP_BUF_INIT;
	double cpu = advise_program_cpu_ns(a);
	if (g->root_via)
		/* (blocks of two kinds made at one line: a vector's and its
		 * strings', told apart by what the line called) */
		ap_buf_addf(&b, "Each object of %s (its blocks via %s) owns blocks of %zu more kind%s, born "
			    "after it and freed with it by its thread (per object, on average: ", root->name,
			    *g->root_via ? g->root_via : "?", g->nmembers, g->nmembers == 1 ? "" : "s");
	else
		ap_buf_addf(&b, "Each object of %s owns blocks of %zu more site%s, born after it and freed "
			    "with it by its thread (per object, on average: ", root->name, g->nmembers,
			    g->nmembers == 1 ? "" : "s");
	for (size_t k = 0; k < g->nmembers; k++) {
		ap_buf_addstr(&b, k ? ", " : "");
		ap_buf_addf(&b, "%.3g at ", g->root_births ? (double)g->member_births[k] / (double)g->root_births
							    : 0.0);
		member_words(&b, root, ap_advise_site_by_id(a, g->members[k]), g->member_via[k]);
	}
	ap_buf_addstr(&b, "). ");
	if (!g->measured) {
		/* (the verdict's words say "not measured": cmd-advise.c) */
		g->verdict = AP_VERDICT_NOISE;
		if (a->measure_why[0])
			ap_buf_addf(&b, "Not measured: %s.", a->measure_why);
		else
			ap_buf_addstr(&b, "Not measured: the budget left it out (a longer --measure-time "
				      "measures it).");
		g->reasons = ap_buf_detach(&b, NULL);
		return;
	}
	/* The baseline's faults beyond the recorded run's, as a site's
	 * (advise_judge_measured): taken off where priced and not most of
	 * the saving; most of it, the verdict stays open. */
	const struct ap_run_cost *B = &a->base;
	double prog_faults = ap_advise_prog_faults(a);
	bool replay_faults = advise_replay_faulted(a, B, &g->m, prog_faults);
	struct advise_excess x;
	g->excess_faults = g->excess_faults_ns = 0;
	if (advise_excess_off(a, B, &g->m, prog_faults, replay_faults, &x)) {
		g->excess_faults = x.faults;
		g->excess_faults_ns = x.ns;
		replay_faults = false;
	}
	ap_buf_addf(&b, "Measured (the run's allocations replayed %u times each way, with and without the "
		    "pool): ", g->m.rounds);
	advise_saving_words(&b, a, &g->m, "a pool of these objects whole, each kept with its blocks and reused with them,");
	if (g->excess_faults > 0)
		advise_excess_words(&b, a, B, &x);
	ap_buf_addstr(&b, ". ");
	bool pays = g->m.low_ns > 0 && cpu > 0 && g->m.saved_ns >= AP_MIN_SAVE_SHARE * cpu;
	if (pays && replay_faults) {
		g->verdict = AP_VERDICT_FAULTS;
		advise_replay_faults_words(&b, a, B, &g->m, "pooling them whole", x.faults, x.ns);
	} else if (pays) {
		g->verdict = AP_VERDICT_POOL;
		ap_buf_addf(&b, "Pool %s's objects whole: a pool of them, and at a Get the blocks an object "
			    "kept reused where big enough (a block too small freed and allocated anew), "
			    "the others allocated (a change of the program's code: allocprof try pools "
			    "one site at a time and cannot try it).", root->name);
	} else if (g->m.high_ns < 0) {
		g->verdict = AP_VERDICT_COSTS_MORE;
		ap_buf_addstr(&b, "Keeping them whole costs more than it saves: keep malloc.");
	} else {
		g->verdict = AP_VERDICT_NOISE;
		ap_buf_addf(&b, "Within noise, or under the %.0f%% of the program's CPU time worth the risks "
			    "of pooling.", 100 * AP_MIN_SAVE_SHARE);
	}
	/* beside it, the best pool of one of its lines measured */
	const struct ap_advise_site *best = root->measured ? root : NULL;
	for (size_t k = 0; k < g->nmembers; k++) {
		const struct ap_advise_site *s = ap_advise_site_by_id(a, g->members[k]);
		if (s->measured && (!best || s->m.saved_ns > best->m.saved_ns))
			best = s;
	}
	if (best) {
		char d[32];
		ap_advise_format_duration(d, sizeof(d), fabs(best->m.saved_ns));
		ap_buf_addf(&b, " (The best pool of one of its lines measured, at ");
		member_words(&b, root, best, NULL);
		ap_buf_addf(&b, ", %s %s.)", best->m.saved_ns >= 0 ? "saves" : "costs", d);
	}
	g->reasons = ap_buf_detach(&b, NULL);
}

void advise_judge_graphs(struct ap_advice *a)
{
	for (size_t k = 0; k < a->ngraphs; k++)
		judge(a, &a->graphs[k]);
	if (a->ngraphs > 1)
		qsort(a->graphs, a->ngraphs, sizeof(*a->graphs), graph_cmp);
}
