/* Binary searches over an array sorted by a uint64_t key (an address, a
 * start): the mapping index (trace/mapindex.c), symbolize's function and
 * DWARF range tables, advise's pooled blocks. The key is the field at
 * key_off of each element, stride bytes apart; AP_UPPER_BOUND and
 * AP_LOWER_BOUND name it as a field of the array's elements. */
#ifndef AP_SEARCH_H
#define AP_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t ap_search_key(const void *base, size_t stride, size_t key_off, size_t i)
{
	uint64_t k;
	memcpy(&k, (const char *)base + i * stride + key_off, sizeof(k));
	return k;
}

/* The index of the first element whose key is greater than x (n if
 * none): the one before it, if any, is the last with a key <= x. */
static inline size_t ap_upper_bound(const void *base, size_t n, size_t stride, size_t key_off,
				    uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ap_search_key(base, stride, key_off, mid) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The index of the first element whose key is x or greater (n if none):
 * the first whose key is greater than x - 1. */
static inline size_t ap_lower_bound(const void *base, size_t n, size_t stride, size_t key_off,
				    uint64_t x)
{
	return x ? ap_upper_bound(base, n, stride, key_off, x - 1) : 0;
}

/* The key must be 8 bytes (a uint64_t or the like). */
#define AP_SEARCH_FIELD_(arr, field)                                                               \
	(sizeof(char[sizeof((arr)->field) == sizeof(uint64_t) ? 1 : -1]) * 0 +                     \
	 offsetof(__typeof__(*(arr)), field))

/* ap_upper_bound / ap_lower_bound over arr[0, n), keyed by arr[i].field. */
#define AP_UPPER_BOUND(arr, n, field, x)                                                           \
	ap_upper_bound((arr), (n), sizeof(*(arr)), AP_SEARCH_FIELD_(arr, field), (x))
#define AP_LOWER_BOUND(arr, n, field, x)                                                           \
	ap_lower_bound((arr), (n), sizeof(*(arr)), AP_SEARCH_FIELD_(arr, field), (x))

#endif
