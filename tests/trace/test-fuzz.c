/* Robustness of the reader: a real trace (from the test writer) cut at every
 * byte, with random bytes overwritten (checksums left wrong, and fixed up so
 * the garbage reaches the payload decoders), with random chunk headers and
 * random payloads. The reader must never crash or read out of bounds (the
 * sanitized build runs this under ASan/UBSan), must fail with one message
 * naming the file, and must succeed on every complete prefix. All of it on
 * the writer's raw trace and on the same trace compacted (zstd, columns,
 * anonymous blocks). Fixed seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "ap_trace_writer.h"

static int failures;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static void fail(const char *what, size_t variant, const char *detail)
{
	if (failures++ < 20)
		fprintf(stderr, "FAIL: %s (variant %zu): %s\n", what, variant, detail);
}

/* A trace with everything: mappings, deep stacks, named threads, every
 * event type and kind, cpu changes, large addresses, small chunks. */
static uint8_t *make_trace(size_t *len, size_t *nev)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = 4096;
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 300);
	struct ap_segment segs[2] = {{0, 0x1000, 0, 4}, {0x1000, 0x8000, 0x1000, 5}};
	ap_tw_mapping(tw, 0x555555554000ull, "/usr/bin/app", (const uint8_t *)"\x01\x02\x03\x04", 4,
		      segs, 2);
	ap_tw_mapping(tw, 0x7f1234560000ull, "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0, segs, 2);
	uint32_t stacks[6];
	for (int i = 0; i < 6; i++) {
		uint64_t pcs[20];
		for (int k = 0; k < 20; k++)
			pcs[k] = (k & 1 ? 0x7f1234561000ull : 0x555555555000ull) + rnd() % 0x7000;
		stacks[i] = ap_tw_stack(tw, pcs, (uint32_t)(4 + i * 3));
	}
	uint32_t tids[3] = {100, 101, 102};
	ap_tw_thread(tw, 100, "main");
	ap_tw_thread(tw, 101, "worker-1");
	uint64_t ts[3] = {h.start_ns, h.start_ns, h.start_ns};
	uint64_t live[3][16] = {{0}};
	for (int i = 0; i < 600; i++) {
		int k = (int)(rnd() % 3);
		ts[k] += rnd() % 1000;
		uint32_t cpu = (uint32_t)(rnd() % 4);
		int slot = (int)(rnd() % 16);
		uint64_t addr =
		    (k == 2 ? 0x7f0000000000ull : 0x560000000000ull) + (rnd() % 100000) * 16;
		if (i == 300) {
			/* a module loaded later, and a stack that uses it */
			ap_tw_mapping(tw, 0x7f9999990000ull, "/tmp/plugin.so", NULL, 0, segs, 1);
			uint64_t pc = 0x7f9999990100ull;
			stacks[0] = ap_tw_stack(tw, &pc, 1);
		}
		if (live[k][slot]) {
			if (rnd() % 2)
				ap_tw_free(tw, tids[k], ts[k], cpu, live[k][slot]);
			else
				ap_tw_realloc(tw, tids[k], ts[k], cpu, AP_KIND_REALLOC,
					      live[k][slot], addr, rnd() % 100000,
					      stacks[rnd() % 6],
					      AP_RF_OLD_TRACKED | AP_RF_NEW_SAMPLED);
			live[k][slot] = rnd() % 2 ? 0 : addr;
		} else {
			ap_tw_alloc(tw, tids[k], ts[k], cpu, (unsigned)(rnd() % 5), addr,
				    rnd() % 3 ? rnd() % 10000 : rnd(), stacks[rnd() % 6]);
			live[k][slot] = addr;
		}
	}
	struct ap_tw_end end = {ts[0] + 5000, 0, 0, 1234, 567890, 70000, 16384, true, 120, 7, 4321, true, 2345, 3, 2500000};
	ap_tw_end(tw, &end);
	uint8_t *data;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, len, &err) < 0) {
		fprintf(stderr, "writer: %s\n", err.msg);
		exit(1);
	}
	/* the symbols record keeps, after END */
	struct ap_symtab_writer *w = ap_symtab_writer_new();
	ap_symtab_writer_module(w, "/usr/bin/fuzzed", (const uint8_t *)"\x01\x02", 2,
				AP_SYMTAB_HAS_LINES);
	for (uint64_t pc = 0x1000; pc < 0x1400; pc += 0x40) {
		ap_symtab_writer_pc(w, pc, 1 + (uint32_t)(pc >> 6 & 3));
		for (uint64_t k = 0; k < 1 + (pc >> 6 & 3); k++)
			ap_symtab_writer_frame(w, k & 1 ? NULL : "fn", pc & 0x80 ? "/src/f.c" : NULL,
					       (uint32_t)(pc + k), (uint32_t)k);
	}
	const struct ap_buf *pl;
	ap_symtab_writer_payloads(w, &pl);
	data = realloc(data, *len + AP_CHUNK_HDR_LEN + pl[0].len);
	ap_chunk_header(data + *len, AP_CHUNK_SYMBOLS, 0, AP_STREAM_SYMBOLS, 0,
			(const uint8_t *)pl[0].buf, (uint32_t)pl[0].len);
	memcpy(data + *len + AP_CHUNK_HDR_LEN, pl[0].buf, pl[0].len);
	*len += AP_CHUNK_HDR_LEN + pl[0].len;
	ap_symtab_writer_free(w);
	struct ap_trace *t;
	if (ap_trace_read_mem(data, *len, "full", &t, &err) < 0) {
		fprintf(stderr, "the full trace does not read: %s\n", err.msg);
		exit(1);
	}
	*nev = t->nev;
	if (t->symtab.nmods != 1) {
		fprintf(stderr, "the full trace has %zu symbol tables\n", t->symtab.nmods);
		exit(1);
	}
	ap_trace_free(t);
	return data;
}

