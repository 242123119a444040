/* What the advisor's unit tests share: a synthetic trace, written with the
 * trace writer and read back as a report command would read it. */
#ifndef ADVISE_SYNTH_H
#define ADVISE_SYNTH_H

#include <stdio.h>
#include <stdlib.h>

#include "ap_trace.h"
#include "ap_trace_writer.h"

#define MS 1000000ull
#define START 1000000000ull

/* Ends tw's trace at end_ns and reads it; exits on failure. */
static inline struct ap_trace *synth_finish(struct ap_tw *tw, uint64_t end_ns)
{
	struct ap_tw_end end = { .end_ns = end_ns };
	ap_tw_end(tw, &end);
	uint8_t *data;
	size_t len;
	struct ap_error err;
	struct ap_trace *t;
	if (ap_tw_close_mem(tw, &data, &len, &err) < 0 ||
	    ap_trace_read_mem(data, len, "synthetic", &t, &err) < 0) {
		fprintf(stderr, "trace: %s\n", err.msg);
		exit(1);
	}
	free(data);
	return t;
}

#endif
