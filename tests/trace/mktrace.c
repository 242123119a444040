/* Writes the synthetic traces the `stats` tests read, with the test writer.
 * usage: mktrace NAME OUT
 * Each trace's content (and so its totals) is fixed here by construction;
 * the comments give the values the expected files hold. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_trace_compact.h"
#include "ap_trace_writer.h"

static const char *const demo_argv[] = {"/usr/bin/demo", "--size", "big file"};

/* Damaged headers and moved modules (the "damaged-*" traces): when set,
 * they replace the CPU count, the allowed CPUs, the rate and the
 * program's module path. */
static uint64_t over_cpus, over_allowed, over_rate;
static const char *over_module;

static struct ap_tw *demo_writer(uint64_t rate)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = over_rate ? over_rate : rate;
	if (over_cpus)
		h.cpus = over_cpus;
	/* the sampled trace's process ran on one CPU of the machine's 2
	 * (HEADER allowed_cpus); the exact one's trace is of before the key */
	h.allowed_cpus = over_allowed ? over_allowed : rate == 1 ? 0 : 1;
	h.flags = rate == 1 ? AP_HFLAG_ALL : 0;
	h.pid = 4242;
	h.ppid = 1;
	h.exe = "/usr/bin/demo";
	h.argv = demo_argv;
	h.argc = 3;
	struct ap_tw *tw = ap_tw_new(&h);
	struct ap_segment seg = {.vaddr = 0x1000, .memsz = 0x5000, .offset = 0x1000, .flags = 5};
	ap_tw_mapping(tw, 0x555555554000ull, over_module ? over_module : "/usr/bin/demo",
		      (const uint8_t *)"\x12\x34", 2, &seg, 1);
	ap_tw_thread(tw, 4242, "demo");
	ap_tw_thread(tw, 4243, "worker");
	return tw;
}

/* rate 1, two threads. By time: +10 A 100 B, +20 B 1000 B, +25 D 1 MiB
 * (worker), +30 free A, +35 free D, +40 realloc B -> C 4000 B, +45 E 2048 B
 * (worker), +50 calloc X 0 B, +55 free of 0x9999 (never allocated).
 * alloc_objects 6, alloc_space 1055724, free_objects 3 (A, B, D),
 * inuse 3 objects (C, E, X) 6048 B, peak 1049676 B (after D), events 9,
 * samples 6, unmatched_frees 1. */
static struct ap_tw *exact(void)
{
	struct ap_tw *tw = demo_writer(1);
	uint64_t pcs[] = {0x555555555123ull, 0x555555555456ull};
	uint32_t s = ap_tw_stack(tw, pcs, 2);
	uint64_t t0 = 1000000000ull;
	ap_tw_alloc(tw, 4242, t0 + 10, 0, AP_KIND_MALLOC, 0x1000, 100, s);
	ap_tw_alloc(tw, 4242, t0 + 20, 0, AP_KIND_MALLOC, 0x2000, 1000, s);
	ap_tw_alloc(tw, 4243, t0 + 25, 1, AP_KIND_MALLOC, 0x5000, 1048576, s);
	ap_tw_free(tw, 4242, t0 + 30, 0, 0x1000);
	ap_tw_free(tw, 4243, t0 + 35, 1, 0x5000);
	ap_tw_realloc(tw, 4242, t0 + 40, 1, AP_KIND_REALLOC, 0x2000, 0x3000, 4000, s,
		      AP_RF_OLD_TRACKED | AP_RF_NEW_SAMPLED);
	ap_tw_alloc(tw, 4243, t0 + 45, 1, AP_KIND_ALIGNED, 0x6000, 2048, s);
	ap_tw_alloc(tw, 4242, t0 + 50, 1, AP_KIND_CALLOC, 0x4000, 0, s);
	ap_tw_free(tw, 4243, t0 + 55, 0, 0x9999);
	return tw;
}

/* rate 524288: three samples, 1 MiB at 0x1000 and 0x2000, 100 B at 0x3000;
 * the first 1 MiB block is freed. Weights 1/(1-exp(-(s+1)/R)). The peak,
 * both 1 MiB blocks live, is 2 w MiB = 2425393 B with the standard
 * deviation sqrt(2 w (w - 1)) MiB = 630917 B (w the weight of 1 MiB). */
