// A C++ throw: libstdc++'s __cxa_allocate_exception mallocs the
// exception object, and the call site is the throw's line
// (test-callsite.c).
#include <stdexcept>

extern "C" int throw_some(int n);

__attribute__((noinline)) static void thrower(int i)
{
	throw std::runtime_error(i ? "odd" : "even"); // SITE:t_throw
}

extern "C" int throw_some(int n)
{
	int caught = 0;
	for (int i = 0; i < n; i++) {
		try {
			thrower(i & 1);
		} catch (const std::exception &) {
			caught++;
		}
	}
	return caught;
}
