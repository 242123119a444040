/* Stack sharing (stacks.c): the compactor writes a STACK that shares its
 * outermost frames with an earlier stack as STACK_SHARED, naming that
 * stack and the frames shared (docs/trace-format.md). Internal to
 * trace/compact/. */
#ifndef AP_COMPACT_STACKS_H
#define AP_COMPACT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_hash.h"

struct bytes;

/* The stacks of the META records re-encoded so far, for STACK_SHARED:
 * each stack's PCs by id, and every suffix (outermost frames) of each, by
 * hash and length, to the first stack that has it. Zero-initialised is
 * empty. */
struct suffix {
	uint64_t h;
	uint32_t id, len;
};

struct stack_table {
	uint64_t *pcs;
	size_t npcs, pcs_alloc;
	size_t *off;		/* off[id]: its PCs in pcs */
	uint32_t *depth;	/* depth[id]; 0: not known (not re-encoded here) */
	size_t nids, ids_alloc; /* ids 1 .. nids - 1 seen */
	struct suffix *sfx;	/* the suffixes, in the order seen */
	size_t nsfx, sfx_alloc;
	struct ap_index index;		 /* (h, len) -> its entry in sfx */
	uint64_t shared_pcs, meta_bytes; /* as the reader counts them */
	bool lost; /* a META chunk was copied unread: ids and counts unknown */
};

/* A raw META payload appended to o with each STACK that shares two or
 * more outer frames with an earlier stack of s written as STACK_SHARED
 * (MAPPING, THREAD and what is not understood here copied as they are;
 * the reader checks them), its padding left out (padding ends a
 * payload). Never more shared frames than the reader takes per byte of
 * META (AP_SHARED_PCS_PER_BYTE). Returns 0, or -1 if a record does not
 * decode (o then holds the records before it). Set s->lost when a META
 * chunk goes to the output without this: the ids are no longer known. */
int compact_stacks_meta(struct stack_table *s, struct bytes *o, const uint8_t *payload, size_t len);

/* The META record at *p, its tag (one byte) read already, up to end:
 * *p moves past it, and v gets its first fields: MAPPING its first;
 * THREAD the tid; STACK the id and depth; STACK_SHARED the id, depth,
 * base and frames shared. (A STACK's PCs are skipped: stacks.c reads
 * them itself.) false if it does not decode, or the tag is unknown. */
bool compact_meta_skip(uint8_t tag, const uint8_t **p, const uint8_t *end, uint64_t v[4]);

/* Frees what s holds. */
void compact_stacks_release(struct stack_table *s);

#endif
