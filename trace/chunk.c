/* The chunk walker (ap_trace.h): the framing of a trace, checked once for
 * the reader and the compactor. */
#include <stdio.h>
#include <string.h>

#include "ap_trace.h"

void ap_chunk_walk_init(struct ap_chunk_walk *w, const uint8_t *data, size_t size)
{
	memset(w, 0, sizeof(*w));
	w->data = data;
	w->size = size;
	w->off = AP_TRACE_PREAMBLE_LEN;
}

void ap_chunk_walk_release(struct ap_chunk_walk *w)
{
	if (w)
		ap_streams_release(&w->streams);
}

/* The EVENTS flags that need another flag, in the order the walker
 * checks them. */
static const struct {
	unsigned flag, needs;
	const char *name;
} flag_rules[] = {
	{AP_CHUNK_F_REFS, AP_CHUNK_F_COLUMNS, "a distances column"},
	{AP_CHUNK_F_INDEX, AP_CHUNK_F_REFS, "allocation indexes"},
	{AP_CHUNK_F_XOWN, AP_CHUNK_F_INDEX, "steps by owner"},
	{AP_CHUNK_F_SIZES, AP_CHUNK_F_COLUMNS, "sizes by stack"},
	{AP_CHUNK_F_COUNTS, AP_CHUNK_F_COLUMNS, "counts"},
};

static const char *flag_name(unsigned flag)
{
	for (size_t i = 0; i < sizeof(flag_rules) / sizeof(flag_rules[0]); i++)
		if (flag_rules[i].flag == flag)
			return flag_rules[i].name;
	return "columns"; /* (AP_CHUNK_F_COLUMNS, which needs nothing) */
}

/* The order of the checks is the one docs/trace-format.md gives: what a
 * message names first is what was found wrong first. */
enum ap_chunk_result ap_chunk_next(struct ap_chunk_walk *w, struct ap_chunk *c, char *why,
				   size_t whylen)
{
	w->maybe_unwritten = false;
	if (w->off >= w->size)
		return AP_CHUNK_EOF;
	size_t left = w->size - w->off;
	const uint8_t *h = w->data + w->off;
	if (left < AP_CHUNK_HDR_LEN)
		return AP_CHUNK_CUT;
	if (ap_get_u32le(h) != AP_CHUNK_MAGIC) {
		w->maybe_unwritten = true;
		snprintf(why, whylen, "bad chunk magic %#010x", ap_get_u32le(h));
		return AP_CHUNK_BAD;
	}
	if (!ap_chunk_header_ok(h)) {
		w->maybe_unwritten = true;
		snprintf(why, whylen, "header checksum mismatch");
		return AP_CHUNK_BAD;
	}
	*c = (struct ap_chunk){
	    .off = w->off,
	    .type = h[4],
	    .flags = h[5],
	    .tid = ap_get_u32le(h + 8),
	    .len = ap_get_u32le(h + 12),
	    .stream = ap_get_u32le(h + 20),
	    .index = ap_get_u32le(h + 24),
	    .payload = h + AP_CHUNK_HDR_LEN,
	};
	if (c->len > AP_CHUNK_MAX_PAYLOAD) {
		snprintf(why, whylen, "payload length %u exceeds %u", c->len, AP_CHUNK_MAX_PAYLOAD);
		return AP_CHUNK_BAD;
	}
	if (c->type < AP_CHUNK_HEADER || c->type > AP_CHUNK_SYMBOLS) {
		snprintf(why, whylen, "unknown chunk type %u", c->type);
		return AP_CHUNK_BAD;
	}
	if (c->len > left - AP_CHUNK_HDR_LEN)
		return AP_CHUNK_CUT;
	if ((!w->headers_only || (c->type != AP_CHUNK_META && c->type != AP_CHUNK_EVENTS)) &&
	    ap_crc32c(c->payload, c->len) != ap_get_u32le(h + 16)) {
		w->maybe_unwritten = true;
		snprintf(why, whylen, "payload checksum mismatch");
		return AP_CHUNK_BAD;
	}
	if (!w->have_header && c->type != AP_CHUNK_HEADER) {
		snprintf(why, whylen, "the first chunk is not a HEADER (type %u)", c->type);
		return AP_CHUNK_BAD;
	}
	/* past here every failure is final (the chunk is whole and checked):
	 * that the stream counted it does not matter */
	if (c->type != AP_CHUNK_SYMBOLS && w->last_type == AP_CHUNK_SYMBOLS) {
		snprintf(why, whylen, "a chunk of type %u after SYMBOLS", c->type);
		return AP_CHUNK_BAD;
	}
	if ((c->type == AP_CHUNK_SYMBOLS) != (c->stream == AP_STREAM_SYMBOLS)) {
		snprintf(why, whylen, "a chunk of type %u in stream %u", c->type, c->stream);
		return AP_CHUNK_BAD;
	}
	if (ap_streams_check(&w->streams, c->type, c->stream, c->index, why, whylen) < 0)
		return AP_CHUNK_BAD;
	if (c->flags & ~(AP_CHUNK_F_ZSTD | AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS |
			 AP_CHUNK_F_INDEX | AP_CHUNK_F_SIZES | AP_CHUNK_F_XOWN | AP_CHUNK_F_COUNTS |
			 AP_CHUNK_F_GAPS)) {
		snprintf(why, whylen, "unknown chunk flags %#x", c->flags);
		return AP_CHUNK_BAD;
	}
	for (size_t i = 0; i < sizeof(flag_rules) / sizeof(flag_rules[0]); i++)
		if ((c->flags & flag_rules[i].flag) && !(c->flags & flag_rules[i].needs)) {
			snprintf(why, whylen, "%s without %s", flag_rules[i].name,
				 flag_name(flag_rules[i].needs));
			return AP_CHUNK_BAD;
		}
	if ((c->flags & (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_GAPS)) && c->type != AP_CHUNK_EVENTS) {
		snprintf(why, whylen, "a chunk of type %u %s", c->type,
			 (c->flags & AP_CHUNK_F_COLUMNS) ? "in columns" : "with gaps");
		return AP_CHUNK_BAD;
	}
	if ((c->flags & AP_CHUNK_F_ZSTD) && c->type != AP_CHUNK_META &&
	    c->type != AP_CHUNK_EVENTS && c->type != AP_CHUNK_SYMBOLS) {
		snprintf(why, whylen, "a compressed chunk of type %u", c->type);
		return AP_CHUNK_BAD;
	}
	if (c->type == AP_CHUNK_HEADER && w->have_header) {
		snprintf(why, whylen, "a second HEADER chunk");
		return AP_CHUNK_BAD;
	}
	w->have_header = true;
	w->last_type = c->type;
	w->data_chunks += c->type == AP_CHUNK_META || c->type == AP_CHUNK_EVENTS;
	w->off += AP_CHUNK_HDR_LEN + (size_t)c->len;
	return AP_CHUNK_OK;
}
