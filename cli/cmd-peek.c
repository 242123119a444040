/* `allocprof peek REGEX TRACE` and `allocprof tree TRACE`: the callers
 * and callees of the matching nodes (of every node kept, for tree), with
 * the value that flows through each edge, as pprof -peek and -tree print
 * them. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_regex.h"
#include "commands.h"
#include "render.h"
#include "views.h"

static void peek_usage(FILE *f)
{
	fputs("usage: allocprof peek [OPTIONS] REGEX TRACE...\n\n"
	      "For every node (function, line or file) whose name matches REGEX, the\n"
	      "nodes that call it and those it calls, each with what flows through the\n"
	      "edge and its share of the node's cum, as pprof -peek prints them.\n\n"
	      "options:\n"
	      "  --functions          one node per function (default)\n"
	      "  --lines              one node per source line\n"
	      "  --files              one node per source file\n" AP_VIEW_OPTIONS_HELP
	      "REGEXes are pprof's (RE2) syntax, matched with PCRE2.\n",
	      f);
}

/* Whether some row's name matches `re`. */
static bool any_match(const struct ap_report *r, const struct ap_regex *re)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (ap_regex_match(re, r->rows[i].name))
			return true;
	return false;
}

static const char sep[] = "----------------------------------------------------------+-------------\n";

/* The rows matching `re` (every row when NULL), each between its callers
 * and callees. Returns the exit code (ap_view_print_kind's). */
static int print_text(const struct ap_report *r, const struct ap_trace *t,
		      const struct ap_regex *re)
{
	int unit = ap_view_table_unit(r);
	const char *exe = strrchr(t->exe, '/');
	printf("File: %s\nType: %s\n", exe ? exe + 1 : t->exe, ap_sample_index_name(r->sample_index));
	if (ap_view_print_kind(t, r->sample_index))
		return AP_EXIT_FAIL;
	ap_render_top_head(r, unit);
	printf("%s", sep);
	/* as pprof: a rule before each node and one after the last */
	printf("      flat  flat%%   sum%%        cum   cum%%   calls calls%% + context \t \t \n");
	double sum = 0;
	bool any = false;
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ap_report_row *row = &r->rows[i];
		if (re && !ap_regex_match(re, row->name))
			continue;
		sum += row->flat;
		any = true;
		printf("%s", sep);
		ap_render_peek_node(r, i, sum, unit, ap_render_print, NULL);
	}
	if (any)
		printf("%s", sep);
	return AP_EXIT_OK;
}

static json_t *ctx_json(const struct ap_peek_edge *c, size_t n)
{
	json_t *a = json_array();
	for (size_t k = 0; k < n; k++) {
		json_t *o = json_object();
		json_object_set_new(o, "name", ap_json_text(c[k].name));
		json_object_set_new(o, "value", json_real(c[k].value));
		json_object_set_new(o, "inline", json_boolean(c[k].inl));
		json_array_append_new(a, o);
	}
	return a;
}

static int print_json(const struct ap_report *r, const struct ap_trace *t,
		      const struct ap_regex *re)
{
	json_t *root = json_object(), *nodes = json_array();
	json_object_set_new(root, "program", ap_json_text(t->exe));
	json_object_set_new(root, "sample_index", json_string(ap_sample_index_name(r->sample_index)));
	json_object_set_new(root, "total", json_real(r->total));
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ap_report_row *row = &r->rows[i];
		if (re && !ap_regex_match(re, row->name))
			continue;
		struct ap_peek_edge *in, *outl;
		size_t nin = ap_peek_context(r, row->name, true, &in);
		size_t nout = ap_peek_context(r, row->name, false, &outl);
		json_t *o = json_object();
		json_object_set_new(o, "name", ap_json_text(row->name));
		json_object_set_new(o, "flat", json_real(row->flat));
		json_object_set_new(o, "cum", json_real(row->cum));
		json_object_set_new(o, "callers", ctx_json(in, nin));
		json_object_set_new(o, "callees", ctx_json(outl, nout));
		json_array_append_new(nodes, o);
		free(in);
		free(outl);
	}
	json_object_set_new(root, "nodes", nodes);
	return ap_view_json_print(root);
}

