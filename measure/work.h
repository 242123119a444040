/* The program's own work between its allocator calls, as the measured
 * replay stands it in: a chain of dependent multiply-adds, `n` steps, that
 * keeps one core busy as long as the program ran between two calls (the
 * gap its trace recorded, AP_CHUNK_F_GAPS) without touching memory.
 * Between a pool's Get or Put and the next call the program's work lets
 * the pool's locked instructions and the allocator's stores complete in
 * the background; calls replayed back to back would pay for every one of
 * them (a tokenizer's twin costs 93 ms more with its pool, the calls alone
 * 320 ms). One definition, compiled into the runner that spins it and
 * into allocprof-report, which times it once (ap_work_calibrate) to turn
 * nanoseconds into steps: both runs of a comparison spin the same steps. */
#ifndef AP_MEASURE_WORK_H
#define AP_MEASURE_WORK_H

#include <stdint.h>

/* n steps of the chain from x; returns where it ended (so the compiler
 * must compute it). */
static inline __attribute__((always_inline)) uint64_t ap_work(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 0x9e3779b97f4a7c15ull + i;
		__asm__ volatile("" : "+r"(x)); /* one step at a time */
	}
	return x;
}

#endif
