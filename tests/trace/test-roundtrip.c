/* Unit tests of the trace reader against the test writer: what is written
 * comes back exactly (header, mappings, stacks, threads, events in merged
 * order, realloc splitting), totals equal values fixed by construction, and
 * each class of bad input gives its error. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_writer.h"
#include <zstd.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

#define CHECK_U(a, b)                                                                              \
	CHECK((uint64_t)(a) == (uint64_t)(b), "%s = %llu, expected %llu", #a,                      \
	      (unsigned long long)(a), (unsigned long long)(b))

#define CHECK_D(a, b)                                                                              \
	CHECK(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9,                  \
	      "%s = %.17g, expected %.17g", #a, (double)(a), (double)(b))

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void)
{
	/* xorshift64*: a fixed seed, the same sequence on every run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static struct ap_trace *read_back(struct ap_tw *tw, const char *name)
{
	uint8_t *data;
	size_t len;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, &len, &err) < 0) {
		fprintf(stderr, "%s: writer: %s\n", name, err.msg);
		failures++;
		return NULL;
	}
	struct ap_trace *t = NULL;
	if (ap_trace_read_mem(data, len, name, &t, &err) < 0) {
		fprintf(stderr, "%s: reader: %s\n", name, err.msg);
		failures++;
		t = NULL;
	}
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	free(data);
	return t;
}

/* Reads `data` expecting failure with a message that contains `want`. */
static void expect_error(const uint8_t *data, size_t len, const char *want)
{
	struct ap_trace *t = NULL;
	struct ap_error err = {""};
	int rc = ap_trace_read_mem(data, len, "bad.trace", &t, &err);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	CHECK(rc < 0, "expected failure with \"%s\", got success", want);
	if (rc < 0)
		CHECK(strstr(err.msg, want) != NULL, "error \"%s\" lacks \"%s\"", err.msg, want);
	ap_trace_free(t);
}

static void test_header_and_meta(void)
{
	static const char *const argv[] = {"./app", "--flag", "", "last arg"};
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = 524288;
	h.flags = 0;
	h.pid = 4242;
	h.ppid = 77;
	h.exe = "/usr/bin/app";
	h.argv = argv;
	h.argc = 4;
	h.cpus = 16;
	h.allowed_cpus = 3; /* taskset -c 0-2 */
	h.start_realtime_ns = 1712345678901234567ull;
	h.start_ns = 555000000000ull;
	h.max_depth = 32;
	h.page_size = 16384;
	h.sampler = "allocprof 9.9";
	h.parent_trace = "/tmp/parent.trace";
	struct ap_tw *tw = ap_tw_new(&h);

	uint8_t bid[20];
	for (int i = 0; i < 20; i++)
		bid[i] = (uint8_t)(0xa0 + i);
	struct ap_segment segs[2] = {
	    {.vaddr = 0, .memsz = 0x1000, .offset = 0, .flags = 4},
	    {.vaddr = 0x1000, .memsz = 0x2345, .offset = 0x1000, .flags = 5},
	};
	ap_tw_mapping(tw, 0x555555554000ull, "/usr/bin/app", bid, 20, segs, 2);
	struct ap_segment libseg = {
	    .vaddr = 0x20000, .memsz = 0x10000, .offset = 0x20000, .flags = 5};
	ap_tw_mapping(tw, 0x7f0000000000ull, "/lib/libc.so.6", NULL, 0, &libseg, 1);
	/* a later library over part of libc's range: wins there */
	struct ap_segment over = {.vaddr = 0x28000, .memsz = 0x1000, .offset = 0, .flags = 5};
	ap_tw_mapping(tw, 0x7f0000000000ull, "/tmp/late.so", NULL, 0, &over, 1);

	uint64_t pcs1[] = {0x555555555123ull, 0x555555555000ull, 0x7f0000021000ull};
	uint64_t pcs2[] = {UINT64_MAX, 1, UINT64_MAX - 7}; /* extreme deltas */
	CHECK_U(ap_tw_stack(tw, pcs1, 3), 1);
	CHECK_U(ap_tw_stack(tw, pcs2, 3), 2);
	CHECK_U(ap_tw_stack(tw, pcs1, 3), 1); /* deduplicated */
	CHECK_U(ap_tw_stack(tw, pcs1, 2), 3); /* a prefix is another stack */
	CHECK_U(ap_tw_stack(tw, NULL, 0), 4);
	ap_tw_thread(tw, 4242, "app");
	ap_tw_thread(tw, 4243, "worker-1");
	ap_tw_alloc(tw, 4243, 555000000100ull, 3, AP_KIND_MALLOC, 0x1000, 10, 1);
	struct ap_tw_end end = {.end_ns = 555000009999ull,
				.reason = AP_END_SIGNAL,
				.status = 6,
				.calls = 123456789012ull,
				.bytes = 98765432109876ull};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "header");
	if (!t)
		return;
	CHECK_U(t->rate, 524288);
	CHECK_U(t->flags, 0);
	CHECK_U(t->pid, 4242);
	CHECK_U(t->ppid, 77);
	CHECK(!strcmp(t->exe, "/usr/bin/app"), "exe %s", t->exe);
	CHECK_U(t->argc, 4);
	for (size_t i = 0; i < 4 && i < t->argc; i++)
		CHECK(!strcmp(t->argv[i], argv[i]), "argv[%zu] = \"%s\"", i, t->argv[i]);
	CHECK(t->argv[t->argc] == NULL, "argv not NULL-terminated");
	CHECK_U(t->cpus, 16);
	CHECK_U(t->allowed_cpus, 3);
	CHECK_U(t->start_realtime_ns, 1712345678901234567ull);
	CHECK_U(t->start_ns, 555000000000ull);
	CHECK_U(t->max_depth, 32);
	CHECK_U(t->page_size, 16384);
	CHECK(!strcmp(t->sampler, "allocprof 9.9"), "sampler %s", t->sampler);
	CHECK(t->parent_trace && !strcmp(t->parent_trace, "/tmp/parent.trace"), "parent_trace");
	CHECK(t->has_end, "no end");
	CHECK(!t->truncated, "truncated: %s", t->truncated_why);
	CHECK_U(t->end_ns, 555000009999ull);
	CHECK_U(t->end_reason, AP_END_SIGNAL);
	CHECK_U(t->end_status, 6);
	CHECK_U(t->calls, 123456789012ull);
	CHECK_U(t->bytes, 98765432109876ull);
	CHECK_U(t->bytes_used, t->file_size);

	CHECK_U(t->nmaps, 3);
	if (t->nmaps == 3) {
		const struct ap_mapping *m = &t->maps[0];
		CHECK_U(m->bias, 0x555555554000ull);
		CHECK_U(m->start, 0x555555554000ull);
		CHECK_U(m->end, 0x555555554000ull + 0x3345);
		CHECK(!strcmp(m->path, "/usr/bin/app"), "path %s", m->path);
		CHECK_U(m->build_id_len, 20);
		CHECK(!memcmp(m->build_id, bid, 20), "build-id differs");
		CHECK_U(m->nsegs, 2);
		CHECK_U(m->segs[1].vaddr, 0x1000);
		CHECK_U(m->segs[1].memsz, 0x2345);
		CHECK_U(m->segs[1].offset, 0x1000);
		CHECK_U(m->segs[1].flags, 5);
		CHECK_U(t->maps[1].build_id_len, 0);
		CHECK(ap_trace_mapping_for(t, 0x555555554000ull) == &t->maps[0], "map start");
		CHECK(ap_trace_mapping_for(t, 0x555555557344ull) == &t->maps[0], "map last byte");
		CHECK(ap_trace_mapping_for(t, 0x555555557345ull) == NULL, "map end");
		CHECK(ap_trace_mapping_for(t, 0x555555553fffull) == NULL, "before map");
		CHECK(ap_trace_mapping_for(t, 0) == NULL, "pc 0");
		CHECK(ap_trace_mapping_for(t, 0x7f0000020000ull) == &t->maps[1], "libc start");
		CHECK(ap_trace_mapping_for(t, 0x7f0000027fffull) == &t->maps[1],
		      "libc before hole");
		/* a module written over another's range begins an era: its
		 * addresses (and the PCs in its range of the stacks written
		 * after it) are read with the era's tag, era << 56 */
		uint64_t era1 = (uint64_t)1 << 56;
		CHECK_U(t->maps[2].start, era1 + 0x7f0000028000ull);
		CHECK_U(t->maps[2].bias, era1 + 0x7f0000000000ull);
		CHECK(ap_trace_mapping_for(t, 0x7f0000028000ull) == &t->maps[1], "the earlier, untagged");
		CHECK(ap_trace_mapping_for(t, era1 + 0x7f0000028000ull) == &t->maps[2], "later, its era");
		CHECK(ap_trace_mapping_for(t, era1 + 0x7f0000028fffull) == &t->maps[2], "later, its era, end");
		CHECK(ap_trace_mapping_for(t, 0x7f0000029000ull) == &t->maps[1], "libc after hole");
		CHECK(ap_trace_mapping_for(t, 0x7f000002ffffull) == &t->maps[1], "libc last");
		CHECK(ap_trace_mapping_for(t, 0x7f0000030000ull) == NULL, "libc end");
		CHECK(ap_trace_mapping_for(t, UINT64_MAX) == NULL, "max pc");
	}
	CHECK_U(t->nstacks, 5);
	if (t->nstacks == 5) {
		CHECK_U(t->stacks[0].depth, 0);
		CHECK_U(t->stacks[1].depth, 3);
		for (int i = 0; i < 3; i++) {
			CHECK_U(t->stacks[1].pcs[i], pcs1[i]);
			CHECK_U(t->stacks[2].pcs[i], pcs2[i]);
		}
		CHECK_U(t->stacks[3].depth, 2);
		CHECK_U(t->stacks[4].depth, 0);
	}
	CHECK_U(t->nthreads, 2);
	if (t->nthreads == 2) {
		CHECK_U(t->threads[0].tid, 4242);
		CHECK(!strcmp(t->threads[0].name, "app"), "name %s", t->threads[0].name);
		CHECK_U(t->threads[0].events, 0);
		CHECK_U(t->threads[1].tid, 4243);
		CHECK(!strcmp(t->threads[1].name, "worker-1"), "name %s", t->threads[1].name);
		CHECK_U(t->threads[1].events, 1);
	}
	CHECK_U(t->nev, 1);
	if (t->nev == 1) {
		CHECK_U(t->ev[0].cpu, 3);
		CHECK_U(t->ev[0].thread, 1);
	}
	CHECK_D(ap_trace_weight(t, 0), 1.0 / (1.0 - exp(-1.0 / 524288.0)));
	ap_trace_free(t);
}

