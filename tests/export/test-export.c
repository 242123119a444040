/* Unit tests of the export model and its renderers on the fixture trace of
 * tests/report (real call chains of fixture.c, counts fixed by fixture.h):
 * folded lines and JSON values by construction, the drop_frames regex for
 * allocator wrappers given with --drop-frames (conflicts included), and
 * the pprof writer's counts. go tool pprof reads the same output in
 * pprof.sh. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ap_export.h"
#include "fixture.h"

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);        \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
			failures++;                                           \
		}                                                             \
	} while (0)

struct loaded {
	struct ap_trace *t;
	struct ap_symbolizer *sym;
	struct ap_export *x;
};

static struct loaded load_tw(struct ap_tw *tw, const char *drop)
{
	struct loaded l;
	uint8_t *data;
	size_t len;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, &len, &err) ||
	    ap_trace_read_mem(data, len, "fixture", &l.t, &err)) {
		fprintf(stderr, "fixture: %s\n", err.msg);
		exit(1);
	}
	free(data);
	struct ap_sym_options so = { .drop_frames = drop };
	l.sym = ap_sym_new(l.t, &so, &err);
	if (!l.sym) {
		fprintf(stderr, "ap_sym_new: %s\n", err.msg);
		exit(1);
	}
	l.x = ap_export_new(l.t, NULL, l.sym, NULL, NULL, &err);
	if (!l.x) {
		fprintf(stderr, "ap_export_new: %s\n", err.msg);
		exit(1);
	}
	return l;
}

static void unload(struct loaded *l)
{
	ap_export_free(l->x);
	ap_sym_free(l->sym);
	ap_trace_free(l->t);
}

static void check_folded(const struct ap_export *x, enum ap_sample_index si,
			 const char *want)
{
	struct ap_buf b = AP_BUF_INIT;
	size_t n = ap_export_folded(x, si, &b);
	size_t lines = 0;
	for (const char *p = want; *p; p++)
		lines += *p == '\n';
	CHECK(!strcmp(b.buf, want) && n == lines,
	      "folded %s: got %zu lines:\n%s\nwant:\n%s", ap_sample_index_name(si), n, b.buf, want);
	ap_buf_release(&b);
}

static void test_folded(void)
{
	struct loaded l = load_tw(fx_build(1), NULL);
	CHECK(l.x->nstacks == 8, "stacks: %zu, want 8", l.x->nstacks);
	/* lines sorted; grow's malloc and realloc stacks fold into one line */
	check_folded(l.x, AP_SI_ALLOC_OBJECTS,
		     "fx_build;alloc_big 5\n"
		     "fx_build;alloc_small 100\n"
		     "fx_build;grow 3\n"
		     "fx_build;parse 10\n"
		     "fx_build;parse;make_token 30\n"
		     "fx_build;use_wrapper;wrap_alloc 4\n"
		     "fx_build;walk;walk;walk;walk 7\n");
	check_folded(l.x, AP_SI_ALLOC_SPACE,
		     "fx_build;alloc_big 20480\n"
		     "fx_build;alloc_small 1600\n"
		     "fx_build;grow 700\n"
		     "fx_build;parse 640\n"
		     "fx_build;parse;make_token 960\n"
		     "fx_build;use_wrapper;wrap_alloc 1024\n"
		     "fx_build;walk;walk;walk;walk 896\n");
	/* only what is live at the end: 10 small, 5 big, 7 walk, grow's last */
	check_folded(l.x, AP_SI_INUSE_OBJECTS,
		     "fx_build;alloc_big 5\n"
		     "fx_build;alloc_small 10\n"
		     "fx_build;grow 1\n"
		     "fx_build;walk;walk;walk;walk 7\n");
	check_folded(l.x, AP_SI_INUSE_SPACE,
		     "fx_build;alloc_big 20480\n"
		     "fx_build;alloc_small 160\n"
		     "fx_build;grow 400\n"
		     "fx_build;walk;walk;walk;walk 896\n");
	unload(&l);

	/* An allocator wrapper: its frame leaves the folded stack. */
	l = load_tw(fx_build(1), "wrap_alloc");
	struct ap_buf b = AP_BUF_INIT;
	ap_export_folded(l.x, AP_SI_ALLOC_OBJECTS, &b);
	CHECK(strstr(b.buf, "\nfx_build;use_wrapper 4\n") && !strstr(b.buf, "wrap_alloc"),
	      "folded with --drop-frames wrap_alloc:\n%s", b.buf);
	ap_buf_release(&b);
	unload(&l);
}

