/* The user's regexes (--focus, --ignore, --show, --hide, --drop-frames,
 * list's REGEX) in pprof's dialect. pprof compiles them with Go's regexp
 * (RE2 syntax); PCRE2 accepts what users type of it: (?i), \d, \pL,
 * non-greedy repeats, (?:...), (?P<name>...). Matching is unanchored,
 * as Go's MatchString. */
#ifndef AP_REGEX_H
#define AP_REGEX_H

#include <stdbool.h>

#include "ap_util.h"

struct ap_regex;

/* Compiles `pattern`. Returns NULL with err set to "<what>: bad regex
 * '<pattern>': <PCRE2's message> at offset N" on a bad pattern. */
struct ap_regex *ap_regex_new(const char *pattern, const char *what, struct ap_error *err);

/* true when `re` matches somewhere in `s`. */
bool ap_regex_match(const struct ap_regex *re, const char *s);

/* Accepts NULL. */
void ap_regex_free(struct ap_regex *re);

#endif