/* Realloc splitting, kinds, cpu changes, extreme values, one thread. */
static void test_events_single(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 16); /* a chunk every record or two */
	uint64_t pc = 0x401000;
	uint32_t s1 = ap_tw_stack(tw, &pc, 1);
	uint64_t base = h.start_ns;
	uint32_t tid = 1000;
	ap_tw_alloc(tw, tid, base + 1, 0, AP_KIND_MALLOC, 0x10, 0, s1); /* 0-size */
	/* huge: the highest address an allocation can have (test_no_address) */
	ap_tw_alloc(tw, tid, base + 1, 1, AP_KIND_CALLOC, AP_ANON_BASE - 16, UINT64_MAX, s1);
	ap_tw_alloc(tw, tid, base + 5, 65535, AP_KIND_ALIGNED, 0x20, 100, s1);
	ap_tw_realloc(tw, tid, base + 6, 65535, AP_KIND_REALLOC, 0x20, 0x7fffffff0000ull, 200, s1,
		      AP_RF_OLD_TRACKED | AP_RF_NEW_SAMPLED);
	ap_tw_realloc(tw, tid, base + 7, 2, AP_KIND_REALLOCARRAY, 0x7fffffff0000ull, 0x30, 300, 0,
		      AP_RF_OLD_TRACKED);
	ap_tw_realloc(tw, tid, base + 8, 2, AP_KIND_REALLOC, 0, 0x40, 50, s1, AP_RF_NEW_SAMPLED);
	ap_tw_free(tw, tid, base + 8, 2, 0x30);
	ap_tw_free(tw, tid, UINT64_MAX, 0, 0x10); /* the largest time */
	struct ap_tw_end end = {.end_ns = UINT64_MAX};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "single");
	if (!t)
		return;
	CHECK_U(t->allowed_cpus, 0); /* a header without the key: not said */
	struct ap_event want[] = {
	    {base + 1, 0x10, 0, s1, 0, 0, AP_EV_ALLOC, AP_KIND_MALLOC, AP_EVF_SAMPLED, 0},
	    {base + 1, AP_ANON_BASE - 16, UINT64_MAX, s1, 0, 1, AP_EV_ALLOC, AP_KIND_CALLOC,
	     AP_EVF_SAMPLED, 0},
	    {base + 5, 0x20, 100, s1, 0, 65535, AP_EV_ALLOC, AP_KIND_ALIGNED, AP_EVF_SAMPLED, 0},
	    {base + 6, 0x20, 0, 0, 0, 65535, AP_EV_FREE, 0, AP_EVF_FROM_REALLOC, 0},
	    {base + 6, 0x7fffffff0000ull, 200, s1, 0, 65535, AP_EV_ALLOC, AP_KIND_REALLOC,
	     AP_EVF_SAMPLED | AP_EVF_REALLOC, 0},
	    {base + 7, 0x7fffffff0000ull, 0, 0, 0, 2, AP_EV_FREE, 0, AP_EVF_FROM_REALLOC, 0},
	    {base + 7, 0x30, 300, 0, 0, 2, AP_EV_ALLOC, AP_KIND_REALLOCARRAY, AP_EVF_REALLOC, 0},
	    {base + 8, 0x40, 50, s1, 0, 2, AP_EV_ALLOC, AP_KIND_REALLOC,
	     AP_EVF_SAMPLED | AP_EVF_REALLOC, 0},
	    {base + 8, 0x30, 0, 0, 0, 2, AP_EV_FREE, 0, 0, 0},
	    {UINT64_MAX, 0x10, 0, 0, 0, 0, AP_EV_FREE, 0, 0, 0},
	};
	size_t n = AP_ARRAY_SIZE(want);
	CHECK_U(t->nev, n);
	for (size_t i = 0; i < n && i < t->nev; i++) {
		const struct ap_event *g = &t->ev[i], *w = &want[i];
		CHECK(g->ts == w->ts && g->addr == w->addr && g->size == w->size &&
			  g->stack == w->stack && g->thread == w->thread && g->cpu == w->cpu &&
			  g->type == w->type && g->kind == w->kind && g->flags == w->flags,
		      "event %zu: got ts %llu addr %#llx size %llu stack %u thread %u cpu %u type "
		      "%u kind %u flags %u",
		      i, (unsigned long long)g->ts, (unsigned long long)g->addr,
		      (unsigned long long)g->size, g->stack, g->thread, g->cpu, g->type, g->kind,
		      g->flags);
	}
	CHECK_U(t->nrecords, 8);
	CHECK_U(t->nthreads, 1);
	if (t->nthreads)
		CHECK_U(t->threads[0].events, 8);

	/* Totals, rate 1: allocs 0x10(0) huge 0x20(100) 0x7fff..(200) 0x40(50) sampled;
	 * 0x30(300) is a tracked, unsampled block. */
	struct ap_trace_totals tot;
	struct ap_error err;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	double huge = (double)UINT64_MAX;
	CHECK_D(tot.alloc_objects, 5);
	CHECK_D(tot.alloc_space, 0 + huge + 100 + 200 + 50);
	/* frees: 0x20 (1), 0x7fff.. (1), 0x30 (unsampled: 0), 0x10 (1) */
	CHECK_D(tot.free_objects, 3);
	CHECK_D(tot.inuse_objects, 2); /* huge and 0x40 */
	CHECK_D(tot.inuse_space, huge + 50);
	CHECK_D(tot.peak_inuse_space, huge + 200); /* live peaks after the 200-byte realloc */
	CHECK_U(tot.events, 8);
	CHECK_U(tot.samples, 5);
	CHECK_U(tot.unmatched_frees, 0);
	ap_trace_free(t);
}

/* The peak and in-use with a sampling rate: weights computed here from the
 * formula in the format doc. */
static double weight(uint64_t size, uint64_t rate)
{
	return 1.0 / (1.0 - exp(-((double)size + 1.0) / (double)rate));
}

static void test_totals_weighted(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = 1000;
	h.flags = 0;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	uint32_t s = ap_tw_stack(tw, &pc, 1);
	uint64_t ts = h.start_ns;
	/* A at 0x100 (size 10), B at 0x200 (size 5000), free A, C at 0x100
	 * (size 999), free of an unknown block, free B, a realloc of C to D
	 * (size 3000, sampled), D stays live. */
	ap_tw_alloc(tw, 1, ts + 1, 0, 0, 0x100, 10, s);
	ap_tw_alloc(tw, 1, ts + 2, 0, 0, 0x200, 5000, s);
	ap_tw_free(tw, 1, ts + 3, 0, 0x100);
	ap_tw_alloc(tw, 1, ts + 4, 0, 0, 0x100, 999, s);
	ap_tw_free(tw, 1, ts + 5, 0, 0x999);
	ap_tw_free(tw, 1, ts + 6, 0, 0x200);
	ap_tw_realloc(tw, 1, ts + 7, 0, AP_KIND_REALLOC, 0x100, 0x300, 3000, s,
		      AP_RF_OLD_TRACKED | AP_RF_NEW_SAMPLED);
	struct ap_tw_end end = {.end_ns = ts + 100};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "weighted");
	if (!t)
		return;
	double wa = weight(10, 1000), wb = weight(5000, 1000), wc = weight(999, 1000),
	       wd = weight(3000, 1000);
	struct ap_trace_totals tot;
	struct ap_error err;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK_D(tot.alloc_objects, wa + wb + wc + wd);
	CHECK_D(tot.alloc_space, wa * 10 + wb * 5000 + wc * 999 + wd * 3000);
	CHECK_D(tot.free_objects, wa + wb + wc);
	CHECK_D(tot.inuse_objects, wd);
	CHECK_D(tot.inuse_space, wd * 3000);
	/* live after each step: A, A+B, B, B+C, (unmatched), C, D */
	double peak = fmax(fmax(wa * 10 + wb * 5000, wb * 5000 + wc * 999), wd * 3000);
	CHECK_D(tot.peak_inuse_space, peak);
	CHECK_U(tot.unmatched_frees, 1);
	CHECK_U(tot.samples, 4);
	CHECK_U(tot.events, 7);
	ap_trace_free(t);
}

/* inuse_objects' error bar: sqrt(sum w(w-1)) over the samples live at the
 * end (Horvitz-Thompson), the live samples counted; END's live-byte peak
 * read back, and absent from a trace without it. */
static void test_inuse_error(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = 1000;
	h.flags = 0;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	uint32_t s = ap_tw_stack(tw, &pc, 1);
	uint64_t ts = h.start_ns;
	ap_tw_alloc(tw, 1, ts + 1, 0, 0, 0x100, 10, s);
	ap_tw_alloc(tw, 1, ts + 2, 0, 0, 0x200, 50, s);
	ap_tw_alloc(tw, 1, ts + 3, 0, 0, 0x300, 100, s);
	ap_tw_alloc(tw, 1, ts + 4, 0, 0, 0x400, 5000, s);
	ap_tw_free(tw, 1, ts + 5, 0, 0x200);
	struct ap_tw_end end = {.end_ns = ts + 100, .live_peak = 12345, .live_slack = 16384,
				.has_switches = true, .nvcsw = 0, .nivcsw = 987654321,
				.unwind_ns = 5555, .has_minflt = true, .minflt = 0,
				.sampler_waits = 3, .sampler_wait_ns = 4500000};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "inuse error");
	if (!t)
		return;
	double wa = weight(10, 1000), wc = weight(100, 1000), wd = weight(5000, 1000);
	struct ap_trace_totals tot;
	struct ap_error err;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK_D(tot.inuse_objects, wa + wc + wd);
	CHECK_D(tot.inuse_objects_sd, sqrt(wa * (wa - 1) + wc * (wc - 1) + wd * (wd - 1)));
	CHECK_U(tot.inuse_samples, 3);
	CHECK(t->has_live_peak, "END's live_peak not read");
	CHECK_U(t->live_peak, 12345);
	CHECK_U(t->live_slack, 16384);
	CHECK(t->has_switches, "END's nvcsw not read");
	CHECK_U(t->nvcsw, 0);
	CHECK_U(t->nivcsw, 987654321);
	CHECK_U(t->unwind_ns, 5555);
	CHECK(t->has_minflt, "END's minflt not read");
	CHECK_U(t->minflt, 0);
	CHECK_U(t->sampler_waits, 3);
	CHECK_U(t->sampler_wait_ns, 4500000);
	ap_trace_free(t);

	/* every allocation recorded: exact, no error; no live peak in END */
	ap_tw_header_init(&h);
	tw = ap_tw_new(&h);
	s = ap_tw_stack(tw, &pc, 1);
	ap_tw_alloc(tw, 1, ts + 1, 0, 0, 0x100, 10, s);
	struct ap_tw_end end2 = {.end_ns = ts + 100};
	ap_tw_end(tw, &end2);
	t = read_back(tw, "inuse exact");
	if (!t)
		return;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK_D(tot.inuse_objects, 1);
	CHECK_D(tot.inuse_objects_sd, 0);
	CHECK(!t->has_live_peak, "a live_peak read from an END without one");
	CHECK(!t->has_switches, "switches read from an END without them");
	CHECK_U(t->unwind_ns, 0);
	ap_trace_free(t);
}

/* Several threads, random times and chunk sizes: the reader's order must be
 * the stable merge, ties by thread index. Each thread frees only blocks it
 * allocated earlier, in its own address range, so no event is ever out of
 * order and the merge has no reason to hold one back (test_cross_thread
 * tests that). */
struct gen_ev {
	uint64_t ts, addr, size;
	uint32_t tid_idx, cpu, stack, seq;
	int type;
};

static int gen_cmp(const void *a, const void *b)
{
	const struct gen_ev *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->tid_idx != y->tid_idx)
		return x->tid_idx < y->tid_idx ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool same_event(const struct ap_event *a, const struct ap_event *b)
{
	return a->ts == b->ts && a->addr == b->addr && a->size == b->size &&
	       a->stack == b->stack && a->thread == b->thread && a->cpu == b->cpu &&
	       a->type == b->type && a->kind == b->kind && a->flags == b->flags;
}

