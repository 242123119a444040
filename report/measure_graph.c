/* Object graphs in a replay script's making (ap_measure.h, struct
 * ap_graph): the sites whose blocks live inside the blocks of another
 * site, born after one of them and freed before it, by the same thread,
 * as a request's context owns its buffers, nodes and strings. A pool of
 * such objects whole (the runner's --graph) keeps what they own with
 * them, where a pool per line pays a Get and a Put for every block and
 * the graph's own shape is lost (bench/twins' ctxgraph: its twin saves
 * three times what the best line's pool does).
 *
 * While the builder replays the trace, each thread keeps its last
 * GD_RECENT sites that were born, each with its latest block: at a
 * block's free, those of other sites born before it and still live may
 * own it (a block of a site seen longer ago, or not its latest, is not
 * seen: a graph of more than GD_RECENT sites is seen in part), and one
 * does when the thread frees it before its next birth: torn down
 * together. A scratch buffer born and freed while a result lives (freed
 * later, after other births) is not the result's: nothing would keep it
 * there (bench/twins' alnbuf, bigscratch).
 * Then a site M whose blocks were owned by blocks of site R GD_SHARE of
 * the time or more is R's, the R with the most births when several are
 * (the innermost: a request's, not its connection's), and R's own owner's
 * in turn: a graph is a root site with every site that is its, directly
 * or not. */
#include <stdlib.h>
#include <string.h>

#include "advise-int.h"
#include "ap_hash.h"
#include "ap_measure.h"

#define GD_RECENT 16
/* Of a member site's blocks, the share its owner site owned. */
#define GD_SHARE 0.9
/* Births of a root and of a member, at least. */
#define GD_MIN_BIRTHS 64

struct gd_recent {
	uint32_t site, slot;
	uint32_t seq;		/* its birth's, + 1 */
};

struct gd_thread {
	struct gd_recent r[GD_RECENT];	/* the latest first */
	unsigned n;
	/* Blocks freed since its last birth and their live owners then:
	 * each a member site and the next of its owner's chain (the chain's
	 * head in the owner's slot, gd.phead); epoch: the last birth's. */
	struct gd_pend *pend;
	uint32_t npend, pend_cap;
	uint32_t epoch;
};

struct gd_pend {
	uint32_t site;
	uint32_t next;		/* + 1; 0: the chain's end */
};

/* Pending owners a thread keeps between two births, at most. */
#define GD_PEND_MAX 4096u


struct graph_det {
	size_t nsites;
	uint64_t *births;	/* by site */
	struct gd_thread *th;
	size_t nthreads;
	/* By slot: its block's birth (+ 1; 0: none), site and thread; as
	 * an owner, its chain of pending members (+ 1) and the epoch it was
	 * made in (the chain is stale in any other). 20 bytes a slot, a live
	 * block: within what AP_MEASURE_LIVE_BLOCK counts beyond the
	 * builder's own 16 for a resolved trace. Births and ops of a script
	 * (AP_MEASURE_MAX_EVENTS at most, a few ops each) fit 32 bits. */
	uint32_t *seq;
	uint32_t *site, *thread;
	uint32_t *phead;
	uint32_t *pepoch;
	size_t nslots;
	uint32_t epochs;	/* births so far: each birth's epoch */
	/* member << 32 | owner (sites) -> how often the member's block
	 * was owned by the owner's */
	struct ap_u64map pairs;
};

struct graph_det *graph_det_new(size_t nthreads, size_t nsites)
{
	struct graph_det *g = ap_xcalloc(1, sizeof(*g));
	g->nsites = nsites;
	g->births = ap_xcalloc(nsites ? nsites : 1, sizeof(*g->births));
	g->th = ap_xcalloc(nthreads ? nthreads : 1, sizeof(*g->th));
	g->nthreads = nthreads;
	ap_u64map_init(&g->pairs, 256);
	return g;
}

void graph_det_free(struct graph_det *g)
{
	if (!g)
		return;
	free(g->births);
	for (size_t k = 0; k < g->nthreads; k++)
		free(g->th[k].pend);
	free(g->th);
	free(g->phead);
	free(g->pepoch);
	free(g->seq);
	free(g->site);
	free(g->thread);
	ap_u64map_release(&g->pairs);
	free(g);
}

static void pair_add(struct graph_det *g, uint32_t member, uint32_t owner)
{
	bool made;
	struct ap_u64map_slot *sl = ap_u64map_slot_of(&g->pairs, (uint64_t)member << 32 | owner, &made);
	if (made)
		sl->val = 0;
	if (sl->val < AP_U64MAP_NONE - 1)
		sl->val++;
}

static void grow_slots(struct graph_det *g, uint32_t slot)
{
	size_t n = g->nslots ? g->nslots : 1024;
	while (n <= slot)
		n *= 2;
	g->seq = ap_xrealloc(g->seq, n * sizeof(*g->seq));
	g->site = ap_xrealloc(g->site, n * sizeof(*g->site));
	g->thread = ap_xrealloc(g->thread, n * sizeof(*g->thread));
	g->phead = ap_xrealloc(g->phead, n * sizeof(*g->phead));
	g->pepoch = ap_xrealloc(g->pepoch, n * sizeof(*g->pepoch));
	memset(g->seq + g->nslots, 0, (n - g->nslots) * sizeof(*g->seq));
	memset(g->pepoch + g->nslots, 0, (n - g->nslots) * sizeof(*g->pepoch));
	g->nslots = n;
}