int cmd_peek(int argc, char **argv)
{
	static const struct option longopts[] = {
		AP_VIEW_LONGOPTS,
		AP_VIEW_GRAN_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts o;
	ap_view_opts_init(&o);
	int opt;
	optind = 0;
	while ((opt = ap_view_next_option(&o, "peek", argc, argv, ":h", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			peek_usage(stdout);
			return AP_EXIT_OK;
		default:
			return ap_view_bad_option("peek", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc - optind < 2)
		return ap_usage_error("peek", "a REGEX and a TRACE are needed");
	if (o.by_process)
		return ap_view_by_process(cmd_peek, argc, argv, optind + 1, &o);
	struct ap_error err;
	struct ap_regex *re = ap_regex_new(argv[optind], "peek", &err);
	if (!re) {
		ap_print_error(&err);
		return AP_EXIT_USAGE;
	}
	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind + 1, (size_t)(argc - optind - 1), &o);
	if (rc) {
		ap_regex_free(re);
		return rc;
	}
	o.report.node_fraction = 0;
	o.report.node_count = 0;
	struct ap_report *r = ap_report_new(v.trace, v.values, v.sym, &o.report, ap_view_progress_fn(),
					    ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	ap_view_warnings(&v);
	if (!r) {
		ap_print_error(&err);
		rc = AP_EXIT_FAIL;
	} else if (!any_match(r, re)) {
		/* pprof's error, and like pprof nothing on stdout */
		ap_say("no matches found for regexp: %s", argv[optind]);
		rc = AP_EXIT_FAIL;
	} else if (o.json) {
		rc = print_json(r, v.trace, re);
	} else {
		rc = print_text(r, v.trace, re);
	}
	ap_report_free(r);
	ap_regex_free(re);
	ap_view_release(&v);
	return rc;
}

static void tree_usage(FILE *f)
{
	fputs("usage: allocprof tree [OPTIONS] TRACE...\n\n"
	      "Every node kept (as top keeps them), in top's order, between its callers\n"
	      "and its callees, with what flows through each edge, as pprof -tree\n"
	      "prints them.\n\n"
	      "options:\n"
	      "  -n, --nodecount N    show the top N nodes (default 80, as pprof)\n"
	      "  --nodefraction F     drop nodes whose cum is under F of the total\n"
	      "                       (default 0.005, as pprof)\n"
	      "  --edgefraction F     drop edges under F of the total (default 0.001)\n"
	      "  --functions          one node per function (default)\n"
	      "  --lines              one node per source line\n"
	      "  --files              one node per source file\n" AP_VIEW_OPTIONS_HELP,
	      f);
}

enum { OPT_NODEFRACTION = AP_VOPT_FIRST_OWN, OPT_EDGEFRACTION };

int cmd_tree(int argc, char **argv)
{
	static const struct option longopts[] = {
		AP_VIEW_LONGOPTS,
		AP_VIEW_GRAN_LONGOPTS,
		{ "nodecount", required_argument, NULL, 'n' },
		{ "nodefraction", required_argument, NULL, OPT_NODEFRACTION },
		{ "edgefraction", required_argument, NULL, OPT_EDGEFRACTION },
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts o;
	ap_view_opts_init(&o);
	double nodefraction = 0.005, edgefraction = 0.001;
	long nodecount = 80; /* pprof -tree shows 80 nodes unless told */
	int opt;
	optind = 0;
	while ((opt = ap_view_next_option(&o, "tree", argc, argv, ":hn:", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			tree_usage(stdout);
			return AP_EXIT_OK;
		case 'n':
			if (ap_view_parse_count("tree", "node count", optarg, &nodecount))
				return AP_EXIT_USAGE;
			break;
		case OPT_NODEFRACTION:
			if (ap_view_parse_fraction("tree", "node fraction", optarg, &nodefraction))
				return AP_EXIT_USAGE;
			break;
		case OPT_EDGEFRACTION:
			if (ap_view_parse_fraction("tree", "edge fraction", optarg, &edgefraction))
				return AP_EXIT_USAGE;
			break;
		default:
			return ap_view_bad_option("tree", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc == optind)
		return ap_usage_error("tree", "no trace given");
	if (o.by_process)
		return ap_view_by_process(cmd_tree, argc, argv, optind, &o);
	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o);
	if (rc)
		return rc;
	o.report.node_fraction = nodefraction;
	o.report.edge_fraction = edgefraction;
	o.report.node_count = (size_t)nodecount;
	struct ap_error err;
	struct ap_report *r = ap_report_new(v.trace, v.values, v.sym, &o.report, ap_view_progress_fn(),
					    ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	ap_view_warnings(&v);
	if (!r) {
		ap_print_error(&err);
		rc = AP_EXIT_FAIL;
	} else if (o.json) {
		rc = print_json(r, v.trace, NULL);
	} else {
		rc = print_text(r, v.trace, NULL);
	}
	ap_report_free(r);
	ap_view_release(&v);
	return rc;
}
