/* `allocprof export`: a trace as a pprof profile, folded stacks or JSON. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_export.h"
#include "commands.h"
#include "views.h"

enum format { FMT_PPROF, FMT_FOLDED, FMT_JSON };

enum {
	OPT_FORMAT = AP_VOPT_FIRST_OWN,
	OPT_PROTO,
	OPT_FOLDED,
	OPT_JSON,
};

static void export_usage(FILE *f)
{
	fputs("usage: allocprof export [--format=pprof|folded|json] [OPTIONS] TRACE...\n\n"
	      "Writes the allocation profile of TRACE for other tools:\n"
	      "  pprof   gzip'd profile.proto, for go tool pprof, Pyroscope and Parca:\n"
	      "          the four sample types of a Go heap profile (alloc_objects,\n"
	      "          alloc_space, inuse_objects, inuse_space) and peak_objects,\n"
	      "          peak_space (live at the peak), temporary, one Location per\n"
	      "          return address with its inlined frames, one Mapping per module;\n"
	      "          C++ and Rust functions by their short names, as pprof shows\n"
	      "          them (geo::detail::make_point; the whole ones with\n"
	      "          --full-names), the mangled name in system_name; a module without any names\n"
	      "          (rebuilt, missing, stripped) as addresses in an unsymbolized\n"
	      "          mapping, for pprof -symbolize=local to name later;\n"
	      "          allocator frames stay in the stacks and drop_frames names them,\n"
	      "          so pprof shows the call site as the leaf, as `allocprof top` does\n"
	      "  folded  folded stacks for flamegraph.pl and speedscope: one line\n"
	      "          'caller;...;callsite VALUE' per distinct stack\n"
	      "  json    every stack with its frames and four values (docs/json.md)\n\n"
	      "options:\n"
	      "  --format FMT         pprof (default), folded or json\n"
	      "  --proto, --folded, --json\n"
	      "                       the same as --format pprof, folded or json (as\n"
	      "                       pprof's -proto, top's --json)\n"
	      "  -o, --output PATH    where to write ('-' is standard output); default:\n"
	      "                       TRACE.pb.gz for pprof, standard output otherwise\n"
	      "  --sample-index NAME  alloc_space (default), alloc_objects, inuse_space,\n"
	      "                       inuse_objects, peak_space, peak_objects or\n"
	      "                       temporary (or the\n"
	      "                       flag of that name): pprof's\n"
	      "                       default sample type, the folded value, the order\n"
	      "                       of the JSON stacks\n"
	      AP_VIEW_SYM_HELP
	      AP_VIEW_SUPP_HELP
	      "  --no-children        read only the trace files given, not their child traces\n"
	      "  -h, --help           show this help\n"
	      "Options are spelled as pprof's too: one dash or two, the value after '='\n"
	      "or as the next argument.\n"
	      AP_VIEW_RUN_TEXT, f);
}

static int parse_format(const char *s, enum format *out)
{
	static const char *const names[] = { "pprof", "folded", "json" };
	for (size_t i = 0; i < AP_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum format)i;
			return 0;
		}
	return -1;
}

int ap_write_output(const char *path, const struct ap_buf *b)
{
	if (!strcmp(path, "-")) {
		fwrite(b->buf, 1, b->len, stdout);
		return 0;	/* main checks stdout at exit */
	}
	/* A file is written beside and renamed over the path once complete;
	 * a device (/dev/null, /dev/stdout) or a FIFO (-o >(gzip)) is written
	 * as it is: a rename would replace it by a file (-o /dev/null, run as
	 * root, left /dev/null a file). A symbolic link stays, and leads to
	 * the new file. */
	struct stat st;
	bool in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
	char *target = NULL;
	if (!in_place && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
	    (target = realpath(path, NULL)))
		path = target;
	struct ap_buf tmp = AP_BUF_INIT;
	ap_buf_addf(&tmp, "%s.tmp%ld", path, (long)getpid());
	FILE *f = fopen(in_place ? path : tmp.buf, "wb");
	bool ok = f && fwrite(b->buf, 1, b->len, f) == b->len;
	int saved = errno;
	if (f && fclose(f) != 0 && ok) {
		ok = false;
		saved = errno;
	}
	if (ok && !in_place && rename(tmp.buf, path) != 0) {
		ok = false;
		saved = errno;
	}
	if (!ok) {
		ap_say("%s: %s", path, strerror(saved));
		if (f && !in_place)
			unlink(tmp.buf);
	}
	ap_buf_release(&tmp);
	free(target);
	return ok ? 0 : -1;
}

