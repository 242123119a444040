/* `allocprof diff BASE NEW`: what changed between two traces, per node
 * (function, line or file), in every sample index; the text shows one
 * index, sorted by the size of the change, and --fail-above turns a rise
 * into a non-zero exit for CI. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_export.h"
#include "commands.h"
#include "views.h"

enum {
	OPT_CUM = AP_VOPT_FIRST_OWN,
	OPT_FAIL_ABOVE,
};

static void diff_usage(FILE *f)
{
	fputs("usage: allocprof diff [OPTIONS] BASE NEW\n\n"
	      "What changed from trace BASE to trace NEW, per node, as pprof's\n"
	      "-diff_base compares two profiles: the value in BASE, in NEW, the\n"
	      "change and the change relative to BASE, sorted by the size of the\n"
	      "change (flat: the node as the call site; --cum: anywhere on the stack).\n"
	      "The text shows one sample index; --json has every index.\n\n"
	      "options:\n"
	      "  -n, --nodecount N    show the N largest changes (default: all)\n"
	      "  --functions          one node per function (default)\n"
	      "  --lines              one node per source line\n"
	      "  --files              one node per source file\n"
	      "  --cum                compare cum values instead of flat\n"
	      "  --fail-above LIMIT   exit 1, naming what rose, when NEW passes LIMIT:\n"
	      "                       WHAT=+CHANGE[,+CHANGE...], WHAT an INDEX (each\n"
	      "                       node's flat value), total.INDEX (the whole\n"
	      "                       trace's) or peak (the peak in-use bytes stats\n"
	      "                       prints), CHANGE P% (relative to BASE), N or a\n"
	      "                       size such as 1MB (absolute); the CHANGEs of one\n"
	      "                       LIMIT must all be passed (AND: +10%,+64kB is a\n"
	      "                       10% gate with a 64kB floor), and any one of\n"
	      "                       several --fail-above fails (OR)\n" AP_VIEW_OPTIONS_HELP
	      "Exit status: 0, 1 when a --fail-above limit is passed, 2 when a trace\n"
	      "cannot be read or on bad usage.\n",
	      f);
}

/* "+12.5%", "-100%", "new" when the base is 0. */
static void change_pct(char *out, size_t len, double base, double delta)
{
	if (base == 0)
		snprintf(out, len, delta != 0 ? "new" : "0%%");
	else
		snprintf(out, len, "%+.3g%%", 100 * delta / base);
}

/* diff's exit status when it cannot tell (a trace that cannot be read,
 * bad usage): 2, apart from 1, "a limit was passed". */
#define DIFF_EXIT_CANNOT AP_EXIT_USAGE

/* --fail-above WHAT=+CHANGE[,+CHANGE...]: what is compared, and the
 * changes that must all be passed. */
enum limit_of { LIMIT_NODES, LIMIT_TOTAL, LIMIT_PEAK };
#define LIMIT_MAX_CHANGES 4
struct limit {
	enum limit_of of;
	enum ap_sample_index si; /* LIMIT_PEAK: AP_SI_PEAK_SPACE, for its unit */
	size_t n;
	struct {
		double v;
		bool pct;
	} c[LIMIT_MAX_CHANGES];
};

/* One CHANGE, "+P%", "+N" or (bytes) "+1.5MB", of `len` bytes at s. */
static int parse_change(const char *s, size_t len, bool bytes, struct limit *l)
{
	char buf[64];
	if (len < 2 || len >= sizeof(buf) || *s != '+' || l->n == LIMIT_MAX_CHANGES)
		return -1;
	memcpy(buf, s + 1, len - 1);
	buf[len - 1] = 0;
	char *end;
	double v = strtod(buf, &end);
	if (end == buf || !(v >= 0) || !isfinite(v))
		return -1;
	bool pct = *end == '%';
	if (pct && end[1])
		return -1;
	if (!pct && *end) {
		/* a size: ap_parse_size's units (1MB, 64kB, 1.5MiB) */
		uint64_t sz;
		if (!bytes || ap_parse_size(buf, &sz))
			return -1;
		v = (double)sz;
	}
	l->c[l->n].v = v;
	l->c[l->n++].pct = pct;
	return 0;
}

