/* attach.c: the sampler loaded into a running process (`allocprof record
 * -p PID`, cli/record/attach.c). The library is dlopen'ed (RTLD_LOCAL:
 * none of its exports enter the program's symbol scope) and told to start;
 * the program's calls of the malloc family reach it because the GOT
 * entries that name them (R_X86_64_JUMP_SLOT and GLOB_DAT relocations) in
 * every loaded module are pointed at thunks here, which count the threads
 * inside them (at_in, in the TLS block record reads). Detach puts every
 * entry back, and once record has seen no thread inside (allocprof_detach,
 * then allocprof_attach_finish), the trace ends, every mapping the attach
 * made goes (they all come from one reserved range: __wrap_mmap64), and the
 * library's writable data is put back as it was before the first attach:
 * it stays mapped, inert, and a second attach starts from scratch.
 * Owns attach_mode. */
#include "sampler-int.h"
#include "cfi.h"

int attach_mode;

/* ---- every mapping of an attach in one range ---------------------------
 *
 * The library is linked with --wrap=mmap64,--wrap=munmap: its own mmap
 * calls come here. While attached, a mapping with no address asked is
 * taken from a range reserved at the attach (PROT_NONE, no memory), and
 * an unmap inside it turns the pages back into reservation, so that the
 * program's own mappings never land there; detach unmaps the range at
 * once, whatever the sampler left in it. */
#define REGION_SIZE (1ull << 32)
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

/* State that outlives the restore of the library's data (see snap_*) */
struct keep {
	uintptr_t region, region_next;
	uint8_t *snap;			/* the data as it was before the first attach */
	uint8_t *data;			/* where it goes back */
	size_t data_len;
	int forks_registered;
	/* libunwind, loaded by the first attach: its data as loaded, put
	 * back by every detach (see "libunwind as loaded" below) */
	int unw_loaded;			/* dlopen'ed once */
	int unw_shared;			/* the program's too: left as it is */
	uint8_t *unw_snap, *unw_data;
	size_t unw_len;
	size_t unw_modid, unw_tls_len;	/* its TLS module, its TLS block's size */
	uintptr_t old_lo, old_hi;	/* every region of past attaches, in one range */
};
static struct keep keep;

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uintptr_t r = __atomic_load_n(&keep.region, __ATOMIC_ACQUIRE);
	if (!r || addr || (flags & MAP_FIXED))
		return __real_mmap64(addr, len, prot, flags, fd, off);
	size_t n = (len + 4095) & ~(size_t)4095;
	uintptr_t p = __atomic_fetch_add(&keep.region_next, n, __ATOMIC_RELAXED);
	if (p + n > r + REGION_SIZE) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return __real_mmap64((void *)p, len, prot, flags | MAP_FIXED, fd, off);
}

int __wrap_munmap(void *addr, size_t len)
{
	uintptr_t r = __atomic_load_n(&keep.region, __ATOMIC_ACQUIRE), a = (uintptr_t)addr;
	if (!r || a < r || a >= r + REGION_SIZE)
		return __real_munmap(addr, len);
	void *p = __real_mmap64(addr, len, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? -1 : 0;
}

/* ---- the library's data as before the first attach ---------------------
 *
 * Its writable data past RELRO (.data, .bss): taken once, the first time
 * (after the constructor, which found no settings and left the sampler
 * off), and put back at the end of every attach. The TLS block of every
 * thread is record's to reset (allocprof_attach_info). */
static int snap_range(const void *in, uint8_t **start, size_t *len, size_t *tls_len)
{
	Dl_info di;
	if (!dladdr(in, &di))
		return -1;
	uintptr_t base = (uintptr_t)di.dli_fbase;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)di.dli_fbase;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	uintptr_t lo = 0, hi = 0, relro = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W)) {
			lo = base + ph[i].p_vaddr;
			hi = lo + ph[i].p_memsz;
		} else if (ph[i].p_type == PT_GNU_RELRO) {
			relro = base + ph[i].p_vaddr + ph[i].p_memsz;
		} else if (ph[i].p_type == PT_TLS && tls_len) {
			*tls_len = ph[i].p_memsz;
		}
	}
	if (relro > lo)
		lo = relro;
	if (!lo || hi <= lo)
		return -1;
	*start = (uint8_t *)lo;
	*len = hi - lo;
	return 0;
}

static void snap_restore(void)
{
	struct keep k = keep;
	memcpy(k.data, k.snap, k.data_len);
	keep = k;
}

/* ---- the GOT entries of the malloc family ------------------------------ */

/* threads inside a thunk: record waits for every one to be 0 */
__thread uint32_t at_in __attribute__((tls_model("initial-exec")));
static int dl_dirty;		/* a module may have been loaded: look again */