int ap_check_output(const char *path)
{
	if (!path || !strcmp(path, "-"))
		return 0;
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			ap_say("%s: %s", path, strerror(EISDIR));
			return -1;
		}
		if (!S_ISREG(st.st_mode))
			return 0;	/* a device or a FIFO, written in place */
	}
	/* a new file, or one replaced by a rename: its directory must take it */
	char *copy = ap_xstrdup(path);
	char *slash = strrchr(copy, '/');
	const char *dir = !slash ? "." : slash == copy ? "/" : (*slash = 0, copy);
	int rc = 0;
	if (access(dir, W_OK | X_OK) < 0) {
		ap_say("%s: %s", path, strerror(errno));
		rc = -1;
	}
	free(copy);
	return rc;
}

const char *ap_output_away_from_tty(const char *path, const char *prefix, const char *ext,
				    struct ap_buf *name)
{
	if (strcmp(path, "-") || !isatty(STDOUT_FILENO))
		return path;
	return ap_output_new_file(prefix, ext, name);
}

const char *ap_output_new_file(const char *prefix, const char *ext, struct ap_buf *name)
{
	for (int i = 1; i < 10000; i++) {
		ap_buf_reset(name);
		ap_buf_addf(name, "%s%03d.%s", prefix, i, ext);
		int fd = open(name->buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			close(fd);
			return name->buf;
		}
		if (errno != EEXIST) {
			ap_say("%s: %s", name->buf, strerror(errno));
			return NULL;
		}
	}
	ap_say("%s001.%s to %s9999.%s: all exist (use -o PATH)", prefix, ext, prefix, ext);
	return NULL;
}

