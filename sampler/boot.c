/* boot.c: everything before the trace opens. Resolves the real malloc
 * family and the other wrapped functions with dlsym(RTLD_NEXT); while dlsym
 * itself allocates, serves it from a static arena whose blocks are never
 * given back (is_boot tells them). Logs the allocations and frees made
 * before the sampler is on (the early log), replays them into the trace
 * once it is open, and turns the sampler on. */
#include "sampler-int.h"
#include "selfinfo.h"

#include <sys/auxv.h>

/* Allocations and frees made before the sampler is on: libraries
 * initialized before us (libstdc++'s emergency pool in every C++ program,
 * LLVM's and gnutls' static constructors) allocate and free from their
 * constructors, and threads they started go on while ap_init runs. Until
 * the sampler is on the filter is all ones, so that every free reaches
 * free_slow, and every call of the program's is logged in order, without
 * a bound, in mmap'd memory. ap_init replays the log once the trace is
 * open (pre_replay): each allocation through the sampling decision, with
 * the stack it had (early_stack: on the main thread, once libunwind could
 * be loaded from a call a library's constructor made, not the loader's
 * nor the C library's), else its immediate caller as a one-frame stack.
 * The log
 * stays open for the other threads while it is replayed; the last of it
 * is replayed, the filter settled and the state turned on in one step
 * under the log's lock (pre_switch), so that every call is either logged
 * or recorded live, and every event replayed is in the trace before any
 * that another thread records live. */

struct pre_ev {
	uint64_t addr, size, caller;
	uint32_t type, kind;
	/* its stack (npcs 0: none, the caller alone): entries [pcs_at,
	 * pcs_at + npcs) of the PC log */
	uint64_t pcs_at;
	uint32_t npcs;
};
/* The log is a series of mmap'd chunks that never move, chunk c holding
 * PRE_CHUNK0 << c entries: a signal handler that allocates on the thread
 * that is adding an entry (the lock is its own: own_lock) adds its own
 * entry at once, which only needs an index taken by one atomic add and a
 * chunk put in place by compare-and-swap. An entry whose address is 0 was
 * never written (no memory). */
#define PRE_CHUNK0 4096
#define PRE_CHUNKS 40
static struct pre_ev *pre_dir[PRE_CHUNKS];
static size_t pre_n;		/* entries taken */
static int pre_closed;		/* the sampler is on or off: nothing more is logged */
/* The PC log, as the entries' (chunk c holding PRE_PC_CHUNK0 << c PCs) */
#define PRE_PC_CHUNK0 (1u << 16)
static uint64_t *pre_pc_dir[PRE_CHUNKS];
static size_t pre_pc_n;		/* PCs taken */
static uint64_t pre_lost;	/* events dropped: no memory for the log */
int pre_lock;			/* own_lock; fork_prepare's lk_lock */

