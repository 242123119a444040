/* `allocprof timeline`: in-use bytes over time, the whole program and its
 * top call sites (by what they held at the peak), as a terminal chart (as
 * ms_print draws massif's), CSV, JSON or a standalone SVG; a consumer of
 * the replay (trace/ap_replay.h). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "render.h"
#include "timeline.h"
#include "views.h"

enum {
	OPT_FORMAT = AP_VOPT_FIRST_OWN,
	OPT_BUCKETS,
	OPT_SITES,
	OPT_TIME_UNIT,
	OPT_TEXT,
	OPT_CSV,
	OPT_JSON,
	OPT_SVG,
};

enum fmt { FMT_TEXT, FMT_CSV, FMT_JSON, FMT_SVG };

static void timeline_usage(FILE *f)
{
	fputs("usage: allocprof timeline [OPTIONS] TRACE...\n\n"
	      "In-use bytes over the run: for each of N equal stretches of time the\n"
	      "highest in-use bytes reached in it (so the chart's top is the peak\n"
	      "`stats` reports), split into the top call sites (by what they held at\n"
	      "the peak) and the rest. Estimates in a sampled trace, whose header\n"
	      "also gives the peak the sampler counted (as `stats` prints it).\n\n"
	      "options:\n"
	      "  --format FMT         text (default: a chart for the terminal), csv,\n"
	      "                       json or svg (a standalone picture)\n"
	      "  --text, --csv, --json, --svg\n"
	      "                       the same as --format with that format\n"
	      "  -o, --output PATH    write there instead of standard output (svg on a\n"
	      "                       terminal: a new timeline001.svg, 002, ... in the\n"
	      "                       current directory, as pprof -svg does)\n"
	      "  --buckets N          stretches of time (default 60 for text, 200 else)\n"
	      "  --sites N            call sites shown on their own (default 5)\n"
	      "  --time-unit UNIT     the x axis: s (seconds, default) or B (bytes\n"
	      "                       allocated and freed, massif's --time-unit=B clock:\n"
	      "                       each block as massif counts it, rounded up to 16\n"
	      "                       bytes with 8 of heap admin; a realloc by how much\n"
	      "                       it grew, in place not at all; a short run's events\n"
	      "                       share a few clock ticks)\n"
	      AP_VIEW_SYM_HELP
	      AP_VIEW_RUN_HELP
	      "  -h, --help           show this help\n"
	      AP_VIEW_RUN_TEXT,
	      f);
}

static void put_csv(FILE *f, const struct ap_timeline *T, char *const *names)
{
	fprintf(f, "%s,total", T->by_bytes ? "bytes_allocated_and_freed" : "time_s");
	for (size_t s = 0; s < T->nsites; s++) {
		fputs(",\"", f);
		for (const char *c = names[s]; *c; c++)
			fprintf(f, *c == '"' ? "\"\"" : "%c", *c);
		fputc('"', f);
	}
	fprintf(f, ",other\n");
	for (size_t b = 0; b < T->nbuckets; b++) {
		if (T->by_bytes)
			fprintf(f, "%.0f,%.0f", ap_timeline_bucket_x(T, b), T->max[b]);
		else
			fprintf(f, "%.6f,%.0f", ap_timeline_bucket_x(T, b), T->max[b]);
		for (size_t s = 0; s <= T->nsites; s++)
			fprintf(f, ",%.0f", T->at_max[b * (T->nsites + 1) + s]);
		fputc('\n', f);
	}
}

static int put_json(FILE *f, const struct ap_timeline *T, char *const *names)
{
	json_t *root = json_object(), *sites = json_array(), *rows = json_array();
	json_object_set_new(root, "program", ap_json_text(T->t->exe));
	json_object_set_new(root, "rate", json_integer((json_int_t)T->t->rate));
	json_object_set_new(root, "duration_ns", json_integer((json_int_t)T->span));
	json_object_set_new(root, "peak_bytes", json_real(T->peak));
	json_object_set_new(root, "peak_bytes_sd", json_real(T->peak_sd));
	/* the chart's peak is of its samples; what stats prints beside it */
	struct ap_view_peak pk = ap_view_peak(T->t, T->peak, 0);
	json_object_set_new(root, "peak_kind", json_string(ap_view_peak_kind_name(pk.kind)));
	json_object_set_new(root, "peak_counted_bytes",
			    pk.kind == AP_PEAK_COUNTED ? json_real(pk.bytes) : json_null());
	json_object_set_new(root, "peak_counted_within",
			    pk.kind == AP_PEAK_COUNTED ? json_real(pk.within) : json_null());
	const char *xkey = T->by_bytes ? "bytes_allocated_and_freed" : "time_s";
	json_object_set_new(root, "x_unit", json_string(T->by_bytes ? "B" : "s"));
	json_object_set_new(root, T->by_bytes ? "peak_bytes_allocated_and_freed" : "peak_time_s",
			    json_real(T->peak_x));
	for (size_t s = 0; s < T->nsites; s++)
		json_array_append_new(sites, ap_json_text(names[s]));
	json_object_set_new(root, "sites", sites);
	for (size_t b = 0; b < T->nbuckets; b++) {
		json_t *r = json_object(), *split = json_array();
		json_object_set_new(r, xkey, json_real(ap_timeline_bucket_x(T, b)));
		json_object_set_new(r, "total", json_real(T->max[b]));
		for (size_t s = 0; s <= T->nsites; s++)
			json_array_append_new(split, json_real(T->at_max[b * (T->nsites + 1) + s]));
		json_object_set_new(r, "sites", split);
		json_array_append_new(rows, r);
	}
	json_object_set_new(root, "buckets", rows);
	int rc = json_dumpf(root, f, AP_JSON_FLAGS) < 0 ? -1 : 0;
	fputc('\n', f);
	json_decref(root);
	return rc;
}