/* Reads a variant; returns 1 if it read, 0 if it failed properly. Touches
 * everything a report would, so a bad pointer in the result shows too. */
static int try_read(const uint8_t *data, size_t len, size_t variant)
{
	struct ap_trace *t = NULL;
	struct ap_error err;
	err.msg[0] = 0;
	if (ap_trace_read_mem(data, len, "v.trace", &t, &err) < 0) {
		if (strncmp(err.msg, "v.trace: ", 9) || strchr(err.msg, '\n'))
			fail("error message", variant, err.msg);
		if (t)
			fail("failure left a trace", variant, err.msg);
		return 0;
	}
	/* a chunk pass 1 left to the passes over the events (one with its
	 * counts) may be found corrupt only there: said by every pass, as
	 * the reader says its errors */
	struct ap_trace_totals tot;
	int passed = ap_trace_totals(t, &tot, &err);
	if (passed < 0 &&
	    (strncmp(err.msg, "v.trace: corrupt chunk at byte ", 31) || strchr(err.msg, '\n')))
		fail("error message of a pass", variant, err.msg);
	if ((ap_trace_load_events(t, &err) < 0) != (passed < 0))
		fail("two passes, two outcomes", variant, err.msg);
	if (passed < 0) {
		ap_trace_free(t);
		return 0;
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		if (e->thread >= t->nthreads)
			fail("event thread out of range", variant, "");
		if (e->stack >= t->nstacks)
			fail("event stack out of range", variant, "");
		const struct ap_stack *s = &t->stacks[e->stack];
		for (uint32_t k = 0; k < s->depth; k++)
			sum += s->pcs[k] + (ap_trace_mapping_for(t, s->pcs[k]) != NULL);
	}
	for (size_t i = 0; i < t->nmaps; i++)
		sum += strlen(t->maps[i].path) + t->maps[i].nsegs;
	for (size_t i = 0; i < t->nthreads; i++)
		sum += strlen(t->threads[i].name);
	for (size_t i = 0; i < t->argc; i++)
		sum += strlen(t->argv[i]);
	if (t->bytes_used > t->file_size)
		fail("bytes_used past the end", variant, "");
	if (t->truncated && !t->truncated_why[0])
		fail("truncated without a reason", variant, "");
	for (size_t i = 0; i < t->symtab.nmods; i++) {
		const struct ap_symtab_module *m = &t->symtab.mods[i];
		sum += strlen(m->path) + m->build_id_len;
		for (size_t k = 0; k < m->npcs; k++) {
			uint32_t n;
			const struct ap_symtab_frame *f = ap_symtab_lookup(m, m->pcs[k].offset, &n);
			if (!f || m->pcs[k].first + n > m->nframes)
				fail("a kept PC not found, or its frames out of range", variant, "");
			for (uint32_t j = 0; f && j < n; j++)
				sum += (f[j].name ? strlen(f[j].name) : 0) +
				       (f[j].file ? strlen(f[j].file) : 0) + f[j].line;
		}
	}
	ap_trace_free(t);
	return sum == 42 ? 2 : 1; /* keep `sum` alive */
}

