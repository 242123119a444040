/* selfinfo.h: what the sampler (liballocprof.so) and allocprof try's
 * library (liballocprof-try.so) both ask about the process they are
 * loaded into: a module's GNU build-id, whose malloc the program's
 * calls reach, and where a library's text is. Header-only (static inline): the two libraries share no
 * code at run time. Calls nothing that allocates. */
#ifndef AP_SELFINFO_H
#define AP_SELFINFO_H

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* The GNU build-id of a module of dl_iterate_phdr, into out (at most cap
 * bytes); its length, 0 if it has none. */
static inline size_t ap_build_id_of(const struct dl_phdr_info *info, uint8_t *out, size_t cap)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		size_t align = ph->p_align == 8 ? 8 : 4;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));
			const uint8_t *next = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
			if (next > end || next <= p)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4)) {
				size_t n = nh->n_descsz < cap ? nh->n_descsz : cap;
				memcpy(out, desc, n);
				return n;
			}
			p = next;
		}
	}
	return 0;
}

/* A program that defines malloc itself (an allocator linked in
 * statically, a shim over mmap) or a library preloaded before `self`
 * comes first in the symbol lookup: the program's calls never reach
 * `self` (the load address of the calling library). Writes into owner
 * (cap bytes) the object whose malloc, free, calloc or realloc the
 * program's calls reach when it is not `self` ("" if it is). A non-PIE
 * executable that takes malloc's address in its code (python3 does) has
 * a canonical PLT entry for it: lookup finds that address in the
 * executable, but the symbol there is undefined, and the calls go through
 * the PLT to whatever defines malloc: not a malloc of the program's own. */
static inline void ap_malloc_owner_find(char *owner, size_t cap, const void *self)
{
	static const char *const names[] = {"malloc", "free", "calloc", "realloc"};
	owner[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *p = dlsym(RTLD_DEFAULT, names[i]);
		Dl_info di;
		const ElfW(Sym) *sym = NULL;
		if (!p || !dladdr1(p, &di, (void **)&sym, RTLD_DL_SYMENT) || di.dli_fbase == self)
			continue;
		/* dladdr names defined symbols only: a PLT stub is none */
		if (!sym || sym->st_shndx == SHN_UNDEF || !di.dli_sname ||
		    strcmp(di.dli_sname, names[i]))
			continue;
		size_t n = 0;
		while (di.dli_fname && di.dli_fname[n])
			n++;
		if (n && n < cap && di.dli_fname[0] == '/') {
			memcpy(owner, di.dli_fname, n + 1);
		} else { /* the program: argv[0] in the link map, or no name */
			ssize_t k = readlink("/proc/self/exe", owner, cap - 1);
			if (k <= 0)
				memcpy(owner, "the program", sizeof("the program"));
			else
				owner[k] = 0;
		}
		return;
	}
}

/* A module's PT_LOAD segments whose p_flags have every bit of `flags` (0:
 * all of them), as the process maps them: from the lowest start to the
 * highest end, how many, and whether `at` lies in one (not only between
 * them). */
struct ap_load_extent {
	uintptr_t lo, hi;	/* lo = UINTPTR_MAX, hi = 0 when none */
	unsigned n;
	int holds;
};

static inline struct ap_load_extent ap_load_extent_of(const struct dl_phdr_info *info, unsigned flags,
						      uintptr_t at)
{
	struct ap_load_extent e = { UINTPTR_MAX, 0, 0, 0 };
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & flags) != flags)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		e.holds |= at - a < ph->p_memsz;
		e.lo = a < e.lo ? a : e.lo;
		e.hi = b > e.hi ? b : e.hi;
		e.n++;
	}
	return e;
}

/* The executable segments of the module that holds fn, from the lowest
 * start to the highest end (libunwind's text: where its calls come
 * from); lo = hi = 0 when no module holds it. */
struct ap_text_range {
	uintptr_t at, lo, hi;
};

static inline int ap_text_range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct ap_text_range *r = (struct ap_text_range *)arg;
	struct ap_load_extent e = ap_load_extent_of(info, PF_X, r->at);
	if (!e.holds)
		return 0;
	r->lo = e.lo;
	r->hi = e.hi;
	return 1;
}

static inline void ap_text_range_of(const void *fn, uintptr_t *lo, uintptr_t *hi)
{
	struct ap_text_range r = { (uintptr_t)fn, 0, 0 };
	dl_iterate_phdr(ap_text_range_cb, &r);
	*lo = r.lo;
	*hi = r.hi;
}

/* glibc's sigprocmask is pthread_sigmask with its error in errno: the
 * one both libraries' exported sigprocmask calls before dlsym has found
 * the program's (a handler may make the first call, where dlsym must not
 * run). */
static inline int ap_sigprocmask_glibc(int how, const sigset_t *set, sigset_t *old)
{
	int e = pthread_sigmask(how, set, old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

#endif
