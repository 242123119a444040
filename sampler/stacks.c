/* stacks.c: stacks as ids. Interns PC arrays (lock-free lookup in a chain
 * of tables, inserts under meta.lock, each new stack written once as a
 * META record), loads libunwind privately, and fills the per-thread stack
 * cache; the inline lookup and the unwind itself are in stacks.h. */
#include "selfinfo.h"
#include "stacks.h"

/* Interned stacks: lock-free lookup over a chain of open-addressing tables
 * (newest first; a full table gets a bigger successor instead of being
 * rehashed under readers), inserts under meta.lock. */
struct stk_ent {
	uint64_t hash;		/* 0: empty; published last */
	uint32_t id, depth;
	uint64_t *pcs;
};
struct stk_tab {
	struct stk_tab *older;
	size_t mask, count;
	struct stk_ent e[];
};
static struct stk_tab *stk_cur;
static uint32_t stk_next_id = 1;
/* Stacks are looked up in their era (stacks_new_era): its number, times
 * an odd constant and shifted past the hash's low bit, xored into the
 * hash, so that an entry of another era never matches. */
static uint64_t stk_era;
static uint64_t *pc_pool;
static size_t pc_pool_left;

/* A forked child's trace is a new file: its stacks get ids (and STACK
 * records) anew. The parent's tables are left to the child's memory. */
void stacks_forget(void)
{
	stk_cur = NULL;
	stk_next_id = 1;
}

void stacks_new_era(void)
{
	__atomic_store_n(&stk_era, stk_era + 1, __ATOMIC_RELEASE);
	stacks_drop_cached();
}

void stacks_drop_cached(void)
{
	__atomic_fetch_add(&threads.fallback.sc_epoch, 1, __ATOMIC_RELAXED);
	for (struct ap_thr *b = threads.all; b; b = b->next)
		__atomic_fetch_add(&b->sc_epoch, 1, __ATOMIC_RELAXED);
}

static struct stk_tab *stk_tab_new(size_t cap, struct stk_tab *older)
{
	struct stk_tab *t = map_mem(sizeof(*t) + cap * sizeof(struct stk_ent));
	if (!t)
		return NULL;
	t->older = older;
	t->mask = cap - 1;
	t->count = 0;
	return t;
}

/* Four lanes of multiplies, folded at the end: one chain through every
 * PC (xor, multiply, shift) made an unwound stack of 64 frames wait
 * ~380 cycles on its own latency before the lookup could start. */
static uint64_t stack_hash(const uint64_t *pcs, unsigned depth)
{
	const uint64_t k = 0xff51afd7ed558ccdull;
	uint64_t a = 0x9e3779b97f4a7c15ull ^ depth, b = 0xc2b2ae3d27d4eb4full,
		 c = 0x165667b19e3779f9ull, d = 0x27d4eb2f165667c5ull;
	unsigned i = 0;
	for (; i + 4 <= depth; i += 4) {
		a = (a ^ pcs[i]) * k;
		b = (b ^ pcs[i + 1]) * k;
		c = (c ^ pcs[i + 2]) * k;
		d = (d ^ pcs[i + 3]) * k;
	}
	for (; i < depth; i++)
		a = (a ^ pcs[i]) * k;
	uint64_t h = a ^ (b << 16 | b >> 48) ^ (c << 32 | c >> 32) ^ (d << 48 | d >> 16);
	h ^= h >> 32;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h | 1;
}

/* The hash a stack is looked up by in the current era. */
static uint64_t era_hash(const uint64_t *pcs, unsigned depth)
{
	return stack_hash(pcs, depth) ^
	       (__atomic_load_n(&stk_era, __ATOMIC_ACQUIRE) * 0x9e3779b97f4a7c15ull << 1);
}

