/* The SYMBOLS payload (trace/symtab.c): what the writer writes the decoder
 * gives back, split payloads, every cut and bad field refused without
 * touching the table, and the chunk's place in a trace (nothing but
 * SYMBOLS after it, in its own stream) as the reader checks it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_check.h"
#include "ap_symtab.h"
#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "ap_trace_writer.h"

static const uint8_t bid[] = {0xde, 0xad, 0xbe, 0xef};

/* Two modules and a perf map: PCs of one frame, an inline chain of
 * three, a frame with no name and no file. */
static struct ap_symtab_writer *small_writer(void)
{
	struct ap_symtab_writer *w = ap_symtab_writer_new();
	ap_symtab_writer_module(w, "/usr/bin/app", bid, sizeof(bid), AP_SYMTAB_HAS_LINES);
	ap_symtab_writer_pc(w, 0x1010, 1);
	ap_symtab_writer_frame(w, "main", "/src/app.c", 12, 3);
	ap_symtab_writer_pc(w, 0x2000, 3);
	ap_symtab_writer_frame(w, "_ZN3geo4makeEv", "/src/geo.h", 40, 0);
	ap_symtab_writer_frame(w, "helper", "/src/app.c", 30, 9);
	ap_symtab_writer_frame(w, "parse", "/src/app.c", 77, 1);
	ap_symtab_writer_pc(w, 0x2004, 1);
	ap_symtab_writer_frame(w, NULL, NULL, 0, 0);
	ap_symtab_writer_module(w, "/lib/libc.so.6", NULL, 0, 0);
	ap_symtab_writer_pc(w, 0x99, 1);
	ap_symtab_writer_frame(w, "malloc", NULL, 0, 0);
	ap_symtab_writer_module(w, "/tmp/perf-7.map", NULL, 0, AP_SYMTAB_PERF_MAP);
	ap_symtab_writer_pc(w, 0x7f0000001000, 1);
	ap_symtab_writer_frame(w, "jit_fn", NULL, 0, 0);
	return w;
}

static void test_roundtrip(void)
{
	struct ap_symtab_writer *w = small_writer();
	const struct ap_buf *pl;
	size_t n = ap_symtab_writer_payloads(w, &pl);
	CHECK(n == 1, "%zu payloads", n);
	struct ap_symtab tab = {0};
	char why[200];
	CHECK(ap_symtab_decode(&tab, (const uint8_t *)pl[0].buf, pl[0].len, why, sizeof(why)) == 0,
	      "%s", why);
	CHECK(tab.nmods == 3, "%zu modules", tab.nmods);
	if (tab.nmods == 3) {
		const struct ap_symtab_module *m = &tab.mods[0];
		CHECK(!strcmp(m->path, "/usr/bin/app"), "%s", m->path);
		CHECK(m->build_id_len == 4 && !memcmp(m->build_id, bid, 4), "build-id");
		CHECK(m->flags == AP_SYMTAB_HAS_LINES, "flags %u", m->flags);
		CHECK(m->npcs == 3 && m->nframes == 5, "%zu pcs %zu frames", m->npcs, m->nframes);
		uint32_t k = 0;
		const struct ap_symtab_frame *f = ap_symtab_lookup(m, 0x2000, &k);
		CHECK(f && k == 3, "0x2000: %u frames", k);
		if (f && k == 3) {
			CHECK(!strcmp(f[0].name, "_ZN3geo4makeEv") && !strcmp(f[0].file, "/src/geo.h") &&
			      f[0].line == 40 && f[0].column == 0, "frame 0");
			CHECK(!strcmp(f[2].name, "parse") && f[2].line == 77 && f[2].column == 1,
			      "frame 2");
		}
		f = ap_symtab_lookup(m, 0x2004, &k);
		CHECK(f && k == 1 && !f[0].name && !f[0].file && !f[0].line, "nameless frame");
		f = ap_symtab_lookup(m, 0x1010, &k);
		CHECK(f && k == 1 && !strcmp(f[0].name, "main") && f[0].line == 12, "main");
		CHECK(!ap_symtab_lookup(m, 0x2002, &k) && !ap_symtab_lookup(m, 0, &k) &&
		      !ap_symtab_lookup(m, 0x3000, &k), "PCs it does not name");
		CHECK(tab.mods[1].build_id_len == 0 && tab.mods[1].npcs == 1, "libc");
		CHECK(tab.mods[2].flags == AP_SYMTAB_PERF_MAP &&
		      ap_symtab_lookup(&tab.mods[2], 0x7f0000001000, &k), "perf map");
	}
	/* a whole run: the modules move with their process */
	struct ap_symtab run = {0};
	ap_symtab_take(&run, &tab, 3);
	CHECK(run.nmods == 3 && run.mods[0].proc == 3 && tab.nmods == 0, "take");
	ap_symtab_release(&run);
	ap_symtab_release(&tab);
	ap_symtab_writer_free(w);
}