/* Offsets of the chunks of a well-formed trace. */
static size_t chunk_offsets(const uint8_t *d, size_t len, size_t *off, size_t max)
{
	size_t n = 0;
	for (size_t o = AP_TRACE_PREAMBLE_LEN; o + AP_CHUNK_HDR_LEN <= len && n < max;) {
		off[n++] = o;
		o += AP_CHUNK_HDR_LEN + ap_get_u32le(d + o + 12);
	}
	return n;
}

static void fix_crcs(uint8_t *d, size_t len, size_t o)
{
	uint32_t plen = ap_get_u32le(d + o + 12);
	if (o + AP_CHUNK_HDR_LEN + plen <= len)
		ap_put_u32le(d + o + 16, ap_crc32c(d + o + AP_CHUNK_HDR_LEN, plen));
	ap_put_u32le(d + o + AP_CHUNK_HDR_CRC_OFF, ap_crc32c(d + o, AP_CHUNK_HDR_CRC_OFF));
}

/* The same trace as `record` leaves it (ap_trace_compact: joined,
 * columns, anonymous blocks, zstd), so the fuzzing reaches the
 * decompression and the column decoding too. */
static uint8_t *compacted(const uint8_t *data, size_t len, size_t *out_len)
{
	char path[] = "/tmp/allocprof-fuzz-XXXXXX";
	int fd = mkstemp(path);
	struct ap_compact_stats st;
	struct ap_error err;
	struct stat sb;
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0 ||
	    ap_trace_compact(path, 3, &st, &err) < 0 || stat(path, &sb) < 0) {
		fprintf(stderr, "compacting the test trace failed\n");
		exit(1);
	}
	uint8_t *out = malloc((size_t)sb.st_size);
	FILE *f = fopen(path, "rb");
	if (!f || fread(out, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
		fprintf(stderr, "reading the compacted trace failed\n");
		exit(1);
	}
	fclose(f);
	unlink(path);
	*out_len = (size_t)sb.st_size;
	return out;
}

static size_t fuzz(const uint8_t *good, size_t len, size_t full_nev, unsigned iters,
		   size_t *variant_io, const char *name);

int main(int argc, char **argv)
{
	size_t len, full_nev, zlen, variant = 0;
	uint8_t *good = make_trace(&len, &full_nev);
	uint8_t *z = compacted(good, len, &zlen);
	unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 4000;
	fuzz(good, len, full_nev, iters, &variant, "raw");
	fuzz(z, zlen, full_nev, iters, &variant, "compacted");
	free(z);
	free(good);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	return 0;
}

