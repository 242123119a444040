/* The timeline as a chart of text lines (render.h): the chart of
 * `allocprof timeline` and of the TUI's timeline view. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "views.h"

static void put(ap_line_fn line, void *ctx, const char *text)
{
	struct ap_line l = { .kind = AP_LINE_TEXT, .text = text };
	line(ctx, &l);
}

void ap_render_timeline(const struct ap_timeline *T, int rows, ap_line_fn line, void *ctx)
{
	char b1[32], b2[32], x[32], head[480], counted[200] = "", sd[48] = "";
	if (rows < 2)
		rows = 2;
	ap_format_bytes(b1, sizeof(b1), T->peak);
	ap_timeline_format_x(x, sizeof(x), T, T->peak_x);
	struct ap_view_peak pk = ap_view_peak(T->t, T->peak, T->peak_sd);
	if (pk.kind == AP_PEAK_COUNTED) {
		/* the chart is of samples; the sampler counted the peak itself */
		char says[160];
		ap_format_bytes(b2, sizeof(b2), pk.bytes);
		snprintf(counted, sizeof(counted), "; the peak counted: %s (%s)", b2,
			 ap_view_peak_says(&pk, says, sizeof(says)));
	}
	if (T->t->rate > 1) {
		/* the samples' peak: the largest of many estimates */
		ap_format_bytes(b2, sizeof(b2), T->peak_sd);
		snprintf(sd, sizeof(sd), " ± %s", b2);
	}
	snprintf(head, sizeof(head), "In use over %s (peak %s%s at %s%s, '@')%s%s",
		 T->by_bytes ? "bytes allocated and freed" : "time", b1, sd, x,
		 T->by_bytes ? " allocated and freed" : "",
		 T->t->rate > 1 ? "; estimates from samples (± one standard deviation; their "
				  "peak is biased upward)"
				: "",
		 counted);
	put(line, ctx, head);
	put(line, ctx, "");
	/* a row: the axis label (11 columns), a column per bucket, "> TIME" */
	size_t width = T->nbuckets + 48;
	char *row = ap_xmalloc(width);
	for (int r = rows; r >= 1; r--) {
		double level = T->peak * r / rows;
		if (r == rows || r == rows / 2)
			ap_format_bytes(b2, sizeof(b2), level);
		else
			b2[0] = 0;
		int n = snprintf(row, width, "%9s |", b2);
		for (size_t b = 0; b < T->nbuckets; b++)
			row[n++] = T->peak > 0 && T->max[b] >= level - T->peak / rows / 2
					   ? (b == T->peak_bucket ? '@' : '#')
					   : ' ';
		row[n] = 0;
		put(line, ctx, row);
	}
	int n = snprintf(row, width, "%9s +", "0");
	for (size_t b = 0; b < T->nbuckets; b++)
		row[n++] = '-';
	ap_timeline_format_x(x, sizeof(x), T, T->xspan);
	snprintf(row + n, width - (size_t)n, "> %s", x);
	put(line, ctx, row);
	free(row);
	put(line, ctx, "");
	put(line, ctx, "At the peak:");
	const double *split = T->at_max + T->peak_bucket * (T->nsites + 1);
	struct ap_buf site = AP_BUF_INIT;
	for (size_t s = 0; s <= T->nsites; s++) {
		ap_format_bytes(b1, sizeof(b1), split[s]);
		ap_buf_reset(&site);
		ap_buf_addf(&site, "%10s %5.1f%%  %s", b1, T->peak > 0 ? 100 * split[s] / T->peak : 0,
			    s < T->nsites ? T->names[s] : "(other sites)");
		put(line, ctx, site.buf);
	}
	ap_buf_release(&site);
}