/* Every cut and a set of bad fields: refused, and the table keeps what
 * it had. */
static void test_bad(void)
{
	struct ap_symtab_writer *w = small_writer();
	const struct ap_buf *pl;
	ap_symtab_writer_payloads(w, &pl);
	const uint8_t *p = (const uint8_t *)pl[0].buf;
	size_t len = pl[0].len;
	struct ap_symtab tab = {0};
	char why[200];
	CHECK(ap_symtab_decode(&tab, p, len, why, sizeof(why)) == 0, "%s", why);
	size_t had = tab.nmods;
	for (size_t cut = 0; cut < len; cut++) {
		CHECK(ap_symtab_decode(&tab, p, cut, why, sizeof(why)) < 0, "cut at %zu accepted",
		      cut);
		CHECK(tab.nmods == had, "cut at %zu left %zu modules", cut, tab.nmods);
	}
	uint8_t *q = malloc(len + 1);
	memcpy(q, p, len);
	q[len] = 0;
	CHECK(ap_symtab_decode(&tab, q, len + 1, why, sizeof(why)) < 0 &&
	      strstr(why, "bytes after"), "a byte after: %s", why);
	/* flip every byte: decoded or refused, never a crash (ASan) */
	for (size_t i = 0; i < len; i++) {
		memcpy(q, p, len);
		q[i] ^= 0x5a;
		struct ap_symtab t2 = {0};
		if (ap_symtab_decode(&t2, q, len, why, sizeof(why)) == 0)
			for (size_t m = 0; m < t2.nmods; m++)
				for (size_t k = 1; k < t2.mods[m].npcs; k++)
					CHECK(t2.mods[m].pcs[k].offset > t2.mods[m].pcs[k - 1].offset,
					      "flip %zu: PCs out of order", i);
		ap_symtab_release(&t2);
	}
	free(q);
	/* hand-made: a string index past the table; unknown module flags; a
	 * PC not after the one before; a PC with no frames */
	static const uint8_t past[] = {1, 1, 'a', 1, 2, 0, 0, 0};
	static const uint8_t flags[] = {1, 1, 'a', 1, 1, 0, 9, 0};
	static const uint8_t order[] = {1, 1, 'a', 1, 1, 0, 0, 2, 5, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
	static const uint8_t noframe[] = {1, 1, 'a', 1, 1, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0};
	struct {
		const uint8_t *p;
		size_t n;
		const char *says;
	} cases[] = {
	    {past, sizeof(past), "string index"},
	    {flags, sizeof(flags), "module flags"},
	    {order, sizeof(order), "ascending"},
	    {noframe, sizeof(noframe), "no frames"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(ap_symtab_decode(&tab, cases[i].p, cases[i].n, why, sizeof(why)) < 0 &&
		      strstr(why, cases[i].says), "case %zu: %s", i, why);
		CHECK(tab.nmods == had, "case %zu kept modules", i);
	}
	ap_symtab_release(&tab);
	ap_symtab_writer_free(w);
}

/* More than a payload holds: the module goes on in the next one, and
 * every PC is found in one of them. */
static void test_split(void)
{
	struct ap_symtab_writer *w = ap_symtab_writer_new();
	ap_symtab_writer_module(w, "/big", NULL, 0, 0);
	char name[64];
	const uint64_t npcs = 400000;
	for (uint64_t i = 0; i < npcs; i++) {
		snprintf(name, sizeof(name), "function_number_%llu_with_a_long_name",
			 (unsigned long long)i);
		ap_symtab_writer_pc(w, 16 * i + 16, 1);
		ap_symtab_writer_frame(w, name, "/src/big.c", (uint32_t)i, 1);
	}
	const struct ap_buf *pl;
	size_t n = ap_symtab_writer_payloads(w, &pl);
	CHECK(n >= 2, "%zu payloads", n);
	struct ap_symtab tab = {0};
	char why[200];
	for (size_t i = 0; i < n; i++) {
		CHECK(pl[i].len <= AP_SYMTAB_PAYLOAD_TARGET + 4096, "payload %zu: %zu bytes", i,
		      pl[i].len);
		CHECK(ap_symtab_decode(&tab, (const uint8_t *)pl[i].buf, pl[i].len, why,
				       sizeof(why)) == 0, "%s", why);
	}
	size_t total = 0;
	for (size_t m = 0; m < tab.nmods; m++)
		total += tab.mods[m].npcs;
	CHECK(total == npcs, "%zu PCs of %llu", total, (unsigned long long)npcs);
	uint64_t probe[] = {16, 16 * (npcs / 2) + 16, 16 * npcs};
	for (size_t i = 0; i < 3; i++) {
		const struct ap_symtab_frame *f = NULL;
		uint32_t k;
		for (size_t m = 0; m < tab.nmods && !f; m++)
			f = ap_symtab_lookup(&tab.mods[m], probe[i], &k);
		snprintf(name, sizeof(name), "function_number_%llu_with_a_long_name",
			 (unsigned long long)(probe[i] / 16 - 1));
		CHECK(f && !strcmp(f->name, name) && f->line == probe[i] / 16 - 1, "PC %#llx",
		      (unsigned long long)probe[i]);
	}
	ap_symtab_release(&tab);
	ap_symtab_writer_free(w);
}

static void write_trace(const char *path, bool end)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	struct ap_segment seg = {0, 0x10000, 0, 5};
	ap_tw_mapping(tw, 0x400000, "/usr/bin/app", bid, sizeof(bid), &seg, 1);
	uint64_t pcs[] = {0x401010, 0x402000};
	uint32_t st = ap_tw_stack(tw, pcs, 2);
	ap_tw_thread(tw, 1, "main");
	ap_tw_alloc(tw, 1, 10, 0, AP_KIND_MALLOC, 0x1000, 64, st);
	if (end) {
		struct ap_tw_end e = {.end_ns = 50, .reason = AP_END_EXIT};
		ap_tw_end(tw, &e);
	}
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
}

static void append_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "ab");
	CHECK(f && fwrite(p, 1, n, f) == n, "append");
	if (f)
		fclose(f);
}

