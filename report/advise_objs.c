/* The advisor's walk's objects on a replay of a resolved trace, without a
 * live map (advise-int.h, struct advise_objs): a birth time per live
 * object in pages of its thread's allocations, the whole state of the few
 * whose block does not say it.
 *
 * The walk used to keep a live map (32 bytes a block and its two slots)
 * and an array of objects (40 bytes each): 3.2 GB for 20 M live blocks
 * (bench/live.sh). An anonymous block's identity is its thread's
 * allocation index (AP_ANON_BASE | thread << 40 | index): a thread's
 * allocations fill a page of PAGE_SLOTS in turn, and a page goes once the
 * thread allocates past it and every object in it is gone, so the store
 * takes 4 bytes a live object where the live ones are dense, as in a heap
 * built and kept, and little where they are not (a loop's temporaries
 * leave each page empty behind them). */
#include <stdlib.h>
#include <string.h>

#include "advise-int.h"
#include "ap_hash.h"
#include "ap_trace_enc.h"

#define PAGE_BITS 10
#define PAGE_SLOTS (1u << PAGE_BITS)
/* A slot: 0, no object; else, XSTATE clear, its birth in quanta from the
 * first one stored, plus 1; or XSTATE set and the index of the object
 * kept whole in the low 31 bits. */
#define XSTATE 0x80000000u
#define BIRTH_MAX (XSTATE - 2)
#define NONE UINT32_MAX
/* an anonymous identity's thread bits: AP_ANON_BASE | thread << 40 */
#define THREAD_SHIFT 40
#define PAGE_NO_MASK ((1ull << (THREAD_SHIFT - PAGE_BITS)) - 1)

struct page {
	uint64_t key;		/* id >> PAGE_BITS */
	uint32_t live;		/* slots in use */
	uint32_t thread;	/* the thread whose allocations these are */
	/* The thread allocates in later pages now (its last slot was used,
	 * or an object of a later page was stored), and the page goes once
	 * it is empty (a page still being filled stays: a loop's temporary
	 * would empty it at every free). */
	bool full;
	uint32_t slot[PAGE_SLOTS];
};

/* An object kept whole, by its block's id. Those of blocks that are not
 * anonymous are found by a map, where the objects at one address are a
 * list, the most recent first (a block can be allocated at a live
 * address, where a free was lost: the replay's rule); an anonymous
 * block's slot holds its index. */
struct kept {
	uint64_t id;		/* FREE_ID: an entry free for the next */
	struct advise_obj ob;
	uint32_t older;		/* NONE; or the free list's next */
};

#define FREE_ID UINT64_MAX	/* (thread 0xffff: no block has it) */
/* The entries, in chunks that never move: a program that keeps a million
 * objects whole keeps them once, not twice while an array doubles. */
#define KCHUNK_BITS 14
#define KCHUNK (1u << KCHUNK_BITS)

struct advise_objs {
	uint64_t quantum, base;	/* births: base + quanta * quantum */
	bool has_base;
	struct ap_u64map pages;	/* key -> index in page[] */
	struct page **page;	/* NULL: an index free for the next page */
	size_t npage, page_alloc;
	uint32_t *free_idx;	/* those indexes */
	size_t nfree_idx, free_idx_alloc;
	struct page *spare;	/* an emptied page, kept for the next */
	/* the last page looked up, for the next allocation (a thread's
	 * allocations fill a page in turn) */
	uint64_t last_key;
	struct page *last;
	/* a block identity's thread (id >> THREAD_SHIFT) -> the last of its
	 * pages stored in (its number in the thread): objects are stored in
	 * their thread's order of allocation, so the pages before it will be
	 * stored in no more. (The walk holds the latest object outside the
	 * store, and stores it only when another allocation comes: a page's
	 * last slot may never be stored, and a loop of two threads' pairs
	 * kept 4 kB pages for every 1,024 allocations, 330 MB for 200 M
	 * events.) */
	struct ap_u64map tops;
	struct ap_u64map kmap;	/* a block's address -> its object's entry */
	struct kept **kchunk;
	size_t nkept, nchunks, chunks_alloc;	/* entries made; chunks */
	uint32_t free_kept;
};