static void test_merge(unsigned nthreads, unsigned per_thread, size_t chunk)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, chunk);
	uint32_t stacks[8];
	for (int i = 0; i < 8; i++) {
		uint64_t pcs[3] = {0x400000 + rnd() % 0x10000, rnd(), rnd() % 100};
		stacks[i] = ap_tw_stack(tw, pcs, (uint32_t)(i % 4));
	}
	for (unsigned k = 0; k < nthreads; k++) {
		char name[32];
		snprintf(name, sizeof(name), "t%u", k);
		ap_tw_thread(tw, 5000 + k * 7, name);
	}
	size_t total = (size_t)nthreads * per_thread;
	struct gen_ev *ev = calloc(total, sizeof(*ev));
	uint64_t *ts = calloc(nthreads, sizeof(*ts));
	uint32_t *cpu = calloc(nthreads, sizeof(*cpu));
	for (size_t i = 0; i < nthreads; i++)
		ts[i] = h.start_ns;
	size_t n = 0;
	uint32_t *seq = calloc(nthreads, sizeof(*seq));
	uint64_t **live = calloc(nthreads, sizeof(*live));
	size_t *nlive = calloc(nthreads, sizeof(*nlive));
	for (size_t k = 0; k < nthreads; k++)
		live[k] = calloc(per_thread, sizeof(**live));
	for (size_t i = 0; i < total; i++) {
		uint32_t k = (uint32_t)(rnd() % nthreads);
		if (seq[k] >= per_thread)
			continue;
		ts[k] += rnd() % 4; /* many ties */
		if (rnd() % 5 == 0)
			cpu[k] = (uint32_t)(rnd() % 8);
		struct gen_ev *e = &ev[n++];
		e->ts = ts[k];
		e->tid_idx = k;
		e->cpu = cpu[k];
		e->seq = seq[k]++;
		e->type = rnd() % 3 || !nlive[k] ? AP_EV_ALLOC : AP_EV_FREE;
		if (e->type == AP_EV_FREE) {
			size_t j = rnd() % nlive[k];
			e->addr = live[k][j];
			live[k][j] = live[k][--nlive[k]];
		} else {
			/* fresh: a sequence number in the thread's range, at
			 * random low or high bits (small and 10-byte deltas) */
			uint64_t fresh = (uint64_t)k << 32 | seq[k];
			e->addr = (rnd() % 3 == 0) ? fresh << 24 | 0x8000000000000001ull
						   : 0x10000 + fresh * 16;
			live[k][nlive[k]++] = e->addr;
		}
		e->size = e->type == AP_EV_ALLOC ? (rnd() % 7 == 0 ? rnd() : rnd() % 5000) : 0;
		e->stack = e->type == AP_EV_ALLOC ? stacks[rnd() % 8] : 0;
		if (e->type == AP_EV_ALLOC)
			ap_tw_alloc(tw, 5000 + k * 7, e->ts, e->cpu, AP_KIND_MALLOC, e->addr,
				    e->size, e->stack);
		else
			ap_tw_free(tw, 5000 + k * 7, e->ts, e->cpu, e->addr);
	}
	struct ap_tw_end end = {.end_ns = h.start_ns + 1000000};
	ap_tw_end(tw, &end);
	char name[64];
	snprintf(name, sizeof(name), "merge-%u-%zu", nthreads, chunk);
	struct ap_trace *t = read_back(tw, name);
	if (t) {
		qsort(ev, n, sizeof(*ev), gen_cmp);
		CHECK_U(t->nev, n);
		CHECK_U(t->nrecords, n);
		CHECK_U(t->nthreads, nthreads);
		size_t bad = 0;
		for (size_t i = 0; i < n && i < t->nev; i++) {
			const struct ap_event *g = &t->ev[i];
			const struct gen_ev *w = &ev[i];
			if (g->ts != w->ts || g->thread != w->tid_idx || g->addr != w->addr ||
			    g->size != w->size || g->cpu != w->cpu || g->type != w->type ||
			    g->stack != w->stack) {
				if (bad++ < 5)
					CHECK(0,
					      "%s: event %zu: got ts %llu thread %u addr %#llx, "
					      "want ts %llu thread %u addr %#llx",
					      name, i, (unsigned long long)g->ts, g->thread,
					      (unsigned long long)g->addr,
					      (unsigned long long)w->ts, w->tid_idx,
					      (unsigned long long)w->addr);
			}
		}
		/* two iterations from the file at once, in turns, batch by
		 * batch: the same events as the whole read */
		struct ap_event *all = t->ev;
		t->ev = NULL;
		struct ap_events *it[2] = { ap_events_open(t), ap_events_open(t) };
		size_t got[2] = { 0, 0 }, batches = 0;
		for (bool more = true; more;) {
			more = false;
			for (int j = 0; j < 2; j++) {
				const struct ap_event *b;
				size_t k = ap_events_next(it[j], &b);
				for (size_t x = 0; x < k && got[j] + x < t->nev; x++)
					if (!same_event(&b[x], &all[got[j] + x]) && bad++ < 5)
						CHECK(0, "%s: iteration %d: event %zu differs", name, j,
						      got[j] + x);
				got[j] += k;
				batches += k > 0;
				more = more || k;
			}
		}
		CHECK(got[0] == t->nev && got[1] == t->nev, "%s: iterations gave %zu and %zu of %zu",
		      name, got[0], got[1], t->nev);
		CHECK(batches >= 2 * ((t->nev + 4095) / 4096), "%s: %zu batches", name, batches);
		ap_events_close(it[0]);
		ap_events_close(it[1]);
		t->ev = all;
		for (unsigned k = 0; k < nthreads && k < t->nthreads; k++) {
			CHECK_U(t->threads[k].tid, 5000 + k * 7);
			CHECK_U(t->threads[k].events, seq[k]);
		}
		ap_trace_free(t);
	}
	for (size_t k = 0; k < nthreads; k++)
		free(live[k]);
	free(live);
	free(nlive);
	free(seq);
	free(cpu);
	free(ts);
	free(ev);
}

/* Events carry their quantum's time: within a quantum the merge cannot see
 * which thread went first, and holds back a FREE of a block not yet
 * allocated (or an ALLOC at a live address) until the event of another
 * thread that explains it. Thread index 0 (tid 10) frees and reallocs what
 * thread 1 (tid 20) allocates in the same quantum, and hands addresses
 * back; whatever the ties, every FREE must find its block and every ALLOC a
 * free address. */
static void test_cross_thread(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 1000;
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 40);
	uint64_t pc = 0x401000;
	uint32_t s = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, 10, "a");
	ap_tw_thread(tw, 20, "b");
	uint64_t t0 = 5000000;
	/* quantum 5000: b allocates x, a frees it (ts written later in the
	 * quantum, yet a's stream has the lower index) */
	ap_tw_alloc(tw, 20, t0 + 100, 0, 0, 0x1000, 64, s);
	ap_tw_free(tw, 10, t0 + 900, 1, 0x1000);
	/* quantum 5001: a allocates y; b frees y, allocates x again at once;
	 * a reallocs x (old tracked) into z; b frees z */
	ap_tw_alloc(tw, 10, t0 + 1000, 1, 0, 0x2000, 32, s);
	ap_tw_free(tw, 20, t0 + 1100, 0, 0x2000);
	ap_tw_alloc(tw, 20, t0 + 1200, 0, 0, 0x1000, 48, s);
	ap_tw_realloc(tw, 10, t0 + 1300, 1, AP_KIND_REALLOC, 0x1000, 0x3000, 96, s,
		      AP_RF_NEW_SAMPLED | AP_RF_OLD_TRACKED);
	ap_tw_free(tw, 20, t0 + 1400, 0, 0x3000);
	/* quantum 5002: a block freed by a thread that never saw it allocated
	 * (before the sampler started): held, then let go, unmatched */
	ap_tw_free(tw, 10, t0 + 2000, 1, 0x9000);
	ap_tw_alloc(tw, 20, t0 + 2100, 0, 0, 0x4000, 8, s);
	/* quantum 5003: a's ALLOC at an address b frees in the same quantum */
	ap_tw_free(tw, 20, t0 + 3000, 0, 0x4000);
	ap_tw_alloc(tw, 10, t0 + 3100, 1, 0, 0x4000, 16, s);
	struct ap_tw_end end = {.end_ns = t0 + 10000};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "cross-thread");
	if (!t)
		return;
	static const struct {
		uint64_t ts;
		uint16_t thread;
		uint8_t type;
		uint64_t addr;
	} want[] = {
	    {5000000, 1, AP_EV_ALLOC, 0x1000}, {5000000, 0, AP_EV_FREE, 0x1000},
	    {5001000, 0, AP_EV_ALLOC, 0x2000}, {5001000, 1, AP_EV_FREE, 0x2000},
	    {5001000, 1, AP_EV_ALLOC, 0x1000}, {5001000, 0, AP_EV_FREE, 0x1000},
	    {5001000, 0, AP_EV_ALLOC, 0x3000}, {5001000, 1, AP_EV_FREE, 0x3000},
	    {5002000, 1, AP_EV_ALLOC, 0x4000}, {5002000, 0, AP_EV_FREE, 0x9000},
	    {5003000, 1, AP_EV_FREE, 0x4000},  {5003000, 0, AP_EV_ALLOC, 0x4000},
	};
	CHECK_U(t->nev, AP_ARRAY_SIZE(want));
	for (size_t i = 0; i < AP_ARRAY_SIZE(want) && i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		CHECK(e->ts == want[i].ts && e->thread == want[i].thread &&
			  e->type == want[i].type && e->addr == want[i].addr,
		      "cross-thread: event %zu: got ts %llu thread %u type %u addr %#llx, want ts "
		      "%llu thread %u type %u addr %#llx",
		      i, (unsigned long long)e->ts, e->thread, e->type, (unsigned long long)e->addr,
		      (unsigned long long)want[i].ts, want[i].thread, want[i].type,
		      (unsigned long long)want[i].addr);
	}
	struct ap_trace_totals tot;
	struct ap_error err;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK_U(tot.unmatched_frees, 1);
	CHECK_D(tot.alloc_objects, 6);
	CHECK_D(tot.free_objects, 5);
	CHECK_D(tot.inuse_space, 16);
	ap_trace_free(t);
}

/* A writer of 1 us quanta with threads a (tid 10) and b (20) and one
 * stack, *s. */
static struct ap_tw *two_threads(uint32_t *s)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 1000;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	*s = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, 10, "a");
	ap_tw_thread(tw, 20, "b");
	return tw;
}

/* The same address reused within a quantum by a thread that frees some of
 * its blocks itself and passes one on: another thread's FREE at that
 * address is of the block passed on, not of one its own thread frees
 * later in the quantum (a block is freed once). Thread a (index 0, first
 * in ties) frees what b passes on; in quantum 7000 a's FREE waits from the
 * start, in 7001 it comes after a FREE of its own that waited. */
