/* The protobuf wire format (proto3) without a protobuf library, the way
 * Go's runtime/pprof/protobuf.go writes profiles, and gzip through zlib.
 * Protobuf varints are the trace format's LEB128 (ap_put_uv). */
#include <string.h>
#include <zlib.h>

#include "ap_export.h"
#include "ap_trace_enc.h"

enum { WIRE_VARINT = 0, WIRE_BYTES = 2 };

void ap_pb_varint(struct ap_buf *b, uint64_t v)
{
	uint8_t tmp[AP_VARINT_MAX];
	ap_buf_add(b, tmp, ap_put_uv(tmp, v));
}

static void pb_key(struct ap_buf *b, unsigned field, unsigned wire)
{
	ap_pb_varint(b, (uint64_t)field << 3 | wire);
}

void ap_pb_uint(struct ap_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, WIRE_VARINT);
	ap_pb_varint(b, v);
}

void ap_pb_int(struct ap_buf *b, unsigned field, int64_t v)
{
	ap_pb_uint(b, field, (uint64_t)v);
}

void ap_pb_bool(struct ap_buf *b, unsigned field, bool v)
{
	ap_pb_uint(b, field, v ? 1 : 0);
}

void ap_pb_bytes(struct ap_buf *b, unsigned field, const void *data, size_t len)
{
	pb_key(b, field, WIRE_BYTES);
	ap_pb_varint(b, len);
	ap_buf_add(b, data, len);
}

void ap_pb_packed(struct ap_buf *b, unsigned field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t mark = ap_pb_begin(b, field);
	for (size_t i = 0; i < n; i++)
		ap_pb_varint(b, v[i]);
	ap_pb_end(b, mark);
}

size_t ap_pb_begin(struct ap_buf *b, unsigned field)
{
	pb_key(b, field, WIRE_BYTES);
	return b->len;
}

/* The length goes before the message's bytes: encode it, then shift the
 * message right by its size (Go's endMessage does the same copy). */
void ap_pb_end(struct ap_buf *b, size_t mark)
{
	uint8_t tmp[AP_VARINT_MAX];
	size_t msglen = b->len - mark;
	size_t n = ap_put_uv(tmp, msglen);
	ap_buf_grow(b, n);
	memmove(b->buf + mark + n, b->buf + mark, msglen);
	memcpy(b->buf + mark, tmp, n);
	b->len += n;
	b->buf[b->len] = 0;
}

int ap_export_gzip(const void *data, size_t len, int level, struct ap_buf *out,
		   struct ap_error *err)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: a gzip wrapper instead of zlib's. */
	if (len > UINT32_MAX / 2)
		return ap_error_set(err, "gzip: %zu bytes is too large", len);
	int rc = deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (rc != Z_OK)
		return ap_error_set(err, "gzip: %s", z.msg ? z.msg : zError(rc));
	size_t bound = deflateBound(&z, (uLong)len);
	ap_buf_grow(out, bound);
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out->buf + out->len;
	z.avail_out = (uInt)bound;
	rc = deflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) {
		ap_error_set(err, "gzip: %s", z.msg ? z.msg : zError(rc));
		deflateEnd(&z);
		return -1;
	}
	out->len += z.total_out;
	out->buf[out->len] = 0;
	deflateEnd(&z);
	return 0;
}
