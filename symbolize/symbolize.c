/* Offline symbolizer over elfutils libdwfl (ap_symbolize.h): one Dwfl per
 * recorded module, build-id checks, a per-PC cache of source-level frames
 * (inline chains included), and the allocator-frame rules that choose the
 * call site of an allocation. */
#include "ap_symbolize.h"
#include "debugcache.h"
#include "perfmap.h"
#include "ap_hash.h"
#include "ap_regex.h"
#include "search.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libiberty/demangle.h>

/* libstdc++'s demangler; libdw has none (eu-addr2line uses the same). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* One function of a module's symbol table, at its absolute address. */
struct sym_func {
	uint64_t addr, size;
	const char *name;	/* points into the module's ELF string table */
	int rank;		/* binding preference among aliases */
};

enum { MOD_UNOPENED, MOD_OK, MOD_BAD };

/* One address range of a subprogram defined in a CU; or of a CU, from its
 * own DW_AT_ranges or low/high pc (the map used where .debug_aranges has
 * no entry for an address: clang 14 writes none, and libdwfl then finds
 * no CU), die the unit's DIE (a skeleton's for split DWARF). */
struct cu_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
};

/* The subprograms of one CU by address, built on the CU's first lookup:
 * walking the CU's DIE tree for every PC (what dwarf_getscopes does)
 * costs ~100 us per PC in big CUs. */
struct cu_cache {
	Dwarf_CU *unit;		/* with off, the key: split units' offsets are per .dwo */
	Dwarf_Off off;
	struct cu_range *r;
	size_t n;
};

struct sym_module {
	const struct ap_mapping *map;
	const char *base;	/* basename of the path (interned) */
	int state;
	/* A Dwfl of its own: mappings recorded over a process's life may
	 * overlap (dlclose, then dlopen of another library at the same
	 * address), and one Dwfl cannot hold overlapping modules. */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	/* The bias mod is reported at: the mapping's, or, for a module
	 * opened for another process (ap_sym_prefetch, ap_sym_share), that
	 * process's: PCs are translated, as for a canon module. */
	uint64_t at;
	/* sorted by addr, one per address: the functions, and the untyped
	 * symbols of code sections (assembly's labels, such as ld.so's
	 * _dl_start_user, which eu-addr2line and addr2line name too) */
	struct sym_func *funcs;
	size_t nfuncs;
	bool funcs_built;
	struct cu_cache *cus;
	size_t ncus, cus_alloc;
	size_t last_cu;		/* the CU of the previous lookup */
	struct cu_range *spans;	/* the CUs by lo, built on the first aranges miss */
	size_t nspans;
	bool spans_built;
	int has_lines;		/* -1 unknown, else whether any CU has a line table */
	bool lines_noted;	/* the "no line information" warning was queued */
	/* The tables of this mapping's PCs the trace keeps (SYMBOLS chunks
	 * that `record` wrote from this file): its PCs are named from them,
	 * and the file is not opened while they answer. */
	const struct ap_symtab_module **stored;
	size_t nstored;
	/* Whether the file now tells more than its tables kept without
	 * line information (a debug file installed since, or found by
	 * --debug-dir): -1 not asked yet, 0 no, 1 it is read instead. */
	int kept_superseded;
	/* The module resolving this one's PCs, -1 for itself: in a whole
	 * run (ap_run_merge) every process maps libc, each at its own
	 * address; one file (path, build-id and segments alike) is opened
	 * once, at its first mapping, and the others' PCs translated. */
	int32_t canon;
};

/* A cached PC: its frames, and whether each is an allocator frame. */
struct pc_entry {
	uint64_t pc;
	struct ap_frame *frames;	/* NULL until resolved */
	uint8_t *cls;			/* per frame: 0 unknown, 1 user, 2 allocator */
	uint32_t nframes;
	int32_t mod;			/* index into mods, -1 for none */
	bool used;
};

struct ap_symbolizer {
	const struct ap_trace *t;
	struct sym_module *mods;
	size_t nmods;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	const Dwfl_Callbacks *cbp; /* &cb, or &default_cb without a debug_dir */
	struct ap_regex *drop; /* --drop-frames, or NULL */
	bool no_demangle, full_names;
	struct ap_buf scratch;
	struct pc_entry *tab;	/* the PCs seen, in order */
	size_t tabn, taballoc;
	struct ap_u64map pcs;	/* pc -> its entry */
	struct ap_intern strs;	/* names, files, modules: the frames' strings */
	/* the perf maps' names the trace keeps (PCs in no module), and, for
	 * a trace without them, the map the process may have left */
	const struct ap_symtab_module **perf;
	size_t nperf;
	struct ap_perfmap live_perf;
	bool live_perf_read;
	char **warnings;	/* NULL-terminated */
	size_t nwarn, walloc;
};

static const char *intern(struct ap_intern *st, const char *s)
{
	return ap_intern_str(st, s);
}

static void warn(struct ap_symbolizer *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warn(struct ap_symbolizer *s, const char *fmt, ...)
{
	char tmp[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	AP_ALLOC_GROW(s->warnings, s->nwarn + 2, s->walloc);
	s->warnings[s->nwarn++] = ap_xstrdup(tmp);
	s->warnings[s->nwarn] = NULL;
}

static const char *path_base(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

/* The recorded mapping that holds pc: the latest record wins, as the trace
 * format says a later overlapping record replaces an earlier one. */
static int32_t find_module(const struct ap_symbolizer *s, uint64_t pc)
{
	for (size_t i = s->nmods; i-- > 0;) {
		const struct ap_mapping *m = s->mods[i].map;
		if (!m->nsegs) {
			if (pc >= m->start && pc < m->end)
				return (int32_t)i;
			continue;
		}
		for (size_t k = 0; k < m->nsegs; k++) {
			uint64_t lo = m->bias + m->segs[k].vaddr;
			if (pc >= lo && pc - lo < m->segs[k].memsz)
				return (int32_t)i;
		}
	}
	return -1;
}

/* The entry of pc, made on first use (a pointer into s->tab: valid until
 * the next entry_get). */
static struct pc_entry *entry_get(struct ap_symbolizer *s, uint64_t pc)
{
	uint32_t i = ap_u64map_get(&s->pcs, pc);
	if (i != AP_U64MAP_NONE)
		return &s->tab[i];
	AP_ALLOC_GROW(s->tab, s->tabn + 1, s->taballoc);
	struct pc_entry *e = &s->tab[s->tabn];
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->pc = pc;
	e->mod = find_module(s, pc);
	ap_u64map_put(&s->pcs, pc, (uint32_t)s->tabn++);
	return e;
}

static void build_id_hex(char *out, size_t outlen, const uint8_t *id, size_t len)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < len && o + 3 <= outlen; i++, o += 2)
		snprintf(out + o, outlen - o, "%02x", id[i]);
}

static bool same_file(const struct ap_mapping *a, const struct ap_mapping *b)
{
	if (strcmp(a->path, b->path) || a->build_id_len != b->build_id_len ||
	    memcmp(a->build_id, b->build_id, a->build_id_len) || a->nsegs != b->nsegs ||
	    a->end - a->start != b->end - b->start || a->start - a->bias != b->start - b->bias)
		return false;
	for (size_t k = 0; k < a->nsegs; k++)
		if (a->segs[k].vaddr != b->segs[k].vaddr || a->segs[k].memsz != b->segs[k].memsz ||
		    a->segs[k].offset != b->segs[k].offset)
			return false;
	return true;
}

static bool mod_same_file(const void *ctx, uint32_t i, const void *key)
{
	const struct ap_symbolizer *s = ctx;
	return same_file(s->mods[i].map, key);
}

/* Sets canon for the mappings of a whole run: the first mapping of the
 * same file in another process (files only: the vdso and anonymous code
 * have no file to share), found by its path's hash. */
static void find_canon(struct ap_symbolizer *s)
{
	struct ap_index first = { 0 };
	for (size_t i = 0; i < s->nmods; i++) {
		const struct ap_mapping *map = s->mods[i].map;
		if (map->path[0] != '/')
			continue;
		uint32_t c = ap_index_add(&first, ap_hash_str(map->path), mod_same_file, s, map,
					  (uint32_t)i, NULL);
		if (c != i)
			s->mods[i].canon = (int32_t)c;
	}
	ap_index_release(&first);
}

/* ---- modules opened ahead (ap_sym_prefetch) ---------------------------- */

/* The callbacks of every symbolizer made without a debug_dir, process-wide
 * so that a module opened by one (a Dwfl keeps a pointer to them) can
 * serve another: elfutils' default search path for separate debug files
 * (the module's directory, .debug, /usr/lib/debug), behind the cache of
 * those kept decompressed (debugcache.h). */
static char default_path[] = ":.debug:/usr/lib/debug";
static char *default_path_p = default_path;
static const Dwfl_Callbacks default_cb = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = ap_debugcache_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &default_path_p,
};

