/* Allocation sites for the advisor: stacks grouped by their call site (or
 * each stack its own site), with readable names from the symbolizer. A
 * call site inside a system library is no place to pool: the site is the
 * program's own frame that called into the library. */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_advise.h"
#include "ap_hash.h"
#include "search.h"
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

/* The function a program's call into a library called, by the name the
 * program imports it by: the call's target is a PLT entry (or the call
 * jumps through a GOT slot, -fno-plt), whose slot a relocation names. The
 * library's own frame can be another function: glibc's opendir tail-calls
 * opendir_tail, setenv __add_to_environ, fopen __fopen_internal, and its
 * debug information names printf __printf. The module files are read
 * where the trace names them, if their build-id is the recorded one. */
struct import_file {
	const char *path; /* the trace's */
	const uint8_t *data; /* the file mapped; NULL: not readable or not this module's */
	size_t size;
	struct import_slot {
		uint64_t slot;
		const char *name;
	} *slots; /* sorted by slot */
	size_t nslots;
	/* the functions its dynamic symbol table exports (read_exports) */
	struct export_sym {
		uint64_t value, size;
		const char *name;
	} *exports; /* sorted by value */
	size_t nexports;
	bool exports_read;
};

struct imports {
	struct import_file *f;
	size_t n;
};

static const Elf64_Ehdr *elf_header(const struct import_file *f)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->data;
	if (f->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > f->size ||
	    (f->size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return NULL;
	return eh;
}

/* len bytes of the file at virtual address vaddr, or NULL. */
static const uint8_t *at_vaddr(const struct import_file *f, uint64_t vaddr, size_t len)
{
	const Elf64_Ehdr *eh = elf_header(f);
	if (!eh)
		return NULL;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->data + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
		    vaddr - ph[i].p_vaddr <= ph[i].p_filesz && ph[i].p_filesz - (vaddr - ph[i].p_vaddr) >= len &&
		    ph[i].p_offset <= f->size && vaddr - ph[i].p_vaddr + len <= f->size - ph[i].p_offset)
			return f->data + ph[i].p_offset + (vaddr - ph[i].p_vaddr);
	return NULL;
}

/* Whether the file's build-id is the one recorded (none recorded: yes). */
static bool build_id_is(const struct import_file *f, const struct ap_mapping *m)
{
	const Elf64_Ehdr *eh = elf_header(f);
	if (!eh)
		return false;
	if (!m || !m->build_id_len)
		return true;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->data + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_offset > f->size || ph[i].p_filesz > f->size - ph[i].p_offset)
			continue;
		const uint8_t *p = f->data + ph[i].p_offset, *end = p + ph[i].p_filesz;
		while (end - p >= (ptrdiff_t)sizeof(Elf64_Nhdr)) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
			size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
			if ((size_t)(end - p) - sizeof(*nh) < name + desc)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4))
				return nh->n_descsz == m->build_id_len &&
				       !memcmp(p + sizeof(*nh) + name, m->build_id, m->build_id_len);
			p += sizeof(*nh) + name + desc;
		}
	}
	return false;
}

static int slot_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct import_slot *)a)->slot, y = ((const struct import_slot *)b)->slot;
	return x < y ? -1 : x > y;
}

