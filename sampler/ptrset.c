/* ptrset.c: which live blocks are tracked. The counting filter the free
 * fast path reads (ap_filter) and the exact pointer set behind it
 * (tracked_set), and the second set of blocks glibc or libunwind allocated
 * for the sampler itself (own_blocks). Both sets never fail an insert
 * while memory lasts, and never change the signal mask: a signal handler
 * that allocates or frees on a thread inside one of their operations
 * works on the set itself (see "Signal handlers" below). */
#include "sampler-int.h"

uint8_t ap_filter[1u << FILTER_BITS];

/* A table of keys (open addressing, linear probing): 0 empty, 1 deleted. */
struct ps_tab {
	size_t cap;		/* slots, a power of two */
	size_t used;		/* slots not empty (keys and deleted ones) */
	uint64_t *slot;
	int mapped;		/* from map_mem (else static: never unmapped) */
};

/* Each set starts with a static table, so that it always has one. */
#define PS_CAP0 64
static uint64_t tracked0[PS_CAP0], own0[PS_CAP0];
static struct ps_tab tracked_tab0 = { PS_CAP0, 0, tracked0, 0 };
static struct ps_tab own_tab0 = { PS_CAP0, 0, own0, 0 };

struct ptr_set tracked_set = { .tab = &tracked_tab0, .filter = ap_filter };

/* With --all, blocks allocated inside the guard while recording (the
 * dynamic TLS block of libunwind, made on a thread's first unwind): glibc
 * frees that one later from whichever thread reuses the dead thread's
 * stack, outside the guard, and the free must not be recorded: the block is
 * no allocation of the program's (nor does valgrind see it). */
uint8_t own_filter[1u << FILTER_BITS];
struct ptr_set own_blocks = { .tab = &own_tab0, .filter = own_filter };

/* ---- signal handlers -------------------------------------------------

 * A set is locked by one thread at a time (own_lock: the lock word holds
 * the holder's lock id). A signal handler that frees or allocates on the
 * thread holding it cannot wait for that thread, and blocking signals
 * around every operation (two rt_sigprocmask calls per sampled event)
 * made the thread that did it take process-directed signals meant for
 * its idle main thread (a SIGTERM that never woke a server's pause()).
 * Instead, an operation of a handler on the holding thread ("nested")
 * works on the table at once, without the lock: the holder is suspended
 * under it and other threads are kept out by the lock it holds. Every
 * change to a table is therefore one atomic instruction (a slot claimed
 * or deleted by compare-and-swap, counters by atomic adds), so that a
 * nested operation may come between any two instructions of the
 * holder's: the holder's claim of a slot fails if a handler took it
 * meanwhile, and it looks again. A nested operation never rehashes. The
 * holder's rehash copies the table while nested operations may still
 * change it: they work on the old table and note what they did in the
 * journal, which the holder replays on the new table (each operation
 * sets whether its key is present, so replaying one the copy already saw
 * changes nothing) until it can swap the tables with the journal seen
 * whole (a compare-and-swap of its length). After the swap, nested
 * operations work on the new table. A journal that overflowed makes the
 * holder copy the old table again. */

static uint32_t lock_ids = 2;	/* 0: free, 1: lk_lock (fork_prepare) */
__thread uint32_t lock_id __attribute__((tls_model("initial-exec")));

uint32_t lock_id_new(void)
{
	uint32_t id;
	do
		id = __atomic_fetch_add(&lock_ids, 1, __ATOMIC_RELAXED);
	while (id < 2 || id > INT_MAX);
	lock_id = id;
	return id;
}

#define PS_GOLD 0x9e3779b97f4a7c15ull
#define PS_SWAPPED (1u << 31)	/* in jn: the new table is the set's */

static inline size_t ps_home(uint64_t k, size_t cap)
{
	return (size_t)((k >> 4) * PS_GOLD) & (cap - 1);
}

