/* fakemalloc: a malloc of its own in front of glibc's (forwarding to it),
 * as jemalloc or tcmalloc would be: as an LD_PRELOAD library, or linked
 * into a program (ownmalloc). allocprof try must refuse both: behind
 * another allocator a block's header is not glibc's. */
#include <stddef.h>

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *malloc(size_t n);
void free(void *p);
void *calloc(size_t n, size_t m);
void *realloc(void *p, size_t n);

void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void free(void *p)
{
	__libc_free(p);
}

void *calloc(size_t n, size_t m)
{
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}