/* The file's section headers (*n of them), or NULL (*n 0). */
static const Elf64_Shdr *section_headers(const struct import_file *f, size_t *n)
{
	const Elf64_Ehdr *eh = elf_header(f);
	*n = 0;
	if (!eh || eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > f->size ||
	    (f->size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
		return NULL;
	*n = eh->e_shnum;
	return (const Elf64_Shdr *)(f->data + eh->e_shoff);
}

/* Whether the section's contents lie in the file. */
static bool in_file(const struct import_file *f, const Elf64_Shdr *h)
{
	return h->sh_type != SHT_NOBITS && h->sh_offset <= f->size && h->sh_size <= f->size - h->sh_offset;
}

/* The GOT slots the file's relocations name a function for. */
static void read_slots(struct import_file *f)
{
	size_t nsh;
	const Elf64_Shdr *sh = section_headers(f, &nsh);
	size_t alloc = 0;
	for (size_t i = 0; i < nsh; i++) {
		if (sh[i].sh_type != SHT_RELA || sh[i].sh_entsize != sizeof(Elf64_Rela) || !in_file(f, &sh[i]) ||
		    sh[i].sh_link >= nsh)
			continue;
		const Elf64_Shdr *sym = &sh[sh[i].sh_link];
		if (sym->sh_type != SHT_DYNSYM || sym->sh_entsize != sizeof(Elf64_Sym) || !in_file(f, sym) ||
		    sym->sh_link >= nsh || !in_file(f, &sh[sym->sh_link]))
			continue;
		const Elf64_Rela *r = (const Elf64_Rela *)(f->data + sh[i].sh_offset);
		const Elf64_Sym *syms = (const Elf64_Sym *)(f->data + sym->sh_offset);
		const char *str = (const char *)f->data + sh[sym->sh_link].sh_offset;
		size_t nsyms = sym->sh_size / sizeof(*syms), nstr = sh[sym->sh_link].sh_size;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*r); k++) {
			uint32_t type = ELF64_R_TYPE(r[k].r_info);
			size_t si = ELF64_R_SYM(r[k].r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !si || si >= nsyms ||
			    syms[si].st_name >= nstr || !memchr(str + syms[si].st_name, 0, nstr - syms[si].st_name))
				continue;
			if (f->nslots == alloc) {
				alloc = alloc ? alloc * 2 : 64;
				f->slots = ap_xrealloc(f->slots, alloc * sizeof(*f->slots));
			}
			f->slots[f->nslots++] = (struct import_slot){ r[k].r_offset, str + syms[si].st_name };
		}
	}
	qsort(f->slots, f->nslots, sizeof(*f->slots), slot_cmp);
}

static struct import_file *import_file(struct imports *im, const struct ap_trace *t, const char *path)
{
	for (size_t i = 0; i < im->n; i++)
		if (im->f[i].path == path || !strcmp(im->f[i].path, path))
			return &im->f[i];
	im->f = ap_xrealloc(im->f, (im->n + 1) * sizeof(*im->f));
	struct import_file *f = &im->f[im->n++];
	memset(f, 0, sizeof(*f));
	f->path = path;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return f;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			f->data = p;
			f->size = (size_t)st.st_size;
		}
	}
	close(fd);
	const struct ap_mapping *m = NULL;
	for (size_t i = 0; i < t->nmaps && !m; i++)
		if (t->maps[i].path && !strcmp(t->maps[i].path, path))
			m = &t->maps[i];
	if (f->data && !build_id_is(f, m)) {
		munmap((void *)f->data, f->size);
		f->data = NULL;
	}
	if (f->data)
		read_slots(f);
	return f;
}

static void imports_release(struct imports *im)
{
	for (size_t i = 0; i < im->n; i++) {
		if (im->f[i].data)
			munmap((void *)im->f[i].data, im->f[i].size);
		free(im->f[i].slots);
		free(im->f[i].exports);
	}
	free(im->f);
}

static int export_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct export_sym *)a)->value, y = ((const struct export_sym *)b)->value;
	return x < y ? -1 : x > y;
}

/* The functions the file's dynamic symbol table defines (global or weak,
 * of a size). */
static void read_exports(struct import_file *f)
{
	f->exports_read = true;
	size_t nsh;
	const Elf64_Shdr *sh = section_headers(f, &nsh);
	size_t alloc = 0;
	for (size_t i = 0; i < nsh; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_entsize != sizeof(Elf64_Sym) || !in_file(f, &sh[i]) ||
		    sh[i].sh_link >= nsh || !in_file(f, &sh[sh[i].sh_link]))
			continue;
		const Elf64_Sym *syms = (const Elf64_Sym *)(f->data + sh[i].sh_offset);
		const char *str = (const char *)f->data + sh[sh[i].sh_link].sh_offset;
		size_t nsyms = sh[i].sh_size / sizeof(*syms), nstr = sh[sh[i].sh_link].sh_size;
		for (size_t k = 1; k < nsyms; k++) {
			const Elf64_Sym *y = &syms[k];
			unsigned type = ELF64_ST_TYPE(y->st_info), bind = ELF64_ST_BIND(y->st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || (bind != STB_GLOBAL && bind != STB_WEAK) ||
			    y->st_shndx == SHN_UNDEF || !y->st_size || y->st_name >= nstr ||
			    !memchr(str + y->st_name, 0, nstr - y->st_name))
				continue;
			if (f->nexports == alloc) {
				alloc = alloc ? alloc * 2 : 256;
				f->exports = ap_xrealloc(f->exports, alloc * sizeof(*f->exports));
			}
			f->exports[f->nexports++] = (struct export_sym){ y->st_value, y->st_size, str + y->st_name };
		}
	}
	qsort(f->exports, f->nexports, sizeof(*f->exports), export_cmp);
}