static void test_sizes(void)
{
	struct loaded l = load_tw(fx_build(1), NULL);
	size_t with_size = 0;
	for (size_t i = 0; i < l.x->nstacks; i++) {
		const struct ap_export_stack *s = &l.x->stacks[i];
		const char *site = s->frames[s->site].func;
		uint64_t want = !strcmp(site, "alloc_small") ? FX_SZ_SMALL :
				!strcmp(site, "alloc_big") ? FX_SZ_BIG :
				!strcmp(site, "make_token") ? FX_SZ_TOKEN :
				!strcmp(site, "parse") ? FX_SZ_PARSE :
				!strcmp(site, "walk") ? FX_SZ_WALK :
				!strcmp(site, "wrap_alloc") ? FX_SZ_WRAP : 0;
		if (!strcmp(site, "grow"))	/* malloc(100) alone, realloc 200 then 400 */
			want = s->v[AP_SI_ALLOC_OBJECTS] == 1 ? FX_GROW0 : 0;
		CHECK(s->size == want, "stack %u (%s): size %lu, want %lu", s->id, site,
		      (unsigned long)s->size, (unsigned long)want);
		with_size += s->size != 0;
	}
	CHECK(with_size == 7, "stacks with one size: %zu, want 7", with_size);
	unload(&l);
}

static void check_drop(const char *drop, const char *want, size_t want_stripped)
{
	struct loaded l = load_tw(fx_build(1), drop);
	struct ap_buf b = AP_BUF_INIT;
	ap_export_drop_frames(l.x, &b);
	CHECK(!strcmp(b.buf, want), "--drop-frames '%s': drop_frames '%s', want '%s'",
	      drop ? drop : "", b.buf, want);
	struct ap_pprof_stats st;
	struct ap_error err;
	ap_buf_reset(&b);
	CHECK(ap_export_pprof(l.x, AP_SI_ALLOC_SPACE, false, &b, &st, &err) == 0, "pprof: %s",
	      err.msg);
	CHECK(st.stripped == want_stripped, "--drop-frames '%s': %zu stacks stripped, want %zu",
	      drop ? drop : "", st.stripped, want_stripped);
	ap_buf_release(&b);
	unload(&l);
}

static void test_drop_frames(void)
{
	check_drop(NULL, "", 0);
	check_drop("wrap_alloc", "wrap_alloc", 0);
	/* recursion: every walk frame is an allocator frame */
	check_drop("walk", "walk", 0);
	check_drop("make_token|parse", "make_token|parse", 0);
	check_drop("alloc_(small|big)", "alloc_big|alloc_small", 0);
	/* parse is an allocator frame of its own stack but the caller of
	 * make_token's call site: pprof would cut make_token's stack at it, so
	 * it is not named, and its own stack goes without its allocator
	 * frame */
	check_drop("wrap_alloc|parse", "wrap_alloc", 1);
}

