/* The synthetic trace of fixture.h. Built at -O0 without inlining so that
 * every call below is a real frame on a known line; the lines that matter
 * carry "L:<tag>" markers, found by fx_line(). Do not reformat casually:
 * the golden files in expected/ name these line numbers. */
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

#define NOINLINE __attribute__((noinline, noclone))

static struct {
	struct ap_tw *tw;
	uint64_t ts;
	uint64_t next_addr;
	uint32_t tid;
	void *top; /* fx_build's return address: stacks end below it */
} fx;

/* The stack of the caller of grab()'s caller, as the sampler records it:
 * pcs[0] is the return address in the function that called the
 * "allocator" (grab), the last one is in fx_build. */
static NOINLINE uint32_t grab(void)
{
	void *buf[64];
	uint64_t pcs[64];
	int n = backtrace(buf, 64);
	uint32_t depth = 0;
	/* Start at grab's own return address: the frames before it are grab
	 * itself and, under ASan, its backtrace interceptor. */
	int i = 0;
	while (i < n && buf[i] != __builtin_return_address(0))
		i++;
	for (; i < n && buf[i] != fx.top; i++)
		pcs[depth++] = (uint64_t)(uintptr_t)buf[i];
	return ap_tw_stack(fx.tw, pcs, depth);
}

static uint64_t ev_alloc(uint32_t stack, uint64_t size)
{
	uint64_t addr = fx.next_addr;
	fx.next_addr += (size + 15) & ~(uint64_t)15;
	fx.next_addr += 16;
	ap_tw_alloc(fx.tw, fx.tid, fx.ts += 100, 0, AP_KIND_MALLOC, addr, size, stack);
	return addr;
}

static void ev_free(uint64_t addr)
{
	ap_tw_free(fx.tw, fx.tid, fx.ts += 100, 0, addr);
}

static NOINLINE void alloc_small(void)
{
	uint64_t a[FX_N_SMALL];
	uint32_t st = grab(); /* L:small */
	for (int i = 0; i < FX_N_SMALL; i++)
		a[i] = ev_alloc(st, FX_SZ_SMALL);
	for (int i = FX_KEEP_SMALL; i < FX_N_SMALL; i++)
		ev_free(a[i]);
}

static NOINLINE void alloc_big(void)
{
	uint32_t st = grab(); /* L:big */
	for (int i = 0; i < FX_N_BIG; i++)
		ev_alloc(st, FX_SZ_BIG);
}

static NOINLINE void make_token(void)
{
	uint32_t st = grab(); /* L:token */
	for (int i = 0; i < FX_N_TOKEN; i++)
		ev_free(ev_alloc(st, FX_SZ_TOKEN));
}

static NOINLINE void parse(void)
{
	uint32_t st = grab(); /* L:parse_self */
	for (int i = 0; i < FX_N_PARSE; i++)
		ev_free(ev_alloc(st, FX_SZ_PARSE));
	make_token(); /* L:parse_call */
}

static NOINLINE void walk(int depth)
{
	if (depth > 0) {
		walk(depth - 1); /* L:walk_rec */
		return;
	}
	uint32_t st = grab(); /* L:walk_alloc */
	for (int i = 0; i < FX_N_WALK; i++)
		ev_alloc(st, FX_SZ_WALK);
}

static NOINLINE void wrap_alloc(void)
{
	uint32_t st = grab(); /* L:wrap */
	for (int i = 0; i < FX_N_WRAP; i++)
		ev_free(ev_alloc(st, FX_SZ_WRAP));
}

static NOINLINE void use_wrapper(void)
{
	wrap_alloc(); /* L:use_wrapper */
}

static NOINLINE void grow(void)
{
	uint32_t st0 = grab(); /* L:grow_malloc */
	uint32_t st1 = grab(); /* L:grow_realloc */
	uint64_t a = ev_alloc(st0, FX_GROW0);
	uint64_t b = 0x7f1000000000, c = b + 0x10000;
	unsigned f = AP_RF_NEW_SAMPLED | AP_RF_OLD_TRACKED;
	ap_tw_realloc(fx.tw, fx.tid, fx.ts += 100, 1, AP_KIND_REALLOC, a, b, FX_GROW1, st1, f);
	ap_tw_realloc(fx.tw, fx.tid, fx.ts += 100, 1, AP_KIND_REALLOC, b, c, FX_GROW2, st1, f);
}

int fx_fake_build_id, fx_attached; /* (one line: the goldens name the lines below) */

/* This executable's mapping, as the sampler records it. */
static int add_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0; /* the main program has the empty name */
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n < 0)
		return 0;
	path[n] = 0;
	struct ap_segment segs[16];
	size_t nsegs = 0;
	const uint8_t *id = NULL;
	size_t idlen = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && nsegs < 16)
			segs[nsegs++] = (struct ap_segment){ph->p_vaddr, ph->p_memsz, ph->p_offset,
							    ph->p_flags};
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *desc = p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4)) {
				id = desc;
				idlen = nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	uint8_t fake[64];
	if (fx_fake_build_id && idlen && idlen <= sizeof(fake)) {
		memcpy(fake, id, idlen);
		fake[0] ^= 0xff;
		id = fake;
	}
	ap_tw_mapping(*(struct ap_tw **)data, info->dlpi_addr, path, id, idlen, segs, nsegs);
	return 1;
}

NOINLINE struct ap_tw *fx_build(uint64_t rate)
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.rate = rate;
	h.flags = (rate == 1 ? AP_HFLAG_ALL : 0) | (fx_attached ? AP_HFLAG_ATTACHED : 0);
	h.exe = "/usr/bin/fixture";
	static const char *const argv[] = {"/usr/bin/fixture", "--serve"};
	h.argv = argv;
	h.argc = 2;
	memset(&fx, 0, sizeof(fx));
	fx.tw = ap_tw_new(&h);
	fx.top = __builtin_return_address(0);
	fx.ts = h.start_ns;
	fx.next_addr = 0x7f0000001000;
	dl_iterate_phdr(add_self, &fx.tw);
	ap_tw_thread(fx.tw, 1000, "fixture");
	ap_tw_thread(fx.tw, 1001, "worker");

	fx.tid = 1000;
	alloc_small(); /* L:call_small */
	alloc_big();
	parse();
	fx.tid = 1001;
	walk(FX_WALK_DEPTH);
	use_wrapper();
	grow();

	struct ap_tw_end end = {.end_ns = fx.ts + 1000, .reason = AP_END_EXIT};
	ap_tw_end(fx.tw, &end);
	return fx.tw;
}

int fx_line(const char *src, const char *tag)
{
	FILE *f = fopen(src, "r");
	if (!f)
		return -1;
	char line[512], marker[64];
	snprintf(marker, sizeof(marker), "/* %s */", tag);
	int n = 0, found = -1;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, marker)) {
			found = n;
			break;
		}
	}
	fclose(f);
	return found;
}