struct advise_objs *advise_objs_new(uint64_t quantum)
{
	struct advise_objs *s = ap_xcalloc(1, sizeof(*s));
	s->quantum = quantum ? quantum : 1;
	ap_u64map_init(&s->pages, 64);
	ap_u64map_init(&s->tops, 64);
	ap_u64map_init(&s->kmap, 64);
	s->free_kept = NONE;
	s->last_key = UINT64_MAX;
	return s;
}

void advise_objs_free(struct advise_objs *s)
{
	if (!s)
		return;
	for (size_t k = 0; k < s->npage; k++)
		free(s->page[k]);
	free(s->page);
	free(s->free_idx);
	free(s->spare);
	ap_u64map_release(&s->pages);
	ap_u64map_release(&s->tops);
	ap_u64map_release(&s->kmap);
	for (size_t k = 0; k < s->nchunks; k++)
		free(s->kchunk[k]);
	free(s->kchunk);
	free(s);
}

static inline bool anonymous(uint64_t id)
{
	return id >= AP_ANON_MIN;
}

/* The page of key, made when `make` (else NULL when there is none). */
static inline struct page *page_of(struct advise_objs *s, uint64_t key, bool make)
{
	if (key == s->last_key)
		return s->last;
	uint32_t k = ap_u64map_get(&s->pages, key);
	if (k == AP_U64MAP_NONE) {
		if (!make)
			return NULL;
		struct page *p = s->spare ? s->spare : ap_xmalloc(sizeof(*p));
		s->spare = NULL;
		memset(p->slot, 0, sizeof(p->slot));
		p->key = key;
		p->live = 0;
		p->thread = NONE;
		p->full = false;
		if (s->nfree_idx) {
			k = s->free_idx[--s->nfree_idx];
		} else {
			AP_ALLOC_GROW(s->page, s->npage + 1, s->page_alloc);
			k = (uint32_t)s->npage++;
		}
		s->page[k] = p;
		ap_u64map_put(&s->pages, key, k);
	}
	s->last_key = key;
	s->last = s->page[k];
	return s->last;
}

/* Page p is empty: it goes (kept as the spare). */
static void page_drop(struct advise_objs *s, struct page *p)
{
	uint32_t k = ap_u64map_take(&s->pages, p->key);
	s->page[k] = NULL;
	AP_ALLOC_GROW(s->free_idx, s->nfree_idx + 1, s->free_idx_alloc);
	s->free_idx[s->nfree_idx++] = k;
	if (s->last == p) {
		s->last_key = UINT64_MAX;
		s->last = NULL;
	}
	free(s->spare);
	s->spare = p;
}

static inline struct kept *kept_at(const struct advise_objs *s, uint32_t k)
{
	return &s->kchunk[k >> KCHUNK_BITS][k & (KCHUNK - 1)];
}

/* A new entry for ob, of block id: its index. */
static uint32_t kept_new(struct advise_objs *s, uint64_t id, const struct advise_obj *ob)
{
	uint32_t k;
	if (s->free_kept != NONE) {
		k = s->free_kept;
		s->free_kept = kept_at(s, k)->older;
	} else {
		if (s->nkept == s->nchunks * KCHUNK) {
			AP_ALLOC_GROW(s->kchunk, s->nchunks + 1, s->chunks_alloc);
			s->kchunk[s->nchunks++] = ap_xmalloc(KCHUNK * sizeof(struct kept));
		}
		k = (uint32_t)s->nkept++;
	}
	*kept_at(s, k) = (struct kept){ .id = id, .ob = *ob, .older = NONE };
	return k;
}

/* Entry k out into *ob (NULL: dropped), free for the next. */
static void kept_free(struct advise_objs *s, uint32_t k, struct advise_obj *ob)
{
	struct kept *e = kept_at(s, k);
	if (ob)
		*ob = e->ob;
	e->id = FREE_ID;
	e->older = s->free_kept;
	s->free_kept = k;
}

/* An object of a block that is not anonymous. */
static void kept_push(struct advise_objs *s, uint64_t id, const struct advise_obj *ob)
{
	uint32_t k = kept_new(s, id, ob);
	kept_at(s, k)->older = ap_u64map_push(&s->kmap, id, k);
}

/* The most recent object kept at such a block's id, out into *ob; false
 * when none. */