static void test_pprof_counts(void)
{
	struct loaded l = load_tw(fx_build(1), NULL);
	struct ap_buf raw = AP_BUF_INIT, gz = AP_BUF_INIT;
	struct ap_pprof_stats st, st2;
	struct ap_error err;
	CHECK(ap_export_pprof(l.x, AP_SI_ALLOC_SPACE, false, &raw, &st, &err) == 0, "%s", err.msg);
	CHECK(ap_export_pprof(l.x, AP_SI_ALLOC_SPACE, true, &gz, &st2, &err) == 0, "%s", err.msg);
	/* 8 stacks; the 9 functions of the fixture; one mapping (the
	 * executable); 17 return addresses: 8 into grab, 6 in fx_build, 1 each
	 * in parse, walk (every level) and use_wrapper */
	CHECK(st.samples == 8 && st.functions == 9 && st.mappings == 1 && st.locations == 17,
	      "pprof: %zu samples, %zu functions, %zu mappings, %zu locations; want 8, 9, 1, 17",
	      st.samples, st.functions, st.mappings, st.locations);
	CHECK(st.raw_bytes == raw.len && st2.raw_bytes == raw.len, "raw size %zu / %zu vs %zu",
	      st.raw_bytes, st2.raw_bytes, raw.len);
	uLongf n = raw.len + 1;
	uint8_t *back = malloc(n);
	z_stream z;
	memset(&z, 0, sizeof(z));
	inflateInit2(&z, 15 + 16);
	z.next_in = (Bytef *)gz.buf;
	z.avail_in = (uInt)gz.len;
	z.next_out = back;
	z.avail_out = (uInt)n;
	int rc = inflate(&z, Z_FINISH);
	CHECK(rc == Z_STREAM_END && z.total_out == raw.len && !memcmp(back, raw.buf, raw.len),
	      "gzip'd profile does not inflate to the raw one");
	inflateEnd(&z);
	/* string_table[0] is "": the field-6 entry of length 0 exists */
	CHECK(memmem(raw.buf, raw.len, "\x32\x00", 2) != NULL, "no empty string in the table");
	free(back);
	ap_buf_release(&raw);
	ap_buf_release(&gz);
	unload(&l);
}

static void test_json(const char *src)
{
	struct loaded l = load_tw(fx_build(1), NULL);
	struct ap_buf b = AP_BUF_INIT;
	struct ap_error err;
	CHECK(ap_export_json(l.x, AP_SI_ALLOC_SPACE, &b, &err) == 0, "%s", err.msg);
	json_error_t jerr;
	json_t *root = json_loads(b.buf, 0, &jerr);
	CHECK(root, "json: %s", jerr.text);
	if (!root)
		goto out;
	json_t *stacks = json_object_get(root, "stacks");
	json_int_t total = json_integer_value(json_object_get(json_object_get(root, "totals"),
							      "alloc_objects"));
	CHECK(total == FX_N_SMALL + FX_N_BIG + FX_N_PARSE + FX_N_TOKEN + FX_N_WALK + FX_N_WRAP + 3,
	      "json totals.alloc_objects %lld", (long long)total);
	CHECK(json_array_size(stacks) == 8, "json: %zu stacks", json_array_size(stacks));
	CHECK(json_integer_value(json_object_get(root, "rate")) == 1, "json rate");
	CHECK(json_array_size(json_object_get(root, "sample_types")) == AP_SI_COUNT, "json sample_types");
	/* sorted by alloc_space: alloc_big first */
	json_t *s0 = json_array_get(stacks, 0);
	json_t *f0 = json_array_get(json_object_get(s0, "frames"), 0);
	const char *file = json_string_value(json_object_get(f0, "file"));
	CHECK(!strcmp(json_string_value(json_object_get(f0, "function")), "alloc_big") &&
	      json_integer_value(json_object_get(f0, "line")) == fx_line(src, "L:big") &&
	      file && strstr(file, "fixture.c") && json_is_false(json_object_get(f0, "inlined")),
	      "json: first stack's call site is not alloc_big at L:big:\n%s", b.buf);
	CHECK(json_integer_value(json_object_get(s0, "alloc_space")) == FX_N_BIG * FX_SZ_BIG &&
	      json_integer_value(json_object_get(s0, "inuse_objects")) == FX_N_BIG &&
	      json_integer_value(json_object_get(s0, "size")) == FX_SZ_BIG,
	      "json: alloc_big's values");
	json_decref(root);
out:
	ap_buf_release(&b);
	unload(&l);
}

/* A stack of depth 0 and a PC outside every mapping: no crash, the names
 * `top` gives them. */