static void test_cross_thread_reuse(void)
{
	uint32_t s;
	struct ap_tw *tw = two_threads(&s);
	uint64_t t0 = 7000000;
	/* b: its own 8 bytes at x, freed; 16 bytes at x, passed to a */
	ap_tw_free(tw, 10, t0 + 900, 0, 0x5000);
	ap_tw_alloc(tw, 20, t0 + 100, 1, 0, 0x5000, 8, s);
	ap_tw_free(tw, 20, t0 + 200, 1, 0x5000);
	ap_tw_alloc(tw, 20, t0 + 300, 1, 0, 0x5000, 16, s);
	/* quantum 7001: b allocates x (own), y (passed), frees x, allocates x
	 * (passed); a frees y, then x */
	ap_tw_free(tw, 10, t0 + 1800, 0, 0x6000);
	ap_tw_free(tw, 10, t0 + 1900, 0, 0x5000);
	ap_tw_alloc(tw, 20, t0 + 1100, 1, 0, 0x5000, 24, s);
	ap_tw_alloc(tw, 20, t0 + 1200, 1, 0, 0x6000, 32, s);
	ap_tw_free(tw, 20, t0 + 1300, 1, 0x5000);
	ap_tw_alloc(tw, 20, t0 + 1400, 1, 0, 0x5000, 40, s);
	struct ap_tw_end end = {.end_ns = t0 + 10000};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "cross-thread reuse");
	if (!t)
		return;
	static const struct {
		uint16_t thread;
		uint8_t type;
		uint64_t addr, size;
	} want[] = {
	    {1, AP_EV_ALLOC, 0x5000, 8}, {1, AP_EV_FREE, 0x5000, 0},  {1, AP_EV_ALLOC, 0x5000, 16},
	    {0, AP_EV_FREE, 0x5000, 0},  {1, AP_EV_ALLOC, 0x5000, 24}, {1, AP_EV_ALLOC, 0x6000, 32},
	    {0, AP_EV_FREE, 0x6000, 0},  {1, AP_EV_FREE, 0x5000, 0},  {1, AP_EV_ALLOC, 0x5000, 40},
	    {0, AP_EV_FREE, 0x5000, 0},
	};
	CHECK_U(t->nev, AP_ARRAY_SIZE(want));
	for (size_t i = 0; i < AP_ARRAY_SIZE(want) && i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		CHECK(e->thread == want[i].thread && e->type == want[i].type &&
			  e->addr == want[i].addr && e->size == want[i].size,
		      "cross-thread reuse: event %zu: got thread %u type %u addr %#llx size %llu, "
		      "want thread %u type %u addr %#llx size %llu",
		      i, e->thread, e->type, (unsigned long long)e->addr,
		      (unsigned long long)e->size, want[i].thread, want[i].type,
		      (unsigned long long)want[i].addr, (unsigned long long)want[i].size);
	}
	struct ap_trace_totals tot;
	struct ap_error err;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK_U(tot.unmatched_frees, 0);
	CHECK_D(tot.inuse_objects, 0);
	ap_trace_free(t);
}

/* The merge's order does not depend on where a thread's chunks end: in
 * quantum 7001 thread b allocates x, and a block z it frees at once,
 * then frees x itself and allocates x again, which it passes to a; a's
 * FREE of x waits for b's own FREE of x, which b's lookahead finds past
 * z, with b's chunk ending before its FREE of x (`split`) or not. */
static void test_reuse_across_chunks(bool split)
{
	uint32_t s;
	struct ap_tw *tw = two_threads(&s);
	uint64_t t0 = 7001000;
	ap_tw_free(tw, 10, t0 + 900, 0, 0x5000);
	ap_tw_alloc(tw, 20, t0 + 100, 1, 0, 0x5000, 24, s);
	ap_tw_alloc(tw, 20, t0 + 200, 1, 0, 0x7000, 8, s);
	ap_tw_free(tw, 20, t0 + 300, 1, 0x7000);
	if (split)
		ap_tw_flush(tw);
	ap_tw_free(tw, 20, t0 + 400, 1, 0x5000);
	ap_tw_alloc(tw, 20, t0 + 500, 1, 0, 0x5000, 40, s);
	struct ap_tw_end end = {.end_ns = t0 + 10000};
	ap_tw_end(tw, &end);
	struct ap_trace *t = read_back(tw, "reuse across chunks");
	if (!t)
		return;
	static const struct {
		uint16_t thread;
		uint8_t type;
		uint64_t size;
	} want[] = {
	    {1, AP_EV_ALLOC, 24}, {1, AP_EV_ALLOC, 8}, {1, AP_EV_FREE, 0},
	    {1, AP_EV_FREE, 0},	  {1, AP_EV_ALLOC, 40}, {0, AP_EV_FREE, 0},
	};
	CHECK_U(t->nev, AP_ARRAY_SIZE(want));
	for (size_t i = 0; i < AP_ARRAY_SIZE(want) && i < t->nev; i++) {
		const struct ap_event *e = &t->ev[i];
		CHECK(e->thread == want[i].thread && e->type == want[i].type &&
			  e->size == want[i].size,
		      "reuse across chunks (split %d): event %zu: got thread %u type %u size %llu, "
		      "want thread %u type %u size %llu",
		      split, i, e->thread, e->type, (unsigned long long)e->size, want[i].thread,
		      want[i].type, (unsigned long long)want[i].size);
	}
	struct ap_trace_totals tot;
	struct ap_error err;
	CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
	CHECK(tot.unmatched_frees == 0 && tot.inuse_objects == 0,
	      "reuse across chunks (split %d): %llu unmatched, %g live", split,
	      (unsigned long long)tot.unmatched_frees, tot.inuse_objects);
	ap_trace_free(t);
}

static uint8_t *finish(struct ap_tw *tw, size_t *len)
{
	uint8_t *data;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, len, &err) < 0) {
		fprintf(stderr, "writer: %s\n", err.msg);
		exit(1);
	}
	return data;
}

/* An allocation at an address no process has: at AP_ANON_MIN or above,
 * where the anonymous identities are (the merge takes an ALLOC there for
 * one at a new address, which no block can be live at). Such a trace is
 * corrupt, the ALLOC's and the REALLOC's new address alike; just below is
 * an address. */
static void test_no_address(void)
{
	static const uint64_t addr[] = {AP_ANON_BASE, ~0ull, AP_ANON_BASE - 1};
	for (size_t i = 0; i < 2 * AP_ARRAY_SIZE(addr); i++) {
		uint32_t s;
		struct ap_tw *tw = two_threads(&s);
		uint64_t a = addr[i / 2];
		if (i % 2)
			ap_tw_realloc(tw, 20, 3000000, 0, AP_KIND_REALLOC, 0x5000, a, 8, s,
				      AP_RF_NEW_SAMPLED);
		else
			ap_tw_alloc(tw, 20, 3000000, 0, 0, a, 8, s);
		ap_tw_free(tw, 20, 3005000, 0, a);
		size_t len;
		uint8_t *d = finish(tw, &len);
		struct ap_trace *t = NULL;
		struct ap_error err;
		int rc = ap_trace_read_mem(d, len, "no-address", &t, &err);
		if (a < AP_ANON_BASE)
			CHECK(rc == 0, "%#llx: %s", (unsigned long long)a, err.msg);
		else
			CHECK(rc < 0 && strstr(err.msg, "an allocation at an address no process has"),
			      "%#llx (%s): %s", (unsigned long long)a, i % 2 ? "realloc" : "alloc",
			      rc < 0 ? err.msg : "read");
		ap_trace_free(t);
		free(d);
	}
}

static struct ap_tw *small_trace(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	uint32_t s = ap_tw_stack(tw, &pc, 1);
	ap_tw_alloc(tw, 1000, h.start_ns + 10, 0, 0, 0x1000, 64, s);
	return tw;
}

