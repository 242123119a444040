/* Chunk streams (ap_trace.h, docs/trace-format.md "Streams"): the index
 * each stream is at, for the writers that number chunks and the readers
 * that check the numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_trace.h"

void ap_streams_release(struct ap_streams *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->next);
	memset(s, 0, sizeof(*s));
}

static size_t stream_hash(uint32_t id, size_t mask)
{
	return (size_t)((id * 2654435761u) >> 7) & mask;
}

static void streams_grow(struct ap_streams *s)
{
	size_t cap = s->id ? (s->mask + 1) * 2 : 16;
	uint32_t *id = ap_xmalloc(cap * sizeof(*id));
	uint32_t *next = ap_xmalloc(cap * sizeof(*next));
	memset(id, 0xff, cap * sizeof(*id));
	for (size_t i = 0; s->id && i <= s->mask; i++) {
		if (s->id[i] == AP_STREAM_NONE)
			continue;
		size_t j = stream_hash(s->id[i], cap - 1);
		while (id[j] != AP_STREAM_NONE)
			j = (j + 1) & (cap - 1);
		id[j] = s->id[i];
		next[j] = s->next[i];
	}
	free(s->id);
	free(s->next);
	s->id = id;
	s->next = next;
	s->mask = cap - 1;
}

/* The slot of `stream` (a new one at index 0 if it was not seen). */
static uint32_t *stream_slot(struct ap_streams *s, uint32_t stream)
{
	if (!s->id || (s->n + 1) * 2 > s->mask + 1)
		streams_grow(s);
	size_t j = stream_hash(stream, s->mask);
	while (s->id[j] != AP_STREAM_NONE && s->id[j] != stream)
		j = (j + 1) & s->mask;
	if (s->id[j] == AP_STREAM_NONE) {
		s->id[j] = stream;
		s->next[j] = 0;
		s->n++;
	}
	return &s->next[j];
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
