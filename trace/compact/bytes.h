/* A growable byte array the compactor's units encode into (the columns,
 * the payload, the META held back). Internal to trace/compact/. */
#ifndef AP_COMPACT_BYTES_H
#define AP_COMPACT_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ap_trace_enc.h"
#include "ap_util.h"

struct bytes {
	uint8_t *b;
	size_t len, alloc;
};

/* Room for n more bytes at the end of o, for an encoder's cursor. */
static inline uint8_t *room(struct bytes *o, size_t n)
{
	AP_ALLOC_GROW(o->b, o->len + n, o->alloc);
	return o->b + o->len;
}

static inline void put_bytes(struct bytes *o, const uint8_t *src, size_t n)
{
	if (!n) /* (o->b may be NULL, src too) */
		return;
	memcpy(room(o, n), src, n);
	o->len += n;
}

static inline void put_uv(struct bytes *o, uint64_t v)
{
	o->len += ap_put_uv(room(o, AP_VARINT_MAX), v);
}

#endif
