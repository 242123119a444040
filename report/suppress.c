/* Leak suppressions (ap_report.h, ap_suppress_*): LeakSanitizer's and
 * heaptrack's "leak:PATTERN" files, and the built-in rule for the memory
 * the C++ runtime keeps by design, applied to the in-use values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_regex.h"
#include "ap_report.h"

struct ap_suppressions {
	bool builtin;
	struct ap_regex **re; /* one per leak: line of the file */
	char **pattern;	      /* as written, for the note */
	size_t n, alloc;
};

/* A pattern of LeakSanitizer's syntax as a regex: '*' is any text, a
 * leading '^' and a trailing '$' anchor, anything else is literal and
 * matched anywhere (LSan's TemplateMatch). */
static void glob_regex(const char *p, struct ap_buf *out)
{
	size_t n = strlen(p);
	size_t i = 0;
	if (n && p[0] == '^') {
		ap_buf_addstr(out, "^");
		i = 1;
	}
	bool end = n > i && p[n - 1] == '$';
	if (end)
		n--;
	for (; i < n; i++) {
		if (p[i] == '*')
			ap_buf_addstr(out, ".*");
		else if (strchr("\\.+?()|[]{}^$", p[i]))
			ap_buf_addf(out, "\\%c", p[i]);
		else
			ap_buf_add(out, p + i, 1);
	}
	if (end)
		ap_buf_addstr(out, "$");
}

static int add_line(struct ap_suppressions *s, const char *path, unsigned lineno, char *line,
		    struct ap_error *err)
{
	size_t len = strlen(line);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' ||
		       line[len - 1] == '\t'))
		line[--len] = 0;
	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line || *line == '#')
		return 0;
	if (strncmp(line, "leak:", 5) || !line[5])
		return ap_error_set(err, "%s:%u: not a suppression 'leak:PATTERN': '%s'", path,
				    lineno, line);
	struct ap_buf re = AP_BUF_INIT;
	glob_regex(line + 5, &re);
	struct ap_regex *r = ap_regex_new(re.buf, path, err);
	ap_buf_release(&re);
	if (!r)
		return -1;
	AP_ALLOC_GROW(s->re, s->n + 1, s->alloc);
	s->pattern = ap_xrealloc(s->pattern, s->alloc * sizeof(*s->pattern));
	s->re[s->n] = r;
	s->pattern[s->n++] = ap_xstrdup(line + 5);
	return 0;
}

struct ap_suppressions *ap_suppress_new(const char *path, bool builtin, struct ap_error *err)
{
	struct ap_suppressions *s = ap_xcalloc(1, sizeof(*s));
	s->builtin = builtin;
	if (!path)
		return s;
	FILE *f = fopen(path, "r");
	if (!f) {
		ap_error_set(err, "%s: %s", path, strerror(errno));
		ap_suppress_free(s);
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0;
	while (!rc && getline(&line, &cap, f) >= 0)
		rc = add_line(s, path, ++lineno, line, err);
	if (!rc && ferror(f))
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
	free(line);
	fclose(f);
	if (rc) {
		ap_suppress_free(s);
		return NULL;
	}
	return s;
}

void ap_suppress_free(struct ap_suppressions *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		ap_regex_free(s->re[i]);
		free(s->pattern[i]);
	}
	free(s->re);
	free(s->pattern);
	free(s);
}

static bool module_is(const char *module, const char *base)
{
	const char *b = module ? strrchr(module, '/') : NULL;
	b = b ? b + 1 : module;
	return b && !strncmp(b, base, strlen(base));
}

/* The built-in rule: memory the C and C++ runtimes keep by design, which
 * valgrind's and heaptrack's leak reports leave out too (valgrind runs
 * the runtimes' freeres hooks at exit). A call site in the C++ runtime's
 * own code (libstdc++.so: its emergency exception pool, allocated before
 * main; iostream and locale initialisation): a user's call site is never
 * there, std:: frames being allocator frames, so the site is below them.
 * And glibc's stdio buffers (_IO_file_doallocate: stdout's, kept until
 * exit). */
static bool builtin_match(const struct ap_frame *site)
{
	const char *f = site->func;
	if (!strncmp(f, "__GI_", 5))
		f += 5;
	return module_is(site->module, "libstdc++.so") || !strcmp(f, "_IO_file_doallocate");
}

/* A file's rule: PATTERN found in the function (short or whole name),
 * the module or the source file of a frame from the call site outwards,
 * as LeakSanitizer matches any frame of a leak's stack. */
static bool frame_match(const struct ap_regex *re, const struct ap_frame *f)
{
	return ap_regex_match(re, f->func) || (f->full && ap_regex_match(re, f->full)) ||
	       (f->module && ap_regex_match(re, f->module)) ||
	       (f->file && ap_regex_match(re, f->file));
}

int ap_suppress_stack(const struct ap_suppressions *s, const struct ap_frame *fr, size_t n,
		      size_t site)
{
	if (site >= n || fr[site].allocator)
		return -1;
	if (s->builtin && builtin_match(&fr[site]))
		return (int)s->n;
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = site; k < n; k++)
			if (frame_match(s->re[i], &fr[k]))
				return (int)i;
	return -1;
}

void ap_suppress_values(const struct ap_suppressions *s, const struct ap_trace *t,
			struct ap_symbolizer *sym, struct ap_stack_values *values,
			struct ap_suppressed *out)
{
	memset(out, 0, sizeof(*out));
	struct ap_frame *frames = NULL;
	size_t nframes = 0, aframes = 0;
	for (size_t id = 1; id < t->nstacks; id++) {
		struct ap_stack_values *v = &values[id];
		if (v->v[AP_SI_INUSE_OBJECTS] == 0 && v->v[AP_SI_INUSE_SPACE] == 0)
			continue;
		size_t site = ap_sym_stack(sym, &t->stacks[id], &frames, &nframes, &aframes);
		int rule = ap_suppress_stack(s, frames, nframes, site);
		if (rule < 0)
			continue;
		bool builtin = (size_t)rule == s->n;
		out->objects += v->v[AP_SI_INUSE_OBJECTS];
		out->bytes += v->v[AP_SI_INUSE_SPACE];
		if (builtin)
			out->builtin_bytes += v->v[AP_SI_INUSE_SPACE];
		v->v[AP_SI_INUSE_OBJECTS] = 0;
		v->v[AP_SI_INUSE_SPACE] = 0;
	}
	free(frames);
}
