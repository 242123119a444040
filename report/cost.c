/* The cost model: malloc+free against a pool's get+put, and the page faults
 * a fresh large block costs on first touch, measured on this machine by
 * size class; cached as JSON (`allocprof calibrate`). The pool priced is
 * the C pool the advice means, pool/vpool.h (a thread's private slot, a
 * CPU's deque under a lock, the victim generation), not the replay's
 * model of it. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_advise.h"
#include "vpool.h"

/* Where `size` falls in the table: between classes i - 1 and i at
 * fraction f of the way on a log scale; i == 0: at or below the first,
 * i == n: at or above the last. The same for every column. */
struct where {
	size_t i;
	double f;
};

static struct where where_in(const struct ap_cost_table *c, uint64_t size)
{
	if (size <= c->size[0])
		return (struct where){ 0, 0 };
	if (size >= c->size[c->n - 1])
		return (struct where){ c->n, 0 };
	size_t i = 1;
	while (c->size[i] < size)
		i++;
	double x0 = log2((double)c->size[i - 1]), x1 = log2((double)c->size[i]);
	return (struct where){ i, (log2((double)size) - x0) / (x1 - x0) };
}

/* Column `v` at w (grow: beyond the last class, in proportion to size). */
static double interp(const struct ap_cost_table *c, const double *v, struct where w,
		     uint64_t size, bool grow)
{
	if (w.i == 0)
		return v[0];
	if (w.i == c->n) {
		double last = v[c->n - 1];
		return grow ? last * (double)size / (double)c->size[c->n - 1] : last;
	}
	return v[w.i - 1] + w.f * (v[w.i] - v[w.i - 1]);
}

void ap_cost_all(const struct ap_cost_table *c, uint64_t size, struct ap_cost_point *out)
{
	if (!c->n) {
		*out = (struct ap_cost_point){ 0, 0, 0 };
		return;
	}
	struct where w = where_in(c, size);
	out->malloc_free_ns = interp(c, c->malloc_free_ns, w, size, false);
	out->pool_ns = interp(c, c->pool_ns, w, size, false);
	out->first_touch_ns = interp(c, c->first_touch_ns, w, size, true);
}

double ap_cost_malloc_free(const struct ap_cost_table *c, uint64_t size)
{
	struct ap_cost_point p;
	ap_cost_all(c, size, &p);
	return p.malloc_free_ns;
}

double ap_cost_pool(const struct ap_cost_table *c, uint64_t size)
{
	struct ap_cost_point p;
	ap_cost_all(c, size, &p);
	return p.pool_ns;
}

double ap_cost_first_touch(const struct ap_cost_table *c, uint64_t size)
{
	struct ap_cost_point p;
	ap_cost_all(c, size, &p);
	return p.first_touch_ns;
}

/* Keeps the compiler from dropping a malloc/free pair or a store. */
static inline void escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
}

static void touch(char *p, uint64_t size, long page)
{
	for (uint64_t off = 0; off < size; off += (uint64_t)page)
		p[off] = 1;
	escape(p);
}

/* Each measurement runs up to ROUNDS rounds of up to `iters` iterations,
 * within BUDGET_NS in all (at least one iteration), and keeps the fastest
 * round's mean: the whole table takes well under 2 s. */
#define ROUNDS 3
#define BUDGET_NS 30000000ull

enum what { MALLOC_FREE, FRESH_TOUCH, REUSED_TOUCH, POOL_GETPUT, WRITE_ONLY };

/* The bytes a request writes into its object in the pool's measurement,
 * so that get+put is priced as a request meets it (a locked instruction
 * after the writes would wait for them to drain, a cost a tight get/put
 * loop does not show). */
static size_t request_writes(uint64_t size)
{
	return size < 4096 ? (size_t)size : 4096;
}

