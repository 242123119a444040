/* The timeline model (timeline.h): a consumer of the replay that keeps,
 * per stretch of time, the highest in-use bytes and their split by site. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ap_hash.h"
#include "ap_replay.h"
#include "timeline.h"

/* Event time ts on the x axis. */
static double x_of(const struct ap_timeline *T, uint64_t ts)
{
	return T->by_bytes ? T->clock.pos : ts > T->start ? (double)(ts - T->start) / 1e9 : 0;
}

static size_t bucket_of(const struct ap_timeline *T, uint64_t ts)
{
	double d = x_of(T, ts);
	size_t b = T->xspan > 0 ? (size_t)(d / T->xspan * (double)T->nbuckets) : 0;
	return b < T->nbuckets ? b : T->nbuckets - 1;
}

static void tl_note(struct ap_timeline *T, const struct ap_event *e)
{
	size_t b = bucket_of(T, e->ts);
	memcpy(T->last + b * (T->nsites + 1), T->live_site, (T->nsites + 1) * sizeof(double));
	if (!T->seen[b] || T->live > T->max[b]) {
		T->seen[b] = true;
		T->max[b] = T->live;
		memcpy(T->at_max + b * (T->nsites + 1), T->live_site, (T->nsites + 1) * sizeof(double));
	}
	T->bucket = b;
	if (T->live > T->peak) {
		T->peak = T->live;
		T->peak_bucket = b;
		T->peak_x = x_of(T, e->ts);
		T->peak_sd = T->live_var > 0 ? sqrt(T->live_var) : 0;
	}
}

static void tl_add(struct ap_timeline *T, const struct ap_replay_block *b, double sign)
{
	double sp = sign * b->w * (double)b->size;
	T->live += sp;
	T->live_var += sign * ap_trace_block_var(b->w, fabs(sp));
	size_t s = b->stack < T->t->nstacks ? T->slot_of_stack[b->stack] : T->nsites;
	T->live_site[s] += sp;
}

/* The hook's view of an event, in the bucket tl_note put it in: an
 * allocation the trace sampled counts at its own stack (as the views'
 * alloc_* count it), a block's stack holds it while it lives. */
static void hook_alloc(struct ap_timeline *T, const struct ap_event *e,
		       const struct ap_replay_block *b)
{
	if (T->hook && (e->flags & AP_EVF_SAMPLED) && e->stack < T->t->nstacks)
		T->hook->alloc(T->hook->ctx, T->bucket, e->stack, b->w, b->w * (double)b->size);
}

static void hook_live(struct ap_timeline *T, const struct ap_replay_block *b, double sign)
{
	if (T->hook && b->stack && b->stack < T->t->nstacks)
		T->hook->live(T->hook->ctx, T->bucket, b->stack, sign * b->w,
			      sign * b->w * (double)b->size);
}

/* massif's clock (timeline.h): valgrind's allocator rounds a request up
 * to 16 bytes (VG_MIN_MALLOC_SZB on amd64, its --alignment), massif adds
 * --heap-admin's 8 to each block, and counts a realloc's change of both
 * (valgrind's realloc_block: in place while the request fits the block). */
#define MASSIF_ALIGN 16u
#define MASSIF_ADMIN 8u

static uint64_t vg_usable(uint64_t size)
{
	return (size + MASSIF_ALIGN - 1) & ~(uint64_t)(MASSIF_ALIGN - 1);
}

static size_t kept_slot(const struct ap_massif_clock *k, uint64_t addr)
{
	size_t i = (size_t)(addr * 0x9e3779b97f4a7c15ull >> 20) & (k->cap - 1);
	while (k->kept[i].usable && k->kept[i].addr != addr)
		i = (i + 1) & (k->cap - 1);
	return i;
}

/* The block's size in valgrind's heap, forgotten (it ends). */
static uint64_t kept_take(struct ap_massif_clock *k, const struct ap_replay_block *b)
{
	if (!k->nkept)
		return vg_usable(b->size);
	size_t i = kept_slot(k, b->addr);
	if (!k->kept[i].usable)
		return vg_usable(b->size);
	uint64_t u = k->kept[i].usable;
	/* backward-shift deletion: the entries after it move up */
	k->kept[i].usable = 0;
	k->nkept--;
	for (size_t j = (i + 1) & (k->cap - 1); k->kept[j].usable; j = (j + 1) & (k->cap - 1)) {
		struct ap_massif_kept e = k->kept[j];
		k->kept[j].usable = 0;
		k->kept[kept_slot(k, e.addr)] = e;
	}
	return u;
}

static void kept_put(struct ap_massif_clock *k, uint64_t addr, uint64_t usable)
{
	if (2 * (k->nkept + 1) > k->cap) {
		struct ap_massif_clock g = {.cap = k->cap ? 2 * k->cap : 64};
		g.kept = ap_xcalloc(g.cap, sizeof(*g.kept));
		for (size_t i = 0; i < k->cap; i++)
			if (k->kept[i].usable)
				g.kept[kept_slot(&g, k->kept[i].addr)] = k->kept[i];
		free(k->kept);
		k->kept = g.kept;
		k->cap = g.cap;
	}
	size_t i = kept_slot(k, addr);
	k->nkept += !k->kept[i].usable;
	k->kept[i] = (struct ap_massif_kept){addr, usable};
}

