/* stacks.h: the stack of a sampled call, inline. interpose.c's slow path
 * calls stack_here, which is inlined with everything under it (the stack
 * cache lookup, the unwind): every frame of ours between the program's
 * call and unw_backtrace is one more frame for libunwind to step through.
 * stacks.c owns the state (the interned stacks, the unwinder, the cache's
 * switches) and the out-of-line parts (interning, filling the cache). */
#ifndef AP_SAMPLER_STACKS_H
#define AP_SAMPLER_STACKS_H
#include "sampler-int.h"
#include "cfi.h"
/* Unwinds the caller's stack into pcs by libunwind; drops our own
 * leading frames. Inlined into the slow paths: every frame of ours
 * between the program's call and unw_backtrace is one more frame
 * libunwind has to step through (~7 ns each) on every recorded
 * allocation. */
static inline __attribute__((always_inline)) unsigned unwind_lib(uint64_t *pcs)
{
	void *raw[MAX_DEPTH_CAP + OWN_FRAMES_SLACK];
	if (UNLIKELY(attach_mode && !unw_fresh))
		unw_tls_fresh();
	cfi_t.cold += CFI_COLD_LIB;
	int n = unw_bt ? unw_bt(raw, (int)(settings.max_depth + OWN_FRAMES_SLACK)) : 0;
	uintptr_t lo = (uintptr_t)__ehdr_start, hi = (uintptr_t)_end;
	int i = 0;
	/* Frames before ours (libunwind's own), then ours. */
	int first = 0;
	while (first < n && !((uintptr_t)raw[first] - lo < hi - lo))
		first++;
	if (first < n)
		i = first;
	while (i < n && (uintptr_t)raw[i] - lo < hi - lo)
		i++;
	unsigned d = 0;
	for (; i < n && d < settings.max_depth; i++)
		pcs[d++] = (uint64_t)(uintptr_t)raw[i];
	if (UNLIKELY(!(++cfi_t.walks % CFI_SUBS_POLL)))
		cfi_poll();
	if (UNLIKELY(unw_suspect(pcs, d))) {
		unsigned s = unwind_steps(pcs);
		if (s)
			d = s;
	}
	return d;
}

/* ALLOCPROF_UNWIND=check: the walk's n frames against libunwind's (which
 * are what pcs then holds, and what is recorded); *differs: whether they
 * differed. */
unsigned cfi_compare(uint64_t *pcs, int n, int *differs);

/* The caller's stack into pcs (the program's frames): by the unwind
 * tables' rules (cfi.c), or by libunwind where the walk gives up. */
static inline __attribute__((always_inline)) unsigned unwind(uint64_t *pcs)
{
	if (LIKELY(cfi_on)) {
		uint64_t sp0;
		int n = cfi_walk(pcs, settings.max_depth, NULL, 0, &sp0);
		int differs;
		if (UNLIKELY(cfi_check))
			return cfi_compare(pcs, n, &differs);
		if (n >= 0)
			return (unsigned)n;
	}
	return unwind_lib(pcs);
}

/* ---- the stack cache ---------------------------------------------------
 *
 * A loop that allocates calls malloc from the same place with the same
 * stack over and over; unwinding it again each time is most of the cost of
 * recording every allocation (~50 ns of libunwind per call on a short
 * stack). Each thread keeps the stacks it saw, keyed by the program's
 * return address and its CFA at the interposed call (the stack pointer
 * before the call), with the offset from that CFA of the slot holding each
 * outer frame's return address. A later call with the same key has the
 * same stack exactly when every one of those slots still holds the same
 * return address (the frame sizes follow from the PCs), which takes a load
 * and a compare per frame instead of a walk through the unwind tables.
 *
 * A key is filled in the first time it is seen, by the walk (cfi.c),
 * which knows each frame's stack pointer and so costs what an unwind
 * does (the same CPU time on cppcheck as filling at the second sight,
 * 0.99x, and half the unwinds, each of which END's unwind_ns may count
 * with a preemption in it: stacks.h's unw_capped); where the walk gives
 * up, the second time, by libunwind's stepping unwinder, which reports
 * it too but costs 40 to 90 unwinds;
 * stacks through a signal frame, deeper than SC_FRAMES or with slots not
 * strictly above each other are never cached. ALLOCPROF_STACK_CACHE=0
 * turns the cache off, =2 fills every key seen twice whatever it costs
 * (the tests compare the three).
 *
 * The cache must never cost more than it saves (a leaf reached with a few
 * hundred keys in turn would otherwise fill entries that are evicted before
 * their first hit). Each thread keeps a bank of TSC ticks: a hit earns the
 * cost of one unwind (timed on one unwind in SC_TIME_EVERY), a fill spends
 * what it took, and is made only while the bank is positive; every unwind
 * the cache did not spare earns 1/2^SC_PROBE_SHIFT of its cost, so that a
 * cache that never hits spends at most that share on fills. A new key
 * takes a way that holds a stale entry or a key seen once; a cached stack
 * used since the set last needed room gets a second chance. */
