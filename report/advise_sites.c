/* Allocation sites for the advisor: stacks grouped by their call site (or
 * each stack its own site), with readable names from the symbolizer. A
 * call site inside a system library is no place to pool: the site is the
 * program's own frame that called into the library. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ap_advise.h"
#include "ap_hash.h"
#include "ap_symbolize.h"


/* The system library directories: a module under one is the system's
 * (libc, libstdc++, libz, ...) unless it is the program's own (below). */
static const char *const system_dirs[] = { "/lib/", "/lib64/", "/lib32/", "/usr/lib/",
					   "/usr/lib64/", "/usr/lib32/", "/usr/libexec/" };

/* The part of `path` under a system library directory, past a multiarch
 * one: "llvm-14/bin/clang" of /usr/lib/llvm-14/bin/clang, "libz.so.1" of
 * /usr/lib/x86_64-linux-gnu/libz.so.1; NULL when it is under none. */
static const char *under_system_dir(const char *path)
{
	for (size_t i = 0; i < AP_ARRAY_SIZE(system_dirs); i++) {
		size_t n = strlen(system_dirs[i]);
		if (strncmp(path, system_dirs[i], n))
			continue;
		const char *rest = path + n, *slash = strchr(rest, '/');
		if (slash && memmem(rest, (size_t)(slash - rest), "-linux-", 7))
			rest = slash + 1;
		return rest;
	}
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *base = strrchr(path, '/');
	return base ? base + 1 : path;
}

/* Whether one name is the other, or the other followed by what is not a
 * letter: "clang" and "clang-cpp", "python3" and "python3.11", "llvm-14"
 * and "LLVM-14" (case aside). Names shorter than 3 match none ("c", "m",
 * "z"). */
