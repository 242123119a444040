/* Chunk streams (ap_trace.h, docs/trace-format.md "Streams"): the index
 * each stream is at, for the writers that number chunks and the readers
 * that check the numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_trace.h"

void ap_streams_release(struct ap_streams *s)
{
	if (s && s->next.slot)
		ap_u64map_release(&s->next);
}

/* The next index of `stream` (a new one at index 0 if it was not seen),
 * in the map: valid until the next call. */
static uint32_t *stream_slot(struct ap_streams *s, uint32_t stream)
{
	if (!s->next.slot)
		ap_u64map_init(&s->next, 8);
	struct ap_u64map_slot *e = ap_u64map_find(&s->next, stream);
	if (!e) {
		ap_u64map_put(&s->next, stream, 0);
		e = ap_u64map_find(&s->next, stream);
	}
	return &e->val;
}

uint32_t ap_streams_next(struct ap_streams *s, uint32_t stream)
{
	if (stream == AP_STREAM_NONE)
		return 0;
	return (*stream_slot(s, stream))++;
}

int ap_streams_check(struct ap_streams *s, uint8_t type, uint32_t stream, uint32_t index,
		     char *why, size_t whylen)
{
	bool framing = type == AP_CHUNK_HEADER || type == AP_CHUNK_END;
	const char *name = type == AP_CHUNK_HEADER ? "HEADER" : "END";
	if (framing && stream != AP_STREAM_NONE) {
		snprintf(why, whylen, "%s chunk in stream %u", name, stream);
		return -1;
	}
	if (framing && index) {
		snprintf(why, whylen, "%s chunk with index %u (not 0)", name, index);
		return -1;
	}
	if (framing)
		return 0;
	if (stream == AP_STREAM_NONE) {
		snprintf(why, whylen, "a chunk of type %u in no stream", type);
		return -1;
	}
	uint32_t *next = stream_slot(s, stream);
	if (index < *next) {
		snprintf(why, whylen,
			 "duplicated chunk: chunk %u of stream %u again (the stream is at chunk %u)",
			 index, stream, *next);
		return -1;
	}
	if (index > *next) {
		if (index - *next == 1)
			snprintf(why, whylen,
				 "missing chunk: chunk %u of stream %u comes before this one, "
				 "chunk %u (deleted or lost)", *next, stream, index);
		else
			snprintf(why, whylen,
				 "missing chunks: chunks %u to %u of stream %u come before this "
				 "one, chunk %u (deleted or lost)", *next, index - 1, stream, index);
		return -1;
	}
	(*next)++;
	return 0;
}
