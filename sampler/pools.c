/* pools.c: the pools of pool/vpool.h register here (allocprof_pool_register,
 * a weak reference in vpool.h: nothing happens without this library), so
 * that what they hold when the program ends is known as theirs: END's
 * `pooled` key lists those objects (docs/trace-format.md), and advise does
 * not count them as blocks the program never freed. No malloc: a fixed
 * table, mmap'd memory for the list. */
#include <stdint.h>
#include <sys/mman.h>

#include "ap_trace_enc.h"
#include "ap_trace_encode.h"
#include "sampler-int.h"

typedef void (*pool_each_fn)(void *pool, void (*fn)(void *obj, void *ctx), void *ctx);

/* Exported (sampler.map); pool/vpool.h declares them weak. */
void allocprof_pool_register(void *pool, pool_each_fn each);
void allocprof_pool_unregister(void *pool);

#define MAX_POOLS 4096
static struct {
	void *pool;
	pool_each_fn each;
} pools[MAX_POOLS];
static unsigned npools;
static int pools_lock;

static void lock(void)
{
	while (__atomic_exchange_n(&pools_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&pools_lock, __ATOMIC_RELAXED))
			;
}

static void unlock(void)
{
	__atomic_store_n(&pools_lock, 0, __ATOMIC_RELEASE);
}

/* A pool (made by vpool_init, not on a thread's stack: vpool.h checks)
 * and how to walk what it holds. A full table drops the pool: its objects
 * then count as never freed, as without this library. */
__attribute__((visibility("default"))) void allocprof_pool_register(void *pool, pool_each_fn each)
{
	lock();
	if (npools < MAX_POOLS)
		pools[npools++] = (__typeof__(pools[0])){ pool, each };
	unlock();
}

/* vpool_destroy: the pool is gone. */
__attribute__((visibility("default"))) void allocprof_pool_unregister(void *pool)
{
	lock();
	for (unsigned i = 0; i < npools; i++)
		if (pools[i].pool == pool) {
			pools[i] = pools[--npools];
			break;
		}
	unlock();
}

struct collect {
	uint8_t *buf;
	size_t len, cap;
	bool full;
};

static void collect_one(void *obj, void *ctx)
{
	struct collect *c = ctx;
	if (c->len + AP_VARINT_MAX > c->cap) {
		c->full = true;
		return;
	}
	/* an address: bit 0 clear (docs/trace-format.md) */
	c->len += ap_put_uv(c->buf + c->len, (uint64_t)(uintptr_t)obj << 1);
}

size_t pools_end_kv(size_t front, uint8_t **kv, void **map, size_t *maplen)
{
	*kv = NULL;
	*map = NULL;
	*maplen = 0;
	lock();
	if (!npools) {
		unlock();
		return 0;
	}
	/* Up to 4M objects (40 MB of varints): a pool holding more is cut
	 * short, and the rest count as never freed. */
	size_t cap = (size_t)40 << 20, lead = front + 3 * AP_VARINT_MAX;
	uint8_t *m = map_mem(lead + cap);
	if (!m) {
		unlock();
		return 0;
	}
	struct collect c = { m + lead, 0, cap, false };
	for (unsigned i = 0; i < npools && !c.full; i++)
		pools[i].each(pools[i].pool, collect_one, &c);
	unlock();
	/* key, kind and length go right before the list */
	uint8_t head[3 * AP_VARINT_MAX];
	size_t h = ap_put_uv(head, AP_EK_POOLED);
	h += ap_put_uv(head + h, AP_KV_STR);
	h += ap_put_uv(head + h, c.len);
	uint8_t *start = c.buf - h;
	for (size_t i = 0; i < h; i++)
		start[i] = head[i];
	*kv = start;
	*map = m;
	*maplen = lead + cap;
	return h + c.len;
}
