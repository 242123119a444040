/* The report side's hashing: the hash functions, a map from 64-bit keys
 * to 32-bit values, and an index of the caller's keys (strings, byte
 * strings, anything with a hash and an equality). Open addressing with
 * linear probing, at most half full; deletion shifts the entries after
 * the hole back (no tombstones: a long replay of allocs and frees does not
 * degrade). The sampler has its own allocation-free set. */
#ifndef AP_HASH_H
#define AP_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* FNV-1a, 64 bits. */
static inline uint64_t ap_hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static inline uint64_t ap_hash_str(const char *s)
{
	return ap_hash_bytes(s, strlen(s));
}

/* A 64-bit key (an address, a PC, a pair of ids) mixed so that its low
 * bits are good slot numbers (the first round of MurmurHash3's fmix64). */
static inline uint64_t ap_hash_u64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* ---- key -> value ---------------------------------------------------- */

#define AP_U64MAP_NONE UINT32_MAX /* no value; never stored */

/* Packed: 12 bytes, not 16 (the replay's map of live blocks can hold tens
 * of millions). */
struct __attribute__((packed, aligned(4))) ap_u64map_slot {
	uint64_t key;
	uint32_t val; /* AP_U64MAP_NONE: empty */
};

/* Zero-initialised is not ready: ap_u64map_init first. */
struct ap_u64map {
	struct ap_u64map_slot *slot;
	size_t mask, n;
};

void ap_u64map_init(struct ap_u64map *m, size_t size_hint);
void ap_u64map_release(struct ap_u64map *m);
/* Doubles the table (ap_u64map_put does when it is half full). */
void ap_u64map_grow(struct ap_u64map *m);

/* The slot holding `key`, or NULL. */
static inline struct ap_u64map_slot *ap_u64map_find(const struct ap_u64map *m, uint64_t key)
{
	for (size_t i = ap_hash_u64(key) & m->mask; m->slot[i].val != AP_U64MAP_NONE;
	     i = (i + 1) & m->mask)
		if (m->slot[i].key == key)
			return &m->slot[i];
	return NULL;
}

/* The value of `key`, or AP_U64MAP_NONE. */
static inline uint32_t ap_u64map_get(const struct ap_u64map *m, uint64_t key)
{
	const struct ap_u64map_slot *s = ap_u64map_find(m, key);
	return s ? s->val : AP_U64MAP_NONE;
}

/* Sets key -> val (val != AP_U64MAP_NONE), replacing a value there. */
static inline void ap_u64map_put(struct ap_u64map *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->mask + 1)
		ap_u64map_grow(m);
	size_t i = ap_hash_u64(key) & m->mask;
	while (m->slot[i].val != AP_U64MAP_NONE && m->slot[i].key != key)
		i = (i + 1) & m->mask;
	if (m->slot[i].val == AP_U64MAP_NONE)
		m->n++;
	m->slot[i].key = key;
	m->slot[i].val = val;
}

/* The slot of `key`, made if there is none (then *made is true and its
 * val AP_U64MAP_NONE, which the caller must set before any other call):
 * one probe where find and put would make two. */
static inline struct ap_u64map_slot *ap_u64map_slot_of(struct ap_u64map *m, uint64_t key,
						       bool *made)
{
	if ((m->n + 1) * 2 > m->mask + 1)
		ap_u64map_grow(m);
	size_t i = ap_hash_u64(key) & m->mask;
	while (m->slot[i].val != AP_U64MAP_NONE && m->slot[i].key != key)
		i = (i + 1) & m->mask;
	*made = m->slot[i].val == AP_U64MAP_NONE;
	if (*made) {
		m->n++;
		m->slot[i].key = key;
	}
	return &m->slot[i];
}

/* Empties slot `s` (from ap_u64map_find). */
void ap_u64map_delete(struct ap_u64map *m, struct ap_u64map_slot *s);