/* How far a name is from the one a program calls: its leading
 * underscores (glibc's printf is also _IO_printf, and its debug
 * information names it __printf). */
static size_t underscores(const char *name)
{
	return strspn(name, "_");
}

/* The name the library exports the function of frame `f` (its outermost
 * frame in the library: a return address) by, when the program's call
 * cannot say (its file removed or rebuilt since the recording): of the
 * exported names at the function's address, the one with the fewest
 * leading underscores, then the shortest. NULL: the file is not the
 * recorded one, or exports no function there (a static one that the
 * exported one tail-called). */
static const char *exported_name(struct imports *im, const struct ap_trace *t, const struct ap_frame *f)
{
	if (!f->module || !f->module_offset)
		return NULL;
	struct import_file *lib = import_file(im, t, f->module);
	if (!lib->data)
		return NULL;
	if (!lib->exports_read)
		read_exports(lib);
	uint64_t at = f->module_offset - 1; /* (the call, not what follows it) */
	const char *best = NULL;
	/* the symbols that start at or before it, nearest first */
	size_t lo = AP_UPPER_BOUND(lib->exports, lib->nexports, value, at);
	/* functions do not overlap: the one there starts at the nearest
	 * address (under all its names) */
	for (size_t i = lo; i-- > 0 && lib->exports[i].value == lib->exports[lo - 1].value;) {
		const struct export_sym *e = &lib->exports[i];
		if (at - e->value >= e->size)
			continue;
		size_t u = underscores(e->name), bu = best ? underscores(best) : 0;
		if (!best || u < bu || (u == bu && strlen(e->name) < strlen(best)))
			best = e->name;
	}
	return best;
}

static int32_t rd32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* The name the call that `caller` (a frame whose PC returns from it)
 * made imports its callee by, or NULL: not a call through the PLT or a
 * GOT slot, or the file is not there. */
static const char *called_import(struct imports *im, const struct ap_trace *t,
				 const struct ap_frame *caller)
{
	if (!caller->module || caller->module_offset < 6)
		return NULL;
	struct import_file *f = import_file(im, t, caller->module);
	uint64_t ret = caller->module_offset, slot;
	const uint8_t *p = f->data ? at_vaddr(f, ret - 6, 6) : NULL;
	if (!p)
		return NULL;
	if (p[0] == 0xff && p[1] == 0x15) { /* call *slot(%rip) */
		slot = ret + (uint64_t)(int64_t)rd32(p + 2);
	} else if (p[1] == 0xe8) { /* call rel32: a PLT entry, jmp *slot(%rip) */
		uint64_t target = ret + (uint64_t)(int64_t)rd32(p + 2);
		const uint8_t *q = at_vaddr(f, target, 16);
		if (!q)
			return NULL;
		size_t i = !memcmp(q, "\xf3\x0f\x1e\xfa", 4) ? 4 : 0; /* endbr64 */
		i += q[i] == 0xf2; /* bnd */
		if (q[i] != 0xff || q[i + 1] != 0x25)
			return NULL;
		slot = target + i + 6 + (uint64_t)(int64_t)rd32(q + i + 2);
	} else {
		return NULL;
	}
	struct import_slot key = { .slot = slot };
	const struct import_slot *s = f->nslots ? bsearch(&key, f->slots, f->nslots, sizeof(key), slot_cmp) : NULL;
	return s ? s->name : NULL;
}

/* The function a program's source calls, of the name it imports from
 * the C library: printf of __printf_chk (_FORTIFY_SOURCE), sscanf of
 * __isoc99_sscanf, fopen of fopen64 (_FILE_OFFSET_BITS=64; meson's
 * default). C++ and Rust names (mangled) are not: NULL. */
