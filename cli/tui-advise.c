/* The advise views of `allocprof tui`: the sites ranked by the pool
 * advisor, and one site in full, as `allocprof advise` prints it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

static void busy_measuring(void *ctx, const char *cache, const char *why)
{
	(void)cache;
	(void)why;
	tui_busy(ctx, "measuring allocation costs on this machine once");
}

/* The cost table as `advise` finds it (ap_cost_get). */
int tui_load_costs(struct tui *t)
{
	struct ap_error err, save_err;
	if (ap_cost_get(&t->costs, busy_measuring, t, &err, &save_err) < 0) {
		tui_set_status(t, "%s", err.msg);
		return -1;
	}
	if (save_err.msg[0])
		tui_set_status(t, "%s", save_err.msg);
	return 0;
}

int tui_advised(struct tui *t)
{
	if (t->adv)
		return 0;
	const struct ap_trace *run = t->v->trace;
	if (run->nprocs < 2) {
		t->adv = t->v;
		return 0;
	}
	struct ap_error err;
	t->adv_proc = ap_view_advised_process(run);
	if (ap_view_load_process(&t->adv_own, run, t->adv_proc, &t->o.view, &err)) {
		tui_set_status(t, "%s", err.msg);
		return -1;
	}
	t->adv = &t->adv_own;
	return 0;
}

void tui_open_advise(struct tui *t)
{
	if (t->follow && tui_follow_wait(t, TUI_VIEW_ADVISE))
		return;
	if (tui_work_wait(t, TUI_VIEW_ADVISE))
		return;
	if (!t->advice) {
		if (t->failed) {
			tui_set_status(t, "%s", t->error.msg);
			return;
		}
		if (tui_load_costs(t) || tui_advised(t))
			return;
		struct ap_advise_options ao;
		ap_advise_options_init(&ao);
		ao.costs = &t->costs;
		tui_busy(t, "replaying the trace through the pool model");
		struct ap_site_map m;
		ap_advise_sites(t->adv->trace, t->adv->sym, false, &m);
		struct ap_error err;
		t->advice = ap_advise_run(t->adv->trace, &m, &ao, &err);
		if (t->advice)
			ap_view_measure_run(&t->o.measure, t->advice, t->adv->trace, &m, &ao);
		ap_site_map_release(&m);
		if (!t->advice) {
			/* (the costs are there: a replay that failed) */
			tui_replay_failed(t, &err);
			return;
		}
	}
	t->stack[t->depth++] = TUI_VIEW_ADVISE;
	if (t->adv && t->adv != t->v) {
		const struct ap_trace *run = t->v->trace;
		tui_set_status(t, "a run of %zu processes: advised is pid %llu, the one with the "
			       "most allocation calls (a pool does not cross processes; `allocprof "
			       "advise` advises each)",
			       run->nprocs, (unsigned long long)run->procs[t->adv_proc].pid);
	}
}

static int verdict_attr(enum ap_verdict v)
{
	return ap_render_verdict_good(v) ? TUI_GOOD : TUI_BAD;
}

struct site_page_ctx {
	struct tui_page *p;
	int width;
};

static void site_page_line(void *ctx, const struct ap_line *line)
{
	struct site_page_ctx *c = ctx;
	switch (line->kind) {
	case AP_LINE_TITLE:
		tui_page_add(c->p, TUI_BOLD, line->text, NULL);
		break;
	case AP_LINE_GOOD:
		tui_page_add(c->p, TUI_GOOD, line->text, NULL);
		break;
	case AP_LINE_BAD:
		tui_page_add(c->p, TUI_BAD, line->text, NULL);
		break;
	case AP_LINE_WRAP:
		tui_page_wrap(c->p, TUI_NORMAL, "   ", line->text, c->width);
		tui_page_add(c->p, TUI_NORMAL, "", NULL);
		break;
	default:
		tui_page_add(c->p, TUI_NORMAL, line->text, line->body);
		break;
	}
}

/* One site in full, as `advise` prints it, the reasons wrapped. */
static void site_page(const struct tui *t, struct tui_page *p)
{
	struct site_page_ctx c = { p, t->cols - 4 };
	ap_render_advise_site(t->advice, t->advise_pos.cur, site_page_line, &c);
}

static size_t advise_lines(const struct tui *t)
{
	return t->advice->nsites;
}

static size_t site_lines(const struct tui *t)
{
	struct tui_page p = {0};
	site_page(t, &p);
	size_t n = p.n;
	tui_page_release(&p);
	return n;
}

static struct tui_pos *advise_pos(struct tui *t)
{
	return &t->advise_pos;
}

static struct tui_pos *site_pos(struct tui *t)
{
	return &t->site_pos;
}

static bool advise_key(struct tui *t, int key, bool enter)
{
	(void)key;
	if (!enter || !t->advice->nsites)
		return false;
	t->site_pos = (struct tui_pos){0};
	tui_push_view(t, TUI_VIEW_SITE);
	return true;
}