static bool kept_pop(struct advise_objs *s, uint64_t id, struct advise_obj *ob)
{
	struct ap_u64map_slot *sl = ap_u64map_find(&s->kmap, id);
	if (!sl)
		return false;
	uint32_t k = sl->val;
	ap_u64map_pop(&s->kmap, sl, kept_at(s, k)->older);
	kept_free(s, k, ob);
	return true;
}

/* The slot of ob's birth, or 0 when it does not fit one. */
static inline uint32_t birth_slot(struct advise_objs *s, uint64_t birth)
{
	if (!s->has_base) {
		s->has_base = true;
		s->base = birth;
	}
	if (birth < s->base)
		return 0;
	uint64_t d = birth - s->base;
	if (d % s->quantum)
		return 0;
	d /= s->quantum;
	return d <= BIRTH_MAX ? (uint32_t)d + 1 : 0;
}

/* An object of page `key` is to be stored: its thread's pages before it
 * are full (the last one, left empty, goes now). Whether `key` is one of
 * those (an object stored again at its block: its page full too). */
static bool moved_on(struct advise_objs *s, uint64_t key)
{
	uint64_t th = key >> (THREAD_SHIFT - PAGE_BITS);
	uint32_t no = (uint32_t)(key & PAGE_NO_MASK);
	struct ap_u64map_slot *sl = ap_u64map_find(&s->tops, th);
	if (!sl) {
		ap_u64map_put(&s->tops, th, no);
		return false;
	}
	if (no <= sl->val)
		return no < sl->val;
	uint64_t old_key = th << (THREAD_SHIFT - PAGE_BITS) | sl->val;
	sl->val = no;
	struct page *old = page_of(s, old_key, false);
	if (!old)
		return false;
	old->full = true;
	if (!old->live)
		page_drop(s, old);
	return false;
}

void advise_objs_set(struct advise_objs *s, uint64_t id, const struct advise_obj *ob,
		     uint32_t thread, bool whole)
{
	if (!anonymous(id)) {
		kept_push(s, id, ob);
		return;
	}
	uint64_t key = id >> PAGE_BITS;
	bool below = key != s->last_key && moved_on(s, key);
	struct page *p = page_of(s, key, true);
	p->full |= below;
	if (p->thread == NONE)
		p->thread = thread;
	uint32_t *slot = &p->slot[id & (PAGE_SLOTS - 1)];
	p->full |= (id & (PAGE_SLOTS - 1)) == PAGE_SLOTS - 1;
	if (*slot) {	/* (an identity given twice: a damaged trace) */
		if (*slot & XSTATE)
			kept_free(s, *slot & ~XSTATE, NULL);
	} else {
		p->live++;
	}
	uint32_t b = birth_slot(s, ob->birth);
	if (whole || !b || ob->thread != p->thread) {
		*slot = XSTATE | kept_new(s, id, ob);
		return;
	}
	*slot = b;
}

int advise_objs_take(struct advise_objs *s, uint64_t id, struct advise_obj *ob)
{
	if (!anonymous(id))
		return kept_pop(s, id, ob) ? AP_OBJS_WHOLE : AP_OBJS_NONE;
	struct page *p = page_of(s, id >> PAGE_BITS, false);
	if (!p)
		return AP_OBJS_NONE;
	uint32_t *slot = &p->slot[id & (PAGE_SLOTS - 1)];
	uint32_t v = *slot;
	if (!v)
		return AP_OBJS_NONE;
	int got = AP_OBJS_WHOLE;
	if (v & XSTATE) {
		kept_free(s, v & ~XSTATE, ob);
	} else {
		ob->thread = p->thread;
		ob->birth = s->base + (uint64_t)(v - 1) * s->quantum;
		got = AP_OBJS_BIRTH;
	}
	*slot = 0;
	if (!--p->live && p->full)
		page_drop(s, p);
	return got;
}

size_t advise_objs_pages(const struct advise_objs *s)
{
	return s->npage - s->nfree_idx;
}

void advise_objs_each_kept(const struct advise_objs *s,
			   void (*fn)(void *ctx, uint64_t id, const struct advise_obj *ob),
			   void *ctx)
{
	for (size_t k = 0; k < s->nkept; k++) {
		const struct kept *e = kept_at(s, (uint32_t)k);
		if (e->id != FREE_ID)
			fn(ctx, e->id, &e->ob);
	}
}