static const char *source_name(const char *name, const char *module, struct ap_buf *b)
{
	if (!name || !strncmp(name, "_Z", 2) || !strncmp(name, "_R", 2))
		return NULL;
	if (!module || strncmp(base_name(module), "libc.so", 7))
		return name;
	if (!strncmp(name, "__isoc99_", 9) || !strncmp(name, "__isoc23_", 9))
		return name + 9;
	size_t n = strlen(name), from = 0;
	if (n > 6 && !strncmp(name, "__", 2) && !strcmp(name + n - 4, "_chk")) {
		from = 2;
		n -= 4;
	}
	/* fopen64, readdir64_r: the 64 after a letter */
	size_t at = n >= 4 && !strncmp(name + n - 4, "64_r", 4) ? n - 4 : n - 2;
	bool lfs = at > from + 1 && at + 2 <= n && !strncmp(name + at, "64", 2) && name[at - 1] >= 'a' &&
		   name[at - 1] <= 'z';
	if (!from && !lfs)
		return name;
	ap_buf_reset(b);
	if (lfs)
		ap_buf_addf(b, "%.*s%.*s", (int)(at - from), name + from, (int)(n - at - 2), name + at + 2);
	else
		ap_buf_addf(b, "%.*s", (int)(n - from), name + from);
	return b->buf;
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

/* A source file of the system's headers: the C library's and the
 * compiler's (/usr/include, /usr/lib/gcc/<target>/<version>/include). */
static bool system_header(const char *file)
{
	return file && (!strncmp(file, "/usr/include/", 13) || !strncmp(file, "/usr/lib/gcc/", 13) ||
			!strncmp(file, "/usr/lib/llvm-", 14));
}

/* The last part of a function's name ("allocate" of
 * "std::__new_allocator<char>::allocate"). */
static const char *last_part(const char *f)
{
	const char *p = f, *q;
	while ((q = strstr(p, "::")))
		p = q + 2;
	return p;
}

/* Whether a frame between a site and the allocator only allocates for
 * whatever called it (an allocator's entry, a std::allocator's
 * allocate, Rust's alloc layers): not what tells a kind of block. */
static bool allocating_frame(const char *f)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memalign",
		"operator new", "operator new[]", "allocate", "_M_allocate", "allocate_in",
		"alloc", "alloc_impl", "exchange_malloc", "__rust_alloc", "__rust_realloc",
		"__rust_alloc_zeroed", "__rdl_alloc", "__rdl_realloc", "__rdl_alloc_zeroed",
		"finish_grow", "grow_amortized", "grow_exact",
	};
	const char *l = last_part(f);
	for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++)
		if (!strcmp(l, names[k]) || !strncmp(f, names[k], strlen(names[k])))
			return true;
	return false;
}

/* A stack's kind of block at its site (frames[cs] the site's frame):
 * the functions between the site and the allocator, by name, interned
 * in `callees`, which keeps first two names for the kind: the function
 * the site called (Rust's Vec::push and to_string), and the one
 * nearest the allocator that does more than allocate (where a line's
 * kinds called the same one: a vector's _M_realloc_insert and a
 * string's _M_create under emplace_back). */
static uint32_t kind_key(struct ap_intern *callees, const struct ap_frame *frames, size_t cs,
			 struct ap_buf *key)
{
	const char *near = cs > 0 && frames[cs - 1].func ? frames[cs - 1].func : "", *deep = near;
	for (size_t j = 0; j < cs; j++)
		if (frames[j].func && !allocating_frame(frames[j].func)) {
			deep = frames[j].func;
			break;
		}
	ap_buf_reset(key);
	ap_buf_addf(key, "%s\n%s", deep, near);
	for (size_t j = 0; j < cs; j++) {
		ap_buf_addstr(key, "\n");
		ap_buf_addstr(key, frames[j].func ? frames[j].func : "?");
	}
	bool made;
	return ap_intern_add(callees, key->buf, key->len, &made);
}

/* A site's kinds past its first, at most (the runner's MAX_KINDS). */
#define SITE_KINDS_MAX 32

/* A kind's name: its key's line `line` (kind_key: 0 the deep one, 1
 * what the site called). */
static char *kind_name(const char *key, int line)
{
	for (; line > 0 && strchr(key, '\n'); line--)
		key = strchr(key, '\n') + 1;
	const char *nl = strchr(key, '\n');
	size_t n = nl ? (size_t)(nl - key) : strlen(key);
	char *s = ap_xmalloc(n + 1);
	memcpy(s, key, n);
	s[n] = 0;
	return s;
}

