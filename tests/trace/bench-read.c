/* Measures the reader (not a test, not run by meson test): reading a trace
 * (both passes and the merge), then ap_trace_totals, in events per second,
 * and the memory the trace holds per event.
 * usage: bench-read TRACE   (make one with `mktrace big OUT 20000000`) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ap_trace.h"

/* CPU time of the process: on a shared machine wall time says little. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench-read TRACE\n");
		return 2;
	}
	struct ap_trace *t;
	struct ap_error err;
	uint64_t c0 = cpu_ns(), t0 = ap_now_ns();
	if (ap_trace_read(argv[1], &t, &err, NULL, NULL) < 0) {
		fprintf(stderr, "bench-read: %s\n", err.msg);
		return 1;
	}
	uint64_t c1 = cpu_ns(), t1 = ap_now_ns();
	struct ap_trace_totals tot;
	if (ap_trace_totals(t, &tot, &err) < 0) {
		fprintf(stderr, "bench-read: %s\n", err.msg);
		return 1;
	}
	uint64_t c2 = cpu_ns(), t2 = ap_now_ns();
	double rs = (double)(t1 - t0) / 1e9, ts = (double)(t2 - t1) / 1e9;
	printf("%zu events (%llu records) from %llu bytes (%.2f B/record) on %zu threads\n", t->nev,
	       (unsigned long long)t->nrecords, (unsigned long long)t->file_size,
	       (double)t->file_size / (double)t->nrecords, t->nthreads);
	double rc = (double)(c1 - c0) / 1e9, tc = (double)(c2 - c1) / 1e9;
	printf("read:   %.3f s wall, %.3f s cpu: %.1f M events/s (cpu); %zu B per event held\n", rs,
	       rc, (double)t->nev / rc / 1e6, sizeof(struct ap_event));
	printf("totals: %.3f s wall, %.3f s cpu: %.1f M events/s (cpu)\n", ts, tc,
	       (double)t->nev / tc / 1e6);
	ap_trace_free(t);
	return 0;
}
