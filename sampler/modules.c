/* modules.c: the loaded modules as MAPPING records. Snapshots
 * dl_iterate_phdr (never under a profiler lock: it takes the loader's)
 * and writes the modules not written yet; pc_known says whether a PC lies
 * in one already described. */
#include "sampler-int.h"
#include "selfinfo.h"

/* Modules already written as MAPPING records (meta.lock for writers;
 * readers scan without it: entries are complete before mod_count grows). */
struct mod {
	uint64_t bias, start, end;
	uint64_t name_hash;
	int dead;	/* unloaded since it was written */
};
static struct mod *mods;
static size_t mod_count;
/* cfi_unloads() when the last snapshot began */
static uint32_t mods_gen;
int modules_dead_any;
/* the envelope of the dead modules' ranges */
static uint64_t dead_lo = UINT64_MAX, dead_hi;

/* The list's memory, at start: 0, or -1 if there is none. */
int modules_init(void)
{
	mods = map_mem(MAX_MODULES * sizeof(struct mod));
	return mods ? 0 : -1;
}

/* A forked child's trace is a new file: it describes every module again. */
void modules_forget(void)
{
	mod_count = 0;
	modules_dead_any = 0;
	dead_lo = UINT64_MAX;
	dead_hi = 0;
}

int pc_known(uint64_t pc)
{
	size_t n = __atomic_load_n(&mod_count, __ATOMIC_ACQUIRE);
	for (size_t i = 0; i < n; i++)
		if (pc >= mods[i].start && pc < mods[i].end &&
		    !__atomic_load_n(&mods[i].dead, __ATOMIC_RELAXED))
			return 1;
	return 0;
}

int pc_moved(uint64_t pc)
{
	return pc >= __atomic_load_n(&dead_lo, __ATOMIC_RELAXED) &&
	       pc < __atomic_load_n(&dead_hi, __ATOMIC_RELAXED) && !pc_known(pc);
}

int modules_stale(void)
{
	return mods && cfi_unloads() != __atomic_load_n(&mods_gen, __ATOMIC_RELAXED);
}

void modules_after_unload(void)
{
	if (!modules_stale() || __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) != AP_ON)
		return;
	struct ap_hold held = hold(&tls);
	modules_snapshot();
	unhold(&tls, held);
}

/* A snapshot of dl_iterate_phdr, serialized into a scratch mapping:
 * per module `struct snap_mod` then the MAPPING record bytes. */
struct snap_mod {
	struct mod m;
	size_t rec_len;
};
struct snap {
	uint8_t *buf;
	size_t len, cap;
};
#define SNAP_BYTES ((size_t)1 << 20)

static uint64_t hash_bytes(const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int same_mod(const struct mod *a, const struct mod *b)
{
	return a->bias == b->bias && a->start == b->start && a->end == b->end &&
	       a->name_hash == b->name_hash;
}

static int snap_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct snap *s = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	char path[PATH_MAX];
	size_t plen;
	if (!strncmp(name, "linux-vdso", 10) || !strncmp(name, "linux-gate", 10))
		return 0;
	if (!*name) {
		if (s->len) /* only the first empty name is the main program */
			return 0;
		ssize_t n = self_exe(path, sizeof(path) - 1);
		plen = n > 0 ? (size_t)n : 0;
	} else if (name[0] != '/' && realpath(name, path)) {
		plen = str_len(path);
	} else {
		plen = str_len(name);
		if (plen >= sizeof(path))
			plen = sizeof(path) - 1;
		memcpy(path, name, plen);
	}
	size_t need = sizeof(struct snap_mod) + AP_META_MAPPING_MAX(plen, 64) +
		      (size_t)info->dlpi_phnum * AP_META_SEGMENT_MAX;
	if (s->len + need > s->cap)
		return 1;
	struct snap_mod *sm = (struct snap_mod *)(s->buf + s->len);
	uint8_t *r = (uint8_t *)(sm + 1);
	struct ap_load_extent e = ap_load_extent_of(info, 0, 0);
	if (!e.n)
		return 0;
	sm->m = (struct mod){ .bias = info->dlpi_addr, .start = e.lo, .end = e.hi,
			      .name_hash = hash_bytes(path, plen) };
	/* a module written and live: no record to make (rec_len 0; a
	 * snapshot after each unload sees every module again) */
	size_t n = __atomic_load_n(&mod_count, __ATOMIC_ACQUIRE);
	for (size_t i = 0; i < n; i++)
		if (!__atomic_load_n(&mods[i].dead, __ATOMIC_RELAXED) && same_mod(&mods[i], &sm->m)) {
			sm->rec_len = 0;
			s->len += (sizeof(struct snap_mod) + 7) & ~(size_t)7;
			return 0;
		}
	uint8_t bid[64];
	size_t blen = ap_build_id_of(info, bid, sizeof(bid));
	size_t k = ap_put_mapping(r, info->dlpi_addr, path, plen, bid, blen, e.n);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD)
			k += ap_put_segment(r + k, ph->p_vaddr, ph->p_memsz, ph->p_offset, ph->p_flags);
	}
	sm->rec_len = k;
	s->len += (sizeof(struct snap_mod) + k + 7) & ~(size_t)7;
	return 0;
}


