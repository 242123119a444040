/* cfi.c: the stack walk by the program's own unwind tables. Each return
 * address on a stack gets its frame's rule from .eh_frame once (where the
 * CFA is, where the return address and rbp were saved), and the rule is
 * kept in a table shared by the threads; a walk is then a table lookup
 * and two loads per frame. libunwind's unw_backtrace does the same work
 * behind a per-thread cache, at ~60 instructions a frame and ~600 more a
 * call (a C++ program's 40-frame stacks: ~2,600 instructions an unwind,
 * 47 % of `record --all` of cppcheck, session 37's callgrind), and it
 * cannot say where each frame's return address lives, which the stack
 * cache needs (stacks.h): that took libunwind's stepping unwinder, 30
 * unwinds' worth a fill.
 *
 * Only what x86-64 compilers emit for ordinary code is taken: the CFA at
 * rsp or rbp plus an offset, the return address at CFA - 8 (or undefined:
 * the outermost frame), rbp unchanged or saved at CFA - n. Anything else
 * (a signal frame, a CFA by expression or by another register, a PC
 * without unwind tables, a walk that does not climb the stack) makes
 * cfi_walk give up, and the caller asks libunwind as before. */
#include "sampler-int.h"
#include "selfinfo.h"
#include "cfi.h"
#include <link.h>

int cfi_on;		/* the walk is in use (not attached, not turned off) */
int cfi_check;		/* ALLOCPROF_UNWIND=check: each walk compared with libunwind's */

/* ---- the rules ------------------------------------------------------------
 *
 * One word per return address: the kind in bits 0-1, the CFA's offset
 * from its register in bits 2-33, where rbp was saved (CFA - bp) in bits
 * 34-49 (0: unchanged), the generation of the modules in bits 50-62 (a
 * module unloaded makes every rule stale: another may be loaded where it
 * was), bit 63 set (a rule of kind R_NONE is a rule too). */
enum { R_NONE, R_SP, R_BP, R_END };
#define R_OFF_SHIFT 2
#define R_OFF_MAX 0xffffffffull
#define R_BP_SHIFT 34
#define R_BP_MAX 0xffffull
#define R_GEN_SHIFT 50
#define R_GEN_MASK 0x1fffull
#define R_SET (1ull << 63)

static uint32_t cfi_gen; /* bumped when a module is unloaded */
__thread struct cfi_tls cfi_t __attribute__((tls_model("initial-exec")));

struct rule_ent {
	uint64_t pc;	/* 0: empty; published last */
	uint64_t rule;
};
struct rule_tab {
	size_t mask, count;
	unsigned shift;		/* 64 - log2(slots): a hash's top bits pick the slot */
	struct rule_ent e[];
};
/* The table in use. A full one is copied into one four times its size,
 * which takes its place: a lookup probes one table. The old ones are
 * never unmapped (a walk under way may still read them). */
static struct rule_tab *rules;
int cfi_lock; /* the table's inserts (fork_prepare takes it too) */

static inline size_t rule_slot(uint64_t pc, const struct rule_tab *t)
{
	return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> t->shift);
}

/* pc's entry in t, or NULL. */
static inline struct rule_ent *rule_find(const struct rule_tab *t, uint64_t pc)
{
	if (!t)
		return NULL;
	for (size_t i = rule_slot(pc, t);; i = (i + 1) & t->mask) {
		uint64_t k = __atomic_load_n(&t->e[i].pc, __ATOMIC_ACQUIRE);
		if (k == pc)
			return (struct rule_ent *)&t->e[i];
		if (!k)
			return NULL;
	}
}

/* cfi_lock held: pc's rule into t (which has room). */
static void rule_put(struct rule_tab *t, uint64_t pc, uint64_t rule)
{
	size_t i = rule_slot(pc, t);
	while (t->e[i].pc)
		i = (i + 1) & t->mask;
	t->e[i].rule = rule;
	__atomic_store_n(&t->e[i].pc, pc, __ATOMIC_RELEASE);
	t->count++;
}

