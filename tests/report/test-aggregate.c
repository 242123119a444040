/* Unit tests of the aggregation (report/): the fixture trace (real PCs of
 * fixture.c, symbolized for real) gives flat/cum per function, line and
 * file exactly as the fixture's constants say, with recursion counted
 * once, focus/ignore/drop_frames applied, and sampling weights applied. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_report.h"
#include "fixture.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static struct ap_trace *load(uint64_t rate)
{
	uint8_t *data;
	size_t len;
	struct ap_error err;
	struct ap_trace *t;
	if (ap_tw_close_mem(fx_build(rate), &data, &len, &err) ||
	    ap_trace_read_mem(data, len, "fixture", &t, &err)) {
		fprintf(stderr, "fixture: %s\n", err.msg);
		exit(1);
	}
	free(data);
	return t;
}

static struct ap_symbolizer *symbolizer(const struct ap_trace *t, const char *drop)
{
	struct ap_sym_options so = {.drop_frames = drop};
	struct ap_error err;
	struct ap_symbolizer *s = ap_sym_new(t, &so, &err);
	if (!s) {
		fprintf(stderr, "ap_sym_new: %s\n", err.msg);
		exit(1);
	}
	return s;
}

static const struct ap_report_row *row(const struct ap_report *r, const char *name)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].name, name))
			return &r->rows[i];
	return NULL;
}

static const struct ap_report_row *line_row(const struct ap_report *r, const char *func, int line)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].func, func) && r->rows[i].line == line)
			return &r->rows[i];
	return NULL;
}

static struct ap_report *report(const struct ap_trace *t, struct ap_symbolizer *s,
				enum ap_sample_index si, enum ap_granularity g, const char *focus,
				const char *ignore)
{
	struct ap_report_options o = {.sample_index = si, .granularity = g, .focus = focus, .ignore = ignore};
	struct ap_error err;
	struct ap_report *r = ap_report_new(t, NULL, s, &o, NULL, NULL, &err);
	if (!r) {
		fprintf(stderr, "ap_report_new: %s\n", err.msg);
		exit(1);
	}
	return r;
}

static void expect(const struct ap_report *r, const char *name, double flat, double cum)
{
	const struct ap_report_row *w = row(r, name);
	if (!w) {
		CHECK(flat == 0 && cum == 0, "%s %s: no row, expected flat %g cum %g",
		      ap_sample_index_name(r->sample_index), name, flat, cum);
		return;
	}
	CHECK(near(w->flat, flat) && near(w->cum, cum), "%s %s: flat %g cum %g, expected %g %g",
	      ap_sample_index_name(r->sample_index), name, w->flat, w->cum, flat, cum);
}

/* Expected per function for one sample index, from the constants: the
 * objects and bytes of each site, and which blocks stay live. */
struct site_values {
	double small, big, parse, token, walk, wrap, grow0, grow12;
};

static void expect_functions(const struct ap_report *r, const struct site_values *v)
{
	double total =
	    v->small + v->big + v->parse + v->token + v->walk + v->wrap + v->grow0 + v->grow12;
	CHECK(near(r->total, total), "%s total %g, expected %g",
	      ap_sample_index_name(r->sample_index), r->total, total);
	expect(r, "alloc_small", v->small, v->small);
	expect(r, "alloc_big", v->big, v->big);
	expect(r, "make_token", v->token, v->token);
	expect(r, "parse", v->parse, v->parse + v->token);
	/* Recursion: walk is on its stack FX_WALK_DEPTH + 1 times, once in cum. */
	expect(r, "walk", v->walk, v->walk);
	expect(r, "wrap_alloc", v->wrap, v->wrap);
	expect(r, "use_wrapper", 0, v->wrap);
	expect(r, "grow", v->grow0 + v->grow12, v->grow0 + v->grow12);
	expect(r, "fx_build", 0, total);
	for (size_t i = 1; i < r->nrows; i++) {
		const struct ap_report_row *a = &r->rows[i - 1], *b = &r->rows[i];
		CHECK(a->flat > b->flat || (a->flat == b->flat && strcmp(a->name, b->name) < 0),
		      "rows not sorted by flat then name: %s, %s", a->name, b->name);
	}
}

/* Weight of a sample of `size` at rate R, from docs/trace-format.md. */
static double weight(uint64_t size, uint64_t rate)
{
	return rate <= 1 ? 1 : 1 / (1 - exp(-(double)(size + 1) / (double)rate));
}