/* The chunk in a trace: kept after END, read back with the trace, refused
 * anywhere else and with anything after it. */
static void test_in_trace(void)
{
	char path[] = "/tmp/test-symtab-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	struct ap_error err;
	struct ap_trace *t;
	for (int level = 0; level <= 3; level += 3) {
		write_trace(path, true);
		struct ap_symtab_writer *w = small_writer();
		CHECK(ap_symtab_append(path, w, level, 0, &err) == 0, "%s", err.msg);
		ap_symtab_writer_free(w);
		CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "level %d: %s", level, err.msg);
		if (t) {
			CHECK(t->symtab.nmods == 3 && !t->truncated && t->has_end,
			      "level %d: %zu modules", level, t->symtab.nmods);
			ap_trace_free(t);
		}
	}
	/* a chunk after it */
	uint8_t hdr[AP_CHUNK_HDR_LEN], pl[1] = {0};
	ap_chunk_header(hdr, AP_CHUNK_META, 0, AP_STREAM_META, 1, pl, 1);
	append_bytes(path, hdr, sizeof(hdr));
	append_bytes(path, pl, 1);
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) < 0 && strstr(err.msg, "after SYMBOLS"),
	      "META after SYMBOLS: %s", err.msg);
	/* a trace without END keeps them too, and reads as truncated */
	write_trace(path, false);
	struct ap_symtab_writer *w = small_writer();
	CHECK(ap_symtab_append(path, w, 0, 0, &err) == 0, "%s", err.msg);
	ap_symtab_writer_free(w);
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "SYMBOLS without END: %s", err.msg);
	if (t) {
		CHECK(t->truncated && !t->has_end && t->symtab.nmods == 3, "without END");
		ap_trace_free(t);
	}
	/* in another stream */
	write_trace(path, true);
	static const uint8_t one[] = {0, 0};
	ap_chunk_header(hdr, AP_CHUNK_SYMBOLS, 0, 5, 0, one, sizeof(one));
	append_bytes(path, hdr, sizeof(hdr));
	append_bytes(path, one, sizeof(one));
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) < 0 && strstr(err.msg, "in stream 5"),
	      "SYMBOLS in stream 5: %s", err.msg);
	/* a bad payload behind good checksums */
	write_trace(path, true);
	static const uint8_t bad[] = {1, 1, 'a', 1, 2, 0, 0, 0};
	ap_chunk_header(hdr, AP_CHUNK_SYMBOLS, 0, AP_STREAM_SYMBOLS, 0, bad, sizeof(bad));
	append_bytes(path, hdr, sizeof(hdr));
	append_bytes(path, bad, sizeof(bad));
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) < 0 && strstr(err.msg, "SYMBOLS payload"),
	      "bad payload: %s", err.msg);
	unlink(path);
}

