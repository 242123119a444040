/* libFuzzer target for the trace reader and the compactor. Each input is
 * read as it is, then again with every chunk's checksums recomputed and
 * its stream indices put in order, so that the fuzzer's mutations reach
 * the payload decoders instead of stopping at a CRC mismatch or a chunk
 * out of its stream's order. A trace the reader takes is then compacted
 * (ap_trace_compact, into /dev/shm), which must succeed, and the result
 * must read back with the same totals; anything else aborts (a finding).
 *
 * Built with clang by the meson target tests/trace/fuzz-reader (not by
 * default; option `fuzz`) and run by `make fuzz` (FUZZ_SECONDS, seeds from
 * tests/trace/fuzz-seeds.sh and tests/trace/fuzz-corpus/). fuzz-driver.c
 * calls the same entry point without libFuzzer: the suite's
 * trace-fuzz-corpus test.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_compact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void read_once(const uint8_t *data, size_t len)
{
	struct ap_trace *t = NULL;
	struct ap_error err;
	if (ap_trace_read_mem(data, len, "fuzz", &t, &err) < 0)
		return;
	struct ap_trace_totals tot;
	/* (a pass may find a chunk corrupt: an error, not a crash) */
	if (ap_trace_totals(t, &tot, &err) < 0 &&
	    strncmp(err.msg, "fuzz: corrupt chunk at byte ", 28))
		abort();
	for (size_t i = 0; i < t->nstacks; i++)
		for (uint32_t k = 0; k < t->stacks[i].depth; k++)
			(void)ap_trace_mapping_for(t, t->stacks[i].pcs[k]);
	ap_trace_free(t);
}

/* Totals are sums of doubles, and the blocks live at the end are summed
 * in the order of their identities, which compaction changes: with sizes
 * near 2^64 (a fuzzed trace) the last bits differ. Real sums (below 2^53
 * bytes, weight 1) are exact in any order. */
static bool same(double x, double y)
{
	return x == y || fabs(x - y) <= 1e-12 * fmax(fabs(x), fabs(y));
}

/* A trace the reader takes compacts, and reads back the same. */
static void compact_once(const uint8_t *data, size_t len)
{
	struct ap_trace *t = NULL, *u = NULL;
	struct ap_error err;
	if (ap_trace_read_mem(data, len, "fuzz", &t, &err) < 0)
		return;
	char path[64];
	snprintf(path, sizeof(path), "/dev/shm/fuzz-compact-%d", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		abort();
	struct ap_compact_stats st;
	if (ap_trace_compact(path, 3, &st, &err) < 0) {
		fprintf(stderr, "a trace the reader takes does not compact: %s\n", err.msg);
		abort();
	}
	if (ap_trace_read(path, &u, &err, NULL, NULL) < 0) {
		fprintf(stderr, "a compacted trace does not read: %s\n", err.msg);
		abort();
	}
	unlink(path);
	struct ap_trace_totals a, b;
	struct ap_error ea;
	int ra = ap_trace_totals(t, &a, &ea), rb = ap_trace_totals(u, &b, &err);
	/* (t's own chunks may be found corrupt only now: then so may u's) */
	if (rb < 0 && ra == 0) {
		fprintf(stderr, "a compacted trace is corrupt: %s\n", err.msg);
		abort();
	}
	if (ra < 0) {
		ap_trace_free(t);
		ap_trace_free(u);
		return;
	}
	if (t->nev != u->nev || !same(a.alloc_objects, b.alloc_objects) ||
	    !same(a.free_objects, b.free_objects) || !same(a.inuse_space, b.inuse_space) ||
	    !same(a.unmatched_frees, b.unmatched_frees) || t->truncated != u->truncated) {
		fprintf(stderr, "compacted: %zu events (was %zu), totals differ\n", u->nev, t->nev);
		abort();
	}
	ap_trace_free(t);
	ap_trace_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	read_once(data, len);
	if (len < AP_TRACE_PREAMBLE_LEN)
		return 0;
	uint8_t *d = malloc(len);
	memcpy(d, data, len);
	struct ap_streams streams = {0};
	for (size_t o = AP_TRACE_PREAMBLE_LEN; o + AP_CHUNK_HDR_LEN <= len;) {
		uint32_t plen = ap_get_u32le(d + o + 12);
		if (plen > len - o - AP_CHUNK_HDR_LEN)
			break;
		ap_put_u32le(d + o, AP_CHUNK_MAGIC);
		/* chunk indices in order (docs/trace-format.md, "Streams") */
		uint32_t stream = d[o + 4] == AP_CHUNK_HEADER || d[o + 4] == AP_CHUNK_END
					  ? AP_STREAM_NONE
					  : ap_get_u32le(d + o + 20) == AP_STREAM_NONE
						? AP_STREAM_META
						: ap_get_u32le(d + o + 20);
		ap_put_u32le(d + o + 20, stream);
		ap_put_u32le(d + o + 24, ap_streams_next(&streams, stream));
		ap_put_u32le(d + o + 16, ap_crc32c(d + o + AP_CHUNK_HDR_LEN, plen));
		ap_put_u32le(d + o + AP_CHUNK_HDR_CRC_OFF, ap_crc32c(d + o, AP_CHUNK_HDR_CRC_OFF));
		o += AP_CHUNK_HDR_LEN + plen;
	}
	ap_streams_release(&streams);
	read_once(d, len);
	compact_once(d, len);
	free(d);
	return 0;
}