static void site_values(struct site_values out[AP_SI_COUNT], uint64_t R)
{
	double ws = weight(FX_SZ_SMALL, R), wb = weight(FX_SZ_BIG, R);
	double wp = weight(FX_SZ_PARSE, R), wt = weight(FX_SZ_TOKEN, R);
	double ww = weight(FX_SZ_WALK, R), wr = weight(FX_SZ_WRAP, R);
	double g0 = weight(FX_GROW0, R), g1 = weight(FX_GROW1, R), g2 = weight(FX_GROW2, R);
	out[AP_SI_ALLOC_OBJECTS] = (struct site_values){FX_N_SMALL * ws,
							FX_N_BIG * wb,
							FX_N_PARSE * wp,
							FX_N_TOKEN * wt,
							FX_N_WALK * ww,
							FX_N_WRAP * wr,
							g0,
							g1 + g2};
	out[AP_SI_ALLOC_SPACE] = (struct site_values){FX_N_SMALL * FX_SZ_SMALL * ws,
						      FX_N_BIG * FX_SZ_BIG * wb,
						      FX_N_PARSE * FX_SZ_PARSE * wp,
						      FX_N_TOKEN * FX_SZ_TOKEN * wt,
						      FX_N_WALK * FX_SZ_WALK * ww,
						      FX_N_WRAP * FX_SZ_WRAP * wr,
						      FX_GROW0 * g0,
						      FX_GROW1 * g1 + FX_GROW2 * g2};
	/* Live at the end: FX_KEEP_SMALL small blocks, every big and walk
	 * block, and the last block of the realloc chain. */
	out[AP_SI_INUSE_OBJECTS] =
	    (struct site_values){FX_KEEP_SMALL * ws, FX_N_BIG * wb, 0, 0, FX_N_WALK * ww, 0, 0, g2};
	out[AP_SI_INUSE_SPACE] = (struct site_values){FX_KEEP_SMALL * FX_SZ_SMALL * ws,
						      FX_N_BIG * FX_SZ_BIG * wb,
						      0,
						      0,
						      FX_N_WALK * FX_SZ_WALK * ww,
						      0,
						      0,
						      FX_GROW2 * g2};
}

static void test_functions(uint64_t rate)
{
	struct ap_trace *t = load(rate);
	struct ap_symbolizer *s = symbolizer(t, NULL);
	struct site_values v[AP_SI_COUNT];
	site_values(v, rate);
	/* The four indexes known by construction (the peak's are checked
	 * against the totals below). */
	for (int si = 0; si < AP_SI_PEAK_OBJECTS; si++) {
		struct ap_report *r = report(t, s, si, AP_GRAN_FUNCTIONS, NULL, NULL);
		expect_functions(r, &v[si]);
		ap_report_free(r);
	}

	/* The per-stack sums agree with the reader's own totals. */
	struct ap_error err;
	struct ap_stack_values *sv = ap_report_stack_values(t, &err);
	CHECK(sv, "%s", err.msg);
	struct ap_trace_totals tot;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	double sum[AP_SI_COUNT] = {0};
	for (size_t i = 0; i < t->nstacks; i++)
		for (int k = 0; k < AP_SI_COUNT; k++)
			sum[k] += sv[i].v[k];
	CHECK(near(sum[AP_SI_ALLOC_OBJECTS], tot.alloc_objects), "alloc_objects %g vs totals %g",
	      sum[AP_SI_ALLOC_OBJECTS], tot.alloc_objects);
	CHECK(near(sum[AP_SI_ALLOC_SPACE], tot.alloc_space), "alloc_space %g vs totals %g",
	      sum[AP_SI_ALLOC_SPACE], tot.alloc_space);
	CHECK(near(sum[AP_SI_INUSE_OBJECTS], tot.inuse_objects), "inuse_objects %g vs totals %g",
	      sum[AP_SI_INUSE_OBJECTS], tot.inuse_objects);
	CHECK(near(sum[AP_SI_INUSE_SPACE], tot.inuse_space), "inuse_space %g vs totals %g",
	      sum[AP_SI_INUSE_SPACE], tot.inuse_space);
	/* What was live at the peak adds up to stats' peak_inuse_space. */
	CHECK(near(sum[AP_SI_PEAK_SPACE], tot.peak_inuse_space), "peak_space %g vs totals %g",
	      sum[AP_SI_PEAK_SPACE], tot.peak_inuse_space);
	CHECK(sum[AP_SI_PEAK_OBJECTS] > 0, "peak_objects %g", sum[AP_SI_PEAK_OBJECTS]);
	free(sv);
	ap_sym_free(s);
	ap_trace_free(t);
}