static uint32_t stk_find(uint64_t h, const uint64_t *pcs, unsigned depth,
			 const uint64_t **frames)
{
	for (struct stk_tab *t = __atomic_load_n(&stk_cur, __ATOMIC_ACQUIRE); t;
	     t = t->older) {
		for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
			struct stk_ent *e = &t->e[i];
			uint64_t eh = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
			if (!eh)
				break;
			if (eh == h && e->depth == depth &&
			    !memcmp(e->pcs, pcs, depth * sizeof(uint64_t))) {
				*frames = e->pcs;
				return e->id;
			}
		}
	}
	return 0;
}

/* meta.lock held. Returns the new id, or 0 if memory ran out. */
static uint32_t stk_insert(uint64_t h, const uint64_t *pcs, unsigned depth,
			   const uint64_t **frames)
{
	struct stk_tab *t = stk_cur;
	if (!t || (t->count + 1) * 4 > (t->mask + 1) * 3) {
		struct stk_tab *n = stk_tab_new(t ? (t->mask + 1) * 4 : 4096, t);
		if (!n)
			return 0;
		__atomic_store_n(&stk_cur, n, __ATOMIC_RELEASE);
		t = n;
	}
	if (pc_pool_left < depth) {
		size_t n = (1u << 20) / sizeof(uint64_t);
		uint64_t *pool = map_mem(n * sizeof(uint64_t));
		if (!pool)
			return 0;
		pc_pool = pool;
		pc_pool_left = n;
	}
	uint64_t *copy = pc_pool;
	memcpy(copy, pcs, depth * sizeof(uint64_t));
	pc_pool += depth;
	pc_pool_left -= depth;

	uint32_t id = stk_next_id++;
	uint8_t *p = meta_reserve(AP_META_STACK_MAX(depth));
	meta_commit(ap_put_stack(p, id, pcs, depth));

	size_t i = h & t->mask;
	while (t->e[i].hash)
		i = (i + 1) & t->mask;
	t->e[i].id = id;
	t->e[i].depth = depth;
	t->e[i].pcs = copy;
	__atomic_store_n(&t->e[i].hash, h, __ATOMIC_RELEASE);
	t->count++;
	*frames = copy;
	return id;
}

/* The id of the stack pcs[0..depth), interned if new; *frames points to
 * the table's own copy of the frames. 0 if memory ran out. */
uint32_t stack_intern(const uint64_t *pcs, unsigned depth, const uint64_t **frames)
{
	/* An unload not seen yet; or one seen, and then the PCs are checked
	 * first: one in the range of a module unloaded may be another's
	 * (written, it starts an era, where the same numbers are not the
	 * stack looked up before). */
	if (UNLIKELY(modules_stale() || __atomic_load_n(&modules_dead_any, __ATOMIC_RELAXED))) {
		int snap = modules_stale();
		for (unsigned i = 0; i < depth && !snap; i++)
			snap = pc_moved(pcs[i]);
		if (snap) {
			struct ap_hold held = hold(&tls);
			modules_snapshot();
			unhold(&tls, held);
		}
	}
	uint64_t h = era_hash(pcs, depth);
	uint32_t id = stk_find(h, pcs, depth, frames);
	if (id)
		return id;
	/* A new stack: every PC must be inside a module already described, or
	 * something was loaded since the last snapshot (dlopen). */
	for (unsigned i = 0; i < depth; i++)
		if (!pc_known(pcs[i])) {
			struct ap_hold held = hold(&tls);
			modules_snapshot();
			unhold(&tls, held);
			/* (an era it began: the hash is that era's) */
			h = era_hash(pcs, depth);
			break;
		}
	lk_lock(&meta.lock);
	id = stk_find(h, pcs, depth, frames);
	if (!id)
		id = stk_insert(h, pcs, depth, frames);
	lk_unlock(&meta.lock);
	return id;
}

/* libunwind's unw_backtrace (its fast, cached trace), from a private
 * dlopen: linked normally, libunwind.so would join the program's global
 * symbol scope, and its _Unwind_* and backtrace definitions could then take
 * the place of libgcc_s's for C++ code loaded later (a C program that
 * dlopens a C++ plugin: exceptions would unwind through libunwind). */
