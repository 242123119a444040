/* The user's regexes, compiled with PCRE2 (see ap_regex.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "ap_regex.h"

struct ap_regex {
	pcre2_code *code;
	/* One match data per regex: matching is not thread-safe, nor need
	 * it be (the report side is single-threaded). */
	pcre2_match_data *md;
};

struct ap_regex *ap_regex_new(const char *pattern, const char *what, struct ap_error *err)
{
	int code;
	PCRE2_SIZE off;
	/* Names are UTF-8 as a rule, but a symbol table may hold any bytes:
	 * MATCH_INVALID_UTF makes those unmatchable instead of an error. */
	pcre2_code *c = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
	if (!c) {
		PCRE2_UCHAR why[256];
		pcre2_get_error_message(code, why, sizeof(why));
		ap_error_set(err, "%s: bad regex '%s': %s at offset %zu", what, pattern,
			     (const char *)why, (size_t)off);
		return NULL;
	}
	/* JIT is a speed-up only; without it matching is interpreted. */
	pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
	struct ap_regex *re = ap_xcalloc(1, sizeof(*re));
	re->code = c;
	re->md = pcre2_match_data_create_from_pattern(c, NULL);
	if (!re->md) {
		pcre2_code_free(c);
		free(re);
		ap_error_set(err, "%s: out of memory", what);
		return NULL;
	}
	return re;
}

bool ap_regex_match(const struct ap_regex *re, const char *s)
{
	return pcre2_match(re->code, (PCRE2_SPTR)s, strlen(s), 0, 0, re->md, NULL) >= 0;
}

void ap_regex_free(struct ap_regex *re)
{
	if (!re)
		return;
	pcre2_match_data_free(re->md);
	pcre2_code_free(re->code);
	free(re);
}
