/* `allocprof flamegraph`: an interactive flame graph of a trace, one
 * standalone SVG (inline style and script, cli/flamegraph.js). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_export.h"
#include "ap_flame.h"
#include "commands.h"
#include "flamegraph-js.h"
#include "views.h"

enum {
	OPT_INVERTED = AP_VOPT_FIRST_OWN,
	OPT_MIN_WIDTH,
	OPT_WIDTH,
};

/* The picture's geometry, in px. Labels are monospace, so that the
 * characters that fit a box are known here and in the script alike. */
#define FG_PAD 10.0	 /* left and right margin */
#define FG_FRAME_H 16.0	 /* one level; the box is one px less */
#define FG_TOP 56.0	 /* title, subtitle and the controls */
#define FG_BOTTOM 30.0	 /* the details line */
#define FG_FONT 12.0
#define FG_CHAR_W (FG_FONT * 0.6) /* monospace advance */
#define FG_MIN_WIDTH 0.1 /* percent of the total (flamegraph.pl: 0.1 px) */

static void flamegraph_usage(FILE *f)
{
	fputs("usage: allocprof flamegraph [OPTIONS] TRACE...\n\n"
	      "An interactive flame graph of TRACE's allocations, as one standalone SVG\n"
	      "file (no network, no external font) for a browser: one box per function\n"
	      "per call path, its width the value of the sample index, the root at the\n"
	      "bottom and the call sites on top, as flamegraph.pl draws folded stacks\n"
	      "(export --format=folded): inlined frames are boxes of their own, allocator\n"
	      "frames are left out. Boxes side by side are in name order. Click a box to\n"
	      "zoom (Reset zoom or Escape to go back); Search or Ctrl-F highlights the\n"
	      "functions matching a regular expression and prints their share. Hover\n"
	      "for the value and the percent of the total. Boxes under --min-width are\n"
	      "omitted (their value stays in their parent's) and search does not see\n"
	      "them.\n\n"
	      "options:\n"
	      "  -o, --output PATH    write the SVG there (default: standard output; when\n"
	      "                       that is a terminal, a new flamegraph001.svg, 002,\n"
	      "                       ... in the current directory, as pprof -svg does)\n"
	      "  --inverted           an icicle graph: the root at the top\n"
	      "  --min-width PCT      omit boxes under PCT percent of the total width\n"
	      "                       (default 0.1; 0 draws every box)\n"
	      "  --width PX           the picture's width (default 1200)\n"
	      AP_VIEW_OPTIONS_HELP
	      "With --json, the tree is printed as JSON instead, every node with its\n"
	      "name, value, self and children (d3-flame-graph's shape; docs/json.md).\n",
	      f);
}

/* ---- XML text ------------------------------------------------------------ */

/* The length of the UTF-8 sequence at s that XML 1.0 allows (a
 * character of its Char production), 0 when it is not one. */
static size_t xml_char_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return s[0] >= 0x20 || s[0] == '\t' ? 1 : 0;
	size_t n = ap_utf8_len(s);
	/* U+FFFE and U+FFFF: EF BF BE, EF BF BF */
	if (n == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
		return 0;
	return n;
}

/* Appends the first `max` characters of s (SIZE_MAX: all), escaped for
 * XML text and attribute values when `xml`; what XML cannot hold (control
 * characters, bytes that are not UTF-8) becomes U+FFFD, so that the SVG
 * and the JSON are well-formed whatever a symbol holds. */
static void add_text(struct ap_buf *b, const char *s, size_t max, bool xml)
{
	static const char *const esc[] = { ['<'] = "&lt;", ['>'] = "&gt;", ['&'] = "&amp;",
					   ['"'] = "&quot;" };
	size_t chars = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && chars < max; chars++) {
		size_t n = xml_char_len(p);
		if (!n) {
			ap_buf_addstr(b, "\xef\xbf\xbd");
			p++;
			continue;
		}
		if (xml && *p < AP_ARRAY_SIZE(esc) && esc[*p])
			ap_buf_addstr(b, esc[*p]);
		else
			ap_buf_add(b, p, n);
		p += n;
	}
}

static void add_xml(struct ap_buf *b, const char *s)
{
	add_text(b, s, SIZE_MAX, true);
}

/* The characters of s as add_text counts them. */
static size_t text_chars(const char *s)
{
	size_t chars = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; chars++) {
		size_t n = xml_char_len(p);
		p += n ? n : 1;
	}
	return chars;
}

