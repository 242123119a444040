/* `allocprof top`: pprof's -top table of allocation call sites. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "render.h"
#include "views.h"

enum {
	OPT_CUM = AP_VOPT_FIRST_OWN,
	OPT_NODEFRACTION,
	OPT_EDGEFRACTION,
	OPT_TRIM,
};

/* pprof's default -nodefraction and -edgefraction. */
#define TOP_NODE_FRACTION 0.005
#define TOP_EDGE_FRACTION 0.001

static void top_usage(FILE *f)
{
	fputs("usage: allocprof top [OPTIONS] TRACE...\n\n"
	      "The allocation call sites of TRACE, hottest first, as pprof -top shows\n"
	      "them: flat is what a node allocated itself (it is the call site), cum\n"
	      "what it allocated including its callees. Allocator frames (malloc,\n"
	      "operator new, strdup, ...) are not nodes: the call site is the first\n"
	      "frame below them. Sampled traces show weighted estimates.\n\n"
	      "options:\n"
	      "  -n, --nodecount N    show the top N nodes (default: all, as pprof -top)\n"
	      "  --nodefraction F     drop nodes whose cum is under F of the total\n"
	      "                       (default 0.005, as pprof; 0 keeps every node;\n"
	      "                       with --json every node is kept unless F is given)\n"
	      "  --edgefraction F     leave out of the (inline) marks the callers whose\n"
	      "                       edge is under F of the total (default 0.001, as\n"
	      "                       pprof; with --json every edge counts unless given)\n"
	      "  --trim=false         keep every node and edge (nodefraction, edgefraction\n"
	      "                       and nodecount 0)\n"
	      "  --functions          one node per function (default)\n"
	      "  --lines              one node per source line ('func file:line')\n"
	      "  --files              one node per source file\n"
	      "  --cum                sort by cum instead of flat\n" AP_VIEW_OPTIONS_HELP,
	      f);
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Returns the exit code (ap_view_print_kind's). */
static int print_text(const struct ap_report *r, const struct ap_trace *t,
		      const struct ap_view_opts *o)
{
	enum ap_sample_index si = r->sample_index;
	size_t n = r->nrows;
	char rb[192];
	int unit = ap_view_table_unit(r);

	printf("File: %s\n", basename_of(t->exe));
	printf("Type: %s\n", ap_sample_index_name(si));
	if (ap_view_print_kind(t, si))
		return AP_EXIT_FAIL;
	/* pprof's order of the filters. */
	const char *const fname[] = {"focus", "ignore", "hide", "show"};
	const char *const fval[] = {o->report.focus, o->report.ignore, o->report.hide,
				    o->report.show};
	bool filters = false;
	for (size_t i = 0; i < AP_ARRAY_SIZE(fval); i++) {
		if (!fval[i])
			continue;
		if (!filters)
			printf("Active filters:\n");
		filters = true;
		printf("   %s=%s\n", fname[i], fval[i]);
	}
	ap_render_top_head(r, unit);

	printf("      flat  flat%%   sum%%        cum   cum%%\n");
	double sum = 0;
	struct ap_buf name = AP_BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		sum += r->rows[i].flat;
		ap_render_top_row(r, i, sum, unit, rb, sizeof(rb), &name);
		printf("%s%s\n", rb, name.buf);
	}
	ap_buf_release(&name);
	return AP_EXIT_OK;
}

static double pct(double v, double total)
{
	return total != 0 ? v / total * 100 : 0;
}

static int print_json(const struct ap_report *r, const struct ap_trace *t)
{
	size_t n = r->nrows;
	json_t *rows = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct ap_report_row *row = &r->rows[i];
		json_t *o = json_pack(
		    "{s:o, s:I, s:f, s:I, s:f}", "name", ap_json_text(row->name), "flat",
		    (json_int_t)ap_view_round(row->flat), "flat_pct", pct(row->flat, r->total),
		    "cum", (json_int_t)ap_view_round(row->cum), "cum_pct", pct(row->cum, r->total));
		if (r->granularity != AP_GRAN_FUNCTIONS)
			json_object_set_new(o, "file", ap_json_text(row->file));
		if (r->granularity == AP_GRAN_LINES)
			json_object_set_new(o, "line", json_integer(row->line));
		if (row->inline_mark) /* "(inline)" -> "inline" */
			json_object_set_new(o, "inline",
					    json_stringn(row->inline_mark + 1,
							 strlen(row->inline_mark) - 2));
		json_array_append_new(rows, o);
	}
	json_t *root = ap_view_json_head(t, r->sample_index, r->total);
	json_object_set_new(root, "nodes", json_integer((json_int_t)r->nodes));
	json_object_set_new(root, "dropped", json_integer((json_int_t)r->dropped));
	json_object_set_new(root, "rows", rows);
	if (r->sample_index == AP_SI_PEAK_SPACE || r->sample_index == AP_SI_PEAK_OBJECTS) {
		/* what the table's moment is: the samples' peak, and stats' */
		struct ap_trace_totals tot;
		struct ap_error err;
		if (ap_trace_totals(t, &tot, &err) < 0) {
			json_decref(root);
			ap_print_error(&err);
			return AP_EXIT_FAIL;
		}
		struct ap_view_peak pk =
		    ap_view_peak(t, tot.peak_inuse_space, tot.peak_inuse_space_sd);
		json_object_set_new(root, "peak",
				    json_pack("{s:f, s:f, s:s, s:f, s:f}", "estimate",
					      tot.peak_inuse_space, "estimate_sd",
					      tot.peak_inuse_space_sd, "kind",
					      ap_view_peak_kind_name(pk.kind), "bytes", pk.bytes,
					      "within", pk.within));
	}
	return ap_view_json_print(root);
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
	    AP_VIEW_LONGOPTS,
	    {"nodecount", required_argument, NULL, 'n'},
	    {"nodefraction", required_argument, NULL, OPT_NODEFRACTION},
	    {"edgefraction", required_argument, NULL, OPT_EDGEFRACTION},
	    {"trim", optional_argument, NULL, OPT_TRIM},
	    AP_VIEW_GRAN_LONGOPTS,
	    {"cum", no_argument, NULL, OPT_CUM},
	    {NULL, 0, NULL, 0},
	};
	struct ap_view_opts o;
	long nodecount = 0;
	bool by_cum = false, trim = true;
	int opt;

	ap_view_opts_init(&o);
	o.report.node_fraction = -1; /* not given */
	o.report.edge_fraction = -1;
	optind = 0;
	while ((opt = ap_view_next_option(&o, "top", argc, argv, ":hn:", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			top_usage(stdout);
			return AP_EXIT_OK;
		case 'n':
			if (ap_view_parse_count("top", "node count", optarg, &nodecount))
				return AP_EXIT_USAGE;
			break;
		case OPT_NODEFRACTION:
			if (ap_view_parse_fraction("top", "node fraction", optarg,
						   &o.report.node_fraction))
				return AP_EXIT_USAGE;
			break;
		case OPT_EDGEFRACTION:
			if (ap_view_parse_fraction("top", "edge fraction", optarg,
						   &o.report.edge_fraction))
				return AP_EXIT_USAGE;
			break;
		case OPT_TRIM:
			/* pprof's boolean flag: -trim, -trim=true, -trim=false */
			if (!optarg || !strcmp(optarg, "true") || !strcmp(optarg, "1"))
				trim = true;
			else if (!strcmp(optarg, "false") || !strcmp(optarg, "0"))
				trim = false;
			else
				return ap_usage_error("top", "bad --trim value '%s', not true or false",
						      optarg);
			break;
		case OPT_CUM:
			by_cum = true;
			break;
		default:
			return ap_view_bad_option("top", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	/* The table is for reading and drops what pprof -top drops; JSON is
	 * for scripts and has every node unless asked otherwise. */
	if (o.report.node_fraction < 0)
		o.report.node_fraction = o.json ? 0 : TOP_NODE_FRACTION;
	if (o.report.edge_fraction < 0)
		o.report.edge_fraction = o.json ? 0 : TOP_EDGE_FRACTION;
	if (!trim) {
		o.report.node_fraction = 0;
		o.report.edge_fraction = 0;
		nodecount = 0;
	}
	o.report.node_count = (size_t)nodecount;
	o.report.cum_sort = by_cum;
	if (argc == optind)
		return ap_usage_error("top", "no trace given");
	if (o.by_process)
		return ap_view_by_process(cmd_top, argc, argv, optind, &o);

	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o);
	if (rc)
		return rc;
	struct ap_error err;
	struct ap_report *r =
	    ap_report_new(v.trace, v.values, v.sym, &o.report, ap_view_progress_fn(),
			  ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	ap_view_warnings(&v);
	if (ap_view_sampling_hint(v.trace) ||
	    ap_view_inuse_objects_note(v.trace, o.report.sample_index)) {
		ap_report_free(r);
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	if (r)
		ap_view_symbols_hint(&v, o.report.sample_index);
	if (!r) {
		ap_print_error(&err);
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	if (o.json)
		rc = print_json(r, v.trace);
	else
		rc = print_text(r, v.trace, &o);
	ap_report_free(r);
	ap_view_release(&v);
	return rc;
}