static void test_truncation(void)
{
	struct ap_tw *tw = small_trace();
	struct ap_tw_end end = {.end_ns = 2000000000ull};
	size_t len;
	/* no END at all */
	uint8_t *data = finish(tw, &len);
	struct ap_trace *t = NULL;
	struct ap_error err;
	CHECK(ap_trace_read_mem(data, len, "noend", &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		CHECK(t->truncated && !t->has_end, "not truncated");
		CHECK(strstr(t->truncated_why, "no end record") != NULL, "why: %s",
		      t->truncated_why);
		CHECK_U(t->end_ns, 1000000010ull); /* the last event's time */
		CHECK_U(t->nev, 1);
		ap_trace_free(t);
	}
	free(data);

	/* END, then the file cut in the middle of a following chunk */
	tw = small_trace();
	ap_tw_end(tw, &end);
	size_t full = ap_tw_size(tw);
	ap_tw_free(tw, 1000, 1000000020ull, 0, 0x1000);
	ap_tw_flush(tw);
	data = finish(tw, &len);
	t = NULL;
	CHECK(ap_trace_read_mem(data, len - 3, "cut", &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		CHECK(t->truncated && t->has_end, "cut: truncated %d has_end %d", t->truncated,
		      t->has_end);
		char want[64];
		snprintf(want, sizeof(want), "file ends inside a chunk at byte %zu", full);
		CHECK(!strcmp(t->truncated_why, want), "why: %s", t->truncated_why);
		CHECK_U(t->bytes_used, full);
		CHECK_U(t->file_size, len - 3);
		ap_trace_free(t);
	}
	/* the complete file: chunks after END are fine, the last END counts */
	t = NULL;
	CHECK(ap_trace_read_mem(data, len, "after-end", &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		CHECK(!t->truncated && t->has_end, "after END: truncated %d", t->truncated);
		CHECK_U(t->nev, 2);
		ap_trace_free(t);
	}
	/* cut inside a header */
	t = NULL;
	CHECK(ap_trace_read_mem(data, full + 5, "cut-header", &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		CHECK(t->truncated && t->has_end, "cut header");
		ap_trace_free(t);
	}
	free(data);
}

static void test_errors(void)
{
	size_t len;
	uint8_t *good = finish(small_trace(), &len);
	uint8_t *d = malloc(len);

	expect_error(good, 0, "bad.trace: not an allocprof trace");
	expect_error((const uint8_t *)"hello world, this is text\n", 26,
		     "bad.trace: not an allocprof trace");
	expect_error(good, 12, "bad.trace: truncated trace: the file ends inside its preamble");
	expect_error(good, 16, "bad.trace: no header chunk");
	expect_error(good, 30, "bad.trace: no header chunk");

	memcpy(d, good, len);
	ap_put_u32le(d + 8, AP_TRACE_VERSION + 1);
	{
		char want[160];
		snprintf(want, sizeof(want),
			 "bad.trace: trace format version %u, this allocprof reads %u: recorded by "
			 "a newer allocprof", AP_TRACE_VERSION + 1, AP_TRACE_VERSION);
		expect_error(d, len, want);
	}
	/* one version is read: the one before it is recorded again */
	for (uint32_t v = 2; v < AP_TRACE_VERSION; v++) {
		char want[160];
		memcpy(d, good, len);
		ap_put_u32le(d + 8, v);
		snprintf(want, sizeof(want),
			 "bad.trace: trace format version %u, this allocprof reads %u: recorded by "
			 "an older allocprof (record it again)", v, AP_TRACE_VERSION);
		expect_error(d, len, want);
	}
	memcpy(d, good, len);
	ap_put_u32le(d + 12, 0x04030201);
	expect_error(d, len, "bad.trace: wrong byte-order mark 0x04030201");

	memcpy(d, good, len);
	d[16] ^= 1; /* chunk magic */
	expect_error(d, len, "bad.trace: corrupt chunk at byte 16: bad chunk magic");
	memcpy(d, good, len);
	d[16 + 9] ^= 1; /* tid: header crc */
	expect_error(d, len, "bad.trace: corrupt chunk at byte 16: header checksum mismatch");
	memcpy(d, good, len);
	d[16 + AP_CHUNK_HDR_LEN] ^= 0x40; /* first payload byte */
	expect_error(d, len, "bad.trace: corrupt chunk at byte 16: payload checksum mismatch");
	free(d);
	free(good);

	/* chunk-level checks, with valid checksums */
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw;
	uint8_t *data;
	uint8_t p[64];

	/* oversize length, recomputed header crc */
	tw = ap_tw_new(&h);
	data = finish(tw, &len);
	d = malloc(len + AP_CHUNK_HDR_LEN);
	memcpy(d, data, len);
	ap_chunk_header(d + len, AP_CHUNK_META, 0, AP_STREAM_META, 0, d, 0);
	ap_put_u32le(d + len + 12, AP_CHUNK_MAX_PAYLOAD + 1);
	ap_put_u32le(d + len + AP_CHUNK_HDR_CRC_OFF, ap_crc32c(d + len, AP_CHUNK_HDR_CRC_OFF));
	char want[256];
	snprintf(want, sizeof(want), "corrupt chunk at byte %zu: payload length 16777217 exceeds",
		 len);
	expect_error(d, len + AP_CHUNK_HDR_LEN, want);
	ap_chunk_header(d + len, 9, 0, AP_STREAM_META, 0, d, 0);
	snprintf(want, sizeof(want), "corrupt chunk at byte %zu: unknown chunk type 9", len);
	expect_error(d, len + AP_CHUNK_HDR_LEN, want);
	free(d);
	free(data);

	/* first chunk not a HEADER */
	{
		uint8_t f[16 + AP_CHUNK_HDR_LEN];
		memcpy(f, AP_TRACE_MAGIC, 8);
		ap_put_u32le(f + 8, AP_TRACE_VERSION);
		ap_put_u32le(f + 12, AP_TRACE_BOM);
		ap_chunk_header(f + 16, AP_CHUNK_META, 0, AP_STREAM_META, 0, f, 0);
		expect_error(f, sizeof(f),
			     "corrupt chunk at byte 16: the first chunk is not a HEADER");
	}

	/* a second HEADER */
	tw = ap_tw_new(&h);
	size_t off = ap_tw_size(tw);
	ap_tw_raw_chunk(tw, AP_CHUNK_HEADER, 0, "\x01\x00\x01", 3);
	data = finish(tw, &len);
	snprintf(want, sizeof(want), "corrupt chunk at byte %zu: a second HEADER chunk", off);
	expect_error(data, len, want);
	free(data);

	/* header without rate; rate 0; unknown kind; string for a number */
	struct {
		const char *payload;
		size_t len;
		const char *why;
	} hdrs[] = {
	    {"\x03\x00\x05", 3, "the header has no sampling rate"},
	    {"\x01\x00\x00", 3, "sampling rate is 0"},
	    {"\x01\x00\x01\x63\x02\x00", 6, "key 99 has unknown kind 2"},
	    {"\x01\x01\x01x", 4, "rate (key 1) is a string, expected a number"},
	    {"\x01\x00\x01\x05\x01\x09xy", 8, "a string value of 9 bytes runs past the end"},
	    {"\x01\x00\x81", 3, "bad varint for a value"},
	    {"\x01\x00\x01\x0e\x00\x03\x0f\x00\x07", 9,
	     "the header's time step 7 ns is not a multiple of its quantum 3 ns"},
	};
	for (size_t i = 0; i < AP_ARRAY_SIZE(hdrs); i++) {
		uint8_t f[16 + AP_CHUNK_HDR_LEN + 16];
		memcpy(f, AP_TRACE_MAGIC, 8);
		ap_put_u32le(f + 8, AP_TRACE_VERSION);
		ap_put_u32le(f + 12, AP_TRACE_BOM);
		memcpy(f + 16 + AP_CHUNK_HDR_LEN, hdrs[i].payload, hdrs[i].len);
		ap_chunk_header(f + 16, AP_CHUNK_HEADER, 0, AP_STREAM_NONE, 0, f + 16 + AP_CHUNK_HDR_LEN,
				(uint32_t)hdrs[i].len);
		expect_error(f, 16 + AP_CHUNK_HDR_LEN + hdrs[i].len, hdrs[i].why);
	}
	/* unknown header keys are skipped, both kinds */
	{
		uint8_t f[16 + AP_CHUNK_HDR_LEN + 16];
		const char *pl = "\x63\x00\x05\x64\x01\x02zz\x01\x00\x07";
		size_t pn = 11;
		memcpy(f, AP_TRACE_MAGIC, 8);
		ap_put_u32le(f + 8, AP_TRACE_VERSION);
		ap_put_u32le(f + 12, AP_TRACE_BOM);
		memcpy(f + 16 + AP_CHUNK_HDR_LEN, pl, pn);
		ap_chunk_header(f + 16, AP_CHUNK_HEADER, 0, AP_STREAM_NONE, 0, f + 16 + AP_CHUNK_HDR_LEN,
				(uint32_t)pn);
		struct ap_trace *t = NULL;
		struct ap_error err;
		CHECK(ap_trace_read_mem(f, 16 + AP_CHUNK_HDR_LEN + pn, "keys", &t, &err) == 0, "%s",
		      err.msg);
		CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
		if (t) {
			CHECK_U(t->rate, 7);
			CHECK(!strcmp(t->exe, "") && !strcmp(t->sampler, "") && t->argc == 0 &&
				  t->argv[0] == NULL && t->parent_trace == NULL,
			      "defaults");
			ap_trace_free(t);
		}
	}

	/* META: stack ids must be dense from 1 */
	struct {
		const uint8_t *payload;
		size_t len;
		const char *why;
	} metas[] = {
	    {(const uint8_t *)"\x02\x02\x00", 3, "stack id 2 where 1 was next"},
	    {(const uint8_t *)"\x02\x00\x00", 3, "stack id 0 where 1 was next"},
	    {(const uint8_t *)"\x02\x01\x05\x01\x02", 5, "stack of depth 5 in 2 bytes"},
	    {(const uint8_t *)"\x02\x01\x02\x01\x80", 5, "bad varint for a pc delta"},
	    {(const uint8_t *)"\x09", 1, "unknown META record tag 9"},
	    {(const uint8_t *)"\x01\x00\x01/\x00\x09\x00\x00", 8,
	     "mapping with 9 segments in 2 bytes"},
	    {(const uint8_t *)"\x01\x00\x01/\x41", 5, "a mapping's build-id of 65 bytes runs past"},
	    {(const uint8_t
		  *)"\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x01\x02\x00\x00\x00",
	     18, "segment [0xffffffffffffffff + 0x2, size 0) wraps around"},
	    {(const uint8_t *)"\x03\x80\x80\x80\x80\x10\x00", 7,
	     "thread id 4294967296 does not fit"},
	};
	for (size_t i = 0; i < AP_ARRAY_SIZE(metas); i++) {
		tw = ap_tw_new(&h);
		off = ap_tw_size(tw);
		ap_tw_raw_chunk(tw, AP_CHUNK_META, 0, metas[i].payload, metas[i].len);
		data = finish(tw, &len);
		snprintf(want, sizeof(want), "corrupt chunk at byte %zu: %s", off, metas[i].why);
		expect_error(data, len, want);
		free(data);
	}
	/* an overlong build-id */
	{
		uint8_t m[80] = {1, 0, 1, '/', 65};
		tw = ap_tw_new(&h);
		off = ap_tw_size(tw);
		ap_tw_raw_chunk(tw, AP_CHUNK_META, 0, m, 5 + 65 + 1);
		data = finish(tw, &len);
		snprintf(want, sizeof(want),
			 "corrupt chunk at byte %zu: build-id of 65 bytes (at most 64)", off);
		expect_error(data, len, want);
		free(data);
	}

	/* EVENTS: a stack used before its record, stack 0, bad tags */
	struct {
		const uint8_t *rec;
		size_t len;
		const char *why;
	} evs[] = {
	    {(const uint8_t *)"\x01\x04\x08\x02", 4,
	     "stack id used before its STACK record (record at byte 0 of the payload)"},
	    {(const uint8_t *)"\x01\x04\x08\x00", 4, "ALLOC with stack id 0"},
	    {(const uint8_t *)"\x03\x04\x01\x00\x08\x00", 6, "sampled REALLOC with stack id 0"},
	    {(const uint8_t *)"\x07\x00", 2, "unknown event type"},
	    {(const uint8_t *)"\x71\x04\x08\x01", 4, "unknown allocation kind"},
	    {(const uint8_t *)"\x81\x80\x80\x04\x04\x08\x01", 7, "cpu number out of range"},
	    {(const uint8_t *)"\x01\x04\x08", 3, "ALLOC record runs past the end"},
	    {(const uint8_t *)"\x01\x05\x00\x08\x01", 5, "ALLOC record runs past the end"},
	    {(const uint8_t *)"\x02\x80", 2, "FREE record runs past the end"},
	    {(const uint8_t *)"\x05\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12,
	     "bad time varint"},
	    {(const uint8_t *)"\x86\x01", 2, "TIME or SYNC tag with flags"},
	    {(const uint8_t *)"\x01\x04\x08\x01\x0a\x02", 6,
	     "FREE record runs past the end of the payload, has a bad varint or names a block "
	     "not allocated before it (record at byte 4 of the payload)"},
	    {(const uint8_t *)"\x01\x04\x08\x01\x06\x00\x0a\x01", 8,
	     "FREE record runs past the end of the payload, has a bad varint or names a block "
	     "not allocated before it (record at byte 6"},
	    {(const uint8_t *)"\x0c\x04\x07", 3, "distance flag on a TRACK record"},
	    {(const uint8_t *)"\x01\x04\x08\x01\x0b\x01\x00\x00\x08\x00", 10,
	     "REALLOC names an untracked old block by distance"},
	};
	for (size_t i = 0; i < AP_ARRAY_SIZE(evs); i++) {
		tw = ap_tw_new(&h);
		uint64_t pc = 1;
		ap_tw_stack(tw, &pc, 1);
		ap_tw_flush(tw);
		off = ap_tw_size(tw);
		memcpy(p, evs[i].rec, evs[i].len);
		ap_tw_raw_chunk(tw, AP_CHUNK_EVENTS, 1000, p, evs[i].len);
		data = finish(tw, &len);
		snprintf(want, sizeof(want), "corrupt chunk at byte %zu: %s", off, evs[i].why);
		expect_error(data, len, want);
		free(data);
	}
	/* compressed chunks: flags, lengths, frames */
	{
		static const uint8_t notzstd[] = {8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
		uint8_t frame[64 + 4];
		static const uint8_t raw[] = {0x06, 0x01, 0x01, 0x04, 0x08, 0x01};
		size_t z = ZSTD_compress(frame + 4, sizeof(frame) - 4, raw, sizeof(raw), 1);
		ap_put_u32le(frame, sizeof(raw) + 1); /* a length the frame does not give */
		struct {
			uint8_t type, flags;
			const uint8_t *payload;
			size_t len;
			const char *why;
		} zs[] = {
		    {AP_CHUNK_META, 128, notzstd, sizeof(notzstd), "a chunk of type 2 with gaps"},
		    {AP_CHUNK_META, 2, notzstd, sizeof(notzstd), "a chunk of type 2 in columns"},
		    {AP_CHUNK_EVENTS, 32 | 3, notzstd, sizeof(notzstd),
		     "steps by owner without allocation indexes"},
		    {AP_CHUNK_EVENTS, 16, notzstd, sizeof(notzstd), "sizes by stack without columns"},
		    {AP_CHUNK_EVENTS, 8, notzstd, sizeof(notzstd),
		     "allocation indexes without a distances column"},
		    {AP_CHUNK_EVENTS, 8 | 4, notzstd, sizeof(notzstd),
		     "a distances column without columns"},
		    {AP_CHUNK_EVENTS, 4, notzstd, sizeof(notzstd), "a distances column without columns"},
		    {AP_CHUNK_END, 1, notzstd, sizeof(notzstd), "a compressed chunk of type 4"},
		    {AP_CHUNK_EVENTS, 1, notzstd, 3, "compressed payload of 3 bytes has no length"},
		    {AP_CHUNK_EVENTS, 1, (const uint8_t *)"\xff\xff\xff\x7f", 4,
		     "decompressed length 2147483647 exceeds 16777216"},
		    {AP_CHUNK_EVENTS, 1, notzstd, sizeof(notzstd),
		     "compressed payload is not a zstd frame of 8 bytes"},
		    {AP_CHUNK_META, 1, frame, z + 4, "compressed payload is not a zstd frame of 7"},
		};
		for (size_t i = 0; i < AP_ARRAY_SIZE(zs); i++) {
			tw = ap_tw_new(&h);
			uint64_t pc = 1;
			ap_tw_stack(tw, &pc, 1);
			ap_tw_flush(tw);
			uint8_t *d0 = finish(tw, &len);
			uint8_t *dz = malloc(len + AP_CHUNK_HDR_LEN + zs[i].len);
			memcpy(dz, d0, len);
			memcpy(dz + len + AP_CHUNK_HDR_LEN, zs[i].payload, zs[i].len);
			/* the writer wrote META chunk 0 */
			ap_chunk_header_flags(dz + len, zs[i].type, zs[i].flags, 1000,
					      ap_stream_of(zs[i].type, 1000),
					      zs[i].type == AP_CHUNK_META ? 1 : 0,
					      dz + len + AP_CHUNK_HDR_LEN, (uint32_t)zs[i].len);
			snprintf(want, sizeof(want), "corrupt chunk at byte %zu: %s", len, zs[i].why);
			expect_error(dz, len + AP_CHUNK_HDR_LEN + zs[i].len, want);
			/* the right length: it reads */
			if (zs[i].payload == frame) {
				ap_put_u32le(frame, sizeof(raw));
				memcpy(dz + len + AP_CHUNK_HDR_LEN, frame, z + 4);
				ap_chunk_header_flags(dz + len, AP_CHUNK_EVENTS, 1, 1000,
						      ap_stream_of(AP_CHUNK_EVENTS, 1000), 0,
						      dz + len + AP_CHUNK_HDR_LEN, (uint32_t)(z + 4));
				struct ap_trace *t = NULL;
				struct ap_error err;
				CHECK(ap_trace_read_mem(dz, len + AP_CHUNK_HDR_LEN + z + 4, "z", &t,
							&err) == 0,
				      "%s", err.msg);
				CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
				if (t) {
					CHECK_U(t->nev, 1);
					if (t->nev)
						CHECK_U(t->ev[0].addr, 0x10);
					ap_trace_free(t);
				}
			}
			free(dz);
			free(d0);
		}
	}
	/* columns with a distances column (REFs by distance): an encoding no
	 * allocprof writes, refused */
	{
		static const uint8_t cols[] = {1, 1, 0, 1,	      /* len1, len2, len3, len4 */
					       0x01, 0x01, 0x0a,      /* ALLOC stack 1, FREE|REF */
					       0x04,		      /* addr 0x10 */
					       0x08,		      /* size 8 */
					       0x01};		      /* distance 1 */
		tw = ap_tw_new(&h);
		uint64_t pc = 1;
		ap_tw_stack(tw, &pc, 1);
		ap_tw_flush(tw);
		uint8_t *d0 = finish(tw, &len);
		uint8_t *dc = malloc(len + AP_CHUNK_HDR_LEN + sizeof(cols));
		memcpy(dc, d0, len);
		memcpy(dc + len + AP_CHUNK_HDR_LEN, cols, sizeof(cols));
		ap_chunk_header_flags(dc + len, AP_CHUNK_EVENTS, AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS,
				      1000, ap_stream_of(AP_CHUNK_EVENTS, 1000), 0,
				      dc + len + AP_CHUNK_HDR_LEN, sizeof(cols));
		snprintf(want, sizeof(want),
			 "corrupt chunk at byte %zu: an encoding no allocprof writes: columns "
			 "without REFs apart, allocation indexes and steps by owner (chunk flags "
			 "0x6)", len);
		expect_error(dc, len + AP_CHUNK_HDR_LEN + sizeof(cols), want);
		free(dc);
		free(d0);
	}

	/* allocation indexes and sizes by stack: two anonymous ALLOCs in one
	 * chunk, their FREEs by index in the thread's next chunk, in the other
	 * order; an index past the thread's allocations is corrupt */
	{
		static const uint8_t a[] = {0, 2, 0, 0, 0,	/* len1..len4, frees' */
					    0x09, 0x01, 0x09, 0x01, /* ALLOC|REF stack 1, twice */
					    0x10, 0x10};	/* sizes 0+8, 8+8 (by stack) */
		/* (frees of the thread's last allocations: no frees' field) */
		static const uint8_t b[] = {0, 0, 0, 2, 0, 0x0a, 0x0a, /* FREE|REF twice */
					    0x04, 0x06}; /* index 0+1, then 2-2 (bit 0: own) */
		static const uint8_t past[] = {0, 0, 0, 1, 0, 0x0a, 0x08}; /* index 2+2 */
		for (int round = 0; round < 3; round += 2) {
			tw = ap_tw_new(&h);
			uint64_t pc = 1;
			ap_tw_stack(tw, &pc, 1);
			ap_tw_flush(tw);
			uint8_t *d0 = finish(tw, &len);
			const uint8_t *second = round == 2 ? past : b;
			size_t n2 = round == 2 ? sizeof(past) : sizeof(b);
			size_t total = len + 2 * AP_CHUNK_HDR_LEN + sizeof(a) + n2;
			uint8_t *dc = malloc(total), *q = dc + len;
			memcpy(dc, d0, len);
			const unsigned fl = AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
					    AP_CHUNK_F_XOWN | AP_CHUNK_F_SIZES;
			memcpy(q + AP_CHUNK_HDR_LEN, a, sizeof(a));
			ap_chunk_header_flags(q, AP_CHUNK_EVENTS, fl, 1000,
					      ap_stream_of(AP_CHUNK_EVENTS, 1000), 0,
					      q + AP_CHUNK_HDR_LEN, sizeof(a));
			q += AP_CHUNK_HDR_LEN + sizeof(a);
			memcpy(q + AP_CHUNK_HDR_LEN, second, n2);
			ap_chunk_header_flags(q, AP_CHUNK_EVENTS, fl, 1000,
					      ap_stream_of(AP_CHUNK_EVENTS, 1000), 1,
					      q + AP_CHUNK_HDR_LEN, (uint32_t)n2);
			if (round == 0) {
				struct ap_trace *t = NULL;
				struct ap_error err;
				CHECK(ap_trace_read_mem(dc, total, "idx", &t, &err) == 0, "%s",
				      err.msg);
				CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
				if (t) {
					CHECK_U(t->nev, 4);
					if (t->nev == 4) {
						CHECK_U(t->ev[0].addr, AP_ANON_BASE);
						CHECK_U(t->ev[0].size, 8);
						CHECK_U(t->ev[1].addr, AP_ANON_BASE | 1);
						CHECK_U(t->ev[1].size, 16);
						CHECK_U(t->ev[2].type, AP_EV_FREE);
						CHECK_U(t->ev[2].addr, AP_ANON_BASE | 1);
						CHECK_U(t->ev[3].addr, AP_ANON_BASE);
					}
					ap_trace_free(t);
				}
			} else {
				snprintf(want, sizeof(want),
					 "corrupt chunk at byte %zu: FREE record runs past the end of "
					 "the payload, has a bad varint or names a block not allocated "
					 "before it (record at byte 5",
					 len + AP_CHUNK_HDR_LEN + sizeof(a));
				expect_error(dc, total, want);
			}
			free(dc);
			free(d0);
		}
	}

	/* a REF to another thread's allocation: thread 1000
	 * allocates two anonymous blocks, thread 2000 frees the second, then
	 * the first, by (tid, index), and a third FREE names a tid no thread
	 * has (it matches nothing) */
	{
		static const uint8_t a[] = {0, 2, 0, 0, 0, 0x09, 0x01, 0x09, 0x01, 0x08, 0x10};
		static const uint8_t b[] = {0, 0, 0, 8, 5, 0x0a, 0x0a, 0x0a,
					    0x09, 0xe8, 0x07,  /* other: step +1, tid 1000 */
					    0x0d, 0xe8, 0x07,  /* other: step -2, tid 1000 */
					    0x09, 0x05,	       /* other: step +1, tid 5 */
					    /* the blocks they end: stack 1, 16 bytes; stack
					     * 1, 8 bytes; none */
					    3, 16, 3, 8, 0};
		tw = ap_tw_new(&h);
		uint64_t pc = 1;
		ap_tw_stack(tw, &pc, 1);
		ap_tw_flush(tw);
		uint8_t *d0 = finish(tw, &len);
		size_t total = len + 2 * AP_CHUNK_HDR_LEN + sizeof(a) + sizeof(b);
		uint8_t *dc = malloc(total), *q = dc + len;
		memcpy(dc, d0, len);
		const unsigned fl = AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
				    AP_CHUNK_F_XOWN;
		memcpy(q + AP_CHUNK_HDR_LEN, a, sizeof(a));
		ap_chunk_header_flags(q, AP_CHUNK_EVENTS, fl, 1000, ap_stream_of(AP_CHUNK_EVENTS, 1000),
				      0, q + AP_CHUNK_HDR_LEN, sizeof(a));
		q += AP_CHUNK_HDR_LEN + sizeof(a);
		memcpy(q + AP_CHUNK_HDR_LEN, b, sizeof(b));
		ap_chunk_header_flags(q, AP_CHUNK_EVENTS, fl, 2000, ap_stream_of(AP_CHUNK_EVENTS, 2000),
				      0, q + AP_CHUNK_HDR_LEN, sizeof(b));
		struct ap_trace *t = NULL;
		struct ap_error err;
		CHECK(ap_trace_read_mem(dc, total, "xref", &t, &err) == 0, "%s", err.msg);
		if (t) {
			struct ap_trace_totals tot;
			CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
			CHECK(tot.free_objects == 2 && tot.unmatched_frees == 1 &&
				  tot.inuse_objects == 0,
			      "frees across threads: %g freed, %g unmatched, %g live",
			      tot.free_objects, (double)tot.unmatched_frees, tot.inuse_objects);
			CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
			CHECK_U(t->nev, 5);
			if (t->nev == 5) {
				/* thread 1000 is index 0 (its chunk comes first) */
				CHECK_U(t->ev[2].addr, AP_ANON_BASE | 1);
				CHECK_U(t->ev[3].addr, AP_ANON_BASE);
				CHECK_U(t->ev[4].addr, AP_ANON_BASE | 0xffffull << 40 | 1);
			}
			ap_trace_free(t);
		}
		free(dc);
		free(d0);
	}

	/* steps by owner (AP_CHUNK_F_XOWN): threads 1000 and 3000 allocate two
	 * anonymous blocks each; thread 2000 frees 1000's second (step +1, tid),
	 * 3000's first (step 0, tid), 3000's second (the same tid: bit 1, no tid
	 * written), 1000's first (-2 from the 2 after its last); a second
	 * payload starts with the same-tid bit of a thread that named none */
	for (int bad = 0; bad < 2; bad++) {
		static const uint8_t a[] = {0, 2, 0, 0, 0, 0x09, 0x01, 0x09, 0x01, 0x08, 0x10};
		static const uint8_t b[] = {0, 0, 0, 10, 8, 0x0a, 0x0a, 0x0a, 0x0a,
					    0x09, 0xe8, 0x07,	/* 1000: +1 */
					    0x01, 0xb8, 0x17,	/* 3000: 0 */
					    0x03,		/* the same: 0 */
					    0x0d, 0xe8, 0x07,	/* 1000: -2 */
					    3, 16, 3, 8, 3, 16, 3, 8}; /* their blocks */
		static const uint8_t c[] = {0, 0, 0, 1, 0, 0x0a, 0x03};
		const uint8_t *fr = bad == 1 ? c : b;
		size_t frn = bad == 1 ? sizeof(c) : sizeof(b);
		tw = ap_tw_new(&h);
		uint64_t pc = 1;
		ap_tw_stack(tw, &pc, 1);
		ap_tw_flush(tw);
		uint8_t *d0 = finish(tw, &len);
		size_t total = len + 3 * AP_CHUNK_HDR_LEN + 2 * sizeof(a) + frn;
		uint8_t *dc = malloc(total), *q = dc + len;
		memcpy(dc, d0, len);
		const unsigned fl = AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
				    AP_CHUNK_F_XOWN;
		const uint32_t tids[3] = {1000, 3000, 2000};
		for (int k = 0; k < 3; k++) {
			const uint8_t *pl = k < 2 ? a : fr;
			size_t pn = k < 2 ? sizeof(a) : frn;
			memcpy(q + AP_CHUNK_HDR_LEN, pl, pn);
			ap_chunk_header_flags(q, AP_CHUNK_EVENTS, fl,
					      tids[k], ap_stream_of(AP_CHUNK_EVENTS, tids[k]), 0,
					      q + AP_CHUNK_HDR_LEN, (uint32_t)pn);
			q += AP_CHUNK_HDR_LEN + pn;
		}
		struct ap_trace *t = NULL;
		struct ap_error err;
		int rc = ap_trace_read_mem(dc, total, "xown", &t, &err);
		if (bad) {
			CHECK(rc < 0 && strstr(err.msg, "FREE record runs past the end of the payload"),
			      "same tid with none before: %s", rc < 0 ? err.msg : "read");
		} else {
			CHECK(rc == 0, "%s", err.msg);
		}
		if (t && !bad) {
			struct ap_trace_totals tot;
			CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
			CHECK(tot.free_objects == 4 && tot.unmatched_frees == 0 &&
				  tot.inuse_objects == 0,
			      "frees by owner: %g freed, %g unmatched, %g live", tot.free_objects,
			      (double)tot.unmatched_frees, tot.inuse_objects);
			CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
			CHECK_U(t->nev, 8);
			if (t->nev == 8) {
				CHECK_U(t->ev[4].addr, AP_ANON_BASE | 1);
				CHECK_U(t->ev[5].addr, AP_ANON_BASE | 1ull << 40);
				CHECK_U(t->ev[6].addr, AP_ANON_BASE | 1ull << 40 | 1);
				CHECK_U(t->ev[7].addr, AP_ANON_BASE);
			}
		}
		ap_trace_free(t);
		free(dc);
		free(d0);
	}
	/* the owners kept: the AP_XOWNERS last, most recent first */
	{
		struct ap_xowners xo = {0};
		for (uint32_t tid = 1; tid <= AP_XOWNERS + 1; tid++)
			*ap_xowners_use(&xo, tid) = 100 + tid;
		CHECK(xo.n == AP_XOWNERS && xo.tid[0] == AP_XOWNERS + 1 && xo.tid[AP_XOWNERS - 1] == 2,
		      "owners: %u, first %u, last %u", xo.n, xo.tid[0], xo.tid[AP_XOWNERS - 1]);
		CHECK_U(*ap_xowners_use(&xo, 5), 105); /* kept, and now the first */
		/* 9 8 7 6 5 4 3 2, then 5 9 8 7 6 4 3 2 */
		CHECK(xo.tid[0] == 5 && xo.tid[1] == AP_XOWNERS + 1 && xo.tid[4] == 6 &&
			  xo.tid[5] == 4 && xo.tid[7] == 2,
		      "order after a use: %u %u %u %u %u", xo.tid[0], xo.tid[1], xo.tid[4], xo.tid[5],
		      xo.tid[7]);
		CHECK_U(*ap_xowners_use(&xo, 1), 0); /* forgotten: from 0 */
		CHECK(xo.tid[AP_XOWNERS - 1] == 3 && xo.tid[0] == 1, "after a new one: last %u",
		      xo.tid[AP_XOWNERS - 1]);
	}

	/* a TRACK record decodes (no event) and moves prev_addr; a 0 tag ends the payload */
	tw = ap_tw_new(&h);
	{
		uint64_t pc = 1;
		ap_tw_stack(tw, &pc, 1);
	}
	ap_tw_flush(tw);
	static const uint8_t rec[] = {0x06, 0x88, 0x27,	 /* SYNC at quantum 5000 */
				      0x04, 0x04, 0x07,	 /* TRACK addr 0x10, size 7 */
				      0x05, 0x02,	 /* TIME + 2 quanta */
				      0x02, 0x00,	 /* FREE addr +0 */
				      0x00, 0x05, 0x05}; /* padding, then junk */
	ap_tw_raw_chunk(tw, AP_CHUNK_EVENTS, 1000, rec, sizeof(rec));
	data = finish(tw, &len);
	{
		struct ap_trace *t = NULL;
		struct ap_error err;
		CHECK(ap_trace_read_mem(data, len, "track", &t, &err) == 0, "%s", err.msg);
		CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
		if (t) {
			CHECK_U(t->nev, 1);
			CHECK_U(t->nrecords, 2);
			if (t->nev == 1) {
				CHECK_U(t->ev[0].addr, 0x10);
				CHECK_U(t->ev[0].ts, 5002); /* quantum 1 ns */
			}
			ap_trace_free(t);
		}
	}
	free(data);
}

static void test_file_errors(void)
{
	struct ap_trace *t = NULL;
	struct ap_error err;
	CHECK(ap_trace_read("/nonexistent/x.trace", &t, &err, NULL, NULL) < 0, "missing file read");
	CHECK(!strcmp(err.msg, "/nonexistent/x.trace: No such file or directory"), "msg: %s",
	      err.msg);
	CHECK(ap_trace_read("/", &t, &err, NULL, NULL) < 0, "directory read");
	CHECK(!strcmp(err.msg, "/: Is a directory"), "msg: %s", err.msg);
}

/* A duplicated or a deleted EVENTS chunk (docs/trace-format.md,
 * "Streams"): the counts would silently change; the reader names the
 * chunk and its offset instead. Two threads, 4000 allocations and frees
 * each, in chunks of about 1 kB. */
static void test_streams(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 1024);
	uint64_t pc = 0x401000;
	uint32_t st = ap_tw_stack(tw, &pc, 1);
	for (uint64_t i = 0; i < 4000; i++)
		for (uint32_t tid = 10; tid <= 11; tid++) {
			uint64_t a = 0x100000 * tid + i * 64;
			ap_tw_alloc(tw, tid, h.start_ns + 2 * i, 0, AP_KIND_MALLOC, a, 32, st);
			ap_tw_free(tw, tid, h.start_ns + 2 * i + 1, 0, a);
		}
	struct ap_tw_end end = {.end_ns = h.start_ns + 10000};
	ap_tw_end(tw, &end);
	size_t len;
	uint8_t *good = finish(tw, &len);
	size_t off[256], n = 0;
	for (size_t o = AP_TRACE_PREAMBLE_LEN; o + AP_CHUNK_HDR_LEN <= len && n < 256;
	     o += AP_CHUNK_HDR_LEN + ap_get_u32le(good + o + 12))
		off[n++] = o;
	/* an EVENTS chunk of thread 10 with another one of it later */
	size_t k = 0, later = 0;
	for (size_t i = 0; i < n && !later; i++) {
		if (good[off[i] + 4] != AP_CHUNK_EVENTS || ap_get_u32le(good + off[i] + 8) != 10)
			continue;
		if (!k && i > 4)
			k = i;
		else if (k)
			later = i;
	}
	CHECK(k && later, "no two EVENTS chunks of thread 10 in %zu chunks", n);
	if (!later) {
		free(good);
		return;
	}
	struct ap_trace *t = NULL;
	struct ap_error err;
	CHECK(ap_trace_read_mem(good, len, "good", &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		struct ap_trace_totals tot;
		CHECK(ap_trace_totals(t, &tot, &err) == 0, "%s", err.msg);
		CHECK(tot.alloc_objects == 8000 && tot.free_objects == 8000, "good: %g allocs, %g frees",
		      tot.alloc_objects, tot.free_objects);
	}
	ap_trace_free(t);
	size_t clen = off[k + 1] - off[k];
	uint32_t idx = ap_get_u32le(good + off[k] + 24);
	uint32_t stream = ap_get_u32le(good + off[k] + 20);
	uint8_t *d = malloc(len + clen);
	char want[256];

	/* chunk k twice in a row: the copy is at off[k + 1] */
	memcpy(d, good, off[k + 1]);
	memcpy(d + off[k + 1], good + off[k], clen);
	memcpy(d + off[k + 1] + clen, good + off[k + 1], len - off[k + 1]);
	snprintf(want, sizeof(want),
		 "bad.trace: corrupt chunk at byte %zu: duplicated chunk: chunk %u of stream %u "
		 "again (the stream is at chunk %u)",
		 off[k + 1], idx, stream, idx + 1);
	expect_error(d, len + clen, want);

	/* chunk k once more at the end, after END */
	memcpy(d, good, len);
	memcpy(d + len, good + off[k], clen);
	snprintf(want, sizeof(want), "bad.trace: corrupt chunk at byte %zu: duplicated chunk", len);
	expect_error(d, len + clen, want);

	/* chunk k deleted: its stream's next chunk names the gap */
	memcpy(d, good, off[k]);
	memcpy(d + off[k], good + off[k + 1], len - off[k + 1]);
	snprintf(want, sizeof(want),
		 "bad.trace: corrupt chunk at byte %zu: missing chunk: chunk %u of stream %u comes "
		 "before this one, chunk %u (deleted or lost)",
		 off[later] - clen, idx, stream, idx + 1);
	expect_error(d, len - clen, want);
	free(d);
	free(good);
}

/* Many stacks: the writer splits META into several chunks; every stack
 * comes back, and events interleaved with new stacks find theirs. */
static void test_many_stacks(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	const uint32_t n = 20000;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t pcs[8];
		for (int k = 0; k < 8; k++)
			pcs[k] = 0x400000 + i * 64 + (uint64_t)k * 0x100000;
		uint32_t id = ap_tw_stack(tw, pcs, 8);
		if (id != i + 1)
			CHECK_U(id, i + 1);
		if (i % 1000 == 0)
			ap_tw_alloc(tw, 7, h.start_ns + i, 0, 0, 0x1000 + i, i, id);
	}
	size_t chunks = 0;
	uint8_t *data;
	size_t len;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, &len, &err) < 0) {
		CHECK(0, "%s", err.msg);
		return;
	}
	for (size_t o = AP_TRACE_PREAMBLE_LEN; o + AP_CHUNK_HDR_LEN <= len;
	     o += AP_CHUNK_HDR_LEN + ap_get_u32le(data + o + 12))
		chunks += data[o + 4] == AP_CHUNK_META;
	CHECK(chunks > 3, "%zu META chunks", chunks);
	struct ap_trace *t = NULL;
	CHECK(ap_trace_read_mem(data, len, "stacks", &t, &err) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		CHECK_U(t->nstacks, n + 1);
		CHECK_U(t->nev, 20);
		for (uint32_t i = 0; i < n && i + 1 < t->nstacks; i++) {
			const struct ap_stack *st = &t->stacks[i + 1];
			if (st->depth != 8 || st->pcs[0] != 0x400000 + i * 64 ||
			    st->pcs[7] != 0x400000 + i * 64 + 7 * 0x100000ull) {
				CHECK(0, "stack %u differs", i + 1);
				break;
			}
		}
		for (size_t i = 0; i < t->nev; i++)
			CHECK_U(t->ev[i].stack, i * 1000 + 1);
		ap_trace_free(t);
	}
	free(data);
}

/* ap_trace_mapping_for against a brute-force search (the latest mapping
 * that covers the pc wins), on random overlapping mappings. */
static void test_mapping_lookup(void)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	struct ap_tw *tw = ap_tw_new(&h);
	for (int i = 0; i < 300; i++) {
		struct ap_segment seg[2];
		uint64_t base = (rnd() % 64) << 16;
		seg[0] = (struct ap_segment){rnd() % 0x8000, 1 + rnd() % 0x40000, 0, 5};
		seg[1] = (struct ap_segment){seg[0].vaddr + 0x50000, 1 + rnd() % 0x1000, 0, 4};
		char path[32];
		snprintf(path, sizeof(path), "/lib/m%d.so", i);
		ap_tw_mapping(tw, base, path, NULL, 0, seg, 1 + (size_t)(i % 2));
	}
	struct ap_trace *t = read_back(tw, "maps");
	if (!t)
		return;
	CHECK_U(t->nmaps, 300);
	size_t bad = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t pc;
		if (i % 2) {
			pc = rnd() % (70ull << 16);
		} else { /* a boundary of some mapping, or one byte before it */
			const struct ap_mapping *m = &t->maps[rnd() % t->nmaps];
			pc = (rnd() % 2 ? m->start : m->end) - rnd() % 2;
		}
		const struct ap_mapping *want = NULL;
		for (size_t k = t->nmaps; k-- > 0;)
			if (pc >= t->maps[k].start && pc < t->maps[k].end) {
				want = &t->maps[k];
				break;
			}
		const struct ap_mapping *got = ap_trace_mapping_for(t, pc);
		if (got != want && bad++ < 5)
			CHECK(0, "pc %#llx: got %s, want %s", (unsigned long long)pc,
			      got ? got->path : "none", want ? want->path : "none");
	}
	ap_trace_free(t);
}

