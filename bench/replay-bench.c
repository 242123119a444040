/* Replay speed of the pool advisor: builds a synthetic --all trace of N
 * events (alloc/free pairs at 64 sites on 2 CPUs, short and long lives, a
 * few escapes), reads it back, and times ap_advise_run alone.
 * usage: replay-bench [EVENTS]   (default 10M) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_advise.h"
#include "ap_trace_writer.h"

int main(int argc, char **argv)
{
	uint64_t nev = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	const size_t nsites = 64;
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.cpus = 2;
	struct ap_tw *tw = ap_tw_new(&h);
	uint32_t st[64];
	for (size_t i = 0; i < nsites; i++) {
		uint64_t pc = 0x400000 + i * 64;
		st[i] = ap_tw_stack(tw, &pc, 1);
	}
	ap_tw_thread(tw, 1000, "main");
	/* A window of 256 live blocks: each step frees one and allocates
	 * another at a random site, so lifetimes vary and sites interleave. */
	uint64_t live[256] = { 0 }, ts = h.start_ns, x = 88172645463325252ull, next = 0x10000;
	uint64_t written = 0;
	while (written + 2 <= nev) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned k = (unsigned)(x & 255), site = (unsigned)((x >> 8) % nsites);
		unsigned cpu = (unsigned)((x >> 20) & 1);
		ts += 50;
		if (live[k]) {
			ap_tw_free(tw, 1000, ts, cpu, live[k]);
			written++;
		}
		uint64_t size = (uint64_t)16 << ((x >> 24) % 12);
		live[k] = next;
		next += 0x100000;
		ap_tw_alloc(tw, 1000, ts, cpu, AP_KIND_MALLOC, live[k], size, st[site]);
		written++;
	}
	struct ap_tw_end end = { .end_ns = ts + 1 };
	ap_tw_end(tw, &end);
	uint8_t *data;
	size_t len;
	struct ap_error err;
	struct ap_trace *t;
	if (ap_tw_close_mem(tw, &data, &len, &err) < 0 ||
	    ap_trace_read_mem(data, len, "bench", &t, &err) < 0) {
		fprintf(stderr, "replay-bench: %s\n", err.msg);
		return 1;
	}
	free(data);

	struct ap_site_map m = { 0 };
	m.nsites = nsites;
	m.site_of_stack = malloc(t->nstacks * sizeof(uint32_t));
	m.name = calloc(nsites, sizeof(char *));
	m.function = calloc(nsites, sizeof(char *));
	m.file = calloc(nsites, sizeof(char *));
	m.line = calloc(nsites, sizeof(int));
	for (size_t i = 0; i < t->nstacks; i++)
		m.site_of_stack[i] = i >= 1 && i <= nsites ? (uint32_t)(i - 1) : UINT32_MAX;
	for (size_t i = 0; i < nsites; i++) {
		m.name[i] = malloc(16);
		snprintf(m.name[i], 16, "site%zu", i);
	}
	struct ap_cost_table costs = { .n = 1, .size = { 16 }, .malloc_free_ns = { 20 },
				       .pool_ns = { 10 }, .first_touch_ns = { 0 } };
	struct ap_advise_options o;
	ap_advise_options_init(&o);
	o.costs = &costs;
	if (getenv("REPLAY_GC") && ap_advise_parse_gc(getenv("REPLAY_GC"), &o) < 0) {
		fprintf(stderr, "replay-bench: bad REPLAY_GC\n");
		return 2;
	}
	uint64_t t0 = ap_now_ns();
	struct ap_advice *a = ap_advise_run(t, &m, &o, &err);
	uint64_t dt = ap_now_ns() - t0;
	if (!a) {
		fprintf(stderr, "replay-bench: %s\n", err.msg);
		return 1;
	}
	printf("replayed %zu events (%" PRIu64 " pool operations, %" PRIu64 " cycles, %zu sites) in %.3f s: "
	       "%.1f M events/s\n", t->nev, a->pool_ops, a->cycles, a->nsites, (double)dt / 1e9,
	       (double)t->nev / ((double)dt / 1e9) / 1e6);
	ap_advice_free(a);
	ap_site_map_release(&m);
	ap_trace_free(t);
	return 0;
}