static size_t file_size(const char *path)
{
	struct stat st;
	CHECK(stat(path, &st) == 0, "stat %s", path);
	return (size_t)st.st_size;
}

/* A trace compacted (as `record` leaves it) says in its END how many
 * SYMBOLS chunks follow: 0 until they are appended, then their count,
 * so that a copy cut exactly before them reads as cut; one whose
 * symbols were never kept (--no-symbols) does not. */
static void test_cut_before(void)
{
	char path[] = "/tmp/test-symtab-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	struct ap_error err;
	struct ap_compact_stats st;
	struct ap_trace *t = NULL;
	write_trace(path, true);
	CHECK(ap_trace_compact(path, 3, &st, &err) == 0, "compact: %s", err.msg);
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "compacted: %s", err.msg);
	if (!t)
		return;
	CHECK(!t->truncated && t->has_end && t->symbols_said == 0 && t->end_off > 0,
	      "compacted, no symbols: truncated %d (%s), said %llu", t->truncated,
	      t->truncated_why, (unsigned long long)t->symbols_said);
	size_t end_off = t->end_off, before = file_size(path);
	ap_trace_free(t);
	struct ap_symtab_writer *w = small_writer();
	CHECK(ap_symtab_append(path, w, 3, end_off, &err) == 0, "%s", err.msg);
	ap_symtab_writer_free(w);
	CHECK(file_size(path) > before, "nothing appended");
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "with symbols: %s", err.msg);
	if (t) {
		CHECK(!t->truncated && t->symbols_said == 1 && t->symbols_chunks == 1 &&
			  t->symtab.nmods == 3,
		      "with symbols: truncated %d (%s), said %llu, chunks %llu", t->truncated,
		      t->truncated_why, (unsigned long long)t->symbols_said,
		      (unsigned long long)t->symbols_chunks);
		ap_trace_free(t);
	}
	/* the file cut where its symbols start: every event, and the cut said */
	CHECK(truncate(path, (off_t)before) == 0, "truncate");
	CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "cut before: %s", err.msg);
	if (t) {
		CHECK(t->truncated && t->has_end && t->symtab.nmods == 0 &&
			  strstr(t->truncated_why, "before its symbols (0 of 1 SYMBOLS chunks)"),
		      "cut before the symbols: truncated %d (%s)", t->truncated, t->truncated_why);
		CHECK(t->nev == 1, "cut before the symbols: %llu events",
		      (unsigned long long)t->nev);
		ap_trace_free(t);
	}
	unlink(path);
}

int main(void)
{
	test_roundtrip();
	test_bad();
	test_split();
	test_in_trace();
	test_cut_before();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
