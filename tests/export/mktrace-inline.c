/* A trace of real stacks with inlined frames, for the comparisons with go
 * tool pprof: testdata/inline.c runs in this process (linked in as
 * inline_main) with malloc, calloc and strdup wrapped; each call's stack
 * (return addresses, innermost first, as the sampler records them) and size
 * becomes an allocation in the trace, and every third block is freed so
 * that in-use values differ from alloc values.
 * usage: mktrace-inline OUT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_trace_writer.h"
#include "symtest.h"
#include "symtest_maps.h"

int inline_main(void);

static struct symtest_rec rec;
static uint64_t sizes[SYMTEST_MAXSTACKS];

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
char *__wrap_strdup(const char *s);

/* symtest_record is always inlined: it must sit in the wrapper itself. */
#define RECORD(size)                                                          \
	do {                                                                  \
		int before_ = rec.n;                                          \
		symtest_record(&rec);                                         \
		if (rec.n > before_)                                          \
			sizes[before_] = (size);                              \
	} while (0)

void *__wrap_malloc(size_t n)
{
	RECORD(n);
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	RECORD(n * size);
	return __real_calloc(n, size);
}

char *__wrap_strdup(const char *s)
{
	RECORD(strlen(s) + 1);
	return __real_strdup(s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mktrace-inline OUT\n");
		return 2;
	}
	/* backtrace() loads libgcc_s on first use: do it before recording */
	void *warm[4];
	backtrace(warm, 4);
	rec.armed = true;
	int rc = inline_main();
	rec.armed = false;
	if (rc != 0 || rec.n == 0 || rec.n >= SYMTEST_MAXSTACKS) {
		fprintf(stderr, "mktrace-inline: inline_main returned %d, %d stacks\n", rc, rec.n);
		return 1;
	}

	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0) {
		perror("mktrace-inline: /proc/self/exe");
		return 1;
	}
	exe[len] = 0;
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.exe = exe;
	const char *const args[] = { exe };
	h.argv = args;
	h.argc = 1;
	struct ap_tw *tw = ap_tw_new(&h);
	struct ap_trace maps = { 0 };
	symtest_maps(&maps);
	for (size_t i = 0; i < maps.nmaps; i++) {
		const struct ap_mapping *m = &maps.maps[i];
		ap_tw_mapping(tw, m->bias, m->path, m->build_id, m->build_id_len, m->segs,
			      m->nsegs);
	}
	symtest_maps_free(&maps);
	ap_tw_thread(tw, 1000, "inline");
	uint64_t ts = h.start_ns;
	for (int i = 0; i < rec.n; i++) {
		uint32_t st = ap_tw_stack(tw, rec.pcs[i], rec.depth[i]);
		uint64_t addr = 0x7f0000000000 + (uint64_t)i * 0x1000;
		ap_tw_alloc(tw, 1000, ts += 100, 0, AP_KIND_MALLOC, addr, sizes[i], st);
		if (i % 3 == 0)
			ap_tw_free(tw, 1000, ts += 100, 0, addr);
	}
	struct ap_tw_end end = { .end_ns = ts + 1000, .reason = AP_END_EXIT };
	ap_tw_end(tw, &end);
	struct ap_error err;
	if (ap_tw_close(tw, argv[1], &err)) {
		fprintf(stderr, "mktrace-inline: %s\n", err.msg);
		return 1;
	}
	return 0;
}
