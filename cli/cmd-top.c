/* `allocprof top`: pprof's -top table of allocation call sites. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "views.h"

enum {
	OPT_FUNCTIONS = AP_VOPT_FIRST_OWN,
	OPT_LINES,
	OPT_FILES,
	OPT_CUM,
};

static void top_usage(FILE *f)
{
	fputs("usage: allocprof top [OPTIONS] TRACE\n\n"
	      "The allocation call sites of TRACE, hottest first, as pprof -top shows\n"
	      "them: flat is what a node allocated itself (it is the call site), cum\n"
	      "what it allocated including its callees. Allocator frames (malloc,\n"
	      "operator new, strdup, ...) are not nodes: the call site is the first\n"
	      "frame below them. Sampled traces show weighted estimates.\n\n"
	      "options:\n"
	      "  -n, --nodecount N    show the top N nodes (default: all, as pprof -top)\n"
	      "  --functions          one node per function (default)\n"
	      "  --lines              one node per source line ('func file:line')\n"
	      "  --files              one node per source file\n"
	      "  --cum                sort by cum instead of flat\n" AP_VIEW_OPTIONS_HELP,
	      f);
}

static const char *rate_text(const struct ap_trace *t, char *buf, size_t len)
{
	if (t->rate <= 1)
		return "every allocation";
	char b[32];
	ap_view_format(b, sizeof(b), AP_SI_ALLOC_SPACE, (double)t->rate);
	snprintf(buf, len, "one sample per %s allocated on average (values are estimates)", b);
	return buf;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static size_t shown_rows(const struct ap_report *r, long nodecount)
{
	return nodecount > 0 && (size_t)nodecount < r->nrows ? (size_t)nodecount : r->nrows;
}

static void print_text(const struct ap_report *r, const struct ap_trace *t,
		       const struct ap_view_opts *o, long nodecount)
{
	enum ap_sample_index si = r->sample_index;
	size_t n = shown_rows(r, nodecount);
	char rb[128], a[32], b[32], c[32], d[32], e[32];

	printf("File: %s\n", basename_of(t->exe));
	printf("Type: %s\n", ap_sample_index_name(si));
	printf("Sampling: %s\n", rate_text(t, rb, sizeof(rb)));
	if (o->report.focus || o->report.ignore) {
		printf("Active filters:\n");
		if (o->report.focus)
			printf("   focus=%s\n", o->report.focus);
		if (o->report.ignore)
			printf("   ignore=%s\n", o->report.ignore);
	}
	double shown = 0;
	for (size_t i = 0; i < n; i++)
		shown += r->rows[i].flat;
	ap_view_format(a, sizeof(a), si, shown);
	ap_view_percent(b, sizeof(b), shown, r->total);
	ap_view_format(c, sizeof(c), si, r->total);
	printf("Showing nodes accounting for %s, %s of %s total\n", a, b + strspn(b, " "), c);
	if (n < r->nrows)
		printf("Showing top %zu nodes out of %zu\n", n, r->nrows);

	printf("      flat  flat%%   sum%%        cum   cum%%\n");
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ap_report_row *row = &r->rows[i];
		sum += row->flat;
		ap_view_format(a, sizeof(a), si, row->flat);
		ap_view_percent(b, sizeof(b), row->flat, r->total);
		ap_view_percent(c, sizeof(c), sum, r->total);
		ap_view_format(d, sizeof(d), si, row->cum);
		ap_view_percent(e, sizeof(e), row->cum, r->total);
		printf("%10s %s %s %10s %s  %s\n", a, b, c, d, e, row->name);
	}
}

static double pct(double v, double total)
{
	return total != 0 ? v / total * 100 : 0;
}

static int print_json(const struct ap_report *r, const struct ap_trace *t, long nodecount)
{
	size_t n = shown_rows(r, nodecount);
	json_t *rows = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct ap_report_row *row = &r->rows[i];
		json_t *o = json_pack(
		    "{s:s, s:I, s:f, s:I, s:f}", "name", row->name, "flat",
		    (json_int_t)ap_view_round(row->flat), "flat_pct", pct(row->flat, r->total),
		    "cum", (json_int_t)ap_view_round(row->cum), "cum_pct", pct(row->cum, r->total));
		if (r->granularity != AP_GRAN_FUNCTIONS)
			json_object_set_new(o, "file",
					    row->file ? json_string(row->file) : json_null());
		if (r->granularity == AP_GRAN_LINES)
			json_object_set_new(o, "line", json_integer(row->line));
		json_array_append_new(rows, o);
	}
	json_t *root = ap_view_json_head(t, r->sample_index, r->total);
	json_object_set_new(root, "nodes", json_integer((json_int_t)r->nrows));
	json_object_set_new(root, "rows", rows);
	return ap_view_json_print(root);
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
	    AP_VIEW_LONGOPTS,
	    {"nodecount", required_argument, NULL, 'n'},
	    {"functions", no_argument, NULL, OPT_FUNCTIONS},
	    {"lines", no_argument, NULL, OPT_LINES},
	    {"files", no_argument, NULL, OPT_FILES},
	    {"cum", no_argument, NULL, OPT_CUM},
	    {NULL, 0, NULL, 0},
	};
	struct ap_view_opts o;
	long nodecount = 0;
	bool by_cum = false;
	int opt;

	ap_view_opts_init(&o);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hn:", longopts, NULL)) != -1) {
		if (ap_view_option(&o, opt, optarg))
			continue;
		switch (opt) {
		case 'h':
			top_usage(stdout);
			return AP_EXIT_OK;
		case 'n': {
			char *end;
			nodecount = strtol(optarg, &end, 10);
			if (*end || end == optarg || nodecount < 0)
				return ap_usage_error("top", "bad node count '%s'", optarg);
			break;
		}
		case OPT_FUNCTIONS:
			o.report.granularity = AP_GRAN_FUNCTIONS;
			break;
		case OPT_LINES:
			o.report.granularity = AP_GRAN_LINES;
			break;
		case OPT_FILES:
			o.report.granularity = AP_GRAN_FILES;
			break;
		case OPT_CUM:
			by_cum = true;
			break;
		default:
			return ap_view_bad_option("top", opt, argv);
		}
	}
	if (argc - optind != 1)
		return ap_usage_error("top",
				      argc == optind ? "no trace given" : "too many arguments");

	struct ap_view v;
	int rc = ap_view_load(&v, argv[optind], &o);
	if (rc)
		return rc;
	struct ap_error err;
	struct ap_report *r =
	    ap_report_new(v.trace, v.values, v.sym, &o.report, ap_view_progress_fn(),
			  ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	ap_view_warnings(&v);
	if (!r) {
		ap_print_error(&err);
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	if (by_cum)
		ap_report_sort(r, true);
	if (o.json)
		rc = print_json(r, v.trace, nodecount);
	else
		print_text(r, v.trace, &o, nodecount);
	ap_report_free(r);
	ap_view_release(&v);
	return rc;
}