static double measure(enum what w, uint64_t size, int iters, long page)
{
	double best = INFINITY;
	uint64_t start = ap_now_ns();
	struct vpool pool = { 0 };
	char *reused = NULL, *obj = NULL;
	size_t nw = request_writes(size);
	if (w == POOL_GETPUT || w == WRITE_ONLY) {
		obj = malloc(nw ? nw : 1);
		if (!obj || vpool_init(&pool, 0, NULL, NULL) < 0) {
			free(obj);
			return 0;
		}
		vpool_put(&pool, obj);
	} else if (w == REUSED_TOUCH) {
		reused = malloc(size);
		if (!reused)
			return 0;
		touch(reused, size, page);
	}
	void *win[64] = { NULL };
	unsigned nwin = size <= (1u << 20) ? 64 : 4, x = 1;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = ap_now_ns();
		int i;
		for (i = 0; i < iters; i++) {
			if (w == MALLOC_FREE) {
				/* Replace a random block of a window of live ones,
				 * so malloc works on real bins, not on the one
				 * block a tight malloc/free loop recycles. */
				x = x * 1103515245u + 12345u;
				unsigned k = (x >> 16) % nwin;
				free(win[k]);
				win[k] = malloc(size);
				escape(win[k]);
			} else if (w == FRESH_TOUCH) {
				char *p = malloc(size);
				if (p)
					touch(p, size, page);
				free(p);
			} else if (w == REUSED_TOUCH) {
				touch(reused, size, page);
			} else if (w == WRITE_ONLY) {
				memset(obj, (int)i, nw);
				escape(obj);
			} else {
				/* What a hit costs: the Get that finds the
				 * object and the Put that returns it, after
				 * the request's writes (WRITE_ONLY is taken
				 * off). */
				char *o = vpool_get(&pool);
				memset(o, (int)i, nw);
				escape(o);
				vpool_put(&pool, o);
			}
			if ((i & 15) == 15 && ap_now_ns() - start > BUDGET_NS) {
				i++;
				break;
			}
		}
		double ns = (double)(ap_now_ns() - t0) / i;
		if (ns < best)
			best = ns;
		if (ap_now_ns() - start > BUDGET_NS)
			break;
	}
	for (unsigned k = 0; k < nwin; k++)
		free(win[k]);
	if (w == POOL_GETPUT || w == WRITE_ONLY)
		vpool_destroy(&pool);
	free(obj);
	free(reused);
	return best;
}

void ap_cost_measure(struct ap_cost_table *c)
{
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	memset(c, 0, sizeof(*c));
	measure(MALLOC_FREE, 64, 20000, page);	/* warm up */
	double pool_ns = 0;
	for (uint64_t size = 16; size <= (UINT64_C(64) << 20); size *= 4) {
		size_t k = c->n++;
		c->size[k] = size;
		/* The pool's cost grows with the writes before a Put, up to
		 * request_writes()'s bound; beyond it, it is that size's. */
		if (size <= 4096) {
			double pw = measure(POOL_GETPUT, size, 200000, page) -
				    measure(WRITE_ONLY, size, 200000, page);
			pool_ns = pw > 0 ? pw : 0;
		}
		c->pool_ns[k] = pool_ns;
		int iters = size <= (64u << 10) ? 100000 : size <= (4u << 20) ? 300 : 4;
		int titers = size <= (64u << 10) ? 2000 : size <= (4u << 20) ? 40 : 1;
		double mf = measure(MALLOC_FREE, size, iters, page);
		c->malloc_free_ns[k] = mf;
		if (size > (4u << 20)) {
			/* Page faults cost per page: above 4 MiB (where one
			 * touch of a fresh block can take a second on a VM)
			 * scale the 4 MiB figure. */
			c->first_touch_ns[k] = c->first_touch_ns[k - 1] * (double)size / (double)c->size[k - 1];
			continue;
		}
		/* Below glibc's mmap threshold (128 KiB to start with) a freed
		 * block stays in the heap and the next one reuses its pages:
		 * there is nothing to save, and the difference below is noise
		 * that the clamp at 0 would only bias upwards. */
		if (size < (128u << 10)) {
			c->first_touch_ns[k] = 0;
			continue;
		}
		double fresh = measure(FRESH_TOUCH, size, titers, page);
		double reused = measure(REUSED_TOUCH, size, titers, page);
		double ft = fresh - mf - reused;
		c->first_touch_ns[k] = isfinite(ft) && ft > 0 ? ft : 0;
	}
}