/* An allocation (old NULL) or a free (freed): the block and its admin. */
static void massif_block(struct ap_massif_clock *k, const struct ap_replay_block *b, bool freed)
{
	uint64_t u = freed ? kept_take(k, b) : vg_usable(b->size);
	k->pos += b->w * (double)(u + MASSIF_ADMIN);
}

static void massif_grow(struct ap_massif_clock *k, const struct ap_replay_block *old,
			const struct ap_replay_block *b)
{
	uint64_t was = kept_take(k, old);
	if (b->w == old->w && b->size <= was) {
		/* in place: the block keeps its size, the clock stays */
		if (was != vg_usable(b->size) && b->w > 0)
			kept_put(k, b->addr, was);
		return;
	}
	double d = b->w * (double)vg_usable(b->size) - old->w * (double)was;
	k->pos += d < 0 ? -d : d;
}

static void massif_release(struct ap_massif_clock *k)
{
	free(k->kept);
	memset(k, 0, sizeof(*k));
}

static void tl_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct ap_timeline *T = ctx;
	(void)i;
	if (T->by_bytes)
		massif_block(&T->clock, b, false);
	tl_add(ctx, b, 1);
	tl_note(ctx, e);
	hook_alloc(T, e, b);
	hook_live(T, b, 1);
}

static void tl_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct ap_timeline *T = ctx;
	(void)i;
	if (T->by_bytes)
		massif_block(&T->clock, b, true);
	tl_add(ctx, b, -1);
	tl_note(ctx, e);
	hook_live(T, b, -1);
}

static void tl_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		    const struct ap_replay_block *b)
{
	struct ap_timeline *T = ctx;
	(void)i;
	if (T->by_bytes)
		massif_grow(&T->clock, old, b);
	tl_add(ctx, old, -1);
	tl_add(ctx, b, 1);
	tl_note(ctx, e);
	hook_live(T, old, -1);
	hook_alloc(T, e, b);
	hook_live(T, b, 1);
}

/* Its image is gone (exec), or its process (exited): no longer in use;
 * the next event's bucket shows it. */
static void tl_exec_dropped(void *ctx, const struct ap_replay_block *b)
{
	tl_add(ctx, b, -1);
	hook_live(ctx, b, -1);
}

/* The first pass of --time-unit=B: the length of massif's axis. */
static void xs_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	(void)i;
	(void)e;
	massif_block(ctx, b, false);
}

static void xs_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	(void)i;
	(void)e;
	massif_block(ctx, b, true);
}

static void xs_grow(void *ctx, size_t i, const struct ap_event *e,
		    const struct ap_replay_block *old, const struct ap_replay_block *b)
{
	(void)i;
	(void)e;
	massif_grow(ctx, old, b);
}

static const struct ap_replay_ops xspan_ops = {
	.alloc = xs_alloc,
	.grow = xs_grow,
	.free = xs_free,
};

static const struct ap_replay_ops tl_ops = {
	.alloc = tl_alloc,
	.grow = tl_grow,
	.free = tl_free,
	.exec_dropped = tl_exec_dropped,
	.exited = tl_exec_dropped,
};

/* Buckets without an event hold what the one before ended with. */
static void tl_fill(struct ap_timeline *T)
{
	size_t w = T->nsites + 1;
	for (size_t b = 1; b < T->nbuckets; b++)
		if (!T->seen[b]) {
			double sum = 0;
			for (size_t s = 0; s < w; s++)
				sum += T->last[(b - 1) * w + s];
			T->max[b] = sum;
			memcpy(T->at_max + b * w, T->last + (b - 1) * w, w * sizeof(double));
			memcpy(T->last + b * w, T->last + (b - 1) * w, w * sizeof(double));
		}
}

double ap_timeline_bucket_x(const struct ap_timeline *T, size_t b)
{
	return T->xspan * (double)(b + 1) / (double)T->nbuckets;
}

void ap_timeline_format_x(char *out, size_t len, const struct ap_timeline *T, double x)
{
	if (T->by_bytes)
		ap_format_bytes(out, len, x);
	else
		snprintf(out, len, "%.3gs", x);
}

struct site_rank {
	uint32_t site;
	double at_peak;
};

