/* cfi.h: the stack walk by the unwind tables, with rules kept per return
 * address (cfi.c). */
#ifndef AP_SAMPLER_CFI_H
#define AP_SAMPLER_CFI_H
#include <stdint.h>

extern int cfi_on;	/* cfi_walk is tried before libunwind */
extern int cfi_check;	/* ALLOCPROF_UNWIND=check: and compared with it */
extern int cfi_lock;	/* the rule table's inserts */
/* The walk's per-thread state (one TLS variable: attach.c lists them). */
struct cfi_tls {
	/* what this thread's unwinds since it was last zeroed did for the
	 * first time, in rules read from a module's tables; a stack
	 * libunwind unwound counts CFI_COLD_LIB (stacks.h, unw_capped) */
	uint32_t cold;
	uint32_t walks;	/* walks made, for polling the loader's unloads */
};
extern __thread struct cfi_tls cfi_t __attribute__((tls_model("initial-exec")));
#define CFI_COLD_LIB 16

/* The loader's unload count looked at (every CFI_SUBS_POLL unwinds of a
 * thread, walked or libunwind's). */
#define CFI_SUBS_POLL 4096
void cfi_poll(void);

/* Reads ALLOCPROF_UNWIND (libunwind: never walk; check: compare each walk
 * with libunwind's, said on stderr where they differ). */
void cfi_init(void);

/* The program's frames of the calling stack, innermost first (the
 * sampler's own are left out), at most max into pcs; off[1..noff): each
 * frame's return-address slot less *first_sp, the first frame's stack
 * pointer (the entry point's CFA). The number of frames, or -1 where a
 * frame is not one the walk takes (then libunwind is asked). */
int cfi_walk(uint64_t *pcs, unsigned max, uint32_t *off, unsigned noff, uint64_t *first_sp);

#endif