/* A module ap_sym_prefetch opened (or a symbolizer gave back, under
 * ap_sym_share), its debug information read, until a symbolizer takes it
 * (pre_take) or ap_sym_prefetch_release. */
struct pre_mod {
	char *path;
	uint64_t bias;
	uint8_t build_id[64];
	size_t build_id_len;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	bool used;	/* given back by a symbolizer (ap_sym_share) */
};
static struct pre_mod *pre;
static size_t npre;
static bool pre_share; /* ap_sym_share */
static unsigned files_opened; /* ap_sym_files_opened */

/* The module opened ahead for map's file (its path and build-id; at the
 * same bias when it has no build-id), taken out of the cache: its Dwfl
 * in *dwfl (the caller's to end) and the bias it is reported at in *at,
 * or NULL. Another process's libc is the same file at another address:
 * its inflated debug information serves, the PCs translated. */
static Dwfl_Module *pre_take(const struct ap_mapping *map, Dwfl **dwfl, uint64_t *at)
{
	*dwfl = NULL;
	for (size_t i = 0; i < npre; i++) {
		struct pre_mod *e = &pre[i];
		if ((!map->build_id_len && e->bias != map->bias) || strcmp(e->path, map->path) ||
		    e->build_id_len != map->build_id_len ||
		    memcmp(e->build_id, map->build_id, map->build_id_len))
			continue;
		Dwfl_Module *mod = e->mod;
		*dwfl = e->dwfl;
		*at = e->bias;
		free(e->path);
		pre[i] = pre[--npre];
		return mod;
	}
	return NULL;
}

/* The cache takes a usable module of map's file, reported at `at` (used:
 * a symbolizer's, given back); false if it has one of that file already
 * (the caller ends it). */
static bool pre_put(const struct ap_mapping *map, Dwfl *dwfl, Dwfl_Module *mod, uint64_t at,
		    bool used)
{
	if (map->build_id_len > sizeof(pre->build_id))
		return false;
	for (size_t i = 0; i < npre; i++)
		if (!strcmp(pre[i].path, map->path) && pre[i].build_id_len == map->build_id_len &&
		    !memcmp(pre[i].build_id, map->build_id, map->build_id_len) &&
		    (map->build_id_len || pre[i].bias == at))
			return false;
	pre = ap_xrealloc(pre, (npre + 1) * sizeof(*pre));
	struct pre_mod *e = &pre[npre++];
	e->path = ap_xstrdup(map->path);
	e->bias = at;
	memcpy(e->build_id, map->build_id, map->build_id_len);
	e->build_id_len = map->build_id_len;
	e->dwfl = dwfl;
	e->mod = mod;
	e->used = used;
	return true;
}

static const char *symfs; /* ap_sym_symfs */

void ap_sym_symfs(const char *dir)
{
	symfs = dir && *dir ? dir : NULL;
}

/* The file to read for a module at `path`: under symfs when that is a
 * regular file and not the one at path here (compared by device and
 * inode), else path. `buf` holds the one under symfs. */
static const char *module_file(const char *path, char *buf, size_t size)
{
	if (!symfs || (size_t)snprintf(buf, size, "%s%s", symfs, path) >= size)
		return path;
	struct stat there, here;
	if (stat(buf, &there) < 0 || !S_ISREG(there.st_mode))
		return path;
	if (stat(path, &here) == 0 && here.st_dev == there.st_dev && here.st_ino == there.st_ino)
		return path;
	return buf;
}

/* Opens module i on first use: reports it to its Dwfl at the recorded bias
 * and checks the build-id. A module that cannot be used gets a warning and
 * address-only frames. */
static struct sym_module *module_get(struct ap_symbolizer *s, int32_t i)
{
	struct sym_module *m = &s->mods[i];
	const struct ap_mapping *map = m->map;
	if (m->state != MOD_UNOPENED)
		return m;
	if (m->canon >= 0) {
		m->state = module_get(s, m->canon)->state;
		return m;
	}
	m->state = MOD_BAD;
	/* vdso and anonymous code have no file to read: addresses only. */
	if (map->path[0] != '/')
		return m;
	char there[PATH_MAX];
	const char *file = module_file(map->path, there, sizeof(there));
	/* Only a regular file can be the module: opening a FIFO that took
	 * its path since would wait for a writer forever. */
	struct stat st;
	if (stat(file, &st) == 0 && !S_ISREG(st.st_mode)) {
		warn(s, "%s: not a regular file (any more); its frames are shown as addresses",
		     map->path);
		return m;
	}
	m->at = map->bias;
	if (s->cbp == &default_cb)
		m->mod = pre_take(map, &m->dwfl, &m->at);
	if (!m->dwfl) {
		m->dwfl = dwfl_begin(s->cbp);
		if (!m->dwfl) {
			warn(s, "%s: %s; its frames are shown as addresses", map->path,
			     dwfl_errmsg(-1));
			return m;
		}
		dwfl_report_begin(m->dwfl);
		m->mod = dwfl_report_elf(m->dwfl, m->base, file, -1, map->bias, false);
		files_opened++;
		const char *why = m->mod ? NULL : dwfl_errmsg(-1);
		dwfl_report_end(m->dwfl, NULL, NULL);
		if (!m->mod) {
			warn(s, "%s: %s; its frames are shown as addresses", map->path, why);
			return m;
		}
	}
	if (map->build_id_len) {
		const unsigned char *bits;
		GElf_Addr vaddr;
		int len = dwfl_module_build_id(m->mod, &bits, &vaddr);
		if (len != (int)map->build_id_len || memcmp(bits, map->build_id, (size_t)len)) {
			char want[130];
			build_id_hex(want, sizeof(want), map->build_id, map->build_id_len);
			warn(s, "%s: build-id differs from the recorded one %s (rebuilt since recording?); its frames are shown as addresses",
			     map->path, want);
			m->mod = NULL;
			return m;
		}
	}
	m->state = MOD_OK;
	return m;
}