/* Entry i of the log, its chunk mapped if `make`; NULL if there is none. */
static struct pre_ev *pre_at(size_t i, int make)
{
	size_t q = i / PRE_CHUNK0 + 1;
	unsigned c = 63u - (unsigned)__builtin_clzll(q);
	if (c >= PRE_CHUNKS)
		return NULL;
	size_t off = i - PRE_CHUNK0 * (((size_t)1 << c) - 1);
	size_t size = ((size_t)PRE_CHUNK0 << c) * sizeof(struct pre_ev);
	struct pre_ev *chunk = __atomic_load_n(&pre_dir[c], __ATOMIC_RELAXED);
	if (!chunk && make) {
		struct pre_ev *m = map_mem(size), *none = NULL;
		if (!m)
			return NULL;
		if (__atomic_compare_exchange_n(&pre_dir[c], &none, m, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			chunk = m;
		else {
			munmap(m, size); /* a handler put one there meanwhile */
			chunk = none;
		}
	}
	return chunk ? chunk + off : NULL;
}

/* PC i of the PC log, its chunk mapped if `make`; NULL if there is none.
 * (Taken and written under pre_lock; a handler's entry logs no stack.) */
static uint64_t *pre_pc_at(size_t i, int make)
{
	size_t q = i / PRE_PC_CHUNK0 + 1;
	unsigned c = 63u - (unsigned)__builtin_clzll(q);
	if (c >= PRE_CHUNKS)
		return NULL;
	size_t off = i - PRE_PC_CHUNK0 * (((size_t)1 << c) - 1);
	if (!pre_pc_dir[c] && make)
		pre_pc_dir[c] = map_mem(((size_t)PRE_PC_CHUNK0 << c) * sizeof(uint64_t));
	return pre_pc_dir[c] ? pre_pc_dir[c] + off : NULL;
}

/* ---- resolving the real functions ------------------------------------- */

/* Until dlsym has answered, allocations come from a static arena; blocks
 * carry their size in a 16-byte header and are never given back. */
_Alignas(64) uint8_t boot_arena[BOOT_ARENA_SIZE];
static size_t boot_used;
static size_t own_start; /* where own_alloc's blocks begin (0: none yet) */
static int resolving;

/* Bootstrap blocks must take the slow free path (which ignores them):
 * their counters in the filter f stay saturated. */
static void boot_mark(uint8_t *f)
{
	size_t end = own_start ? own_start : boot_used;
	for (size_t off = 0; off < end; off += 16)
		f[filter_slot(boot_arena + off)] = 0xff;
	/* own_alloc's blocks: their first slot (each block's start) */
	for (size_t off = end; own_start && off < boot_used;) {
		size_t start = (off + 16 + 15) & ~(size_t)15;
		f[filter_slot(boot_arena + start)] = 0xff;
		off = start + boot_size(boot_arena + start);
	}
}

void boot_mark_filter(void)
{
	boot_mark(ap_filter);
}

static void *boot_alloc(size_t align, size_t n)
{
	if (align < 16)
		align = 16;
	size_t start = (boot_used + 16 + align - 1) & ~(align - 1);
	if (n > sizeof(boot_arena) || start + n > sizeof(boot_arena))
		return NULL;
	memcpy(boot_arena + start - 8, &n, sizeof(n));
	boot_used = start + n;
	boot_mark_filter();
	return boot_arena + start;
}

/* ---- the sampler's own blocks (own_alloc) ----------------------------- */

/* Blocks of 16 << k bytes (k < OWN_CLASSES) carved from the boot arena
 * after dlsym's (own_start on), each with its own header (own_block);
 * a block given back goes on its class's list. Each block's filter slot
 * is saturated, so that its free takes the slow path in sampled mode too
 * (boot_mark_filter marks them again after the filter is cleared). */
#define OWN_CLASSES 10
static void *own_list[OWN_CLASSES];
int own_heap_lock;

void *own_alloc(size_t n)
{
	unsigned k = 0;
	while (k < OWN_CLASSES && ((size_t)16 << k) < n)
		k++;
	if (k == OWN_CLASSES || resolving)
		return NULL;
	int nested = own_lock(&own_heap_lock);
	void *p = NULL;
	if (!nested) {
		p = own_list[k];
		if (p) {
			own_list[k] = *(void **)p;
		} else {
			size_t size = (size_t)16 << k;
			size_t start = (boot_used + 16 + 15) & ~(size_t)15;
			if (start + size <= sizeof(boot_arena)) {
				if (!own_start)
					own_start = boot_used;
				p = boot_arena + start;
				uint64_t tag = OWN_TAG, sz = (uint64_t)OWN_MAGIC << 32 | size;
				memcpy(boot_arena + start - 8, &tag, sizeof(tag));
				memcpy(boot_arena + start - 16, &sz, sizeof(sz));
				boot_used = start + size;
			}
		}
		if (p)
			ap_filter[filter_slot(p)] = 0xff;
	}
	own_unlock(&own_heap_lock, nested);
	return p;
}

/* The real calls while the start swaps them; set once and kept (a
 * thread that read the swapped real_malloc just before the swap back
 * still calls through them). */
static void *(*swapped_malloc)(size_t);
static void *(*swapped_calloc)(size_t, size_t);
static int swapped;

/* Only the start's own thread (guard raised) gets the arena's blocks:
 * a thread a library's constructor started before ours runs on, and its
 * blocks are the program's (their frees would otherwise vanish into the
 * arena's free lists, and their next mallocs count again). */
static void *own_or_real_malloc(size_t n)
{
	void *p = tls.guard ? own_alloc(n) : NULL;
	return p ? p : swapped_malloc(n);
}

static void *own_or_real_calloc(size_t a, size_t b)
{
	size_t n;
	if (!tls.guard || __builtin_mul_overflow(a, b, &n))
		return swapped_calloc(a, b);
	void *p = own_alloc(n);
	if (!p)
		return swapped_calloc(a, b);
	memset(p, 0, n);
	return p;
}

void own_heap_swap(int on)
{
	if (on && !swapped) {
		if (!swapped_malloc) {
			swapped_malloc = real_malloc;
			swapped_calloc = real_calloc;
		}
		swapped = 1;
		__atomic_store_n(&real_calloc, own_or_real_calloc, __ATOMIC_RELEASE);
		__atomic_store_n(&real_malloc, own_or_real_malloc, __ATOMIC_RELEASE);
	} else if (!on && swapped) {
		__atomic_store_n(&real_malloc, swapped_malloc, __ATOMIC_RELEASE);
		__atomic_store_n(&real_calloc, swapped_calloc, __ATOMIC_RELEASE);
		swapped = 0;
	}
}

void own_free(void *p)
{
	if (!own_block(p))
		return; /* dlsym's: never given back */
	size_t size = boot_size(p);
	unsigned k = 0;
	while (k < OWN_CLASSES && ((size_t)16 << k) < size)
		k++;
	int nested = own_lock(&own_heap_lock);
	if (!nested) { /* (a handler inside it: the block is lost) */
		*(void **)p = own_list[k];
		own_list[k] = p;
	}
	own_unlock(&own_heap_lock, nested);
}

static void *boot_malloc(size_t n);
static void *boot_calloc(size_t a, size_t b);
static void *boot_realloc(void *p, size_t n);
static void boot_free(void *p);
static int boot_posix_memalign(void **out, size_t al, size_t n);
static void *boot_aligned_alloc(size_t al, size_t n);
static void *boot_memalign(size_t al, size_t n);
static void *boot_valloc(size_t n);
static void *boot_pvalloc(size_t n);
static size_t boot_usable_size(void *p);

void *(*real_malloc)(size_t) = boot_malloc;
void *(*real_calloc)(size_t, size_t) = boot_calloc;
void *(*real_realloc)(void *, size_t) = boot_realloc;
void (*real_free)(void *) = boot_free;
int (*real_posix_memalign)(void **, size_t, size_t) = boot_posix_memalign;
void *(*real_aligned_alloc)(size_t, size_t) = boot_aligned_alloc;
void *(*real_memalign)(size_t, size_t) = boot_memalign;
void *(*real_valloc)(size_t) = boot_valloc;
void *(*real_pvalloc)(size_t) = boot_pvalloc;
size_t (*real_usable_size)(void *) = boot_usable_size;
void (*real__exit)(int);
void (*real__Exit)(int);
int (*real_execve)(const char *, char *const[], char *const[]);
int (*real_execvpe)(const char *, char *const[], char *const[]);
int (*real_fexecve)(int, char *const[], char *const[]);
int (*real_pipe2)(int[2], int);
int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
int (*real_close)(int);
int (*real_sigaltstack)(const stack_t *, stack_t *);
int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
pid_t (*real_fork)(void);
pid_t (*real__Fork)(void);

void *must_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		say(name, "not found by dlsym(RTLD_NEXT): cannot interpose");
		abort();
	}
	return p;
}

