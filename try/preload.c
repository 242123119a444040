/* liballocprof-try.so: `allocprof try`'s preload library. It serves the
 * objects of the sites try names (the call instructions a trace
 * attributes to each, try.h) from pool/vpool.h, the pool advise models,
 * with the cap or size classes advise recommended and cycles paced as
 * advise's model paces them; and counts what the pool did. Every run
 * knows every site try measures and does the same bookkeeping for each
 * (site lookup, the stack walks of sites reached through a library,
 * cycle pacing, counts); `mode pool` pools the sites of its `pool` lines,
 * `mode base` none: the baseline try measures against. (A pooled run that
 * looked up only its own site ran without the others' stack walks, and
 * "saved" their cost: a Rust program's site with no hit at all saved 8 ms
 * of its 142 ms, beside a site whose calls are walked.)
 *
 * How a freed block is known to be a pooled site's (one load and compare):
 * a site's block is taken from glibc 16 bytes larger than asked (more for
 * an aligned request) and handed out 16 bytes (the alignment) in, after a
 * header of two words: the capacity (the largest size asked of it, 48
 * bits; the header's offset from glibc's chunk above) and a tag, the
 * site's address with bit 3 set. Every other block is glibc's own, whose
 * word before the block is glibc's chunk size field: a multiple of 16
 * with flags in bits 0-2 (MALLOC_ALIGNMENT is 16 on x86-64, and so is
 * every chunk size, mmap'd chunks included), so bit 3 is never set there.
 * free() loads the word before the block and tests bit 3: no table, no
 * lock, no range check. This holds for glibc's malloc only: behind
 * another allocator the word before a block is anything (a neighbour's
 * data), so the library stands aside when another malloc comes first in
 * the lookup (a preloaded allocator, a program's own) or a sanitizer
 * runtime is loaded, and `allocprof try` refuses such programs before
 * running them. A pooled block is 16 bytes larger in glibc's heap; the
 * pool's own cost is in the measured figure, as it would be in the
 * program.
 *
 * Which calls are a site's: the return address of the call into the
 * malloc family (or into C++ operator new, which this library also
 * interposes, so that a `new` site is its call instruction too), looked
 * up in an open-addressing table of the sites' call instructions,
 * resolved from (build-id, offset) at start and again after every
 * dlopen (modules loaded later). One hash and one load for a call that
 * is no site's. A site the trace puts in the program's frame that called
 * a library (advise's `via`: sqlite3's sites, all reached through
 * libsqlite3's allocator; a std::string or std::vector that grows, whose
 * libstdc++ frames the views drop, reached through libstdc++'s call of
 * operator new) is found by walking the stack (libunwind, unwind tables)
 * from that library's call of the allocator (or of operator new), and
 * only from there: the site's frame at its depth, paired with the library's
 * return address inside it, or another site's frame first (a stop). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "selfinfo.h"
#include "try.h"

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
void cfree(void *);
void *_Znwm(size_t); /* operator new(size_t), new[] */
void *_Znam(size_t);

/* The pool's own memory (its deques, the threads' slots) comes from glibc
 * directly: it is neither a site's nor the program's. */
#define malloc(n) __libc_malloc(n)
#define calloc(n, m) __libc_calloc(n, m)
#define free(p) __libc_free(p)
#define aligned_alloc(a, n) __libc_memalign(a, n)
#include "vpool.h"
#undef malloc
#undef calloc
#undef free
#undef aligned_alloc

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

extern char __ehdr_start[] __attribute__((visibility("hidden")));

/* ---- state ---- */

#define CAP_MASK ((UINT64_C(1) << 48) - 1)
#define TAG_BIT 8u

/* hits (the sum of src) and allocations avoided (hits less small ones)
 * are not counted apart: each count is an add on the pooled path. */
struct counts {
	uint64_t gets, small, src[5];
	uint64_t alloc_bytes_avoided;
	uint64_t reallocs, reallocs_avoided, realloc_bytes_avoided;
	uint64_t puts, dropped_cap, released;
	int64_t held, held_peak;
	uint32_t held_changes; /* a thread's: since it last added its held up */
};

struct site {
	_Alignas(64) struct counts c;
	unsigned idx;	    /* its index in sites[] (its threads' counts') */
	uint64_t cap_limit; /* 0: none */
	unsigned nclasses;  /* 0: one pool */
	uint64_t class_max[AP_TRY_MAX_CLASSES];
	int round_up;	    /* a miss allocated at its class's size */
	int pooled;	    /* a `pool` line: served by its pools in mode pool */
	struct vpool pools[AP_TRY_MAX_CLASSES];
};

struct pcent {
	uint64_t key;	     /* the return address; 0: empty */
	uint32_t site, kind; /* kind: AP_TRY_KIND_* */
	uint64_t depths;     /* AP_TRY_KIND_FRAME: the depths it is the site's frame at */
};

/* A call instruction of the config, and its module. */
struct want {
	/* part 0: the return address; part 1 (FRAME and STOP): the one just
	 * inside it, the library's (a site's frame is the pair) */
	uint8_t bid[2][64];
	size_t blen[2];
	uint64_t off[2], addr[2];
	unsigned parts, got; /* parts resolved: a bit each */
	uint32_t site, kind, depth;
	int resolved;
};

static struct site sites[AP_TRY_MAX_SITES];
static unsigned nsites;
static struct want *wants;
static size_t nwants, nunresolved;
static struct pcent *tab; /* published once made; entries added after dlopen */
static uint64_t tabmask;
static int pooling; /* mode pool, and not refused */
static int active;  /* the config was read, and not refused */
static char outpath[4096];
static char refused[512];
static uint64_t gogc = 100;
static int walks; /* some sites need the stack walked */