int (*unw_bt)(void **, int);
#ifdef AP_STACK_CACHE
/* unw_getcontext, unw_init_local, unw_step, unw_get_reg,
 * unw_is_signal_frame: the stepping unwinder, which also says where each
 * frame's return address lives (to fill the stack cache, below). */
static int (*unw_ctx)(unw_context_t *);
static int (*unw_init)(unw_cursor_t *, unw_context_t *);
static int (*unw_stp)(unw_cursor_t *);
static int (*unw_reg)(unw_cursor_t *, int, unw_word_t *);
static int (*unw_sig)(unw_cursor_t *);
int sc_on;		/* the stack cache is in use */
int sc_always;		/* fill whatever it costs (ALLOCPROF_STACK_CACHE=2, tests) */
#endif

/* libunwind's text: where its calls of pipe2, read, syscall and
 * sigprocmask come from (tracefile.c). */
uintptr_t unw_text_lo, unw_text_hi;

void unwinder_load(void)
{
	/* Whether the program has libunwind itself (linked, or loaded
	 * before us): then its settings stay the program's. */
	void *own = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD);
	if (own)
		dlclose(own);
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h)
		unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	if (unw_bt)
		ap_text_range_of((const void *)unw_bt, &unw_text_lo, &unw_text_hi);
	cfi_init();
	if (!attach_mode) /* (attached, no dl call more than needed: the program runs on) */
		loader_lock_probe();
	if (!unw_bt) {
		say("libunwind.so.8", "not loadable: stacks will be empty");
		return;
	}
	/* (attached: attach.c's patch_unwinder says) */
	if (!attach_mode)
		unw_masks_kept = own != NULL;
#ifdef AP_STACK_CACHE
	unw_ctx = (int (*)(unw_context_t *))dlsym(h, "_Ux86_64_getcontext");
	unw_init = (int (*)(unw_cursor_t *, unw_context_t *))dlsym(h, "_ULx86_64_init_local");
	unw_stp = (int (*)(unw_cursor_t *))dlsym(h, "_ULx86_64_step");
	unw_reg = (int (*)(unw_cursor_t *, int, unw_word_t *))dlsym(h, "_ULx86_64_get_reg");
	unw_sig = (int (*)(unw_cursor_t *))dlsym(h, "_ULx86_64_is_signal_frame");
	int (*policy)(unw_addr_space_t, unw_caching_policy_t) =
		(int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(h, "_ULx86_64_set_caching_policy");
	unw_addr_space_t *local = (unw_addr_space_t *)dlsym(h, "_ULx86_64_local_addr_space");
	/* No cache of register rules. libunwind's global cache takes a lock
	 * and masks every signal at each step it serves, and
	 * UNW_CACHE_PER_THREAD is that same global cache in every libunwind
	 * up to 1.8 (unw_set_caching_policy turns it into UNW_CACHE_GLOBAL:
	 * HAVE___THREAD is never defined). Without the cache a step looks its
	 * frame up again (one dl_iterate_phdr, one mask change around it):
	 * on clang -cc1 under `record --all`, 25 % fewer mask changes and the
	 * same time; steps are rare at all once libunwind's trace cache
	 * (per thread, unw_backtrace's) knows the program's frames. A program
	 * with libunwind of its own keeps its policy. */
	if (policy && local && !own)
		policy(*local, UNW_CACHE_NONE);
	uint64_t mode = parse_u64(getenv("ALLOCPROF_STACK_CACHE"), 1);
	/* attached, the program's return address is a thunk's (attach.c) */
	sc_on = unw_ctx && unw_init && unw_stp && unw_reg && unw_sig && mode != 0 && !attach_mode;
	sc_always = mode == 2;
#endif
}

