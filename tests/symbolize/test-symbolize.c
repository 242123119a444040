/* Symbolizer tests on real stacks of this process: testdata/inline.c is
 * linked in (its malloc/calloc/strdup calls wrapped to record stacks), and
 * testdata/cxx.cpp is dlopen'ed as libsymtest_cxx.so (its operator new
 * wrapped). Every frame of every PC must agree with eu-addr2line -i -f -C;
 * call sites must land on the SITE: lines of the sources; a stripped copy
 * gives module+0xoff frames; a build-id mismatch gives a warning.
 *
 * usage: test-symbolize LIBSYMTEST_CXX TMPDIR */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_symbolize.h"
#include "symtest.h"
#include "symtest_maps.h"
#include "ap_check.h"

int inline_main(void);

static struct symtest_rec rec;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
char *__wrap_strdup(const char *s);

void *__wrap_malloc(size_t n)
{
	symtest_record(&rec);
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	symtest_record(&rec);
	return __real_calloc(n, size);
}

char *__wrap_strdup(const char *s)
{
	symtest_record(&rec);
	return __real_strdup(s);
}


static bool streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static const char *base_of(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

static const struct ap_mapping *mapping_of(const struct ap_trace *t, uint64_t pc)
{
	for (size_t i = t->nmaps; i-- > 0;) {
		const struct ap_mapping *m = &t->maps[i];
		for (size_t k = 0; k < m->nsegs; k++)
			if (pc >= m->bias + m->segs[k].vaddr &&
			    pc < m->bias + m->segs[k].vaddr + m->segs[k].memsz)
				return m;
	}
	return NULL;
}

/* ---- eu-addr2line comparison ---- */

struct a2l_frame {
	char name[1024];
	char file[1024];
	int line, column;
	bool has_column;
};

/* Runs eu-addr2line -i -f -C on one module-relative address and parses its
 * pairs of lines: name (the first one "NAME inlined at ... in ..."), then
 * FILE:LINE[:COL] or ??:0. */
/* allocprof shows source paths with "." and "dir/.." folded (as pprof and
 * perf do); fold eu-addr2line's the same way, component by component. */
static void normpath(const char *in, char *out, size_t outlen)
{
	if (in[0] != '/') {
		snprintf(out, outlen, "%s", in);
		return;
	}
	char tmp[1024];
	snprintf(tmp, sizeof(tmp), "%s", in);
	const char *parts[256];
	int np = 0;
	for (char *save = NULL, *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (np > 0)
				np--;
			continue;
		}
		if (np < 256)
			parts[np++] = c;
	}
	size_t o = 0;
	out[0] = 0;
	for (int i = 0; i < np; i++)
		o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "/%s", parts[i]);
	if (np == 0)
		snprintf(out, outlen, "/");
}

