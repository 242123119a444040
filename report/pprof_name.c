/* The names pprof shows for C++ functions, by the rules of Go's
 * demangler (internal/symbolizer: demangle.Filter with NoParams and
 * NoTemplateParams): the export's Function.name and the views' nodes. */
#include <stdbool.h>
#include <string.h>

#include "ap_report.h"

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* The operator tokens after "operator", longest first. */
static const char *const op_tokens[] = {
	"<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "==", "!=", "&&",
	"||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->", "<", ">",
	"+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "=", ",",
};

void ap_export_pprof_name(const char *func, const char *mangled, struct ap_buf *out)
{
	/* Only names we demangled: C names, module+0xoff and names already
	 * short stay as they are. */
	if (!mangled || strncmp(mangled, "_Z", 2) || !strcmp(func, mangled)) {
		ap_buf_addstr(out, func);
		return;
	}
	size_t start = out->len; /* where the name proper begins (after a return type) */
	size_t base = out->len;
	int angle = 0, paren = 0;
	const char *s = func;
	while (*s) {
		if (!angle && !paren && starts(s, "(anonymous namespace)")) {
			ap_buf_addstr(out, "(anonymous namespace)");
			s += strlen("(anonymous namespace)");
			continue;
		}
		if (!angle && !paren && *s == '{') {
			/* {lambda(int)#1}, {unnamed type#1}: one name, verbatim */
			const char *e = strchr(s, '}');
			size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
			ap_buf_add(out, s, n);
			s += n;
			continue;
		}
		if (!angle && !paren && starts(s, "operator") &&
		    (s == func || s[-1] == ':' || s[-1] == ' ')) {
			ap_buf_addstr(out, "operator");
			s += strlen("operator");
			size_t i;
			for (i = 0; i < AP_ARRAY_SIZE(op_tokens); i++)
				if (starts(s, op_tokens[i]))
					break;
			if (i < AP_ARRAY_SIZE(op_tokens)) {
				ap_buf_addstr(out, op_tokens[i]);
				s += strlen(op_tokens[i]);
			} else if (*s == ' ') {
				/* operator new, operator delete[], conversions:
				 * the word (and a []) is part of the name */
				ap_buf_addstr(out, " ");
				s++;
				while (*s && *s != '(' && *s != '<')
					ap_buf_add(out, s++, 1);
			}
			continue;
		}
		char c = *s++;
		if (c == '<' && !paren)
			angle++;
		else if (c == '>' && !paren && angle)
			angle--;
		else if (c == '(' && !angle)
			paren++;
		else if (c == ')' && !angle && paren)
			paren--;
		else if (!angle && !paren) {
			/* A space at the top level ends a return type, unless
			 * what follows is a qualifier of the function
			 * (" const", " &&") or the name is over (clone
			 * suffix). */
			if (c == ' ' && (starts(s, "const") || starts(s, "volatile") || *s == '&' ||
					 starts(s, "[clone") || starts(s, "noexcept")))
				break;
			/* "operator<< <T>": the name's template arguments */
			if (c == ' ' && *s == '<')
				continue;
			if (c == ' ') {
				start = out->len + 1;
				ap_buf_addstr(out, " ");
				continue;
			}
			ap_buf_add(out, &c, 1);
		}
	}
	/* drop the return type */
	if (start > base) {
		memmove(out->buf + base, out->buf + start, out->len - start);
		out->len -= start - base;
		out->buf[out->len] = 0;
	}
}