void *(*real_dlopen)(const char *, int);
void *(*real_dlmopen)(Lmid_t, const char *, int);
void *(*real_dlsym)(void *, const char *);
void *(*real_dlvsym)(void *, const char *, const char *);
void at_dlopen(void);
void at_dlmopen(void);
void at_dlsym(void);
void at_dlvsym(void);
void at_rescan(void);

/* dlopen and dlmopen note that modules may have come and jump on (their
 * caller's return address must be theirs: it decides the namespace, the
 * RUNPATH searched and $ORIGIN); dlsym and dlvsym patch what came before
 * they jump on, so that a function of a module just loaded is routed
 * before the program can call it. */
#define AT_JUMP_DIRTY(name)                                 \
	".type at_" #name ", @function\n"                  \
	"at_" #name ":\n"                                   \
	"	movl $1, dl_dirty(%rip)\n"                   \
	"	jmp *real_" #name "(%rip)\n"                  \
	".size at_" #name ", .-at_" #name "\n"
#define AT_RESCAN_JUMP(name)                                \
	".type at_" #name ", @function\n"                  \
	"at_" #name ":\n"                                   \
	"	push %rdi\n"                                  \
	"	push %rsi\n"                                  \
	"	push %rdx\n"                                  \
	"	call at_rescan\n"                             \
	"	pop %rdx\n"                                   \
	"	pop %rsi\n"                                   \
	"	pop %rdi\n"                                   \
	"	jmp *real_" #name "(%rip)\n"                  \
	".size at_" #name ", .-at_" #name "\n"
__asm__(".text\n" AT_JUMP_DIRTY(dlopen) AT_JUMP_DIRTY(dlmopen) AT_RESCAN_JUMP(dlsym)
		AT_RESCAN_JUMP(dlvsym));

/* syscall: SYS_seccomp goes to the library's own (refused.c: the filter
 * is kept, the buffers flushed first), every other number straight on to
 * the C library's by a jump, so that a thread waiting in a system call
 * made this way (a futex) is never inside this library's text, where
 * record's detach would wait for it */
long (*real_syscall)(long, ...);
long (*own_syscall)(long, ...);
static ssize_t (*own_read)(int, void *, size_t);
static int (*own_sigprocmask)(int, const sigset_t *, sigset_t *);
#define AT_STR_(x) #x
#define AT_STR(x) AT_STR_(x)
void at_syscall(void);
__asm__(".text\n"
	".type at_syscall, @function\n"
	"at_syscall:\n"
	"	cmpq $" AT_STR(SYS_seccomp) ", %rdi\n"
	"	je 1f\n"
	"	jmp *real_syscall(%rip)\n"
	"1:	jmp *own_syscall(%rip)\n"
	".size at_syscall, .-at_syscall\n");

/* the library's own entry points (interpose.c), found by dlsym on its
 * own handle: a call by name from here would reach the C library's */
static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	int (*pipe2)(int[2], int);
} own;

static void patch_all(void);
static int patch_lock;
static int patch_off;		/* detached: nothing is patched again (patch_lock) */

static inline void at_enter(void)
{
	at_in++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (UNLIKELY(__atomic_load_n(&dl_dirty, __ATOMIC_RELAXED)) && !tls.guard)
		at_rescan();
}

static inline void at_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	at_in--;
}

void at_rescan(void)
{
	at_in++;
	if (__atomic_exchange_n(&dl_dirty, 0, __ATOMIC_ACQ_REL)) {
		tls.guard++;
		lk_lock(&patch_lock);
		if (!patch_off)
			patch_all();
		lk_unlock(&patch_lock);
		tls.guard--;
	}
	at_in--;
}

#define THUNK(ret, name, params, args)                 \
	static ret th_##name params                    \
	{                                              \
		at_enter();                            \
		ret r_ = own.name args;                \
		at_leave();                            \
		return r_;                             \
	}
THUNK(void *, malloc, (size_t n), (n))
THUNK(void *, calloc, (size_t a, size_t b), (a, b))
THUNK(void *, realloc, (void *p, size_t n), (p, n))
THUNK(void *, reallocarray, (void *p, size_t a, size_t b), (p, a, b))
THUNK(int, posix_memalign, (void **p, size_t a, size_t n), (p, a, n))
THUNK(void *, aligned_alloc, (size_t a, size_t n), (a, n))
THUNK(void *, memalign, (size_t a, size_t n), (a, n))
THUNK(void *, valloc, (size_t n), (n))
THUNK(void *, pvalloc, (size_t n), (n))
#undef THUNK

static void th_free(void *p)
{
	at_enter();
	own.free(p);
	at_leave();
}

