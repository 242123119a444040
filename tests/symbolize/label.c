/* A call through code that only an untyped symbol names (an assembly
 * label without .type, as ld.so's _dl_start_user, the outermost frame of
 * the allocations libraries' constructors make): for labels.sh. */
#include <stdlib.h>

void *volatile label_sink;
void label_alloc(void);
void asm_label_entry(void);

__attribute__((noinline)) void label_alloc(void)
{
	label_sink = malloc(100);
	free(label_sink);
	__asm__ volatile("" ::: "memory");
}

__asm__(".text\n"
	".globl asm_label_entry\n"
	"asm_label_entry:\n"
	".cfi_startproc\n"
	"\tpush %rbp\n"
	"\t.cfi_def_cfa_offset 16\n"
	"\t.cfi_offset %rbp, -16\n"
	"\tmov %rsp, %rbp\n"
	"\t.cfi_def_cfa_register %rbp\n"
	"\tcall label_alloc\n"
	"\tnop\n"
	"\tpop %rbp\n"
	"\t.cfi_def_cfa %rsp, 8\n"
	"\tret\n"
	".cfi_endproc\n");

int main(void)
{
	for (int i = 0; i < 3; i++)
		asm_label_entry();
	return 0;
}