static int func_cmp(const void *a, const void *b)
{
	const struct sym_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* best alias first: global, then weak, then local; sized before unsized */
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return (y->size != 0) - (x->size != 0);
}

/* Sorted function table from the symbol table (.symtab if present, else
 * .dynsym): a binary search instead of dwfl_module_addrinfo's linear scan. */
static void funcs_build(struct sym_module *m)
{
	m->funcs_built = true;
	int n = dwfl_module_getsymtab(m->mod);
	size_t alloc = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr,
							   &shndx, &elf, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF)
			continue;
		int bind = GELF_ST_BIND(sym.st_info);
		bool label = false;
		if (type == STT_NOTYPE && name[0] != '.' && elf && shndx != SHN_UNDEF &&
		    shndx < SHN_LORESERVE) {
			GElf_Shdr sh;
			Elf_Scn *scn = elf_getscn(elf, shndx);
			label = scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
		}
		if (type != STT_FUNC && type != STT_GNU_IFUNC && !label)
			continue;
		AP_ALLOC_GROW(m->funcs, m->nfuncs + 1, alloc);
		m->funcs[m->nfuncs++] = (struct sym_func){
			.addr = addr, .size = sym.st_size, .name = name,
			.rank = label ? -1 : bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0,
		};
	}
	if (!m->nfuncs)
		return;
	qsort(m->funcs, m->nfuncs, sizeof(*m->funcs), func_cmp);
	size_t o = 0;
	for (size_t i = 0; i < m->nfuncs; i++)
		if (!o || m->funcs[o - 1].addr != m->funcs[i].addr)
			m->funcs[o++] = m->funcs[i];
	m->nfuncs = o;
}

static const char *funcs_lookup(struct sym_module *m, uint64_t addr)
{
	if (!m->funcs_built)
		funcs_build(m);
	size_t lo = AP_UPPER_BOUND(m->funcs, m->nfuncs, addr, addr);
	if (!lo)
		return NULL;
	const struct sym_func *f = &m->funcs[lo - 1];
	if (f->size)
		return addr - f->addr < f->size ? f->name : NULL;
	/* the nearest symbol below is unsized (a label, crtstuff's
	 * frame_dummy): a sized function holding addr comes first, as in
	 * libdwfl's dwfl_module_addrsym */
	for (size_t i = lo - 1; i-- > 0 && lo - i <= 16;)
		if (m->funcs[i].size && addr - m->funcs[i].addr < m->funcs[i].size)
			return m->funcs[i].name;
	return f->name;
}

/* Sets frame names from a linkage or plain name: full demangled when it
 * is a Rust or C++ name (also with no_demangle: the allocator rules read
 * it); func the short name, the full one with full_names, the linkage
 * name with no_demangle. */
static void set_name(struct ap_symbolizer *s, struct ap_frame *f, const char *name)
{
	f->mangled = intern(&s->strs, name);
	f->func = f->full = f->mangled;
	f->lang = AP_SYM_PLAIN;
	if (name[0] != '_' || (name[1] != 'R' && name[1] != 'Z')) {
		/* a name not mangled (DWARF's, for an inlined template
		 * constructor): the one pprof shows for it */
		ap_buf_reset(&s->scratch);
		if (!s->no_demangle && !s->full_names && ap_sym_pprof_plain(name, &s->scratch))
			f->func = intern(&s->strs, s->scratch.buf);
		return;
	}
	/* Rust first: a legacy Rust name is a valid C++ one too (_ZN...E
	 * with a 17h<hash> element), which __cxa_demangle would leave with
	 * its $LT$ escapes and hash. Without DMGL_VERBOSE the hash and v0's
	 * crate disambiguators are left out. */
	char *d = NULL;
	if (!strncmp(name, "_R", 2) || !strncmp(name, "_ZN", 3))
		d = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (d) {
		f->lang = AP_SYM_RUST;
	} else if (name[1] == 'Z') {
		int status = -1;
		d = __cxa_demangle(name, NULL, NULL, &status);
		if (d && status == 0)
			f->lang = AP_SYM_CXX;
	}
	if (f->lang != AP_SYM_PLAIN) {
		f->full = intern(&s->strs, d);
		ap_buf_reset(&s->scratch);
		ap_sym_short_name(f->full, f->lang, &s->scratch);
		f->func = s->no_demangle ? f->mangled :
			  s->full_names	 ? f->full :
					   intern(&s->strs, s->scratch.buf);
	}
	free(d);
}

static void set_addr_name(struct ap_symbolizer *s, struct ap_frame *f,
			  const struct sym_module *m)
{
	char tmp[4096];
	if (m)
		snprintf(tmp, sizeof(tmp), "%s+0x%" PRIx64, m->base, f->module_offset);
	else
		snprintf(tmp, sizeof(tmp), "0x%" PRIx64, ap_run_addr(f->pc));
	f->func = f->full = f->mangled = intern(&s->strs, tmp);
	f->lang = AP_SYM_PLAIN;
	f->unsymbolized = true;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return name;
}

/* The DIEs of the inlined subroutines (and nested subprograms) inside
 * `parent` that contain pc, outermost first, found by descending through
 * every scope (lexical blocks too). Returns true when a scope was found. */
static bool scope_chain(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die **chain,
			size_t *n, size_t *alloc)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haspc(&child, pc) != 1)
				break;
			if (tag != DW_TAG_lexical_block && tag != DW_TAG_try_block &&
			    tag != DW_TAG_catch_block && tag != DW_TAG_with_stmt) {
				AP_ALLOC_GROW(*chain, *n + 1, *alloc);
				(*chain)[(*n)++] = child;
			}
			scope_chain(&child, pc, chain, n, alloc);
			return true;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			if (scope_chain(&child, pc, chain, n, alloc))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Folds "." and "dir/.." components of an absolute path in place, as a
 * user reads it ("/src/build/../lib/x.c" is "/src/lib/x.c"). Lexical, like
 * pprof's and perf's path cleaning: a symlinked dir/.. is not resolved. */
static void clean_path(char *p)
{
	if (p[0] != '/')
		return;
	char *out = p + 1, *in = p + 1;
	while (*in) {
		char *end = strchr(in, '/');
		size_t len = end ? (size_t)(end - in) : strlen(in);
		bool last = !end; /* writing '/' below may overwrite the NUL */
		if (len == 0 || (len == 1 && in[0] == '.')) {
			/* skip "//" and "/./" */
		} else if (len == 2 && in[0] == '.' && in[1] == '.') {
			if (out > p + 1) {
				out--; /* the '/' after the last kept component */
				while (out > p + 1 && out[-1] != '/')
					out--;
			}
		} else {
			memmove(out, in, len);
			out += len;
			*out++ = '/';
		}
		if (last)
			break;
		in += len + 1;
	}
	if (out > p + 1)
		out--; /* no trailing '/' */
	*out = 0;
}

