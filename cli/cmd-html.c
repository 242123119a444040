/* `allocprof html`: one self-contained page (no network, its script and
 * style inline: cli/html.js, cli/html.css) with the views of a trace
 * together: the top table, the flame graph with its callers view, the
 * timeline with a range to pick, the advisor's sites and, against a
 * base trace, the diff. The numbers come from the models the commands
 * use (report/, timeline.c, advise, diff); the page only sums what is
 * exported here per stack and per stretch of time. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ap_advise.h"
#include "ap_export.h"
#include "ap_flame.h"
#include "ap_hash.h"
#include "commands.h"
#include "html-css.h"
#include "html-js.h"
#include "timeline.h"
#include "views.h"

enum {
	OPT_OPEN = AP_VOPT_FIRST_OWN,
	OPT_DIFF_BASE,
	OPT_NO_ADVISE,
	OPT_BUCKETS,
	OPT_SITES,
	OPT_TIME_UNIT,
};

static void html_usage(FILE *f)
{
	fputs("usage: allocprof html [OPTIONS] TRACE...\n\n"
	      "One self-contained HTML page of TRACE for a browser (it fetches nothing:\n"
	      "its script and style are inside), holding the views together:\n"
	      "  - the top table (functions, lines or files; sortable by any column),\n"
	      "  - the flame graph: click to zoom, search by regex, a callers and callees\n"
	      "    (sandwich) view of a chosen function,\n"
	      "  - the timeline of in-use bytes with real axes, the top call sites\n"
	      "    stacked, their values under the pointer; drag across it to pick a\n"
	      "    stretch of the run (a click picks one stretch): the table and the\n"
	      "    flame graph then show what was allocated in it (alloc_*) or what was\n"
	      "    live at its end (inuse_*),\n"
	      "  - the advisor's sites, verdicts and reasons (as advise --no-measure:\n"
	      "    the cost model's times; run advise for measured ones),\n"
	      "  - with --diff-base, what changed from BASE to TRACE (as allocprof diff).\n"
	      "Every sample index is in the page; the one given is shown first.\n\n"
	      "options:\n"
	      "  -o, --output PATH    write the page there (default: a new report001.html,\n"
	      "                       002, ... in the current directory; '-' for standard\n"
	      "                       output when that is not a terminal)\n"
	      "  --open               open the page with xdg-open, when there is one\n"
	      "  --diff-base BASE     add the diff from trace BASE to TRACE (as pprof's\n"
	      "                       diff_base, spelled so too)\n"
	      "  --no-advise          leave the advisor's section out\n"
	      "  --buckets N          stretches of time of the timeline (default 200)\n"
	      "  --sites N            call sites the timeline stacks (default 5)\n"
	      "  --time-unit UNIT     the timeline's x axis: s (default) or B (bytes\n"
	      "                       allocated and freed, as timeline --time-unit=B)\n"
	      "  --functions          the table by function first (default)\n"
	      "  --lines              the table by source line first\n"
	      "  --files              the table by source file first\n"
	      AP_VIEW_OPTIONS_HELP
	      "Search takes the regexes of --focus (PCRE2, as RE2 writes them) in the\n"
	      "browser's dialect: leading flags such as (?i) or (?is) become the\n"
	      "regex's flags; what the browser cannot read is reported on the page.\n",
	      f);
}

/* ---- JSON written straight into the page --------------------------------- */

/* A number as short as it can be: integers whole, others to 12
 * significant digits (the page sums them and rounds the sums). */
static void add_num(struct ap_buf *b, double v)
{
	if (v == 0)
		ap_buf_addstr(b, "0");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		ap_buf_addf(b, "%.0f", v);
	else
		ap_buf_addf(b, "%.12g", v);
}

/* A JSON value for the page's <script> block: every '<' as \u003c (it is
 * only ever in a string), so that no name can end the block ("</script")
 * or open a comment the HTML parser reads ("<!--"). */
static void add_json(struct ap_buf *b, json_t *j)
{
	char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
	for (const char *p = s ? s : "null"; *p; p++)
		if (*p == '<')
			ap_buf_addstr(b, "\\u003c");
		else
			ap_buf_add(b, p, 1);
	free(s);
	json_decref(j);
}