static int rank_cmp(const void *a, const void *b)
{
	const struct site_rank *x = a, *y = b;
	if (x->at_peak != y->at_peak)
		return x->at_peak > y->at_peak ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

void ap_timeline_sites_init(struct ap_timeline_sites *s, const struct ap_view *v, size_t nsites)
{
	const struct ap_trace *t = v->trace;
	struct ap_site_map *m = &s->m;
	ap_advise_sites(t, v->sym, false, m);
	/* The sites by name: a chart, its legend and a CSV column need one
	 * name per series. The advisor names two instances of a template at
	 * one line apart (ap_advise_sites); sites it cannot name apart are
	 * one series here, as top makes them one node. */
	struct ap_intern names = {0};
	uint32_t *group = ap_xmalloc((m->nsites ? m->nsites : 1) * sizeof(*group));
	for (size_t k = 0; k < m->nsites; k++)
		group[k] = ap_intern_add(&names, m->name[k], strlen(m->name[k]), NULL);
	size_t ngroups = names.n;
	/* The series shown: the largest at the peak. */
	struct site_rank *rank = ap_xcalloc(ngroups ? ngroups : 1, sizeof(*rank));
	uint32_t *first = ap_xmalloc((ngroups ? ngroups : 1) * sizeof(*first));
	for (size_t g = 0; g < ngroups; g++)
		rank[g].site = (uint32_t)g;
	for (size_t k = m->nsites; k-- > 0;)
		first[group[k]] = (uint32_t)k;
	for (size_t st = 0; st < t->nstacks; st++)
		if (m->site_of_stack[st] != UINT32_MAX)
			rank[group[m->site_of_stack[st]]].at_peak += v->values[st].v[AP_SI_PEAK_SPACE];
	qsort(rank, ngroups, sizeof(*rank), rank_cmp);
	size_t shown = 0;
	while (shown < nsites && shown < ngroups && rank[shown].at_peak > 0)
		shown++;
	uint32_t *slot_of_group = ap_xmalloc((ngroups ? ngroups : 1) * sizeof(uint32_t));
	for (size_t g = 0; g < ngroups; g++)
		slot_of_group[g] = (uint32_t)shown;
	s->names = ap_xcalloc(shown ? shown : 1, sizeof(char *));
	for (size_t k = 0; k < shown; k++) {
		slot_of_group[rank[k].site] = (uint32_t)k;
		s->names[k] = m->name[first[rank[k].site]];
	}
	s->slot_of_stack = ap_xmalloc((t->nstacks ? t->nstacks : 1) * sizeof(uint32_t));
	for (size_t st = 0; st < t->nstacks; st++)
		s->slot_of_stack[st] = m->site_of_stack[st] == UINT32_MAX
					   ? (uint32_t)shown
					   : slot_of_group[group[m->site_of_stack[st]]];
	s->shown = shown;
	free(slot_of_group);
	free(first);
	free(rank);
	free(group);
	ap_intern_release(&names);
}

void ap_timeline_sites_release(struct ap_timeline_sites *s)
{
	if (!s)
		return;
	free(s->names);
	free(s->slot_of_stack);
	ap_site_map_release(&s->m);
	memset(s, 0, sizeof(*s));
}

int ap_timeline_init(struct ap_timeline *T, const struct ap_trace *t,
		     const struct ap_timeline_sites *s, size_t nbuckets, bool by_bytes,
		     struct ap_error *err)
{
	return ap_timeline_init_hooked(T, t, s, nbuckets, by_bytes, NULL, err);
}

int ap_timeline_init_hooked(struct ap_timeline *T, const struct ap_trace *t,
			    const struct ap_timeline_sites *s, size_t nbuckets, bool by_bytes,
			    const struct ap_timeline_hook *hook, struct ap_error *err)
{
	uint64_t end = ap_trace_end_ns(t);
	size_t w = s->shown + 1;
	*T = (struct ap_timeline){ .t = t, .slot_of_stack = s->slot_of_stack, .names = s->names,
				   .nsites = s->shown, .nbuckets = nbuckets ? nbuckets : 1,
				   .start = t->start_ns,
				   .span = end > t->start_ns ? end - t->start_ns : 1,
				   .by_bytes = by_bytes, .hook = hook };
	T->xspan = (double)T->span / 1e9;
	if (by_bytes) {
		/* what the replay will count, in a replay of its own: every
		 * sampled block allocated and freed at its weight */
		struct ap_massif_clock k = {0};
		struct ap_replay_consumer xc = { &xspan_ops, &k };
		int rc = ap_replay(t, &xc, 1, NULL, err);
		T->xspan = k.pos;
		massif_release(&k);
		if (rc < 0)
			return -1;
	}
	T->live_site = ap_xcalloc(w, sizeof(double));
	T->max = ap_xcalloc(T->nbuckets, sizeof(double));
	T->at_max = ap_xcalloc(T->nbuckets * w, sizeof(double));
	T->last = ap_xcalloc(T->nbuckets * w, sizeof(double));
	T->seen = ap_xcalloc(T->nbuckets, sizeof(bool));
	struct ap_replay_consumer c = { &tl_ops, T };
	if (ap_replay(t, &c, 1, NULL, err) < 0)
		return -1;
	tl_fill(T);
	return 0;
}

void ap_timeline_release(struct ap_timeline *T)
{
	if (!T)
		return;
	free(T->live_site);
	free(T->max);
	free(T->at_max);
	free(T->last);
	free(T->seen);
	massif_release(&T->clock);
	memset(T, 0, sizeof(*T));
}