/* The chart, under the program's name. */
static void put_text(FILE *f, const struct ap_timeline *T)
{
	const char *exe = strrchr(T->t->exe, '/');
	fprintf(f, "File: %s\n", exe ? exe + 1 : T->t->exe);
	ap_render_timeline(T, 16, ap_render_print, f);
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
}

/* A stacked area chart, one polygon per band, a legend, the peak marked. */
static void put_svg(FILE *f, const struct ap_timeline *T, char *const *names)
{
	static const char *const colour[] = { "#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
					      "#59a14f", "#edc948", "#b07aa1", "#9c755f" };
	const double W = 800, H = 300, X0 = 70, Y0 = 20;
	char b1[32];
	size_t nb = T->nbuckets, legend = T->nsites + 1;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		   "width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		X0 + W + 20, Y0 + H + 50 + 18.0 * (double)legend);
	fprintf(f, "<title>allocprof timeline: ");
	xml_text(f, T->t->exe);
	fprintf(f, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	double top = T->peak > 0 ? T->peak : 1;
	double *base = calloc(nb, sizeof(double));
	for (size_t s = 0; s <= T->nsites && base; s++) {
		fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.85\" points=\"",
			s < T->nsites ? colour[s % 8] : "#bab0ac");
		for (size_t b = 0; b < nb; b++) {
			double v = base[b] + T->at_max[b * (T->nsites + 1) + s];
			fprintf(f, "%.1f,%.1f ", X0 + W * (double)b / (double)nb, Y0 + H - H * v / top);
			fprintf(f, "%.1f,%.1f ", X0 + W * (double)(b + 1) / (double)nb, Y0 + H - H * v / top);
		}
		for (size_t b = nb; b-- > 0;) {
			fprintf(f, "%.1f,%.1f ", X0 + W * (double)(b + 1) / (double)nb, Y0 + H - H * base[b] / top);
			fprintf(f, "%.1f,%.1f ", X0 + W * (double)b / (double)nb, Y0 + H - H * base[b] / top);
		}
		fprintf(f, "\"/>\n");
		for (size_t b = 0; b < nb; b++)
			base[b] += T->at_max[b * (T->nsites + 1) + s];
	}
	free(base);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", X0, Y0 + H,
		X0 + W, Y0 + H);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", X0, Y0, X0,
		Y0 + H);
	ap_format_bytes(b1, sizeof(b1), T->peak);
	char sd[64] = "";
	if (T->t->rate > 1) {
		char b3[32];
		ap_format_bytes(b3, sizeof(b3), T->peak_sd);
		snprintf(sd, sizeof(sd), " ± %s (estimate from samples)", b3);
	}
	double px = X0 + W * ((double)T->peak_bucket + 0.5) / (double)nb;
	fprintf(f,
		"<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\" "
		"stroke-dasharray=\"4,3\"/>\n<text x=\"%.1f\" y=\"%.0f\" "
		"text-anchor=\"middle\">peak %s%s</text>\n",
		px, Y0, px, Y0 + H, px, Y0 - 5, b1, sd);
	struct ap_view_peak pk = ap_view_peak(T->t, T->peak, 0);
	if (pk.kind == AP_PEAK_COUNTED) {
		char b2[32], says[160];
		ap_format_bytes(b2, sizeof(b2), pk.bytes);
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">the peak counted: %s (%s)</text>\n", X0,
			Y0 - 22, b2, ap_view_peak_says(&pk, says, sizeof(says)));
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", X0 - 5, Y0 + 10, b1);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n", X0 - 5, Y0 + H);
	char xl[32];
	ap_timeline_format_x(xl, sizeof(xl), T, T->xspan);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s%s</text>\n", X0 + W,
		Y0 + H + 16, xl, T->by_bytes ? " allocated and freed" : "");
	for (size_t s = 0; s <= T->nsites; s++) {
		double y = Y0 + H + 40 + 18.0 * (double)s;
		fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n<text x=\"%.0f\" "
			   "y=\"%.0f\">", X0, y - 10, s < T->nsites ? colour[s % 8] : "#bab0ac", X0 + 18, y);
		xml_text(f, s < T->nsites ? names[s] : "(other sites)");
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</svg>\n");
}

