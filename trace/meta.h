/* HEADER, END and META records (meta.c), decoded in pass 1 into the
 * trace being read (struct rd, file.h). */
#ifndef AP_TRACE_META_H
#define AP_TRACE_META_H

#include <stdint.h>

struct rd;

/* ---- primitive readers over a payload ---- */

struct cur {
	const uint8_t *p, *end;
	const uint8_t *base; /* start of the file, for offsets */
};

int decode_header(struct rd *r, struct cur *c);
int decode_end(struct rd *r, struct cur *c);
int decode_meta(struct rd *r, struct cur *c);

#endif