#ifdef AP_STACK_CACHE
#define SC_SET_BITS 7
#define SC_SETS (1u << SC_SET_BITS)	/* two ways each */
#define SC_FRAMES 64
#define SC_TIME_EVERY 64	/* one unwind in this many is timed */
#define SC_PROBE_SHIFT 6	/* an unwind earns 1/64 of its cost for fills */
#define SC_BANK_UNWINDS 4096	/* savings kept, in unwinds */
enum { SC_SEEN, SC_FULL, SC_NEVER };
struct sc_ent {
	uint64_t cfa, ret;	/* the key */
	const uint64_t *pcs;	/* the interned stack's frames (SC_FULL) */
	uint32_t id, epoch;
	uint16_t n;
	uint8_t state;
	uint8_t ref;		/* used since the set last had to make room */
	uint32_t off[SC_FRAMES];	/* off[i]: frame i's return-address slot - cfa */
};

uint32_t sc_fill(struct sc_ent *e, uint64_t ret, uint64_t cfa);
uint32_t sc_first(struct sc_ent *e, uint64_t ret, uint64_t cfa);

/* Return addresses and stack pointers both step by small strides: they are
 * mixed, not XORed, or a few sets take most of the keys. */
static inline size_t sc_set(uint64_t ret, uint64_t cfa)
{
	uint64_t x = ret * 0x9e3779b97f4a7c15ull + cfa;
	x = (x ^ (x >> 32)) * 0xd6e8feb86659fd93ull;
	return (size_t)(x >> (64 - SC_SET_BITS)) * 2;
}

/* Where, above the CFA, the caller's caller's return address is, for a
 * return address whose key (it and the CFA) was found holding another
 * stack. A C++ program allocates through operator new, whose one call of
 * malloc is then every key's return address: its keys differ by the CFA
 * alone, and operator new's callers at one depth all take one set
 * (cppcheck: 2.4 M allocations in isAliasOf through 1,418 stacks; 1.52 M
 * unwinds for 4.66 M allocations). Such a return address's set is chosen
 * by that caller's return address too (1.19-1.35 M unwinds: the bank's
 * timing moves it from run to run). */
struct sc_up {
	uint64_t ret;
	uint32_t off, epoch;
};
#define SC_UP_BITS 6
#define SC_UPS (1u << SC_UP_BITS)
/* A frame larger than this is no wrapper's (operator new's is a few
 * words). sc_up reads this far above the CFA of another call through the
 * same return address: a frame of alloca's size may end below it, and
 * the read then lands in the frames above (or, at a stack's very top,
 * in what lies over it: a thread's descriptor, the environment). */
#define SC_UP_MAX 512

static inline size_t sc_up_slot(uint64_t ret)
{
	return (size_t)((ret * 0x9e3779b97f4a7c15ull) >> (64 - SC_UP_BITS));
}

/* The return address above the caller's where this return address has
 * one (sc_up_learn), else 0. Read where the cached stack had it: the
 * caller is the same function, its frame above the CFA. */
static inline uint64_t sc_up(const struct ap_thr *b, const struct sc_up *ups, uint64_t ret,
			     uint64_t cfa)
{
	const struct sc_up *u = &ups[sc_up_slot(ret)];
	/* (an unknown return address, 0, would match a slot never written,
	 * and an unknown CFA with it) */
	if (u->ret != ret || !ret || u->epoch != b->sc_epoch)
		return 0;
	return *(const uint64_t *)(cfa + u->off);
}

/* e's key was found holding another stack: its return address's sets
 * are chosen by the caller's caller too from now on. */
static inline void sc_up_learn(struct ap_thr *b, struct sc_up *ups, const struct sc_ent *e)
{
	if (e->n < 2 || e->off[1] >= SC_UP_MAX)
		return;
	struct sc_up *u = &ups[sc_up_slot(e->ret)];
	if (u->ret == e->ret && u->epoch == b->sc_epoch)
		return;
	u->ret = e->ret;
	u->off = e->off[1];
	u->epoch = b->sc_epoch;
	b->sc_ups = true;
}

