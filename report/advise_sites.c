/* Allocation sites for the advisor: stacks grouped by their call site (or
 * each stack its own site), with readable names from the symbolizer. A
 * call site inside a system library is no place to pool: the site is the
 * program's own frame that called into the library. */
#include <stdlib.h>
#include <string.h>

#include "ap_advise.h"
#include "ap_hash.h"
#include "ap_symbolize.h"


/* A system library: a module of the dynamic loader, or one under a system
 * library directory (libc, libstdc++, libm, libz, ...), that is not the
 * program itself. The program cannot put a pool inside one; it can at
 * its own frame that calls it (or hand the library an allocator). */
static bool system_module(const struct ap_trace *t, const char *module)
{
	if (!module || (t->exe && !strcmp(module, t->exe)))
		return false;
	static const char *const dirs[] = { "/lib/", "/lib64/", "/lib32/", "/usr/lib/",
					    "/usr/lib64/", "/usr/lib32/", "/usr/libexec/" };
	for (size_t i = 0; i < AP_ARRAY_SIZE(dirs); i++)
		if (!strncmp(module, dirs[i], strlen(dirs[i])))
			return true;
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld.so", 5);
}

static void frame_name(struct ap_buf *b, const struct ap_frame *f)
{
	ap_buf_addstr(b, f->func);
	if (f->file) {
		const char *base = strrchr(f->file, '/');
		ap_buf_addf(b, " %s:%d", base ? base + 1 : f->file, f->line);
	}
}

/* A template's arguments right after the function's short name in its
 * full one: "<double>" of "make" in "double* make<double>(int)". Returns
 * their length (from *at), 0 when `full` has none there. */
static size_t template_args(const char *full, const char *func, const char **at)
{
	size_t n = strlen(func);
	for (const char *p = strstr(full, func); p; p = strstr(p + 1, func)) {
		if (p[n] != '<' || (p > full && p[-1] != ' ' && p[-1] != ':' && p[-1] != '*' &&
				    p[-1] != '&'))
			continue;
		int depth = 0;
		for (const char *q = p + n; *q; q++) {
			depth += *q == '<' ? 1 : *q == '>' ? -1 : 0;
			if (!depth) {
				*at = p + n;
				return (size_t)(q + 1 - (p + n));
			}
		}
	}
	return 0;
}

/* Sites of one name (two instances of a template at one line, overloads
 * of one name at one line: two pools, two types) are named apart: the
 * function with its template arguments, or else its full name. With
 * --site=stack (no full names), stacks alike in the frames a name shows
 * (the site and three callers: two calls at one line, or paths apart
 * inside the allocator) were two sites of one name, one "see" the other,
 * itself by name (mt.cpp's two std::string appends at one line): they
 * are named apart by their order, "(stack 2 of 2)". */
static void names_apart(struct ap_site_map *m, char **full, bool by_stack)
{
	for (int pass = 0; pass < (by_stack ? 3 : 2); pass++) {
		struct ap_intern names = { 0 };
		uint32_t *count = ap_xcalloc(m->nsites ? m->nsites : 1, sizeof(*count));
		uint32_t *seen = ap_xcalloc(m->nsites ? m->nsites : 1, sizeof(*seen));
		uint32_t *of = ap_xmalloc((m->nsites ? m->nsites : 1) * sizeof(*of));
		for (size_t s = 0; s < m->nsites; s++)
			count[of[s] = ap_intern_add(&names, m->name[s], strlen(m->name[s]), NULL)]++;
		struct ap_buf b = AP_BUF_INIT;
		for (size_t s = 0; s < m->nsites; s++) {
			if (pass == 2 && count[of[s]] >= 2) {
				ap_buf_reset(&b);
				ap_buf_addf(&b, "%s (stack %u of %u)", m->name[s], ++seen[of[s]],
					    count[of[s]]);
				free(m->name[s]);
				m->name[s] = ap_buf_detach(&b, NULL);
				continue;
			}
			if (pass == 2 || count[of[s]] < 2 || !full[s] || !strcmp(full[s], m->function[s]))
				continue;
			const char *at = NULL;
			size_t n = pass ? 0 : template_args(full[s], m->function[s], &at);
			if (!pass && !n)
				continue;
			ap_buf_reset(&b);
			if (n)
				ap_buf_addf(&b, "%s%.*s", m->function[s], (int)n, at);
			else
				ap_buf_addstr(&b, full[s]);
			/* the rest of the name as it was: " file:line (via f)" */
			ap_buf_addstr(&b, m->name[s] + strlen(m->function[s]));
			free(m->name[s]);
			m->name[s] = ap_buf_detach(&b, NULL);
		}
		ap_buf_release(&b);
		free(count);
		free(seen);
		free(of);
		ap_intern_release(&names);
	}
}