static void add_str(struct ap_buf *b, const char *s)
{
	add_json(b, ap_json_text(s));
}

/* ---- per stretch of time and stack: what the page sums for a range ---- */

struct cell {
	uint32_t bucket, stack; /* stack: index in the export model */
	double v[4];		/* allocated objects, bytes; live change objects, bytes */
};

struct cells {
	struct cell *c;
	size_t n, alloc;
	const uint32_t *index_of; /* trace stack id -> export index */
	uint32_t *last;		  /* per export stack: its last cell + 1 */
};

static void cell_add(struct cells *C, size_t bucket, uint32_t stack, int k, double o, double s)
{
	uint32_t x = C->index_of[stack];
	if (x == UINT32_MAX)
		return;
	uint32_t i = C->last[x];
	if (!i || C->c[i - 1].bucket != bucket) {
		AP_ALLOC_GROW(C->c, C->n + 1, C->alloc);
		C->c[C->n] = (struct cell){.bucket = (uint32_t)bucket, .stack = x};
		C->last[x] = i = (uint32_t)++C->n;
	}
	C->c[i - 1].v[k] += o;
	C->c[i - 1].v[k + 1] += s;
}

static void cells_alloc(void *ctx, size_t bucket, uint32_t stack, double objects, double bytes)
{
	cell_add(ctx, bucket, stack, 0, objects, bytes);
}

static void cells_live(void *ctx, size_t bucket, uint32_t stack, double objects, double bytes)
{
	cell_add(ctx, bucket, stack, 2, objects, bytes);
}