int cmd_timeline(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "text", no_argument, NULL, OPT_TEXT },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "svg", no_argument, NULL, OPT_SVG },
		{ "output", required_argument, NULL, 'o' },
		{ "buckets", required_argument, NULL, OPT_BUCKETS },
		{ "sites", required_argument, NULL, OPT_SITES },
		{ "time-unit", required_argument, NULL, OPT_TIME_UNIT },
		{ "time_unit", required_argument, NULL, OPT_TIME_UNIT },
		AP_VIEW_SYM_LONGOPTS,
		AP_VIEW_RUN_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts o;
	ap_view_opts_init(&o);
	enum fmt fmt = FMT_TEXT;
	const char *out = NULL;
	long nbuckets = 0, nsites = 5;
	bool by_bytes = false;
	int opt;
	optind = 0;
	while ((opt = ap_view_next_option(&o, "timeline", argc, argv, ":ho:", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			timeline_usage(stdout);
			return AP_EXIT_OK;
		case 'o':
			out = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text"))
				fmt = FMT_TEXT;
			else if (!strcmp(optarg, "csv"))
				fmt = FMT_CSV;
			else if (!strcmp(optarg, "json"))
				fmt = FMT_JSON;
			else if (!strcmp(optarg, "svg"))
				fmt = FMT_SVG;
			else
				return ap_usage_error("timeline", "--format wants text, csv, json or svg, not '%s'",
						      optarg);
			break;
		/* --json and the others, as top's --json and pprof's -svg */
		case OPT_TEXT:
			fmt = FMT_TEXT;
			break;
		case OPT_CSV:
			fmt = FMT_CSV;
			break;
		case OPT_JSON:
			fmt = FMT_JSON;
			break;
		case OPT_SVG:
			fmt = FMT_SVG;
			break;
		case OPT_BUCKETS:
			if (ap_view_parse_count("timeline", "bucket count", optarg, &nbuckets))
				return AP_EXIT_USAGE;
			if (nbuckets < 1 || nbuckets > 100000)
				return ap_usage_error("timeline", "--buckets wants 1 to 100000, not '%s'", optarg);
			break;
		case OPT_TIME_UNIT:
			if (!strcmp(optarg, "B"))
				by_bytes = true;
			else if (!strcmp(optarg, "s") || !strcmp(optarg, "ms"))
				by_bytes = false;
			else
				return ap_usage_error("timeline", "--time-unit wants s (time) or B "
						      "(bytes allocated), not '%s'", optarg);
			break;
		case OPT_SITES:
			if (ap_view_parse_count("timeline", "site count", optarg, &nsites))
				return AP_EXIT_USAGE;
			if (nsites > 32)
				return ap_usage_error("timeline", "--sites wants 0 to 32, not '%s'", optarg);
			break;
		default:
			return ap_view_bad_option("timeline", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc == optind)
		return ap_usage_error("timeline", "no trace given");
	if (o.by_process)
		return ap_view_by_process(cmd_timeline, argc, argv, optind, &o);
	if (!nbuckets)
		nbuckets = fmt == FMT_TEXT ? 60 : 200;

	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o);
	if (rc)
		return rc;
	ap_view_warnings(&v);
	struct ap_timeline_sites sites;
	ap_timeline_sites_init(&sites, &v, (size_t)nsites);
	struct ap_timeline T;
	struct ap_error err;
	if (ap_timeline_init(&T, v.trace, &sites, (size_t)nbuckets, by_bytes, &err) < 0) {
		ap_print_error(&err);
		ap_timeline_release(&T);
		ap_timeline_sites_release(&sites);
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	char *const *names = sites.names;

	FILE *f = stdout;
	/* a picture is not for the terminal: into timeline001.svg, as pprof -svg */
	struct ap_buf name = AP_BUF_INIT;
	if (fmt == FMT_SVG &&
	    !(out = ap_output_away_from_tty(out ? out : "-", "timeline", "svg", &name))) {
		rc = AP_EXIT_FAIL;
	} else if (out && strcmp(out, "-") && !(f = fopen(out, "w"))) {
		ap_say("%s: cannot write: %s", out, strerror(errno));
		rc = AP_EXIT_FAIL;
	} else {
		if (fmt == FMT_CSV)
			put_csv(f, &T, names);
		else if (fmt == FMT_JSON)
			rc = put_json(f, &T, names) ? AP_EXIT_FAIL : AP_EXIT_OK;
		else if (fmt == FMT_SVG)
			put_svg(f, &T, names);
		else
			put_text(f, &T);
		if (f != stdout && fclose(f)) {
			ap_say("%s: cannot write: %s", out, strerror(errno));
			rc = AP_EXIT_FAIL;
		} else if (f != stdout) {
			ap_say("wrote %s", out);
		}
	}
	ap_buf_release(&name);
	ap_timeline_release(&T);
	ap_timeline_sites_release(&sites);
	ap_view_release(&v);
	return rc;
}