/* ---- the SVG --------------------------------------------------------------- */

/* A warm colour, the same for a name in every graph (flamegraph.pl's hot
 * palette); frames without symbols are grey. */
static void box_colour(const struct ap_flame_node *nd, char *out, size_t len)
{
	if (nd->unsymbolized) {
		snprintf(out, len, "rgb(190,190,190)");
		return;
	}
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)nd->func; *p; p++)
		h = (h ^ *p) * 16777619u;
	snprintf(out, len, "rgb(%u,%u,%u)", 205 + (h & 0xff) * 50 / 255,
		 (h >> 8 & 0xff) * 230 / 255, (h >> 16 & 0xff) * 55 / 255);
}

struct svg_opts {
	const struct ap_trace *t;
	const struct ap_view_opts *o;
	bool inverted;
	double min_width; /* percent */
	double width;	  /* of the picture */
};

/* A value of the graph's index, as pprof prints it, and its percent of
 * the total. */
static void value_text(struct ap_buf *b, const struct ap_flame *f, double v)
{
	char num[64], pct[32];
	ap_view_format(num, sizeof(num), f->sample_index, v);
	ap_view_percent(pct, sizeof(pct), v, f->total);
	const char *p = pct;
	while (*p == ' ')
		p++;
	ap_buf_addf(b, "%s (%s)", num, p);
}