/* Adds k to t unless it is there; 1 added, 0 present, -1 no room. */
static int tab_insert(struct ps_tab *t, uint64_t k)
{
	size_t cap = t->cap;
	for (;;) {
		size_t j = ps_home(k, cap), tomb = SIZE_MAX, n;
		for (n = 0; n < cap; n++, j = (j + 1) & (cap - 1)) {
			uint64_t v = __atomic_load_n(&t->slot[j], __ATOMIC_RELAXED);
			if (v == k)
				return 0;
			if (v == 1 && tomb == SIZE_MAX)
				tomb = j;
			if (v == 0)
				break;
		}
		uint64_t want = tomb != SIZE_MAX ? 1 : 0;
		size_t at = tomb != SIZE_MAX ? tomb : j;
		if (tomb == SIZE_MAX && n == cap)
			return -1;
		if (__atomic_compare_exchange_n(&t->slot[at], &want, k, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			if (tomb == SIZE_MAX)
				__atomic_fetch_add(&t->used, 1, __ATOMIC_RELAXED);
			return 1;
		}
		/* a handler took that slot meanwhile: look again */
	}
}

/* Deletes k from t; 1 if it was there. */
static int tab_remove(struct ps_tab *t, uint64_t k)
{
	size_t cap = t->cap, j = ps_home(k, cap);
	for (size_t n = 0; n < cap; n++, j = (j + 1) & (cap - 1)) {
		uint64_t v = __atomic_load_n(&t->slot[j], __ATOMIC_RELAXED);
		if (v == 0)
			return 0;
		if (v == k)
			return __atomic_compare_exchange_n(&t->slot[j], &v, 1, 0, __ATOMIC_RELAXED,
							   __ATOMIC_RELAXED);
	}
	return 0;
}

/* The filter counts keys per slot, saturating (a saturated slot stays). */
static void filter_step(uint8_t *c, int up)
{
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
	do {
		if (v == 0xff || (!up && v == 0))
			return;
	} while (!__atomic_compare_exchange_n(c, &v, (uint8_t)(up ? v + 1 : v - 1), 0,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

static struct ps_tab *tab_new(size_t cap)
{
	uint8_t *m = map_mem(sizeof(struct ps_tab) + cap * sizeof(uint64_t));
	if (!m)
		return NULL;
	struct ps_tab *t = (struct ps_tab *)m;
	t->cap = cap;
	t->slot = (uint64_t *)(m + sizeof(struct ps_tab));
	t->mapped = 1;
	return t;
}

static void tab_free(struct ps_tab *t)
{
	if (t->mapped)
		munmap(t, sizeof(struct ps_tab) + t->cap * sizeof(uint64_t));
}

static void journal_replay(struct ps_tab *t, const struct ps_op *op)
{
	if (op->remove)
		tab_remove(t, op->key);
	else
		tab_insert(t, op->key);
}

/* The holder makes room before an insert: a table 3/4 full (keys and
 * deleted slots) is copied into a new one, twice the size if the keys
 * fill more than a quarter of it. If memory runs out the old table stays:
 * inserts still find room (rehash runs at 3/4 while it can). */
static void ps_room(struct ptr_set *s)
{
	struct ps_tab *old = s->tab;
	if ((old->used + 1) * 4 <= old->cap * 3)
		return;
	size_t count = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
	struct ps_tab *t = tab_new(count * 2 + 2 > old->cap / 2 ? old->cap * 2 : old->cap);
	if (!t)
		return;
	__atomic_store_n(&s->next, t, __ATOMIC_RELAXED);
	__atomic_store_n(&s->jn, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->rehashing, 1, __ATOMIC_RELAXED);
	for (int copy = 0;; copy++) {
		if (copy) {
			memset(t->slot, 0, t->cap * sizeof(uint64_t));
			t->used = 0;
		}
		for (size_t i = 0; i < old->cap; i++) {
			uint64_t v = __atomic_load_n(&old->slot[i], __ATOMIC_RELAXED);
			if (v > 1)
				tab_insert(t, v);
		}
		uint32_t done = 0;
		for (;;) {
			uint32_t n = __atomic_load_n(&s->jn, __ATOMIC_RELAXED);
			if (n > PS_JOURNAL)
				break; /* overflowed: the old table again */
			if (done < n) {
				journal_replay(t, &s->journal[done++]);
				continue;
			}
			if (__atomic_compare_exchange_n(&s->jn, &n, PS_SWAPPED, 0, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				goto swapped;
		}
		__atomic_store_n(&s->jn, 0, __ATOMIC_RELAXED);
	}
swapped:
	__atomic_store_n(&s->tab, t, __ATOMIC_RELAXED);
	__atomic_store_n(&s->rehashing, 0, __ATOMIC_RELAXED);
	tab_free(old);
}

/* The table an operation works on: the set's, or for a nested operation
 * during the holder's rehash the old table (noted in the journal) or,
 * once swapped, the new one. */
static struct ps_tab *ps_table(struct ptr_set *s, int nested, uint64_t k, int remove)
{
	if (!nested || !__atomic_load_n(&s->rehashing, __ATOMIC_RELAXED))
		return __atomic_load_n(&s->tab, __ATOMIC_RELAXED);
	if (__atomic_load_n(&s->jn, __ATOMIC_RELAXED) & PS_SWAPPED)
		return __atomic_load_n(&s->next, __ATOMIC_RELAXED);
	uint32_t n = __atomic_fetch_add(&s->jn, 1, __ATOMIC_RELAXED);
	if (n < PS_JOURNAL)
		s->journal[n] = (struct ps_op){ k, remove };
	return __atomic_load_n(&s->tab, __ATOMIC_RELAXED);
}

void ps_insert(struct ptr_set *s, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p;
	int nested = own_lock(&s->lock);
	if (!nested)
		ps_room(s);
	if (tab_insert(ps_table(s, nested, k, 0), k) > 0) {
		__atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED);
		filter_step(&s->filter[filter_slot(p)], 1);
	}
	own_unlock(&s->lock, nested);
}

/* Removes p; returns 1 if it was in the set. */
int ps_remove(struct ptr_set *s, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p;
	int found = 0;
	int nested = own_lock(&s->lock);
	if (__atomic_load_n(&s->count, __ATOMIC_RELAXED) &&
	    tab_remove(ps_table(s, nested, k, 1), k)) {
		found = 1;
		__atomic_fetch_sub(&s->count, 1, __ATOMIC_RELAXED);
		filter_step(&s->filter[filter_slot(p)], 0);
	}
	own_unlock(&s->lock, nested);
	return found;
}

void ps_filter_fill(struct ptr_set *s, uint8_t *f)
{
	int nested = own_lock(&s->lock);
	struct ps_tab *t = __atomic_load_n(&s->tab, __ATOMIC_RELAXED);
	for (size_t i = 0; i < t->cap; i++) {
		uint64_t v = __atomic_load_n(&t->slot[i], __ATOMIC_RELAXED);
		if (v > 1)
			filter_step(&f[filter_slot((const void *)(uintptr_t)v)], 1);
	}
	own_unlock(&s->lock, nested);
}

/* A forked child (one thread, its signals blocked): the set is empty. */
void set_reset(void)
{
	struct ps_tab *t = tracked_set.tab;
	memset(t->slot, 0, t->cap * sizeof(uint64_t));
	t->used = 0;
	tracked_set.count = 0;
	tracked_set.rehashing = 0;
	memset(ap_filter, settings.all ? 0xff : 0, sizeof(ap_filter));
	boot_mark_filter();
}