static int cell_cmp(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* ---- the sections' data -------------------------------------------------- */

struct page {
	struct ap_view *v;
	const struct ap_view_opts *o;
	struct ap_export *x;
	struct ap_flame *flame;
	struct ap_report_paths *paths[3];
	struct ap_timeline T;
	struct cells cells;
	json_t *advise;		  /* or NULL */
	const char *advise_why;	  /* why not, when NULL */
	json_t *diff;		  /* or NULL */
	const char *base, *trace; /* the traces' names, for the diff */
	struct ap_trace_totals tot;
	/* what the CLI says of an index's numbers (its notes, its Peak:
	 * line); empty when nothing */
	char notes[AP_SI_COUNT][400];
};

/* The totals and the notes, before the page is written: each may have
 * to replay the trace, which may fail. Returns 0, or -1 with err set. */
static int page_notes(struct page *P, struct ap_error *err)
{
	const struct ap_trace *t = P->v->trace;
	if (ap_trace_totals(t, &P->tot, err) < 0)
		return -1;
	for (int i = 0; i < AP_SI_COUNT; i++) {
		enum ap_sample_index si = (enum ap_sample_index)i;
		char *n = P->notes[i];
		int said = 0;
		if (si == AP_SI_TEMPORARY)
			said = snprintf(n, sizeof(P->notes[i]), "%s", AP_VIEW_TEMPORARY_SAYS) > 0;
		else if (si == AP_SI_INUSE_OBJECTS)
			said = ap_view_inuse_objects_says(t, n, sizeof(P->notes[i]), err);
		else
			said = ap_view_peak_estimate_says(t, si, n, sizeof(P->notes[i]), err);
		if (said < 0)
			return -1;
		if (!said)
			n[0] = 0;
	}
	return 0;
}

static void put_meta(struct ap_buf *b, const struct page *P)
{
	const struct ap_trace *t = P->v->trace;
	ap_buf_addstr(b, "\"program\":");
	add_str(b, t->exe);
	ap_buf_addstr(b, ",\"cmdline\":");
	/* the program's arguments, on one line as the text views show them */
	struct ap_buf args = AP_BUF_INIT, cl = AP_BUF_INIT;
	for (size_t i = 0; i < t->argc; i++)
		ap_buf_addf(&args, "%s%s", i ? " " : "", t->argv[i]);
	if (t->argc)
		ap_view_add_cmdline(&cl, args.buf);
	add_str(b, t->argc ? cl.buf : NULL);
	ap_buf_release(&args);
	ap_buf_release(&cl);
	/* a truncated trace's page says so, as stats and the views' stderr
	 * do: the page outlives the command's warning */
	ap_buf_addstr(b, ",\"truncated\":");
	add_str(b, t->truncated ? t->truncated_why : NULL);
	ap_buf_addf(b, ",\"rate\":%llu,\"sample_index\":\"%s\"", (unsigned long long)t->rate,
		    ap_sample_index_name(P->o->report.sample_index));
	ap_buf_addf(b, ",\"granularity\":\"%s\"",
		    (const char *const[]){"functions", "lines", "files"}[P->o->report.granularity]);
	ap_buf_addstr(b, ",\"indexes\":[");
	for (int i = 0; i < AP_SI_COUNT; i++) {
		enum ap_sample_index si = (enum ap_sample_index)i;
		ap_buf_addf(b, "%s{\"name\":\"%s\",\"bytes\":%s,\"total\":", i ? "," : "",
			    ap_sample_index_name(si),
			    ap_sample_index_is_bytes(si) ? "true" : "false");
		add_num(b, P->x->total[i]);
		ap_buf_addstr(b, "}");
	}
	ap_buf_addstr(b, "]");
	/* the peak as stats prints it, and what kind of number it is */
	const struct ap_trace_totals *tot = &P->tot;
	struct ap_view_peak pk = ap_view_peak(t, tot->peak_inuse_space, tot->peak_inuse_space_sd);
	char says[400];
	ap_buf_addf(b, ",\"peak\":{\"bytes\":");
	add_num(b, pk.bytes);
	ap_buf_addf(b, ",\"kind\":\"%s\",\"within\":", ap_view_peak_kind_name(pk.kind));
	add_num(b, pk.within);
	ap_buf_addstr(b, ",\"says\":");
	add_str(b, ap_view_peak_says(&pk, says, sizeof(says)));
	ap_buf_addstr(b, ",\"estimate\":");
	add_num(b, tot->peak_inuse_space);
	ap_buf_addstr(b, ",\"estimate_sd\":");
	add_num(b, tot->peak_inuse_space_sd);
	ap_buf_addstr(b, "}");
	ap_buf_addstr(b, ",\"notes\":{");
	bool first = true;
	for (int i = 0; i < AP_SI_COUNT; i++) {
		const char *n = P->notes[i];
		if (!n[0])
			continue;
		ap_buf_addf(b, "%s\"%s\":", first ? "" : ",",
			    ap_sample_index_name((enum ap_sample_index)i));
		add_str(b, n);
		first = false;
	}
	ap_buf_addstr(b, "}");
	const struct ap_report_options *ro = &P->o->report;
	ap_buf_addstr(b, ",\"filters\":{");
	const char *const fname[] = {"focus", "ignore", "show", "hide"};
	const char *const fval[] = {ro->focus, ro->ignore, ro->show, ro->hide};
	first = true;
	for (size_t i = 0; i < AP_ARRAY_SIZE(fval); i++)
		if (fval[i]) {
			ap_buf_addf(b, "%s\"%s\":", first ? "" : ",", fname[i]);
			add_str(b, fval[i]);
			first = false;
		}
	ap_buf_addstr(b, "}");
}

/* Per stack of the export model: its values of the seven indexes. */
static void put_stacks(struct ap_buf *b, const struct page *P)
{
	ap_buf_addstr(b, ",\"stacks\":[");
	for (size_t i = 0; i < P->x->nstacks; i++)
		for (int k = 0; k < AP_SI_COUNT; k++) {
			if (i || k)
				ap_buf_addstr(b, ",");
			add_num(b, P->x->stacks[i].v[k]);
		}
	ap_buf_addstr(b, "]");
}

/* Per granularity: the nodes' names, and per export stack its flat node
 * (-1: none) and the nodes of its cum. */
static void put_nodes(struct ap_buf *b, const struct page *P)
{
	static const char *const gname[] = {"functions", "lines", "files"};
	ap_buf_addstr(b, ",\"tables\":{");
	for (int g = 0; g < 3; g++) {
		const struct ap_report_paths *p = P->paths[g];
		ap_buf_addf(b, "%s\"%s\":{\"names\":[", g ? "," : "", gname[g]);
		for (size_t i = 0; i < p->nnames; i++) {
			if (i)
				ap_buf_addstr(b, ",");
			add_str(b, p->names[i]);
		}
		ap_buf_addstr(b, "],\"paths\":[");
		for (size_t i = 0; i < P->x->nstacks; i++) {
			uint32_t id = P->x->stacks[i].id;
			ap_buf_addf(b, "%s[", i ? "," : "");
			if (p->flat[id] == UINT32_MAX)
				ap_buf_addstr(b, "-1");
			else
				ap_buf_addf(b, "%u", p->flat[id]);
			for (uint32_t k = 0; k < p->len[id]; k++)
				ap_buf_addf(b, ",%u", p->nodes[p->off[id] + k]);
			ap_buf_addstr(b, "]");
		}
		ap_buf_addstr(b, "]}");
	}
	ap_buf_addstr(b, "}");
}

static bool name_is(const void *ctx, uint32_t i, const void *key)
{
	return !strcmp(((const char *const *)ctx)[i], key);
}

/* The tree of every path: names (a table of distinct ones), parents,
 * flags; per export stack its leaf (-1: none). */
static void put_flame(struct ap_buf *b, const struct page *P)
{
	const struct ap_flame *f = P->flame;
	ap_buf_addstr(b, ",\"flame\":{\"names\":[");
	/* nodes share names: one table, by first use */
	const char **names = ap_xcalloc(f->n, sizeof(*names));
	uint32_t *name_of = ap_xcalloc(f->n, sizeof(*name_of));
	size_t nn = 0;
	struct ap_index idx = {0};
	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->nodes[i].func;
		bool added;
		uint32_t k = ap_index_add(&idx, ap_hash_bytes(s, strlen(s)), name_is, names, s,
					  (uint32_t)nn, &added);
		name_of[i] = k;
		if (added) {
			names[nn] = s;
			ap_buf_addstr(b, nn ? "," : "");
			add_str(b, s);
			nn++;
		}
	}
	ap_buf_addstr(b, "],\"nodes\":[");
	for (size_t i = 0; i < f->n; i++) {
		const struct ap_flame_node *nd = &f->nodes[i];
		ap_buf_addf(b, "%s%u,%d,%d", i ? "," : "", name_of[i],
			    nd->parent == UINT32_MAX ? -1 : (int)nd->parent,
			    (nd->inlined ? 1 : 0) | (nd->unsymbolized ? 2 : 0));
	}
	ap_buf_addstr(b, "],\"leaf\":[");
	for (size_t i = 0; i < P->x->nstacks; i++)
		ap_buf_addf(b, "%s%d", i ? "," : "",
			    f->leaf_of[i] == UINT32_MAX ? -1 : (int)f->leaf_of[i]);
	ap_buf_addstr(b, "]}");
	ap_index_release(&idx);
	free(names);
	free(name_of);
}