struct progress_log {
	unsigned calls;
	uint64_t last_done, last_total;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress_log *p = ctx;
	p->calls++;
	p->last_done = done;
	p->last_total = total;
}

/* ap_tw_close to a file, ap_trace_read from it (mmap path), progress. */
static void test_file_roundtrip(void)
{
	char path[] = "/tmp/allocprof-rt-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	close(fd);
	struct ap_tw *tw = small_trace();
	struct ap_tw_end end = {.end_ns = 2000000000ull};
	ap_tw_end(tw, &end);
	size_t size = ap_tw_size(tw);
	struct ap_error err;
	CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
	struct ap_trace *t = NULL;
	struct progress_log pl = {0, 0, 0};
	CHECK(ap_trace_read(path, &t, &err, on_progress, &pl) == 0, "%s", err.msg);
	CHECK(ap_trace_load_events(t, &err) == 0, "%s", err.msg);
	if (t) {
		CHECK_U(t->file_size, size);
		CHECK_U(t->nev, 1);
		CHECK(!t->truncated, "truncated: %s", t->truncated_why);
		CHECK(pl.calls >= 1 && pl.last_done == size && pl.last_total == size,
		      "progress: %u calls, last %llu of %llu", pl.calls,
		      (unsigned long long)pl.last_done, (unsigned long long)pl.last_total);
		ap_trace_free(t);
	}
	unlink(path);

	/* The file changed after the read, before a pass over its events:
	 * overwritten in place (same size), then cut. The pass ends the
	 * thread's events at the chunk that differs and says so; it never
	 * reads past the end of the file (the reader keeps no mapping). */
	for (int cut = 0; cut < 2; cut++) {
		tw = small_trace();
		for (int i = 1; i <= 3; i++) {
			ap_tw_flush(tw); /* an EVENTS chunk each */
			ap_tw_free(tw, 1000, 1000000000ull + (uint64_t)i * 20, 0,
				   i == 1 ? 0x1000 : 0x1000 + (uint64_t)i * 64);
			ap_tw_alloc(tw, 1000, 1000000000ull + (uint64_t)i * 20 + 10, 0, 0,
				    0x1000 + (uint64_t)(i + 1) * 64, 64, 1);
		}
		ap_tw_end(tw, &end);
		CHECK(ap_tw_close(tw, path, &err) == 0, "%s", err.msg);
		t = NULL;
		CHECK(ap_trace_read(path, &t, &err, NULL, NULL) == 0, "%s", err.msg);
		if (!t)
			continue;
		CHECK_U(t->nev, 7);
		struct stat st;
		CHECK(stat(path, &st) == 0, "stat");
		int wfd = open(path, O_WRONLY);
		CHECK(wfd >= 0, "reopen");
		/* the last EVENTS chunk's payload */
		uint8_t *file = malloc((size_t)st.st_size);
		FILE *rf = fopen(path, "rb");
		CHECK(rf && fread(file, 1, (size_t)st.st_size, rf) == (size_t)st.st_size, "read back");
		if (rf)
			fclose(rf);
		struct ap_chunk_walk w;
		struct ap_chunk ch;
		char why[160];
		size_t last = 0;
		ap_chunk_walk_init(&w, file, (size_t)st.st_size);
		while (ap_chunk_next(&w, &ch, why, sizeof(why)) == AP_CHUNK_OK)
			if (ch.type == AP_CHUNK_EVENTS)
				last = (size_t)(ch.payload - file);
		ap_chunk_walk_release(&w);
		CHECK(last > 0, "no EVENTS chunk");
		if (cut) {
			CHECK(ftruncate(wfd, (off_t)last) == 0, "truncate");
		} else {
			uint8_t x = (uint8_t)(file[last] ^ 0x55);
			CHECK(pwrite(wfd, &x, 1, (off_t)last) == 1, "overwrite");
		}
		free(file);
		close(wfd);
		CHECK(!ap_trace_changed(t), "changed before any pass");
		const struct ap_event *b;
		size_t got = 0, k;
		struct ap_events *it = ap_events_open(t);
		while ((k = ap_events_next(it, &b)))
			got += k;
		ap_events_close(it);
		CHECK(got == 5, "%s: %zu events of 7, want the 5 before its last chunk",
		      cut ? "cut" : "overwritten", got);
		CHECK(ap_trace_changed(t), "%s: the change not noticed", cut ? "cut" : "overwritten");
		ap_trace_free(t);
		unlink(path);
	}

	tw = small_trace();
	CHECK(ap_tw_close(tw, "/nonexistent/dir/x.trace", &err) < 0, "close to a bad path");
	CHECK(!strcmp(err.msg, "/nonexistent/dir/x.trace: No such file or directory"), "msg: %s",
	      err.msg);
	/* a sticky writer error fails the close */
	tw = small_trace();
	CHECK(ap_tw_free(tw, 1000, 5, 0, 0x1000) < 0, "time going back accepted");
	uint8_t *data;
	size_t len;
	CHECK(ap_tw_close_mem(tw, &data, &len, &err) < 0, "sticky error lost");
	CHECK(strstr(err.msg, "tid 1000: timestamp 5 is before the previous one") != NULL,
	      "msg: %s", err.msg);
}