static int parse_limit(const char *arg, struct limit *l)
{
	const char *eq = strchr(arg, '=');
	memset(l, 0, sizeof(*l));
	if (!eq || eq == arg)
		return -1;
	char name[48];
	size_t n = (size_t)(eq - arg);
	if (n >= sizeof(name))
		return -1;
	memcpy(name, arg, n);
	name[n] = 0;
	const char *index = name;
	if (!strcmp(name, "peak")) {
		l->of = LIMIT_PEAK;
		l->si = AP_SI_PEAK_SPACE;
	} else {
		if (!strncmp(name, "total.", 6)) {
			l->of = LIMIT_TOTAL;
			index += 6;
		}
		if (ap_export_parse_index(index, &l->si))
			return -1;
	}
	for (const char *c = eq + 1;;) {
		const char *comma = strchr(c, ',');
		size_t len = comma ? (size_t)(comma - c) : strlen(c);
		if (parse_change(c, len, ap_sample_index_is_bytes(l->si), l))
			return -1;
		if (!comma)
			return 0;
		c = comma + 1;
	}
}

/* Whether going from `base` to `new` passes every change of l. */
static bool limit_passed(const struct limit *l, double base, double new)
{
	double delta = new - base;
	for (size_t k = 0; k < l->n; k++) {
		bool over = l->c[k].pct ? delta > 0 && (base == 0 || 100 * delta / base > l->c[k].v)
					: delta > l->c[k].v;
		if (!over)
			return false;
	}
	return l->n > 0;
}

/* "WHAT rose from A to B (+P%), above SPEC" on stderr, for `who`. */
static void say_passed(const char *who, const struct limit *l, double base, double new,
		       const char *spec)
{
	char a[32], b[32], p[32];
	ap_view_format(a, sizeof(a), l->si, base);
	ap_view_format(b, sizeof(b), l->si, new);
	change_pct(p, sizeof(p), base, new - base);
	ap_say("diff: %s: %s rose from %s to %s (%s), above %s", who,
		   l->of == LIMIT_PEAK ? "peak in-use bytes" : ap_sample_index_name(l->si), a, b, p,
		   spec);
}

/* One node in both traces, for one sample index. */
struct drow {
	char *name;
	double base_flat, new_flat, base_cum, new_cum;
};

struct dtable {
	struct drow *rows;
	size_t n, alloc;
	double base_total, new_total;
};

static struct drow *drow_of(struct dtable *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->rows[i].name, name))
			return &d->rows[i];
	AP_ALLOC_GROW(d->rows, d->n + 1, d->alloc);
	struct drow *r = &d->rows[d->n++];
	memset(r, 0, sizeof(*r));
	r->name = ap_xstrdup(name);
	return r;
}

/* The top model of a view for one index, every node. */
static struct ap_report *model(const struct ap_view *v, const struct ap_report_options *base,
			       enum ap_sample_index si, struct ap_error *err)
{
	struct ap_report_options o = *base;
	o.sample_index = si;
	o.node_fraction = 0;
	o.node_count = 0;
	return ap_report_new(v->trace, v->values, v->sym, &o, NULL, NULL, err);
}

static int build_table(const struct ap_view *bv, const struct ap_view *nv,
		       const struct ap_report_options *opts, enum ap_sample_index si,
		       struct dtable *d)
{
	struct ap_error err;
	memset(d, 0, sizeof(*d));
	for (int k = 0; k < 2; k++) {
		struct ap_report *r = model(k ? nv : bv, opts, si, &err);
		if (!r) {
			ap_print_error(&err);
			return -1;
		}
		if (k)
			d->new_total = r->total;
		else
			d->base_total = r->total;
		for (size_t i = 0; i < r->nrows; i++) {
			struct drow *row = drow_of(d, r->rows[i].name);
			*(k ? &row->new_flat : &row->base_flat) = r->rows[i].flat;
			*(k ? &row->new_cum : &row->base_cum) = r->rows[i].cum;
		}
		ap_report_free(r);
	}
	return 0;
}