/* A function of the malloc family as the program binds it. Its
 * references name the version libc.so.6 defines it at (GLIBC_2.2.5;
 * aligned_alloc GLIBC_2.16) and bind to the first object in the search
 * order that defines it either without versions (jemalloc) or at that
 * version, default or not. dlsym finds default versions only: a user's
 * LD_PRELOAD of libc_malloc_debug.so (malloc@GLIBC_2.2.5, not default)
 * was passed over for libc.so's, behind it, and MALLOC_CHECK_ went off
 * under record (malloc_usable_size(malloc(10)) 24, not 10). dlvsym finds
 * that version only, never an unversioned definition: a preloaded
 * jemalloc would be passed over. So both are asked, and where they name
 * two objects, the one that comes first in the search order (the link
 * map's order, after this library) is the program's. */
static void *malloc_sym(const char *name, const char *version)
{
	void *d = dlsym(RTLD_NEXT, name), *v = dlvsym(RTLD_NEXT, name, version);
	if (!v || v == d)
		return d ? d : must_sym(name);
	if (!d)
		return v;
	Dl_info info;
	struct link_map *ld = NULL, *lv = NULL;
	if (!dladdr1(d, &info, (void **)&ld, RTLD_DL_LINKMAP) ||
	    !dladdr1(v, &info, (void **)&lv, RTLD_DL_LINKMAP) || !ld || !lv)
		return d;
	for (struct link_map *m = lv; m; m = m->l_next)
		if (m == ld)
			return v; /* v's object comes before d's */
	return d;
}