/* ---- libunwind's trace cache after an unload -----------------------------
 *
 * unw_backtrace keeps each thread's frame shapes by return address and
 * never forgets one: after a module is unloaded, another mapped where it
 * was gets unwound with the first one's shapes (tests/e2e/unwind.sh,
 * reload under ALLOCPROF_UNWIND=libunwind: B's frame read as A's, its
 * caller lost). The modules mapped when the loader's first unload is
 * seen cannot have been mapped where an unloaded one was, as long as they
 * stay: their ranges are kept (old_rng, sorted), and each later unload
 * drops those no longer mapped. A stack libunwind traced with a return
 * address outside them is unwound again by steps, which look each frame
 * up afresh (no cache of rules: unwinder_load above). Until an unload,
 * one load of old_n. An unload seen late (the C library's own, found by
 * polling) leaves a module loaded meanwhile among the old ones. */
struct urange {
	uint64_t lo, hi; /* hi 0: unloaded since */
};
#define OLD_MAX 1024
static struct urange *old_rng, *old_scan;
static uint32_t old_n;	/* entries in old_rng; 0 before the first unload */
static int old_lock;

struct old_scanning {
	uint32_t n;
};

static int old_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct old_scanning *s = arg;
	struct ap_load_extent e = ap_load_extent_of(info, 0, 0);
	uint64_t lo = e.lo, hi = e.hi;
	if (hi > lo && s->n < OLD_MAX) {
		uint32_t j = s->n++;
		for (; j > 0 && old_scan[j - 1].lo > lo; j--)
			old_scan[j] = old_scan[j - 1];
		old_scan[j] = (struct urange){ lo, hi };
	}
	return 0;
}

/* Never waits on old_lock: a thread that holds the loader's lock (a
 * malloc inside the program's own dl_iterate_phdr callback) would wait
 * for one waiting on the loader's lock, or a handler for the code it
 * interrupted. Who finds it held leaves the scan to its holder
 * (old_again), which scans again before it goes. */
static int old_again;

static void old_scan_now(void)
{
	struct old_scanning s = { 0 };
	dl_iterate_phdr(old_cb, &s);
	if (!old_n) {
		old_rng = old_scan + OLD_MAX;
		memcpy(old_rng, old_scan, s.n * sizeof(struct urange));
		__atomic_store_n(&old_n, s.n, __ATOMIC_RELEASE);
		return;
	}
	for (uint32_t i = 0, j = 0; i < old_n; i++) {
		while (j < s.n && old_scan[j].lo < old_rng[i].lo)
			j++;
		if (j == s.n || old_scan[j].lo != old_rng[i].lo || old_scan[j].hi != old_rng[i].hi)
			__atomic_store_n(&old_rng[i].hi, 0, __ATOMIC_RELAXED);
	}
}

void unw_unloaded(void)
{
	if (!unw_bt)
		return;
	__atomic_store_n(&old_again, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&old_again, __ATOMIC_SEQ_CST)) {
		if (__atomic_exchange_n(&old_lock, 1, __ATOMIC_SEQ_CST))
			return; /* the holder scans again */
		__atomic_store_n(&old_again, 0, __ATOMIC_SEQ_CST);
		if (old_scan || (old_scan = map_mem(2 * OLD_MAX * sizeof(struct urange))))
			old_scan_now();
		__atomic_store_n(&old_lock, 0, __ATOMIC_SEQ_CST);
	}
}

/* In a fork's child: a scan the parent had under way (another thread's,
 * gone) left the ranges half made; the child scans again (unw_poll). */
void unw_child_reset(void)
{
	if (old_lock)
		old_again = 1;
	old_lock = 0;
}

void unw_poll(void)
{
	if (__atomic_load_n(&old_again, __ATOMIC_SEQ_CST) && !__atomic_load_n(&old_lock, __ATOMIC_SEQ_CST))
		unw_unloaded();
}