static void table_free(struct dtable *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->rows[i].name);
	free(d->rows);
}

static bool by_cum;

static int drow_cmp(const void *x, const void *y)
{
	const struct drow *a = x, *b = y;
	double da = by_cum ? a->new_cum - a->base_cum : a->new_flat - a->base_flat;
	double db = by_cum ? b->new_cum - b->base_cum : b->new_flat - b->base_flat;
	if (fabs(da) != fabs(db))
		return fabs(da) > fabs(db) ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void signed_value(char *out, size_t len, enum ap_sample_index si, double v)
{
	char b[24];
	ap_view_format(b, sizeof(b), si, fabs(v));
	snprintf(out, len, "%s%s", v < 0 ? "-" : v > 0 ? "+" : "", b);
}

static void print_text(const struct dtable *d, enum ap_sample_index si, const char *base,
		       const char *new, size_t nshow)
{
	char a[32], b[32], c[40], p[32];
	printf("Base: %s\nNew: %s\nType: %s (%s)\n", base, new, ap_sample_index_name(si),
	       by_cum ? "cum" : "flat");
	ap_view_format(a, sizeof(a), si, d->base_total);
	ap_view_format(b, sizeof(b), si, d->new_total);
	signed_value(c, sizeof(c), si, d->new_total - d->base_total);
	change_pct(p, sizeof(p), d->base_total, d->new_total - d->base_total);
	printf("Total: %s -> %s (%s, %s)\n", a, b, c, p);
	printf("%10s %10s %10s %8s  %s\n", "base", "new", "delta", "delta%", "name");
	struct ap_buf safe = AP_BUF_INIT;
	size_t shown = 0;
	for (size_t i = 0; i < d->n && (!nshow || shown < nshow); i++) {
		const struct drow *r = &d->rows[i];
		double bv = by_cum ? r->base_cum : r->base_flat, nv = by_cum ? r->new_cum : r->new_flat;
		if (bv == nv)
			continue;
		ap_view_format(a, sizeof(a), si, bv);
		ap_view_format(b, sizeof(b), si, nv);
		signed_value(c, sizeof(c), si, nv - bv);
		change_pct(p, sizeof(p), bv, nv - bv);
		printf("%10s %10s %10s %8s  %s\n", a, b, c, p, ap_safe_name(&safe, r->name));
		shown++;
	}
	ap_buf_release(&safe);
	if (!shown)
		printf("(no node changed)\n");
}

static json_t *table_json(const struct dtable *d)
{
	json_t *o = json_object(), *rows = json_array();
	json_object_set_new(o, "base_total", json_real(d->base_total));
	json_object_set_new(o, "new_total", json_real(d->new_total));
	for (size_t i = 0; i < d->n; i++) {
		const struct drow *r = &d->rows[i];
		json_t *x = json_object();
		json_object_set_new(x, "name", ap_json_text(r->name));
		json_object_set_new(x, "base_flat", json_real(r->base_flat));
		json_object_set_new(x, "new_flat", json_real(r->new_flat));
		json_object_set_new(x, "delta_flat", json_real(r->new_flat - r->base_flat));
		json_object_set_new(x, "base_cum", json_real(r->base_cum));
		json_object_set_new(x, "new_cum", json_real(r->new_cum));
		json_object_set_new(x, "delta_cum", json_real(r->new_cum - r->base_cum));
		json_array_append_new(rows, x);
	}
	json_object_set_new(o, "rows", rows);
	return o;
}

/* The nodes (or the total) past a limit, one line each on stderr;
 * returns how many. */
static size_t check_limit(const struct dtable *d, const struct limit *l, const char *spec)
{
	if (l->of == LIMIT_TOTAL) {
		if (!limit_passed(l, d->base_total, d->new_total))
			return 0;
		say_passed("total", l, d->base_total, d->new_total, spec);
		return 1;
	}
	size_t n = 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct drow *r = &d->rows[i];
		if (!limit_passed(l, r->base_flat, r->new_flat))
			continue;
		say_passed(r->name, l, r->base_flat, r->new_flat, spec);
		n++;
	}
	return n;
}