static int render(const struct ap_export *x, enum format fmt, enum ap_sample_index si,
		  struct ap_buf *out, struct ap_buf *summary)
{
	struct ap_error err;
	switch (fmt) {
	case FMT_PPROF: {
		struct ap_pprof_stats st;
		if (ap_export_pprof(x, si, true, out, &st, &err)) {
			ap_print_error(&err);
			return -1;
		}
		ap_buf_addf(summary, "%zu samples, %zu locations, %zu functions, %zu mappings",
			    st.samples, st.locations, st.functions, st.mappings);
		if (st.stripped)
			ap_buf_addf(summary, "; %zu samples without their allocator frames",
				    st.stripped);
		return 0;
	}
	case FMT_FOLDED:
		ap_buf_addf(summary, "%zu stacks", ap_export_folded(x, si, out));
		return 0;
	case FMT_JSON:
		if (ap_export_json(x, si, out, &err)) {
			ap_print_error(&err);
			return -1;
		}
		ap_buf_addf(summary, "%zu stacks", x->nstacks);
		return 0;
	}
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "proto", no_argument, NULL, OPT_PROTO },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "output", required_argument, NULL, 'o' },
		{ "sample-index", required_argument, NULL, AP_VOPT_SAMPLE_INDEX },
		{ "sample_index", required_argument, NULL, AP_VOPT_SAMPLE_INDEX },
		{ "alloc_space", no_argument, NULL, AP_VOPT_ALLOC_SPACE },
		{ "alloc_objects", no_argument, NULL, AP_VOPT_ALLOC_OBJECTS },
		{ "inuse_space", no_argument, NULL, AP_VOPT_INUSE_SPACE },
		{ "inuse_objects", no_argument, NULL, AP_VOPT_INUSE_OBJECTS },
		{ "peak_space", no_argument, NULL, AP_VOPT_PEAK_SPACE },
		{ "peak_objects", no_argument, NULL, AP_VOPT_PEAK_OBJECTS },
		{ "temporary", no_argument, NULL, AP_VOPT_TEMPORARY },
		AP_VIEW_SYM_LONGOPTS,
		AP_VIEW_SUPP_LONGOPTS,
		AP_VIEW_RUN_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts o;
	enum format fmt = FMT_PPROF;
	const char *output = NULL;
	int opt;

	ap_view_opts_init(&o);
	optind = 0;
	while ((opt = ap_view_next_option(&o, "export", argc, argv, ":ho:", longopts)) >= 0) {
		/* of the shared options, only the sample index and the
		 * symbolizer's are in longopts */
		switch (opt) {
		case 'h':
			export_usage(stdout);
			return AP_EXIT_OK;
		case 'o':
			output = optarg;
			break;
		case OPT_FORMAT:
			if (parse_format(optarg, &fmt))
				return ap_usage_error("export", "unknown format '%s', not pprof, folded or json",
						      optarg);
			break;
		/* as pprof's -proto, and top's --json */
		case OPT_PROTO:
			fmt = FMT_PPROF;
			break;
		case OPT_FOLDED:
			fmt = FMT_FOLDED;
			break;
		case OPT_JSON:
			fmt = FMT_JSON;
			break;
		default:
			return ap_view_bad_option("export", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc == optind)
		return ap_usage_error("export", "no trace given");
	if (o.by_process)
		return ap_usage_error("export", "--by-process: export writes one profile; export "
				      "each trace with --no-children");
	const char *trace_path = argv[optind];

	struct ap_buf defpath = AP_BUF_INIT;
	if (!output) {
		if (fmt == FMT_PPROF) {
			ap_buf_addf(&defpath, "%s.pb.gz", trace_path);
			output = defpath.buf;
		} else {
			output = "-";
		}
	}
	if (fmt == FMT_PPROF && !strcmp(output, "-") && isatty(STDOUT_FILENO)) {
		ap_say("export: not writing a gzip'd profile to a terminal (use -o PATH)");
		ap_buf_release(&defpath);
		return AP_EXIT_FAIL;
	}
	if (ap_check_output(output) < 0) {
		ap_buf_release(&defpath);
		return AP_EXIT_FAIL;
	}

	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o);
	if (rc) {
		ap_buf_release(&defpath);
		return rc;
	}
	struct ap_error err;
	struct ap_export *x = ap_export_new(v.trace, v.values, v.sym, ap_view_progress_fn(),
					    ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	if (!x) {
		ap_print_error(&err);
		ap_view_release(&v);
		ap_buf_release(&defpath);
		return AP_EXIT_FAIL;
	}
	ap_view_warnings(&v);
	bool noted = !ap_view_sampling_hint(v.trace) &&
		     !ap_view_inuse_objects_note(v.trace, o.report.sample_index) &&
		     !ap_view_peak_note(v.trace, o.report.sample_index);

	struct ap_buf out = AP_BUF_INIT, summary = AP_BUF_INIT;
	rc = AP_EXIT_FAIL;
	if (noted && render(x, fmt, o.report.sample_index, &out, &summary) == 0 &&
	    ap_write_output(output, &out) == 0) {
		rc = AP_EXIT_OK;
		if (strcmp(output, "-"))
			ap_say("wrote %s (%s)", output, summary.buf);
	}
	ap_buf_release(&out);
	ap_buf_release(&summary);
	ap_export_free(x);
	ap_view_release(&v);
	ap_buf_release(&defpath);
	return rc;
}
