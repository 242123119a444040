/* ptrset.c: which live blocks are tracked. The counting filter the free
 * fast path reads (ap_filter) and the exact pointer set behind it
 * (tracked_set), and the second set of blocks glibc or libunwind allocated
 * for the sampler itself (own_blocks). Both sets lock with every signal
 * blocked and never fail an insert while memory lasts. */
#include "sampler-int.h"

uint8_t ap_filter[1u << FILTER_BITS];

struct ptr_set tracked_set = { .filter = ap_filter };

/* With --all, blocks allocated inside the guard while recording (the
 * dynamic TLS block of libunwind, made on a thread's first unwind): glibc
 * frees that one later from whichever thread reuses the dead thread's
 * stack, outside the guard, and the free must not be recorded: the block is
 * no allocation of the program's (nor does valgrind see it). */
uint8_t own_filter[1u << FILTER_BITS];
struct ptr_set own_blocks = { .filter = own_filter };

static void set_rehash(struct ptr_set *s, size_t cap)
{
	uint64_t *t = map_mem(cap * sizeof(uint64_t));
	if (!t)
		return; /* keep the old table: inserts still find room (see below) */
	for (size_t i = 0; i < s->cap; i++) {
		uint64_t k = s->tab[i];
		if (k > 1) {
			size_t j = (size_t)(k >> 4) * 0x9e3779b97f4a7c15ull;
			for (j &= cap - 1; t[j]; j = (j + 1) & (cap - 1))
				;
			t[j] = k;
		}
	}
	if (s->tab)
		munmap(s->tab, s->cap * sizeof(uint64_t));
	s->tab = t;
	s->cap = cap;
	s->used = s->count;
}

void ps_insert(struct ptr_set *s, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p;
	sigset_t mask;
	sig_block(&mask);
	lk_lock(&s->lock);
	if ((s->used + 1) * 4 > s->cap * 3)
		set_rehash(s, !s->cap ? 64 : s->count * 2 + 2 > s->cap / 2 ? s->cap * 2 : s->cap);
	/* If growing failed the table may be nearly full, but a free slot
	 * always exists (rehash runs at 3/4 while it can). */
	size_t j = (size_t)(k >> 4) * 0x9e3779b97f4a7c15ull & (s->cap - 1);
	size_t tomb = SIZE_MAX;
	for (; s->tab; j = (j + 1) & (s->cap - 1)) {
		if (s->tab[j] == 1 && tomb == SIZE_MAX)
			tomb = j;
		if (s->tab[j] == 0 || s->tab[j] == k)
			break;
	}
	if (s->tab && s->tab[j] != k) {
		if (tomb != SIZE_MAX) {
			j = tomb;
		} else {
			s->used++;
		}
		s->tab[j] = k;
		s->count++;
		uint8_t *c = &s->filter[filter_slot(p)];
		if (*c != 0xff)
			__atomic_store_n(c, (uint8_t)(*c + 1), __ATOMIC_RELAXED);
	}
	lk_unlock(&s->lock);
	sig_restore(&mask);
}

/* Removes p; returns 1 if it was in the set. */
int ps_remove(struct ptr_set *s, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p;
	int found = 0;
	sigset_t mask;
	sig_block(&mask);
	lk_lock(&s->lock);
	if (s->count) {
		size_t j = (size_t)(k >> 4) * 0x9e3779b97f4a7c15ull & (s->cap - 1);
		for (; s->tab[j]; j = (j + 1) & (s->cap - 1))
			if (s->tab[j] == k) {
				s->tab[j] = 1;
				s->count--;
				found = 1;
				uint8_t *c = &s->filter[filter_slot(p)];
				if (*c != 0xff && *c)
					__atomic_store_n(c, (uint8_t)(*c - 1), __ATOMIC_RELAXED);
				break;
			}
	}
	lk_unlock(&s->lock);
	sig_restore(&mask);
	return found;
}

void set_reset(void)
{
	if (tracked_set.tab)
		memset(tracked_set.tab, 0, tracked_set.cap * sizeof(uint64_t));
	tracked_set.count = tracked_set.used = 0;
	memset(ap_filter, settings.all ? 0xff : 0, sizeof(ap_filter));
	boot_mark_filter();
}