int unw_suspect(const uint64_t *pcs, unsigned d)
{
#ifndef AP_STACK_CACHE
	(void)pcs, (void)d;
	return 0; /* (no stepping unwinder to unwind it again) */
#else
	/* a scan under way or owed: the ranges are not to be trusted yet */
	if (UNLIKELY(__atomic_load_n(&old_again, __ATOMIC_RELAXED) |
		     __atomic_load_n(&old_lock, __ATOMIC_RELAXED)))
		return 1;
	uint32_t n = __atomic_load_n(&old_n, __ATOMIC_ACQUIRE);
	if (!n)
		return 0;
	for (unsigned k = 0; k < d; k++) {
		uint64_t a = pcs[k] - 1;
		uint32_t l = 0, h = n; /* the last range starting at or below a */
		while (l < h) {
			uint32_t m = (l + h) / 2;
			if (old_rng[m].lo <= a)
				l = m + 1;
			else
				h = m;
		}
		if (!l || a >= __atomic_load_n(&old_rng[l - 1].hi, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
#endif
}

unsigned unwind_steps(uint64_t *pcs)
{
#ifdef AP_STACK_CACHE
	unw_context_t uc;
	unw_cursor_t cur;
	if (!unw_ctx || !unw_init || !unw_stp || !unw_reg || unw_ctx(&uc) < 0 ||
	    unw_init(&cur, &uc) < 0)
		return 0;
	uintptr_t lo = (uintptr_t)__ehdr_start, hi = (uintptr_t)_end;
	unsigned d = 0;
	for (int steps = 0; d < settings.max_depth; steps++) {
		unw_word_t ip = 0;
		if (unw_reg(&cur, UNW_REG_IP, &ip) < 0)
			break;
		if (d || !(ip - lo < hi - lo))
			pcs[d++] = ip;
		if (unw_stp(&cur) <= 0 || steps > (int)(MAX_DEPTH_CAP + OWN_FRAMES_SLACK))
			break;
	}
	return d;
#else
	(void)pcs;
	return 0;
#endif
}

/* ALLOCPROF_UNWIND=check: a walk's frames (n of them, -1: it gave up)
 * against libunwind's, said where they differ; pcs gets libunwind's. */
static uint64_t chk_walked, chk_gaveup, chk_differ;

unsigned cfi_compare(uint64_t *pcs, int n, int *differs)
{
	uint64_t walk[MAX_DEPTH_CAP];
	if (n > 0)
		memcpy(walk, pcs, (size_t)n * sizeof(uint64_t));
	unsigned d = unwind_lib(pcs);
	__atomic_add_fetch(n < 0 ? &chk_gaveup : &chk_walked, 1, __ATOMIC_RELAXED);
	*differs = n >= 0 && ((unsigned)n != d || memcmp(walk, pcs, d * sizeof(uint64_t)));
	if (*differs && __atomic_fetch_add(&chk_differ, 1, __ATOMIC_RELAXED) < 8) {
		char msg[128];
		unsigned i = 0;
		while (i < d && i < (unsigned)n && walk[i] == pcs[i])
			i++;
		snprintf(msg, sizeof(msg), "walk %d frames, libunwind %u; first differs at %u: %#llx %#llx",
			 n, d, i, i < (unsigned)n ? (unsigned long long)walk[i] : 0ull,
			 i < d ? (unsigned long long)pcs[i] : 0ull);
		say("ALLOCPROF_UNWIND=check", msg);
	}
	return d;
}

/* ...and what the checks found, at the process's exit */
__attribute__((destructor)) static void cfi_compared(void)
{
	if (!cfi_check)
		return;
	char msg[128];
	snprintf(msg, sizeof(msg), "%llu stacks walked, %llu different from libunwind's, %llu given up",
		 (unsigned long long)chk_walked, (unsigned long long)chk_differ,
		 (unsigned long long)chk_gaveup);
	say("ALLOCPROF_UNWIND=check", msg);
}

#ifdef AP_STACK_CACHE
/* The cache's entry from frames and slots: filled, or never to be. */
static uint32_t sc_keep(struct sc_ent *e, const uint64_t *pcs, unsigned d, const uint32_t *off,
			int ok)
{
	const uint64_t *frames = NULL;
	uint32_t id = d ? stack_intern(pcs, d, &frames) : 0;
	if (ok && id && d <= SC_FRAMES) {
		e->pcs = frames;
		e->id = id;
		e->n = (uint16_t)d;
		memcpy(e->off, off, d * sizeof(off[0]));
		e->state = SC_FULL;
	} else {
		e->state = SC_NEVER;
	}
	return id;
}

/* A key seen for the first time (e: the way it took): its stack by the
 * walk, which fills e at once, at the cost of an unwind. Where the walk
 * gives up, libunwind's stack (e is left to be filled by steps if the
 * key comes again and the bank affords it). */
__attribute__((noinline)) uint32_t sc_first(struct sc_ent *e, uint64_t ret, uint64_t cfa)
{
	uint64_t pcs[MAX_DEPTH_CAP];
	uint32_t off[SC_FRAMES];
	uint64_t sp0;
	int n = cfi_walk(pcs, settings.max_depth, off, SC_FRAMES, &sp0);
	if (n >= 0)
		return sc_keep(e, pcs, (unsigned)n, off, n > 0 && pcs[0] == ret && sp0 == cfa);
	const uint64_t *frames;
	return stack_intern(pcs, unwind_lib(pcs), &frames);
}

/* Unwinds by steps from here, interns the stack and fills e if the stack
 * can be checked by its slots. */
__attribute__((noinline)) uint32_t sc_fill(struct sc_ent *e, uint64_t ret, uint64_t cfa)
{
	unw_context_t uc;
	unw_cursor_t cur;
	uint64_t pcs[MAX_DEPTH_CAP];
	uint32_t off[SC_FRAMES];
	unsigned d = 0;
	int ok = 1;
	if (cfi_on) {
		/* the walk knows each frame's stack pointer: a fill costs an
		 * unwind, not the 30 of libunwind's stepping */
		uint64_t sp0;
		int n = cfi_walk(pcs, settings.max_depth, off, SC_FRAMES, &sp0);
		int differs;
		if (UNLIKELY(cfi_check)) {
			unsigned m = cfi_compare(pcs, n, &differs);
			if (differs)
				return sc_keep(e, pcs, m, off, 0);
		}
		if (n >= 0)
			return sc_keep(e, pcs, (unsigned)n, off, n > 0 && pcs[0] == ret && sp0 == cfa);
	}
	uintptr_t lo = (uintptr_t)__ehdr_start, hi = (uintptr_t)_end;
	if (unw_ctx(&uc) < 0 || unw_init(&cur, &uc) < 0)
		return 0;
	cfi_t.cold += CFI_COLD_LIB;
	int steps = 0;
	for (;;) {
		unw_word_t ip = 0, sp = 0;
		if (unw_reg(&cur, UNW_REG_IP, &ip) < 0 || unw_reg(&cur, UNW_REG_SP, &sp) < 0)
			break;
		if (d || !(ip - lo < hi - lo)) {
			if (d == 0 && (ip != ret || sp != cfa))
				ok = 0;
			if (d >= 1 && d < SC_FRAMES) {
				uint64_t slot = sp - 8;
				if (slot <= cfa - 8 || slot - cfa > INT32_MAX ||
				    (d > 1 && slot - cfa <= off[d - 1]) ||
				    *(const uint64_t *)slot != ip)
					ok = 0;
				else
					off[d] = (uint32_t)(slot - cfa);
			}
			pcs[d++] = ip;
			if (d >= settings.max_depth)
				break;
			if (unw_sig(&cur) > 0)
				ok = 0;
		}
		if (unw_stp(&cur) <= 0 || ++steps > (int)(MAX_DEPTH_CAP + OWN_FRAMES_SLACK))
			break;
	}
	return sc_keep(e, pcs, d, off, ok);
}
#endif