static struct ap_tw *sampled(void)
{
	struct ap_tw *tw = demo_writer(524288);
	uint64_t pc = 0x555555555123ull;
	uint32_t s = ap_tw_stack(tw, &pc, 1);
	uint64_t t0 = 1000000000ull;
	ap_tw_alloc(tw, 4242, t0 + 1000, 0, AP_KIND_MALLOC, 0x1000, 1048576, s);
	ap_tw_alloc(tw, 4242, t0 + 2000, 0, AP_KIND_MALLOC, 0x2000, 1048576, s);
	ap_tw_free(tw, 4242, t0 + 3000, 0, 0x1000);
	ap_tw_alloc(tw, 4243, t0 + 4000, 0, AP_KIND_MALLOC, 0x3000, 100, s);
	return tw;
}

/* For measuring the reader (not a golden): `n` records on 4 threads, like
 * --all on a malloc/free loop: a window of 64 live blocks per thread, sizes
 * 16..527, 16 stacks, timestamps 20..83 ns apart, a CPU change now and then. */
static struct ap_tw *big(uint64_t n)
{
	struct ap_tw *tw = demo_writer(1);
	uint32_t stacks[16];
	for (int i = 0; i < 16; i++) {
		uint64_t pcs[12];
		for (int k = 0; k < 12; k++)
			pcs[k] = 0x555555555000ull + (uint64_t)(i * 131 + k * 977) % 0x5000;
		stacks[i] = ap_tw_stack(tw, pcs, 12);
	}
	uint64_t win[4][64] = {{0}};
	uint64_t ts[4] = {1000000000ull, 1000000000ull, 1000000000ull, 1000000000ull};
	uint64_t x = 88172645463325252ull;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned k = (unsigned)(i % 4), slot = (unsigned)(x % 64);
		uint32_t tid = 4242 + k, cpu = (unsigned)((i >> 16) + k) % 2;
		ts[k] += 20 + (x >> 58);
		if (win[k][slot]) {
			ap_tw_free(tw, tid, ts[k], cpu, win[k][slot]);
			win[k][slot] = 0;
		} else {
			uint64_t addr =
			    0x7f0000000000ull + ((uint64_t)k << 32) + ((x >> 20) % 100000) * 32;
			ap_tw_alloc(tw, tid, ts[k], cpu, AP_KIND_MALLOC, addr, 16 + (x >> 40) % 512,
				    stacks[(x >> 8) % 16]);
			win[k][slot] = addr;
		}
	}
	return tw;
}

/* The trace at path compacted, as `record` leaves it: its EVENTS chunks
 * carry their counts, which the reader takes without decoding them. */
static int compact(const char *path)
{
	struct ap_compact_stats st;
	struct ap_error err;
	if (ap_trace_compact(path, 3, &st, &err) < 0) {
		fprintf(stderr, "mktrace: %s\n", err.msg);
		return 1;
	}
	return 0;
}

/* The trace at path compacted, and the count of records of its first
 * EVENTS chunk one more than it holds (checksums made right): a trace
 * whose fault only a pass over the events finds. */