/* A source file name as a user wants to read it: a relative name (meson and
 * most builds compile "../src/x.c") is joined to the CU's DW_AT_comp_dir,
 * as eu-addr2line does, then "dir/.." is folded. */
static const char *src_path(struct ap_symbolizer *s, const char *file, Dwarf_Die *cu)
{
	if (!file)
		return NULL;
	Dwarf_Attribute a;
	const char *dir = file[0] != '/' && cu ?
		dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)) : NULL;
	struct ap_buf b = AP_BUF_INIT;
	if (dir)
		ap_buf_addf(&b, "%s/%s", dir, file);
	else
		ap_buf_addstr(&b, file);
	clean_path(b.buf);
	const char *r = intern(&s->strs, b.buf);
	ap_buf_release(&b);
	return r;
}

static void cu_collect(Dwarf_Die *parent, struct cu_cache *c, size_t *alloc)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_entry_point: {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				AP_ALLOC_GROW(c->r, c->n + 1, *alloc);
				c->r[c->n++] = (struct cu_range){ lo, hi, child };
			}
			break;
		}
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			cu_collect(&child, c, alloc);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The DIE of the range of r (n, sorted by lo) that holds pc, or NULL. */
static Dwarf_Die *range_find(struct cu_range *r, size_t n, Dwarf_Addr pc)
{
	size_t lo = AP_UPPER_BOUND(r, n, lo, pc);
	/* ranges of distinct subprograms (and CUs) do not overlap; scan
	 * back for safety over a few empty or nested ones */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;)
		if (pc >= r[i].lo && pc < r[i].hi)
			return &r[i].die;
	return NULL;
}

/* The subprogram DIE of the CU that holds pc, or NULL. */
static Dwarf_Die *cu_subprogram(struct sym_module *m, Dwarf_Die *cudie, Dwarf_Addr pc)
{
	Dwarf_Off off = dwarf_dieoffset(cudie);
	struct cu_cache *c = NULL;
	if (m->last_cu < m->ncus && m->cus[m->last_cu].off == off &&
	    m->cus[m->last_cu].unit == cudie->cu)
		c = &m->cus[m->last_cu];
	for (size_t i = 0; !c && i < m->ncus; i++)
		if (m->cus[i].off == off && m->cus[i].unit == cudie->cu) {
			c = &m->cus[i];
			m->last_cu = i;
		}
	if (!c) {
		AP_ALLOC_GROW(m->cus, m->ncus + 1, m->cus_alloc);
		m->last_cu = m->ncus;
		c = &m->cus[m->ncus++];
		*c = (struct cu_cache){ .unit = cudie->cu, .off = off };
		size_t alloc = 0;
		cu_collect(cudie, c, &alloc);
		qsort(c->r, c->n, sizeof(*c->r), range_cmp);
	}
	return range_find(c->r, c->n, pc);
}

/* The address map of the module's CUs from each CU's own ranges, for the
 * addresses .debug_aranges does not cover (what binutils' addr2line and
 * heaptrack do without aranges). Built once, on the first miss. */
static void spans_build(struct sym_module *m)
{
	m->spans_built = true;
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(m->mod, &bias);
	if (!dw)
		return;
	size_t alloc = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie;
	while (dwarf_get_units(dw, cu, &cu, &version, &type, &cudie, NULL) == 0) {
		if (type != DW_UT_compile && type != DW_UT_skeleton && type != DW_UT_partial)
			continue;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			AP_ALLOC_GROW(m->spans, m->nspans + 1, alloc);
			m->spans[m->nspans++] = (struct cu_range){ lo, hi, cudie };
		}
	}
	if (m->nspans)
		qsort(m->spans, m->nspans, sizeof(*m->spans), range_cmp);
}

/* The CU DIE whose ranges hold addr (a DWARF address: pc - *bias), or NULL. */
static Dwarf_Die *cu_by_ranges(struct sym_module *m, Dwarf_Addr addr, Dwarf_Addr *bias)
{
	if (!m->spans_built)
		spans_build(m);
	if (!m->nspans || !dwfl_module_getdwarf(m->mod, bias))
		return NULL;
	return range_find(m->spans, m->nspans, addr - *bias);
}

/* The DIE whose children are the CU's subprograms: the split unit's for a
 * skeleton unit (split DWARF, the .dwo found next to the binary or at
 * DW_AT_comp_dir), else the CU's own. */
static Dwarf_Die *unit_with_code(Dwarf_Die *cudie, Dwarf_Die *split)
{
	uint8_t type;
	if (dwarf_cu_info(cudie->cu, NULL, &type, NULL, split, NULL, NULL, NULL) == 0 &&
	    type == DW_UT_skeleton && dwarf_tag(split) == DW_TAG_compile_unit)
		return split;
	return cudie;
}

/* Whether the CU's own ranges hold addr (a DWARF address), or it has none
 * to say. libdwfl gives an address in a gap between .debug_aranges
 * entries to the CU of the entry below it (crt1.o's _start after main's
 * .text.startup, a CU without aranges after one with them), and its line
 * table then names the last row before the gap (a line of main for
 * _start, where binutils' addr2line says ??:?). */
static bool cu_holds(Dwarf_Die *cudie, Dwarf_Addr addr)
{
	if (!dwarf_hasattr(cudie, DW_AT_ranges) && !dwarf_hasattr(cudie, DW_AT_high_pc))
		return true;
	return dwarf_haspc(cudie, addr) != 0;
}

struct srcloc {
	const char *file;
	int line, column;
};

static struct ap_frame *push_frame(struct ap_frame **fr, uint32_t *n, size_t *alloc,
				   const struct ap_frame *proto, const struct srcloc *loc)
{
	AP_ALLOC_GROW(*fr, (size_t)*n + 1, *alloc);
	struct ap_frame *f = &(*fr)[(*n)++];
	*f = *proto;
	f->file = loc->file;
	f->line = loc->line;
	f->column = loc->column;
	return f;
}

/* The frames of a PC in a usable module: the inline chain from DWARF when
 * the PC is in a CU with scopes, else one frame named from the symbol
 * table, else module+0xoff. */