/* ap_format_bytes against what pprof's measurement.ScaledLabel prints for
 * the same values (cmd/vendor/github.com/google/pprof/internal/measurement). */
static void test_format_bytes(void)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
	    {0, "0"},
	    {0.4, "0"},
	    {1, "1B"},
	    {512, "512B"},
	    {1023, "1023B"},
	    {1024, "1kB"},
	    {1536, "1.50kB"},
	    {1048575, "1024kB"},
	    {1048576, "1MB"},
	    {1055724, "1.01MB"},
	    {6048, "5.91kB"},
	    {3.5 * 1073741824.0, "3.50GB"},
	    {1099511627776.0, "1TB"},
	    {1125899906842624.0 * 2000, "2000PB"},
	    {-2048, "-2kB"},
	};
	for (size_t i = 0; i < AP_ARRAY_SIZE(cases); i++) {
		char b[64];
		ap_format_bytes(b, sizeof(b), cases[i].v);
		CHECK(!strcmp(b, cases[i].want), "ap_format_bytes(%.17g) = \"%s\", want \"%s\"",
		      cases[i].v, b, cases[i].want);
	}
}

/* More threads over one trace than 16 bits can number (issue 24: a
 * thread-per-request server over a long run; pid_max is 4 M on systemd
 * machines): 70,000 threads, each allocating two blocks and freeing them,
 * then exiting (its chunk written),
 * read whole, each event on its own thread; and the anonymous identities of
 * threads past 65535 stay apart from every other thread's and below
 * AP_ANON_BASE. */