static void put_timeline(struct ap_buf *b, const struct page *P)
{
	const struct ap_timeline *T = &P->T;
	size_t w = T->nsites + 1;
	ap_buf_addf(b, ",\"timeline\":{\"x_unit\":\"%s\",\"xspan\":", T->by_bytes ? "B" : "s");
	add_num(b, T->xspan);
	ap_buf_addf(b, ",\"buckets\":%zu,\"peak\":", T->nbuckets);
	add_num(b, T->peak);
	ap_buf_addstr(b, ",\"peak_sd\":");
	add_num(b, T->peak_sd);
	ap_buf_addf(b, ",\"peak_bucket\":%zu,\"sites\":[", T->peak_bucket);
	for (size_t s = 0; s < T->nsites; s++) {
		ap_buf_addstr(b, s ? "," : "");
		add_str(b, T->names[s]);
	}
	ap_buf_addstr(b, "],\"max\":[");
	for (size_t k = 0; k < T->nbuckets; k++) {
		ap_buf_addstr(b, k ? "," : "");
		add_num(b, T->max[k]);
	}
	ap_buf_addstr(b, "],\"at_max\":[");
	for (size_t k = 0; k < T->nbuckets * w; k++) {
		ap_buf_addstr(b, k ? "," : "");
		add_num(b, T->at_max[k]);
	}
	/* per bucket: stack, allocated objects, bytes, live change objects,
	 * bytes; five numbers a cell */
	ap_buf_addstr(b, "],\"cells\":[");
	size_t c = 0;
	for (size_t k = 0; k < T->nbuckets; k++) {
		ap_buf_addstr(b, k ? ",[" : "[");
		for (bool first = true; c < P->cells.n && P->cells.c[c].bucket == k; c++) {
			const struct cell *cl = &P->cells.c[c];
			ap_buf_addf(b, "%s%u", first ? "" : ",", cl->stack);
			for (int i = 0; i < 4; i++) {
				ap_buf_addstr(b, ",");
				add_num(b, cl->v[i]);
			}
			first = false;
		}
		ap_buf_addstr(b, "]");
	}
	ap_buf_addstr(b, "]}");
}