struct route {
	const char *name;
	void *to;
};
/* The entries set by allocprof_attach_prepare (NULL until then): the
 * library's own wrappers, as under the preload: the exec family's
 * (exec.c), which end the trace (reason exec) before the exec, the
 * environment passed as it is; _exit's and _Exit's (lifecycle.c), which
 * end it before the process does; sigaction's and the signal family's
 * (signals.c), through which the program sees and sets its own
 * dispositions while the sampler's handler is under the fatal signals;
 * the descriptor calls' (tracefile.c), through which the program can
 * neither see nor close the sampler's descriptors; prctl's and, for
 * SYS_seccomp only, syscall's (refused.c, at_syscall), which keep a
 * seccomp filter the program installs */
static struct route routes[] = {
	{ "malloc", (void *)th_malloc },
	{ "free", (void *)th_free },
	{ "cfree", (void *)th_free },
	{ "calloc", (void *)th_calloc },
	{ "realloc", (void *)th_realloc },
	{ "reallocarray", (void *)th_reallocarray },
	{ "posix_memalign", (void *)th_posix_memalign },
	{ "aligned_alloc", (void *)th_aligned_alloc },
	{ "memalign", (void *)th_memalign },
	{ "valloc", (void *)th_valloc },
	{ "pvalloc", (void *)th_pvalloc },
	{ "dlopen", (void *)at_dlopen },
	{ "dlmopen", (void *)at_dlmopen },
	{ "dlsym", (void *)at_dlsym },
	{ "dlvsym", (void *)at_dlvsym },
	{ "execve", NULL }, { "execvpe", NULL }, { "fexecve", NULL }, { "execveat", NULL },
	{ "execv", NULL }, { "execvp", NULL }, { "execl", NULL }, { "execlp", NULL },
	{ "execle", NULL }, { "_exit", NULL }, { "_Exit", NULL }, { "sigaction", NULL },
	{ "signal", NULL }, { "bsd_signal", NULL }, { "sysv_signal", NULL },
	{ "siginterrupt", NULL }, { "sigset", NULL }, { "sigignore", NULL },
	{ "close", NULL }, { "close_range", NULL }, { "closefrom", NULL }, { "dup2", NULL },
	{ "dup3", NULL }, { "prctl", NULL }, { "syscall", (void *)at_syscall },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))
/* libunwind (loaded by the sampler, its allocations not the program's)
 * gets its own: its address-checking pipe is never made, and its check
 * answered without one (tracefile.c's pipe2 and unw_check, reached by
 * the library's syscall), as under the preload; its mappings
 * (a trace cache for each thread that unwinds, ELF images) into the
 * attach's range, which detach unmaps; its pthread keys noted, for
 * detach to delete (see "libunwind as loaded"). Only pipe2 when the
 * program has libunwind too (unw_shared). */
static int unw_key_create(pthread_key_t *key, void (*destr)(void *));
static struct route unw_routes[8];
static size_t n_unw_routes;
static pthread_key_t unw_keys[4];
static unsigned n_unw_keys;

/* Every entry changed: where, what it held, whether its page is RELRO */
struct got_ent {
	uint64_t *slot;
	uint64_t old, to;
	int relro;
};
#define MAX_ENTS (1u << 16)
static struct got_ent *ents;	/* MAX_ENTS, in the region */
static uint32_t nents;
static uintptr_t self_base;

static int got_write(uint64_t *slot, uint64_t v, int relro)
{
	uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)4095;
	if (relro && mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE) < 0)
		return -1;
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
	if (relro)
		mprotect((void *)pg, 4096, PROT_READ);
	return 0;
}

static const struct route *route_of(const struct route *rt, size_t nrt, const char *name)
{
	for (size_t i = 0; i < nrt; i++)
		if (!strcmp(rt[i].name, name))
			return &rt[i];
	return NULL;
}

struct got_scope {
	uintptr_t base, rr_lo, rr_hi;	/* the module, its RELRO */
	const Elf64_Sym *sym;
	const char *str;
	const struct route *rt;		/* what is routed where */
	size_t nrt;
};

static void patch_rela(const struct got_scope *g, const Elf64_Rela *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned type = ELF64_R_TYPE(r[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		const struct route *ro =
			route_of(g->rt, g->nrt, g->str + g->sym[ELF64_R_SYM(r[i].r_info)].st_name);
		if (!ro || !ro->to)
			continue;
		uint64_t *slot = (uint64_t *)(g->base + r[i].r_offset);
		uint64_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (cur == (uintptr_t)ro->to)
			continue;
		int relro = (uintptr_t)slot >= g->rr_lo && (uintptr_t)slot < g->rr_hi;
		uint32_t k;
		for (k = 0; k < nents && ents[k].slot != slot; k++)
			;
		if (k == nents) {
			if (nents == MAX_ENTS)
				return;
			nents++;
		}
		/* an entry seen before and changed since (resolved lazily by
		 * the loader meanwhile) keeps what it held now */
		ents[k] = (struct got_ent){ slot, cur, (uintptr_t)ro->to, relro };
		got_write(slot, (uintptr_t)ro->to, relro);
	}
}

static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	/* the loader relocates most d_ptr values in place; the vDSO's not */
	return v < base ? base + v : v;
}