/* The object whose malloc the program's calls reach, when it is not this
 * library (selfinfo.h). */
static char owner[PATH_MAX];

const char *malloc_owner(void)
{
	return owner[0] ? owner : NULL;
}

void malloc_owner_find(void)
{
	ap_malloc_owner_find(owner, sizeof(owner), __ehdr_start);
}

intptr_t errno_off;

void errno_locate(void)
{
#if defined(__x86_64__)
	/* the thread pointer: the TCB's own address, its first word */
	uintptr_t tp = *(const uintptr_t __seg_fs *)0;
	errno_off = (intptr_t)((uintptr_t)__errno_location() - tp);
#endif
}

void resolve(void)
{
	if (real_malloc != boot_malloc)
		return;
	memset(ap_filter, 0xff, sizeof(ap_filter)); /* see the early log */
	resolving = 1;
	static const char v0[] = "GLIBC_2.2.5";
	void *m = malloc_sym("malloc", v0);
	real_calloc = (void *(*)(size_t, size_t))malloc_sym("calloc", v0);
	real_realloc = (void *(*)(void *, size_t))malloc_sym("realloc", v0);
	real_free = (void (*)(void *))malloc_sym("free", v0);
	real_posix_memalign = (int (*)(void **, size_t, size_t))malloc_sym("posix_memalign", v0);
	real_aligned_alloc = (void *(*)(size_t, size_t))malloc_sym("aligned_alloc", "GLIBC_2.16");
	real_memalign = (void *(*)(size_t, size_t))malloc_sym("memalign", v0);
	real_valloc = (void *(*)(size_t))malloc_sym("valloc", v0);
	real_pvalloc = (void *(*)(size_t))malloc_sym("pvalloc", v0);
	real_usable_size = (size_t (*)(void *))malloc_sym("malloc_usable_size", v0);
	real__exit = (void (*)(int))must_sym("_exit");
	real__Exit = (void (*)(int))must_sym("_Exit");
	real_execve = (int (*)(const char *, char *const[], char *const[]))must_sym("execve");
	real_execvpe = (int (*)(const char *, char *const[], char *const[]))must_sym("execvpe");
	real_fexecve = (int (*)(int, char *const[], char *const[]))must_sym("fexecve");
	real_pipe2 = (int (*)(int[2], int))must_sym("pipe2");
	real_close = (int (*)(int))must_sym("close");
	real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))must_sym("sigaction");
	real_sigaltstack = (int (*)(const stack_t *, stack_t *))must_sym("sigaltstack");
	real_fork = (pid_t (*)(void))must_sym("fork");
	real__Fork = (pid_t (*)(void))dlsym(RTLD_NEXT, "_Fork");
	__atomic_store_n(&real_sigprocmask,
			 (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "sigprocmask"),
			 __ATOMIC_RELEASE);
	errno_locate();
	__atomic_store_n(&real_malloc, (void *(*)(size_t))m, __ATOMIC_RELEASE);
	resolving = 0;
	live_check();
	tls.guard++;
	fork_handlers_register();
	tls.guard--;
}