static void resolve_dwarf(struct ap_symbolizer *s, struct sym_module *m, uint64_t pc,
			  struct pc_entry *e, const struct ap_frame *proto)
{
	Dwarf_Addr addr = pc - 1, bias = 0;
	struct srcloc loc = { NULL, 0, 0 };
	Dwarf_Die *cudie = dwfl_module_addrdie(m->mod, addr, &bias);
	Dwfl_Line *line = NULL;
	if (cudie && !cu_holds(cudie, addr - bias))
		cudie = NULL; /* a gap between aranges: not this CU's */
	else if (cudie)
		line = dwfl_module_getsrc(m->mod, addr);
	if (!cudie)
		cudie = cu_by_ranges(m, addr, &bias);
	if (line) {
		int lineno = 0, col = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, &col, NULL, NULL);
		if (file) {
			loc.file = src_path(s, file, dwfl_linecu(line));
			loc.line = lineno;
			loc.column = col;
		}
	} else if (cudie) {
		/* a CU found by its ranges: its own line table */
		Dwarf_Line *dl = dwarf_getsrc_die(cudie, addr - bias);
		const char *file = dl ? dwarf_linesrc(dl, NULL, NULL) : NULL;
		if (file) {
			loc.file = src_path(s, file, cudie);
			dwarf_lineno(dl, &loc.line);
			dwarf_linecol(dl, &loc.column);
		}
	}

	struct ap_frame *fr = NULL;
	uint32_t n = 0;
	size_t alloc = 0;
	Dwarf_Die *chain = NULL;
	size_t nchain = 0, chain_alloc = 0;
	Dwarf_Die split;
	Dwarf_Die *code = cudie ? unit_with_code(cudie, &split) : NULL;
	Dwarf_Die *sub = code ? cu_subprogram(m, code, addr - bias) : NULL;
	if (sub) {
		AP_ALLOC_GROW(chain, 1, chain_alloc);
		chain[nchain++] = *sub;
		scope_chain(sub, addr - bias, &chain, &nchain, &chain_alloc);
	}
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (nchain && dwarf_getsrcfiles(code, &files, &nfiles) != 0)
		files = NULL;

	bool have_outer = false;
	for (size_t i = nchain; i-- > 0;) {
		Dwarf_Die *die = &chain[i];
		int tag = dwarf_tag(die);
		const char *name = die_name(die);
		struct ap_frame *f = push_frame(&fr, &n, &alloc, proto, &loc);
		if (tag != DW_TAG_inlined_subroutine) {
			const char *sym = name ? NULL : funcs_lookup(m, addr);
			if (name || sym)
				set_name(s, f, name ? name : sym);
			else
				set_addr_name(s, f, m);
			have_outer = true;
			break;
		}
		f->inlined = true;
		if (name)
			set_name(s, f, name);
		else
			set_addr_name(s, f, m);
		/* the call site of this inlined callee is the location in the
		 * next outer frame */
		Dwarf_Attribute a;
		Dwarf_Word val;
		loc = (struct srcloc){ NULL, 0, 0 };
		if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &val) == 0)
			loc.file = src_path(s, dwarf_filesrc(files, val, NULL, NULL), cudie);
		if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &val) == 0)
			loc.line = (int)val;
		if (dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &a), &val) == 0)
			loc.column = (int)val;
	}
	if (!have_outer) {
		/* no subprogram DIE (no DWARF, or code outside any CU) */
		struct ap_frame *f = push_frame(&fr, &n, &alloc, proto, &loc);
		const char *sym = funcs_lookup(m, addr);
		if (sym)
			set_name(s, f, sym);
		else
			set_addr_name(s, f, m);
	}
	free(chain);
	e->frames = fr;
	e->nframes = n;
}

/* The frames of a PC from a table the trace keeps (n of them, innermost
 * first), m its mapping's module (NULL: a perf map's). */
static void resolve_kept(struct ap_symbolizer *s, struct pc_entry *e, struct sym_module *m,
			 const char *module, const struct ap_symtab_frame *kf, uint32_t n)
{
	struct ap_frame proto = { .pc = e->pc, .module = module };
	proto.module_offset = m ? e->pc - m->map->bias : e->pc;
	e->frames = ap_xcalloc(n, sizeof(*e->frames));
	for (uint32_t k = 0; k < n; k++) {
		struct ap_frame *f = &e->frames[k];
		*f = proto;
		f->file = kf[k].file ? intern(&s->strs, kf[k].file) : NULL;
		f->line = (int)kf[k].line;
		f->column = (int)kf[k].column;
		f->inlined = k + 1 < n;
		if (kf[k].name)
			set_name(s, f, kf[k].name);
		else
			set_addr_name(s, f, m);
	}
	e->nframes = n;
	e->cls = ap_xcalloc(n, 1);
}

/* A PC in no module: named by a perf map, the trace's or the one the
 * process left (a trace without one, read when it is newer than the
 * trace's start). */
static bool resolve_perf(struct ap_symbolizer *s, struct pc_entry *e)
{
	uint32_t proc = (uint32_t)(e->pc >> AP_RUN_SHIFT);
	uint64_t addr = ap_run_addr(e->pc);
	for (size_t i = 0; i < s->nperf; i++) {
		uint32_t n;
		const struct ap_symtab_frame *kf;
		if (s->perf[i]->proc == proc && (kf = ap_symtab_lookup(s->perf[i], addr, &n))) {
			resolve_kept(s, e, NULL, s->perf[i]->path, kf, n);
			return true;
		}
	}
	if (s->nperf || s->t->nprocs)
		return false;
	if (!s->live_perf_read) {
		char path[64];
		s->live_perf_read = true;
		ap_perfmap_path(path, sizeof(path), s->t->pid);
		ap_perfmap_load(&s->live_perf, path, s->t->start_realtime_ns / 1000000000u);
	}
	const char *name = ap_perfmap_find(&s->live_perf, addr - 1);
	if (!name)
		return false;
	struct ap_symtab_frame kf = { .name = name };
	resolve_kept(s, e, NULL, NULL, &kf, 1);
	return true;
}

static bool module_has_lines(struct sym_module *m);

/* Whether module i's file, where its kept tables have no line
 * information, is there as recorded (its build-id) and has lines now: a
 * -dbgsym package installed since recording, or the separate debug file
 * --debug-dir points at, which the notes on frames without symbols or
 * lines advise. Asked once per module, quietly: the kept tables are read
 * when the file cannot be. Without --debug-dir only when /usr/lib/debug
 * has a file of its build-id: elfutils, finding no debug file, loads
 * libdebuginfod and its dependencies (~40 ms). */