static void draw_advise(struct tui *t, struct tui_screen *s)
{
	const struct ap_advice *a = t->advice;
	size_t page = tui_view_page(t, TUI_VIEW_ADVISE);
	char d[32], b[32];

	tui_screen_row_attr(s, 0, TUI_TITLE);
	if (a->gc_mode == AP_GC_GOGC)
		snprintf(b, sizeof(b), "gogc:%llu", (unsigned long long)a->gogc);
	else
		ap_advise_format_duration(b, sizeof(b), (double)a->interval_ns);
	ap_advise_format_duration(d, sizeof(d), a->mean_cycle_ns);
	char proc[64] = "";
	if (t->adv && t->adv != t->v)
		snprintf(proc, sizeof(proc), " (pid %llu, 1 of %zu processes)",
			 (unsigned long long)t->adv->trace->pid, t->v->trace->nprocs);
	tui_screen_putf(s, 0, 0, TUI_TITLE,
			"advise: %s%s   Cycles: %s%s, %llu in the trace (one every %s); %u Ps",
			tui_basename_of(t->adv ? t->adv->trace->exe : t->v->trace->exe), proc,
			a->gc_mode == AP_GC_GOGC ? "" : "every ", b, (unsigned long long)a->cycles,
			d, a->procs);
	if (a->sampled) {
		ap_format_bytes(b, sizeof(b), (double)a->rate);
		tui_screen_putf(s, 1, 0, TUI_NORMAL,
				"Sampled (1 per %s): estimates from a reconstruction", b);
	} else {
		/* the first object graph measured whole, when one was (its
		 * sites' pages say more; `allocprof advise` lists them all) */
		char gr[160] = "";
		for (size_t k = 0; k < a->ngraphs && !gr[0]; k++) {
			const struct ap_advise_graph *g = &a->graphs[k];
			const struct ap_advise_site *r = ap_advise_site_by_id(a, g->root);
			if (!g->measured || !r)
				continue;
			char e[32];
			ap_advise_format_duration(e, sizeof(e), fabs(g->m.saved_ns));
			snprintf(gr, sizeof(gr), "; %s's objects pooled whole %s %s", r->name,
				 g->m.saved_ns >= 0 ? "save" : "cost", e);
		}
		if (a->measured)
			tui_screen_putf(s, 1, 0, TUI_NORMAL,
					"Every allocation replayed%s; time saved measured at %zu site%s%s", gr,
					a->measured, a->measured == 1 ? "" : "s",
					a->measured < a->nsites ? " (the rest: the model's)" : "");
		else
			tui_screen_putf(s, 1, 0, TUI_NORMAL, "Every allocation replayed%s", gr);
	}
	snprintf(d, sizeof(d), "%zu/%zu", a->nsites ? t->advise_pos.cur + 1 : 0, a->nsites);
	tui_draw_right(s, 1, TUI_NORMAL, d);
	tui_screen_putf(s, 2, 0, TUI_BOLD, "%3s %-22s %8s %8s %10s  %s", "#", "verdict", "saved",
			"hit rate", "allocated", "site");
	if (!a->nsites)
		tui_screen_put(s, 3, 0, TUI_NORMAL, "  (no allocation sites)", 0);
	for (size_t i = t->advise_pos.top; i < a->nsites && i < t->advise_pos.top + page; i++) {
		const struct ap_advise_site *site = &a->sites[i];
		int row = 3 + (int)(i - t->advise_pos.top);
		bool cur = i == t->advise_pos.cur;
		char fixed[128], saved[32], space[32];
		ap_advise_format_duration(saved, sizeof(saved), ap_advise_site_saved_ns(site));
		ap_format_bytes(space, sizeof(space), site->alloc_space);
		if (cur)
			tui_screen_row_attr(s, row, TUI_CURSOR);
		int col = tui_screen_putf(s, row, 0, cur ? TUI_CURSOR : TUI_NORMAL, "%3zu ", i + 1);
		snprintf(fixed, sizeof(fixed), "%-22.22s ", site->verdict_text);
		col = tui_screen_put(s, row, col, cur ? TUI_CURSOR : verdict_attr(site->verdict),
				     fixed, 0);
		snprintf(fixed, sizeof(fixed), "%8s %7.1f%% %10s  ", saved, 100 * site->r.hit_rate,
			 space);
		col = tui_screen_put(s, row, col, cur ? TUI_CURSOR : TUI_NORMAL, fixed, 0);
		tui_screen_put(s, row, col, cur ? TUI_CURSOR : TUI_NORMAL, site->name,
			       t->advise_pos.hscroll);
	}
	if (!tui_advise_pane(t) || !a->nsites)
		return;
	const struct ap_advise_site *site = &a->sites[t->advise_pos.cur];
	int row = t->rows - 1 - tui_advise_pane(t);
	struct tui_page p = {0};
	tui_page_wrap(&p, TUI_NORMAL, "  ", site->reasons, t->cols - 3);
	tui_screen_putf(s, row, 0, verdict_attr(site->verdict), "verdict: %s%s", site->verdict_text,
			p.n > ADVISE_REASONS ? "   (more: Enter)" : "");
	for (size_t i = 0; i < p.n && i < ADVISE_REASONS; i++)
		tui_screen_put(s, row + 1 + (int)i, 0, TUI_NORMAL, p.lines[i].fixed, 0);
	tui_page_release(&p);
}

static void draw_advise_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos,
			     size_t page)
{
	(void)pos;
	(void)page;
	draw_advise(t, s);
}

static void draw_site_view(struct tui *t, struct tui_screen *s, struct tui_pos *pos, size_t page)
{
	struct tui_page p = {0};
	site_page(t, &p);
	tui_screen_row_attr(s, 0, TUI_TITLE);
	tui_screen_putf(s, 0, 0, TUI_TITLE, "advise: site %zu of %zu", t->advise_pos.cur + 1,
			t->advice->nsites);
	tui_draw_page(t, s, &p, pos, page, 1, false);
	tui_page_release(&p);
}

const struct tui_view_ops tui_advise_ops = {
	.lines = advise_lines,
	.pos = advise_pos,
	.cursor = true,
	.draw = draw_advise_view,
	.key = advise_key,
	.keys = "q/Esc back  ? help  Enter the site in full  arrows/PgUp/PgDn move",
};

const struct tui_view_ops tui_site_ops = {
	.lines = site_lines,
	.pos = site_pos,
	.counted = true,
	.draw = draw_site_view,
	.keys = "q/Esc back to the sites  ? help",
};
