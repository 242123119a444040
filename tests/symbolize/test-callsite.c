/* Call sites through the real allocator frames: this program interposes
 * malloc/calloc/realloc/free itself (as the preloaded sampler does) and
 * records the stack of each allocation from the interposer's return
 * address, so stacks go through libstdc++'s operator new, std::vector and
 * std::string internals, glibc's strdup and asprintf. The call site chosen
 * by ap_sym_stack must be the SITE: line of the code that asked, with the
 * counts testdata/cxx.cpp makes by construction. Not built under ASan
 * (it interposes malloc itself).
 *
 * usage: test-callsite */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_symbolize.h"
#include "symtest.h"
#include "symtest_maps.h"
#include "ap_check.h"

/* testdata/cxx.cpp's main, compiled with -Dmain=cxx_main (C++ linkage) */
int cxx_main(void) __asm__("_Z8cxx_mainv");
/* throw_site.cpp: n exceptions thrown and caught */
int throw_some(int n);

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static struct symtest_rec rec;
static __thread int in_rec;

/* The interposers: record, then hand over to glibc. */
#define RECORD()                                                              \
	do {                                                                  \
		if (rec.armed && !in_rec) {                                   \
			in_rec = 1;                                           \
			symtest_record(&rec);                                 \
			in_rec = 0;                                           \
		}                                                             \
	} while (0)

void *malloc(size_t n)
{
	RECORD();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	RECORD();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	RECORD();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}


/* A user's allocation wrapper, for --drop-frames. */
__attribute__((noinline)) static void *xmalloc(size_t n)
{
	void *p = malloc(n); /* SITE:xmalloc */
	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) static void c_allocations(void)
{
	char *a = strdup("a string to copy"); /* SITE:t_strdup */
	char *b = NULL;
	if (asprintf(&b, "%s and %d", a, 42) < 0) /* SITE:t_asprintf */
		abort();
	char *c = xmalloc(100); /* SITE:t_xmalloc */
	free(a);
	free(b);
	free(c);
}

struct site {
	const char *func, *marker;
	size_t min, max, got;
};

static void check(const struct ap_trace *t, const char *drop, struct site *sites, size_t nsites,
		  const char *what)
{
	struct ap_sym_options opts = { .drop_frames = drop };
	struct ap_error err;
	struct ap_symbolizer *s = ap_sym_new(t, &opts, &err);
	if (!s) {
		CHECK(0, "%s: ap_sym_new: %s", what, err.msg);
		return;
	}
	struct ap_frame *fr = NULL;
	size_t n = 0, alloc = 0;
	for (size_t i = 1; i < t->nstacks; i++) {
		size_t cs = ap_sym_stack(s, &t->stacks[i], &fr, &n, &alloc);
		if (cs >= n || !fr[cs].file) {
			CHECK(0, "%s: stack %zu: call site %zu of %zu (%s)", what, i, cs, n,
			      cs < n ? fr[cs].full : "-");
			continue;
		}
		const struct ap_frame *f = &fr[cs];
		size_t j;
		for (j = 0; j < nsites; j++)
			if (!strcmp(f->full, sites[j].func))
				break;
		if (j == nsites) {
			CHECK(0, "%s: stack %zu: call site %s at %s:%d is no known site (innermost %s)",
			      what, i, f->full, f->file, f->line, fr[0].func);
			continue;
		}
		int want = sites[j].marker ? symtest_site_line(f->file, sites[j].marker) : f->line;
		CHECK(f->line == want, "%s: %s at line %d, SITE:%s is line %d", what, f->full,
		      f->line, sites[j].marker, want);
		sites[j].got++;
	}
	for (size_t j = 0; j < nsites; j++)
		CHECK(sites[j].got >= sites[j].min && sites[j].got <= sites[j].max,
		      "%s: %s: %zu call sites, want %zu..%zu", what, sites[j].func, sites[j].got,
		      sites[j].min, sites[j].max);
	free(fr);
	ap_sym_free(s);
}

