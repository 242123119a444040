/* ap_trace_totals: replays a trace's events in order, matching frees to the
 * live blocks they release, and sums the weighted totals `stats` prints. */
#include "ap_trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A live block. Blocks at one address form a list, most recent first: a
 * FREE releases the most recent one. */
struct live {
	double objects, space; /* what the block's ALLOC added */
	uint32_t next;	       /* next older block at the address, or NONE */
};
#define NONE UINT32_MAX

/* Open addressing, linear probing, backward-shift deletion. */
struct slot {
	uint64_t addr;
	uint32_t head; /* NONE = empty slot */
};

struct live_map {
	struct slot *slots;
	size_t size, used;
	struct live *blocks;
	size_t nblocks, blocks_alloc;
	uint32_t free_list;
};

static size_t addr_hash(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdull;
	a ^= a >> 33;
	return (size_t)a;
}

static void map_resize(struct live_map *m, size_t size)
{
	struct slot *old = m->slots;
	size_t oldsize = m->size;
	m->slots = ap_xmalloc(size * sizeof(*m->slots));
	for (size_t i = 0; i < size; i++)
		m->slots[i].head = NONE;
	m->size = size;
	for (size_t i = 0; i < oldsize; i++) {
		if (old[i].head == NONE)
			continue;
		size_t j = addr_hash(old[i].addr) & (size - 1);
		while (m->slots[j].head != NONE)
			j = (j + 1) & (size - 1);
		m->slots[j] = old[i];
	}
	free(old);
}

static struct slot *map_find(struct live_map *m, uint64_t addr)
{
	size_t mask = m->size - 1;
	for (size_t i = addr_hash(addr) & mask; m->slots[i].head != NONE; i = (i + 1) & mask)
		if (m->slots[i].addr == addr)
			return &m->slots[i];
	return NULL;
}

static void map_delete(struct live_map *m, struct slot *s)
{
	size_t mask = m->size - 1;
	size_t i = (size_t)(s - m->slots);
	m->slots[i].head = NONE;
	for (size_t j = (i + 1) & mask; m->slots[j].head != NONE; j = (j + 1) & mask) {
		size_t want = addr_hash(m->slots[j].addr) & mask;
		/* can slot j move back to the hole at i? (its home is not in (i, j]) */
		if (((j - want) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			m->slots[j].head = NONE;
			i = j;
		}
	}
	m->used--;
}

static void map_push(struct live_map *m, uint64_t addr, double objects, double space)
{
	uint32_t b;
	if (m->free_list != NONE) {
		b = m->free_list;
		m->free_list = m->blocks[b].next;
	} else {
		AP_ALLOC_GROW(m->blocks, m->nblocks + 1, m->blocks_alloc);
		b = (uint32_t)m->nblocks++;
	}
	m->blocks[b].objects = objects;
	m->blocks[b].space = space;
	struct slot *s = map_find(m, addr);
	if (s) {
		m->blocks[b].next = s->head;
		s->head = b;
		return;
	}
	if ((m->used + 1) * 2 > m->size)
		map_resize(m, m->size * 2);
	size_t mask = m->size - 1;
	size_t i = addr_hash(addr) & mask;
	while (m->slots[i].head != NONE)
		i = (i + 1) & mask;
	m->blocks[b].next = NONE;
	m->slots[i].addr = addr;
	m->slots[i].head = b;
	m->used++;
}

/* Releases the most recent live block at addr into *out; false if none. */
static bool map_pop(struct live_map *m, uint64_t addr, struct live *out)
{
	struct slot *s = map_find(m, addr);
	if (!s)
		return false;
	uint32_t b = s->head;
	*out = m->blocks[b];
	if (m->blocks[b].next == NONE)
		map_delete(m, s);
	else
		s->head = m->blocks[b].next;
	m->blocks[b].next = m->free_list;
	m->free_list = b;
	return true;
}

/* What a live block of weight w and weighted bytes `space` (w * size)
 * adds to the variance of the live-bytes estimate: w(w-1)size^2. */
static double block_var(double w, double space)
{
	return w > 1 ? (w - 1) / w * space * space : 0;
}

void ap_trace_totals(const struct ap_trace *t, struct ap_trace_totals *out)
{
	memset(out, 0, sizeof(*out));
	struct live_map m = {.free_list = NONE};
	map_resize(&m, 1024);
	/* live_var: the variance of `live` as an estimate (Horvitz-Thompson:
	 * a block of s bytes sampled with weight w adds w(w-1)s^2), at the
	 * peak: peak_var */
	double live = 0, peak = 0, live_var = 0, peak_var = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		if (e->type == AP_EV_ALLOC) {
			double w = 0, space = 0;
			if (e->flags & AP_EVF_SAMPLED) {
				w = ap_trace_weight(t, e->size);
				space = w * (double)e->size;
				out->alloc_objects += w;
				out->alloc_space += space;
				out->samples++;
				live += space;
				live_var += block_var(w, space);
				if (live > peak) {
					peak = live;
					peak_var = live_var;
				}
			}
			/* unsampled blocks (a realloc continuing a tracked chain)
			 * are tracked so their free matches, but weigh nothing */
			map_push(&m, e->addr, w, space);
		} else {
			struct live b;
			if (!map_pop(&m, e->addr, &b)) {
				out->unmatched_frees++;
				continue;
			}
			out->free_objects += b.objects;
			live -= b.space;
			live_var -= block_var(b.objects, b.space);
		}
	}
	/* What is still live: sum the blocks left rather than trusting the
	 * running difference, which collects rounding error. */
	for (size_t i = 0; i < m.size; i++)
		for (uint32_t b = m.slots[i].head; b != NONE; b = m.blocks[b].next) {
			out->inuse_objects += m.blocks[b].objects;
			out->inuse_space += m.blocks[b].space;
		}
	out->peak_inuse_space = peak;
	out->peak_inuse_space_sd = peak_var > 0 ? sqrt(peak_var) : 0;
	out->events = t->nrecords;
	free(m.slots);
	free(m.blocks);
}