static void test_many_threads(void)
{
	enum { N = 70000 };
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = 1000;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x401000;
	uint32_t s = ap_tw_stack(tw, &pc, 1);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t ts = 1000000 + (uint64_t)i * 4000;
		for (uint64_t k = 0; k < 2; k++) {
			uint64_t a = 0x10000 + 32 * (uint64_t)i + 16 * k;
			ap_tw_alloc(tw, 100000 + i, ts + 2000 * k, 0, AP_KIND_MALLOC, a, 8, s);
			ap_tw_free(tw, 100000 + i, ts + 2000 * k + 1000, 0, a);
		}
		ap_tw_flush_thread(tw, 100000 + i); /* the thread exits */
	}
	struct ap_trace *t = read_back(tw, "many-threads");
	if (t) {
		CHECK(t->nthreads == N, "threads: %zu", t->nthreads);
		CHECK(t->nev == 4 * (size_t)N, "events: %zu", t->nev);
		size_t wrong = 0;
		for (size_t i = 0; i < t->nev; i++) {
			const struct ap_event *e = &t->ev[i];
			wrong += e->thread >= t->nthreads || t->threads[e->thread].tid != 100000 + i / 4 ||
				 e->addr != 0x10000 + 16 * (uint64_t)(i / 2);
		}
		CHECK(wrong == 0, "%zu events on the wrong thread or address", wrong);
	}
	ap_trace_free(t);
	uint64_t last = ap_anon_id(AP_MAX_THREADS - 1, AP_THREAD_ALLOCS_MAX - 1);
	CHECK(ap_anon_id(AP_ANON_LOW_THREADS, 0) == AP_ANON_MIN && last < AP_ANON_BASE &&
		      ap_anon_id(AP_ANON_LOW_THREADS + 1, 0) == (AP_ANON_MIN | 1ull << 40),
	      "identities past thread 65535: %#llx", (unsigned long long)last);
}

int main(void)
{
	test_header_and_meta();
	test_events_single();
	test_totals_weighted();
	test_inuse_error();
	test_merge(1, 2000, 64);
	test_cross_thread();
	test_cross_thread_reuse();
	test_no_address();
	test_reuse_across_chunks(false);
	test_reuse_across_chunks(true);
	test_merge(3, 3000, 16);
	test_merge(7, 2000, 200);
	test_merge(40, 300, 1 << 16);
	test_truncation();
	test_errors();
	test_file_errors();
	test_file_roundtrip();
	test_format_bytes();
	test_many_stacks();
	test_streams();
	test_mapping_lookup();
	/* 70,000 threads' streams: seconds here, minutes of AddressSanitizer's
	 * mappings in the sanitized build, which the normal build covers */
	if (!getenv("SANITIZED"))
		test_many_threads();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all trace round-trip checks passed\n");
	return 0;
}