/* arg: non-NULL, libunwind only */
static int patch_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	uintptr_t base = info->dlpi_addr;
	if (base == self_base || strstr(name, "linux-vdso") || strstr(name, "/ld-linux"))
		return 0;
	int unw = strstr(name, "libunwind") != NULL;
	if (arg && !unw)
		return 0;
	const Elf64_Dyn *dyn = NULL;
	uintptr_t rr_lo = 0, rr_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(base + info->dlpi_phdr[i].p_vaddr);
		else if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			rr_lo = base + info->dlpi_phdr[i].p_vaddr;
			rr_hi = rr_lo + info->dlpi_phdr[i].p_memsz;
		}
	}
	if (!dyn)
		return 0;
	uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0;
	size_t pltsz = 0, relasz = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_RELA: rela = dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltsz = dyn->d_un.d_val; break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		default: break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	struct got_scope g = { base, rr_lo, rr_hi, (const Elf64_Sym *)symtab,
			       (const char *)strtab, unw ? unw_routes : routes,
			       unw ? n_unw_routes : NROUTES };
	if (jmprel)
		patch_rela(&g, (const Elf64_Rela *)jmprel, pltsz / sizeof(Elf64_Rela));
	if (rela)
		patch_rela(&g, (const Elf64_Rela *)rela, relasz / sizeof(Elf64_Rela));
	return 0;
}

/* patch_lock held */
static void patch_all(void)
{
	dl_iterate_phdr(patch_module, NULL);
}

/* ---- libunwind as loaded ------------------------------------------------
 *
 * libunwind keeps its state in its own data (.data, .bss): the pipe it
 * checks addresses with (its numbers in a static that nothing outside can
 * reach), the per-thread trace caches' key and pool, the DWARF caches, the
 * "initialised" flags. Detach closes the pipe and puts that data back as
 * it was when the first attach loaded libunwind, before any use, so that
 * libunwind holds no descriptor number (which the program may open a file
 * at later) and the next attach sets it up from scratch, pipe and all.
 * What it pointed at goes too: every mapping it made was in the attach's
 * range (unw_routes), and its pthread keys are deleted (no destructor
 * runs for a thread's stale cache). Each thread's own TLS block of
 * libunwind (the trace cache's pointer) is set as new by the thread at its
 * first unwind of the next attach (unw_tls_fresh). Not when the program
 * has libunwind.so.8 itself (linked, or loaded before the first attach, or
 * by a module that needs it since): the state is then also the program's,
 * and is left as it is. */

static int unw_key_create(pthread_key_t *key, void (*destr)(void *))
{
	int rc = pthread_key_create(key, destr);
	if (rc == 0 && n_unw_keys < sizeof(unw_keys) / sizeof(unw_keys[0]))
		unw_keys[n_unw_keys++] = *key;
	return rc;
}

/* libunwind.so.8's data as loaded, and its TLS module: 0, or -1 */
static int unw_snap_take(void *h)
{
	void *fn = dlsym(h, "_ULx86_64_init_local");
	uint8_t *d;
	size_t n, tls_len = 0, modid = 0;
	if (!fn || snap_range(fn, &d, &n, &tls_len) < 0)
		return -1;
	if (tls_len && dlinfo(h, RTLD_DI_TLS_MODID, &modid) < 0)
		return -1;
	uint8_t *s = __real_mmap64(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0);
	if (s == MAP_FAILED)
		return -1;
	memcpy(s, d, n);
	keep.unw_snap = s;
	keep.unw_data = d;
	keep.unw_len = n;
	keep.unw_modid = modid;
	keep.unw_tls_len = tls_len;
	return 0;
}

/* Whether the loaded module name at base, its dynamic section dyn, needs
 * libunwind.so.8 (libunwind and this library aside): it then shares the
 * sampler's */
static int needs_unwind(const char *name, uintptr_t base, const Elf64_Dyn *dyn)
{
	if (!dyn || base == self_base || strstr(name, "linux-vdso") || strstr(name, "/libunwind.so"))
		return 0;
	uintptr_t strtab = 0;
	for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			strtab = dyn_ptr(base, d->d_un.d_ptr);
	if (!strtab)
		return 0;
	for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED &&
		    !strncmp((const char *)strtab + d->d_un.d_val, "libunwind.so.", 13))
			return 1;
	return 0;
}