void ap_advise_sites(const struct ap_trace *t, struct ap_symbolizer *sym, bool by_stack,
		     struct ap_site_map *out)
{
	char **full = NULL;
	memset(out, 0, sizeof(*out));
	out->site_of_stack = ap_xmalloc((t->nstacks ? t->nstacks : 1) * sizeof(uint32_t));
	out->pc_of_stack = ap_xcalloc(t->nstacks ? t->nstacks : 1, sizeof(uint32_t));
	size_t alloc = 0;
	struct ap_intern keys = { 0 }; /* site i's key is number i */
	struct ap_frame *frames = NULL;
	size_t nframes = 0, frames_alloc = 0;
	struct ap_buf key = AP_BUF_INIT, name = AP_BUF_INIT;

	for (size_t id = 0; id < t->nstacks; id++) {
		out->site_of_stack[id] = UINT32_MAX;
		if (!t->stacks[id].depth)
			continue;
		size_t cs = ap_sym_stack(sym, &t->stacks[id], &frames, &nframes, &frames_alloc);
		if (cs >= nframes)
			continue;
		/* Out of system libraries to the program's frame that called
		 * them, if there is one; `via` is the library function it
		 * called (the outermost frame in the library). */
		const char *via = NULL;
		size_t pc = cs;
		while (pc < nframes && !frames[pc].truncated && system_module(t, frames[pc].module))
			pc++;
		if (pc > cs && pc < nframes && !frames[pc].truncated) {
			via = frames[pc - 1].func;
			/* glibc's internal alias of what the program called:
			 * "__GI__IO_fputs" is fputs's, "__GI_setlocale"
			 * setlocale's (as the symbolizer reads it, alloc_names) */
			if (!strncmp(via, "__GI_", 5) && via[5])
				via += 5;
			cs = pc;
		}
		const struct ap_frame *f = &frames[cs];
		ap_buf_reset(&key);
		ap_buf_reset(&name);
		frame_name(&name, f);
		if (via)
			ap_buf_addf(&name, " (via %s)", via);
		if (by_stack) {
			for (size_t j = cs + 1; j < nframes && j < cs + 4; j++) {
				ap_buf_addstr(&name, " < ");
				ap_buf_addstr(&name, frames[j].func);
			}
			if (nframes > cs + 4)
				ap_buf_addstr(&name, " < ...");
			ap_buf_addf(&key, "#%zu", id);
		} else {
			/* by the whole name: two instances of a template at
			 * one line are two pools (two types), under one name
			 * unless --full-names */
			ap_buf_addf(&key, "%s\t%s\t%d\t%s", f->full ? f->full : f->func,
				    f->file ? f->file : "", f->line, via ? via : "");
		}
		bool added;
		uint32_t site = ap_intern_add(&keys, key.buf, key.len, &added);
		if (added) {
			size_t s = out->nsites++;
			if (s + 1 > alloc) {
				alloc = alloc ? alloc * 2 : 16;
				out->name = ap_xrealloc(out->name, alloc * sizeof(*out->name));
				out->function = ap_xrealloc(out->function, alloc * sizeof(*out->function));
				out->file = ap_xrealloc(out->file, alloc * sizeof(*out->file));
				out->line = ap_xrealloc(out->line, alloc * sizeof(*out->line));
				out->via = ap_xrealloc(out->via, alloc * sizeof(*out->via));
				out->unsym_module = ap_xrealloc(out->unsym_module,
								alloc * sizeof(*out->unsym_module));
				full = ap_xrealloc(full, alloc * sizeof(*full));
			}
			full[s] = f->full && !by_stack ? ap_xstrdup(f->full) : NULL;
			out->name[s] = ap_xstrdup(name.buf);
			out->function[s] = ap_xstrdup(f->func);
			out->file[s] = f->file ? ap_xstrdup(f->file) : NULL;
			out->line[s] = f->line;
			out->via[s] = via ? ap_xstrdup(via) : NULL;
			out->unsym_module[s] = f->unsymbolized && !f->module_unusable && f->module
						       ? ap_xstrdup(f->module)
						       : NULL;
		}
		out->site_of_stack[id] = site;
		/* a PC's frames end with its real function's (not inlined) */
		for (size_t j = 0; j < cs; j++)
			out->pc_of_stack[id] += !frames[j].inlined;
	}
	ap_intern_release(&keys);
	names_apart(out, full, by_stack);
	for (size_t s = 0; s < out->nsites; s++)
		free(full[s]);
	free(full);
	free(frames);
	ap_buf_release(&key);
	ap_buf_release(&name);
}