int main(void)
{
	void *warm[4];
	backtrace(warm, 4);

	rec.armed = true;
	cxx_main();
	c_allocations();
	int caught = throw_some(3);
	rec.armed = false;
	CHECK(caught == 3, "throw_some: %d caught", caught);

	struct ap_trace t;
	memset(&t, 0, sizeof(t));
	symtest_maps(&t);
	t.nstacks = 1 + (size_t)rec.n;
	t.stacks = calloc(t.nstacks, sizeof(*t.stacks));
	for (int i = 0; i < rec.n; i++)
		t.stacks[1 + i] = (struct ap_stack){ rec.depth[i], rec.pcs[i] };

	/* every call site is a known line; strdup's and asprintf's both land
	 * in c_allocations, so check lines per stack instead of one marker */
	struct ap_error err;
	struct ap_symbolizer *s = ap_sym_new(&t, NULL, &err);
	if (!s) {
		fprintf(stderr, "FAIL: ap_sym_new: %s\n", err.msg);
		return 1;
	}
	for (const char *const *w = ap_sym_warnings(s); *w; w++)
		CHECK(0, "unexpected warning: %s", *w);
	struct ap_frame *fr = NULL;
	size_t n = 0, alloc = 0, nstrdup = 0, nasprintf = 0;
	char *me = NULL;	/* this file, as DWARF names it (outlives s) */
	for (size_t i = 1; i < t.nstacks; i++) {
		size_t cs = ap_sym_stack(s, &t.stacks[i], &fr, &n, &alloc);
		if (cs < n && !strcmp(fr[cs].func, "c_allocations") && fr[cs].file) {
			if (!me)
				me = strdup(fr[cs].file);
			if (fr[cs].line == symtest_site_line(me, "t_strdup"))
				nstrdup++;
			else if (fr[cs].line == symtest_site_line(me, "t_asprintf"))
				nasprintf++;
			else
				CHECK(0, "c_allocations call site at line %d", fr[cs].line);
		}
	}
	CHECK(nstrdup == 1, "strdup: %zu call sites on its line", nstrdup);
	CHECK(nasprintf >= 1, "asprintf: %zu call sites on its line", nasprintf);
	free(fr);
	ap_sym_free(s);

	/* testdata/cxx.cpp's header: 100 + 50 + 8 + 20 (10 string objects and
	 * their 10 buffers, allocated inside libstdc++'s std::string); the
	 * lines of c_allocations were checked above */
	struct site sites[] = {
		{ "geo::Point<double>* geo::detail::make_point<double>(double)", "make_point", 100, 100, 0 },
		{ "geo::Point<int>* geo::detail::make_point<int>(int)", "make_point", 50, 50, 0 },
		{ "geo::Cloud<float>::add(float)", "cloud_add", 8, 8, 0 },
		{ "names::make_label[abi:cxx11](int)", "make_label", 20, 20, 0 },
		{ "c_allocations", NULL, nstrdup + nasprintf, nstrdup + nasprintf, 0 },
		{ "xmalloc", "xmalloc", 1, 1, 0 },
		/* libstdc++'s __cxa_allocate_exception, and the message's
		 * string runtime_error makes: the throw's line */
		{ "thrower", "t_throw", 6, 6, 0 },
	};
	check(&t, NULL, sites, AP_ARRAY_SIZE(sites), "default");

	/* --drop-frames: the wrapper is an allocator frame, its caller's line
	 * is the call site */
	{
		struct ap_sym_options opts = { .drop_frames = "^xmalloc$" };
		s = ap_sym_new(&t, &opts, &err);
		size_t nx = 0;
		fr = NULL;
		n = alloc = 0;
		for (size_t i = 1; i < t.nstacks; i++) {
			size_t cs = ap_sym_stack(s, &t.stacks[i], &fr, &n, &alloc);
			if (cs < n && cs > 0 && !strcmp(fr[cs - 1].func, "xmalloc")) {
				nx++;
				CHECK(fr[cs - 1].allocator && !strcmp(fr[cs].func, "c_allocations") &&
				      me && fr[cs].line == symtest_site_line(me, "t_xmalloc"),
				      "drop xmalloc: call site %s:%d", fr[cs].func, fr[cs].line);
			}
		}
		CHECK(nx == 1, "drop xmalloc: %zu stacks through xmalloc", nx);
		free(fr);
		ap_sym_free(s);
	}

	free(me);
	symtest_maps_free(&t);
	free(t.stacks);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("call sites: %d stacks through operator new, std::vector, std::string, strdup, asprintf\n",
		       rec.n);
	return failures ? 1 : 0;
}