/* Threads: set once a second thread has called in (the pacer and what
 * pools hold are then counted per thread and added up now and then). */
static int threaded;
static int nthreads_seen;

/* One thread's counts, linked for the sum at exit (never freed: a
 * thread's memory is 32 bytes, and 128 a site it used). Each thread
 * counts its sites' gets, hits and puts in its own array `c` (made at
 * its first use of a site): shared counters, lock-prefixed adds on lines
 * that move between CPUs, cost threads that pool at once more than the
 * pool saved them (bench/twins' mtbuf: four threads). What pools hold
 * (held) is the sites' own, below. */
struct tstate {
	uint64_t calls;
	uint64_t since; /* bytes asked for since this thread last told the pacer */
	struct tstate *next;
	struct counts *c; /* nsites of them; NULL until the thread uses a site */
};
static struct tstate *tstates;
static int tstates_lock;
static __thread struct tstate *tls_me __attribute__((tls_model("initial-exec")));

static void spin_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			;
}

static void spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static struct tstate *me_slow(void)
{
	struct tstate *t = __libc_calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (__atomic_fetch_add(&nthreads_seen, 1, __ATOMIC_RELAXED) >= 1)
		__atomic_store_n(&threaded, 1, __ATOMIC_RELAXED);
	spin_lock(&tstates_lock);
	t->next = tstates;
	tstates = t;
	spin_unlock(&tstates_lock);
	tls_me = t;
	return t;
}

static inline struct tstate *me(void)
{
	struct tstate *t = tls_me;
	return LIKELY(t) ? t : me_slow();
}

/* This thread's counts of site s (a static, unused one if it has no
 * memory for them: the counts are then short, the program unharmed). */
static __attribute__((noinline)) struct counts *tcounts_slow(struct tstate *t, const struct site *s);

static inline struct counts *tcounts(const struct site *s)
{
	struct tstate *t = tls_me;
	if (LIKELY(t && t->c))
		return &t->c[s->idx];
	return tcounts_slow(t, s);
}

static struct counts tcounts_none;

static struct counts *tcounts_slow(struct tstate *t, const struct site *s)
{
	if (!t && !(t = me()))
		return &tcounts_none;
	if (!t->c) {
		t->c = __libc_calloc(nsites ? nsites : 1, sizeof(*t->c));
		if (!t->c)
			return &tcounts_none;
	}
	return &t->c[s->idx];
}

/* Sums every thread's counts of site i into *sum (held and held_peak
 * are the site's own). Under tstates_lock, or with one thread left. */
static void tcounts_sum(unsigned i, struct counts *sum)
{
	for (struct tstate *t = tstates; t; t = t->next) {
		const struct counts *c = t->c ? &t->c[i] : NULL;
		if (!c)
			continue;
		sum->gets += c->gets;
		sum->small += c->small;
		for (unsigned k = 0; k < 5; k++)
			sum->src[k] += c->src[k];
		sum->alloc_bytes_avoided += c->alloc_bytes_avoided;
		sum->reallocs += c->reallocs;
		sum->reallocs_avoided += c->reallocs_avoided;
		sum->realloc_bytes_avoided += c->realloc_bytes_avoided;
		sum->puts += c->puts;
		sum->dropped_cap += c->dropped_cap;
		sum->released += c->released;
	}
}

/* ---- cycles, paced as advise's --gc=gogc:N models them (pool-model.md
 * §4, bench/twins/twin.h): a cycle right after the allocation that brings
 * the heap (live bytes at the last cycle plus every byte asked for since,
 * a pool hit counting as the malloc it spared) to max(live x (1 + N/100),
 * 4 MiB x N/100). Live bytes are glibc's (mallinfo2, taken at each cycle
 * only) less what the pools hold: chunk headers and rounding included,
 * so a little more than the trace's requested sizes. A threaded process
 * tells the pacer every 64 KiB a thread asks for (a shared counter per
 * call would be a contended line). */

#define PACE_FLUSH (64u << 10)
static uint64_t gc_since, gc_live_at, gc_goal = 4u << 20;
static uint64_t gc_cycles;
static int gc_lock;

static uint64_t held_total(void)
{
	int64_t h = 0;
	for (unsigned i = 0; i < nsites; i++)
		h += __atomic_load_n(&sites[i].c.held, __ATOMIC_RELAXED);
	return h > 0 ? (uint64_t)h : 0;
}