static void test_lines_files(const char *src)
{
	struct ap_trace *t = load(1);
	struct ap_symbolizer *s = symbolizer(t, NULL);
	struct site_values v[AP_SI_COUNT];
	site_values(v, 1);
	const struct site_values *b = &v[AP_SI_ALLOC_SPACE];
	struct ap_report *r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_LINES, NULL, NULL);
	static const struct {
		const char *func, *tag;
		double flat, cum;
	} want[] = {
	    {"alloc_small", "L:small", FX_N_SMALL * FX_SZ_SMALL, FX_N_SMALL * FX_SZ_SMALL},
	    {"alloc_big", "L:big", FX_N_BIG * FX_SZ_BIG, FX_N_BIG * FX_SZ_BIG},
	    {"parse", "L:parse_self", FX_N_PARSE * FX_SZ_PARSE, FX_N_PARSE * FX_SZ_PARSE},
	    {"parse", "L:parse_call", 0, FX_N_TOKEN * FX_SZ_TOKEN},
	    {"make_token", "L:token", FX_N_TOKEN * FX_SZ_TOKEN, FX_N_TOKEN * FX_SZ_TOKEN},
	    {"walk", "L:walk_alloc", FX_N_WALK * FX_SZ_WALK, FX_N_WALK * FX_SZ_WALK},
	    /* three recursive frames on this line, counted once */
	    {"walk", "L:walk_rec", 0, FX_N_WALK * FX_SZ_WALK},
	    {"use_wrapper", "L:use_wrapper", 0, FX_N_WRAP * FX_SZ_WRAP},
	    {"grow", "L:grow_malloc", FX_GROW0, FX_GROW0},
	    {"grow", "L:grow_realloc", FX_GROW1 + FX_GROW2, FX_GROW1 + FX_GROW2},
	    {"fx_build", "L:call_small", 0, FX_N_SMALL * FX_SZ_SMALL},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int line = fx_line(src, want[i].tag);
		const struct ap_report_row *w = line_row(r, want[i].func, line);
		if (!w) {
			CHECK(0, "lines: no row for %s line %d (%s)", want[i].func, line,
			      want[i].tag);
			continue;
		}
		CHECK(w->flat == want[i].flat && w->cum == want[i].cum,
		      "lines: %s:%d flat %g cum %g, expected %g %g", want[i].func, line, w->flat,
		      w->cum, want[i].flat, want[i].cum);
		CHECK(w->file && strstr(w->file, "fixture.c"), "lines: %s file %s", w->name,
		      w->file ? w->file : "(null)");
		char name[512];
		snprintf(name, sizeof(name), "%s %s:%d", w->func, w->file, line);
		CHECK(!strcmp(w->name, name), "lines: name '%s', expected '%s'", w->name, name);
	}
	ap_report_free(r);

	r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_FILES, NULL, NULL);
	double total =
	    b->small + b->big + b->parse + b->token + b->walk + b->wrap + b->grow0 + b->grow12;
	CHECK(r->nrows == 1 && strstr(r->rows[0].name, "fixture.c") && r->rows[0].flat == total &&
		  r->rows[0].cum == total,
	      "files: %zu rows, first %s", r->nrows, r->nrows ? r->rows[0].name : "-");
	ap_report_free(r);
	ap_sym_free(s);
	ap_trace_free(t);
}