/* The way of set that a new key may take, or NULL to keep both. */
static inline struct sc_ent *sc_victim(struct ap_thr *b, struct sc_ent *set)
{
	for (unsigned w = 0; w < 2; w++)
		if (set[w].epoch != b->sc_epoch)
			return &set[w];
	unsigned w = b->sc_turn++ & 1;
	for (unsigned k = 0; k < 2; k++)
		if (set[w ^ k].state == SC_SEEN || !set[w ^ k].ref)
			return &set[w ^ k];
	set[0].ref = set[1].ref = 0;
	return NULL;
}

/* Whether every outer frame's slot still holds its return address (a
 * hit compares them all). */
static inline __attribute__((always_inline)) int sc_same(const struct sc_ent *e, uint64_t cfa)
{
	unsigned i = 1;
	while (i < e->n && *(const uint64_t *)(cfa + e->off[i]) == e->pcs[i])
		i++;
	return i >= e->n;
}

/* The hits since the bank was last read, credited: each earns an
 * unwind's cost (sc_unw) while the bank holds less than SC_BANK_UNWINDS
 * of them (a hit counts, the bank is settled before it is read). */
static inline void sc_settle(struct ap_thr *b)
{
	uint64_t k = b->sc_hits;
	if (!k)
		return;
	b->sc_hits = 0;
	int64_t unw = b->sc_unw, cap = unw * SC_BANK_UNWINDS;
	if (!unw || b->sc_bank >= cap)
		return;
	uint64_t room = ((uint64_t)(cap - b->sc_bank) + (uint64_t)unw - 1) / (uint64_t)unw;
	b->sc_bank += unw * (int64_t)(k < room ? k : room);
}

/* The stack id for a call with this return address and CFA from b's
 * cache; 0 if the caller has to unwind (and intern) as usual, with
 * *fresh set if the key is new to the cache (and has just taken e). */
static inline __attribute__((always_inline)) uint32_t sc_lookup(struct ap_tls *t,
								 struct ap_thr *b, uint64_t ret,
								 uint64_t cfa, struct sc_ent **fresh)
{
	/* (a key with ret or cfa 0, unknown, is never filled: sc_fill
	 * finds no frame with that return address and stack pointer) */
	if (!sc_on)
		return 0;
	if (UNLIKELY(!b->sc)) {
		b->sc = map_mem(SC_SETS * 2 * sizeof(struct sc_ent) + SC_UPS * sizeof(struct sc_up));
		if (!b->sc)
			return 0;
	}
	struct sc_up *ups = (struct sc_up *)(b->sc + SC_SETS * 2);
	uint64_t up = UNLIKELY(b->sc_ups) ? sc_up(b, ups, ret, cfa) : 0;
	struct sc_ent *set = &b->sc[sc_set(ret, up ? cfa + up * 0xc2b2ae3d27d4eb4full : cfa)];
	for (int w = 0; w < 2; w++) {
		struct sc_ent *e = &set[w];
		if (e->cfa != cfa || e->ret != ret || e->epoch != b->sc_epoch)
			continue;
		if (e->state == SC_FULL) {
			if (!sc_same(e, cfa)) {
				sc_up_learn(b, ups, e); /* another stack under the same key */
				continue;
			}
			e->ref = 1;
			b->sc_hits++; /* credited when the bank is read */
			return e->id;
		}
		e->ref = 1;
		sc_settle(b);
		if (e->state == SC_SEEN && (b->sc_bank > 0 || sc_always)) {
			struct ap_hold h = hold_down(t);
			uint64_t c0 = rd_tsc();
			uint32_t id = sc_fill(e, ret, cfa);
			b->sc_bank -= (int64_t)(rd_tsc() - c0);
			unhold(t, h);
			return id;
		}
		return 0; /* SC_NEVER, or no fill affordable now */
	}
	/* not here: remember the key; filled if it comes again */
	struct sc_ent *e = sc_victim(b, set);
	if (e) {
		e->cfa = cfa;
		e->ret = ret;
		e->epoch = b->sc_epoch;
		e->state = SC_SEEN;
		e->ref = 0;
		*fresh = e;
	}
	return 0;
}

/* Whether this unwind of b's thread is one to time. */
static inline int sc_timed(struct ap_thr *b)
{
	return sc_on && b && (++b->sc_tick & (SC_TIME_EVERY - 1)) == 0;
}