static void rule_keep(uint64_t pc, uint64_t rule)
{
	lk_lock(&cfi_lock);
	struct rule_tab *t = rules;
	struct rule_ent *at = rule_find(t, pc);
	if (at) { /* a stale one */
		__atomic_store_n(&at->rule, rule, __ATOMIC_RELAXED);
		lk_unlock(&cfi_lock);
		return;
	}
	if (!t || (t->count + 1) * 4 > (t->mask + 1) * 3) {
		size_t cap = t ? (t->mask + 1) * 4 : 8192;
		struct rule_tab *n = map_mem(sizeof(*n) + cap * sizeof(struct rule_ent));
		if (!n) {
			lk_unlock(&cfi_lock);
			return; /* not kept: looked up again next time */
		}
		n->mask = cap - 1;
		n->count = 0;
		n->shift = 64 - (unsigned)__builtin_ctzll(cap);
		for (size_t i = 0; t && i <= t->mask; i++)
			if (t->e[i].pc)
				rule_put(n, t->e[i].pc, t->e[i].rule);
		__atomic_store_n(&rules, n, __ATOMIC_RELEASE);
		t = n;
	}
	rule_put(t, pc, rule);
	lk_unlock(&cfi_lock);
}

/* ---- reading .eh_frame ---------------------------------------------------- */

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned sh = 0;
	for (;;) {
		if (r->p >= r->end || sh > 63) {
			r->bad = 1;
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << sh;
		sh += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v = 0;
	unsigned sh = 0;
	uint8_t b;
	do {
		if (r->p >= r->end || sh > 63) {
			r->bad = 1;
			return 0;
		}
		b = *r->p++;
		v |= (int64_t)((uint64_t)(b & 0x7f) << sh);
		sh += 7;
	} while (b & 0x80);
	if (sh < 64 && (b & 0x40))
		v |= (int64_t)(~0ull << sh);
	return v;
}

static uint64_t rd_fixed(struct rd *r, unsigned n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	memcpy(&v, r->p, n); /* little-endian */
	r->p += n;
	return v;
}

/* A pointer in encoding enc (pcrel: from where it is read; datarel:
 * from data). Indirect and unknown encodings are refused. */
static uint64_t rd_ptr(struct rd *r, uint8_t enc, uint64_t data)
{
	uint64_t at = (uint64_t)(uintptr_t)r->p, v;
	switch (enc & 0x0f) {
	case 0x00: v = rd_fixed(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_fixed(r, 2); break;
	case 0x03: v = rd_fixed(r, 4); break;
	case 0x04: v = rd_fixed(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
	case 0x0c: v = rd_fixed(r, 8); break;
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0: break;
	case DW_EH_PE_pcrel: v += at; break;
	case DW_EH_PE_datarel: v += data; break;
	default: r->bad = 1; return 0;
	}
	if (enc & DW_EH_PE_indirect)
		r->bad = 1;
	return v;
}

/* ---- the CFA program ------------------------------------------------------ */

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
/* a register's rule: unchanged, saved at CFA + off, undefined, or one we
 * do not follow */
enum { K_SAME, K_OFF, K_UNDEF, K_OTHER };
struct regrule {
	uint8_t kind;
	int64_t off;
};
struct cfa_state {
	int reg;		/* DW_RSP, DW_RBP, or -1 (anything else) */
	int64_t off;
	struct regrule bp, ra, sp;	/* sp: the CFA, unless a rule says otherwise */
};
#define STATE_STACK 8

struct cie {
	struct rd ins;		/* its initial instructions */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int aug_z, signal;
};

static struct regrule *reg_of(struct cfa_state *s, uint64_t reg)
{
	return reg == DW_RBP ? &s->bp : reg == DW_RA ? &s->ra : reg == DW_RSP ? &s->sp : NULL;
}

/* Runs r's instructions from loc until loc passes target (or r ends);
 * init: the state after the CIE's, for DW_CFA_restore. 0, or -1 on an
 * instruction not understood. */
static int cfa_run(struct rd *r, const struct cie *c, struct cfa_state *s,
		   const struct cfa_state *init, uint64_t loc, uint64_t target)
{
	struct cfa_state stack[STATE_STACK];
	unsigned depth = 0;
	while (r->p < r->end && !r->bad) {
		uint8_t op = *r->p++;
		uint64_t reg, delta = 0;
		struct regrule *rr;
		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			delta = (uint64_t)(op & 0x3f) * c->code_align;
			goto advance;
		case 2: /* DW_CFA_offset */
			rr = reg_of(s, op & 0x3f);
			reg = (uint64_t)rd_uleb(r);
			if (rr)
				*rr = (struct regrule){K_OFF, (int64_t)reg * c->data_align};
			continue;
		case 3: /* DW_CFA_restore */
			if (!init)
				return -1;
			rr = reg_of(s, op & 0x3f);
			if (rr)
				*rr = *reg_of((struct cfa_state *)init, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			continue;
		case 0x01: /* set_loc */
			loc = rd_ptr(r, c->fde_enc, 0);
			if (loc > target)
				return 0;
			continue;
		case 0x02: delta = rd_fixed(r, 1) * c->code_align; goto advance;
		case 0x03: delta = rd_fixed(r, 2) * c->code_align; goto advance;
		case 0x04: delta = rd_fixed(r, 4) * c->code_align; goto advance;
		case 0x05: /* offset_extended */
			reg = rd_uleb(r);
			delta = rd_uleb(r);
			if ((rr = reg_of(s, reg)))
				*rr = (struct regrule){K_OFF, (int64_t)delta * c->data_align};
			continue;
		case 0x06: /* restore_extended */
			reg = rd_uleb(r);
			if ((rr = reg_of(s, reg))) {
				if (!init)
					return -1;
				*rr = *reg_of((struct cfa_state *)init, reg);
			}
			continue;
		case 0x07: /* undefined */
			if ((rr = reg_of(s, rd_uleb(r))))
				*rr = (struct regrule){K_UNDEF, 0};
			continue;
		case 0x08: /* same_value */
			if ((rr = reg_of(s, rd_uleb(r))))
				*rr = (struct regrule){K_SAME, 0};
			continue;
		case 0x09: /* register */
		case 0x0a: /* remember_state */
			if (depth >= STATE_STACK)
				return -1;
			stack[depth++] = *s;
			continue;
		case 0x0b: /* restore_state */
			if (!depth)
				return -1;
			*s = stack[--depth];
			continue;
		case 0x0c: /* def_cfa */
			reg = rd_uleb(r);
			s->reg = reg == DW_RSP || reg == DW_RBP ? (int)reg : -1;
			s->off = (int64_t)rd_uleb(r);
			continue;
		case 0x0d: /* def_cfa_register */
			reg = rd_uleb(r);
			s->reg = reg == DW_RSP || reg == DW_RBP ? (int)reg : -1;
			continue;
		case 0x0e: /* def_cfa_offset */
			s->off = (int64_t)rd_uleb(r);
			continue;
		case 0x0f: /* def_cfa_expression */
			delta = rd_uleb(r);
			s->reg = -1;
			goto skip;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = rd_uleb(r);
			delta = rd_uleb(r);
			if ((rr = reg_of(s, reg)))
				*rr = (struct regrule){K_OTHER, 0};
			goto skip;
		case 0x11: /* offset_extended_sf */
			reg = rd_uleb(r);
			{
				int64_t o = rd_sleb(r) * c->data_align;
				if ((rr = reg_of(s, reg)))
					*rr = (struct regrule){K_OFF, o};
			}
			continue;
		case 0x12: /* def_cfa_sf */
			reg = rd_uleb(r);
			s->reg = reg == DW_RSP || reg == DW_RBP ? (int)reg : -1;
			s->off = rd_sleb(r) * c->data_align;
			continue;
		case 0x13: /* def_cfa_offset_sf */
			s->off = rd_sleb(r) * c->data_align;
			continue;
		case 0x15: /* val_offset_sf */
			reg = rd_uleb(r);
			rd_sleb(r);
			if ((rr = reg_of(s, reg)))
				*rr = (struct regrule){K_OTHER, 0};
			continue;
		case 0x2e: /* GNU_args_size */
			rd_uleb(r);
			continue;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = rd_uleb(r);
			delta = rd_uleb(r);
			if ((rr = reg_of(s, reg)))
				*rr = (struct regrule){K_OFF, -(int64_t)delta * c->data_align};
			continue;
		default:
			return -1;
		}
	advance:
		loc += delta;
		if (loc > target)
			return 0;
		continue;
	skip:
		if ((uint64_t)(r->end - r->p) < delta)
			return -1;
		r->p += delta;
	}
	return r->bad ? -1 : 0;
}

/* The CIE at p (an .eh_frame entry of its module). 0, or -1. */
static int cie_read(const uint8_t *p, struct cie *c)
{
	uint32_t len;
	memcpy(&len, p, 4);
	if (len == 0 || len == 0xffffffffu)
		return -1; /* a terminator, or 64-bit DWARF (not emitted for x86-64) */
	struct rd r = {p + 4, p + 4 + len, 0};
	if (rd_fixed(&r, 4) != 0)
		return -1; /* not a CIE */
	uint8_t ver = (uint8_t)rd_fixed(&r, 1);
	if (ver != 1 && ver != 3)
		return -1;
	const char *aug = (const char *)r.p;
	size_t alen = strnlen(aug, (size_t)(r.end - r.p));
	if (alen == (size_t)(r.end - r.p))
		return -1;
	r.p += alen + 1;
	if (strstr(aug, "eh"))
		return -1;
	*c = (struct cie){.fde_enc = 0};
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = ver == 1 ? rd_fixed(&r, 1) : rd_uleb(&r);
	const uint8_t *aug_end = NULL;
	if (aug[0] == 'z') {
		c->aug_z = 1;
		uint64_t n = rd_uleb(&r);
		if (r.bad || n > (uint64_t)(r.end - r.p))
			return -1;
		aug_end = r.p + n;
		for (const char *a = aug + 1; *a && !r.bad; a++) {
			if (*a == 'R') {
				c->fde_enc = (uint8_t)rd_fixed(&r, 1);
			} else if (*a == 'L') {
				rd_fixed(&r, 1);
			} else if (*a == 'P') {
				uint8_t enc = (uint8_t)rd_fixed(&r, 1);
				rd_ptr(&r, enc & ~DW_EH_PE_indirect, 0);
			} else if (*a == 'S') {
				c->signal = 1;
			} else {
				return -1; /* what it means for the rest is unknown */
			}
		}
		r.p = aug_end;
	} else if (aug[0]) {
		return -1;
	}
	if (r.bad || c->ra_reg != DW_RA)
		return -1;
	c->ins = (struct rd){r.p, r.end, 0};
	return 0;
}

/* The rule of the frame whose PC is pc - 1, from the FDE at fde. */
static uint64_t rule_from_fde(const uint8_t *fde, uint64_t pc)
{
	uint32_t len, cie_off;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffffu)
		return R_NONE;
	memcpy(&cie_off, fde + 4, 4);
	if (!cie_off)
		return R_NONE; /* a CIE */
	struct cie c;
	if (cie_read(fde + 4 - cie_off, &c) < 0 || c.signal)
		return R_NONE;
	struct rd r = {fde + 8, fde + 4 + len, 0};
	uint64_t start = rd_ptr(&r, c.fde_enc, 0);
	uint64_t range = rd_ptr(&r, c.fde_enc & 0x0f, 0);
	if (r.bad || pc - 1 < start || pc - 1 - start >= range)
		return R_NONE;
	if (c.aug_z) {
		uint64_t n = rd_uleb(&r);
		if (r.bad || n > (uint64_t)(r.end - r.p))
			return R_NONE;
		r.p += n;
	}
	struct cfa_state init = {-1, 0, {K_SAME, 0}, {K_SAME, 0}, {K_SAME, 0}}, s;
	struct rd ci = c.ins;
	if (cfa_run(&ci, &c, &init, NULL, 0, UINT64_MAX) < 0)
		return R_NONE;
	s = init;
	if (cfa_run(&r, &c, &s, &init, start, pc - 1) < 0)
		return R_NONE;
	if (s.ra.kind == K_UNDEF)
		return R_END;
	if (s.sp.kind != K_SAME)
		return R_NONE; /* the caller's rsp is not the CFA */
	if (s.reg < 0 || s.off < 0 || (uint64_t)s.off > R_OFF_MAX || s.ra.kind != K_OFF ||
	    s.ra.off != -8)
		return R_NONE;
	uint64_t bp = 0;
	if (s.bp.kind == K_OFF) {
		if (s.bp.off >= 0 || (uint64_t)-s.bp.off > R_BP_MAX)
			return R_NONE;
		bp = (uint64_t)-s.bp.off;
	} else if (s.bp.kind != K_SAME) {
		return R_NONE;
	}
	return (uint64_t)(s.reg == DW_RSP ? R_SP : R_BP) | (uint64_t)s.off << R_OFF_SHIFT |
	       bp << R_BP_SHIFT;
}

/* The FDE for pc - 1 through the module's .eh_frame_hdr search table
 * (hdr, len bytes), or NULL; the FDE must lie in [lo, hi), the module. */
static const uint8_t *fde_find(const uint8_t *hdr, size_t len, uint64_t pc, uint64_t lo,
			       uint64_t hi)
{
	if (len < 4 + 16 || hdr[0] != 1)
		return NULL;
	uint8_t ptr_enc = hdr[1], count_enc = hdr[2], tab_enc = hdr[3];
	if (tab_enc != 0x3b || count_enc == DW_EH_PE_omit || ptr_enc == DW_EH_PE_omit)
		return NULL; /* the binary search table: datarel sdata4 pairs */
	struct rd r = {hdr + 4, hdr + 4 + 16, 0};
	rd_ptr(&r, ptr_enc, (uint64_t)(uintptr_t)hdr);
	uint64_t n = rd_ptr(&r, count_enc, (uint64_t)(uintptr_t)hdr);
	if (r.bad || !n || n > (size_t)(hdr + len - r.p) / 8)
		return NULL;
	const int32_t *tab = (const int32_t *)(const void *)r.p;
	int64_t want = (int64_t)(pc - 1 - (uint64_t)(uintptr_t)hdr);
	if (want < tab[0])
		return NULL;
	size_t l = 0, h = n; /* the last entry starting at or before want */
	while (h - l > 1) {
		size_t mid = l + (h - l) / 2;
		if (tab[2 * mid] <= want)
			l = mid;
		else
			h = mid;
	}
	const uint8_t *fde = hdr + tab[2 * l + 1];
	uint64_t at = (uint64_t)(uintptr_t)fde;
	return at >= lo && at + 8 <= hi ? fde : NULL;
}

/* ---- modules unloaded ------------------------------------------------------
 *
 * A rule is good while its module stays mapped: an unload makes every
 * rule stale (the generation moves on; a rule carries the generation it
 * was read in), since another module may be mapped where it was. The
 * loader counts its unloads (dl_iterate_phdr's dlpi_subs), the program's
 * dlclose calls and the C library's own (iconv's modules) alike: the
 * count is looked at after each dlclose, at each rule read from the
 * tables, and every CFI_SUBS_POLL walks of a thread. */
static uint64_t cfi_subs;	/* dlpi_subs when last looked at */

static void subs_seen(uint64_t subs)
{
	if (subs == __atomic_load_n(&cfi_subs, __ATOMIC_RELAXED))
		return;
	lk_lock(&cfi_lock);
	int moved = subs != cfi_subs;
	if (moved) {
		cfi_subs = subs;
		uint32_t g = cfi_gen + 1;
		/* at each 8192th, where the rules' generations would match
		 * again, the table starts anew (the old one stays readable:
		 * walks under way) */
		if (!(g & R_GEN_MASK))
			__atomic_store_n(&rules, NULL, __ATOMIC_RELEASE);
		__atomic_store_n(&cfi_gen, g, __ATOMIC_RELEASE);
	}
	lk_unlock(&cfi_lock);
	if (moved)
		unw_unloaded(); /* (libunwind's cache: stacks.c) */
}

static int subs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*(uint64_t *)arg = info->dlpi_subs;
	return 1;
}

static void subs_poll(void)
{
	uint64_t subs = 0;
	dl_iterate_phdr(subs_cb, &subs);
	subs_seen(subs);
}

uint32_t cfi_unloads(void)
{
	return __atomic_load_n(&cfi_gen, __ATOMIC_ACQUIRE);
}

void cfi_poll(void)
{
	subs_poll();
	unw_poll();
}

struct find {
	uint64_t pc, rule, subs;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		f->subs = info->dlpi_subs;
	struct ap_load_extent e = ap_load_extent_of(info, 0, (uintptr_t)f->pc - 1);
	if (!e.holds)
		return 0;
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum && !eh; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	const uint8_t *fde = eh ? fde_find((const uint8_t *)(info->dlpi_addr + eh->p_vaddr),
					   eh->p_memsz, f->pc, e.lo, e.hi)
				: NULL;
	f->rule = fde ? rule_from_fde(fde, f->pc) : R_NONE;
	return 1;
}

/* The rule of the frame returning to pc, resolved now (dl_iterate_phdr:
 * the loader's lock keeps the module mapped while its tables are read),
 * as of generation gen. */
static uint64_t rule_resolve(uint64_t pc, uint32_t gen)
{
	struct find f = {pc, R_NONE, 0};
	cfi_t.cold++;
	dl_iterate_phdr(find_cb, &f);
	subs_seen(f.subs);
	uint64_t rule = f.rule | (uint64_t)(gen & R_GEN_MASK) << R_GEN_SHIFT | R_SET;
	rule_keep(pc, rule);
	return rule;
}

/* pc's rule, current. */
static inline uint64_t rule_of(uint64_t pc, uint32_t gen)
{
	const struct rule_ent *at = rule_find(__atomic_load_n(&rules, __ATOMIC_ACQUIRE), pc);
	uint64_t r = at ? __atomic_load_n(&at->rule, __ATOMIC_RELAXED) : 0;
	if (LIKELY(r) && ((r >> R_GEN_SHIFT) & R_GEN_MASK) == (gen & R_GEN_MASK))
		return r;
	return rule_resolve(pc, gen);
}

/* ---- the walk ------------------------------------------------------------- */

/* The caller's registers where it called: the return address, the stack
 * pointer after the return, rbp. */
void cfi_here(uint64_t r[3]);
#if defined(__x86_64__)
__asm__(".text\n"
	".p2align 4\n"
	".type cfi_here, @function\n"
	"cfi_here:\n"
	".cfi_startproc\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, 0(%rdi)\n"
	"	leaq 8(%rsp), %rax\n"
	"	movq %rax, 8(%rdi)\n"
	"	movq %rbp, 16(%rdi)\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfi_here, .-cfi_here\n");
#else
/* The rules above are x86-64's: elsewhere cfi_init leaves the walk off. */
void cfi_here(uint64_t r[3])
{
	r[0] = r[1] = r[2] = 0;
}
#endif

/* A frame larger than this is taken as a walk gone wrong. */
#define FRAME_MAX (64u << 20)
/* our own frames before the program's: the sampled path's, the stack
 * switch's, the slow path's, the entry point's */
#define OWN_MAX 16

int cfi_walk(uint64_t *pcs, unsigned max, uint32_t *off, unsigned noff, uint64_t *first_sp)
{
	uint64_t r[3];
	if (UNLIKELY(!(++cfi_t.walks % CFI_SUBS_POLL)))
		subs_poll();
	cfi_here(r);
	uint64_t pc = r[0], sp = r[1], bp = r[2];
	uint32_t gen = __atomic_load_n(&cfi_gen, __ATOMIC_ACQUIRE);
	uintptr_t lo = (uintptr_t)__ehdr_start, hi = (uintptr_t)_end;
	unsigned d = 0, own = 0;
	/* a frame's return address is where the frame below it had its CFA,
	 * less 8: that slot's offset from the first program frame's stack
	 * pointer is what the stack cache compares (stacks.h) */
	uint64_t base = 0;
	for (;;) {
		int ours = !d && pc - lo < hi - lo;
		if (!ours) {
			if (!d)
				base = sp;
			else if (d < noff) {
				if (sp - 8 - base > INT32_MAX)
					return -1;
				off[d] = (uint32_t)(sp - 8 - base);
			}
			pcs[d++] = pc;
			if (d >= max)
				break;
		} else if (++own > OWN_MAX) {
			return -1;
		}
		uint64_t rule = rule_of(pc, gen);
		unsigned kind = rule & 3;
		if (kind == R_END)
			break;
		if (kind == R_NONE)
			return -1;
		uint64_t cfa = (kind == R_SP ? sp : bp) + ((rule >> R_OFF_SHIFT) & R_OFF_MAX);
		/* the program's stack climbs: each CFA above the frame's stack
		 * pointer, word-aligned, not absurdly far (ours leaves the
		 * sampler's stack for the program's: slowstack.c) */
		uint64_t bpoff = (rule >> R_BP_SHIFT) & R_BP_MAX;
		if (!ours && (cfa <= sp || cfa - sp > FRAME_MAX || (cfa & 7) ||
			      (kind == R_BP && bp < sp) || bpoff > cfa - sp))
			return -1;
		pc = *(const uint64_t *)(cfa - 8);
		if (bpoff)
			bp = *(const uint64_t *)(cfa - bpoff);
		sp = cfa;
		if (pc < 0x4000)
			break; /* the end, as libunwind takes it */
	}
	*first_sp = base;
	return (int)d;
}

/* ---- dlclose ---------------------------------------------------------------- */

static int (*real_dlclose)(void *);

/* The program's dlclose, then whether it unloaded anything. */
EXPORT int dlclose(void *h)
{
	int (*f)(void *) = __atomic_load_n(&real_dlclose, __ATOMIC_ACQUIRE);
	if (UNLIKELY(!f)) {
		f = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
		if (!f)
			return -1;
		__atomic_store_n(&real_dlclose, f, __ATOMIC_RELEASE);
	}
	int rc = f(h);
	subs_poll();
	modules_after_unload();
	return rc;
}

void cfi_init(void)
{
	const char *m = getenv("ALLOCPROF_UNWIND");
	if (m && *m && strcmp(m, "libunwind") && strcmp(m, "check"))
		say("ALLOCPROF_UNWIND", "neither libunwind nor check: ignored");
#if defined(__x86_64__)
	cfi_on = !attach_mode && !(m && !strcmp(m, "libunwind"));
#else
	cfi_on = 0;
#endif
	cfi_check = cfi_on && m && !strcmp(m, "check");
	if (!real_dlclose) /* (before the program's dlerror can be pending) */
		real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	uint64_t subs = 0;
	dl_iterate_phdr(subs_cb, &subs);
	cfi_subs = subs;
}