static void *boot_malloc(size_t n)
{
	if (resolving)
		return boot_alloc(16, n);
	resolve();
	return real_malloc(n);
}

static void *boot_calloc(size_t a, size_t b)
{
	if (resolving) {
		size_t n;
		if (__builtin_mul_overflow(a, b, &n))
			return NULL;
		return boot_alloc(16, n); /* the arena is zeroed and never reused */
	}
	resolve();
	return real_calloc(a, b);
}

static void *boot_realloc(void *p, size_t n)
{
	if (resolving) {
		void *q = boot_alloc(16, n);
		if (q && p)
			memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
		return q;
	}
	resolve();
	return real_realloc(p, n);
}

static void boot_free(void *p)
{
	if (resolving || !p || is_boot(p))
		return;
	resolve();
	real_free(p);
}

static int boot_posix_memalign(void **out, size_t al, size_t n)
{
	resolve();
	return real_posix_memalign(out, al, n);
}

static void *boot_aligned_alloc(size_t al, size_t n)
{
	if (resolving)
		return boot_alloc(al, n);
	resolve();
	return real_aligned_alloc(al, n);
}

static void *boot_memalign(size_t al, size_t n)
{
	if (resolving)
		return boot_alloc(al, n);
	resolve();
	return real_memalign(al, n);
}

static void *boot_valloc(size_t n)
{
	resolve();
	return real_valloc(n);
}

static void *boot_pvalloc(size_t n)
{
	resolve();
	return real_pvalloc(n);
}

static size_t boot_usable_size(void *p)
{
	resolve();
	return real_usable_size(p);
}

/* Logs the program's free of `freed` (if not NULL), then its allocation
 * of `got` (if not NULL), n bytes of kind from caller: both or neither
 * (see the early log). 1 if logged (or lost for want of memory), 0 if the
 * log is closed: the state is no longer AP_INIT, and the call is the
 * caller's to record live (or not at all, AP_DISABLED). */
/* The entries for a free of `freed` and an allocation of `got` (either
 * NULL: none), pre_lock held and the log open. */