/* b's thread unwound (ticks: what it took, if timed): the running mean,
 * and the share of it the cache may spend on fills. */
static inline void sc_unwound(struct ap_thr *b, uint64_t ticks)
{
	sc_settle(b); /* at the mean they were made at */
	if (ticks) {
		/* a preempted or cold unwind must not inflate what hits earn */
		uint64_t cap = b->sc_unw ? 2ull * b->sc_unw : 1u << 20;
		if (ticks > cap)
			ticks = cap;
		b->sc_unw = b->sc_unw ? (uint32_t)((b->sc_unw * 7ull + ticks) / 8) : (uint32_t)ticks;
	}
	b->sc_bank += b->sc_unw >> SC_PROBE_SHIFT;
}
#else
struct sc_ent;
static inline uint32_t sc_lookup(struct ap_tls *t, struct ap_thr *b, uint64_t ret, uint64_t cfa,
				 struct sc_ent **fresh)
{
	(void)t, (void)b, (void)ret, (void)cfa, (void)fresh;
	return 0;
}

static inline uint32_t sc_first(struct sc_ent *e, uint64_t ret, uint64_t cfa)
{
	(void)e, (void)ret, (void)cfa;
	return 0;
}

static inline int sc_timed(struct ap_thr *b)
{
	(void)b;
	return 0;
}

static inline void sc_unwound(struct ap_thr *b, uint64_t ticks)
{
	(void)b, (void)ticks;
}
#endif

/* --all: an unwind's ticks as END's unwind_ns counts them. The TSC counts
 * a preemption in the middle of an unwind too, and a preemption lasts
 * milliseconds where an unwind takes a microsecond or a few: an unwind
 * is counted at most UNW_CAP_MEAN times the thread's running mean
 * (sc_unw), plus UNW_CAP_COLD for each rule the walk read from a
 * module's tables and for the unwind itself, and 16 times that if
 * libunwind unwound (a cold unwind through a module's tables, ~50-250
 * us; cfi_t.cold counts them). cppcheck recorded on a CPU shared with a
 * busy process: 1,479 ms of unwinding by the TSC in a run of 790 ms of
 * CPU time. */
#define UNW_CAP_MEAN 16
#define UNW_CAP_COLD (1ull << 14)
static inline uint64_t unw_capped(const struct ap_thr *b, uint64_t ticks, uint32_t cold)
{
	uint64_t cap = UNW_CAP_MEAN * (uint64_t)b->sc_unw + UNW_CAP_COLD * (cold + 1ull);
	return ticks < cap ? ticks : cap;
}

/* The id of the calling stack (ret and cfa: the program's return address
 * and its CFA at the interposed call, 0 if unknown); 0 if out of memory. */
static inline __attribute__((always_inline)) uint32_t stack_here(struct ap_tls *t, uint64_t ret,
								  uint64_t cfa)
{
	struct ap_thr *b = t->thr != &threads.dead ? t->thr : NULL;
	/* a hit allocates nothing: only a fill and an unwind are held */
	struct sc_ent *fresh = NULL;
	uint32_t id = b ? sc_lookup(t, b, ret, cfa, &fresh) : 0;
	if (!id) {
		struct ap_hold h = hold_down(t);
		int timed = sc_timed(b);
		/* --all: every unwind timed (END's unwind_ns) */
		int counted = b && settings.all;
		uint64_t c0 = timed || counted ? rd_tsc() : 0;
		cfi_t.cold = 0;
		/* a key new to the cache: filled at once, where the walk costs
		 * what an unwind does (not under ALLOCPROF_UNWIND=check, which
		 * compares every unwind) */
		if (fresh && cfi_on && !cfi_check)
			id = sc_first(fresh, ret, cfa);
		if (!id) {
			uint64_t pcs[MAX_DEPTH_CAP];
			const uint64_t *frames;
			id = stack_intern(pcs, unwind(pcs), &frames);
		}
		uint64_t ticks = timed || counted ? rd_tsc() - c0 : 0;
		if (counted)
			__atomic_store_n(&b->unw_ticks,
					 __atomic_load_n(&b->unw_ticks, __ATOMIC_RELAXED) +
					     unw_capped(b, ticks, cfi_t.cold),
					 __ATOMIC_RELAXED);	/* its owner's alone; END reads */
		if (b)
			sc_unwound(b, timed ? ticks : 0);
		unhold(t, h);
	}
	return id;
}

#endif