static void put_box(struct ap_buf *b, const struct ap_flame *f, const struct ap_flame_node *nd,
		    const struct svg_opts *so, uint32_t depth)
{
	double W = so->width - 2 * FG_PAD;
	double px = FG_PAD + nd->x / f->kept * W, w = nd->value / f->kept * W;
	uint32_t level = so->inverted ? nd->depth : depth - nd->depth;
	double y = FG_TOP + level * FG_FRAME_H;
	char fill[32];
	box_colour(nd, fill, sizeof(fill));
	ap_buf_addf(b, "<g class=\"f\" data-x=\"%.17g\" data-v=\"%.17g\" data-s=\"%.17g\" "
		       "data-d=\"%u\"><title>",
		    nd->x, nd->value, nd->self, nd->depth);
	add_xml(b, nd->func);
	ap_buf_addstr(b, "\n");
	value_text(b, f, nd->value);
	if (nd->self > 0 && nd->self < nd->value) {
		ap_buf_addstr(b, ", self ");
		value_text(b, f, nd->self);
	}
	if (nd->inlined)
		ap_buf_addstr(b, ", inlined");
	ap_buf_addf(b, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
		       "fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		    px, y, w, FG_FRAME_H - 1, fill, px + 3, y + FG_FRAME_H - 4.5);
	/* as the script's ap_fit */
	double fit = floor((w - 6) / FG_CHAR_W);
	if (fit >= 3 && text_chars(nd->func) <= fit) {
		add_xml(b, nd->func);
	} else if (fit >= 3) {
		add_text(b, nd->func, (size_t)fit - 2, true);
		ap_buf_addstr(b, "..");
	}
	ap_buf_addstr(b, "</text></g>\n");
}

static void put_svg(struct ap_buf *b, const struct ap_flame *f, const struct svg_opts *so)
{
	const struct ap_trace *t = so->t;
	const struct ap_report_options *ro = &so->o->report;
	double cut = so->min_width / 100 * f->kept;
	uint32_t depth = 0;
	size_t omitted = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->kept > 0 && f->nodes[i].value >= cut) {
			if (f->nodes[i].depth > depth)
				depth = f->nodes[i].depth;
		} else {
			omitted++;
		}
	}
	double H = FG_TOP + (depth + 1) * FG_FRAME_H + FG_BOTTOM;
	double W = so->width;
	ap_buf_addf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		       "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		       "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" data-pad=\"%.17g\" "
		       "data-width=\"%.17g\" data-cw=\"%.17g\">\n",
		    W, H, W, H, FG_PAD, W - 2 * FG_PAD, FG_CHAR_W);
	ap_buf_addf(b, "<style>\n"
		       "text { font-family: monospace; font-size: %.0fpx; fill: #000; }\n"
		       "#title { font-size: 17px; }\n"
		       "#frames g:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		       "#frames text { pointer-events: none; }\n"
		       ".button { fill: #444; cursor: pointer; }\n"
		       ".button:hover { text-decoration: underline; }\n"
		       "</style>\n",
		    FG_FONT);
	ap_buf_addstr(b, "<script type=\"text/ecmascript\"><![CDATA[\n");
	ap_buf_addstr(b, ap_flamegraph_js);
	ap_buf_addstr(b, "]]></script>\n");
	ap_buf_addstr(b, "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
			 "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
			 "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n");
	ap_buf_addf(b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"url(#bg)\"/>\n", W, H);

	/* The title: program, sample index, total. */
	const char *exe = strrchr(t->exe, '/') ? strrchr(t->exe, '/') + 1 : t->exe;
	char total[64];
	ap_view_format(total, sizeof(total), f->sample_index, f->total);
	ap_buf_addf(b, "<text id=\"title\" x=\"%.1f\" y=\"24\" text-anchor=\"middle\">", W / 2);
	add_xml(b, exe);
	ap_buf_addf(b, ": %s, total %s</text>\n", ap_sample_index_name(f->sample_index), total);
	/* What the picture holds: sampling, filters, what was left out. */
	ap_buf_addf(b, "<text id=\"subtitle\" x=\"%.1f\" y=\"42\" text-anchor=\"middle\">", W / 2);
	if (t->rate <= 1) {
		ap_buf_addstr(b, "every allocation recorded");
	} else {
		char rate[32];
		ap_format_bytes(rate, sizeof(rate), (double)t->rate);
		ap_buf_addf(b, "sampled every %s on average: estimates", rate);
	}
	const char *const fname[] = { "focus", "ignore", "hide", "show" };
	const char *const fval[] = { ro->focus, ro->ignore, ro->hide, ro->show };
	for (size_t i = 0; i < AP_ARRAY_SIZE(fval); i++)
		if (fval[i]) {
			ap_buf_addf(b, "; %s=", fname[i]);
			add_xml(b, fval[i]);
		}
	if (f->kept != f->total) {
		ap_buf_addstr(b, "; showing ");
		value_text(b, f, f->kept);
	}
	if (omitted)
		ap_buf_addf(b, "; %zu box%s under %g%% omitted", omitted, omitted == 1 ? "" : "es",
			    so->min_width);
	/* the picture outlives the command's warning on stderr */
	if (t->truncated)
		ap_buf_addstr(b, "; a truncated trace: its complete part");
	ap_buf_addstr(b, "</text>\n");
	ap_buf_addf(b, "<text id=\"unzoom\" class=\"button\" x=\"%.1f\" y=\"24\" "
		       "style=\"display:none\">Reset zoom</text>\n", FG_PAD);
	ap_buf_addf(b, "<text id=\"search\" class=\"button\" x=\"%.1f\" y=\"24\" "
		       "text-anchor=\"end\">Search</text>\n", W - FG_PAD);
	ap_buf_addf(b, "<text id=\"details\" x=\"%.1f\" y=\"%.1f\"> </text>\n", FG_PAD, H - 10);
	ap_buf_addf(b, "<text id=\"matched\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"> </text>\n",
		    W - FG_PAD, H - 10);

	ap_buf_addstr(b, "<g id=\"frames\">\n");
	if (f->kept > 0)
		for (size_t i = 0; i < f->n; i++)
			if (f->nodes[i].value >= cut)
				put_box(b, f, &f->nodes[i], so, depth);
	ap_buf_addstr(b, "</g>\n");
	if (!(f->kept > 0))
		ap_buf_addf(b, "<text id=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
			       "nothing to draw: %s</text>\n", W / 2, FG_TOP + FG_FRAME_H - 4.5,
			    f->total > 0 ? "no stack passes the filters" : "the total is 0");
	ap_buf_addstr(b, "</svg>\n");
}

/* ---- JSON ------------------------------------------------------------------ */

static int put_json(const struct ap_flame *f, const struct ap_trace *t)
{
	json_t **kids = ap_xcalloc(f->n ? f->n : 1, sizeof(*kids));
	json_t *root = NULL;
	struct ap_buf name = AP_BUF_INIT;
	for (size_t i = 0; i < f->n; i++) {
		const struct ap_flame_node *nd = &f->nodes[i];
		kids[i] = json_array();
		ap_buf_reset(&name);
		add_text(&name, nd->func, SIZE_MAX, false);
		json_t *o = json_pack("{s:s, s:I, s:I, s:b, s:o}", "name", name.buf, "value",
				      (json_int_t)ap_view_round(nd->value), "self",
				      (json_int_t)ap_view_round(nd->self), "inlined", nd->inlined,
				      "children", kids[i]);
		if (nd->parent == UINT32_MAX)
			root = o;
		else
			json_array_append_new(kids[nd->parent], o);
	}
	free(kids);
	ap_buf_release(&name);
	json_t *doc = ap_view_json_head(t, f->sample_index, f->total);
	json_object_set_new(doc, "kept", json_integer((json_int_t)ap_view_round(f->kept)));
	json_object_set_new(doc, "root", root);
	return ap_view_json_print(doc);
}