int ap_cost_load(const char *path, struct ap_cost_table *c, struct ap_error *err)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root)
		return ap_error_set(err, "%s: %s", path, je.text);
	memset(c, 0, sizeof(*c));
	json_t *classes = json_object_get(root, "classes");
	size_t i;
	json_t *cl;
	if (!json_is_array(classes) || !json_array_size(classes)) {
		json_decref(root);
		return ap_error_set(err, "%s: no \"classes\" array", path);
	}
	json_array_foreach(classes, i, cl) {
		json_t *s = json_object_get(cl, "size"), *mf = json_object_get(cl, "malloc_free_ns");
		json_t *pl = json_object_get(cl, "pool_ns"), *ft = json_object_get(cl, "first_touch_ns");
		if (!json_is_integer(s) || !json_is_number(mf) || !json_is_number(pl) ||
		    !json_is_number(ft) || c->n >= AP_COST_MAX_CLASSES ||
		    (c->n && (uint64_t)json_integer_value(s) <= c->size[c->n - 1])) {
			json_decref(root);
			return ap_error_set(err, "%s: class %zu: want ascending \"size\" and numbers "
					    "\"malloc_free_ns\", \"pool_ns\", \"first_touch_ns\"", path, i);
		}
		c->size[c->n] = (uint64_t)json_integer_value(s);
		c->malloc_free_ns[c->n] = json_number_value(mf);
		c->pool_ns[c->n] = json_number_value(pl);
		c->first_touch_ns[c->n] = json_number_value(ft);
		c->n++;
	}
	json_decref(root);
	return 0;
}

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			int rc = mkdir(path, 0777);
			*p = '/';
			if (rc < 0 && errno != EEXIST)
				return -1;
		}
	return 0;
}

int ap_cost_save(const char *path, const struct ap_cost_table *c, struct ap_error *err)
{
	json_t *root = json_object(), *classes = json_array();
	json_object_set_new(root, "version", json_integer(1));
	for (size_t i = 0; i < c->n; i++) {
		json_t *cl = json_object();
		json_object_set_new(cl, "size", json_integer((json_int_t)c->size[i]));
		json_object_set_new(cl, "malloc_free_ns", json_real(c->malloc_free_ns[i]));
		json_object_set_new(cl, "pool_ns", json_real(c->pool_ns[i]));
		json_object_set_new(cl, "first_touch_ns", json_real(c->first_touch_ns[i]));
		json_array_append_new(classes, cl);
	}
	json_object_set_new(root, "classes", classes);
	char *dir = ap_xstrdup(path);
	int rc = mkdir_p(dir);
	free(dir);
	if (rc == 0)
		rc = json_dump_file(root, path, JSON_INDENT(2));
	json_decref(root);
	if (rc < 0)
		return ap_error_set(err, "%s: cannot write the cost cache: %s", path, strerror(errno));
	return 0;
}

char *ap_cost_cache_path(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct ap_buf b = AP_BUF_INIT;
	if (xdg && *xdg)
		ap_buf_addf(&b, "%s/allocprof/costs.json", xdg);
	else if (home && *home)
		ap_buf_addf(&b, "%s/.cache/allocprof/costs.json", home);
	else
		return NULL;
	return ap_buf_detach(&b, NULL);
}

int ap_cost_get(struct ap_cost_table *c, void (*measuring)(void *ctx, const char *cache),
		void *ctx, struct ap_error *err, struct ap_error *save_err)
{
	if (save_err)
		save_err->msg[0] = 0;
	const char *fixed = getenv("ALLOCPROF_TEST_COSTS");
	if (fixed && *fixed)
		return ap_cost_load(fixed, c, err) < 0 ? -1 : 0;
	char *path = ap_cost_cache_path();
	struct ap_error e;
	if (path && ap_cost_load(path, c, &e) == 0) {
		free(path);
		return 0;
	}
	if (measuring)
		measuring(ctx, path);
	ap_cost_measure(c);
	if (path && ap_cost_save(path, c, &e) < 0 && save_err)
		*save_err = e;
	free(path);
	return 0;
}
