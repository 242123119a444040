/* interpose.c: the interposed malloc family and the hot path. malloc and
 * free are one screen: a countdown per thread over the bytes allocated
 * (malloc) and a filter probe (free), then a tail call of glibc's; only a
 * sample (the countdown went negative) or a tracked block takes the slow
 * path, where the sampling decision is made and the event recorded. Every
 * helper the fast and slow paths need is inline here or in sampler-int.h
 * and stacks.h: no calls across files on those paths (LTO is not used).
 * Owns the TLS block. */
#include "emit.h"
#include "stacks.h"

/* The calling thread's state (struct ap_tls, sampler-int.h). */
__thread struct ap_tls tls __attribute__((tls_model("initial-exec")));

/* ln(x) for x > 0, by the x87's fyl2x (ln 2 x log2 x, in 64-bit precision,
 * rounded once to double): the sampler calls no libm. A call of `log`
 * would bind to the first `log` in the program's lookup scope, which is
 * the program's own when it exports one (a logging function, -rdynamic):
 * the sampler called it, with a double, at every sample; and the libm it
 * needed was loaded into programs that do not load it. */
static inline double ln_x87(double x)
{
	long double r;
	__asm__("fldln2\n\tfxch\n\tfyl2x" : "=t"(r) : "0"((long double)x) : "st(1)");
	return (double)r;
}

/* The next interval between samples, in bytes (+1 per call): exponential
 * of mean settings.rate; 0 with --all. Advances t's generator. */
