/* allocprof symbols: keeps the names, files and lines of a trace's frames
 * in the trace (SYMBOLS chunks: docs/trace-format.md), as `record` does
 * when it finishes a trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_symbolize.h"
#include "ap_trace.h"
#include "commands.h"

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

int cmd_symbols(int argc, char **argv)
{
	int level = 3, i;
	bool quiet = false, if_finished = false;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			symbols_usage(stdout);
			return 0;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else if (!strcmp(a, "--if-finished")) {
			if_finished = true;
		} else if (!strncmp(a, "--compress-level", 16) && (!a[16] || a[16] == '=')) {
			const char *v = a[16] ? a + 17 : i + 1 < argc ? argv[++i] : NULL;
			char *end;
			long l = v && *v ? strtol(v, &end, 10) : -1;
			if (!v || !*v || *end || l < 0 || l > 19)
				return ap_usage_error("symbols", "--compress-level needs a number from 0 "
							       "to 19%s%s%s", v ? " (not '" : "",
						      v ? v : "", v ? "')" : "");
			level = (int)l;
		} else {
			return ap_usage_error("symbols", "unknown option '%s'", a);
		}
	}
	if (i >= argc)
		return ap_usage_error("symbols", "no trace given");
	int rc = 0;
	for (; i < argc; i++) {
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