/* Several values at one key, the most recent first: the map holds the
 * head of a list the caller keeps (each element's `next`, AP_U64MAP_NONE
 * at its end). "A FREE ends the most recent live block at its address,
 * and the one before is live again": the replay's blocks and the
 * compactor's anonymous ones. Makes val the head at key and returns the
 * head before it (AP_U64MAP_NONE: none), the caller's next for val. */
static inline uint32_t ap_u64map_push(struct ap_u64map *m, uint64_t key, uint32_t val)
{
	bool made;
	struct ap_u64map_slot *s = ap_u64map_slot_of(m, key, &made);
	uint32_t older = made ? AP_U64MAP_NONE : s->val;
	s->val = val;
	return older;
}

/* Takes the head off slot s (from ap_u64map_find): `next` (the head's
 * next) becomes the head, or the key goes with the last. */
static inline void ap_u64map_pop(struct ap_u64map *m, struct ap_u64map_slot *s, uint32_t next)
{
	if (next == AP_U64MAP_NONE)
		ap_u64map_delete(m, s);
	else
		s->val = next;
}

/* Removes `key`; returns its value, or AP_U64MAP_NONE when absent. */
static inline uint32_t ap_u64map_take(struct ap_u64map *m, uint64_t key)
{
	struct ap_u64map_slot *s = ap_u64map_find(m, key);
	if (!s)
		return AP_U64MAP_NONE;
	uint32_t v = s->val;
	ap_u64map_delete(m, s);
	return v;
}

/* Asks the cache for the line at p. An asm on x86-64: GCC 12 drops a
 * __builtin_prefetch whose address goes through ap_hash_u64 (it did in
 * ap_replay's loop, which then ran at half the speed). */
static inline void ap_prefetch(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetcht0 (%0)" : : "r"(p));
#else
	__builtin_prefetch(p);
#endif
}

/* Asks the cache for the slot where `key` would be looked up. */
static inline void ap_u64map_prefetch(const struct ap_u64map *m, uint64_t key)
{
	ap_prefetch(&m->slot[ap_hash_u64(key) & m->mask]);
}

/* ---- an index of the caller's keys ----------------------------------- */

/* The caller keeps its entries (0, 1, 2, ...) in its own arrays; the index
 * finds an entry by its key: the caller gives the key's hash and says
 * whether entry i holds the key. */
struct ap_index_slot {
	uint32_t idx1; /* entry + 1; 0: empty */
	uint32_t h;    /* the low bits of the entry's hash, to skip most compares */
};

/* Zero-initialised is empty. */
struct ap_index {
	struct ap_index_slot *slot;
	size_t mask, n; /* mask + 1 slots (none yet: 0) */
};

typedef bool (*ap_index_eq_fn)(const void *ctx, uint32_t entry, const void *key);

/* The entry holding `key` (hash h), or UINT32_MAX. */
uint32_t ap_index_find(const struct ap_index *ix, uint64_t h, ap_index_eq_fn eq, const void *ctx,
		       const void *key);

/* The entry holding `key`, or, when none does, `entry` (the caller's next
 * one, which it fills) added for it; *added says which (may be NULL). */
uint32_t ap_index_add(struct ap_index *ix, uint64_t h, ap_index_eq_fn eq, const void *ctx,
		      const void *key, uint32_t entry, bool *added);

void ap_index_release(struct ap_index *ix);

/* ---- interned strings ------------------------------------------------- */

/* Byte strings (NUL-terminated copies, which never move) numbered 0, 1,
 * 2, ... in order of first use. Zero-initialised is empty. */
struct ap_intern {
	char **str;
	size_t *len;
	size_t n, alloc;
	struct ap_index index;
};

/* The number of the `len` bytes at p, added when new (*added says so; may
 * be NULL). */
uint32_t ap_intern_add(struct ap_intern *t, const void *p, size_t len, bool *added);

/* The number of the bytes at p, or UINT32_MAX when they are not there. */
uint32_t ap_intern_find(const struct ap_intern *t, const void *p, size_t len);

/* The copy of s, added when new: a pointer that stays valid until the
 * table is released (NULL for NULL). */
const char *ap_intern_str(struct ap_intern *t, const char *s);

void ap_intern_release(struct ap_intern *t);

#endif
