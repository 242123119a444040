/* Short function names (ap_symbolize.h, ap_sym_short_name): for C++ the
 * names pprof shows, by the rules of Go's demangler (internal/symbolizer:
 * demangle.Filter with NoParams and NoTemplateParams); for Rust the path
 * without generic arguments. Every view and export names frames so. */
#include <stdbool.h>
#include <string.h>

#include "ap_symbolize.h"

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

/* The index of the '>' that closes the '<' at s[0], or strlen(s) when
 * none does ("->" in a fn type is no bracket). */
static size_t closing_angle(const char *s)
{
	int depth = 0;
	size_t i = 0;
	for (; s[i]; i++) {
		if (s[i] == '<')
			depth++;
		else if (s[i] == '>' && (i == 0 || s[i - 1] != '-') && --depth == 0)
			return i;
	}
	return i;
}

/* Rust: a demangled path (libiberty's legacy or v0 form) without generic
 * arguments ("Vec<u8>", "::<T>") and with an inherent impl's "<Type>::"
 * unwrapped, so that both manglings name a method alike:
 * "<app::store::Registry<T>>::add::<u8>" and "app::store::Registry::add"
 * are "app::store::Registry::add". A trait impl "<Type as Trait>::method"
 * keeps its brackets. */
static void rust_short(const char *s, size_t len, struct ap_buf *out)
{
	size_t i = 0;
	while (i < len) {
		if (s[i] != '<') {
			ap_buf_add(out, s + i, 1);
			i++;
			continue;
		}
		size_t close = closing_angle(s + i);
		if (i + close > len)
			close = len - i;
		char prev = i ? s[i - 1] : 0;
		if (prev && prev != '<' && prev != ' ' && prev != '(' && prev != ',' &&
		    prev != '&' && prev != '*' && prev != '[' && prev != ':') {
			/* generic arguments of the name before */
		} else if (prev == ':' && !strncmp(s + i, "<impl ", 6)) {
			/* a legacy path's "::<impl Trait for Type>": a name */
			ap_buf_addstr(out, "<");
			rust_short(s + i + 1, close ? close - 1 : 0, out);
			ap_buf_addstr(out, ">");
		} else if (prev == ':') {
			/* turbofish "::<T>": drop the "::" too */
			if (out->len >= 2 && out->buf[out->len - 1] == ':' &&
			    out->buf[out->len - 2] == ':') {
				out->len -= 2;
				out->buf[out->len] = 0;
			}
		} else {
			/* a qualified path: <Type> or <Type as Trait> */
			const char *inner = s + i + 1;
			size_t n = close ? close - 1 : 0;
			bool as = false;
			int depth = 0;
			for (size_t k = 0; k < n && !as; k++) {
				if (inner[k] == '<')
					depth++;
				else if (inner[k] == '>' && (k == 0 || inner[k - 1] != '-'))
					depth--;
				else if (!depth && !strncmp(inner + k, " as ", 4))
					as = true;
			}
			if (as)
				ap_buf_addstr(out, "<");
			rust_short(inner, n, out);
			if (as)
				ap_buf_addstr(out, ">");
		}
		i += close + 1;
	}
}

void ap_sym_short_name(const char *func, enum ap_sym_lang lang, struct ap_buf *out)
{
	if (lang == AP_SYM_RUST) {
		rust_short(func, strlen(func), out);
		return;
	}
	/* Only names we demangled: C names, module+0xoff and names already
	 * short stay as they are. */
	if (lang != AP_SYM_CXX) {
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

/* pprof's removeMatching (internal/symbolizer): the nested groups
 * open..close taken out of b from `from` on; a stray close leaves the
 * rest as it is. */
static void remove_matching(struct ap_buf *b, size_t from, char open, char close)
{
	int nesting = 0;
	size_t first = 0;
	for (size_t i = from; i < b->len; i++) {
		if (b->buf[i] == open) {
			if (++nesting == 1)
				first = i;
		} else if (b->buf[i] == close) {
			if (--nesting < 0)
				return;
			if (nesting == 0) {
				memmove(b->buf + first, b->buf + i + 1, b->len - i - 1);
				b->len -= i + 1 - first;
				b->buf[b->len] = 0;
				i = first - 1;
			}
		}
	}
}

bool ap_sym_pprof_plain(const char *name, struct ap_buf *out)
{
	size_t base = out->len;
	ap_buf_addstr(out, name);
	/* the shape of DWARF's name of a template's instance, "name<args>":
	 * an identifier, then template arguments to the end (pprof's
	 * looksLikeDemangledCPlusPlus would take any name with <>[] or ::,
	 * a C name made with an asm label too, which every view keeps) */
	size_t n = strlen(name), id = strspn(name, "abcdefghijklmnopqrstuvwxyz"
					     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:~");
	if (!id || (name[0] >= '0' && name[0] <= '9') || name[id] != '<' || name[n - 1] != '>')
		return false;
	remove_matching(out, base, '(', ')');
	remove_matching(out, base, '<', '>');
	return strcmp(out->buf + base, name) != 0;
}
