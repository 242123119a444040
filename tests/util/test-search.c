/* util/search.h against a linear scan: upper and lower bounds of every
 * key of sorted arrays with runs of equal keys (and the values between
 * them, before the first and past the last), over a plain uint64_t array
 * and over structs whose key is not the first field; empty arrays; keys
 * at 0 and UINT64_MAX. */
#include <stdlib.h>

#include "ap_check.h"
#include "search.h"

static uint64_t rng = 1181783497276652981ull;

struct range {
	uint32_t pad;
	uint64_t start;
	size_t what;
};

static size_t lin_upper(const uint64_t *k, size_t n, uint64_t x)
{
	size_t i = 0;
	while (i < n && k[i] <= x)
		i++;
	return i;
}

static size_t lin_lower(const uint64_t *k, size_t n, uint64_t x)
{
	size_t i = 0;
	while (i < n && k[i] < x)
		i++;
	return i;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define N 300

int main(void)
{
	static uint64_t k[N];
	static struct range r[N];
	for (size_t n = 0; n <= N; n = n ? n * 2 + 1 : 1) {
		for (size_t i = 0; i < n; i++)
			k[i] = 10 * (ap_test_next(&rng) % (n / 2 + 1)); /* runs of equal keys */
		qsort(k, n, sizeof(*k), u64_cmp);
		for (size_t i = 0; i < n; i++)
			r[i] = (struct range){(uint32_t)i, k[i], i};
		for (uint64_t x = 0; x <= 10 * (n / 2 + 2); x += 5) {
			size_t up = lin_upper(k, n, x), lo = lin_lower(k, n, x);
			size_t got = ap_upper_bound(k, n, sizeof(*k), 0, x);
			CHECK(got == up, "n %zu, x %llu: upper %zu, want %zu", n,
			      (unsigned long long)x, got, up);
			got = ap_lower_bound(k, n, sizeof(*k), 0, x);
			CHECK(got == lo, "n %zu, x %llu: lower %zu, want %zu", n,
			      (unsigned long long)x, got, lo);
			got = AP_UPPER_BOUND(r, n, start, x);
			CHECK(got == up, "n %zu, x %llu: struct upper %zu, want %zu", n,
			      (unsigned long long)x, got, up);
			got = AP_LOWER_BOUND(r, n, start, x);
			CHECK(got == lo, "n %zu, x %llu: struct lower %zu, want %zu", n,
			      (unsigned long long)x, got, lo);
		}
	}
	/* the ends of the key space */
	uint64_t e[3] = {0, 7, UINT64_MAX};
	CHECK(ap_upper_bound(e, 3, sizeof(*e), 0, 0) == 1, "upper of 0");
	CHECK(ap_lower_bound(e, 3, sizeof(*e), 0, 0) == 0, "lower of 0");
	CHECK(ap_upper_bound(e, 3, sizeof(*e), 0, UINT64_MAX) == 3, "upper of max");
	CHECK(ap_lower_bound(e, 3, sizeof(*e), 0, UINT64_MAX) == 2, "lower of max");
	CHECK(ap_upper_bound(e, 3, sizeof(*e), 0, 6) == 1, "upper of 6");
	CHECK(ap_upper_bound(NULL, 0, sizeof(*e), 0, 6) == 0, "empty");
	return failures ? 1 : 0;
}