json_t *ap_diff_json(const struct ap_view *bv, const struct ap_view *nv,
		     const struct ap_report_options *opts)
{
	json_t *root = json_object();
	by_cum = false;
	for (int i = 0; i < AP_SI_COUNT; i++) {
		enum ap_sample_index si = (enum ap_sample_index)i;
		/* as diff --json: temporaries need --all traces */
		if (si == AP_SI_TEMPORARY && (bv->trace->rate > 1 || nv->trace->rate > 1))
			continue;
		struct dtable d;
		if (build_table(bv, nv, opts, si, &d)) {
			json_decref(root);
			return NULL;
		}
		if (d.n)
			qsort(d.rows, d.n, sizeof(*d.rows), drow_cmp);
		json_object_set_new(root, ap_sample_index_name(si), table_json(&d));
		table_free(&d);
	}
	return root;
}

/* A limit passed on a sampled trace's values may be chance: two runs of
 * the same program, sampled, differ at a node by about 1/sqrt(its
 * samples) (a node of 40 samples: 16% either way, and a gate of +10%
 * tripped on 9 of 15 pairs of runs of one unchanged program). Said once
 * after the limits passed, naming the sampled traces; the peak is left
 * out (the sampler counts it to within a few kB). */
static void note_sampled_gate(const struct ap_view *bv, const struct ap_view *nv,
			      const char *base, const char *new, const struct limit *limits,
			      size_t nlimits)
{
	bool on_values = false;
	for (size_t k = 0; k < nlimits; k++)
		on_values |= limits[k].of != LIMIT_PEAK;
	bool bs = bv->trace->rate > 1, ns = nv->trace->rate > 1;
	if (!on_values || (!bs && !ns))
		return;
	ap_say("note: diff: %s%s%s %s sampled: %s values are estimates that differ from run "
	       "to run by about 1/sqrt(samples) at a node, so a limit can be passed by chance; "
	       "record both with --all for a gate",
	       bs ? base : "", bs && ns ? " and " : "", ns ? new : "", bs && ns ? "are" : "is",
	       bs && ns ? "their" : "its");
}

/* The peak in-use bytes of a trace as stats prints it: exact, counted
 * by the sampler, or the samples' estimate (ap_view_peak), into *out.
 * Returns 0, or -1 with err set (ap_trace_totals). */
