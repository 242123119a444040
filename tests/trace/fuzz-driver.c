/* A plain driver of fuzz-reader.c's entry point (LLVMFuzzerTestOneInput),
 * for the suite and for `make fuzz`'s seed corpus; built with any compiler.
 *
 *   fuzz-driver FILE|DIR...        runs the entry point once per file (a
 *                                  directory: each regular file in it); a
 *                                  finding aborts, as under libFuzzer
 *   fuzz-driver --seed DIR TRACE...  writes seeds into DIR: each trace as
 *                                  it is, compacted (ap_trace_compact), and
 *                                  compacted with its compressed chunks
 *                                  stored plain, so that mutations reach
 *                                  the column decoders instead of zstd
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "ap_trace_enc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	size_t cap = 1 << 16, n = 0, k;
	uint8_t *b = malloc(cap);
	while ((k = fread(b + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	*len = n;
	return b;
}

static void spill(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* The trace with every ZSTD chunk stored decompressed (flags kept but
 * ZSTD, checksums recomputed); other bytes as they were. */
static uint8_t *unzstd(const uint8_t *d, size_t len, size_t *outlen)
{
	size_t cap = len * 4 + 64, n = 0;
	uint8_t *o = malloc(cap);
	size_t off = len < AP_TRACE_PREAMBLE_LEN ? len : AP_TRACE_PREAMBLE_LEN;
	memcpy(o, d, off);
	n = off;
	while (off + AP_CHUNK_HDR_LEN <= len) {
		const uint8_t *h = d + off;
		uint32_t plen = ap_get_u32le(h + 12);
		if (plen > len - off - AP_CHUNK_HDR_LEN)
			break;
		const uint8_t *p = h + AP_CHUNK_HDR_LEN, *pend = p + plen;
		/* the counts (AP_CHUNK_F_COUNTS) stay in front, as they are */
		struct ap_chunk_counts k;
		const uint8_t *z = p;
		uint32_t pre = 0;
		if (h[4] == AP_CHUNK_EVENTS && (h[5] & AP_CHUNK_F_COUNTS) &&
		    ap_get_chunk_counts(&z, pend, &k) == 0)
			pre = (uint32_t)(z - p);
		uint8_t *raw = NULL;
		uint32_t rlen = plen;
		if ((h[5] & AP_CHUNK_F_ZSTD) && plen - pre >= 4) {
			rlen = ap_get_u32le(z);
			raw = malloc(pre + (rlen ? rlen : 1));
			memcpy(raw, p, pre);
			if (ZSTD_isError(ZSTD_decompress(raw + pre, rlen, z + 4, plen - pre - 4))) {
				free(raw);
				raw = NULL;
				rlen = plen;
			} else {
				rlen += pre;
			}
		}
		if (n + AP_CHUNK_HDR_LEN + rlen > cap)
			o = realloc(o, cap = (n + AP_CHUNK_HDR_LEN + rlen) * 2);
		memcpy(o + n + AP_CHUNK_HDR_LEN, raw ? raw : p, rlen);
		ap_chunk_header_flags(o + n, h[4], raw ? h[5] & ~AP_CHUNK_F_ZSTD : h[5],
				      ap_get_u32le(h + 8), ap_get_u32le(h + 20), ap_get_u32le(h + 24),
				      o + n + AP_CHUNK_HDR_LEN, rlen);
		n += AP_CHUNK_HDR_LEN + rlen;
		off += AP_CHUNK_HDR_LEN + plen;
		free(raw);
	}
	memcpy(o + n, d + off, len - off); /* a cut tail */
	*outlen = n + len - off;
	return o;
}

static int seed(const char *dir, int n, char **traces)
{
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(traces[i], '/') ? strrchr(traces[i], '/') + 1 : traces[i];
		char path[4096];
		size_t len, ulen;
		uint8_t *d = slurp(traces[i], &len);
		snprintf(path, sizeof(path), "%s/%s", dir, base);
		spill(path, d, len);
		free(d);
		snprintf(path, sizeof(path), "%s/%s.compact", dir, base);
		spill(path, d = slurp(traces[i], &len), len);
		free(d);
		struct ap_compact_stats st;
		struct ap_error err;
		if (ap_trace_compact(path, 3, &st, &err) < 0) {
			fprintf(stderr, "fuzz-driver: %s\n", err.msg);
			return 1;
		}
		d = slurp(path, &len);
		uint8_t *u = unzstd(d, len, &ulen);
		snprintf(path, sizeof(path), "%s/%s.plain", dir, base);
		spill(path, u, ulen);
		free(u);
		free(d);
	}
	return 0;
}

static size_t run_path(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) < 0) {
		perror(path);
		exit(1);
	}
	if (!S_ISDIR(sb.st_mode)) {
		size_t len;
		uint8_t *d = slurp(path, &len);
		LLVMFuzzerTestOneInput(d, len);
		free(d);
		return 1;
	}
	DIR *dir = opendir(path);
	if (!dir) {
		perror(path);
		exit(1);
	}
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		char sub[4096];
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (de->d_name[0] != '.' && stat(sub, &sb) == 0 && S_ISREG(sb.st_mode))
			n += run_path(sub);
	}
	closedir(dir);
	return n;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--seed"))
		return seed(argv[2], argc - 3, argv + 3);
	if (argc < 2) {
		fprintf(stderr, "usage: fuzz-driver FILE|DIR... | --seed DIR TRACE...\n");
		return 2;
	}
	size_t n = 0;
	for (int i = 1; i < argc; i++)
		n += run_path(argv[i]);
	printf("fuzz-driver: %zu inputs, no finding\n", n);
	return n ? 0 : 1;
}