static int unw_needed_fn(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	const Elf64_Dyn *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	return needs_unwind(info->dlpi_name ? info->dlpi_name : "", info->dlpi_addr, dyn);
}

/* Whether a module needs libunwind.so.8: through dl_iterate_phdr, or in a
 * forked child (one thread; the loader's list lock may have been held by
 * another thread of the parent) along the loader's list of the base
 * namespace, where this library and libunwind are */
static int unw_needed(int child)
{
	if (!child)
		return dl_iterate_phdr(unw_needed_fn, NULL);
	for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next)
		if (needs_unwind(l->l_name ? l->l_name : "", l->l_addr, l->l_ld))
			return 1;
	return 0;
}

/* libunwind as loaded, at the end of an attach (no thread inside the
 * sampler; child: in a forked child): 0, or -1 if the program shares it
 * now (nothing done; the attach's range must then stay, libunwind's state
 * points into it) */
static int unw_reset(int child)
{
	if (!keep.unw_loaded || keep.unw_shared)
		return 0;
	if (unw_needed(child)) {
		keep.unw_shared = 1;
		return -1;
	}
	for (unsigned i = 0; i < n_unw_keys; i++)
		pthread_key_delete(unw_keys[i]);
	n_unw_keys = 0;
	memcpy(keep.unw_data, keep.unw_snap, keep.unw_len);
	return 0;
}

/* glibc's dynamic thread vector, as every x86-64 glibc lays it out: the
 * thread pointer's second word points at slot 1; slot 0 holds its length,
 * slot m the TLS block of module m (-1: not allocated in this thread) */
struct dtv_slot {
	uintptr_t val, to_free;
};

__thread uint8_t unw_fresh __attribute__((tls_model("initial-exec")));

/* This thread's TLS block of libunwind as a new thread's, if it still
 * holds a trace cache of an earlier attach (a pointer into an attach
 * range, unmapped since; libunwind's key for it deleted): a block that
 * holds anything else is not touched. */
void unw_tls_fresh(void)
{
	unw_fresh = 1;
	size_t m = keep.unw_modid, len = keep.unw_tls_len;
	if (!m || !keep.old_hi || keep.unw_shared || len > 64 || len % 8)
		return;
	const struct dtv_slot *dtv =
		*(struct dtv_slot *const *)((uintptr_t)__builtin_thread_pointer() + 8);
	if (!dtv || m > dtv[-1].val || !dtv[m].val || dtv[m].val == UINTPTR_MAX)
		return;
	uint64_t *w = (uint64_t *)dtv[m].val;
	int stale = 0;
	for (size_t i = 0; i < len / 8; i++) {
		if (w[i] >= keep.old_lo && w[i] < keep.old_hi)
			stale = 1;
		else if (w[i] > 1)
			return;
	}
	if (stale)
		memset(w, 0, len);
}

/* libunwind's routes before the sampler starts: libunwind opens its pipe
 * when it is set up (unwinder_load), before the program's modules are
 * routed; they must not be before the sampler is on (a call then would
 * leave the thread's countdown as for a sampler that is off) */
static void patch_unwinder(void)
{
	static int only_unw = 1;
	if (!keep.unw_loaded) {
		void *pre = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD);
		if (pre) {
			keep.unw_shared = 1; /* the program's own */
			dlclose(pre);
		}
	}
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return; /* unwinder_load says so */
	if (!keep.unw_loaded) {
		keep.unw_loaded = 1;
		if (!keep.unw_shared && unw_snap_take(h) < 0)
			keep.unw_shared = 1;
	}
	n_unw_routes = 0;
	unw_routes[n_unw_routes++] = (struct route){ "pipe2", (void *)own.pipe2 };
	/* its address check, made without a pipe (tracefile.c's unw_check) */
	unw_routes[n_unw_routes++] = (struct route){ "syscall", (void *)own_syscall };
	unw_routes[n_unw_routes++] = (struct route){ "read", (void *)own_read };
	unw_masks_kept = keep.unw_shared;
	if (!keep.unw_shared) {
		/* its signal masks, not made inside the sampler (tracefile.c) */
		unw_routes[n_unw_routes++] = (struct route){ "sigprocmask", (void *)own_sigprocmask };
		unw_routes[n_unw_routes++] = (struct route){ "mmap", (void *)__wrap_mmap64 };
		unw_routes[n_unw_routes++] = (struct route){ "mmap64", (void *)__wrap_mmap64 };
		unw_routes[n_unw_routes++] = (struct route){ "munmap", (void *)__wrap_munmap };
		unw_routes[n_unw_routes++] =
			(struct route){ "pthread_key_create", (void *)unw_key_create };
	}
	lk_lock(&patch_lock);
	dl_iterate_phdr(patch_module, &only_unw);
	lk_unlock(&patch_lock);
}