static void put_page(struct ap_buf *b, const struct page *P)
{
	const struct ap_trace *t = P->v->trace;
	const char *exe = strrchr(t->exe, '/') ? strrchr(t->exe, '/') + 1 : t->exe;
	ap_buf_addstr(b,
		      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		      "<meta name=\"generator\" content=\"allocprof html\">\n<title>allocprof: ");
	/* the name as text: the script sets it again from the data */
	for (const char *s = exe; *s; s++)
		if (*s == '<')
			ap_buf_addstr(b, "&lt;");
		else if (*s == '&')
			ap_buf_addstr(b, "&amp;");
		else
			ap_buf_add(b, s, 1);
	ap_buf_addstr(b, "</title>\n<style>\n");
	ap_buf_addstr(b, ap_html_css);
	ap_buf_addstr(b, "</style>\n</head>\n<body>\n<noscript>This page draws its views "
			 "with JavaScript.</noscript>\n<script type=\"application/json\" "
			 "id=\"ap-data\">{");
	put_meta(b, P);
	put_stacks(b, P);
	put_nodes(b, P);
	put_flame(b, P);
	put_timeline(b, P);
	ap_buf_addstr(b, ",\"advise\":");
	add_json(b, P->advise ? json_incref(P->advise) : json_null());
	ap_buf_addstr(b, ",\"advise_why\":");
	add_str(b, P->advise_why);
	ap_buf_addstr(b, ",\"diff\":");
	if (P->diff) {
		json_t *d = json_incref(P->diff);
		json_object_set_new(d, "base", ap_json_text(P->base));
		json_object_set_new(d, "new", ap_json_text(P->trace));
		add_json(b, d);
	} else {
		ap_buf_addstr(b, "null");
	}
	ap_buf_addstr(b, "}</script>\n<script>\n");
	ap_buf_addstr(b, ap_html_js);
	ap_buf_addstr(b, "</script>\n</body>\n</html>\n");
}

/* ---- the command ---------------------------------------------------------- */

static json_t *advise_one(const struct ap_view *v, const char **why);

/* The advisor's sites as advise --no-measure finds them, or NULL with
 * *why set: of the trace, or of a whole run's process that made the most
 * allocation calls (a pool does not cross processes). */
static json_t *advise_of(const struct ap_view *run, const struct ap_view_opts *o, const char **why)
{
	/* a whole run: its busiest process, as the TUI advises */
	const struct ap_view *v = run;
	struct ap_view pv = {0};
	size_t proc = 0;
	if (run->trace->nprocs > 1) {
		struct ap_error err;
		proc = ap_view_advised_process(run->trace);
		if (ap_view_load_process(&pv, run->trace, proc, o, &err)) {
			ap_print_error(&err);
			*why = "its process's trace could not be read (see the error allocprof printed)";
			return NULL;
		}
		v = &pv;
	}
	json_t *j = advise_one(v, why);
	if (j && v != run) {
		json_t *p = json_object();
		json_object_set_new(p, "pid", json_integer((json_int_t)v->trace->pid));
		json_object_set_new(p, "exe", ap_json_text(v->trace->exe));
		json_object_set_new(p, "processes", json_integer((json_int_t)run->trace->nprocs));
		json_object_set_new(j, "advised_process", p);
	}
	ap_view_release(&pv);
	return j;
}

