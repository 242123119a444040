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

/* A writer of a trace starting at START, with one thread (1000, "main")
 * and one stack of one frame (0x1000), *stack. */
static inline struct ap_tw *synth_one_thread(uint32_t *stack)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.start_ns = START;
	struct ap_tw *tw = ap_tw_new(&h);
	uint64_t pc = 0x1000;
	*stack = ap_tw_stack(tw, &pc, 1);
	ap_tw_thread(tw, 1000, "main");
	return tw;
}

#endif