/* Every entry back as it was, if it still holds ours. Returns how many. */
static uint32_t unpatch_all(void)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < nents; k++) {
		struct got_ent *e = &ents[k];
		if (__atomic_load_n(e->slot, __ATOMIC_ACQUIRE) == e->to &&
		    got_write(e->slot, e->old, e->relro) == 0)
			n++;
	}
	return n;
}

/* ---- what record calls ------------------------------------------------- */

EXPORT long allocprof_attach_prepare(void);
EXPORT long allocprof_attach(char *cfg);
EXPORT long allocprof_detach(void);
EXPORT long allocprof_attach_finish(void);

/* Filled by allocprof_attach_prepare, read by record from the process's
 * memory: this library's TLS block (the same offset from the thread
 * pointer in every thread), at_in's place in it, and its text. */
#define TLS_VARS 8
EXPORT struct allocprof_attach_info {
	int64_t tls_off[TLS_VARS];	/* each TLS variable, from the thread pointer */
	uint64_t tls_size[TLS_VARS];	/* its size (0: no more); all start as zeros */
	int64_t in_off;		/* at_in, from the thread pointer */
	uint64_t text_lo, text_hi;
} allocprof_attach_info;

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t *tls_memsz = arg;
	(void)size;
	if (info->dlpi_addr != self_base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const Elf64_Phdr *p = &info->dlpi_phdr[i];
		if (p->p_type == PT_TLS) {
			*tls_memsz = p->p_filesz ? UINT64_MAX : p->p_memsz;
		} else if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			allocprof_attach_info.text_lo = info->dlpi_addr + p->p_vaddr;
			allocprof_attach_info.text_hi = allocprof_attach_info.text_lo + p->p_memsz;
		}
	}
	return 1;
}

/* The TLS variables of the library, which record sets back to zeros in
 * every thread before an attach: -1 if the TLS block holds more than
 * these (a variable added elsewhere must be listed here). */
static int tls_vars(void)
{
	struct {
		void *p;
		size_t n;
	} v[] = {
		{ &tls, sizeof(tls) }, { &lock_id, sizeof(lock_id) },
		{ &alt_mine, sizeof(alt_mine) }, { &slow_top, sizeof(slow_top) },
		{ &in_trace_write, sizeof(in_trace_write) }, { &at_in, sizeof(at_in) },
		{ &unw_fresh, sizeof(unw_fresh) }, { &cfi_t, sizeof(cfi_t) },
	};
	uint64_t memsz = 0, sum = 0;
	dl_iterate_phdr(find_text, &memsz);
	uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		allocprof_attach_info.tls_off[i] = (int64_t)((uintptr_t)v[i].p - tp);
		allocprof_attach_info.tls_size[i] = v[i].n;
		sum += v[i].n;
	}
	/* alignment may pad the block, never shrink it */
	return sum <= memsz && memsz - sum < 64 ? 0 : -1;
}

/* Whether this library was loaded by dlopen rather than preloaded: then
 * its names are not in the program's scope, and its constructor waits for
 * allocprof_attach (settings in the environment are not for it). */
int attach_loaded_late(void)
{
	/* the program's handle looks in the global scope only (RTLD_DEFAULT
	 * from here would look in this library's own scope too) */
	void *h = dlopen(NULL, RTLD_LAZY);
	int late = h && dlsym(h, "allocprof_attach_prepare") == NULL;
	if (h)
		dlclose(h);
	return late;
}

/* What a call of `name` from the program reaches now: the first
 * definition in its global scope g, the program's own lookup, which
 * skips a canonical PLT entry (a non-PIE program that takes malloc's
 * address, python3: its symbol is undefined, with the value of its PLT
 * stub), as the dynamic linker does for a call. dlsym returns that stub,
 * whose jump goes through the very GOT entry the attach points at the
 * thunk: the thunk's sampler called it as glibc's, and again, until the
 * stack ran out. Past the stub, the modules in load order, each asked
 * for its own definition. NULL: none. */