static int damage_counts(const char *path)
{
	if (compact(path))
		return 1;
	FILE *f = fopen(path, "r+b");
	uint8_t buf[1 << 16];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	for (size_t o = AP_TRACE_PREAMBLE_LEN; f && o + AP_CHUNK_HDR_LEN < n;
	     o += AP_CHUNK_HDR_LEN + ap_get_u32le(buf + o + 12)) {
		uint8_t *h = buf + o, *p = h + AP_CHUNK_HDR_LEN;
		uint32_t plen = ap_get_u32le(h + 12);
		if (h[4] != AP_CHUNK_EVENTS || !(h[5] & AP_CHUNK_F_COUNTS) || plen > n - o - 32)
			continue;
		p[0] = (uint8_t)((p[0] & 0x80) | ((p[0] + 1) & 0x7f));
		ap_put_u32le(h + 16, ap_crc32c(p, plen));
		ap_put_u32le(h + AP_CHUNK_HDR_CRC_OFF, ap_crc32c(h, AP_CHUNK_HDR_CRC_OFF));
		if (fseek(f, (long)o, SEEK_SET) == 0 && fwrite(h, 1, 32 + plen, f) == 32 + plen &&
		    fclose(f) == 0)
			return 0;
		break;
	}
	fprintf(stderr, "mktrace: %s: no EVENTS chunk with counts\n", path);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "compact"))
		return compact(argv[2]); /* a trace of its own, in place */
	if (argc != 3 && !(argc == 4 && (!strcmp(argv[1], "big") ||
					 !strcmp(argv[1], "damaged-module")))) {
		fprintf(stderr, "usage: mktrace exact|exact-noend|exact-cut|sampled OUT\n"
				"       mktrace damaged-cpus|damaged-allowed|damaged-rate|damaged-counts OUT\n"
				"       mktrace counted OUT\n"
				"       mktrace compact TRACE\n"
				"       mktrace damaged-module OUT MODULE_PATH\n"
				"       mktrace big OUT NRECORDS\n");
		return 2;
	}
	const char *name = argv[1];
	/* exact, with 2^32 CPUs; with 2^32 CPUs allowed; with a rate of
	 * 2^62; with its program's module at MODULE_PATH */
	if (!strcmp(name, "damaged-cpus")) {
		over_cpus = 1ull << 32;
		name = "exact";
	} else if (!strcmp(name, "damaged-allowed")) {
		over_allowed = 1ull << 32;
		name = "exact";
	} else if (!strcmp(name, "damaged-rate")) {
		over_rate = 1ull << 62;
		name = "exact";
	} else if (!strcmp(name, "damaged-module")) {
		over_module = argv[3];
		name = "exact";
	}
	/* exact, compacted (counted), and with a count one off */
	bool counted = !strcmp(name, "counted"), counts = !strcmp(name, "damaged-counts");
	if (counted || counts)
		name = "exact";
	struct ap_tw *tw;
	struct ap_tw_end end = {
	    .end_ns = 2500000000ull, .reason = AP_END_EXIT, .calls = 10, .bytes = 1055800};
	size_t cut = 0;
	if (!strcmp(name, "exact")) {
		tw = exact();
		/* the process's context switches and page faults: stats
		 * prints them */
		end.has_switches = true;
		end.nvcsw = 12;
		end.nivcsw = 3;
		end.has_minflt = true;
		end.minflt = 345;
		ap_tw_end(tw, &end); /* duration 1.5 s */
	} else if (!strcmp(name, "exact-noend")) {
		tw = exact(); /* duration up to the last event: 55 ns */
	} else if (!strcmp(name, "exact-cut")) {
		/* everything, then END, then one more chunk cut short */
		tw = exact();
		ap_tw_end(tw, &end);
		ap_tw_free(tw, 4242, 2600000000ull, 0, 0x3000);
		ap_tw_flush(tw);
		cut = 2;
	} else if (!strcmp(name, "sampled")) {
		tw = sampled();
		end.end_ns = 1000000000ull + 3600000000000ull; /* one hour */
		end.reason = AP_END_SIGNAL;		       /* killed by SIGABRT */
		end.status = 6;
		ap_tw_end(tw, &end);
	} else if (!strcmp(name, "big")) {
		tw = big(strtoull(argv[3], NULL, 10));
		ap_tw_end(tw, &end);
	} else {
		fprintf(stderr, "mktrace: unknown trace '%s'\n", name);
		return 2;
	}
	uint8_t *data;
	size_t len;
	struct ap_error err;
	if (ap_tw_close_mem(tw, &data, &len, &err) < 0) {
		fprintf(stderr, "mktrace: %s\n", err.msg);
		return 1;
	}
	FILE *f = fopen(argv[2], "wb");
	if (!f || fwrite(data, 1, len - cut, f) != len - cut || fclose(f) != 0) {
		perror(argv[2]);
		return 1;
	}
	free(data);
	return counts ? damage_counts(argv[2]) : counted ? compact(argv[2]) : 0;
}