static void test_filters(void)
{
	struct ap_trace *t = load(1);
	struct ap_symbolizer *s = symbolizer(t, NULL);
	double token = FX_N_TOKEN * FX_SZ_TOKEN, parse = FX_N_PARSE * FX_SZ_PARSE;

	struct ap_report *r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_FUNCTIONS, "^parse$", NULL);
	CHECK(r->kept == parse + token && r->kept_stacks == 2, "focus: kept %g in %zu stacks",
	      r->kept, r->kept_stacks);
	expect(r, "parse", parse, parse + token);
	expect(r, "make_token", token, token);
	expect(r, "alloc_big", 0, 0);
	expect(r, "fx_build", 0, parse + token);
	double total = r->total;
	ap_report_free(r);

	r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_FUNCTIONS, NULL, "make_token");
	CHECK(r->total == total && r->kept == total - token, "ignore: total %g kept %g", r->total,
	      r->kept);
	expect(r, "parse", parse, parse);
	expect(r, "make_token", 0, 0);
	ap_report_free(r);

	/* focus and ignore together; a file name matches as a function name
	 * does, at any granularity (pprof's matchesName: name, file, module). */
	r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_FUNCTIONS, "fixture\\.c", NULL);
	CHECK(r->kept == total, "focus on a file name with --functions kept %g of %g", r->kept, total);
	ap_report_free(r);
	r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_FILES, "fixture\\.c", "^walk$");
	CHECK(r->kept == total - FX_N_WALK * FX_SZ_WALK, "files focus+ignore kept %g", r->kept);
	ap_report_free(r);

	struct ap_report_options o = {.sample_index = AP_SI_ALLOC_SPACE, .focus = "("};
	struct ap_error err;
	CHECK(!ap_report_new(t, NULL, s, &o, NULL, NULL, &err) &&
		  strstr(err.msg, "focus: bad regex '('"),
	      "bad focus regex: %s", err.msg);
	ap_sym_free(s);

	/* drop_frames: wrap_alloc becomes an allocator frame. */
	s = symbolizer(t, "^wrap_alloc$");
	r = report(t, s, AP_SI_ALLOC_SPACE, AP_GRAN_FUNCTIONS, NULL, NULL);
	expect(r, "use_wrapper", FX_N_WRAP * FX_SZ_WRAP, FX_N_WRAP * FX_SZ_WRAP);
	CHECK(!row(r, "wrap_alloc"), "drop_frames: wrap_alloc is still a node");
	ap_report_free(r);
	ap_sym_free(s);
	ap_trace_free(t);
}

static void test_list(const char *src)
{
	struct ap_trace *t = load(1);
	struct ap_symbolizer *s = symbolizer(t, NULL);
	struct ap_report_options o = {.sample_index = AP_SI_ALLOC_SPACE};
	struct ap_error err;
	struct ap_list *l = ap_list_new(t, NULL, s, &o, "^walk$", NULL, NULL, NULL, &err);
	double walk = FX_N_WALK * FX_SZ_WALK;
	int la = fx_line(src, "L:walk_alloc"), lr = fx_line(src, "L:walk_rec");
	CHECK(l && l->nfuncs == 1, "list walk: %zu functions", l ? l->nfuncs : 0);
	if (l && l->nfuncs == 1) {
		const struct ap_list_func *f = &l->funcs[0];
		CHECK(!strcmp(f->name, "walk") && f->flat == walk && f->cum == walk && f->path,
		      "list walk: %s flat %g cum %g path %s", f->name, f->flat, f->cum,
		      f->path ? f->path : "(null)");
		/* The range: AP_LIST_MARGIN lines around the lines with samples. */
		CHECK(f->nlines == (size_t)(la - lr + 1 + 2 * AP_LIST_MARGIN) &&
			  f->lines[0].line == lr - AP_LIST_MARGIN,
		      "list walk: %zu lines from %d", f->nlines, f->nlines ? f->lines[0].line : 0);
		for (size_t i = 0; i < f->nlines; i++) {
			const struct ap_list_line *ln = &f->lines[i];
			double flat = ln->line == la ? walk : 0;
			double cum = ln->line == la || ln->line == lr ? walk : 0;
			CHECK(ln->flat == flat && ln->cum == cum, "list walk line %d: %g %g",
			      ln->line, ln->flat, ln->cum);
			CHECK(ln->source, "list walk line %d: no source", ln->line);
			if (ln->line == la)
				CHECK(ln->source && strstr(ln->source, "L:walk_alloc"),
				      "list walk line %d: source '%s'", la, ln->source);
		}
	}
	ap_list_free(l);

	/* Several functions; by name. */
	l = ap_list_new(t, NULL, s, &o, "^(parse|make_token)$", NULL, NULL, NULL, &err);
	CHECK(l && l->nfuncs == 2 && !strcmp(l->funcs[0].name, "make_token") &&
		  !strcmp(l->funcs[1].name, "parse") &&
		  l->funcs[1].cum == FX_N_PARSE * FX_SZ_PARSE + FX_N_TOKEN * FX_SZ_TOKEN,
	      "list parse|make_token");
	ap_list_free(l);

	l = ap_list_new(t, NULL, s, &o, "^nothing_here$", NULL, NULL, NULL, &err);
	CHECK(l && l->nfuncs == 0, "list with no match");
	ap_list_free(l);
	CHECK(!ap_list_new(t, NULL, s, &o, "[", NULL, NULL, NULL, &err), "list bad regex");
	ap_sym_free(s);
	ap_trace_free(t);
}