static void *scope_fn(void *g, const char *name)
{
	void *p = dlsym(g, name);
	const ElfW(Sym) *sym = NULL;
	Dl_info di;
	if (!p || !dladdr1(p, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    sym->st_shndx != SHN_UNDEF)
		return p;
	struct link_map *lm = NULL;
	if (dlinfo(g, RTLD_DI_LINKMAP, &lm) < 0)
		return NULL;
	for (struct link_map *l = lm; l; l = l->l_next) {
		if (!l->l_name || !l->l_name[0])
			continue; /* the program (its stub), the vDSO */
		void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		void *q = dlsym(h, name);
		dlclose(h);
		sym = NULL;
		if (q && dladdr1(q, &di, (void **)&sym, RTLD_DL_SYMENT) && sym &&
		    sym->st_shndx != SHN_UNDEF && di.dli_fname && !strcmp(di.dli_fname, l->l_name))
			return q;
	}
	return NULL;
}

/* The first call after the dlopen, on a thread record stopped: 0, or
 * -EBUSY if the sampler is running here (preloaded, or attached), -EEXIST
 * if it is preloaded, -ENOMEM. The first time, the library's data is
 * kept as it is now, to be put back by every detach. */
EXPORT long allocprof_attach_prepare(void)
{
	if (!attach_loaded_late())
		return -EEXIST;
	if (__atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) != AP_DISABLED || keep.region)
		return -EBUSY;
	Dl_info di;
	if (!dladdr((void *)allocprof_attach_prepare, &di))
		return -ENOENT;
	self_base = (uintptr_t)di.dli_fbase;
	if (tls_vars() < 0)
		return -ENOTSUP;
	allocprof_attach_info.in_off =
		(int64_t)((uintptr_t)&at_in - (uintptr_t)__builtin_thread_pointer());
	void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -ENOENT;
	own.malloc = (void *(*)(size_t))dlsym(h, "malloc");
	own.free = (void (*)(void *))dlsym(h, "free");
	own.calloc = (void *(*)(size_t, size_t))dlsym(h, "calloc");
	own.realloc = (void *(*)(void *, size_t))dlsym(h, "realloc");
	own.reallocarray = (void *(*)(void *, size_t, size_t))dlsym(h, "reallocarray");
	own.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(h, "posix_memalign");
	own.aligned_alloc = (void *(*)(size_t, size_t))dlsym(h, "aligned_alloc");
	own.memalign = (void *(*)(size_t, size_t))dlsym(h, "memalign");
	own.valloc = (void *(*)(size_t))dlsym(h, "valloc");
	own.pvalloc = (void *(*)(size_t))dlsym(h, "pvalloc");
	own.pipe2 = (int (*)(int[2], int))dlsym(h, "pipe2");
	own_syscall = (long (*)(long, ...))dlsym(h, "syscall");
	own_read = (ssize_t (*)(int, void *, size_t))dlsym(h, "read");
	own_sigprocmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(h, "sigprocmask");
	for (size_t i = 0; i < NROUTES; i++)
		if (!routes[i].to) /* the library's own wrappers */
			routes[i].to = dlsym(h, routes[i].name);
	dlclose(h);
	/* The functions the program's calls reached until now: those of its
	 * global scope (a malloc it links, jemalloc say, not libc's, which
	 * RTLD_NEXT finds from here). The program's handle looks there only. */
	void *g = dlopen(NULL, RTLD_LAZY);
	if (!g)
		return -ENOENT;
	real_malloc = (void *(*)(size_t))scope_fn(g, "malloc");
	real_calloc = (void *(*)(size_t, size_t))scope_fn(g, "calloc");
	real_realloc = (void *(*)(void *, size_t))scope_fn(g, "realloc");
	real_free = (void (*)(void *))scope_fn(g, "free");
	real_posix_memalign = (int (*)(void **, size_t, size_t))scope_fn(g, "posix_memalign");
	real_aligned_alloc = (void *(*)(size_t, size_t))scope_fn(g, "aligned_alloc");
	real_memalign = (void *(*)(size_t, size_t))scope_fn(g, "memalign");
	real_valloc = (void *(*)(size_t))scope_fn(g, "valloc");
	real_pvalloc = (void *(*)(size_t))scope_fn(g, "pvalloc");
	real_usable_size = (size_t (*)(void *))scope_fn(g, "malloc_usable_size");
	real_dlopen = (void *(*)(const char *, int))scope_fn(g, "dlopen");
	real_dlmopen = (void *(*)(Lmid_t, const char *, int))scope_fn(g, "dlmopen");
	real_dlsym = (void *(*)(void *, const char *))scope_fn(g, "dlsym");
	real_dlvsym = (void *(*)(void *, const char *, const char *))scope_fn(g, "dlvsym");
	real_syscall = (long (*)(long, ...))scope_fn(g, "syscall");
	dlclose(g);
	if (!real_malloc || !real_calloc || !real_realloc || !real_free || !real_posix_memalign ||
	    !real_aligned_alloc || !real_memalign || !real_valloc || !real_pvalloc ||
	    !real_usable_size || !real_dlopen || !real_dlmopen || !real_dlsym || !real_dlvsym ||
	    !real_syscall || !own_syscall)
		return -ENOENT;
	live_check(); /* chunk headers are read only behind libc's malloc */
	if (!keep.snap) {
		/* once: fork handlers registered again would take the locks twice */
		attach_fork_handlers();
		uint8_t *d;
		size_t n;
		if (snap_range((void *)snap_range, &d, &n, NULL) < 0)
			return -ENOENT;
		uint8_t *s = __real_mmap64(NULL, n, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED)
			return -ENOMEM;
		keep.snap = s;
		keep.data = d;
		keep.data_len = n;
		memcpy(s, d, n); /* keep is in it, still empty of the region */
	}
	return 0;
}