static void gc_cycle(void)
{
	if (__atomic_exchange_n(&gc_lock, 1, __ATOMIC_ACQUIRE))
		return; /* another thread is cycling */
	if (__atomic_load_n(&gc_live_at, __ATOMIC_RELAXED) +
		__atomic_load_n(&gc_since, __ATOMIC_RELAXED) >=
	    __atomic_load_n(&gc_goal, __ATOMIC_RELAXED)) {
		if (pooling)
			for (unsigned i = 0; i < nsites; i++)
				for (unsigned k = 0; sites[i].pooled &&
				     k < (sites[i].nclasses ? sites[i].nclasses : 1); k++)
					vpool_cycle(&sites[i].pools[k]);
		gc_cycles++;
		struct mallinfo2 mi = mallinfo2();
		uint64_t used = mi.uordblks + mi.hblkhd, held = held_total();
		uint64_t live = used > held ? used - held : 0;
		__atomic_store_n(&gc_live_at, live, __ATOMIC_RELAXED);
		__atomic_store_n(&gc_since, 0, __ATOMIC_RELAXED);
		uint64_t goal = live + live * gogc / 100, floor = (UINT64_C(4) << 20) * gogc / 100;
		__atomic_store_n(&gc_goal, goal > floor ? goal : floor, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&gc_lock, 0, __ATOMIC_RELEASE);
}

/* Every allocating call: n bytes asked for. */
static inline void account(size_t n)
{
	struct tstate *t = me();
	if (UNLIKELY(!t))
		return;
	t->calls++;
	if (!active || !gogc)
		return;
	if (LIKELY(!threaded)) {
		gc_since += n;
		if (UNLIKELY(gc_live_at + gc_since >= gc_goal))
			gc_cycle();
		return;
	}
	t->since += n;
	if (t->since < PACE_FLUSH)
		return;
	uint64_t s = __atomic_add_fetch(&gc_since, t->since, __ATOMIC_RELAXED);
	t->since = 0;
	if (__atomic_load_n(&gc_live_at, __ATOMIC_RELAXED) + s >=
	    __atomic_load_n(&gc_goal, __ATOMIC_RELAXED))
		gc_cycle();
}

/* ---- the sites' call instructions ---- */

static inline uint64_t tab_hash(uint64_t ra)
{
	return (ra * UINT64_C(0x9e3779b97f4a7c15)) >> 29;
}

/* A site's frame reached through a library is its return address and the
 * library's just inside it: one key for the two (never 0). With a
 * symbolized library the second tells nothing new; unsymbolized, advise
 * names the site after it (`via lib.so+0x...`), and one frame of the
 * program may be several sites. */
static inline uint64_t pair_key(uint64_t inner, uint64_t outer)
{
	uint64_t k = outer ^ (inner * UINT64_C(0x9e3779b97f4a7c15) + UINT64_C(0x632be59bd9b4e019));
	return k ? k : 1;
}

static inline struct pcent *tab_find(uintptr_t ra)
{
	struct pcent *t = __atomic_load_n(&tab, __ATOMIC_ACQUIRE);
	if (LIKELY(!t))
		return NULL;
	for (uint64_t h = tab_hash(ra) & tabmask;; h = (h + 1) & tabmask) {
		uint64_t k = __atomic_load_n(&t[h].key, __ATOMIC_ACQUIRE);
		if (k == ra)
			return &t[h];
		if (!k)
			return NULL;
	}
}

/* A call that returns to a library's call of the allocator (kind LEAF):
 * the site is the nearest caller whose return address is a site's frame
 * (kind FRAME) at that depth from the leaf, in the trace's stacks. The
 * stack is walked (the unwind tables: libraries need no frame pointers)
 * only for calls from such a leaf, and only as deep as the deepest such
 * frame: a site the trace puts in the program's frame that called a
 * library (sqlite3's sites, all reached through libsqlite3's allocator).
 * The walk is libunwind's unw_backtrace, loaded as the sampler loads it
 * (dlopen, RTLD_LOCAL: its _Unwind_* must not replace libgcc_s's), with
 * per-thread caches: its cached frame layouts make a walk some 20 ns a
 * frame; glibc's backtrace() (libgcc's unwinder) when it cannot be
 * loaded, several times slower. */
#define MAX_WALK 64
#define WALK_SLACK 8	/* frames of this library below the leaf */
static int (*unw_bt)(void **, int);
static int walk_frames = MAX_WALK + WALK_SLACK;

/* libunwind masks every signal around each frame lookup its caches miss
 * and around its caches' lock, and puts the mask back: putting it back
 * makes the kernel look at the signals pending for the process, and the
 * thread takes one that another thread was woken for (the sampler's
 * case, sampler/README.md: Ctrl-C lost by python3's sleeping main
 * thread). sqlite3 run by try: ~2,000 such calls. Inside a walk (in_walk)
 * the exported sigprocmask makes none for libunwind (its text: unw_lo,
 * unw_hi), and a walk is never entered again on the same thread (an
 * allocation of a handler that interrupted one is not looked up by its
 * stack), so the masks protect nothing. A program with libunwind of its
 * own keeps them (unw_masks_kept: its handlers may unwind with it). */
static __thread int in_walk __attribute__((tls_model("initial-exec")));
static uintptr_t unw_lo, unw_hi;
static int unw_masks_kept;
static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (UNLIKELY(in_walk) && !unw_masks_kept &&
	    (uintptr_t)__builtin_return_address(0) - unw_lo < unw_hi - unw_lo) {
		if (old && set)
			*old = *set;
		return 0;
	}
	if (LIKELY(real_sigprocmask != NULL))
		return real_sigprocmask(how, set, old);
	return ap_sigprocmask_glibc(how, set, old); /* before the constructor */
}

__attribute__((noinline)) static struct site *site_by_stack(uintptr_t ra)
{
	void *bt[MAX_WALK + WALK_SLACK];
	if (in_walk)
		return NULL; /* a handler's call inside a walk (above) */
	in_walk = 1;
	int n = unw_bt ? unw_bt(bt, walk_frames) : backtrace(bt, walk_frames);
	in_walk = 0;
	int k = 0;
	while (k < n && (uintptr_t)bt[k] != ra)
		k++;
	for (int j = 1; k + j < n && j < MAX_WALK; j++) {
		struct pcent *e =
		    tab_find(pair_key((uintptr_t)bt[k + j - 1], (uintptr_t)bt[k + j]));
		if (!e || !(__atomic_load_n(&e->depths, __ATOMIC_RELAXED) >> j & 1))
			continue;
		if (e->kind == AP_TRY_KIND_FRAME)
			return &sites[e->site];
		if (e->kind == AP_TRY_KIND_STOP)
			return NULL; /* the nearer frame of a site not pooled */
	}
	return NULL;
}

