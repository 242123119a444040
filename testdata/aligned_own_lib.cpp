// A library with its own aligned operator new (an arena, as mimalloc's
// or tcmalloc's own `new` serve it), which never calls the C library's
// aligned allocators: see aligned_own.cpp.
#include <cstddef>
#include <new>

alignas(4096) static unsigned char arena[1 << 20];
static size_t used;

void *operator new(std::size_t n, std::align_val_t al)
{
	size_t a = (size_t)al;
	used = (used + a - 1) & ~(a - 1);
	if (used + n > sizeof(arena))
		used = 0;
	void *p = arena + used;
	used += n ? n : 1;
	return p;
}

void operator delete(void *, std::align_val_t) noexcept
{
}

void operator delete(void *, std::size_t, std::align_val_t) noexcept
{
}