static void test_unknown(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	uint32_t empty = ap_tw_stack(tw, NULL, 0);
	uint64_t pc = 0x1234;
	uint32_t nomap = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, 1000, "main");
	ap_tw_alloc(tw, 1000, h.start_ns + 10, 0, AP_KIND_MALLOC, 0x10000, 24, empty);
	ap_tw_alloc(tw, 1000, h.start_ns + 20, 0, AP_KIND_MALLOC, 0x20000, 8, nomap);
	struct ap_tw_end end = { .end_ns = h.start_ns + 100, .reason = AP_END_EXIT };
	ap_tw_end(tw, &end);
	struct loaded l = load_tw(tw, NULL);
	struct ap_buf b = AP_BUF_INIT;
	ap_export_folded(l.x, AP_SI_ALLOC_SPACE, &b);
	CHECK(!strcmp(b.buf, "0x1234 8\n" AP_EXPORT_UNKNOWN " 24\n") ||
	      !strcmp(b.buf, AP_EXPORT_UNKNOWN " 24\n0x1234 8\n"),
	      "folded of unknown stacks:\n%s", b.buf);
	struct ap_pprof_stats st;
	struct ap_error err;
	ap_buf_reset(&b);
	CHECK(ap_export_pprof(l.x, AP_SI_ALLOC_SPACE, true, &b, &st, &err) == 0, "%s", err.msg);
	CHECK(st.samples == 2 && st.locations == 2 && st.mappings == 0,
	      "unknown stacks: %zu samples, %zu locations, %zu mappings", st.samples,
	      st.locations, st.mappings);
	ap_buf_release(&b);
	unload(&l);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Thousands of stacks over hundreds of return addresses in this program
 * (so they resolve to real functions): every distinct PC is one Location,
 * every stack one sample, and the tables grow many times on the way. */
static void test_many(void)
{
	struct ap_tw *tw = fx_build(1);
	enum { NSTACKS = 3000, DEPTH = 3 };
	static uint64_t all[NSTACKS * DEPTH];
	uint64_t base = (uint64_t)(uintptr_t)&test_folded;
	uint64_t ts = 2000000000;
	for (uint32_t i = 0; i < NSTACKS; i++) {
		uint64_t pcs[DEPTH] = { base + 1 + i % 700, base + 1 + (i * 7) % 301,
					(uint64_t)(uintptr_t)&test_json + 1 + i / 1000 };
		memcpy(all + i * DEPTH, pcs, sizeof(pcs));
		uint32_t st = ap_tw_stack(tw, pcs, DEPTH);
		ap_tw_alloc(tw, 1000, ts += 10, 0, AP_KIND_MALLOC, 0x100000000 + i * 64ULL,
			    i % 5 + 1, st);
	}
	struct ap_tw_end end = { .end_ns = ts + 10, .reason = AP_END_EXIT };
	ap_tw_end(tw, &end);
	qsort(all, NSTACKS * DEPTH, sizeof(all[0]), u64_cmp);
	size_t distinct = 0;
	for (size_t i = 0; i < NSTACKS * DEPTH; i++)
		distinct += i == 0 || all[i] != all[i - 1];

	struct loaded l = load_tw(tw, NULL);
	struct ap_buf b = AP_BUF_INIT;
	struct ap_pprof_stats st;
	struct ap_error err;
	CHECK(ap_export_pprof(l.x, AP_SI_ALLOC_SPACE, true, &b, &st, &err) == 0, "%s", err.msg);
	CHECK(st.samples == 8 + NSTACKS && st.locations == 17 + distinct,
	      "many stacks: %zu samples, %zu locations; want %d, %zu", st.samples,
	      st.locations, 8 + NSTACKS, 17 + distinct);
	ap_buf_reset(&b);
	size_t n = ap_export_folded(l.x, AP_SI_ALLOC_OBJECTS, &b);
	CHECK(n > 7 && n <= 7 + NSTACKS, "many stacks: %zu folded lines", n);
	ap_buf_release(&b);
	unload(&l);
}

int main(void)
{
	test_folded();
	test_sizes();
	test_drop_frames();
	test_pprof_counts();
	test_json(FIXTURE_SRC);
	test_unknown();
	test_many();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
