/* `allocprof calibrate`: measures the cost model `advise` uses (malloc+free
 * against a pool's get+put, and first-touch page faults, by size) and
 * caches it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_advise.h"
#include "commands.h"
#include "views.h"

static void calibrate_usage(FILE *f)
{
	fputs("usage: allocprof calibrate [-o FILE]\n\n"
	      "Measures on this machine what an allocation costs against a pool's\n"
	      "get+put, by size class (16B ... 64MB), including the page faults of the\n"
	      "first touch of a fresh large block, prints the table and caches it in\n"
	      "$XDG_CACHE_HOME/allocprof/costs.json (or ~/.cache/...), where 'allocprof\n"
	      "advise' reads it. Each value is the median of 5 rounds over the whole\n"
	      "table; the spread (+-, half the interquartile range of the rounds over\n"
	      "the median) is printed with it and kept in the file, with the date.\n"
	      "Takes a few seconds.\n\n"
	      "options:\n"
	      "  -o, --output FILE    write the table to FILE instead of the cache\n"
	      "  -h, --help           show this help\n", f);
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	int opt;
	opterr = 0;
	optind = 1;
	while ((opt = ap_view_getopt(argc, argv, ":ho:", longopts)) != -1) {
		switch (opt) {
		case 'h':
			calibrate_usage(stdout);
			return AP_EXIT_OK;
		case 'o':
			out = optarg;
			break;
		default:
			return ap_view_bad_option("calibrate", opt, argv);
		}
	}
	if (optind != argc)
		return ap_usage_error("calibrate", "no arguments expected");
	char *path = out ? ap_xstrdup(out) : ap_cost_cache_path();
	if (!path) {
		ap_say("calibrate: no place for the cache: set XDG_CACHE_HOME, or HOME to a directory that exists, or use -o");
		return AP_EXIT_FAIL;
	}
	struct ap_cost_table c;
	ap_cost_measure(&c);
	printf("%10s %22s %18s %18s %24s\n", "size", "malloc+free ns", "pool ns", "deque hit ns",
	       "first touch ns");
	for (size_t i = 0; i < c.n; i++) {
		char b[32], ft[48] = "0";
		ap_format_bytes(b, sizeof(b), (double)c.size[i]);
		if (c.first_touch_ns[i] > 0)
			snprintf(ft, sizeof(ft), "%.0f +-%4.0f%%", c.first_touch_ns[i],
				 100 * c.first_touch_spread[i]);
		printf("%10s %12.1f +-%4.0f%% %8.1f +-%4.0f%% %8.1f +-%4.0f%% %24s\n", b,
		       c.malloc_free_ns[i], 100 * c.malloc_free_spread[i], c.pool_ns[i],
		       100 * c.pool_spread[i], c.pool_shared_ns[i], 100 * c.pool_shared_spread[i], ft);
	}
	printf("spread +-%.*f%% (the median of the values' spreads over %u rounds)\n",
	       100 * c.spread < 1 ? 1 : 0, 100 * c.spread, c.rounds);
	struct ap_error err;
	int rc = ap_cost_save(path, &c, &err);
	if (rc < 0)
		ap_print_error(&err);
	else
		fprintf(stderr, "allocprof: cost table written to %s\n", path);
	free(path);
	return rc < 0 ? AP_EXIT_FAIL : AP_EXIT_OK;
}