/* A random trace with heavy churn on few addresses (collisions, shadowed
 * blocks from lost frees, frees of unknown addresses, realloc chains with
 * unsampled links): the per-stack sums must add up to the reader's own
 * replay (ap_trace_totals), which matches frees independently. */
static void test_replay_random(uint64_t rate)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = rate;
	h.flags = rate == 1 ? AP_HFLAG_ALL : 0;
	struct ap_tw *tw = ap_tw_new(&h);
	uint32_t stacks[50];
	for (uint64_t i = 0; i < 50; i++) {
		uint64_t pcs[3] = {0x1000 + i, 0x2000 + i % 7, 0x3000};
		stacks[i] = ap_tw_stack(tw, pcs, 3);
	}
	uint64_t rng = 12345, ts = h.start_ns;
	for (int i = 0; i < 50000; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		uint64_t addr = 0x10000 + (rng % 4096) * 16;
		uint64_t size = (rng >> 20) % 5000;
		uint32_t st = stacks[(rng >> 40) % 50];
		switch ((rng >> 56) % 4) {
		case 0:
		case 1:
			ap_tw_alloc(tw, 1, ++ts, 0, AP_KIND_MALLOC, addr, size, st);
			break;
		case 2:
			ap_tw_free(tw, 1, ++ts, 0, addr);
			break;
		case 3: {
			uint64_t to = 0x10000 + ((rng >> 8) % 4096) * 16;
			bool sampled = (rng >> 50) & 1;
			ap_tw_realloc(tw, 1, ++ts, 0, AP_KIND_REALLOC, addr, to, size,
				      sampled ? st : 0,
				      AP_RF_OLD_TRACKED | (sampled ? AP_RF_NEW_SAMPLED : 0));
			break;
		}
		}
	}
	struct ap_tw_end end = {.end_ns = ts + 1};
	ap_tw_end(tw, &end);
	uint8_t *data;
	size_t len;
	struct ap_error err;
	struct ap_trace *t;
	if (ap_tw_close_mem(tw, &data, &len, &err) ||
	    ap_trace_read_mem(data, len, "random", &t, &err)) {
		fprintf(stderr, "random trace: %s\n", err.msg);
		exit(1);
	}
	free(data);
	struct ap_stack_values *sv = ap_report_stack_values(t, &err);
	CHECK(sv, "%s", err.msg);
	struct ap_trace_totals tot;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	double sum[AP_SI_COUNT] = {0};
	for (size_t i = 0; i < t->nstacks; i++)
		for (int k = 0; k < AP_SI_COUNT; k++)
			sum[k] += sv[i].v[k];
	CHECK(tot.unmatched_frees > 0 && tot.inuse_objects > 0, "random trace: no churn");
	CHECK(near(sum[AP_SI_ALLOC_OBJECTS], tot.alloc_objects) &&
		  near(sum[AP_SI_ALLOC_SPACE], tot.alloc_space) &&
		  near(sum[AP_SI_INUSE_OBJECTS], tot.inuse_objects) &&
		  near(sum[AP_SI_INUSE_SPACE], tot.inuse_space) &&
		  near(sum[AP_SI_PEAK_SPACE], tot.peak_inuse_space),
	      "random trace, rate %llu: sums %g %g %g %g, totals %g %g %g %g",
	      (unsigned long long)rate, sum[0], sum[1], sum[2], sum[3], tot.alloc_objects,
	      tot.alloc_space, tot.inuse_objects, tot.inuse_space);
	free(sv);
	ap_trace_free(t);
}

int main(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : FIXTURE_SRC;
	test_functions(1);
	test_functions(4096);
	test_lines_files(src);
	test_filters();
	test_list(src);
	test_replay_random(1);
	test_replay_random(4096);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