/* The advisor's sites of one process's trace. */
static json_t *advise_one(const struct ap_view *v, const char **why)
{
	struct ap_cost_table costs;
	if (ap_advise_load_costs(&costs) < 0) {
		*why = "no cost table (see the error allocprof printed)";
		return NULL;
	}
	struct ap_advise_options ao;
	ap_advise_options_init(&ao);
	ao.costs = &costs;
	struct ap_site_map m;
	ap_advise_sites(v->trace, v->sym, false, &m);
	struct ap_error err;
	struct ap_advice *a = ap_advise_run(v->trace, &m, &ao, &err);
	json_t *j = NULL;
	if (!a) {
		ap_print_error(&err);
		*why = "the advisor failed (see the error allocprof printed)";
	} else {
		struct ap_view_measure vm;
		ap_view_measure_init(&vm);
		vm.off = true;
		ap_view_measure_run(&vm, a, v->trace, &m, &ao);
		j = ap_advise_json(a, v->trace, a->nsites);
	}
	ap_advice_free(a);
	ap_site_map_release(&m);
	return j;
}

/* xdg-open PATH, when there is one; its failure is only said. */
static void open_page(const char *path)
{
	char real[4096];
	if (!realpath(path, real))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		execlp("xdg-open", "xdg-open", real, (char *)NULL);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		ap_say("--open: xdg-open %s did not open it%s", real,
			   pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127 ? " (no xdg-open)"
									      : "");
}