/* Emits MAPPING records for modules not written yet. Never called with a
 * profiler lock held: dl_iterate_phdr takes the loader lock.
 * A module written before and gone from this snapshot was unloaded: it is
 * marked dead (its PCs unknown, every thread's cached stacks dropped). A
 * module found where the latest dead one overlapping it was is that one
 * again when it is the same (a plugin reloaded: marked live, not written
 * again); another one (a plugin unloaded and another loaded at its
 * address) is written after it, and begins an era of stacks
 * (stacks_new_era): the reader resolves a stack with the modules written
 * before it. */
void modules_snapshot(void)
{
	uint32_t gen = cfi_unloads();
	/* The snapshot's scratch: one kept mapping, or a new one when
	 * another thread's snapshot has it (a dlclose each 50 us mapped and
	 * unmapped a MiB each time: 12 % of a program's samples) */
	static uint8_t *kept;
	static int kept_busy;
	int own = !__atomic_exchange_n(&kept_busy, 1, __ATOMIC_ACQUIRE);
	if (own && !kept)
		kept = map_mem(SNAP_BYTES);
	struct snap s = { own ? kept : map_mem(SNAP_BYTES), 0, SNAP_BYTES };
	if (!s.buf) {
		if (own)
			__atomic_store_n(&kept_busy, 0, __ATOMIC_RELEASE);
		return;
	}
	dl_iterate_phdr(snap_cb, &s);
	lk_lock(&meta.lock);
	int died = 0, era = 0;
	for (size_t i = 0; i < mod_count; i++) {
		if (mods[i].dead)
			continue;
		int here = 0;
		for (size_t off = 0; off < s.len && !here;) {
			struct snap_mod *sm = (struct snap_mod *)(s.buf + off);
			off += (sizeof(*sm) + sm->rec_len + 7) & ~(size_t)7;
			here = same_mod(&mods[i], &sm->m);
		}
		if (!here) {
			__atomic_store_n(&mods[i].dead, 1, __ATOMIC_RELAXED);
			if (mods[i].start < dead_lo)
				__atomic_store_n(&dead_lo, mods[i].start, __ATOMIC_RELAXED);
			if (mods[i].end > dead_hi)
				__atomic_store_n(&dead_hi, mods[i].end, __ATOMIC_RELAXED);
			died = 1;
		}
	}
	if (died) {
		__atomic_store_n(&modules_dead_any, 1, __ATOMIC_RELAXED);
		stacks_drop_cached();
	}
	for (size_t off = 0; off < s.len;) {
		struct snap_mod *sm = (struct snap_mod *)(s.buf + off);
		off += (sizeof(*sm) + sm->rec_len + 7) & ~(size_t)7;
		int seen = 0;
		for (size_t i = 0; i < mod_count; i++)
			if (!mods[i].dead && same_mod(&mods[i], &sm->m)) {
				seen = 1;
				break;
			}
		if (seen)
			continue;
		size_t j = mod_count;
		while (j-- > 0 && !(mods[j].dead && mods[j].start < sm->m.end && sm->m.start < mods[j].end))
			;
		if (j != SIZE_MAX && same_mod(&mods[j], &sm->m)) {
			__atomic_store_n(&mods[j].dead, 0, __ATOMIC_RELAXED);
			continue;
		}
		if (mod_count >= MAX_MODULES || !sm->rec_len)
			continue;
		if (j != SIZE_MAX)
			era = 1;
		uint8_t *p = meta_reserve(sm->rec_len);
		memcpy(p, sm + 1, sm->rec_len);
		meta_commit(sm->rec_len);
		mods[mod_count] = sm->m;
		mods[mod_count].dead = 0;
		__atomic_store_n(&mod_count, mod_count + 1, __ATOMIC_RELEASE);
	}
	if (era)
		stacks_new_era();
	__atomic_store_n(&mods_gen, gen, __ATOMIC_RELAXED);
	lk_unlock(&meta.lock);
	if (own)
		__atomic_store_n(&kept_busy, 0, __ATOMIC_RELEASE);
	else
		munmap(s.buf, s.cap);
}