static void pre_log(const void *freed, const void *got, uint64_t n, unsigned kind,
		    uint64_t caller, const uint64_t *pcs, unsigned npcs)
{
	for (int k = 0; k < 2; k++) {
		const void *p = k ? got : freed;
		if (!p)
			continue;
		struct pre_ev *e = pre_at(__atomic_fetch_add(&pre_n, 1, __ATOMIC_RELAXED), 1);
		if (!e) {
			__atomic_fetch_add(&pre_lost, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (!k) {
			*e = (struct pre_ev){ (uintptr_t)p, 0, 0, PRE_FREE, 0, 0, 0 };
			continue;
		}
		/* the stack, whole, or the caller alone (no memory for it) */
		size_t at = pre_pc_n;
		unsigned d = 0;
		for (uint64_t *slot; d < npcs && (slot = pre_pc_at(at + d, 1)); d++)
			*slot = pcs[d];
		if (d < npcs)
			d = 0;
		pre_pc_n += d;
		*e = (struct pre_ev){ (uintptr_t)p, n, caller, PRE_ALLOC, kind, at, d };
	}
}

/* ---- the stacks of early calls ------------------------------------------
 *
 * A library linked to the program is initialized before the sampler (a
 * preloaded library's constructor runs after those of the program's
 * libraries), and its constructor's allocations reach the early log. Their
 * stacks are unwound as they are made, by the libunwind the start loads
 * (unwinder_load), loaded here instead at the first such call that can
 * load it: on the main thread (the one that runs the constructors), in a
 * process the sampler is to profile (ALLOCPROF set), from a call the
 * program's code made, not the loader's (a malloc ld.so makes while it
 * maps or relocates: dlopen there would reenter it) nor the C library's (a
 * function that holds a lock of its own while it allocates: setlocale,
 * fopen). As at the start, libunwind's own blocks come from the sampler's
 * arena (own_heap_swap): the program's heap stays as it was. Other
 * threads' early calls keep their caller alone. */
static int early_unw;	/* 0: not tried, 1: tried (unw_bt says whether loaded) */
int unwinder_early;	/* unwinder_load ran here (the start does not run it again) */

/* Whether pc is in the loader's text: its mapping (AT_BASE) as its program
 * headers give it, read in place. */
static int in_loader(uint64_t pc)
{
	static uintptr_t lo, hi;
	static int known;
	if (!known) {
		const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_BASE);
		if (eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
			const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
			uintptr_t end = 0;
			for (unsigned i = 0; i < eh->e_phnum; i++)
				if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > end)
					end = ph[i].p_vaddr + ph[i].p_memsz;
			lo = (uintptr_t)eh;
			hi = lo + end;
		}
		known = 1;
	}
	return pc - lo < hi - lo;
}

/* Whether pc is in the object that holds `sym` (the C library's: getenv,
 * whatever malloc the program has; dladdr takes the loader's lock, taken
 * again by its holder, and allocates nothing). */
static int same_object(uint64_t pc, const void *sym)
{
	Dl_info a, b;
	return dladdr((const void *)(uintptr_t)pc, &a) && dladdr(sym, &b) &&
	       a.dli_fbase == b.dli_fbase;
}

/* The stack of the program's call from `caller`, our frames left out,
 * into pcs (MAX_DEPTH_CAP at most): its depth, 0 if it is not to be had
 * here. Called before pre_lock is taken: loading libunwind takes the
 * loader's lock, which another thread that logs a call of its own holds
 * in dlopen. */
static __attribute__((noinline)) unsigned early_stack(uint64_t caller, uint64_t *pcs)
{
	struct ap_tls *t = &tls;
	if (!caller || resolving || sys_gettid() != (uint32_t)sys_getpid())
		return 0;
	if (!unw_bt) {
		if (early_unw || !getenv("ALLOCPROF") || in_loader(caller) ||
		    same_object(caller, (const void *)getenv))
			return 0;
		early_unw = 1;
		unwinder_early = 1;
		t->guard++;
		own_heap_swap(1);
		unwinder_load();
		own_heap_swap(0);
		t->guard--;
		if (!unw_bt)
			return 0;
	}
	void *raw[MAX_DEPTH_CAP + OWN_FRAMES_SLACK];
	/* a thread's first trace makes libunwind's state: in the arena */
	t->guard++;
	own_heap_swap(1);
	int n = unw_bt(raw, (int)(MAX_DEPTH_CAP + OWN_FRAMES_SLACK));
	own_heap_swap(0);
	t->guard--;
	/* libunwind's frames, then ours (as stacks.h's unwind) */
	uintptr_t lo = (uintptr_t)__ehdr_start, hi = (uintptr_t)_end;
	int i = 0;
	while (i < n && !((uintptr_t)raw[i] - lo < hi - lo))
		i++;
	if (i == n)
		i = 0;
	while (i < n && (uintptr_t)raw[i] - lo < hi - lo)
		i++;
	unsigned d = 0;
	for (; i < n && d < MAX_DEPTH_CAP; i++)
		pcs[d++] = (uint64_t)(uintptr_t)raw[i];
	/* not the call it was asked for (a frame libunwind could not see):
	 * the caller alone */
	return d && pcs[0] == caller ? d : 0;
}

