/* slowstack.c: the stack the sampled slow paths run on. A sampled event
 * needs several KiB of stack (libunwind's cursor and context and its
 * unwind-table search, the PC arrays, dl_iterate_phdr and a path when a
 * module is new, writing a chunk), and the program's malloc call may
 * have far less below it: coroutines on makecontext stacks of 4 to 8 KiB
 * (glibc's malloc fits in 4 KiB) died of SIGSEGV inside libunwind. So
 * each thread gets a stack of the sampler's, mapped at its first sampled
 * event with a guard page under it, and the slow paths switch to it
 * (on_slow_stack in sampler-int.h) once the fast checks are done.
 *
 * ap_on_stack_<fn> is the switch: it keeps the caller's stack pointer in rbp
 * and says so in its CFI (the CFA is rbp + 16), so libunwind walks from
 * the sampler's stack back onto the caller's as through any frame with a
 * frame pointer, and the stack cache's keys (the caller's return address
 * and CFA, read at the entry point) and slots (on the caller's stack)
 * are what they were. Owns slow_top. */
#include "sampler-int.h"

/* 128 KiB: the slow path uses a small part of it; a handler of the
 * program's that interrupts it runs here too, and finds room. Pages
 * never touched cost nothing. */
#define SLOW_SIZE (128u << 10)
#define SLOW_GUARD 4096u

__thread uint8_t *slow_top __attribute__((tls_model("initial-exec")));

/* A new stack for the calling thread: its top (16-byte aligned), or
 * SLOW_NONE if it cannot be mapped (the slow paths then run where they
 * are called, as before). */
uint8_t *slow_stack_new(void)
{
#if defined(__x86_64__)
	if (attach_mode)
		return SLOW_NONE; /* a thread's stack would outlive the detach */
	uint8_t *m = mmap(NULL, SLOW_SIZE + SLOW_GUARD, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return SLOW_NONE;
	mprotect(m, SLOW_GUARD, PROT_NONE); /* overflowing it faults, not corrupts */
	return m + SLOW_GUARD + SLOW_SIZE;
#else
	return SLOW_NONE;
#endif
}

/* The thread is exiting (its key destructor): its stack goes. What it
 * allocates later (other destructors, glibc's own teardown, on the
 * thread's own stack) takes the slow path where it is called. */
void slow_stack_release(void)
{
	uint8_t *top = slow_top;
	slow_top = SLOW_NONE;
	if (top && top != SLOW_NONE)
		munmap(top - SLOW_SIZE - SLOW_GUARD, SLOW_SIZE + SLOW_GUARD);
}

#if defined(__x86_64__)
/* ap_on_stack_<fn>(args...): fn(args...) with the stack pointer at
 * slow_top (set: see on_slow_stack). The arguments stay in their
 * registers (up to six): passed through memory, two of them read as one
 * 16-byte load missed store forwarding on every event. One switch per
 * function, each calling it directly. */
__asm__(".macro AP_ON_STACK fn\n"
	".text\n"
	".p2align 4\n"
	".globl ap_on_stack_\\fn\n"
	".hidden ap_on_stack_\\fn\n"
	".type ap_on_stack_\\fn, @function\n"
	"ap_on_stack_\\fn:\n"
	".cfi_startproc\n"
	"	pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"	movq slow_top@GOTTPOFF(%rip), %rax\n"
	"	movq %fs:(%rax), %rsp\n"
	"	call \\fn\n"
	"	movq %rbp, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	"	popq %rbp\n"
	".cfi_def_cfa_offset 8\n"
	".cfi_restore %rbp\n"
	"	ret\n"
	".cfi_endproc\n"
	".size ap_on_stack_\\fn, .-ap_on_stack_\\fn\n"
	".endm\n"
	"AP_ON_STACK alloc_sampled\n"
	"AP_ON_STACK realloc_sampled\n"
	"AP_ON_STACK free_sampled\n");
#else
void ap_on_stack_alloc_sampled(void *p, size_t n, unsigned kind, uint64_t caller, uint64_t cfa)
{
	alloc_sampled(p, n, kind, caller, cfa);
}

void ap_on_stack_realloc_sampled(void *old, void *q, size_t n, unsigned kind_tracked,
				 uint64_t caller, uint64_t cfa)
{
	realloc_sampled(old, q, n, kind_tracked, caller, cfa);
}

void ap_on_stack_free_sampled(void *p)
{
	free_sampled(p);
}
#endif
