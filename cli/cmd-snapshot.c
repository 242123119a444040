/* allocprof snapshot: a finished copy of a trace whose program is still
 * running under `allocprof record`, with everything it has recorded up to
 * now (ap_trace_snapshot), for the reports to read while it runs on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ap_symbolize.h"
#include "ap_trace.h"
#include "ap_trace_compact.h"
#include "commands.h"
#include "views.h"

static void snapshot_usage(FILE *f)
{
	fputs("usage: allocprof snapshot [OPTIONS] TRACE\n\n"
	      "Writes a finished copy of TRACE, the trace of a program `allocprof record`\n"
	      "is still recording, with every allocation it has recorded up to now\n"
	      "(what its threads hold in their buffers too), so that every report reads\n"
	      "it while the program runs on. The program is not told and not touched:\n"
	      "the copy is made from the trace and its buffers file. The copy ends\n"
	      "with the program \"still running\" (stats says so), is compacted and\n"
	      "keeps its symbols, as record's traces are. Processes the program\n"
	      "started write traces of their own (TRACE.<pid>): snapshot each.\n\n"
	      "options:\n"
	      "  -o, --output PATH  the copy (default: TRACE.snapshot); an existing\n"
	      "                     trace there is replaced, any other file refused\n"
	      "      --compress-level N\n"
	      "                     zstd level of the copy, 0 to 19 (default 3; 0 leaves\n"
	      "                     it as the sampler wrote it)\n"
	      "      --no-symbols   keep no names, files and lines in the copy\n"
	      "  -q, --quiet        no summary line\n"
	      "  -h, --help         show this help\n\n"
	      "Exit status: 0; 1 if TRACE is not a trace being recorded (a finished one\n"
	      "is read as it is) or the copy could not be written; 2 for bad usage.\n",
	      f);
}

enum { OPT_LEVEL = AP_VOPT_FIRST_OWN, OPT_NO_SYMBOLS };

int cmd_snapshot(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"compress-level", required_argument, NULL, OPT_LEVEL},
	    {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	int level = AP_COMPACT_LEVEL, opt;
	bool quiet = false, no_symbols = false;
	opterr = 0;
	optind = 1;
	while ((opt = ap_view_getopt(argc, argv, ":ho:q", longopts)) != -1) {
		switch (opt) {
		case 'h':
			snapshot_usage(stdout);
			return AP_EXIT_OK;
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_NO_SYMBOLS:
			no_symbols = true;
			break;
		case OPT_LEVEL:
			if (ap_view_parse_level("snapshot", optarg, &level) < 0)
				return AP_EXIT_USAGE;
			break;
		default:
			return ap_view_bad_option("snapshot", opt, argv);
		}
	}
	if (optind >= argc)
		return ap_usage_error("snapshot", "a TRACE is needed");
	if (optind + 1 < argc)
		return ap_usage_error("snapshot", "one TRACE at a time, not '%s' too", argv[optind + 1]);
	const char *trace = argv[optind];
	/* "-o -" is standard output to the views; the copy is compacted and
	 * gets its symbols in place: a file, not a file named "-" either */
	if (out && !strcmp(out, "-")) {
		ap_say("-o -: the copy is a trace file, never standard output: give a path "
		       "(./- for a file named '-')");
		return AP_EXIT_FAIL;
	}
	struct ap_buf def = AP_BUF_INIT;
	if (!out) {
		ap_buf_addf(&def, "%s.snapshot", trace);
		out = def.buf;
	}
	int rc = AP_EXIT_FAIL;
	struct stat so, st;
	if (lstat(out, &so) == 0) {
		if (stat(trace, &st) == 0 && so.st_dev == st.st_dev && so.st_ino == st.st_ino) {
			ap_say("%s: the copy cannot replace the trace itself", out);
			goto done;
		}
		if (!S_ISREG(so.st_mode) || !ap_trace_file_is_trace(out)) {
			ap_say("%s: exists and is not a trace: not replaced (give -o another path)",
				   out);
			goto done;
		}
	}
	struct ap_finished fin;
	struct ap_error err;
	if (ap_trace_snapshot(trace, out, &fin, &err) < 0) {
		ap_print_error(&err);
		goto done;
	}
	struct ap_compact_stats cs;
	if (ap_trace_compact(out, level, &cs, &err) < 0) {
		ap_print_error(&err);
		goto done;
	}
	int kept = no_symbols ? 0 : ap_sym_keep_file(out, NULL, level, &err);
	if (kept == -1 || kept == 1)
		ap_say("%s; the reports name its frames from the program's files", err.msg);
	if (!quiet)
		fprintf(stderr,
			"allocprof: wrote %s (%llu events, %zu thread%s; %llu chunk%s from the "
			"buffers): %s as it was now, its program running on\n",
			out, (unsigned long long)cs.events, cs.nthreads, cs.nthreads == 1 ? "" : "s",
			(unsigned long long)fin.chunks, fin.chunks == 1 ? "" : "s", trace);
	rc = AP_EXIT_OK;
done:
	ap_buf_release(&def);
	return rc;
}