static int run_addr2line(const char *module, uint64_t addr, struct a2l_frame *out, int max)
{
	char cmd[4400];
	snprintf(cmd, sizeof(cmd), "eu-addr2line -i -f -C -e '%s' 0x%" PRIx64, module, addr);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char name[1024], loc[1024];
	int n = 0;
	while (n < max && fgets(name, sizeof(name), p) && fgets(loc, sizeof(loc), p)) {
		struct a2l_frame *f = &out[n++];
		memset(f, 0, sizeof(*f));
		name[strcspn(name, "\n")] = '\0';
		loc[strcspn(loc, "\n")] = '\0';
		char *in = strstr(name, " inlined at ");
		if (in)
			*in = '\0';
		snprintf(f->name, sizeof(f->name), "%s", name);
		/* FILE:LINE or FILE:LINE:COL */
		char *c1 = strrchr(loc, ':');
		if (!c1)
			continue;
		*c1 = '\0';
		char *c2 = strrchr(loc, ':');
		if (c2) {
			/* three fields when the middle one is a number */
			char *endp;
			long l = strtol(c2 + 1, &endp, 10);
			if (*endp == '\0' && endp != c2 + 1) {
				*c2 = '\0';
				f->line = (int)l;
				f->column = atoi(c1 + 1);
				f->has_column = true;
			} else {
				f->line = atoi(c1 + 1);
			}
		} else {
			f->line = atoi(c1 + 1);
		}
		if (strcmp(loc, "??"))
			normpath(loc, f->file, sizeof(f->file));
	}
	int rc = pclose(p);
	return rc == 0 ? n : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Every frame of every unique PC agrees with eu-addr2line. Returns the
 * number of frames compared. */
static size_t check_addr2line(struct ap_symbolizer *s, const struct ap_trace *t)
{
	size_t npcs = 0;
	for (size_t i = 1; i < t->nstacks; i++)
		npcs += t->stacks[i].depth;
	uint64_t *pcs = malloc(npcs * sizeof(*pcs));
	npcs = 0;
	for (size_t i = 1; i < t->nstacks; i++)
		for (uint32_t d = 0; d < t->stacks[i].depth; d++)
			pcs[npcs++] = t->stacks[i].pcs[d];
	qsort(pcs, npcs, sizeof(*pcs), cmp_u64);
	size_t compared = 0, inlined = 0;
	for (size_t i = 0; i < npcs; i++) {
		if (i && pcs[i] == pcs[i - 1])
			continue;
		uint64_t pc = pcs[i];
		const struct ap_mapping *m = mapping_of(t, pc);
		const struct ap_frame *fr;
		size_t n = ap_sym_pc(s, pc, &fr);
		if (!m) {
			char want[64];
			snprintf(want, sizeof(want), "0x%" PRIx64, pc);
			CHECK(n == 1 && !strcmp(fr[0].func, want),
			      "pc %s in no module: got %s", want, fr[0].func);
			continue;
		}
		struct a2l_frame want[32];
		int nw = run_addr2line(m->path, pc - 1 - m->bias, want, 32);
		CHECK(nw > 0, "eu-addr2line failed on %s 0x%" PRIx64, m->path, pc - 1 - m->bias);
		if (nw <= 0)
			continue;
		CHECK((size_t)nw == n, "%s+0x%" PRIx64 ": %zu frames, eu-addr2line %d (first %s / %s)",
		      base_of(m->path), pc - m->bias, n, nw, fr[0].full, want[0].name);
		for (size_t k = 0; k < n && k < (size_t)nw; k++) {
			const struct ap_frame *f = &fr[k];
			const struct a2l_frame *w = &want[k];
			char addrname[1100];
			snprintf(addrname, sizeof(addrname), "%s+0x%" PRIx64, base_of(m->path), pc - m->bias);
			const char *wname = strcmp(w->name, "??") ? w->name : addrname;
			CHECK(!strcmp(f->full, wname) && streq(f->file, w->file[0] ? w->file : NULL) &&
			      f->line == w->line && f->column == (w->has_column ? w->column : 0),
			      "%s+0x%" PRIx64 " frame %zu: got %s %s:%d:%d, eu-addr2line %s %s:%d:%d",
			      base_of(m->path), pc - m->bias, k, f->full, f->file ? f->file : "??",
			      f->line, f->column, w->name, w->file[0] ? w->file : "??", w->line, w->column);
			CHECK(f->inlined == (k + 1 < n), "frame %zu of %zu: inlined %d", k, n, f->inlined);
			CHECK(f->pc == pc && f->module == m->path && f->module_offset == pc - m->bias,
			      "frame %zu: pc/module fields", k);
			compared++;
			inlined += f->inlined;
		}
	}
	free(pcs);
	printf("eu-addr2line agrees on %zu frames (%zu inlined)\n", compared, inlined);
	CHECK(inlined > 0, "no inlined frame compared");
	return compared;
}

/* ---- call sites ---- */

struct site_count {
	const char *func;	/* the call site's function (demangled) */
	const char *site;	/* its SITE: marker */
	size_t want, got;
};

/* The call site of every stack in [from, to) is one of `sites`, at its
 * SITE: line, and each site gets exactly the count the program makes. */
static void check_sites(struct ap_symbolizer *s, const struct ap_trace *t, size_t from,
			size_t to, struct site_count *sites, size_t nsites, const char *what)
{
	struct ap_frame *fr = NULL;
	size_t n = 0, alloc = 0;
	for (size_t i = from; i < to; i++) {
		size_t cs = ap_sym_stack(s, &t->stacks[i], &fr, &n, &alloc);
		CHECK(cs < n, "%s: stack %zu: call site %zu of %zu", what, i, cs, n);
		if (cs >= n)
			continue;
		for (size_t k = 0; k < n; k++)
			CHECK(fr[k].allocator == (k < cs), "%s: stack %zu frame %zu allocator flag", what, i, k);
		const struct ap_frame *f = &fr[cs];
		size_t j;
		for (j = 0; j < nsites; j++)
			if (!strcmp(f->full, sites[j].func))
				break;
		if (j == nsites) {
			CHECK(0, "%s: stack %zu: call site %s %s:%d is not a known site", what, i,
			      f->full, f->file ? f->file : "??", f->line);
			continue;
		}
		int line = f->file ? symtest_site_line(f->file, sites[j].site) : -1;
		CHECK(line > 0 && f->line == line, "%s: %s at %s:%d, SITE:%s is line %d", what,
		      f->full, f->file ? f->file : "??", f->line, sites[j].site, line);
		sites[j].got++;
	}
	for (size_t j = 0; j < nsites; j++)
		CHECK(sites[j].got == sites[j].want, "%s: %s: %zu call sites, want %zu", what,
		      sites[j].func, sites[j].got, sites[j].want);
	free(fr);
}

/* ---- degraded modules ---- */

static bool has_warning(struct ap_symbolizer *s, const char *a, const char *b)
{
	for (const char *const *w = ap_sym_warnings(s); *w; w++)
		if (strstr(*w, a) && strstr(*w, b))
			return true;
	return false;
}

/* Frames of the stacks [from, to) in module `path` are address frames. */
static size_t check_address_frames(struct ap_symbolizer *s, const struct ap_trace *t,
				   size_t from, size_t to, const char *path)
{
	size_t seen = 0;
	for (size_t i = from; i < to; i++) {
		const struct ap_stack *st = &t->stacks[i];
		for (uint32_t d = 0; d < st->depth; d++) {
			const struct ap_mapping *m = mapping_of(t, st->pcs[d]);
			if (!m || strcmp(m->path, path))
				continue;
			const struct ap_frame *fr;
			size_t n = ap_sym_pc(s, st->pcs[d], &fr);
			char want[1100];
			snprintf(want, sizeof(want), "%s+0x%" PRIx64, base_of(path), st->pcs[d] - m->bias);
			CHECK(n == 1 && !strcmp(fr[0].func, want) && !fr[0].file && !fr[0].line,
			      "%s: got %s %s:%d, want %s", path, fr[0].func, fr[0].file ? fr[0].file : "??",
			      fr[0].line, want);
			seen++;
		}
	}
	return seen;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-symbolize LIBSYMTEST_CXX TMPDIR\n");
		return 2;
	}
	const char *libpath = argv[1], *tmpdir = argv[2];

	/* backtrace() loads libgcc_s on first use: do it before recording */
	void *warm[4];
	backtrace(warm, 4);

	rec.armed = true;
	inline_main();
	rec.armed = false;
	size_t ninline = (size_t)rec.n;
	CHECK(ninline == 1502, "inline: %zu allocations recorded, want 1502", ninline);

	void *h = dlopen(libpath, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", libpath, dlerror());
		return 1;
	}
	struct symtest_rec *(*cxx_run)(void) =
		(struct symtest_rec * (*)(void)) dlsym(h, "symtest_cxx_run");
	if (!cxx_run) {
		fprintf(stderr, "FAIL: dlsym symtest_cxx_run: %s\n", dlerror());
		return 1;
	}
	struct symtest_rec *cxx = cxx_run();
	size_t ncxx = (size_t)cxx->n;
	/* 168: the 10 string buffers are allocated inside libstdc++.so (its
	 * explicit std::string instantiation), where --wrap does not reach */
	CHECK(ncxx == 168, "cxx: %zu operator new calls recorded, want 168", ncxx);

	/* The in-memory trace: mappings as the sampler records them, and
	 * one stack per recorded allocation. */
	struct ap_trace t;
	memset(&t, 0, sizeof(t));
	symtest_maps(&t);
	t.nstacks = 1 + ninline + ncxx;
	t.stacks = calloc(t.nstacks, sizeof(*t.stacks));
	for (size_t i = 0; i < ninline; i++)
		t.stacks[1 + i] = (struct ap_stack){ rec.depth[i], rec.pcs[i] };
	for (size_t i = 0; i < ncxx; i++)
		t.stacks[1 + ninline + i] = (struct ap_stack){ cxx->depth[i], cxx->pcs[i] };
	const size_t cxx_from = 1 + ninline, cxx_to = t.nstacks;

	/* the dlopen'ed library's real path, as the trace has it */
	const char *cxx_path = NULL;
	if (ncxx)
		for (size_t i = 0; i < t.nmaps; i++)
			if (mapping_of(&t, cxx->pcs[0][0]) == &t.maps[i])
				cxx_path = t.maps[i].path;
	CHECK(cxx_path && !strcmp(base_of(cxx_path), "libsymtest_cxx.so"),
	      "first cxx PC is in %s", cxx_path ? cxx_path : "no module");

	struct ap_error err;
	struct ap_sym_options opts = { 0 };
	struct ap_symbolizer *s = ap_sym_new(&t, &opts, &err);
	if (!s) {
		fprintf(stderr, "FAIL: ap_sym_new: %s\n", err.msg);
		return 1;
	}
	for (const char *const *w = ap_sym_warnings(s); *w; w++)
		CHECK(0, "unexpected warning: %s", *w);

	/* 1. every frame agrees with eu-addr2line */
	check_addr2line(s, &t);

	/* 2. the cache gives the same frames, at the same address */
	{
		const struct ap_frame *a, *b;
		size_t na = ap_sym_pc(s, t.stacks[1].pcs[0], &a);
		size_t nb = ap_sym_pc(s, t.stacks[1].pcs[0], &b);
		CHECK(na == nb && a == b, "cached lookup differs");
	}

	/* 3. call sites, by construction (see the sources' headers) */
	struct site_count inline_sites[] = {
		{ "make_node", "make_node", 1000, 0 },
		{ "build_labels", "build_labels", 1, 0 },
		{ "copy_name", "copy_name", 500, 0 },
		{ "zeroed", "zeroed", 1, 0 },
	};
	check_sites(s, &t, 1, 1 + ninline, inline_sites, AP_ARRAY_SIZE(inline_sites), "inline");
	struct site_count cxx_sites[] = {
		{ "geo::Point<double>* geo::detail::make_point<double>(double)", "make_point", 100, 0 },
		{ "geo::Point<int>* geo::detail::make_point<int>(int)", "make_point", 50, 0 },
		{ "geo::Cloud<float>::add(float)", "cloud_add", 8, 0 },
		{ "names::make_label[abi:cxx11](int)", "make_label", 10, 0 },
	};
	check_sites(s, &t, cxx_from, cxx_to, cxx_sites, AP_ARRAY_SIZE(cxx_sites), "cxx");

	/* 4. demangling keeps the linkage name; the views' name is the
	 * short one, the whole demangled one is kept */
	{
		const struct ap_frame *f;
		size_t n = ap_sym_pc(s, t.stacks[cxx_from].pcs[0], &f);
		CHECK(n >= 1 && !strcmp(f[n - 1].full, cxx_sites[0].func) &&
		      !strcmp(f[n - 1].func, "geo::detail::make_point") &&
		      f[n - 1].lang == AP_SYM_CXX &&
		      !strcmp(f[n - 1].mangled, "_ZN3geo6detail10make_pointIdEEPNS_5PointIT_EES3_"),
		      "make_point<double>: %s / %s / %s", f[n - 1].func, f[n - 1].full,
		      f[n - 1].mangled);
	}
	ap_sym_free(s);

	/* 4b. full_names: the views' name is the whole demangled one */
	{
		opts.full_names = true;
		s = ap_sym_new(&t, &opts, &err);
		const struct ap_frame *f;
		size_t n = ap_sym_pc(s, t.stacks[cxx_from].pcs[0], &f);
		CHECK(n >= 1 && !strcmp(f[n - 1].func, cxx_sites[0].func) &&
		      f[n - 1].func == f[n - 1].full,
		      "full_names: %s", f[n - 1].func);
		for (size_t j = 0; j < AP_ARRAY_SIZE(cxx_sites); j++)
			cxx_sites[j].got = 0;
		check_sites(s, &t, cxx_from, cxx_to, cxx_sites, AP_ARRAY_SIZE(cxx_sites),
			    "cxx full_names");
		ap_sym_free(s);
		opts.full_names = false;
	}

	/* 5. --drop-frames: user wrappers become allocator frames */
	{
		struct site_count drop_sites[] = {
			{ "build_list", "build_list", 1000, 0 },
			{ "build_labels", "build_labels", 1, 0 },
			{ "label", "label", 500, 0 },
			{ "table", "table", 1, 0 },
		};
		opts.drop_frames = "^(make_node|copy_name|zeroed)$";
		s = ap_sym_new(&t, &opts, &err);
		CHECK(s, "ap_sym_new with drop_frames: %s", err.msg);
		if (s)
			check_sites(s, &t, 1, 1 + ninline, drop_sites, AP_ARRAY_SIZE(drop_sites), "drop");
		ap_sym_free(s);
		opts.drop_frames = "(unclosed";
		s = ap_sym_new(&t, &opts, &err);
		CHECK(!s && strstr(err.msg, "(unclosed"), "bad regex: %s", s ? "accepted" : err.msg);
		ap_sym_free(s);
		opts.drop_frames = NULL;
	}

	/* 6. no_demangle gives linkage names */
	{
		opts.no_demangle = true;
		s = ap_sym_new(&t, &opts, &err);
		const struct ap_frame *f;
		size_t n = ap_sym_pc(s, t.stacks[cxx_from].pcs[0], &f);
		CHECK(!strcmp(f[n - 1].func, "_ZN3geo6detail10make_pointIdEEPNS_5PointIT_EES3_"),
		      "no_demangle: %s", f[n - 1].func);
		ap_sym_free(s);
		opts.no_demangle = false;
	}

	/* 7. a stripped copy of this program: module+0xoff frames, no error */
	struct ap_mapping *orig = t.maps;
	const size_t nmaps = t.nmaps;
	char stripped[4096], cmd[8400];
	snprintf(stripped, sizeof(stripped), "%s/stripped-exe", tmpdir);
	snprintf(cmd, sizeof(cmd), "strip -o '%s' '%s'", stripped, orig[0].path);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	{
		t.maps = symtest_maps_copy(&(struct ap_trace){ .maps = orig, .nmaps = t.nmaps });
		free(t.maps[0].path);
		t.maps[0].path = strdup(stripped);
		s = ap_sym_new(&t, &opts, &err);
		CHECK(s && !ap_sym_warnings(s)[0], "stripped: %s",
		      s ? ap_sym_warnings(s)[0] : err.msg);
		/* the inline.c frames (pc 0 of its stacks) have no symbol left */
		size_t seen = check_address_frames(s, &t, 1, 1 + ninline, stripped);
		CHECK(seen > 1000, "stripped: %zu frames checked", seen);
		ap_sym_free(s);
		symtest_maps_free(&t);
		t.nmaps = nmaps;
	}

	/* 8. a rebuilt library (the recorded build-id differs): a warning, and
	 * address frames instead of wrong names */
	{
		t.maps = symtest_maps_copy(&(struct ap_trace){ .maps = orig, .nmaps = t.nmaps });
		for (size_t i = 0; i < t.nmaps; i++)
			if (cxx_path && !strcmp(t.maps[i].path, cxx_path))
				t.maps[i].build_id[0] ^= 0xff;
		s = ap_sym_new(&t, &opts, &err);
		CHECK(cxx_path && has_warning(s, cxx_path, "build-id differs from the recorded one"),
		      "no build-id warning for %s", cxx_path ? cxx_path : "?");
		size_t seen = cxx_path ? check_address_frames(s, &t, cxx_from, cxx_to, cxx_path) : 0;
		CHECK(seen >= 168, "rebuilt: %zu frames checked", seen);
		ap_sym_free(s);
		symtest_maps_free(&t);
		t.nmaps = nmaps;
	}

	/* 9. separate debug info: a stripped copy of the library, its DWARF in
	 * DEBUG_DIR/.build-id/xx/rest.debug, found through debug_dir; the
	 * frames are the same as from the unstripped library */
	if (cxx_path) {
		char dbgdir[4096], idhex[130] = "";
		snprintf(dbgdir, sizeof(dbgdir), "%s/debug", tmpdir);
		t.maps = symtest_maps_copy(&(struct ap_trace){ .maps = orig, .nmaps = t.nmaps });
		struct ap_mapping *lib = NULL;
		for (size_t i = 0; i < t.nmaps; i++)
			if (!strcmp(t.maps[i].path, cxx_path))
				lib = &t.maps[i];
		for (size_t i = 0; lib && i < lib->build_id_len; i++)
			snprintf(idhex + 2 * i, 3, "%02x", lib->build_id[i]);
		struct ap_buf sh = AP_BUF_INIT;
		ap_buf_addf(&sh,
			 "rm -rf '%s' && mkdir -p '%s/.build-id/%.2s' && "
			 "objcopy --only-keep-debug '%s' '%s/.build-id/%.2s/%s.debug' && "
			 "strip -o '%s/libsymtest_cxx.so' '%s'",
			 dbgdir, dbgdir, idhex, cxx_path, dbgdir, idhex, idhex + 2, dbgdir, cxx_path);
		CHECK(lib && lib->build_id_len && system(sh.buf) == 0, "%s failed", sh.buf);
		ap_buf_release(&sh);
		char stripped_lib[4200];
		/* not in tmpdir: that may be where the library itself is */
		snprintf(stripped_lib, sizeof(stripped_lib), "%s/libsymtest_cxx.so", dbgdir);
		if (lib) {
			free(lib->path);
			lib->path = strdup(stripped_lib);
		}
		struct ap_trace full = t;
		full.maps = orig;
		struct ap_symbolizer *ref = ap_sym_new(&full, &opts, &err);
		opts.debug_dir = dbgdir;
		s = ap_sym_new(&t, &opts, &err);
		opts.debug_dir = NULL;
		size_t same = 0;
		for (size_t i = cxx_from; i < cxx_to; i++) {
			const struct ap_frame *a, *b;
			size_t na = ap_sym_pc(s, t.stacks[i].pcs[0], &a);
			size_t nb = ap_sym_pc(ref, t.stacks[i].pcs[0], &b);
			bool eq = na == nb;
			for (size_t k = 0; eq && k < na; k++)
				eq = !strcmp(a[k].func, b[k].func) && streq(a[k].file, b[k].file) &&
				     a[k].line == b[k].line && a[k].column == b[k].column;
			CHECK(eq && a[0].file, "debug_dir: %s %s:%d, unstripped %s %s:%d", a[0].func,
			      a[0].file ? a[0].file : "??", a[0].line, b[0].func,
			      b[0].file ? b[0].file : "??", b[0].line);
			same += eq;
		}
		CHECK(same == ncxx, "debug_dir: %zu of %zu stacks symbolized alike", same, ncxx);
		ap_sym_free(s);
		ap_sym_free(ref);
		symtest_maps_free(&t);
		t.nmaps = nmaps;
	}

	/* 10. a module whose file is gone, and a PC in no module */
	{
		struct ap_segment seg = { 0, 0x2000, 0, 5 };
		struct ap_mapping gone = { .bias = 0x7f0000000000, .start = 0x7f0000000000,
					   .end = 0x7f0000002000, .path = "/nonexistent/libgone.so",
					   .segs = &seg, .nsegs = 1 };
		uint64_t pcs[2] = { 0x7f0000000123, 0x1234 };
		struct ap_stack st[2] = { { 0, NULL }, { 2, pcs } };
		struct ap_trace t2 = { .maps = &gone, .nmaps = 1, .stacks = st, .nstacks = 2 };
		s = ap_sym_new(&t2, &opts, &err);
		CHECK(has_warning(s, "/nonexistent/libgone.so", "its frames are shown as addresses"),
		      "no warning for a missing file");
		const struct ap_frame *f;
		ap_sym_pc(s, pcs[0], &f);
		CHECK(!strcmp(f[0].func, "libgone.so+0x123") && streq(f[0].module, gone.path),
		      "missing file: %s", f[0].func);
		ap_sym_pc(s, pcs[1], &f);
		CHECK(!strcmp(f[0].func, "0x1234") && !f[0].module, "no module: %s", f[0].func);
		ap_sym_free(s);
	}

	t.maps = orig;
	t.nmaps = nmaps;
	symtest_maps_free(&t);
	free(t.stacks);
	dlclose(h);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