int pre_add(const void *freed, const void *got, uint64_t n, unsigned kind, uint64_t caller)
{
	int saved = errno, open;
	uint64_t pcs[MAX_DEPTH_CAP];
	unsigned npcs = got && !__atomic_load_n(&pre_closed, __ATOMIC_RELAXED)
				? early_stack(caller, pcs)
				: 0;
	int nested = own_lock(&pre_lock);
	open = !__atomic_load_n(&pre_closed, __ATOMIC_RELAXED);
	if (open)
		pre_log(freed, got, n, kind, caller, pcs, nested ? 0 : npcs);
	own_unlock(&pre_lock, nested);
	errno = saved;
	return open;
}

int pre_realloc(void *old, size_t n, unsigned kind, uint64_t caller, void **q)
{
	uint64_t pcs[MAX_DEPTH_CAP];
	int saved = errno;
	unsigned npcs = n && !__atomic_load_n(&pre_closed, __ATOMIC_RELAXED)
				? early_stack(caller, pcs)
				: 0;
	errno = saved;
	int nested = own_lock(&pre_lock);
	if (__atomic_load_n(&pre_closed, __ATOMIC_RELAXED)) {
		own_unlock(&pre_lock, nested);
		return 0;
	}
	*q = real_realloc(old, n);
	int err = errno;
	if (*q || n == 0) /* (realloc(p, 0) freed p; a failure changed nothing) */
		pre_log(old, *q, n, kind, caller, pcs, nested ? 0 : npcs);
	own_unlock(&pre_lock, nested);
	errno = err;
	return 1;
}

void *boot_move(void *old, size_t n)
{
	void *q = real_malloc(n);
	if (q) {
		memcpy(q, old, boot_size(old) < n ? boot_size(old) : n);
		own_free(old);
	}
	return q;
}

static void pre_release(void)
{
	for (unsigned c = 0; c < PRE_CHUNKS; c++) {
		if (pre_dir[c]) {
			munmap(pre_dir[c], ((size_t)PRE_CHUNK0 << c) * sizeof(struct pre_ev));
			pre_dir[c] = NULL;
		}
		if (pre_pc_dir[c]) {
			munmap(pre_pc_dir[c], ((size_t)PRE_PC_CHUNK0 << c) * sizeof(uint64_t));
			pre_pc_dir[c] = NULL;
		}
	}
	pre_n = 0;
	pre_pc_n = 0;
}

/* Entries [from, to) of the early log, now that the trace is open: each
 * allocation goes through the countdown as if it happened now, and a
 * sampled one is recorded with its stack (or its caller alone); each free is
 * recorded if its block is tracked. Runs with the guard set, in
 * ap_init's thread, while the state is still AP_INIT (proc.replaying lets
 * emit through). */
static void pre_replay(struct ap_tls *t, size_t from, size_t to)
{
	if (from < to && !t->thr)
		thr_register(t);
	for (size_t i = from; i < to; i++) {
		const struct pre_ev *e = pre_at(i, 0);
		if (!e || !e->addr)
			continue;
		void *addr = (void *)(uintptr_t)e->addr;
		if (e->type == PRE_FREE) {
			if (settings.all || set_remove(addr))
				emit(t, AP_EV_FREE, 0, e->addr, 0, 0, 0, 0);
			continue;
		}
		t->calls++;
		t->countdown = (int64_t)((uint64_t)t->countdown - e->size - 1);
		if (t->countdown >= 0)
			continue;
		t->consumed += (uint64_t)(t->interval - t->countdown);
		t->interval = draw_interval(t);
		t->countdown = t->interval;
		const uint64_t *frames;
		uint64_t pcs[MAX_DEPTH_CAP];
		unsigned d = 0;
		for (const uint64_t *pc; d < e->npcs && d < settings.max_depth &&
					 (pc = pre_pc_at(e->pcs_at + d, 0));
		     d++)
			pcs[d] = *pc;
		uint32_t id = d ? stack_intern(pcs, d, &frames)
				: stack_intern(&e->caller, e->caller ? 1 : 0, &frames);
		if (!id)
			continue;
		if (!settings.all)
			set_insert(addr);
		emit(t, AP_EV_ALLOC, e->kind, e->addr, 0, e->size, id, 0);
	}
}

