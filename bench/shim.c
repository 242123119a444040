/* bench/shim.c: the bare forwarding shim, the floor any LD_PRELOAD
 * interposer pays: malloc, free, calloc and realloc only call glibc's,
 * resolved once with dlsym(RTLD_NEXT). Allocations made while dlsym runs
 * (older glibc's dlsym callocs for dlerror) come from a small static arena
 * that free and realloc recognise by address. Built by bench/run.sh. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);

static _Alignas(16) char boot[4096];
static size_t boot_used;
static int resolving;

static int in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

static void *boot_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(boot) - boot_used)
		return NULL;
	void *p = boot + boot_used;
	boot_used += n;
	return p; /* static storage: already zero */
}

static void resolve(void)
{
	resolving = 1;
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	resolving = 0;
}

void *malloc(size_t n)
{
	if (__builtin_expect(!real_malloc, 0)) {
		if (resolving)
			return boot_alloc(n);
		resolve();
	}
	return real_malloc(n);
}

void free(void *p)
{
	if (__builtin_expect(in_boot(p), 0))
		return;
	if (__builtin_expect(!real_free, 0))
		resolve();
	real_free(p);
}

void *calloc(size_t n, size_t size)
{
	if (__builtin_expect(!real_calloc, 0)) {
		if (resolving) {
			size_t total;
			if (__builtin_mul_overflow(n, size, &total))
				return NULL;
			return boot_alloc(total);
		}
		resolve();
	}
	return real_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	if (__builtin_expect(in_boot(p), 0)) {
		/* A boot block's size is unknown: copy what can be there. */
		size_t room = (size_t)(boot + sizeof(boot) - (char *)p);
		void *q = malloc(n);
		if (q)
			memcpy(q, p, n < room ? n : room);
		return q;
	}
	if (__builtin_expect(!real_realloc, 0))
		resolve();
	return real_realloc(p, n);
}