static bool kept_superseded(struct ap_symbolizer *s, int32_t i)
{
	struct sym_module *m = &s->mods[i];
	if (m->kept_superseded >= 0)
		return m->kept_superseded;
	m->kept_superseded = 0;
	struct stat st;
	char there[PATH_MAX];
	if ((m->stored[0]->flags & AP_SYMTAB_HAS_LINES) || m->map->path[0] != '/' ||
	    stat(module_file(m->map->path, there, sizeof(there)), &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return false;
	if (s->cbp != &s->cb) {
		char hex[130];
		if (m->map->build_id_len < 2)
			return false;
		build_id_hex(hex, sizeof(hex), m->map->build_id, m->map->build_id_len);
		snprintf(there, sizeof(there), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
			 hex + 2);
		if (stat(there, &st) != 0 || !S_ISREG(st.st_mode))
			return false;
	}
	size_t nwarn = s->nwarn;
	module_get(s, i);
	while (s->nwarn > nwarn)
		free(s->warnings[--s->nwarn]);
	if (s->warnings)
		s->warnings[s->nwarn] = NULL;
	struct sym_module *c = m->canon >= 0 ? &s->mods[m->canon] : m;
	m->kept_superseded = m->state == MOD_OK && c->mod && module_has_lines(c);
	return m->kept_superseded;
}

static void resolve(struct ap_symbolizer *s, struct pc_entry *e)
{
	if (e->mod >= 0) {
		struct sym_module *m = &s->mods[e->mod];
		for (size_t i = 0; i < m->nstored && !kept_superseded(s, e->mod); i++) {
			uint32_t n;
			const struct ap_symtab_frame *kf =
			    ap_symtab_lookup(m->stored[i], e->pc - m->map->bias, &n);
			if (kf) {
				resolve_kept(s, e, m, m->map->path, kf, n);
				return;
			}
		}
	} else if (resolve_perf(s, e)) {
		return;
	}
	struct ap_frame proto = { .pc = e->pc };
	struct sym_module *m = e->mod >= 0 ? module_get(s, e->mod) : NULL;
	if (m) {
		proto.module = m->map->path;
		proto.module_offset = e->pc - m->map->bias;
	} else {
		proto.module_offset = e->pc;
	}
	if (m && m->state == MOD_OK) {
		struct sym_module *c = m->canon >= 0 ? &s->mods[m->canon] : m;
		resolve_dwarf(s, c, e->pc - m->map->bias + c->at, e, &proto);
	} else {
		e->frames = ap_xmalloc(sizeof(*e->frames));
		e->frames[0] = proto;
		set_addr_name(s, &e->frames[0], m);
		e->frames[0].module_unusable = true;
		e->nframes = 1;
	}
	e->cls = ap_xcalloc(e->nframes, 1);
}

size_t ap_sym_pc(struct ap_symbolizer *s, uint64_t pc, const struct ap_frame **frames)
{
	struct pc_entry *e = entry_get(s, pc);
	if (!e->frames)
		resolve(s, e);
	*frames = e->frames;
	return e->nframes;
}

/* Allocator entry points and glibc internals, by exact name (a "__GI_"
 * prefix of glibc's internal aliases is ignored). */
static const char *const alloc_names[] = {
	"malloc", "calloc", "realloc", "free", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "cfree",
	"__posix_memalign", "_mid_memalign", "sysmalloc", "tcache_init",
	"malloc_hook_ini", "realloc_hook_ini", "memalign_hook_ini",
	/* Rust's global allocator shims (__rust_alloc calls __rdl_alloc,
	 * the System allocator, or __rg_alloc, a #[global_allocator]) */
	"__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc", "__rust_dealloc",
	"__rdl_alloc", "__rdl_alloc_zeroed", "__rdl_realloc", "__rdl_dealloc",
	"__rg_alloc", "__rg_alloc_zeroed", "__rg_realloc", "__rg_dealloc",
	/* libstdc++'s exception objects: a throw's, its line the site */
	"__cxa_allocate_exception", "__cxa_allocate_dependent_exception",
};

/* The C library's wrappers whose caller is the interesting site. */
static const char *const alloc_wrapper_names[] = {
	"strdup", "strndup", "__strdup", "__strndup", "wcsdup", "asprintf",
	"vasprintf", "__asprintf", "___asprintf", "__vasprintf",
	"__vasprintf_internal", "__asprintf_chk", "__vasprintf_chk",
};

static bool name_in(const char *name, const char *const *names, size_t n)
{
	if (!strncmp(name, "__GI_", 5))
		name += 5;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

bool ap_sym_alloc_wrapper(const char *func)
{
	return func && name_in(func, alloc_wrapper_names, AP_ARRAY_SIZE(alloc_wrapper_names));
}

/* The crates of Rust's standard library (hashbrown is std's HashMap). */
static const char *const rust_std_crates[] = { "alloc", "core", "std", "hashbrown" };

/* Whether a Rust short name is a function of the standard library: the
 * crate its path starts with, or for "<Type as Trait>::f" the Type's
 * (<alloc::vec::Vec as core::clone::Clone>::clone is the library's, while
 * <app::Point as core::clone::Clone>::clone is the program's), the
 * Trait's when the Type is no path (<T as core::any::Any>::type_id, a
 * blanket impl; <[T] as alloc::slice::hack::ConvertVec>::to_vec). */
static bool rust_std_frame(const char *name)
{
	const char *as = name[0] == '<' ? strstr(name, " as ") : NULL;
	while (*name == '<' || *name == '&' || *name == '*' || *name == '[' || *name == '(')
		name++;
	if (!strncmp(name, "mut ", 4))
		name += 4;
	size_t n = strcspn(name, ":<> ");
	if (as && name + n == as)
		return rust_std_frame(as + 4);
	for (size_t i = 0; i < AP_ARRAY_SIZE(rust_std_crates); i++)
		if (strlen(rust_std_crates[i]) == n && !strncmp(name, rust_std_crates[i], n) &&
		    name[n] == ':')
			return true;
	return false;
}

/* The qualified name of a demangled function: without the return type a
 * function template's demangled name starts with. */
static const char *qualified_name(const char *name)
{
	const char *start = name;
	int depth = 0;
	for (const char *p = name; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>')
			depth--;
		else if (*p == '(' && depth == 0)
			break;
		else if (*p == ' ' && depth == 0)
			start = p + 1;
	}
	return start;
}

static bool is_allocator(struct ap_symbolizer *s, const struct ap_frame *f)
{
	if (f->module && !strncmp(path_base(f->module), "liballocprof", 12))
		return true;
	/* The rules read the whole demangled name, whichever name the views
	 * show; a Rust name's short one, and --drop-frames either. */
	const char *name = f->full ? f->full : f->func;
	const char *shortname = f->func;
	if ((s->full_names || s->no_demangle) && f->lang != AP_SYM_PLAIN) {
		ap_buf_reset(&s->scratch);
		ap_sym_short_name(name, f->lang, &s->scratch);
		shortname = s->scratch.buf;
	}
	/* Rust's allocation layers between __rust_alloc and the user's
	 * code: alloc::alloc, RawVec growth, Vec, String, format!, the
	 * HashMap's hashbrown tables; the call site is the user's line. */
	if (f->lang == AP_SYM_RUST && rust_std_frame(shortname))
		return true;
	if (!strncmp(name, "operator new", 12))
		return true;
	const char *c = name;
	if (!strncmp(c, "__GI_", 5))
		c += 5;
	if (!strncmp(c, "__libc_", 7) || !strncmp(c, "_int_", 5))
		return true;
	if (name_in(c, alloc_names, AP_ARRAY_SIZE(alloc_names)) || ap_sym_alloc_wrapper(c))
		return true;
	/* The C++ standard library between operator new and the user's code
	 * (std::allocator, allocator_traits, vector growth, string
	 * construction): the call site is the user's line that asked. */
	const char *q = qualified_name(name);
	if (f->lang != AP_SYM_RUST && (!strncmp(q, "std::", 5) || !strncmp(q, "__gnu_cxx::", 11)))
		return true;
	/* --drop-frames: the whole name, the short one, or the one shown
	 * (the linkage name with no_demangle) */
	if (s->drop && (ap_regex_match(s->drop, name) ||
			(shortname != name && ap_regex_match(s->drop, shortname)) ||
			(f->func != name && f->func != shortname && ap_regex_match(s->drop, f->func))))
		return true;
	return false;
}

/* A process's or thread's first frame: a stack that reaches one is whole,
 * however deep. */
static bool is_entry(const struct ap_frame *f)
{
	static const char *const entries[] = {
		"_start", "start_thread", "clone", "clone3", "__clone", "__clone3",
	};
	for (size_t i = 0; i < AP_ARRAY_SIZE(entries); i++)
		if (!strcmp(f->func, entries[i]))
			return true;
	return false;
}

/* Whether any CU of the module has a line table (DWARF found, in the file
 * or a separate debug file). */
static bool module_has_lines(struct sym_module *m)
{
	if (m->has_lines < 0) {
		Dwarf_Addr bias;
		Dwarf *dw = dwfl_module_getdwarf(m->mod, &bias);
		Dwarf_CU *cu = NULL;
		Dwarf_Die cudie;
		Dwarf_Attribute a;
		uint8_t type;
		m->has_lines = 0;
		while (dw && !m->has_lines &&
		       dwarf_get_units(dw, cu, &cu, NULL, &type, &cudie, NULL) == 0)
			m->has_lines = dwarf_attr(&cudie, DW_AT_stmt_list, &a) != NULL;
	}
	return m->has_lines;
}

/* A call site in a module without any line information: said once per
 * module, since every view then shows its sites without file:line. */
static void note_no_lines(struct ap_symbolizer *s, const struct ap_frame *f, int32_t mod)
{
	if (mod < 0 || f->unsymbolized)
		return;
	struct sym_module *m = &s->mods[mod];
	struct sym_module *c = m->canon >= 0 ? &s->mods[m->canon] : m;
	if (c->lines_noted)
		return;
	if (m->nstored && m->kept_superseded != 1 ? (m->stored[0]->flags & AP_SYMTAB_HAS_LINES)
		       : c->state != MOD_OK || module_has_lines(c))
		return;
	c->lines_noted = true;
	warn(s, "%s: no line information (built without -g, and no separate debug file "
		"found): its call sites have no file:line", c->map->path);
}

size_t ap_sym_stack(struct ap_symbolizer *s, const struct ap_stack *st,
		    struct ap_frame **out, size_t *n, size_t *alloc)
{
	*n = 0;
	bool marking = true;
	size_t site = 0;
	for (uint32_t d = 0; d < st->depth; d++) {
		struct pc_entry *e = entry_get(s, st->pcs[d]);
		if (!e->frames)
			resolve(s, e);
		AP_ALLOC_GROW(*out, *n + e->nframes, *alloc);
		for (uint32_t k = 0; k < e->nframes; k++) {
			struct ap_frame *f = &(*out)[(*n)++];
			*f = e->frames[k];
			if (!marking)
				continue;
			if (!e->cls[k])
				e->cls[k] = is_allocator(s, f) ? 2 : 1;
			if (e->cls[k] == 2) {
				f->allocator = true;
			} else {
				marking = false;
				site = *n - 1;
				note_no_lines(s, f, e->mod);
			}
		}
	}
	if (s->t->max_depth && st->depth >= s->t->max_depth && !(*n && is_entry(&(*out)[*n - 1]))) {
		AP_ALLOC_GROW(*out, *n + 1, *alloc);
		(*out)[(*n)++] = (struct ap_frame){
			.func = AP_SYM_TRUNCATED,
			.full = AP_SYM_TRUNCATED,
			.mangled = AP_SYM_TRUNCATED,
			.truncated = true,
		};
	}
	return site;
}

const char *const *ap_sym_warnings(const struct ap_symbolizer *s)
{
	static const char *const none[] = { NULL };
	return s->warnings ? (const char *const *)s->warnings : none;
}

/* The tables the trace keeps, each with the mappings of its file (the
 * same path and build-id, in the same process of a run), and the perf
 * maps' apart. */
static void attach_kept(struct ap_symbolizer *s)
{
	const struct ap_symtab *tab = &s->t->symtab;
	for (size_t k = 0; k < tab->nmods; k++) {
		const struct ap_symtab_module *km = &tab->mods[k];
		if (km->flags & AP_SYMTAB_PERF_MAP) {
			s->perf = ap_xrealloc(s->perf, (s->nperf + 1) * sizeof(*s->perf));
			s->perf[s->nperf++] = km;
			continue;
		}
		for (size_t i = 0; i < s->nmods; i++) {
			struct sym_module *m = &s->mods[i];
			const struct ap_mapping *map = m->map;
			if (map->start >> AP_RUN_SHIFT != km->proc || strcmp(map->path, km->path) ||
			    map->build_id_len != km->build_id_len ||
			    memcmp(map->build_id, km->build_id, km->build_id_len))
				continue;
			m->stored = ap_xrealloc(m->stored, (m->nstored + 1) * sizeof(*m->stored));
			m->stored[m->nstored++] = km;
		}
	}
}

struct ap_symbolizer *ap_sym_new(const struct ap_trace *t,
				 const struct ap_sym_options *opts,
				 struct ap_error *err)
{
	static const struct ap_sym_options no_opts;
	if (!opts)
		opts = &no_opts;
	struct ap_symbolizer *s = ap_xcalloc(1, sizeof(*s));
	ap_u64map_init(&s->pcs, 1024);
	s->t = t;
	s->no_demangle = opts->no_demangle;
	s->full_names = opts->full_names;
	ap_buf_init(&s->scratch);
	if (opts->drop_frames) {
		s->drop = ap_regex_new(opts->drop_frames, "--drop-frames", err);
		if (!s->drop) {
			ap_u64map_release(&s->pcs);
			free(s);
			return NULL;
		}
	}

	/* Never reach out to debuginfod servers behind the user's back: a
	 * missing debug file would cost a network timeout per module. */
	const char *dbgd = getenv("ALLOCPROF_DEBUGINFOD");
	if (!dbgd || strcmp(dbgd, "1"))
		unsetenv("DEBUGINFOD_URLS");

	struct ap_buf path = AP_BUF_INIT;
	if (opts->debug_dir)
		ap_buf_addf(&path, "%s:", opts->debug_dir);
	/* elfutils' default: the module's directory, .debug, /usr/lib/debug */
	ap_buf_addstr(&path, ":.debug:/usr/lib/debug");
	s->debuginfo_path = ap_buf_detach(&path, NULL);
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = ap_debugcache_find_debuginfo;
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	s->cbp = strcmp(s->debuginfo_path, default_path) ? &s->cb : &default_cb;

	s->nmods = t->nmaps;
	s->mods = ap_xcalloc(s->nmods ? s->nmods : 1, sizeof(*s->mods));
	for (size_t i = 0; i < s->nmods; i++) {
		s->mods[i].map = &t->maps[i];
		s->mods[i].base = intern(&s->strs, path_base(t->maps[i].path));
		s->mods[i].canon = -1;
		s->mods[i].has_lines = -1;
		s->mods[i].kept_superseded = -1;
	}
	if (t->nprocs)
		find_canon(s);
	attach_kept(s);

	/* Open only the modules some stack references, now, so that their
	 * warnings are known before any view prints. A frame the previous
	 * stack had at the same height (counted from the root: stacks made
	 * one after another share their outer frames) has its entry. */
	const struct ap_stack *prev = NULL;
	for (size_t i = 1; i < t->nstacks; i++) {
		const struct ap_stack *st = &t->stacks[i];
		for (uint32_t d = 0; d < st->depth; d++) {
			uint32_t h = st->depth - d;
			if (prev && h <= prev->depth && prev->pcs[prev->depth - h] == st->pcs[d])
				continue;
			struct pc_entry *e = entry_get(s, st->pcs[d]);
			if (e->mod >= 0 && !s->mods[e->mod].nstored)
				module_get(s, e->mod);
		}
		prev = st;
	}
	return s;
}

void ap_sym_free(struct ap_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->tabn; i++) {
		free(s->tab[i].frames);
		free(s->tab[i].cls);
	}
	free(s->tab);
	ap_u64map_release(&s->pcs);
	for (size_t i = 0; i < s->nmods; i++) {
		struct sym_module *m = &s->mods[i];
		if (m->dwfl && !(pre_share && s->cbp == &default_cb && m->state == MOD_OK &&
				 m->mod && pre_put(m->map, m->dwfl, m->mod, m->at, true)))
			dwfl_end(m->dwfl);
		free(s->mods[i].funcs);
		for (size_t k = 0; k < s->mods[i].ncus; k++)
			free(s->mods[i].cus[k].r);
		free(s->mods[i].cus);
		free(s->mods[i].spans);
	}
	for (size_t i = 0; i < s->nmods; i++)
		free(s->mods[i].stored);
	free(s->mods);
	free(s->perf);
	ap_perfmap_release(&s->live_perf);
	for (size_t i = 0; i < s->nwarn; i++)
		free(s->warnings[i]);
	free(s->warnings);
	ap_regex_free(s->drop);
	ap_buf_release(&s->scratch);
	ap_intern_release(&s->strs);
	free(s->debuginfo_path);
	free(s);
}

int ap_sym_prefetch(const struct ap_trace *t)
{
	struct ap_error err;
	struct ap_symbolizer *s = ap_sym_new(t, NULL, &err);
	if (!s)
		return -1;
	int n = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		struct sym_module *m = &s->mods[i];
		const struct ap_mapping *map = m->map;
		/* (ap_sym_new opened the modules the stacks name) */
		if (m->state != MOD_OK || !m->dwfl || s->cbp != &default_cb ||
		    map->build_id_len > sizeof(pre->build_id))
			continue;
		Dwarf_Addr bias;
		(void)dwfl_module_getdwarf(m->mod, &bias); /* the costly part: read, inflated */
		if (!pre_put(map, m->dwfl, m->mod, m->at, false))
			continue; /* (ap_sym_free ends it) */
		m->dwfl = NULL; /* the cache's now */
		m->mod = NULL;
		n++;
	}
	ap_sym_free(s);
	return n;
}

void ap_sym_share(bool on)
{
	pre_share = on;
}

unsigned ap_sym_files_opened(void)
{
	return files_opened;
}

int ap_sym_prefetch_release(void)
{
	int n = 0;
	for (size_t i = 0; i < npre; i++) {
		n += !pre[i].used;
		dwfl_end(pre[i].dwfl);
		free(pre[i].path);
	}
	free(pre);
	pre = NULL;
	npre = 0;
	return n;
}

/* PCs by module (its mapping), then by address. */
static int kept_cmp(const void *a, const void *b, void *ctx)
{
	const struct ap_symbolizer *s = ctx;
	const struct pc_entry *x = &s->tab[*(const uint32_t *)a];
	const struct pc_entry *y = &s->tab[*(const uint32_t *)b];
	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

void ap_sym_keep(struct ap_symbolizer *s, struct ap_symtab_writer *w)
{
	const struct ap_trace *t = s->t;
	/* Every PC of every stack has its entry since ap_sym_new's pass over
	 * them (resolve adds none): the table, not the stacks again (a
	 * lookup a frame, 2.9 M of them for a `cppcheck` run recorded --all,
	 * at the end of record). */
	for (size_t i = 0; i < s->tabn; i++)
		if (!s->tab[i].frames)
			resolve(s, &s->tab[i]);
	uint32_t *ord = ap_xmalloc((s->tabn ? s->tabn : 1) * sizeof(*ord));
	for (size_t i = 0; i < s->tabn; i++)
		ord[i] = (uint32_t)i;
	qsort_r(ord, s->tabn, sizeof(*ord), kept_cmp, s);
	int64_t cur = INT64_MIN;
	char perf_path[64];
	ap_perfmap_path(perf_path, sizeof(perf_path), t->pid);
	for (size_t i = 0; i < s->tabn; i++) {
		const struct pc_entry *e = &s->tab[ord[i]];
		const struct ap_frame *f = e->frames;
		struct sym_module *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
		uint64_t off = e->pc;
		if (m) {
			/* a file that could not be read names nothing: its PCs
			 * are looked up again when the trace is read */
			struct sym_module *c = m->canon >= 0 ? &s->mods[m->canon] : m;
			if (c->state != MOD_OK || f[0].module_unusable)
				continue;
			off = e->pc - m->map->bias;
			if (cur != e->mod)
				ap_symtab_writer_module(w, m->map->path, m->map->build_id,
							m->map->build_id_len,
							module_has_lines(c) ? AP_SYMTAB_HAS_LINES : 0);
		} else {
			if (f[0].unsymbolized)
				continue; /* no perf map names it */
			if (cur != e->mod)
				ap_symtab_writer_module(w, perf_path, NULL, 0, AP_SYMTAB_PERF_MAP);
		}
		cur = e->mod;
		ap_symtab_writer_pc(w, off, e->nframes);
		for (uint32_t k = 0; k < e->nframes; k++)
			ap_symtab_writer_frame(w, f[k].unsymbolized ? NULL : f[k].mangled, f[k].file,
					       f[k].line > 0 ? (uint32_t)f[k].line : 0,
					       f[k].column > 0 ? (uint32_t)f[k].column : 0);
	}
	free(ord);
}

int ap_sym_keep_file(const char *path, const char *debug_dir, int level, struct ap_error *err)
{
	struct ap_trace *t;
	if (ap_trace_read(path, &t, err, NULL, NULL) < 0)
		return -1;
	if (t->symtab.nmods) {
		ap_trace_free(t); /* kept already */
		return 2;
	}
	/* appended to a trace whose writer may still append, or after a
	 * cut chunk (whose length would swallow them), they would spoil it */
	if (t->bytes_used != t->file_size || !t->has_end) {
		ap_error_set(err, "%s: %s: its symbols are kept once it is finished", path,
			     t->bytes_used != t->file_size ? "the file ends inside a chunk"
							   : "no end record (the process may "
							     "still be writing it)");
		ap_trace_free(t);
		return 1;
	}
	struct ap_sym_options o = { .debug_dir = debug_dir };
	struct ap_symbolizer *s = ap_sym_new(t, debug_dir ? &o : NULL, err);
	if (!s) {
		ap_trace_free(t);
		return -1;
	}
	struct ap_symtab_writer *w = ap_symtab_writer_new();
	ap_sym_keep(s, w);
	int rc = ap_symtab_append(path, w, level, t->end_off, err);
	ap_symtab_writer_free(w);
	ap_sym_free(s);
	ap_trace_free(t);
	return rc;
}