/* The entries logged so far (each written by the time its adder let the
 * lock go). */
static size_t pre_count(void)
{
	int nested = own_lock(&pre_lock);
	size_t n = __atomic_load_n(&pre_n, __ATOMIC_RELAXED);
	own_unlock(&pre_lock, nested);
	return n;
}

/* The filter once the log is closed: in sampled mode the tracked blocks'
 * counts, and the bootstrap blocks saturated; under --all (on) all ones,
 * as it is already. Made aside and copied over slot by slot, so that a
 * free on another thread reads either the all-ones value or the final
 * one, never a zero where a tracked or a bootstrap block is (it would
 * take the fast path: the free lost, or a bootstrap block handed to the
 * real free). Without memory for the copy, the filter stays all ones:
 * every free takes the slow path, slower but exact. */
static void filter_settle(int on)
{
	if (on && settings.all)
		return;
	uint8_t *f = map_mem(sizeof(ap_filter));
	if (!f)
		return;
	if (on)
		ps_filter_fill(&tracked_set, f);
	boot_mark(f);
	for (size_t i = 0; i < sizeof(ap_filter); i++)
		if (ap_filter[i] != f[i])
			__atomic_store_n(&ap_filter[i], f[i], __ATOMIC_RELAXED);
	munmap(f, sizeof(ap_filter));
}

/* Ends the early log (see there) with the state turned to `state`: AP_ON
 * once the trace is open (what is logged replayed first), else
 * AP_DISABLED (nothing replayed). Runs in ap_init's thread, the guard
 * set. */
void pre_switch(struct ap_tls *t, int state)
{
	size_t done = 0;
	if (state == AP_ON) {
		/* what is there while the other threads go on adding, then
		 * the rest under the lock, which stops them (briefly; more
		 * rounds outside it only grew the log when a thread that
		 * allocates without pause shares the core) */
		__atomic_store_n(&proc.replaying, 1, __ATOMIC_RELAXED);
		done = pre_count();
		pre_replay(t, 0, done);
	}
	int nested = own_lock(&pre_lock);
	if (state == AP_ON)
		pre_replay(t, done, __atomic_load_n(&pre_n, __ATOMIC_RELAXED));
	filter_settle(state == AP_ON);
	__atomic_store_n(&proc.state, state, __ATOMIC_RELEASE);
	__atomic_store_n(&pre_closed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&proc.replaying, 0, __ATOMIC_RELAXED);
	own_unlock(&pre_lock, nested);
	pre_release();
	if (state == AP_ON && pre_lost) {
		char num[24];
		num[put_dec(num, pre_lost)] = 0;
		say("allocations before start not recorded (out of memory)", num);
	}
}

/* A child forked by another thread while ap_init ran (its thread is not
 * in the child, which will never turn on): the log is closed and the
 * child runs unrecorded, as a process the sampler is off in. */
void pre_abandon(void)
{
	own_heap_swap(0);
	__atomic_store_n(&proc.state, AP_DISABLED, __ATOMIC_RELEASE);
	__atomic_store_n(&pre_closed, 1, __ATOMIC_RELAXED);
	proc.replaying = 0;
	filter_settle(0);
	pre_release();
}
