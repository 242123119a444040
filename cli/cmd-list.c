/* `allocprof list`: the source of matching functions, each line annotated
 * with what it allocated, as pprof -list shows it. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "render.h"
#include "views.h"

enum {
	OPT_SOURCE_PATH = AP_VOPT_FIRST_OWN,
};

static void list_usage(FILE *f)
{
	fputs("usage: allocprof list [OPTIONS] REGEX TRACE...\n\n"
	      "For each function whose name matches REGEX (pprof's syntax), its source\n"
	      "lines with flat (allocated at this line) and cum (allocated at this line\n"
	      "or in the functions it calls), as pprof -list shows them: from a few\n"
	      "lines before the first line with allocations to a few after the last.\n\n"
	      "options:\n"
	      "  --source-path DIRS   where to look for sources that moved: each\n"
	      "                       colon-separated DIR is tried with the recorded\n"
	      "                       path's trailing components (DIR/a/b.c, "
	      "DIR/b.c)\n" AP_VIEW_OPTIONS_HELP,
	      f);
}

static void print_text(const struct ap_list *l)
{
	char a[32];
	ap_view_format(a, sizeof(a), l->sample_index, l->total);
	printf("Total: %s\n", a);
	for (size_t i = 0; i < l->nfuncs; i++)
		ap_render_list_func(l, &l->funcs[i], ap_render_print, NULL);
}

static int print_json(const struct ap_list *l, const struct ap_trace *t)
{
	json_t *funcs = json_array();
	for (size_t i = 0; i < l->nfuncs; i++) {
		const struct ap_list_func *f = &l->funcs[i];
		json_t *lines = json_array();
		for (size_t k = 0; k < f->nlines; k++) {
			const struct ap_list_line *ln = &f->lines[k];
			json_array_append_new(
			    lines, json_pack("{s:i, s:I, s:I, s:o}", "line", ln->line, "flat",
					     (json_int_t)ap_view_round(ln->flat), "cum",
					     (json_int_t)ap_view_round(ln->cum), "source",
					     ap_json_text(ln->source)));
		}
		json_array_append_new(
		    funcs, json_pack("{s:o, s:o, s:o, s:I, s:I, s:o}", "name", ap_json_text(f->name),
				     "file", ap_json_text(f->file), "path", ap_json_text(f->path), "flat",
				     (json_int_t)ap_view_round(f->flat), "cum",
				     (json_int_t)ap_view_round(f->cum), "lines", lines));
	}
	json_t *root = ap_view_json_head(t, l->sample_index, l->total);
	json_object_set_new(root, "functions", funcs);
	return ap_view_json_print(root);
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
	    AP_VIEW_LONGOPTS,
	    {"source-path", required_argument, NULL, OPT_SOURCE_PATH},
	    {"source_path", required_argument, NULL, OPT_SOURCE_PATH},
	    {NULL, 0, NULL, 0},
	};
	struct ap_view_opts o;
	const char *source_path = NULL;
	int opt;

	ap_view_opts_init(&o);
	optind = 0;
	while ((opt = ap_view_next_option(&o, "list", argc, argv, ":h", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			list_usage(stdout);
			return AP_EXIT_OK;
		case OPT_SOURCE_PATH:
			source_path = optarg;
			break;
		default:
			return ap_view_bad_option("list", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc - optind < 2)
		return ap_usage_error("list", "need a REGEX and a TRACE");
	const char *regex = argv[optind];
	if (ap_view_regex_ok("list", "REGEX", regex))
		return AP_EXIT_USAGE;
	if (o.by_process)
		return ap_view_by_process(cmd_list, argc, argv, optind + 1, &o);

	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind + 1, (size_t)(argc - optind - 1), &o);
	if (rc)
		return rc;
	struct ap_error err;
	struct ap_list *l =
	    ap_list_new(v.trace, v.values, v.sym, &o.report, regex, source_path,
			ap_view_progress_fn(), ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	ap_view_warnings(&v);
	if (ap_view_sampling_hint(v.trace) ||
	    ap_view_inuse_objects_note(v.trace, o.report.sample_index) ||
	    ap_view_peak_note(v.trace, o.report.sample_index)) {
		rc = AP_EXIT_FAIL;
	} else if (!l) {
		ap_print_error(&err);
		rc = AP_EXIT_FAIL;
	} else if (!l->nfuncs) {
		ap_say("no matches found for regexp: %s", regex); /* pprof's words */
		rc = AP_EXIT_FAIL;
	} else if (o.json) {
		rc = print_json(l, v.trace);
	} else {
		print_text(l);
	}
	ap_list_free(l);
	ap_view_release(&v);
	return rc;
}