int cmd_html(int argc, char **argv)
{
	static const struct option longopts[] = {
	    AP_VIEW_LONGOPTS,
	    AP_VIEW_GRAN_LONGOPTS,
	    {"output", required_argument, NULL, 'o'},
	    {"open", no_argument, NULL, OPT_OPEN},
	    {"diff-base", required_argument, NULL, OPT_DIFF_BASE},
	    {"diff_base", required_argument, NULL, OPT_DIFF_BASE},
	    {"no-advise", no_argument, NULL, OPT_NO_ADVISE},
	    {"buckets", required_argument, NULL, OPT_BUCKETS},
	    {"sites", required_argument, NULL, OPT_SITES},
	    {"time-unit", required_argument, NULL, OPT_TIME_UNIT},
	    {"time_unit", required_argument, NULL, OPT_TIME_UNIT},
	    {NULL, 0, NULL, 0},
	};
	struct ap_view_opts o;
	const char *output = NULL, *base = NULL;
	bool open = false, no_advise = false, by_bytes = false;
	long nbuckets = 200, nsites = 5;
	int opt;

	ap_view_opts_init(&o);
	optind = 0;
	while ((opt = ap_view_next_option(&o, "html", argc, argv, ":ho:", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			html_usage(stdout);
			return AP_EXIT_OK;
		case 'o':
			output = optarg;
			break;
		case OPT_OPEN:
			open = true;
			break;
		case OPT_DIFF_BASE:
			base = optarg;
			break;
		case OPT_NO_ADVISE:
			no_advise = true;
			break;
		case OPT_BUCKETS:
			if (ap_view_parse_count("html", "bucket count", optarg, &nbuckets))
				return AP_EXIT_USAGE;
			if (nbuckets < 1 || nbuckets > 10000)
				return ap_usage_error(
				    "html", "--buckets wants 1 to 10000, not '%s'", optarg);
			break;
		case OPT_SITES:
			if (ap_view_parse_count("html", "site count", optarg, &nsites))
				return AP_EXIT_USAGE;
			if (nsites > 32)
				return ap_usage_error("html", "--sites wants 0 to 32, not '%s'",
						      optarg);
			break;
		case OPT_TIME_UNIT:
			if (!strcmp(optarg, "B"))
				by_bytes = true;
			else if (!strcmp(optarg, "s"))
				by_bytes = false;
			else
				return ap_usage_error("html",
						      "--time-unit wants s (time) or B (bytes "
						      "allocated and freed), not '%s'",
						      optarg);
			break;
		default:
			return ap_view_bad_option("html", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc == optind)
		return ap_usage_error("html", "no trace given");
	if (o.json)
		return ap_usage_error("html", "--json: the page is the output; use the other "
					      "commands' --json for the numbers");
	if (o.by_process)
		return ap_usage_error("html", "--by-process: one page shows one run; make a "
					      "process's page with --no-children");
	if (ap_view_touch_check() < 0)
		return AP_EXIT_USAGE;

	/* Not on a terminal: a new report001.html, as flamegraph does. A
	 * bad trace is found before the file is made. */
	if (ap_check_output(output) < 0)
		return AP_EXIT_FAIL;
	struct ap_view v, bv;
	int rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o);
	if (rc)
		return rc;
	if (base && ap_view_load(&bv, (char *const[]){(char *)base}, 1, &o)) {
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	struct page P = {.v = &v, .o = &o, .base = base, .trace = argv[optind]};
	struct ap_timeline_sites sites;
	bool sites_made = false;
	uint32_t *index_of = NULL;
	struct ap_error err;
	P.x = ap_export_new(v.trace, v.values, v.sym, ap_view_progress_fn(),
			    ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	if (!P.x)
		goto failed;
	ap_view_warnings(&v);
	if (ap_view_sampling_hint(v.trace)) {
		rc = AP_EXIT_FAIL;
		goto out;
	}
	if (!(P.flame = ap_flame_paths_new(P.x, &o.report, &err)))
		goto failed;
	for (int g = 0; g < 3; g++) {
		struct ap_report_options ro = o.report;
		ro.granularity = (enum ap_granularity)g;
		if (!(P.paths[g] = ap_report_paths_new(v.trace, v.values, v.sym, &ro, &err)))
			goto failed;
	}
	ap_view_symbols_hint(&v, o.report.sample_index);
	if (page_notes(&P, &err))
		goto failed;

	/* the timeline, and beside it per stretch and stack what the page
	 * sums for a range */
	index_of = ap_xmalloc((v.trace->nstacks ? v.trace->nstacks : 1) * sizeof(uint32_t));
	memset(index_of, 0xff, (v.trace->nstacks ? v.trace->nstacks : 1) * sizeof(uint32_t));
	for (size_t i = 0; i < P.x->nstacks; i++)
		index_of[P.x->stacks[i].id] = (uint32_t)i;
	P.cells.index_of = index_of;
	P.cells.last = ap_xcalloc(P.x->nstacks ? P.x->nstacks : 1, sizeof(uint32_t));
	ap_timeline_sites_init(&sites, &v, (size_t)nsites);
	sites_made = true;
	struct ap_timeline_hook hook = {cells_alloc, cells_live, &P.cells};
	if (ap_timeline_init_hooked(&P.T, v.trace, &sites, (size_t)nbuckets, by_bytes, &hook, &err))
		goto failed;
	if (P.cells.n)
		qsort(P.cells.c, P.cells.n, sizeof(*P.cells.c), cell_cmp);

	if (no_advise)
		P.advise_why = "left out (--no-advise)";
	else
		P.advise = advise_of(&v, &o, &P.advise_why);
	if (base && !(P.diff = ap_diff_json(&bv, &v, &o.report)))
		rc = AP_EXIT_FAIL;

	if (!rc) {
		struct ap_buf page = AP_BUF_INIT, name = AP_BUF_INIT;
		put_page(&page, &P);
		/* no -o: a new file even when standard output is a pipe (a
		 * page is for a browser); -o -: standard output, unless it
		 * is a terminal */
		const char *path = output ? ap_output_away_from_tty(output, "report", "html", &name)
					  : ap_output_new_file("report", "html", &name);
		rc = !path || ap_write_output(path, &page) ? AP_EXIT_FAIL : AP_EXIT_OK;
		if (!rc && strcmp(path, "-")) {
			char real[4096];
			ap_say("wrote file://%s (%zu bytes)",
				   realpath(path, real) ? real : path, page.len);
			if (open)
				open_page(path);
		}
		ap_buf_release(&name);
		ap_buf_release(&page);
	}
	goto out;
failed:
	ap_print_error(&err);
	rc = AP_EXIT_FAIL;
out:
	json_decref(P.advise);
	json_decref(P.diff);
	ap_timeline_release(&P.T);
	if (sites_made)
		ap_timeline_sites_release(&sites);
	free(P.cells.c);
	free(P.cells.last);
	free(index_of);
	for (int g = 0; g < 3; g++)
		ap_report_paths_free(P.paths[g]);
	ap_flame_free(P.flame);
	ap_export_free(P.x);
	if (base)
		ap_view_release(&bv);
	ap_view_release(&v);
	return rc;
}