/* The site of a call returning to ra, of that kind; NULL for none. */
static inline struct site *site_of(uintptr_t ra, uint32_t kind)
{
	struct pcent *e = tab_find(ra);
	if (LIKELY(!e))
		return NULL;
	if (e->kind == kind)
		return &sites[e->site];
	/* a library's call of malloc, or libstdc++'s of operator new */
	if (e->kind == AP_TRY_KIND_LEAF && (kind == AP_TRY_KIND_CALL || kind == AP_TRY_KIND_NEW))
		return site_by_stack(ra);
	return NULL;
}

static void tab_add(uint64_t ra, uint32_t site, uint32_t kind, uint32_t depth)
{
	for (uint64_t h = tab_hash(ra) & tabmask;; h = (h + 1) & tabmask) {
		if (tab[h].key == ra) {
			if (kind >= AP_TRY_KIND_FRAME && tab[h].kind == kind)
				__atomic_fetch_or(&tab[h].depths, UINT64_C(1) << depth,
						  __ATOMIC_RELAXED);
			return;
		}
		if (!tab[h].key) {
			tab[h].site = site;
			tab[h].kind = kind;
			tab[h].depths = kind >= AP_TRY_KIND_FRAME ? UINT64_C(1) << depth : 0;
			__atomic_store_n(&tab[h].key, ra, __ATOMIC_RELEASE);
			return;
		}
	}
}

static int resolve_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uint8_t bid[64];
	size_t blen = ap_build_id_of(info, bid, sizeof(bid));
	if (!blen)
		return 0;
	for (size_t i = 0; i < nwants; i++) {
		struct want *w = &wants[i];
		if (w->resolved)
			continue;
		for (unsigned p = 0; p < w->parts; p++)
			if (!(w->got >> p & 1) && w->blen[p] == blen &&
			    !memcmp(w->bid[p], bid, blen)) {
				w->addr[p] = info->dlpi_addr + w->off[p];
				w->got |= 1u << p;
			}
		if (w->got != (1u << w->parts) - 1)
			continue;
		w->resolved = 1;
		nunresolved--;
		tab_add(w->parts == 2 ? pair_key(w->addr[1], w->addr[0]) : w->addr[0], w->site,
			w->kind, w->depth);
	}
	return 0;
}

static int resolve_lock;

/* The call instructions in modules loaded since the last look. */
static void resolve(void)
{
	if (!__atomic_load_n(&nunresolved, __ATOMIC_RELAXED) || !tab)
		return;
	spin_lock(&resolve_lock);
	dl_iterate_phdr(resolve_cb, NULL);
	spin_unlock(&resolve_lock);
}

/* ---- pooled blocks ---- */

static size_t (*real_usable)(void *);
static void *(*real_new)(size_t);
static void *(*real_new_arr)(size_t);
static void *(*real_dlopen)(const char *, int);

static inline uint64_t *hdr(void *p)
{
	return (uint64_t *)p - 2;
}

static inline uint64_t cap_of(void *p)
{
	return hdr(p)[0] & CAP_MASK;
}

static inline size_t off_of(void *p)
{
	return (size_t)(hdr(p)[0] >> 48) << 4;
}

/* What site s's pools hold moved by v bytes (tc: this thread's counts
 * of s). One thread: s->c.held and its peak, exactly. Threads: each
 * keeps its change in its own counts' `held` and adds it to the site's
 * (an atomic add, the peak kept) at its 64th change, and past 1 MiB
 * either way: the site's held lags the truth by up to 64 changes a
 * thread (a thread that alternates Gets and Puts adds itself up after a
 * Put, holding its object), and an atomic add per Get and Put (a cache
 * line every thread's CPU writes) is gone. Adding up at the 8th change
 * cost bench/twins' mtbuf (four threads, a Get and a Put per request)
 * 8 ms of its pool's 40 ms saving. */
#define HELD_BOUND (1 << 20)