/* Starts recording: cfg is ALLOCPROF's format (sampler/README.md), its
 * buffer PATH_MAX bytes long, and gets the trace's path back (a name
 * taken gets -2, ...). 0, or a negative errno. */
static void range_release(int keep_range);

EXPORT long allocprof_attach(char *cfg)
{
	if (!keep.snap || keep.region)
		return -EBUSY;
	void *r = __real_mmap64(NULL, REGION_SIZE, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return -ENOMEM;
	keep.region_next = (uintptr_t)r;
	__atomic_store_n(&keep.region, (uintptr_t)r, __ATOMIC_RELEASE);
	attach_mode = 1;
	ents = map_mem(MAX_ENTS * sizeof(*ents));
	/* the sampler reads its settings for as long as it runs; cfg is on
	 * record's call frame */
	static char cfg_copy[PATH_MAX + 128];
	size_t cl = str_len(cfg);
	if (cl >= sizeof(cfg_copy))
		cl = sizeof(cfg_copy) - 1;
	memcpy(cfg_copy, cfg, cl);
	cfg_copy[cl] = 0;
	if (ents)
		patch_unwinder();
	long rc = ents ? attach_start(cfg_copy) : -ENOMEM;
	if (rc < 0) {
		/* as a detach leaves it (range_release forgets the range: a
		 * range kept named made every later attach "already attached") */
		tls.guard++;
		if (tfile.fd >= 0)
			sys_close(tfile.fd);
		tfile.fd = -1;
		int keep_range = unw_reset(0) < 0;
		tls.guard--;
		range_release(keep_range);
		return rc;
	}
	size_t n = str_len(tfile.path);
	memcpy(cfg, tfile.path, n + 1);
	lk_lock(&patch_lock);
	patch_all();
	lk_unlock(&patch_lock);
	/* the handler under the fatal signals, now that the program's
	 * sigaction calls come to signals.c */
	tls.guard++;
	sig_install();
	tls.guard--;
	return 0;
}

/* Every GOT entry back: no new call reaches the sampler. Returns how many
 * entries were put back. Record then waits until no thread is inside a
 * thunk (at_in) or this library's text before allocprof_attach_finish. */
EXPORT long allocprof_detach(void)
{
	lk_lock(&patch_lock);
	uint32_t n = unpatch_all();
	nents = 0;
	patch_off = 1; /* a thunk that finds modules new must not route them now */
	lk_unlock(&patch_lock);
	return (long)n;
}

/* The attach's range unmapped (unless keep: libunwind's state points
 * into it), and this library's data as before the first attach */
static void range_release(int keep_range)
{
	if (!keep_range) {
		__real_munmap((void *)keep.region, REGION_SIZE);
		if (!keep.old_hi || keep.region < keep.old_lo)
			keep.old_lo = keep.region;
		if (keep.region + REGION_SIZE > keep.old_hi)
			keep.old_hi = keep.region + REGION_SIZE;
	}
	keep.region = keep.region_next = 0;
	snap_restore();
}

/* The end: END written (reason "detached"), the trace closed, every
 * mapping of the attach gone, the data as before it (libunwind's too:
 * its pipe closed). 0; 1 when libunwind is the program's now too and the
 * attach's range stays (its state points there). */
EXPORT long allocprof_attach_finish(void)
{
	if (!keep.region)
		return -EINVAL;
	tls.guard++;
	sig_uninstall();
	end_trace(AP_END_DETACH, 0, 0, 0);
	if (tfile.fd >= 0)
		sys_close(tfile.fd);
	tfile.fd = -1;
	pthread_key_delete(threads.key);
	int keep_range = unw_reset(0) < 0;
	tls.guard--;
	range_release(keep_range);
	return keep_range;
}

/* In a child forked while attached (fork_child, lifecycle.c: the sampler
 * is off there, the trace closed): the attach undone in the child's copy
 * of everything, as a detach would (GOT entries, libunwind, the range,
 * this library's data), so that the child runs as never attached, and can
 * be attached itself. One thread: no lock is waited for. */
void attach_fork_child(void)
{
	if (!keep.region)
		return; /* detached meanwhile */
	patch_lock = 0; /* held by another thread of the parent, perhaps */
	unpatch_all();
	nents = 0;
	tls.guard++;
	sig_uninstall();
	pthread_key_delete(threads.key);
	int keep_range = unw_reset(1) < 0;
	tls.guard--;
	range_release(keep_range);
}