void graph_det_birth(struct graph_det *g, uint32_t thread, uint32_t slot, uint32_t site, uint64_t seq)
{
	if (slot >= g->nslots)
		grow_slots(g, slot);
	/* (past 32 bits a block is not seen; a script holds far fewer) */
	if (site >= g->nsites || thread >= g->nthreads || seq >= UINT32_MAX - 1 || g->epochs == UINT32_MAX) {
		g->seq[slot] = 0;
		return;
	}
	g->seq[slot] = (uint32_t)seq + 1;
	g->site[slot] = site;
	g->thread[slot] = thread;
	g->births[site]++;
	struct gd_thread *t = &g->th[thread];
	/* a birth ends a teardown: what is pending is owned by no one */
	t->npend = 0;
	t->epoch = ++g->epochs;
	unsigned i = 0;
	while (i < t->n && t->r[i].site != site)
		i++;
	if (i == t->n && t->n < GD_RECENT)
		t->n++;
	if (i == GD_RECENT)
		i--;	/* the oldest goes */
	memmove(&t->r[1], &t->r[0], i * sizeof(t->r[0]));
	t->r[0] = (struct gd_recent){ .site = site, .slot = slot, .seq = (uint32_t)seq + 1 };
}

void graph_det_end(struct graph_det *g, uint32_t thread, uint32_t slot)
{
	if (slot >= g->nslots || !g->seq[slot])
		return;
	uint32_t seq = g->seq[slot];
	uint32_t site = g->site[slot];
	g->seq[slot] = 0;
	if (g->thread[slot] != thread)
		return;
	struct gd_thread *t = &g->th[thread];
	/* the members pending on it, freed since the thread's last birth:
	 * torn down with it, its */
	if (t->epoch && g->pepoch[slot] == t->epoch)
		for (uint32_t k = g->phead[slot]; k; k = t->pend[k - 1].next)
			pair_add(g, t->pend[k - 1].site, site);
	g->pepoch[slot] = 0;
	/* its possible owners: pending until they are freed, or a birth */
	for (unsigned i = 0; i < t->n; i++) {
		const struct gd_recent *r = &t->r[i];
		if (r->site == site || r->seq >= seq || g->seq[r->slot] != r->seq || g->thread[r->slot] != thread)
			continue;
		if (t->npend == GD_PEND_MAX)
			break;
		AP_ALLOC_GROW(t->pend, t->npend + 1, t->pend_cap);
		if (g->pepoch[r->slot] != t->epoch) {
			g->pepoch[r->slot] = t->epoch;
			g->phead[r->slot] = 0;
		}
		t->pend[t->npend] = (struct gd_pend){ .site = site, .next = g->phead[r->slot] };
		g->phead[r->slot] = ++t->npend;
	}
}

static int graph_cmp(const void *x, const void *y)
{
	const struct ap_graph *a = x, *b = y;
	uint64_t na = a->root_births, nb = b->root_births;
	for (uint32_t k = 0; k < a->nmembers; k++)
		na += a->member_births[k];
	for (uint32_t k = 0; k < b->nmembers; k++)
		nb += b->member_births[k];
	if (na != nb)
		return na > nb ? -1 : 1;
	return a->root < b->root ? -1 : a->root > b->root;
}

size_t graph_det_finish(struct graph_det *g, struct ap_graph **out)
{
	*out = NULL;
	uint32_t *owner = ap_xmalloc((g->nsites ? g->nsites : 1) * sizeof(*owner));
	uint32_t *owned = ap_xcalloc(g->nsites ? g->nsites : 1, sizeof(*owned));
	for (size_t s = 0; s < g->nsites; s++)
		owner[s] = UINT32_MAX;
	for (size_t i = 0; i <= g->pairs.mask; i++) {
		const struct ap_u64map_slot *p = &g->pairs.slot[i];
		if (p->val == AP_U64MAP_NONE)
			continue;
		uint32_t m = (uint32_t)(p->key >> 32), r = (uint32_t)p->key;
		if (g->births[m] < GD_MIN_BIRTHS || g->births[r] < GD_MIN_BIRTHS ||
		    (double)p->val < GD_SHARE * (double)g->births[m])
			continue;
		if (owner[m] == UINT32_MAX || g->births[r] > g->births[owner[m]] ||
		    (g->births[r] == g->births[owner[m]] && r < owner[m])) {
			owner[m] = r;
			owned[m] = p->val;
		}
	}
	/* every member site to its root: owners followed up (nesting is
	 * strict, so owners cannot go round; GD_RECENT steps bound it all
	 * the same) */
	struct ap_graph *v = NULL;
	size_t n = 0, alloc = 0;
	for (size_t m = 0; m < g->nsites; m++) {
		if (owner[m] == UINT32_MAX)
			continue;
		uint32_t r = owner[m];
		unsigned steps = 0;
		while (owner[r] != UINT32_MAX && steps++ < GD_RECENT)
			r = owner[r];
		if (owner[r] != UINT32_MAX)
			continue;
		size_t k = 0;
		while (k < n && v[k].root != r)
			k++;
		if (k == n) {
			AP_ALLOC_GROW(v, n + 1, alloc);
			memset(&v[n], 0, sizeof(v[n]));
			v[n].root = r;
			v[n].root_births = g->births[r];
			n++;
		}
		struct ap_graph *gr = &v[k];
		/* the members with the most births, AP_GRAPH_MAX_MEMBERS of them */
		uint32_t at = gr->nmembers;
		if (at == AP_GRAPH_MAX_MEMBERS) {
			uint32_t low = 0;
			for (uint32_t j = 1; j < at; j++)
				if (gr->member_births[j] < gr->member_births[low])
					low = j;
			if (gr->member_births[low] >= owned[m])
				continue;
			at = low;
		} else {
			gr->nmembers++;
		}
		gr->members[at] = (uint32_t)m;
		gr->member_births[at] = owned[m];
	}
	free(owner);
	free(owned);
	if (n)
		qsort(v, n, sizeof(*v), graph_cmp);
	*out = v;
	return n;
}