static size_t fuzz(const uint8_t *good, size_t len, size_t full_nev, unsigned iters,
		   size_t *variant_io, const char *name)
{
	uint8_t *d = malloc(len + 4096);
	size_t variant = *variant_io, ok = 0;
	static size_t offs[4096];
	size_t nchunks = chunk_offsets(good, len, offs, 4096);
	if (nchunks < 3) {
		fprintf(stderr, "the %s test trace has %zu chunks\n", name, nchunks);
		exit(1);
	}
	size_t header_end = offs[1]; /* a prefix without the complete HEADER fails */
	/* a prefix that ends where a SYMBOLS chunk starts is whole */
	size_t symbols_at = len;
	for (size_t i = 0; i < nchunks; i++)
		if (good[offs[i] + 4] == AP_CHUNK_SYMBOLS) {
			symbols_at = offs[i];
			break;
		}

	/* 1. Cut at every byte: a prefix reads (truncated) once it holds the
	 * HEADER; before that it fails. Events only ever get fewer. */
	for (size_t cut = 0; cut < len; cut++, variant++) {
		struct ap_trace *t = NULL;
		struct ap_error err;
		int rc = ap_trace_read_mem(good, cut, "v.trace", &t, &err);
		if (ap_trace_load_events(t, &err) < 0)
			fail("prefix's events", variant, err.msg);
		if ((rc == 0) != (cut >= header_end)) {
			char msg[1200];
			snprintf(msg, sizeof(msg), "cut at %zu: rc %d: %s", cut, rc,
				 rc ? err.msg : "");
			fail("prefix", variant, msg);
		}
		if (t) {
			if ((!t->truncated && cut != symbols_at) || t->nev > full_nev)
				fail("prefix not truncated or too many events", variant,
				     t->truncated_why);
			ap_trace_free(t);
		}
	}

	/* 2. Random bytes overwritten, checksums left as they are. */
	for (unsigned i = 0; i < iters; i++, variant++) {
		memcpy(d, good, len);
		unsigned n = 1 + (unsigned)(rnd() % 8);
		for (unsigned k = 0; k < n; k++)
			d[rnd() % len] = (uint8_t)rnd();
		ok += try_read(d, len, variant) > 0;
	}

	/* 3. The same inside one chunk, with its checksums fixed up so the
	 * decoders see the garbage; sometimes the length or type too. */
	for (unsigned i = 0; i < iters * 2; i++, variant++) {
		memcpy(d, good, len);
		size_t c = 1 + rnd() % (nchunks - 1);
		if (i % 7 == 0)
			c = 0; /* the HEADER */
		size_t o = offs[c];
		size_t plen = ap_get_u32le(d + o + 12);
		unsigned n = 1 + (unsigned)(rnd() % 4);
		for (unsigned k = 0; k < n && plen; k++) {
			size_t at = o + AP_CHUNK_HDR_LEN + rnd() % plen;
			switch (rnd() % 4) {
			case 0:
				d[at] = (uint8_t)rnd();
				break;
			case 1:
				d[at] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 2:
				d[at] = 0xff; /* long varints */
				break;
			default:
				d[at] = (uint8_t)(rnd() % 4); /* small tags and values */
			}
		}
		if (rnd() % 10 == 0)
			d[o + 4] = (uint8_t)(rnd() % 6);
		if (rnd() % 10 == 0)
			d[o + 5] = (uint8_t)(rnd() % 5); /* chunk flags */
		else if (rnd() % 20 == 0)
			d[o + 5] ^= AP_CHUNK_F_GAPS; /* one more column length, or one less */
		if (rnd() % 10 == 0)
			ap_put_u32le(d + o + 12, (uint32_t)(rnd() % (plen + 64)));
		fix_crcs(d, len, o);
		ok += try_read(d, len, variant) > 0;
	}

	/* 4. Whole random chunks of every type after a valid prefix. */
	for (unsigned i = 0; i < iters; i++, variant++) {
		size_t keep = offs[rnd() % nchunks];
		if (keep < header_end)
			keep = header_end;
		memcpy(d, good, keep);
		size_t plen = rnd() % 200;
		uint8_t *p = d + keep + AP_CHUNK_HDR_LEN;
		for (size_t k = 0; k < plen; k++)
			p[k] = (uint8_t)(rnd() % 3 ? rnd() % 8 : rnd());
		uint8_t type = (uint8_t)(1 + rnd() % 4);
		if (type == AP_CHUNK_EVENTS && plen >= 8)
			ap_put_u64le(p, rnd() % 2 ? rnd() : 1000000000ull);
		/* sometimes in columns (as the compactor writes them), with
		 * small column lengths up front */
		uint8_t flags = type == AP_CHUNK_EVENTS && rnd() % 3 == 0
				    ? AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
					  AP_CHUNK_F_XOWN
				    : 0;
		/* half of those with gaps: six column lengths, else five (the
		 * frees resolved: every payload in columns) */
		if (flags && rnd() % 2)
			flags |= AP_CHUNK_F_GAPS;
		int nlen = (flags & AP_CHUNK_F_GAPS) ? 6 : 5;
		if (flags && plen >= (size_t)nlen)
			for (int k = 0; k < nlen; k++)
				p[k] = (uint8_t)(rnd() % (plen / 2 + 1) % 128);
		/* mostly in a stream where it may come (index 0 of a new one) */
		uint32_t tid = (uint32_t)(rnd() % 4 + 100);
		ap_chunk_header_flags(d + keep, type, flags, tid, ap_stream_of(type, tid + 50),
				      rnd() % 4 ? 0 : (uint32_t)(rnd() % 3), p, (uint32_t)plen);
		ok += try_read(d, keep + AP_CHUNK_HDR_LEN + plen, variant) > 0;
	}

	size_t n = variant - *variant_io;
	printf("%s: %zu variants (%zu bytes, %zu chunks, %zu events): %zu read, %zu rejected\n",
	       name, n, len, nchunks, full_nev, ok + (len - header_end),
	       n - ok - (len - header_end));
	*variant_io = variant;
	free(d);
	return ok;
}
