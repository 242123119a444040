/* allocprof symbols: keeps the names, files and lines of a trace's frames
 * in the trace (SYMBOLS chunks: docs/trace-format.md), as `record` does
 * when it finishes a trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_symbolize.h"
#include "ap_trace.h"
#include "commands.h"
#include "views.h"

static void symbols_usage(FILE *f)
{
	fputs("usage: allocprof symbols [OPTIONS] TRACE...\n\n"
	      "Keeps the names, source files, lines and inline chains of every frame\n"
	      "of each TRACE in it, read from the program's files (and the perf map\n"
	      "/tmp/perf-PID.map a JIT wrote for code in no file), so that the reports\n"
	      "name the frames after the program is rebuilt, upgraded or removed, or\n"
	      "on another machine. `allocprof record` does this when it finishes a\n"
	      "trace (unless --no-symbols); this is for traces recorded with\n"
	      "--no-symbols. A trace that keeps its symbols already is left as it is;\n"
	      "frames whose file cannot be read (missing, or rebuilt since: its\n"
	      "build-id differs) are not kept, and the reports look for the file again.\n"
	      "The trace must be finished (not written any more).\n\n"
	      "options:\n"
	      "      --compress-level N\n"
	      "                     zstd level of the symbols, 0 to 19 (default 3; 0: not\n"
	      "                     compressed)\n"
	      "      --if-finished  leave a trace that is not finished (no end record,\n"
	      "                     or cut inside a chunk) as it is, without a word (what\n"
	      "                     record does; else that is an error)\n"
	      "  -q, --quiet        no line per trace\n"
	      "  -h, --help         show this help\n\n"
	      "Exit status: 0, 1 if a trace could not be read or written, 2 for bad\n"
	      "usage.\n",
	      f);
}

enum { OPT_LEVEL = AP_VOPT_FIRST_OWN, OPT_IF_FINISHED };

int cmd_symbols(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"compress-level", required_argument, NULL, OPT_LEVEL},
	    {"if-finished", no_argument, NULL, OPT_IF_FINISHED},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int level = 3, opt;
	bool quiet = false, if_finished = false;
	opterr = 0;
	optind = 1;
	while ((opt = ap_view_getopt(argc, argv, ":hq", longopts)) != -1) {
		switch (opt) {
		case 'h':
			symbols_usage(stdout);
			return AP_EXIT_OK;
		case 'q':
			quiet = true;
			break;
		case OPT_IF_FINISHED:
			if_finished = true;
			break;
		case OPT_LEVEL:
			if (ap_view_parse_level("symbols", optarg, &level) < 0)
				return AP_EXIT_USAGE;
			break;
		default:
			return ap_view_bad_option("symbols", opt, argv);
		}
	}
	if (optind >= argc)
		return ap_usage_error("symbols", "no trace given");
	int rc = 0;
	for (int i = optind; i < argc; i++) {
		struct ap_error err;
		int k = ap_sym_keep_file(argv[i], level, &err);
		if (k < 0 || (k > 0 && !if_finished)) {
			ap_print_error(&err);
			rc = AP_EXIT_FAIL;
		} else if (!quiet && k == 0) {
			fprintf(stderr, "allocprof: %s keeps its symbols\n", argv[i]);
		}
	}
	return rc;
}