static bool named_after(const char *a, size_t na, const char *b, size_t nb)
{
	size_t n = na < nb ? na : nb;
	if (n < 3 || strncasecmp(a, b, n))
		return false;
	char next = na == nb ? 0 : (na > nb ? a : b)[n];
	return !((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z'));
}

/* The C and C++ runtime and the loader: no program's own, wherever they
 * are and whatever the program is called (by the name before ".so"). */
static bool runtime_library(const char *base)
{
	static const char *const names[] = { "libc", "libm", "libmvec", "libstdc++", "libgcc_s",
					      "libpthread", "libdl", "librt", "libresolv", "libutil",
					      "libanl", "libatomic", "libcrypt", "libnsl" };
	if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld.so", 5) ||
	    !strncmp(base, "libnss_", 7))
		return true;
	const char *so = strstr(base, ".so");
	for (size_t i = 0; so && i < AP_ARRAY_SIZE(names); i++)
		if ((size_t)(so - base) == strlen(names[i]) && !strncmp(base, names[i], (size_t)(so - base)))
			return true;
	return false;
}

/* What makes a library under a system directory a program's own: its
 * name, and the install tree it has to itself, if any: the program's
 * directory, or the one above it when that is a bin, sbin or libexec,
 * when it is below a system directory and not one (/usr/lib/llvm-14/ of
 * /usr/lib/llvm-14/bin/clang, /usr/lib/firefox/ of
 * /usr/lib/firefox/firefox; none for /usr/bin/git or a program directly
 * in /usr/libexec/). */
struct own_prog {
	const char *name, *tree, *tree_name; /* "clang", "/usr/lib/llvm-14/", "llvm-14" */
	size_t nname, ntree, ntree_name;
};

static void own_prog_of(const char *exe, struct own_prog *p)
{
	memset(p, 0, sizeof(*p));
	p->name = base_name(exe);
	p->nname = strlen(p->name);
	const char *rest = under_system_dir(exe);
	if (!rest || p->name - 1 <= rest)
		return;
	const char *end = p->name - 1, *dir = end; /* the directory's name: [dir, end) */
	while (dir > rest && dir[-1] != '/')
		dir--;
	size_t nd = (size_t)(end - dir);
	if ((nd == 3 && !strncmp(dir, "bin", 3)) || (nd == 4 && !strncmp(dir, "sbin", 4)) ||
	    (nd == 7 && !strncmp(dir, "libexec", 7))) {
		if ((end = dir - 1) <= rest)
			return;
		for (dir = end; dir > rest && dir[-1] != '/'; dir--)
			;
	}
	p->tree = exe;
	p->ntree = (size_t)(end + 1 - exe);
	p->tree_name = dir;
	p->ntree_name = (size_t)(end - dir);
}

/* The programs of the run (a whole run's every process's). */
struct own_progs {
	struct own_prog *p;
	size_t n;
};

static void own_progs_init(struct own_progs *o, const struct ap_trace *t)
{
	o->p = ap_xcalloc(t->nprocs + 1, sizeof(*o->p));
	o->n = 0;
	for (size_t i = 0; i <= t->nprocs; i++) {
		const char *exe = i ? t->procs[i - 1].exe : t->exe;
		bool seen = !exe;
		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(exe, k ? t->procs[k - 1].exe : t->exe);
		if (!seen)
			own_prog_of(exe, &o->p[o->n++]);
	}
}

/* A system library: a module of the dynamic loader, or one under a system
 * library directory (libc, libstdc++, libm, libz, ...), that is not one
 * of the run's programs or a program's own library. The program cannot
 * put a pool inside one; it can at its own frame that calls it (or hand
 * the library an allocator). A program's own library, one that a user of
 * the program wants the frames of (clang's code is in libclang-cpp.so.14
 * and libLLVM-14.so.1, sqlite3's in libsqlite3.so.0), is one
 *   - installed in the program's own install tree
 *     (/usr/lib/llvm-14/lib/libclang-cpp.so.14 of /usr/lib/llvm-14/bin/clang),
 *   - or named after the program or its install tree, as lib<name>.so
 *     (libsqlite3.so.0 of sqlite3, libclang-cpp.so.14 of clang,
 *     libpython3.11.so of python3.11, libLLVM-14.so.1 of
 *     /usr/lib/llvm-14/) or as the directory it is in
 *     (/usr/lib/python3/dist-packages/... of python3.11),
 * and is not the C or C++ runtime or the loader (runtime_library), which
 * stay the system's. */
static bool system_module(const struct ap_trace *t, const struct own_progs *o,
			  const char *module)
{
	if (!module)
		return false;
	for (size_t i = 0; i <= t->nprocs; i++) {
		const char *exe = i ? t->procs[i - 1].exe : t->exe;
		if (exe && !strcmp(module, exe))
			return false;
	}
	const char *base = base_name(module);
	if (runtime_library(base))
		return true;
	const char *rest = under_system_dir(module);
	if (!rest)
		return false;
	const char *stem = NULL, *so = strstr(base, ".so");
	size_t nstem = 0;
	if (!strncmp(base, "lib", 3) && so && so > base + 3) {
		stem = base + 3;
		nstem = (size_t)(so - stem);
	}
	const char *slash = strchr(rest, '/');
	size_t ntop = slash ? (size_t)(slash - rest) : 0; /* the directory it is in, under the system's */
	for (size_t i = 0; i < o->n; i++) {
		const struct own_prog *p = &o->p[i];
		if (p->tree && !strncmp(module, p->tree, p->ntree))
			return false;
		const char *word[2] = { p->name, p->tree_name };
		size_t nword[2] = { p->nname, p->ntree_name };
		for (int w = 0; w < 2; w++)
			if (word[w] && ((stem && named_after(stem, nstem, word[w], nword[w])) ||
					(ntop && named_after(rest, ntop, word[w], nword[w]))))
				return false;
	}
	return true;
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
	struct own_progs own;
	own_progs_init(&own, t);

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
		while (pc < nframes && !frames[pc].truncated &&
		       system_module(t, &own, frames[pc].module))
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
	free(own.p);
	ap_buf_release(&key);
	ap_buf_release(&name);
}
