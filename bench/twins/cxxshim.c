/* cxxshim.c: pool/vpool.h for the C++ twin (packets.cpp). vpool.h does
 * not compile as C++ (_Alignas, C11 <stdatomic.h> types), as its own
 * comment says: C++ programs include it from a C file. This is that
 * file: one pool, and twin.h's cycle pacing, behind plain functions.
 * Linked only into the twin. */
#include "twin.h"

static struct vpool pool;

void twcxx_init(void);
void *twcxx_get(size_t n);
void twcxx_put(void *p, size_t n);

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