static __attribute__((noinline)) void held_fold(struct site *s, struct counts *tc, int64_t d)
{
	tc->held = 0;
	tc->held_changes = 0;
	int64_t h = __atomic_add_fetch(&s->c.held, d, __ATOMIC_RELAXED);
	int64_t pk = __atomic_load_n(&s->c.held_peak, __ATOMIC_RELAXED);
	while (h > pk && !__atomic_compare_exchange_n(&s->c.held_peak, &pk, h, 1, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		;
}

static inline void held_change(struct site *s, struct counts *tc, int64_t v)
{
	if (UNLIKELY(threaded)) {
		int64_t d = tc->held + v;
		uint32_t n = ++tc->held_changes;
		if (UNLIKELY(n >= 64 || d > HELD_BOUND || d < -HELD_BOUND))
			held_fold(s, tc, d);
		else
			tc->held = d;
		return;
	}
	s->c.held += v;
	if (s->c.held > s->c.held_peak)
		s->c.held_peak = s->c.held;
}

/* Back to glibc. */
static void block_release(void *p)
{
	__libc_free((char *)p - off_of(p));
}

static void pool_release(void *obj, void *ctx)
{
	struct site *s = ctx;
	struct counts *tc = tcounts(s);
	held_change(s, tc, -(int64_t)cap_of(obj));
	tc->released++;
	block_release(obj);
}

static inline struct vpool *pool_of(struct site *s, uint64_t size)
{
	if (!s->nclasses)
		return &s->pools[0];
	for (unsigned k = 0; k < s->nclasses; k++)
		if (size <= s->class_max[k])
			return &s->pools[k];
	return NULL;
}

/* Sizes and alignments a site's block is made for (else the call is
 * served as if no site made it). */
static inline int poolable(size_t n, size_t align)
{
	return n <= CAP_MASK - 65536 && align <= 65536;
}

/* A new block for site s: n bytes aligned to `align` (a power of two,
 * 16 at least), zeroed if asked. NULL: out of memory. */
static void *site_new(struct site *s, size_t n, size_t align, int zero)
{
	size_t off = align;
	char *q;
	if (align <= 16)
		q = zero ? __libc_calloc(1, n + off) : __libc_malloc(n + off);
	else {
		q = __libc_memalign(align, n + off);
		if (q && zero)
			memset(q + off, 0, n);
	}
	if (!q)
		return NULL;
	char *p = q + off;
	hdr(p)[0] = (uint64_t)n | (uint64_t)(off >> 4) << 48;
	hdr(p)[1] = (uint64_t)(uintptr_t)s | TAG_BIT;
	return p;
}

/* A Get for site s: the pool's object when it holds one big enough (and
 * aligned enough), else a new block (a "small hit" releases the pool's). */
static void *site_get(struct site *s, struct counts *tc, size_t n, size_t align, int zero)
{
	struct vpool *pool = pool_of(s, n);
	/* (rounded up, a new block is of its class's size: every block of a
	 * class then serves every request of it) */
	size_t make = pool && s->round_up ? s->class_max[pool - s->pools] : n;
	if (pool) {
		int src = 0;
		char *x = vpool_get_from(pool, &src);
		if (x) {
			uint64_t c = cap_of(x);
			tc->src[src]++;
			held_change(s, tc, -(int64_t)c);
			if (c >= n && !((uintptr_t)x & (align - 1))) {
				tc->alloc_bytes_avoided += n;
				if (zero)
					memset(x, 0, n);
				return x;
			}
			tc->small++;
			block_release(x);
		}
	}
	return site_new(s, make, align, zero);
}

/* A Put: the block back to its site's pool, or to glibc above the cap (or
 * above the last size class). */
static void site_put(void *p, uint64_t tag)
{
	struct site *s = (struct site *)(uintptr_t)(tag & ~(uint64_t)15);
	uint64_t c = cap_of(p);
	struct vpool *pool = !s->cap_limit || c <= s->cap_limit ? pool_of(s, c) : NULL;
	struct counts *tc = tcounts(s);
	tc->puts++;
	if (!pool) {
		tc->dropped_cap++;
		block_release(p);
		return;
	}
	held_change(s, tc, (int64_t)c);
	vpool_put(pool, p);
}

/* A realloc of a site's block. */
static void *site_realloc(void *p, uint64_t tag, size_t n)
{
	struct site *s = (struct site *)(uintptr_t)(tag & ~(uint64_t)15);
	if (!n) {
		/* glibc frees and returns NULL */
		site_put(p, tag);
		return NULL;
	}
	uint64_t c = cap_of(p);
	size_t off = off_of(p);
	struct counts *tc = tcounts(s);
	tc->reallocs++;
	if (n <= c) {
		tc->reallocs_avoided++;
		tc->realloc_bytes_avoided += n;
		return p;
	}
	if (!poolable(n, 16)) {
		errno = ENOMEM;
		return NULL;
	}
	char *q = (char *)p - off, *np;
	if (off == 16) {
		char *q2 = __libc_realloc(q, n + 16);
		if (!q2)
			return NULL;
		np = q2 + 16;
	} else {
		/* aligned: a new block of the usual offset */
		char *q2 = __libc_malloc(n + 16);
		if (!q2)
			return NULL;
		np = q2 + 16;
		size_t have = real_usable(q) - off;
		memcpy(np, p, have < n ? have : n);
		hdr(np)[1] = tag;
		__libc_free(q);
	}
	hdr(np)[0] = (uint64_t)n | (uint64_t)1 << 48;
	return np;
}

/* ---- the entry points ---- */

/* An allocation of n bytes (aligned to `align`, zeroed if asked) by the
 * call returning to ra of the given kind. */
static inline void *alloc_at(uintptr_t ra, uint32_t kind, size_t n, size_t align, int zero)
{
	struct site *s = site_of(ra, kind);
	if (UNLIKELY(s)) {
		struct counts *tc = tcounts(s);
		tc->gets++;
		if (pooling && s->pooled && poolable(n, align))
			return site_get(s, tc, n, align, zero);
	}
	return NULL;
}

EXPORT void *malloc(size_t n)
{
	account(n);
	if (UNLIKELY(tab)) {
		void *p =
		    alloc_at((uintptr_t)__builtin_return_address(0), AP_TRY_KIND_CALL, n, 16, 0);
		if (p)
			return p;
	}
	return __libc_malloc(n);
}

EXPORT void free(void *p)
{
	if (!p)
		return;
	uint64_t w = ((uint64_t *)p)[-1];
	if (UNLIKELY(w & TAG_BIT)) {
		site_put(p, w);
		return;
	}
	__libc_free(p);
}

EXPORT void cfree(void *p)
{
	free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
	size_t sz;
	if (__builtin_mul_overflow(n, m, &sz)) {
		errno = ENOMEM;
		return NULL;
	}
	account(sz);
	if (UNLIKELY(tab)) {
		void *p =
		    alloc_at((uintptr_t)__builtin_return_address(0), AP_TRY_KIND_CALL, sz, 16, 1);
		if (p)
			return p;
	}
	return __libc_calloc(n, m);
}

EXPORT void *realloc(void *p, size_t n)
{
	account(n);
	if (!p) {
		if (UNLIKELY(tab)) {
			void *r = alloc_at((uintptr_t)__builtin_return_address(0), AP_TRY_KIND_CALL,
					   n, 16, 0);
			if (r)
				return r;
		}
		return __libc_realloc(p, n);
	}
	uint64_t w = ((uint64_t *)p)[-1];
	if (UNLIKELY(w & TAG_BIT))
		return site_realloc(p, w, n);
	return __libc_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t sz;
	if (__builtin_mul_overflow(n, m, &sz)) {
		errno = ENOMEM;
		return NULL;
	}
	account(sz);
	if (!p) {
		if (UNLIKELY(tab)) {
			void *r = alloc_at((uintptr_t)__builtin_return_address(0), AP_TRY_KIND_CALL,
					   sz, 16, 0);
			if (r)
				return r;
		}
		return __libc_realloc(p, sz);
	}
	uint64_t w = ((uint64_t *)p)[-1];
	if (UNLIKELY(w & TAG_BIT))
		return site_realloc(p, w, sz);
	return __libc_realloc(p, sz);
}

static inline int pow2(size_t a)
{
	return a && !(a & (a - 1));
}

/* The memalign family: a site's aligned request is pooled (an object
 * handed out again must be as aligned as this request asks). */
static inline void *aligned_at(uintptr_t ra, size_t align, size_t n)
{
	account(n);
	if (UNLIKELY(tab))
		return alloc_at(ra, AP_TRY_KIND_CALL, n, align < 16 ? 16 : align, 0);
	return NULL;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (!pow2(align) || align % sizeof(void *))
		return EINVAL;
	void *p = aligned_at((uintptr_t)__builtin_return_address(0), align, n);
	if (!p)
		p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (!pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	void *p = aligned_at((uintptr_t)__builtin_return_address(0), align, n);
	return p ? p : __libc_memalign(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	/* glibc rounds a non-power-of-two alignment up */
	size_t a = 1;
	while (a < align && a)
		a <<= 1;
	if (!a) {
		errno = EINVAL;
		return NULL;
	}
	void *p = aligned_at((uintptr_t)__builtin_return_address(0), a, n);
	return p ? p : __libc_memalign(align, n);
}

EXPORT void *valloc(size_t n)
{
	void *p = aligned_at((uintptr_t)__builtin_return_address(0), 4096, n);
	return p ? p : __libc_valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
	/* rounded up to whole pages, as glibc's */
	size_t r = (n + 4095) & ~(size_t)4095;
	if (r < n) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = aligned_at((uintptr_t)__builtin_return_address(0), 4096, r ? r : 4096);
	return p ? p : __libc_pvalloc(n);
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	uint64_t w = ((uint64_t *)p)[-1];
	if (UNLIKELY(!real_usable)) /* called before the constructor */
		real_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	if (UNLIKELY(w & TAG_BIT))
		return real_usable((char *)p - off_of(p)) - off_of(p);
	return real_usable(p);
}

/* C++ operator new: a `new` site's call instruction is the program's call
 * of operator new (the trace's stack has libstdc++'s call of malloc
 * before it). Failures go to the real one, for its new-handler and
 * std::bad_alloc. */
static inline void *new_at(uintptr_t ra, size_t n, void *(*real)(size_t))
{
	account(n);
	void *p = NULL;
	if (UNLIKELY(tab))
		p = alloc_at(ra, AP_TRY_KIND_NEW, n, 16, 0);
	if (!p)
		p = __libc_malloc(n);
	if (UNLIKELY(!p)) {
		if (!real)
			abort();
		return real(n);
	}
	return p;
}

EXPORT void *_Znwm(size_t n)
{
	return new_at((uintptr_t)__builtin_return_address(0), n, real_new);
}

EXPORT void *_Znam(size_t n)
{
	return new_at((uintptr_t)__builtin_return_address(0), n, real_new_arr);
}

EXPORT void *dlopen(const char *file, int flags)
{
	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	void *h = real_dlopen ? real_dlopen(file, flags) : NULL;
	if (h)
		resolve();
	return h;
}

/* ---- fork: no pool lock may be held in the child ---- */

static void for_each_pool(void (*fn)(struct vpool *))
{
	for (unsigned i = 0; i < nsites; i++)
		for (unsigned k = 0; k < (sites[i].nclasses ? sites[i].nclasses : 1); k++)
			fn(&sites[i].pools[k]);
}

static void pool_lock_all(struct vpool *p)
{
	for (unsigned c = 0; c < p->n; c++)
		vpool_lock_(&p->sh[c]);
	vpool_locals_lock_(p);
}

static void pool_unlock_all(struct vpool *p)
{
	vpool_locals_unlock_(p);
	for (unsigned c = 0; c < p->n; c++)
		vpool_unlock_(&p->sh[c]);
}

static void fork_prepare(void)
{
	spin_lock(&gc_lock);
	spin_lock(&resolve_lock);
	spin_lock(&tstates_lock);
	if (pooling)
		for_each_pool(pool_lock_all);
}

static void fork_parent(void)
{
	if (pooling)
		for_each_pool(pool_unlock_all);
	spin_unlock(&tstates_lock);
	spin_unlock(&resolve_lock);
	spin_unlock(&gc_lock);
}

/* The child counts its own calls from here (its exit line is its own;
 * the parent's so far are the parent's). What other threads held in
 * their private slots stays with those threads' memory in the child. */
static pid_t my_pid;	/* this process's (a vfork child shares the memory, not the pid) */

static void fork_child(void)
{
	fork_parent();
	my_pid = getpid();
	for (unsigned i = 0; i < nsites; i++) {
		int64_t held = sites[i].c.held;
		for (struct tstate *t = tstates; t; t = t->next)
			held += t->c ? t->c[i].held : 0;
		memset(&sites[i].c, 0, sizeof(sites[i].c));
		sites[i].c.held = held;
		sites[i].c.held_peak = held;
	}
	for (struct tstate *t = tstates; t; t = t->next) {
		t->calls = 0;
		if (t->c)
			memset(t->c, 0, nsites * sizeof(*t->c));
	}
	gc_cycles = 0;
}

/* ---- start and exit ---- */

static int hexbytes(const char *h, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = 0;
	while (h[0] && h[1] && n < cap) {
		unsigned v;
		if (sscanf(h, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t)v;
		h += 2;
	}
	*len = n;
	return *h ? -1 : 0;
}

/* Reads the config. Returns 0, or -1 (then the library does nothing). */
static int read_config(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[512];
	int ok = fgets(line, sizeof(line), f) && !strncmp(line, AP_TRY_MAGIC, strlen(AP_TRY_MAGIC));
	size_t walloc = 0;
	while (ok && fgets(line, sizeof(line), f)) {
		char word[16], arg[300], arg2[300];
		unsigned long long a, b, b2, cl[AP_TRY_MAX_CLASSES];
		unsigned id, kind, nc, depth = 0;
		int np, ru;
		if (sscanf(line, "mode %15s", word) == 1) {
			pooling = !strcmp(word, "pool");
		} else if (sscanf(line, "pool %u", &id) == 1) {
			if (id >= nsites)
				ok = 0;
			else
				sites[id].pooled = 1;
		} else if (sscanf(line, "out %4095[^\n]", outpath) == 1) {
		} else if (sscanf(line, "gc %llu", &a) == 1) {
			gogc = a;
		} else if (sscanf(line, "site %u %llu %u %llu %llu %llu %llu %d", &id, &a, &nc, &cl[0],
				  &cl[1], &cl[2], &cl[3], &ru) == 8) {
			if (id != nsites || id >= AP_TRY_MAX_SITES || nc > AP_TRY_MAX_CLASSES ||
			    (ru && !nc))
				ok = 0;
			else {
				struct site *s = &sites[nsites];
				s->idx = nsites++;
				s->cap_limit = a;
				s->nclasses = nc;
				s->round_up = ru;
				for (unsigned k = 0; k < nc; k++)
					s->class_max[k] = cl[k];
			}
		} else if ((np = sscanf(line, "pc %u %u %299s %llx %u %299s %llx", &id, &kind, arg,
					&b, &depth, arg2, &b2)) >= 4) {
			if (id >= nsites || kind > AP_TRY_KIND_STOP ||
			    (kind >= AP_TRY_KIND_FRAME &&
			     (np != 7 || !depth || depth >= MAX_WALK))) {
				ok = 0;
				break;
			}
			if (nwants == walloc) {
				walloc = walloc ? 2 * walloc : 64;
				struct want *w = __libc_realloc(wants, walloc * sizeof(*w));
				if (!w) {
					ok = 0;
					break;
				}
				wants = w;
			}
			struct want *w = &wants[nwants];
			memset(w, 0, sizeof(*w));
			w->parts = np == 7 ? 2 : 1;
			if (hexbytes(arg, w->bid[0], sizeof(w->bid[0]), &w->blen[0]) < 0 ||
			    !w->blen[0] ||
			    (np == 7 &&
			     (hexbytes(arg2, w->bid[1], sizeof(w->bid[1]), &w->blen[1]) < 0 ||
			      !w->blen[1]))) {
				ok = 0;
				break;
			}
			w->off[0] = b;
			w->off[1] = np == 7 ? b2 : 0;
			w->site = id;
			w->kind = kind;
			w->depth = np == 7 ? depth : 0;
			if (kind == AP_TRY_KIND_LEAF)
				walks = 1;
			nwants++;
		} else if (line[0] != '\n') {
			ok = 0;
		}
	}
	fclose(f);
	return ok && outpath[0] ? 0 : -1;
}

/* Another allocator in front of glibc, or a sanitizer's runtime: a
 * pooled block could not be told from theirs (and ASan would not let its
 * blocks be served by anything else). */
static void check_refusal(void)
{
	char owner[4096];
	ap_malloc_owner_find(owner, sizeof(owner), __ehdr_start);
	if (owner[0]) {
		snprintf(refused, sizeof(refused), "its malloc is %s's, not glibc's", owner);
		return;
	}
	static const char *const rt[] = {"__asan_init", "__tsan_init", "__msan_init",
					 "__hwasan_init", "__lsan_init"};
	for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
		if (dlsym(RTLD_DEFAULT, rt[i])) {
			snprintf(refused, sizeof(refused), "a sanitizer runtime is loaded (%s)",
				 rt[i]);
			return;
		}
}

__attribute__((constructor)) static void try_init(void)
{
	const char *cfg = getenv(AP_TRY_ENV);
	real_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	real_new = (void *(*)(size_t))dlsym(RTLD_NEXT, "_Znwm");
	real_new_arr = (void *(*)(size_t))dlsym(RTLD_NEXT, "_Znam");
	real_sigprocmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "sigprocmask");
	if (!cfg || !*cfg || read_config(cfg) < 0)
		return;
	my_pid = getpid();
	check_refusal();
	if (refused[0]) {
		pooling = 0;
		active = 1; /* to say so at exit */
		return;
	}
	for (unsigned i = 0; i < nsites; i++)
		for (unsigned k = 0; k < (sites[i].nclasses ? sites[i].nclasses : 1); k++)
			if (vpool_init(&sites[i].pools[k], 0, pool_release, &sites[i]) < 0) {
				snprintf(refused, sizeof(refused), "cannot make a pool");
				active = 1;
				pooling = 0;
				return;
			}
	size_t cap = 64;
	while (cap < 4 * nwants)
		cap *= 2;
	struct pcent *t = mmap(NULL, cap * sizeof(*t), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return;
	tabmask = cap - 1;
	tab = t; /* before resolve: tab_add fills it */
	nunresolved = nwants;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (walks) {
		/* The unwinder is loaded now, not from inside a malloc. */
		void *own = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD);
		if (own) {
			unw_masks_kept = 1; /* the program's own */
			dlclose(own);
		}
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		if (h) {
			unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
			if (unw_bt)
				ap_text_range_of((const void *)unw_bt, &unw_lo, &unw_hi);
			/* per-thread caches: the global one takes a lock (and masks
			 * signals) on every step; UNW_CACHE_PER_THREAD is 2 */
			int (*policy)(void *, int) =
			    (int (*)(void *, int))dlsym(h, "_ULx86_64_set_caching_policy");
			void **local = (void **)dlsym(h, "_ULx86_64_local_addr_space");
			if (policy && local)
				policy(*local, 2);
		}
		uint32_t deepest = 0;
		for (size_t i = 0; i < nwants; i++)
			if (wants[i].depth > deepest)
				deepest = wants[i].depth;
		walk_frames = (int)deepest + WALK_SLACK + 1;
		void *bt[4];	/* glibc loads libgcc_s at its first backtrace() */
		in_walk = 1;
		if (unw_bt)
			unw_bt(bt, 4);
		else
			backtrace(bt, 4);
		in_walk = 0;
	}
	active = 1;
	dl_iterate_phdr(resolve_cb, NULL);
}

static long vm_hwm_kb(void)
{
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *h = strstr(buf, "VmHWM:");
	return h ? strtol(h + 6, NULL, 10) : -1;
}

static int finished;

/* Writes the counts once. Not from a vfork child, which shares the
 * parent's memory (its _exit must leave the counts to the parent). */
__attribute__((destructor)) static void try_fini(void)
{
	if (!active || getpid() != my_pid || __atomic_exchange_n(&finished, 1, __ATOMIC_ACQ_REL))
		return;
	char buf[AP_TRY_MAX_SITES * 512 + 1024];
	size_t len = 0;
	uint64_t calls = 0;
	for (struct tstate *t = tstates; t; t = t->next)
		calls += __atomic_load_n(&t->calls, __ATOMIC_RELAXED);
	len += (size_t)snprintf(buf + len, sizeof(buf) - len,
				"proc pid=%d calls=%llu hwm_kb=%ld cycles=%llu refused=%s\n",
				(int)getpid(), (unsigned long long)calls, vm_hwm_kb(),
				(unsigned long long)gc_cycles, refused[0] ? refused : "-");
	for (unsigned i = 0; i < nsites && len < sizeof(buf); i++) {
		struct counts sum = {.held_peak = sites[i].c.held_peak};
		const struct counts *c = &sum;
		tcounts_sum(i, &sum);
		uint64_t hits = c->src[VPOOL_PRIVATE] + c->src[VPOOL_SHARED] +
				c->src[VPOOL_STOLEN] + c->src[VPOOL_VICTIM];
		len += (size_t)snprintf(
		    buf + len, sizeof(buf) - len,
		    "site id=%u gets=%llu hits=%llu small=%llu private=%llu shared=%llu "
		    "stolen=%llu "
		    "victim=%llu allocs_avoided=%llu alloc_bytes_avoided=%llu reallocs=%llu "
		    "reallocs_avoided=%llu realloc_bytes_avoided=%llu puts=%llu dropped_cap=%llu "
		    "released=%llu held_peak=%lld\n",
		    i, (unsigned long long)c->gets, (unsigned long long)hits,
		    (unsigned long long)c->small, (unsigned long long)c->src[VPOOL_PRIVATE],
		    (unsigned long long)c->src[VPOOL_SHARED],
		    (unsigned long long)c->src[VPOOL_STOLEN],
		    (unsigned long long)c->src[VPOOL_VICTIM], (unsigned long long)(hits - c->small),
		    (unsigned long long)c->alloc_bytes_avoided, (unsigned long long)c->reallocs,
		    (unsigned long long)c->reallocs_avoided,
		    (unsigned long long)c->realloc_bytes_avoided, (unsigned long long)c->puts,
		    (unsigned long long)c->dropped_cap, (unsigned long long)c->released,
		    (long long)c->held_peak);
	}
	if (len > sizeof(buf))
		len = sizeof(buf);
	int fd = open(outpath, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t w = write(fd, buf, len);
	(void)w;
	close(fd);
}

/* A process that ends by _exit runs no destructor: its counts are
 * written first. */
void _exit(int status) __attribute__((noreturn));
void _Exit(int status) __attribute__((noreturn));

EXPORT void _exit(int status)
{
	try_fini();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}