/* ---- the command ---------------------------------------------------------- */

static int parse_number(const char *arg, double lo, double hi, const char *what, double *out)
{
	char *end;
	double v = strtod(arg, &end);
	if (*end || end == arg || !(v >= lo && v <= hi))
		return ap_usage_error("flamegraph", "bad %s '%s', not a number from %g to %g",
				      what, arg, lo, hi);
	*out = v;
	return 0;
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		AP_VIEW_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "inverted", no_argument, NULL, OPT_INVERTED },
		{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "min_width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ NULL, 0, NULL, 0 },
	};
	struct ap_view_opts o;
	struct svg_opts so = { .min_width = FG_MIN_WIDTH, .width = 1200 };
	const char *output = "-";
	int opt;

	ap_view_opts_init(&o);
	optind = 0;
	while ((opt = ap_view_next_option(&o, "flamegraph", argc, argv, ":ho:", longopts)) >= 0) {
		switch (opt) {
		case 'h':
			flamegraph_usage(stdout);
			return AP_EXIT_OK;
		case 'o':
			output = optarg;
			break;
		case OPT_INVERTED:
			so.inverted = true;
			break;
		case OPT_MIN_WIDTH:
			if (parse_number(optarg, 0, 100, "--min-width", &so.min_width))
				return AP_EXIT_USAGE;
			break;
		case OPT_WIDTH:
			if (parse_number(optarg, 100, 100000, "--width", &so.width))
				return AP_EXIT_USAGE;
			break;
		default:
			return ap_view_bad_option("flamegraph", opt, argv);
		}
	}
	if (opt == AP_VIEW_BAD_USAGE)
		return AP_EXIT_USAGE;
	if (argc == optind)
		return ap_usage_error("flamegraph", "no trace given");
	if (o.by_process)
		return ap_usage_error("flamegraph", "--by-process: one graph shows one run; draw a "
				      "process's trace with --no-children");

	if (ap_check_output(output) < 0)
		return AP_EXIT_FAIL;
	struct ap_view v;
	int rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o);
	if (rc)
		return rc;
	struct ap_error err;
	struct ap_export *x = ap_export_new(v.trace, v.values, v.sym, ap_view_progress_fn(),
					    ap_view_progress_ctx("symbolizing"), &err);
	ap_view_progress_done();
	if (!x) {
		ap_print_error(&err);
		ap_view_release(&v);
		return AP_EXIT_FAIL;
	}
	ap_view_warnings(&v);
	struct ap_flame *f = NULL;
	if (ap_view_sampling_hint(v.trace) ||
	    ap_view_inuse_objects_note(v.trace, o.report.sample_index) ||
	    ap_view_peak_note(v.trace, o.report.sample_index)) {
		rc = AP_EXIT_FAIL;
	} else if (!(f = ap_flame_new(x, &o.report, &err))) {
		ap_print_error(&err);
		rc = AP_EXIT_FAIL;
	} else {
		ap_view_symbols_hint(&v, o.report.sample_index);
		if (o.json) {
			rc = put_json(f, v.trace);
		} else {
			struct ap_buf out = AP_BUF_INIT;
			so.t = v.trace;
			so.o = &o;
			put_svg(&out, f, &so);
			/* not on a terminal: into flamegraph001.svg, as pprof -svg */
			struct ap_buf name = AP_BUF_INIT;
			const char *path =
			    ap_output_away_from_tty(output, "flamegraph", "svg", &name);
			rc = !path || ap_write_output(path, &out) ? AP_EXIT_FAIL : AP_EXIT_OK;
			if (!rc && strcmp(path, "-"))
				ap_say("wrote %s", path);
			ap_buf_release(&name);
			ap_buf_release(&out);
		}
	}
	ap_flame_free(f);
	ap_export_free(x);
	ap_view_release(&v);
	return rc;
}
