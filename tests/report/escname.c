/* The program of tests/report/escapes.sh: allocations from functions
 * whose symbols the script renames (objcopy --redefine-sym) to names that
 * hold what a terminal acts on: ESC sequences (a window title, a clear
 * screen, an OSC 52 clipboard write), a newline, a tab, U+202E, a C1
 * control, DEL, bytes that are not UTF-8. Built without debug info, so
 * that the symbol table alone names them. With an argument, the first
 * allocates twice as often (a second trace for `diff`). */
#include <stdlib.h>

#define EV(name, size)                                                         \
	__attribute__((noinline)) void *name(int n);                          \
	__attribute__((noinline)) void *name(int n)                           \
	{                                                                     \
		void *keep = NULL;                                            \
		for (int i = 0; i < n; i++) {                                 \
			void *p = malloc(size);                               \
			__asm__ volatile("" : : "r"(p) : "memory");           \
			free(keep);                                           \
			keep = p;                                             \
		}                                                             \
		return keep;                                                  \
	}

EV(ev_title_, 64)
EV(ev_clear_, 96)
EV(ev_clip_, 128)
EV(ev_nl_, 160)
EV(ev_tab_, 192)
EV(ev_bidi_, 224)
EV(ev_c1_, 256)
EV(ev_del_, 288)
EV(ev_inval_, 320)

int main(int argc, char **argv)
{
	void *(*const fns[])(int) = { ev_title_, ev_clear_, ev_clip_, ev_nl_, ev_tab_,
				      ev_bidi_, ev_c1_, ev_del_, ev_inval_ };
	void *kept[sizeof(fns) / sizeof(fns[0])];
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		kept[i] = fns[i](i == 0 && argc > 1 ? 200 : 100);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		__asm__ volatile("" : : "r"(kept[i]) : "memory");
		free(kept[i]);
	}
	return 0;
}
