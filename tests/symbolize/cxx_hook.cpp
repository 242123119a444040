// Built with testdata/cxx.cpp into libsymtest_cxx.so, which the symbolizer
// tests dlopen: records the stack of every `operator new(size_t)` call the
// library makes (linked with --wrap=_Znwm) and runs the program's main.
#include <cstddef>

extern "C" {
#include "symtest.h"
}

int cxx_main();

static struct symtest_rec rec;

extern "C" void *__real__Znwm(std::size_t n);
extern "C" void *__wrap__Znwm(std::size_t n)
{
	symtest_record(&rec);
	return __real__Znwm(n);
}

extern "C" struct symtest_rec *symtest_cxx_run(void)
{
	rec.armed = true;
	cxx_main();
	rec.armed = false;
	return &rec;
}
