/* Stack sharing (stacks.h): the META records the compactor re-encodes,
 * with each stack that shares its outermost frames with an earlier one
 * written as STACK_SHARED. The earlier stack is the first that has the
 * longest such suffix: every suffix of every stack is kept by hash. */
#include "stacks.h"

#include <stdlib.h>
#include <string.h>

#include "ap_hash.h"
#include "ap_trace_encode.h"
#include "bytes.h"

static uint64_t suffix_hash(uint64_t h, uint64_t pc)
{
	h ^= pc;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* An entry of the suffix index holds (h, len): the first stack to have a
 * suffix of that hash and length keeps it (stack_share checks the PCs). */
static bool suffix_is(const void *ctx, uint32_t entry, const void *key)
{
	const struct suffix *e = &((const struct stack_table *)ctx)->sfx[entry];
	const struct suffix *k = key;
	return e->h == k->h && e->len == k->len;
}

/* Stack `id` (the next one) of `depth` PCs: the earlier stack whose
 * outermost frames are its longest suffix (*shared of them, 0: none),
 * and the stack remembered with its suffixes. */
static uint32_t stack_share(struct stack_table *s, uint32_t id, const uint64_t *pcs, uint32_t depth,
			    uint32_t *shared)
{
	AP_ALLOC_GROW(s->off, id + 1, s->ids_alloc);
	s->depth = ap_xrealloc(s->depth, s->ids_alloc * sizeof(*s->depth));
	s->nids = id + 1;
	s->depth[id] = 0;
	*shared = 0;
	if (depth == 0 || depth > AP_MAX_DEPTH_CAP)
		return 0;
	uint64_t h[AP_MAX_DEPTH_CAP + 1];
	h[depth] = 0x2545f4914f6cdd1dull;
	for (uint32_t k = depth; k-- > 0;)
		h[k] = suffix_hash(h[k + 1], pcs[k]);
	uint32_t base = 0;
	for (uint32_t k = 0; k < depth && !base; k++) {
		struct suffix key = {h[k], id, depth - k};
		uint32_t i = ap_index_find(&s->index, h[k] ^ key.len, suffix_is, s, &key);
		if (i == UINT32_MAX)
			continue;
		const struct suffix *e = &s->sfx[i];
		const uint64_t *b = s->pcs + s->off[e->id] + s->depth[e->id] - e->len;
		if (!memcmp(b, pcs + k, e->len * sizeof(*pcs))) {
			base = e->id;
			*shared = e->len;
		}
	}
	AP_ALLOC_GROW(s->pcs, s->npcs + depth, s->pcs_alloc);
	memcpy(s->pcs + s->npcs, pcs, depth * sizeof(*pcs));
	s->off[id] = s->npcs;
	s->depth[id] = depth;
	s->npcs += depth;
	for (uint32_t k = 0; k < depth; k++) {
		struct suffix key = {h[k], id, depth - k};
		bool added;
		ap_index_add(&s->index, h[k] ^ key.len, suffix_is, s, &key, (uint32_t)s->nsfx,
			     &added);
		if (added) {
			AP_ALLOC_GROW(s->sfx, s->nsfx + 1, s->sfx_alloc);
			s->sfx[s->nsfx++] = key;
		}
	}
	return base;
}

void compact_stacks_release(struct stack_table *s)
{
	free(s->pcs);
	free(s->off);
	free(s->depth);
	free(s->sfx);
	ap_index_release(&s->index);
}

bool compact_meta_skip(uint8_t tag, const uint8_t **at, const uint8_t *end, uint64_t v[4])
{
	const uint8_t *p = *at;
	uint64_t n = 0, x;
	bool ok;
	switch (tag) {
	case AP_META_MAPPING:
		ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &n) &&
		     n <= (uint64_t)(end - p);
		p += ok ? n : 0;
		ok = ok && !ap_get_uv(&p, end, &n) && n <= (uint64_t)(end - p);
		p += ok ? n : 0;
		ok = ok && !ap_get_uv(&p, end, &n) && n <= (uint64_t)(end - p);
		for (uint64_t i = 0; ok && i < 4 * n; i++)
			ok = !ap_get_uv(&p, end, &x);
		break;
	case AP_META_THREAD:
		ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &n) &&
		     n <= (uint64_t)(end - p);
		p += ok ? n : 0;
		break;
	case AP_META_STACK:
		ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &v[1]);
		for (uint64_t i = 0; ok && i < v[1]; i++)
			ok = !ap_get_uv(&p, end, &x);
		break;
	case AP_META_STACK_SHARED:
		ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &v[1]) &&
		     !ap_get_uv(&p, end, &v[2]) && !ap_get_uv(&p, end, &v[3]) && v[3] <= v[1];
		for (uint64_t i = 0; ok && i < v[1] - v[3]; i++)
			ok = !ap_get_uv(&p, end, &x);
		break;
	default:
		ok = false;
	}
	*at = p;
	return ok;
}

int compact_stacks_meta(struct stack_table *s, struct bytes *o, const uint8_t *payload, size_t len)
{
	size_t start = o->len;
	const uint8_t *p = payload, *end = payload + len;
	uint64_t pcs[AP_MAX_DEPTH_CAP];
	while (p < end) {
		const uint8_t *rec = p;
		uint8_t tag = *p++;
		uint64_t v[4];
		bool ok = true;
		if (tag == 0) {
			p = rec; /* padding: copied */
			break;
		} else if (tag == AP_META_MAPPING || tag == AP_META_THREAD) {
			ok = compact_meta_skip(tag, &p, end, v);
		} else if (tag == AP_META_STACK) {
			ok = !ap_get_uv(&p, end, &v[0]) && !ap_get_uv(&p, end, &v[1]);
			uint64_t pc = 0;
			bool keep = ok && !s->lost && v[0] == (s->nids ? s->nids : 1) &&
				    v[0] < UINT32_MAX && v[1] <= AP_MAX_DEPTH_CAP;
			for (uint64_t i = 0; ok && i < v[1]; i++) {
				int64_t d = 0;
				ok = i ? !ap_get_sv(&p, end, &d) : !ap_get_uv(&p, end, &pc);
				pc += (uint64_t)d;
				if (keep)
					pcs[i] = pc;
			}
			if (ok && keep) {
				uint32_t shared, base = stack_share(s, (uint32_t)v[0], pcs,
								    (uint32_t)v[1], &shared);
				uint64_t cap =
				    AP_SHARED_PCS_PER_BYTE * (s->meta_bytes + o->len - start) +
				    AP_SHARED_PCS_SLACK;
				if (base && shared >= 2 && s->shared_pcs + shared <= cap) {
					s->shared_pcs += shared;
					o->len += ap_put_stack_shared(
					    room(o, AP_META_STACK_MAX(v[1]) + 2 * AP_VARINT_MAX),
					    (uint32_t)v[0], pcs, (uint32_t)v[1], base, shared);
					continue;
				}
			} else if (ok && v[0] == (s->nids ? s->nids : 1)) {
				s->nids = v[0] + 1; /* ids stay in step; not shared */
			}
		} else if (tag == AP_META_STACK_SHARED) {
			/* (written by an earlier compaction; kept, not shared) */
			ok = compact_meta_skip(tag, &p, end, v);
			if (ok && v[0] == (s->nids ? s->nids : 1))
				s->nids = v[0] + 1;
			s->shared_pcs += ok ? v[3] : 0;
		} else {
			ok = false;
		}
		if (!ok)
			return -1;
		put_bytes(o, rec, (size_t)(p - rec));
	}
	s->meta_bytes += o->len - start;
	return 0;
}
