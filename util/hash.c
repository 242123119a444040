/* The report side's hash tables (ap_hash.h). */
#include <stdlib.h>
#include <string.h>

#include "ap_hash.h"
#include "ap_util.h"

void ap_u64map_init(struct ap_u64map *m, size_t size_hint)
{
	size_t size = 16;
	while (size < 2 * size_hint)
		size *= 2;
	m->slot = ap_xmalloc(size * sizeof(*m->slot));
	for (size_t i = 0; i < size; i++)
		m->slot[i].val = AP_U64MAP_NONE;
	m->mask = size - 1;
	m->n = 0;
}

void ap_u64map_release(struct ap_u64map *m)
{
	free(m->slot);
	m->slot = NULL;
	m->mask = m->n = 0;
}

void ap_u64map_grow(struct ap_u64map *m)
{
	struct ap_u64map_slot *old = m->slot;
	size_t oldsize = m->mask + 1, size = oldsize * 2;
	m->slot = ap_xmalloc(size * sizeof(*m->slot));
	for (size_t i = 0; i < size; i++)
		m->slot[i].val = AP_U64MAP_NONE;
	m->mask = size - 1;
	for (size_t i = 0; i < oldsize; i++) {
		if (old[i].val == AP_U64MAP_NONE)
			continue;
		size_t j = ap_hash_u64(old[i].key) & m->mask;
		while (m->slot[j].val != AP_U64MAP_NONE)
			j = (j + 1) & m->mask;
		m->slot[j] = old[i];
	}
	free(old);
}

void ap_u64map_delete(struct ap_u64map *m, struct ap_u64map_slot *s)
{
	size_t mask = m->mask, hole = (size_t)(s - m->slot);
	m->slot[hole].val = AP_U64MAP_NONE;
	for (size_t j = (hole + 1) & mask; m->slot[j].val != AP_U64MAP_NONE; j = (j + 1) & mask) {
		size_t home = ap_hash_u64(m->slot[j].key) & mask;
		/* can the entry at j move back to the hole? (its home is not in (hole, j]) */
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->slot[hole] = m->slot[j];
			m->slot[j].val = AP_U64MAP_NONE;
			hole = j;
		}
	}
	m->n--;
}

static void index_grow(struct ap_index *ix)
{
	struct ap_index_slot *old = ix->slot;
	size_t oldsize = ix->slot ? ix->mask + 1 : 0, size = oldsize ? oldsize * 2 : 64;
	ix->slot = ap_xcalloc(size, sizeof(*ix->slot));
	ix->mask = size - 1;
	for (size_t i = 0; i < oldsize; i++) {
		if (!old[i].idx1)
			continue;
		size_t j = old[i].h & ix->mask;
		while (ix->slot[j].idx1)
			j = (j + 1) & ix->mask;
		ix->slot[j] = old[i];
	}
	free(old);
}

/* The slot of `key`, or the empty slot where it goes. */
static size_t index_slot(const struct ap_index *ix, uint64_t h, ap_index_eq_fn eq, const void *ctx,
			 const void *key)
{
	uint32_t h32 = (uint32_t)h;
	size_t i = h32 & ix->mask;
	while (ix->slot[i].idx1 &&
	       (ix->slot[i].h != h32 || !eq(ctx, ix->slot[i].idx1 - 1, key)))
		i = (i + 1) & ix->mask;
	return i;
}

uint32_t ap_index_find(const struct ap_index *ix, uint64_t h, ap_index_eq_fn eq, const void *ctx,
		       const void *key)
{
	if (!ix->slot)
		return UINT32_MAX;
	size_t i = index_slot(ix, h, eq, ctx, key);
	return ix->slot[i].idx1 ? ix->slot[i].idx1 - 1 : UINT32_MAX;
}

uint32_t ap_index_add(struct ap_index *ix, uint64_t h, ap_index_eq_fn eq, const void *ctx,
		      const void *key, uint32_t entry, bool *added)
{
	if (!ix->slot || (ix->n + 1) * 2 > ix->mask + 1)
		index_grow(ix);
	size_t i = index_slot(ix, h, eq, ctx, key);
	if (added)
		*added = !ix->slot[i].idx1;
	if (ix->slot[i].idx1)
		return ix->slot[i].idx1 - 1;
	ix->slot[i] = (struct ap_index_slot){ entry + 1, (uint32_t)h };
	ix->n++;
	return entry;
}

void ap_index_release(struct ap_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
	ix->mask = ix->n = 0;
}

/* A key as the intern table looks it up. */
struct intern_probe {
	const void *p;
	size_t len;
};

static bool intern_is(const void *ctx, uint32_t i, const void *key)
{
	const struct ap_intern *t = ctx;
	const struct intern_probe *k = key;
	return t->len[i] == k->len && !memcmp(t->str[i], k->p, k->len);
}

uint32_t ap_intern_add(struct ap_intern *t, const void *p, size_t len, bool *added)
{
	struct intern_probe k = { p, len };
	bool is_new;
	uint32_t i = ap_index_add(&t->index, ap_hash_bytes(p, len), intern_is, t, &k,
				  (uint32_t)t->n, &is_new);
	if (added)
		*added = is_new;
	if (!is_new)
		return i;
	if (t->n + 1 > t->alloc) {
		t->alloc = t->alloc ? t->alloc * 2 : 64;
		t->str = ap_xrealloc(t->str, t->alloc * sizeof(*t->str));
		t->len = ap_xrealloc(t->len, t->alloc * sizeof(*t->len));
	}
	char *copy = ap_xmalloc(len + 1);
	memcpy(copy, p, len);
	copy[len] = 0;
	t->str[t->n] = copy;
	t->len[t->n] = len;
	return (uint32_t)t->n++;
}

uint32_t ap_intern_find(const struct ap_intern *t, const void *p, size_t len)
{
	struct intern_probe k = { p, len };
	return ap_index_find(&t->index, ap_hash_bytes(p, len), intern_is, t, &k);
}

const char *ap_intern_str(struct ap_intern *t, const char *s)
{
	if (!s)
		return NULL;
	uint32_t i = ap_intern_add(t, s, strlen(s), NULL); /* before t->str: it may move */
	return t->str[i];
}

void ap_intern_release(struct ap_intern *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->len);
	ap_index_release(&t->index);
	memset(t, 0, sizeof(*t));
}
