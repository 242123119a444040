/* What the C unit tests share: CHECK, which counts a failure and says
 * where and why without stopping (the test's main exits 1 when `failures`
 * is not 0), and a fixed-seed xorshift generator, so that a failure can
 * be run again. */
#ifndef AP_CHECK_H
#define AP_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			failures++;                                                 \
		}                                                                   \
	} while (0)

/* xorshift64 over *state (not 0). */
static inline uint64_t ap_test_next(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

#endif