int64_t draw_interval(struct ap_tls *t)
{
	if (settings.rate <= 1)
		return 0;
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	uint64_t r = x * 0x2545f4914f6cdd1dull;
	double u = ((double)(r >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double v = -ln_x87(u) * (double)settings.rate;
	if (v > 1e15)
		v = 1e15;
	return (int64_t)v;
}

/* ---- the live-byte counter (struct ap_live, sampler-int.h) -------------- */

struct ap_live live_bytes __attribute__((aligned(64)));
int live_on;

/* glibc's usable size of the block p, from its chunk header (what
 * malloc_usable_size answers): the chunk's size less its 8-byte header,
 * 16 for a chunk of its own mapping (bit 1, IS_MMAPPED). */
typedef size_t __attribute__((may_alias)) chunk_word;
static inline int64_t blk_size(const void *p)
{
	size_t h = ((const chunk_word *)p)[-1];
	return (int64_t)((h & ~(size_t)7) - 8 - ((h & 2) << 2));
}

/* v more bytes allocated (live_in) or freed (live_out) in this thread. */
static inline __attribute__((always_inline)) void live_in(struct ap_tls *t, int64_t v)
{
	int64_t d = (int64_t)t->live_in + v;
	if (UNLIKELY(d > LIVE_BOUND))
		live_fold(t, d, t->live_out);
	else
		t->live_in = (int32_t)d;
}

static inline __attribute__((always_inline)) void live_out(struct ap_tls *t, int64_t v)
{
	int64_t d = (int64_t)t->live_out - v;
	if (UNLIKELY(d < -LIVE_BOUND))
		live_fold(t, t->live_in, d);
	else
		t->live_out = (int32_t)d;
}

/* A block the program got: counted if the C library's headers are known. */
static inline __attribute__((always_inline)) void live_got(struct ap_tls *t, const void *p)
{
	if (LIKELY(live_on))
		live_in(t, blk_size(p));
}

/* The buffers file's header, where the peak and slack are copied for a
 * death that leaves no END (live_mirror). */
static struct ap_buffers_head *mirror;

void live_mirror(struct ap_buffers_head *h)
{
	__atomic_store_n(&mirror, live_on && !malloc_owner() ? h : NULL, __ATOMIC_RELEASE);
	live_mirror_update();
}

/* The copy follows the peak (a larger value only) and the slack. */
void live_mirror_update(void)
{
	struct ap_buffers_head *h = __atomic_load_n(&mirror, __ATOMIC_ACQUIRE);
	if (!h)
		return;
	int64_t pk = __atomic_load_n(&live_bytes.peak, __ATOMIC_RELAXED);
	uint64_t v = pk > 0 ? (uint64_t)pk : 0, old = __atomic_load_n(&h->live_peak, __ATOMIC_RELAXED);
	while (v > old && !__atomic_compare_exchange_n(&h->live_peak, &old, v, 1, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		;
	uint32_t n = __atomic_load_n(&live_bytes.threads_max, __ATOMIC_RELAXED);
	__atomic_store_n(&h->live_slack, 2 * (uint64_t)LIVE_BOUND * (n ? n : 1), __ATOMIC_RELAXED);
}

/* t's counts are in and out (what live_in and live_out would hold): into
 * the shared counter, the peak kept. A thread past thr_exit (live_dead)
 * folds every change at once: its counts would die with it. Safe in a
 * signal handler (atomics only). */
__attribute__((noinline)) void live_fold(struct ap_tls *t, int64_t in, int64_t out)
{
	if (t->live_in == LIVE_DEAD_IN) {
		in -= LIVE_DEAD_IN;
		out -= LIVE_DEAD_OUT;
	} else {
		t->live_in = t->live_out = 0;
	}
	int64_t c = __atomic_add_fetch(&live_bytes.cur, in + out, __ATOMIC_RELAXED);
	int64_t pk = __atomic_load_n(&live_bytes.peak, __ATOMIC_RELAXED);
	if (c <= pk)
		return;
	while (c > pk && !__atomic_compare_exchange_n(&live_bytes.peak, &pk, c, 1,
						      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	live_mirror_update();
}

void live_fold_all(struct ap_tls *t)
{
	live_fold(t, t->live_in, t->live_out);
}

/* The thread is exiting (thr_exit): what it frees from now on (other
 * keys' destructors, the C library's own at thread exit) folds at once. */
void live_dead(struct ap_tls *t)
{
	live_fold_all(t);
	t->live_in = LIVE_DEAD_IN;
	t->live_out = LIVE_DEAD_OUT;
}

/* resolve() found the C library's functions: whether their blocks carry
 * glibc's chunk headers, that is whether the malloc behind the sampler is
 * libc.so's (not an allocator preloaded after it, nor glibc's debugging
 * malloc, libc_malloc_debug.so). Otherwise nothing is counted and END has
 * no peak. No block is allocated to find out: a freed block of 128 KiB or
 * more would raise glibc's mmap threshold, and the program's big blocks
 * would come from the heap instead of mappings of their own. */
void live_check(void)
{
	Dl_info di;
	const char *name;
	if (!dladdr((void *)real_malloc, &di) || !di.dli_fname)
		return;
	name = strrchr(di.dli_fname, '/');
	name = name ? name + 1 : di.dli_fname;
	live_on = !strncmp(name, "libc.so", 7);
}

/* The peak so far, with what every live thread has not folded yet (the
 * END of a program whose peak is its end), and in *slack how far the true
 * peak may be from it: LIVE_BOUND for each thread that ran at once. */
int64_t live_peak_now(uint64_t *slack)
{
	int64_t c = __atomic_load_n(&live_bytes.cur, __ATOMIC_RELAXED);
	for (struct ap_thr *b = threads.all; b; b = b->next) {
		struct ap_tls *t = b->tls;
		if (__atomic_load_n(&b->live, __ATOMIC_ACQUIRE) && t && t->live_in != LIVE_DEAD_IN)
			c += __atomic_load_n(&t->live_in, __ATOMIC_RELAXED) +
			     __atomic_load_n(&t->live_out, __ATOMIC_RELAXED);
	}
	int64_t pk = __atomic_load_n(&live_bytes.peak, __ATOMIC_RELAXED);
	uint32_t n = __atomic_load_n(&live_bytes.threads_max, __ATOMIC_RELAXED);
	*slack = 2 * (uint64_t)LIVE_BOUND * (n ? n : 1);
	return c > pk ? c : pk;
}

/* ---- the program's time between its calls (--all) ---------------------- */

/* Each record of an --all --gaps trace carries its gap: how long the thread ran
 * in the program between the return of its last recorded call and the
 * entry of this one (what advise's measured replay puts between the
 * thread's calls). The entry points stamp the TSC before the real call;
 * emit takes the TSC it reads for the record's time as the return (the
 * allocation is made by then: one TSC read less a call), and a free,
 * whose real free comes after its record, stamps it again after. Not
 * inside the sampler (guard): its own allocations are not the
 * program's. */
static inline __attribute__((always_inline)) void gap_enter(void)
{
	struct ap_tls *t = &tls;
	if (UNLIKELY(settings.gaps) && t->thr && !t->guard)
		t->thr->gap_at = rd_tsc();
}

static inline __attribute__((always_inline)) void gap_leave(struct ap_tls *t)
{
	if (settings.gaps && t->thr)
		t->thr->gap_from = rd_tsc();
}

/* ---- the sampled paths -------------------------------------------------- */

static inline __attribute__((always_inline)) void record_alloc(struct ap_tls *t, void *p, size_t n,
								unsigned kind, uint64_t ret,
								uint64_t cfa)
{
	/* an address the program now owns is not ours, even if its free
	 * reached glibc without passing through us */
	if (settings.all)
		own_forget(p);
	uint32_t id = stack_here(t, ret, cfa);
	if (!id)
		return;
	if (!settings.all)
		set_insert(p);
	emit_at(t, AP_EV_ALLOC, kind, (uintptr_t)p, 0, n, id, 0, 0);
}

/* The calling thread registered, and whether its countdown ran out (a
 * sample): if so, the next interval starts. */
static inline int sample_due(struct ap_tls *t)
{
	if (!t->thr)
		thr_register(t);
	if (t->countdown >= 0)
		return 0;
	t->consumed += (uint64_t)(t->interval - t->countdown);
	/* --all: every call is sampled, the interval is 0 (no call per event) */
	t->interval = settings.rate <= 1 ? 0 : draw_interval(t);
	t->countdown = t->interval;
	return 1;
}

/* A sampled call's work, on the sampler's stack (on_slow_stack): what the
 * caller's stack cannot be asked for. */
__attribute__((noipa)) void alloc_sampled(void *p, size_t n, unsigned kind, uint64_t caller,
				     uint64_t cfa)
{
	struct ap_tls *t = &tls;
	if (sample_due(t) && p)
		record_alloc(t, p, n, kind, caller, cfa);
}

/* A tracked block is freed (p), on the sampler's stack: at the TSC
 * gap_enter read at the free's entry (--all; 0 for a thread registered
 * only now, whose gap_at thr_register cleared). */
void free_sampled(void *p)
{
	struct ap_tls *t = &tls;
	if (!t->thr)
		thr_register(t);
	uint64_t at = settings.gaps && t->thr != &threads.dead ? t->thr->gap_at : 0;
	emit_at(t, AP_EV_FREE, 0, (uintptr_t)p, 0, 0, 0, 0, at);
}

/* The countdown went negative (or the thread is new, or the sampler is not
 * running): decide, and record if sampled. */
static inline __attribute__((always_inline)) void *alloc_slow_body(void *p, size_t n,
								    unsigned kind,
								    uint64_t caller,
								    uint64_t cfa)
{
	struct ap_tls *t = &tls;
	int st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	/* not started yet: logged (the log closed meanwhile: the state
	 * has turned, and the call is recorded as it says) */
	if (UNLIKELY(st == AP_INIT) && !t->guard && p && !pre_add(NULL, p, n, kind, caller))
		st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	if (t->guard || st != AP_ON) {
		if (st == AP_DISABLED) {
			t->countdown = INT64_MAX / 2;
		} else {
			/* our own allocation, or logged: not counted now
			 * (pre_replay counts the program's early ones) */
			t->countdown = (int64_t)((uint64_t)t->countdown + n + 1);
			t->calls--;
			if (st == AP_ON && settings.all && p && !is_boot(p))
				ps_insert(&own_blocks, p);
		}
		return p;
	}
	if (!settings.all)
		live_fold_all(t); /* every sample: the peak follows closely */
	int saved = errno_get();
	t->guard = 1;
	on_slow_stack(alloc_sampled, p, n, kind, caller, cfa);
	t->guard = 0;
	errno_put(saved);
	return p;
}

/* caller and cfa: the program's return address and its CFA at the call of
 * the entry point (0 if unknown) */
static __attribute__((noinline)) void *alloc_slow(void *p, size_t n, unsigned kind,
						    uint64_t caller, uint64_t cfa)
{
	return alloc_slow_body(p, n, kind, caller, cfa);
}

static inline __attribute__((always_inline)) void *account(void *p, size_t n,
							    unsigned kind)
{
	struct ap_tls *t = &tls;
	live_got(t, p);
	t->calls++;
	int64_t c = (int64_t)((uint64_t)t->countdown - n - 1);
	t->countdown = c;
	if (UNLIKELY(c < 0)) /* inlined: the return address is the entry point's */
		return alloc_slow(p, n, kind, (uint64_t)(uintptr_t)__builtin_return_address(0),
				  (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
	return p;
}

/* A block is being freed: record it if it was tracked. Called before the
 * real free so that a block reused at once by another thread is seen
 * allocated after this free. */
static __attribute__((noinline)) void free_slow(void *p)
{
	struct ap_tls *t = &tls;
	if (!p)
		return;
	if (UNLIKELY(is_boot(p))) {
		own_free(p);
		return;
	}
	gap_enter();
	if (live_on)
		live_out(t, blk_size(p));
	int st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	if (UNLIKELY(st == AP_INIT) && !t->guard && !pre_add(p, NULL, 0, 0, 0))
		st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE); /* see alloc_slow_body */
	if (t->guard || st != AP_ON) {
		if (st == AP_INIT && !t->guard)
			; /* logged */
		else if (st == AP_DISABLED)
			; /* the sets are not kept (a fork child that runs
			   * unrecorded, its sets perhaps half-changed: fork_inside) */
		else if (!settings.all)
			set_remove(p);
		else
			own_forget(p);
		real_free(p);
		return;
	}
	int saved = errno_get();
	t->guard = 1;
	if (settings.all ? !own_forget(p) : set_remove(p))
		on_slow_stack(free_sampled, p);
	t->guard = 0;
	errno_put(saved);
	real_free(p);
	gap_leave(t);
}

/* ---- the interposed entry points --------------------------------------- */

/* Only calls that succeed are counted (a NULL is no allocation, and
 * valgrind does not count it either). A request below MALLOC_CHECK_MIN
 * fails only when the heap cannot grow at all (the process is out of
 * memory), and its fast path stays what a bare forwarding shim does: the
 * countdown, then the real malloc as a tail call (no frame, no return
 * through us; checking the result costs ~1.3 ns a pair on the 64-byte
 * loop, as much as the rest of the fast path). A larger one, which may
 * simply be too large, is checked first. */
#define MALLOC_CHECK_MIN 4096

/* malloc tail-jumped here: our return address is the program's. Inside
 * the sampler (an unwind: libunwind's thread-local block is made at a
 * thread's first, under --all at its first call, sampled at its first
 * sample, mid-run; stack_here sends such calls here), a small block of
 * its own comes from the boot arena, not the program's heap
 * (own_alloc): made there, it moved how glibc split the thread's next
 * aligned blocks (tests/record/heapshift.c loop thread). */
static __attribute__((noinline)) void *malloc_slow(size_t n)
{
	gap_enter();
	void *p = NULL;
	if (UNLIKELY(tls.guard & GUARD_OWN) && !attach_mode &&
	    __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) == AP_ON)
		p = own_alloc(n);
	if (!p && (p = real_malloc(n)))
		live_got(&tls, p);
	return alloc_slow_body(p, n, AP_KIND_MALLOC,
			       (uint64_t)(uintptr_t)__builtin_return_address(0),
			       (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
}

/* The entry points every allocation goes through start a 64-byte line
 * (bench/README.md, session 25): where they start otherwise depends on
 * everything linked before them (the PLT's length, other files' cold
 * code), and a 16-byte shift of malloc and free moved the tight loop's
 * cost by up to 4 %. */
#define HOT_ENTRY __attribute__((aligned(64)))

static __attribute__((noinline)) void *malloc_checked(size_t n)
{
	gap_enter();
	void *p = real_malloc(n);
	return LIKELY(p != NULL) ? account(p, n, AP_KIND_MALLOC) : p;
}

HOT_ENTRY EXPORT void *malloc(size_t n)
{
	if (UNLIKELY(n >= MALLOC_CHECK_MIN))
		return malloc_checked(n);
	struct ap_tls *t = &tls;
	t->calls++;
	int64_t c = (int64_t)((uint64_t)t->countdown - n - 1);
	t->countdown = c;
	if (UNLIKELY(c < 0))
		return malloc_slow(n);
	void *p = real_malloc(n);
	if (LIKELY(p != NULL))
		live_got(t, p);
	return p;
}

HOT_ENTRY EXPORT void free(void *p)
{
	if (UNLIKELY(ap_filter[filter_slot(p)])) {
		free_slow(p);
		return;
	}
	if (LIKELY(live_on) && p)
		live_out(&tls, blk_size(p));
	real_free(p);
}

void cfree(void *p); /* obsolete, no longer declared by glibc */
EXPORT void cfree(void *p)
{
	free(p);
}

HOT_ENTRY EXPORT void *calloc(size_t a, size_t b)
{
	size_t n;
	gap_enter();
	void *p = real_calloc(a, b);
	if (UNLIKELY(!p || __builtin_mul_overflow(a, b, &n)))
		return p; /* failed (ENOMEM, also on overflow): not counted */
	return account(p, n, AP_KIND_CALLOC);
}

/* A realloc that is sampled or moves a tracked block, on the sampler's
 * stack; kind_tracked: its kind, and the record's flag AP_RF_OLD_TRACKED
 * above it (<< 8) if old was tracked. */
void realloc_sampled(void *old, void *q, size_t n, unsigned kind_tracked, uint64_t caller,
		     uint64_t cfa)
{
	struct ap_tls *t = &tls;
	unsigned flags = kind_tracked >> 8;
	uint32_t id = 0;
	if (sample_due(t)) {
		id = stack_here(t, caller, cfa);
		if (id)
			flags |= AP_RF_NEW_SAMPLED;
	}
	if (flags) {
		if (!settings.all)
			set_insert(q);
		emit_at(t, AP_EV_REALLOC, kind_tracked & 0xff, (uintptr_t)old, (uintptr_t)q, n,
			id, flags, 0);
	}
}

/* A block moved out of the boot arena (whose blocks are not counted). */
static void *live_moved(void *q)
{
	if (q)
		live_got(&tls, q);
	return q;
}

/* realloc and reallocarray: the old block leaves the set before the real
 * call (it may be reused by another thread as soon as it is freed) and
 * goes back if the call fails. */
/* The live bytes after a realloc (was: old's usable size, read before
 * the call; 0 when not counted). */
static inline void realloc_live(struct ap_tls *t, void *q, size_t n, int64_t was)
{
	if (q && live_on) {
		/* one change, the difference: only the sum of the two
		 * counts is read (live_fold) */
		int64_t d = blk_size(q) - was;
		if (d >= 0)
			live_in(t, d);
		else
			live_out(t, -d);
	} else if (!q && n == 0) {
		live_out(t, was); /* realloc(p, 0) freed p */
	}
}

static inline __attribute__((always_inline)) void *realloc_common(void *old, int64_t was, size_t n,
								   void *q, int was_tracked,
								   unsigned kind, uint64_t caller,
								   uint64_t cfa)
{
	struct ap_tls *t = &tls;
	realloc_live(t, q, n, was);
	if (!q) {
		if (n == 0) {
			/* glibc: realloc(p, 0) freed p */
			if (was_tracked && !t->guard) {
				int saved = errno_get();
				t->guard = 1;
				on_slow_stack(free_sampled, old);
				t->guard = 0;
				errno_put(saved);
			}
		} else if (was_tracked && !settings.all) {
			set_insert(old); /* failed: old is still live */
		}
		return q;
	}
	t->calls++;
	t->countdown = (int64_t)((uint64_t)t->countdown - n - 1);
	if (LIKELY(t->countdown >= 0 && !was_tracked))
		return q;
	int st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	/* old untracked by a filter the start has just settled, before the
	 * state turned: q is logged like any early block (or live) */
	if (UNLIKELY(st == AP_INIT) && !t->guard && !pre_add(NULL, q, n, kind, caller))
		st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	if (t->guard || st != AP_ON) {
		if (t->countdown < 0)
			alloc_slow(NULL, n, kind, 0, 0); /* undoes the countdown */
		if (st == AP_ON && settings.all && own_forget(old))
			ps_insert(&own_blocks, q);
		return q;
	}
	int saved = errno_get();
	t->guard = 1;
	on_slow_stack(realloc_sampled, old, q, n,
		      kind | (was_tracked ? AP_RF_OLD_TRACKED << 8 : 0), caller, cfa);
	t->guard = 0;
	errno_put(saved);
	return q;
}

/* A realloc of an early block before the start (take_tracked's 2): made
 * and logged by pre_realloc, as valgrind counts a realloc (old's free,
 * q's birth); if the log has closed meanwhile, old is tracked as the
 * turned state says, and the call is made live. */
static __attribute__((noinline)) void *realloc_early(void *old, int64_t was, size_t n,
						     unsigned kind, uint64_t caller,
						     uint64_t cfa)
{
	void *q;
	if (pre_realloc(old, n, kind, caller, &q)) {
		realloc_live(&tls, q, n, was);
		return q;
	}
	int st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	int tracked = st != AP_ON || tls.guard ? 0 : settings.all ? 1 : set_remove(old);
	return realloc_common(old, was, n, real_realloc(old, n), tracked, kind, caller, cfa);
}

static inline int take_tracked(void *old)
{
	/* --all: every block is tracked, the filter all ones once the
	 * state is on (filter_settle): its probe is spared */
	if (settings.all && LIKELY(__atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) == AP_ON))
		return !tls.guard;
	if (LIKELY(!ap_filter[filter_slot(old)]))
		return 0;
	int st = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE);
	if (UNLIKELY(st != AP_ON))
		/* 2: an early block (realloc_early); off: the set is not
		 * kept (a fork child that runs unrecorded: fork_inside) */
		return st == AP_INIT && !tls.guard ? 2 : 0;
	if (settings.all)
		return !tls.guard;
	return set_remove(old);
}

HOT_ENTRY EXPORT void *realloc(void *old, size_t n)
{
	gap_enter();
	if (!old) {
		void *p = real_realloc(NULL, n);
		return p ? account(p, n, AP_KIND_REALLOC) : p;
	}
	if (UNLIKELY(is_boot(old)))
		return live_moved(boot_move(old, n));
	int tracked = take_tracked(old);
	int64_t was = live_on ? blk_size(old) : 0;
	if (UNLIKELY(tracked == 2))
		return realloc_early(old, was, n, AP_KIND_REALLOC,
				     (uint64_t)(uintptr_t)__builtin_return_address(0),
				     (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
	return realloc_common(old, was, n, real_realloc(old, n), tracked,
			      AP_KIND_REALLOC, (uint64_t)(uintptr_t)__builtin_return_address(0),
			      (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
}

/* glibc's reallocarray is the overflow check followed by a call of realloc
 * through the PLT, which would reach our realloc and count twice: do the
 * same here, on the real realloc. */
EXPORT void *reallocarray(void *old, size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	gap_enter();
	if (!old) {
		void *p = real_realloc(NULL, n);
		return p ? account(p, n, AP_KIND_REALLOCARRAY) : p;
	}
	if (UNLIKELY(is_boot(old)))
		return live_moved(boot_move(old, n));
	int tracked = take_tracked(old);
	int64_t was = live_on ? blk_size(old) : 0;
	if (UNLIKELY(tracked == 2))
		return realloc_early(old, was, n, AP_KIND_REALLOCARRAY,
				     (uint64_t)(uintptr_t)__builtin_return_address(0),
				     (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
	return realloc_common(old, was, n, real_realloc(old, n), tracked,
			      AP_KIND_REALLOCARRAY, (uint64_t)(uintptr_t)__builtin_return_address(0),
			      (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
}

/* C++'s aligned operator new (an over-aligned type's `new`, `new
 * (std::align_val_t(64)) float[n]`; the array and nothrow forms call this
 * one through the C++ library's PLT) asks the C library for a block of
 * its own making: libstdc++ rounds the request up to a multiple of the
 * alignment for aligned_alloc, libc++ raises the alignment to a pointer's
 * for posix_memalign. valgrind, replacing operator new itself, counts the
 * request; so does the sampler: the entry notes it and calls the C++
 * library's operator new (its new-handler, its exceptions and the block
 * it gets are the program's own; the views drop this library's frame), and the
 * aligned allocation that follows in this thread, within the alignment of
 * the request, is recorded at the request. A program that defines its
 * own operator new comes first and is recorded by the calls it makes. */
static __thread struct {
	size_t req, al; /* al 0: not inside one */
} new_aligned __attribute__((tls_model("initial-exec")));

/* The size to record for a block of n bytes at al: the request of the
 * aligned operator new this thread is inside, if this is its block. The
 * note is spent by the block (a failed attempt, retried after the
 * new-handler, leaves it). */
static inline size_t aligned_request(size_t al, size_t n)
{
	if (LIKELY(!new_aligned.al))
		return n;
	size_t r = new_aligned.req, want = new_aligned.al;
	new_aligned.al = 0;
	/* its alignment (libc++ raises one below a pointer's to that), and
	 * its size rounded up within it (libstdc++: to a multiple of it) */
	if (al != want && !(want < sizeof(void *) && al == sizeof(void *)))
		return n;
	return n >= r && n - r <= al ? r : n;
}

EXPORT int posix_memalign(void **out, size_t al, size_t n)
{
	gap_enter();
	int rc = real_posix_memalign(out, al, n);
	if (rc == 0)
		account(*out, aligned_request(al, n), AP_KIND_ALIGNED);
	return rc;
}

EXPORT void *aligned_alloc(size_t al, size_t n)
{
	gap_enter();
	void *p = real_aligned_alloc(al, n);
	return p ? account(p, aligned_request(al, n), AP_KIND_ALIGNED) : p;
}

/* The C++ library's aligned operator new: where the program's scope has
 * it, else in any loaded object (a C program's C++ plugin loaded
 * RTLD_LOCAL brings its C++ library where RTLD_NEXT does not look). */
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al);
static __attribute__((noinline)) void *(*cxx_new_aligned_find(void))(size_t, size_t)
{
	static const char sym[] = "_ZnwmSt11align_val_t";
	struct ap_hold h = hold(&tls); /* the loader's allocations are not the program's */
	tls.guard++;
	void *(*f)(size_t, size_t) = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, sym);
	for (struct link_map *m = f ? NULL : _r_debug.r_map; m && !f; m = m->l_next) {
		void *d = m->l_name[0] ? dlopen(m->l_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
		void *g = d ? dlsym(d, sym) : NULL;
		if (g && g != (void *)_ZnwmSt11align_val_t)
			f = (void *(*)(size_t, size_t))g;
		if (d)
			dlclose(d);
	}
	tls.guard--;
	unhold(&tls, h);
	if (!f) /* the caller was linked against a C++ library: not reached */
		abort();
	return f;
}

EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
	static void *(*real)(size_t, size_t);
	void *(*f)(size_t, size_t) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
	if (UNLIKELY(!f)) {
		f = cxx_new_aligned_find();
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	new_aligned.req = n;
	new_aligned.al = al ? al : 1;
	void *p = f(n, al);
	/* spent by its block, or by none: an operator new that does not
	 * allocate through the C library (a library's own: an arena,
	 * tcmalloc's) must not leave it to the thread's next aligned call.
	 * (Not a tail call: exceptions pass through this frame by its
	 * unwind tables; one thrown leaves the note to the next entry.) */
	new_aligned.al = 0;
	return p;
}

EXPORT void *memalign(size_t al, size_t n)
{
	gap_enter();
	void *p = real_memalign(al, n);
	return p ? account(p, aligned_request(al, n), AP_KIND_ALIGNED) : p;
}

EXPORT void *valloc(size_t n)
{
	gap_enter();
	void *p = real_valloc(n);
	return p ? account(p, n, AP_KIND_ALIGNED) : p;
}

EXPORT void *pvalloc(size_t n)
{
	gap_enter();
	void *p = real_pvalloc(n);
	/* pvalloc allocates n rounded up to a page (and valgrind counts that):
	 * the rounded size is the request. */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return p ? account(p, (n + pg - 1) & ~(pg - 1), AP_KIND_ALIGNED) : p;
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (UNLIKELY(is_boot(p)))
		return boot_size(p);
	return real_usable_size(p);
}

