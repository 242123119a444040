/* libFuzzer target for the trace reader (optional, not built by meson, not
 * in CI). Each input is read as it is, then again with every chunk's
 * checksums recomputed so that the fuzzer's mutations reach the payload
 * decoders instead of stopping at a CRC mismatch.
 *
 * Build and run (clang):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Itrace -Iutil tests/trace/fuzz-reader.c trace/reader.c trace/totals.c \
 *     trace/crc32c.c util/util.c -lm -o /tmp/fuzz-reader
 *   mkdir -p /tmp/corpus && build/tests/trace/mktrace exact /tmp/corpus/exact
 *   /tmp/fuzz-reader -max_total_time=60 /tmp/corpus
 */
#include <stdlib.h>
#include <string.h>

#include "ap_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void read_once(const uint8_t *data, size_t len)
{
	struct ap_trace *t = NULL;
	struct ap_error err;
	if (ap_trace_read_mem(data, len, "fuzz", &t, &err) < 0)
		return;
	struct ap_trace_totals tot;
	ap_trace_totals(t, &tot);
	for (size_t i = 0; i < t->nstacks; i++)
		for (uint32_t k = 0; k < t->stacks[i].depth; k++)
			(void)ap_trace_mapping_for(t, t->stacks[i].pcs[k]);
	ap_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	read_once(data, len);
	if (len < AP_TRACE_PREAMBLE_LEN)
		return 0;
	uint8_t *d = malloc(len);
	memcpy(d, data, len);
	for (size_t o = AP_TRACE_PREAMBLE_LEN; o + AP_CHUNK_HDR_LEN <= len;) {
		uint32_t plen = ap_get_u32le(d + o + 12);
		if (plen > len - o - AP_CHUNK_HDR_LEN)
			break;
		ap_put_u32le(d + o, AP_CHUNK_MAGIC);
		ap_put_u32le(d + o + 16, ap_crc32c(d + o + AP_CHUNK_HDR_LEN, plen));
		ap_put_u32le(d + o + 20, ap_crc32c(d + o, 20));
		o += AP_CHUNK_HDR_LEN + plen;
	}
	read_once(d, len);
	free(d);
	return 0;
}