static int peak_of(const struct ap_trace *t, struct ap_view_peak *out, struct ap_error *err)
{
	struct ap_trace_totals tot;
	if (ap_trace_totals(t, &tot, err) < 0)
		return -1;
	*out = ap_view_peak(t, tot.peak_inuse_space, tot.peak_inuse_space_sd);
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		AP_VIEW_LONGOPTS,
		{ "nodecount", required_argument, NULL, 'n' },
		AP_VIEW_GRAN_LONGOPTS,
		{ "cum", no_argument, NULL, OPT_CUM },
		{ "fail-above", required_argument, NULL, OPT_FAIL_ABOVE },
		{ "fail_above", required_argument, NULL, OPT_FAIL_ABOVE },
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts o;
	ap_view_opts_init(&o);
	long nshow = 0;
	struct limit limits[16];
	const char *specs[16];
	size_t nlimits = 0;
	int opt;
	by_cum = false;
	optind = 0;
	while ((opt = ap_view_next_option(&o, "diff", argc, argv, ":hn:", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			diff_usage(stdout);
			return AP_EXIT_OK;
		case 'n':
			if (ap_view_parse_count("diff", "node count", optarg, &nshow))
				return AP_EXIT_USAGE;
			break;
		case OPT_CUM:
			by_cum = true;
			break;
		case OPT_FAIL_ABOVE:
			if (nlimits == AP_ARRAY_SIZE(limits))
				return ap_usage_error("diff", "at most %zu --fail-above limits",
						      AP_ARRAY_SIZE(limits));
			if (parse_limit(optarg, &limits[nlimits]))
				return ap_usage_error(
				    "diff",
				    "--fail-above wants INDEX, total.INDEX or "
				    "peak, '=', then +P%%, +N or +SIZE joined by ',' "
				    "(e.g. alloc_space=+10%%,+64kB), not '%s'",
				    optarg);
			specs[nlimits++] = optarg;
			break;
		default:
			return ap_view_bad_option("diff", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc - optind != 2)
		return ap_usage_error("diff", argc - optind < 2 ? "two traces are needed, BASE and NEW"
								: "too many arguments");
	struct ap_view bv, nv;
	if (o.by_process)
		return ap_usage_error("diff", "--by-process: diff compares two runs; diff a "
				      "process's traces with --no-children");
	int rc = ap_view_load(&bv, argv + optind, 1, &o);
	if (rc)
		return DIFF_EXIT_CANNOT;
	if ((rc = ap_view_load(&nv, argv + optind + 1, 1, &o))) {
		ap_view_release(&bv);
		return DIFF_EXIT_CANNOT;
	}
	ap_view_warnings(&bv);
	ap_view_warnings(&nv);
	if (!o.json && (ap_view_peak_note(bv.trace, o.report.sample_index) ||
			ap_view_peak_note(nv.trace, o.report.sample_index))) {
		ap_view_release(&bv);
		ap_view_release(&nv);
		return DIFF_EXIT_CANNOT;
	}
	rc = AP_EXIT_OK;
	json_t *root = o.json ? json_object() : NULL;
	if (root) {
		json_object_set_new(root, "base", ap_json_text(argv[optind]));
		json_object_set_new(root, "new", ap_json_text(argv[optind + 1]));
	}
	size_t failed = 0;
	for (int i = 0; i < AP_SI_COUNT; i++) {
		enum ap_sample_index si = (enum ap_sample_index)i;
		bool limited = false;
		for (size_t k = 0; k < nlimits; k++)
			limited |= limits[k].of != LIMIT_PEAK && limits[k].si == si;
		/* temporaries need --all traces; the others always work */
		if (si == AP_SI_TEMPORARY && (bv.trace->rate > 1 || nv.trace->rate > 1) &&
		    !limited && o.report.sample_index != si)
			continue;
		if (!root && !limited && si != o.report.sample_index)
			continue;
		struct dtable d;
		if (build_table(&bv, &nv, &o.report, si, &d)) {
			rc = DIFF_EXIT_CANNOT;
			break;
		}
		if (d.n)
			qsort(d.rows, d.n, sizeof(*d.rows), drow_cmp);
		for (size_t k = 0; k < nlimits; k++)
			if (limits[k].of != LIMIT_PEAK && limits[k].si == si)
				failed += check_limit(&d, &limits[k], specs[k]);
		if (root)
			json_object_set_new(root, ap_sample_index_name(si), table_json(&d));
		else if (si == o.report.sample_index)
			print_text(&d, si, argv[optind], argv[optind + 1], (size_t)nshow);
		table_free(&d);
	}
	/* the peak: stats' number (the sampler's count where it has one) */
	for (size_t k = 0; k < nlimits && rc == AP_EXIT_OK; k++) {
		if (limits[k].of != LIMIT_PEAK)
			continue;
		struct ap_view_peak pb, pn;
		struct ap_error err;
		if (peak_of(bv.trace, &pb, &err) < 0 || peak_of(nv.trace, &pn, &err) < 0) {
			ap_print_error(&err);
			rc = DIFF_EXIT_CANNOT;
			break;
		}
		if (limit_passed(&limits[k], pb.bytes, pn.bytes)) {
			say_passed("the run", &limits[k], pb.bytes, pn.bytes, specs[k]);
			failed++;
		}
	}
	if (root && rc == AP_EXIT_OK)
		rc = ap_view_json_print(root);
	else if (root)
		json_decref(root);
	if (rc == AP_EXIT_OK && failed)
		rc = AP_EXIT_FAIL;
	if (rc == AP_EXIT_FAIL)
		note_sampled_gate(&bv, &nv, argv[optind], argv[optind + 1], limits, nlimits);
	ap_view_release(&bv);
	ap_view_release(&nv);
	return rc;
}