/* The kinds of the sites' blocks (ap_site_map.kind_of_stack): a site's
 * stacks by the function its frame called (callee_of_stack, numbers of
 * callees' strings), its first kind numbered as the site, the others
 * from nsites on. */
static void site_kinds(struct ap_site_map *out, const uint32_t *callee_of_stack,
		       const struct ap_intern *callees, size_t nstacks)
{
	size_t n = out->nsites, alloc = n ? n : 1;
	out->kind_of_stack = ap_xmalloc((nstacks ? nstacks : 1) * sizeof(*out->kind_of_stack));
	out->site_of_kind = ap_xmalloc(alloc * sizeof(*out->site_of_kind));
	out->kind_callee = ap_xcalloc(alloc, sizeof(*out->kind_callee));
	uint32_t *first = ap_xmalloc(alloc * sizeof(*first));	/* site's first callee */
	uint8_t *more_of = ap_xcalloc(alloc, 1);		/* its other kinds so far */
	for (size_t s = 0; s < n; s++) {
		out->site_of_kind[s] = (uint32_t)s;
		first[s] = UINT32_MAX;
	}
	struct ap_u64map more;	/* site << 32 | callee -> a kind past the first */
	ap_u64map_init(&more, 16);
	for (size_t id = 0; id < nstacks; id++) {
		uint32_t s = out->site_of_stack[id], c = callee_of_stack[id];
		out->kind_of_stack[id] = s;
		if (s >= out->nsites)
			continue;
		if (first[s] == UINT32_MAX)
			first[s] = c;
		if (first[s] == c)
			continue;
		bool made;
		struct ap_u64map_slot *sl = ap_u64map_find(&more, (uint64_t)s << 32 | c);
		if (!sl && more_of[s] == SITE_KINDS_MAX)
			continue;	/* (the site's first kind's) */
		sl = ap_u64map_slot_of(&more, (uint64_t)s << 32 | c, &made);
		if (made) {
			more_of[s]++;
			if (n + 1 > alloc) {
				alloc *= 2;
				out->site_of_kind = ap_xrealloc(out->site_of_kind, alloc * sizeof(*out->site_of_kind));
				out->kind_callee = ap_xrealloc(out->kind_callee, alloc * sizeof(*out->kind_callee));
			}
			out->site_of_kind[n] = s;
			out->kind_callee[n] = ap_xstrdup(callees->str[c]);	/* (named below) */
			sl->val = (uint32_t)n++;
		}
		out->kind_of_stack[id] = sl->val;
	}
	for (size_t s = 0; s < out->nsites; s++)
		out->kind_callee[s] = ap_xstrdup(first[s] == UINT32_MAX ? "" : callees->str[first[s]]);
	/* Each kind by what its site called, and where another kind of
	 * the site called the same, by what that call did too ("emplace_back
	 * (_M_create)" beside "emplace_back (_M_realloc_insert)"). */
	/* (a site's kinds chained from it: the first is the site, its
	 * others a few; compared within the site only) */
	uint32_t *next = ap_xmalloc((n ? n : 1) * sizeof(*next)), *last = ap_xmalloc(
		(out->nsites ? out->nsites : 1) * sizeof(*last));
	for (size_t k = 0; k < n; k++)
		next[k] = UINT32_MAX;
	for (size_t s = 0; s < out->nsites; s++)
		last[s] = (uint32_t)s;
	for (size_t k = out->nsites; k < n; k++) {
		uint32_t s = out->site_of_kind[k];
		next[last[s]] = (uint32_t)k;
		last[s] = (uint32_t)k;
	}
	char **names = ap_xcalloc(n ? n : 1, sizeof(*names));
	for (size_t k = 0; k < n; k++) {
		uint32_t s = out->site_of_kind[k];
		char *nk = kind_name(out->kind_callee[k], 1), *dk = kind_name(out->kind_callee[k], 0);
		bool twin = false;
		for (uint32_t k2 = s; more_of[s] && k2 != UINT32_MAX && !twin; k2 = next[k2]) {
			if (k2 == k)
				continue;
			char *n2 = kind_name(out->kind_callee[k2], 1), *d2 = kind_name(out->kind_callee[k2], 0);
			twin = !strcmp(nk, n2) && strcmp(dk, d2);
			free(n2);
			free(d2);
		}
		if (twin && strcmp(nk, dk)) {
			struct ap_buf b = AP_BUF_INIT;
			ap_buf_addf(&b, "%s (%s)", nk, dk);
			names[k] = ap_buf_detach(&b, NULL);
			free(nk);
		} else {
			names[k] = nk;
		}
		free(dk);
	}
	for (size_t k = 0; k < n; k++) {
		free(out->kind_callee[k]);
		out->kind_callee[k] = names[k];
	}
	free(names);
	free(next);
	free(last);
	out->nkinds = n;
	ap_u64map_release(&more);
	free(first);
	free(more_of);
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
	struct imports imports = { 0 };
	struct ap_buf via_buf = AP_BUF_INIT;
	/* the kinds: (site, the function its frame called), by stack */
	uint32_t *callee_of_stack = ap_xmalloc((t->nstacks ? t->nstacks : 1) * sizeof(*callee_of_stack));
	struct ap_intern callees = { 0 };

	for (size_t id = 0; id < t->nstacks; id++) {
		out->site_of_stack[id] = UINT32_MAX;
		callee_of_stack[id] = UINT32_MAX;
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
		bool in_wrapper = false;
		for (size_t j = cs; j < pc && !in_wrapper; j++)
			in_wrapper = ap_sym_alloc_wrapper(frames[j].func);
		/* and out of the inline functions of system headers that the
		 * program's code inlined (glibc's getline, which calls
		 * __getdelim; _FORTIFY_SOURCE's printf, which calls
		 * __printf_chk): the library's too, named by the function the
		 * program's source called */
		size_t hp = pc;
		while (hp < nframes && !frames[hp].truncated && frames[hp].inlined &&
		       system_header(frames[hp].file))
			hp++;
		if (hp == nframes || frames[hp].truncated)
			hp = pc;
		if (in_wrapper && pc < nframes && !frames[pc].truncated) {
			/* Inside one of the allocating wrappers the symbolizer
			 * makes its caller the site of (asprintf's growths,
			 * through vfprintf's buffer, beside its own first and
			 * last malloc): that site's, as the wrapper's own
			 * allocations are, one pool for one call. */
			cs = hp;
		} else if (hp > pc) {
			via = frames[hp - 1].func;
			cs = hp;
		} else if (pc > cs && pc < nframes && !frames[pc].truncated) {
			/* the function the program called by name, else the
			 * library's outermost frame's: without glibc's internal
			 * alias prefix, "__GI__IO_fputs" is fputs's,
			 * "__GI_setlocale" setlocale's (as the symbolizer reads
			 * it, alloc_names) */
			const char *callee = called_import(&imports, t, &frames[pc]);
			if (!callee)
				callee = exported_name(&imports, t, &frames[pc - 1]);
			via = source_name(callee, frames[pc - 1].module, &via_buf);
			if (!via)
				via = frames[pc - 1].func;
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
				out->rust = ap_xrealloc(out->rust, alloc * sizeof(*out->rust));
				full = ap_xrealloc(full, alloc * sizeof(*full));
			}
			full[s] = f->full && !by_stack ? ap_xstrdup(f->full) : NULL;
			out->name[s] = ap_xstrdup(name.buf);
			out->function[s] = ap_xstrdup(f->func);
			out->file[s] = f->file ? ap_xstrdup(f->file) : NULL;
			out->line[s] = f->line;
			out->via[s] = via ? ap_xstrdup(via) : NULL;
			out->rust[s] = f->lang == AP_SYM_RUST;
			out->unsym_module[s] = f->unsymbolized && !f->module_unusable && f->module
						       ? ap_xstrdup(f->module)
						       : NULL;
		}
		out->site_of_stack[id] = site;
		callee_of_stack[id] = kind_key(&callees, frames, cs, &key);
		/* a PC's frames end with its real function's (not inlined) */
		for (size_t j = 0; j < cs; j++)
			out->pc_of_stack[id] += !frames[j].inlined;
	}
	ap_intern_release(&keys);
	site_kinds(out, callee_of_stack, &callees, t->nstacks);
	free(callee_of_stack);
	ap_intern_release(&callees);
	names_apart(out, full, by_stack);
	for (size_t s = 0; s < out->nsites; s++)
		free(full[s]);
	free(full);
	free(frames);
	free(own.p);
	imports_release(&imports);
	ap_buf_release(&via_buf);
	ap_buf_release(&key);
	ap_buf_release(&name);
}
