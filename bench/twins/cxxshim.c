/* cxxshim.c: pool/vpool.h for the C++ twins (packets.cpp, strcat.cpp).
 * vpool.h did not compile as C++ when these twins were written (it does
 * since; the shim stays, so that the twins' timings compare). This is
 * the C file: a pool of blocks (twcxx_get/put), a pool of C++ objects
 * whose dropped ones the program deletes (twcxx_obj_*), and twin.h's
 * cycle pacing, behind plain functions. Linked only into the twins. */
#include "twin.h"
#include "cxxshim.h"

static struct vpool pool, objs;
static void (*obj_delete)(void *);

void twcxx_init(void)
{
	tw_pool_init(&pool);
}

/* A block of n bytes from the pool or malloc, counted for the pacing. */
void *twcxx_get(size_t n)
{
	void *p = tw_get(&pool, n);
	TW_ALLOC(n);
	return p;
}

void twcxx_put(void *p, size_t n)
{
	TW_FREE(n);
	vpool_put(&pool, p);
}

static void obj_release(void *obj, void *ctx)
{
	(void)ctx;
	obj_delete(obj);
}

/* A pool of objects the program made with new: a dropped one goes to
 * del (the program's delete). */
void twcxx_obj_init(void (*del)(void *))
{
	obj_delete = del;
	tw_pool_init_release(&objs, obj_release);
}

/* A pooled object, or NULL: the program makes one. */
void *twcxx_obj_get(void)
{
	return vpool_get(&objs);
}

void twcxx_obj_put(void *p)
{
	vpool_put(&objs, p);
}

/* The pacing of a twin whose pooled objects no longer allocate: the bytes
 * the plain program allocates and frees where the twin does not. */
void twcxx_alloced(size_t n)
{
	TW_ALLOC(n);
}

void twcxx_freed(size_t n)
{
	TW_FREE(n);
}

/* Pools by size class for lru.cpp: class c holds blocks of 512 << c
 * bytes (the hand-pooler's rounding up), TWCXX_CLASSES of them. */
#define TWCXX_CLASSES 5
static struct vpool cls[TWCXX_CLASSES];

void twcxx_cls_init(void)
{
	for (unsigned c = 0; c < TWCXX_CLASSES; c++)
		tw_pool_init(&cls[c]);
}

/* A block of class c for a request of n bytes (counted for the pacing as
 * the plain program's n). */
void *twcxx_cls_get(unsigned c, size_t n)
{
	void *p = tw_get(&cls[c], (size_t)512 << c);
	TW_ALLOC(n);
	return p;
}

void twcxx_cls_put(unsigned c, void *p, size_t n)
{
	TW_FREE(n);
	vpool_put(&cls[c], p);
}
