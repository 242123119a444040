/* The cost model: malloc+free against a pool's get+put, and the page faults
 * a fresh large block costs on first touch, measured on this machine by
 * size class; cached as JSON (`allocprof calibrate`). The pool priced is
 * the C pool the advice means, pool/vpool.h (a thread's private slot, a
 * CPU's deque under a lock, the victim generation), not the replay's
 * model of it. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
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
		*out = (struct ap_cost_point){ 0, 0, 0, 0 };
		return;
	}
	struct where w = where_in(c, size);
	out->malloc_free_ns = interp(c, c->malloc_free_ns, w, size, false);
	out->pool_ns = interp(c, c->pool_ns, w, size, false);
	out->first_touch_ns = interp(c, c->first_touch_ns, w, size, true);
	out->pool_shared_ns = c->pool_shared_ns[0] > 0 ? interp(c, c->pool_shared_ns, w, size, false)
						       : out->pool_ns;
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

/* A measurement: SUBS batches of `iters` iterations, each timed as a whole
 * on the thread's CPU clock (read between batches only: on a VM one read
 * can cost more than the get+put measured), within BUDGET_NS of wall time
 * in all; the fastest batch's mean, which leaves out interrupts. A batch
 * of big blocks checks the budget every iteration, others every 1024. */
#define SUBS 3
#define BUDGET_NS 20000000ull

enum what { MALLOC_FREE, MAP_ONLY, FRESH_TOUCH, REUSED_TOUCH, POOL_GETPUT, WRITE_ONLY, POOL_SHARED };

/* The bytes a request writes into its object in the pool's measurement,
 * so that get+put is priced as a request meets it (a locked instruction
 * after the writes would wait for them to drain, a cost a tight get/put
 * loop does not show). */
static size_t request_writes(uint64_t size)
{
	return size < 4096 ? (size_t)size : 4096;
}

/* The calling thread's CPU time: a batch is timed by it, not by the wall
 * clock, so that the time the thread waits for a core (another program,
 * the host of a VM) is not counted; page faults are (system time). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return ap_now_ns();
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double measure_n(enum what w, uint64_t size, int iters, long page, int subs)
{
	double best = INFINITY;
	uint64_t start = ap_now_ns();
	struct vpool pool = { 0 };
	char *reused = NULL, *obj = NULL;
	size_t nw = request_writes(size);
	char *obj2 = NULL;
	if (w == POOL_GETPUT || w == WRITE_ONLY || w == POOL_SHARED) {
		/* Page-aligned: the writes of the two measurements whose
		 * difference is the pool's cost meet the same alignment. */
		obj = aligned_alloc(4096, 4096);
		obj2 = aligned_alloc(4096, 4096);
		if (!obj || !obj2 || vpool_init(&pool, 0, NULL, NULL) < 0) {
			free(obj);
			free(obj2);
			return NAN;
		}
		vpool_put(&pool, obj);
		/* The private slot is taken: this one goes to the deque. */
		if (w == POOL_SHARED)
			vpool_put(&pool, obj2);
	} else if (w == REUSED_TOUCH) {
		reused = malloc(size);
		if (!reused)
			return NAN;
		touch(reused, size, page);
	}
	void *win[64] = { NULL };
	unsigned nwin = size <= (1u << 20) ? 64 : 4, x = 1;
	int check = size <= (64u << 10) ? 1023 : 0;
	for (int r = 0; r < subs; r++) {
		uint64_t t0 = thread_cpu_ns();
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
			} else if (w == MAP_ONLY || w == FRESH_TOUCH) {
				/* Fresh pages from the kernel, as malloc gets
				 * them above its mmap threshold or after a trim
				 * (malloc itself would often reuse its heap
				 * here: glibc raises the threshold to the size of
				 * a freed mapping, and nothing would fault). */
				char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (p != MAP_FAILED) {
					if (w == FRESH_TOUCH)
						touch(p, size, page);
					escape(p);
					munmap(p, size);
				}
			} else if (w == REUSED_TOUCH) {
				touch(reused, size, page);
			} else if (w == WRITE_ONLY) {
				memset(obj, (int)i, nw);
				escape(obj);
			} else if (w == POOL_SHARED) {
				/* A hit through the deque: the private slot's
				 * object, then the deque's, written; both go
				 * back (the first to the slot, the second to
				 * the deque). Less POOL_GETPUT, the deque's
				 * get and put are left. */
				char *a = vpool_get(&pool), *o = vpool_get(&pool);
				memset(o, (int)i, nw);
				escape(o);
				vpool_put(&pool, a);
				vpool_put(&pool, o);
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
			if ((i & check) == check && ap_now_ns() - start > BUDGET_NS) {
				i++;
				break;
			}
		}
		double ns = (double)(thread_cpu_ns() - t0) / i;
		if (ns < best)
			best = ns;
		if (ap_now_ns() - start > BUDGET_NS)
			break;
	}
	for (unsigned k = 0; k < nwin; k++)
		free(win[k]);
	/* The pool has no release function: the objects it holds are ours. */
	if (w == POOL_GETPUT || w == WRITE_ONLY || w == POOL_SHARED)
		vpool_destroy(&pool);
	free(obj);
	free(obj2);
	free(reused);
	return best;
}

static double measure(enum what w, uint64_t size, int iters, long page)
{
	return measure_n(w, size, iters, page, SUBS);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* What `with` costs more than `without`: a batch of each, PAIRS times in
 * alternation, the median difference (a difference of two minimums would
 * take the noise of both). The pool's get+put: POOL_GETPUT less the
 * writes alone (WRITE_ONLY); what the deque adds to a hit: POOL_SHARED
 * less POOL_GETPUT (the same writes in both). */
#define PAIRS 5
static double measure_diff(enum what with, enum what without, uint64_t size, long page)
{
	double d[PAIRS];
	for (int j = 0; j < PAIRS; j++)
		d[j] = measure_n(with, size, 20000, page, 2) - measure_n(without, size, 20000, page, 2);
	qsort(d, PAIRS, sizeof(*d), cmp_double);
	return d[PAIRS / 2];
}

/* What is plausible for a class (the same bounds for a measured round and
 * for a table read from a file): a malloc+free above 0 and at most 10 ms;
 * a pool's get+put above 0 and at most 10 us; first-touch page faults
 * from 0 to 20 us a page. NULL, or why not. */
static const char *implausible(uint64_t size, double malloc_free, double pool, double shared,
			       double touch_ns)
{
	double pages = ceil((double)size / 4096.0);
	if (!isfinite(malloc_free) || malloc_free <= 0 || malloc_free > 1e7)
		return "malloc_free_ns out of (0, 10ms]";
	if (!isfinite(pool) || pool <= 0 || pool > 1e4)
		return "pool_ns out of (0, 10us]";
	if (!isfinite(shared) || shared < pool || shared > 1e4)
		return "pool_shared_ns out of [pool_ns, 10us]";
	if (!isfinite(touch_ns) || touch_ns < 0 || touch_ns > pages * 20000)
		return "first_touch_ns out of [0, 20us a page]";
	return NULL;
}

/* The smallest pool cost kept: get+put is a few loads and stores at the
 * least; a difference below it is below the clock's resolution. */
#define POOL_FLOOR_NS 1.0

/* One round of the whole table: every class once. */
static void measure_round(struct ap_cost_table *c, long page)
{
	memset(c, 0, sizeof(*c));
	double pool_ns = 0, shared_ns = 0;
	for (uint64_t size = 16; size <= (UINT64_C(64) << 20); size *= 4) {
		size_t k = c->n++;
		c->size[k] = size;
		/* The pool's cost grows with the writes before a Put, up to
		 * request_writes()'s bound; beyond it, it is that size's. A
		 * hit through the deque costs a private one's and what the
		 * deque adds (never less). */
		if (size <= 4096) {
			double pw = measure_diff(POOL_GETPUT, WRITE_ONLY, size, page);
			pool_ns = isfinite(pw) && pw > POOL_FLOOR_NS ? pw : POOL_FLOOR_NS;
			double sw = measure_diff(POOL_SHARED, POOL_GETPUT, size, page);
			shared_ns = pool_ns + (isfinite(sw) && sw > 0 ? sw : 0);
		}
		c->pool_ns[k] = pool_ns;
		c->pool_shared_ns[k] = shared_ns;
		int iters = size <= (64u << 10) ? 100000 : size <= (4u << 20) ? 300 : 4;
		int titers = size <= (64u << 10) ? 2000 : size <= (4u << 20) ? 20 : 1;
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
		double map = measure(MAP_ONLY, size, titers, page);
		double reused = measure(REUSED_TOUCH, size, titers, page);
		double ft = fresh - map - reused;
		c->first_touch_ns[k] = isfinite(ft) && ft > 0 ? ft : 0;
	}
}

/* The median of v[0..n) (sorted in place) and its spread: half the
 * interquartile range over the median (0 when the median is 0). */
static double median_spread(double *v, size_t n, double *spread)
{
	qsort(v, n, sizeof(*v), cmp_double);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	double q1 = v[n / 4], q3 = v[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
	*spread = med > 0 ? (q3 - q1) / 2 / med : 0;
	return med;
}

void ap_cost_measure(struct ap_cost_table *c)
{
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	measure(MALLOC_FREE, 64, 20000, page);	/* warm up */
	/* Whole-table rounds, so that a burst of noise (another program,
	 * the host of a VM) spoils a round, not a class: each value is the
	 * median of its plausible rounds. */
	struct ap_cost_table r[AP_COST_ROUNDS];
	bool ok[AP_COST_ROUNDS][AP_COST_MAX_CLASSES];
	for (int k = 0; k < AP_COST_ROUNDS; k++) {
		measure_round(&r[k], page);
		for (size_t i = 0; i < r[k].n; i++)
			ok[k][i] = !implausible(r[k].size[i], r[k].malloc_free_ns[i], r[k].pool_ns[i],
						r[k].pool_shared_ns[i], r[k].first_touch_ns[i]);
	}
	*c = r[0];
	c->measured_at = (int64_t)time(NULL);
	c->rounds = AP_COST_ROUNDS;
	double spreads[4 * AP_COST_MAX_CLASSES];
	size_t nspreads = 0;
	for (size_t i = 0; i < c->n; i++) {
		double mf[AP_COST_ROUNDS], pl[AP_COST_ROUNDS], ft[AP_COST_ROUNDS], sh[AP_COST_ROUNDS];
		size_t m = 0;
		for (int k = 0; k < AP_COST_ROUNDS; k++) {
			if (!ok[k][i])
				continue;
			mf[m] = r[k].malloc_free_ns[i];
			pl[m] = r[k].pool_ns[i];
			sh[m] = r[k].pool_shared_ns[i];
			ft[m] = r[k].first_touch_ns[i];
			m++;
		}
		if (!m) {
			/* No plausible round: the class takes the one below
			 * it (or a floor), and its spread says it is unknown. */
			c->malloc_free_ns[i] = i ? c->malloc_free_ns[i - 1] : 10;
			c->pool_ns[i] = i ? c->pool_ns[i - 1] : POOL_FLOOR_NS;
			c->pool_shared_ns[i] = i ? c->pool_shared_ns[i - 1] : POOL_FLOOR_NS;
			c->first_touch_ns[i] = 0;
			c->malloc_free_spread[i] = c->pool_spread[i] = c->first_touch_spread[i] = 1;
			c->pool_shared_spread[i] = 1;
			spreads[nspreads++] = 1;
			continue;
		}
		c->malloc_free_ns[i] = median_spread(mf, m, &c->malloc_free_spread[i]);
		c->pool_ns[i] = median_spread(pl, m, &c->pool_spread[i]);
		c->pool_shared_ns[i] = median_spread(sh, m, &c->pool_shared_spread[i]);
		/* Medians of two columns need not keep their order. */
		if (c->pool_shared_ns[i] < c->pool_ns[i])
			c->pool_shared_ns[i] = c->pool_ns[i];
		c->first_touch_ns[i] = median_spread(ft, m, &c->first_touch_spread[i]);
		double sft = c->first_touch_spread[i];
		spreads[nspreads++] = c->malloc_free_spread[i];
		if (i == 0 || c->size[i] <= 4096) {	/* measured up to 4 KiB */
			spreads[nspreads++] = c->pool_spread[i];
			spreads[nspreads++] = c->pool_shared_spread[i];
		}
		if (c->first_touch_ns[i] > 0 && c->size[i] <= (4u << 20))
			spreads[nspreads++] = sft;
	}
	double unused;
	c->spread = nspreads ? median_spread(spreads, nspreads, &unused) : -1;
}

/* The file at path, read without following a symbolic link or waiting on
 * a FIFO or a device: only a regular file of at most 1 MiB. A malloc'd
 * buffer, or NULL with err set. */
static char *read_regular(const char *path, size_t *len, struct ap_error *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ap_error_set(err, "%s: %s", path,
			     errno == ELOOP ? "a symbolic link, not a regular file" : strerror(errno));
		return NULL;
	}
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) < 0) {
		ap_error_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ap_error_set(err, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_size > (1 << 20)) {
		ap_error_set(err, "%s: too big for a cost table (%lld bytes)", path, (long long)st.st_size);
		goto out;
	}
	buf = ap_xmalloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ap_error_set(err, "%s: %s", path, n < 0 ? strerror(errno) : "shorter than its size");
			free(buf);
			buf = NULL;
			goto out;
		}
		got += (size_t)n;
	}
	*len = got;
out:
	close(fd);
	return buf;
}

int ap_cost_load(const char *path, struct ap_cost_table *c, struct ap_error *err)
{
	size_t len;
	char *text = read_regular(path, &len, err);
	if (!text)
		return -1;
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	free(text);
	if (!root)
		return ap_error_set(err, "%s: %s", path, je.text);
	memset(c, 0, sizeof(*c));
	c->spread = -1;
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
		    !json_is_number(ft) || c->n >= AP_COST_MAX_CLASSES || json_integer_value(s) <= 0 ||
		    (c->n && (uint64_t)json_integer_value(s) <= c->size[c->n - 1])) {
			json_decref(root);
			return ap_error_set(err, "%s: class %zu: want ascending \"size\" and numbers "
					    "\"malloc_free_ns\", \"pool_ns\", \"first_touch_ns\"", path, i);
		}
		c->size[c->n] = (uint64_t)json_integer_value(s);
		c->malloc_free_ns[c->n] = json_number_value(mf);
		c->pool_ns[c->n] = json_number_value(pl);
		c->first_touch_ns[c->n] = json_number_value(ft);
		/* The deque's column came with version 3: every class has it,
		 * or none (then shared hits are priced at pool_ns). */
		json_t *sh = json_object_get(cl, "pool_shared_ns");
		if (json_is_number(sh) != (c->n == 0 || c->pool_shared_ns[0] > 0)) {
			if (c->n) {
				json_decref(root);
				return ap_error_set(err, "%s: class %zu: \"pool_shared_ns\" in some classes "
						    "and not in others", path, i);
			}
		}
		c->pool_shared_ns[c->n] = json_is_number(sh) ? json_number_value(sh) : 0;
		const char *why = implausible(c->size[c->n], c->malloc_free_ns[c->n], c->pool_ns[c->n],
					      json_is_number(sh) ? c->pool_shared_ns[c->n] : c->pool_ns[c->n],
					      c->first_touch_ns[c->n]);
		if (why) {
			json_decref(root);
			return ap_error_set(err, "%s: class %zu (size %llu): implausible cost: %s", path, i,
					    (unsigned long long)c->size[c->n], why);
		}
		json_t *ms = json_object_get(cl, "malloc_free_spread"), *ps = json_object_get(cl, "pool_spread");
		json_t *fs = json_object_get(cl, "first_touch_spread");
		json_t *ss = json_object_get(cl, "pool_shared_spread");
		c->pool_shared_spread[c->n] = json_is_number(ss) ? json_number_value(ss) : -1;
		c->malloc_free_spread[c->n] = json_is_number(ms) ? json_number_value(ms) : -1;
		c->pool_spread[c->n] = json_is_number(ps) ? json_number_value(ps) : -1;
		c->first_touch_spread[c->n] = json_is_number(fs) ? json_number_value(fs) : -1;
		c->n++;
	}
	/* When and how it was measured (version 2); a table without them is
	 * used as it is (a fixed one), but not as a cache (ap_cost_get). */
	json_t *at = json_object_get(root, "measured_at"), *rounds = json_object_get(root, "rounds");
	json_t *spread = json_object_get(root, "spread");
	if (json_is_integer(at) && json_is_integer(rounds) && json_is_number(spread)) {
		double sp = json_number_value(spread);
		if (json_integer_value(at) <= 0 || json_integer_value(rounds) <= 0 ||
		    json_integer_value(rounds) > 1000 || !isfinite(sp) || sp < 0 || sp > 100) {
			json_decref(root);
			return ap_error_set(err, "%s: implausible \"measured_at\", \"rounds\" or \"spread\"",
					    path);
		}
		c->measured_at = json_integer_value(at);
		c->rounds = (unsigned)json_integer_value(rounds);
		c->spread = sp;
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
	json_object_set_new(root, "version", json_integer(3));
	if (c->measured_at > 0) {
		char when[64];
		time_t tt = (time_t)c->measured_at;
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", localtime_r(&tt, &tm));
		json_object_set_new(root, "measured", json_string(when));
		json_object_set_new(root, "measured_at", json_integer((json_int_t)c->measured_at));
		json_object_set_new(root, "rounds", json_integer((json_int_t)c->rounds));
		json_object_set_new(root, "spread", json_real(c->spread));
	}
	for (size_t i = 0; i < c->n; i++) {
		json_t *cl = json_object();
		json_object_set_new(cl, "size", json_integer((json_int_t)c->size[i]));
		json_object_set_new(cl, "malloc_free_ns", json_real(c->malloc_free_ns[i]));
		json_object_set_new(cl, "pool_ns", json_real(c->pool_ns[i]));
		json_object_set_new(cl, "first_touch_ns", json_real(c->first_touch_ns[i]));
		if (c->pool_shared_ns[0] > 0)
			json_object_set_new(cl, "pool_shared_ns", json_real(c->pool_shared_ns[i]));
		if (c->malloc_free_spread[i] >= 0)
			json_object_set_new(cl, "malloc_free_spread", json_real(c->malloc_free_spread[i]));
		if (c->pool_spread[i] >= 0)
			json_object_set_new(cl, "pool_spread", json_real(c->pool_spread[i]));
		if (c->first_touch_spread[i] >= 0)
			json_object_set_new(cl, "first_touch_spread", json_real(c->first_touch_spread[i]));
		if (c->pool_shared_ns[0] > 0 && c->pool_shared_spread[i] >= 0)
			json_object_set_new(cl, "pool_shared_spread", json_real(c->pool_shared_spread[i]));
		json_array_append_new(classes, cl);
	}
	json_object_set_new(root, "classes", classes);
	/* Written beside it and renamed over it: a reader never sees half a
	 * table, and whatever was at the path (a FIFO, a link) is replaced,
	 * not written through. */
	char *dir = ap_xstrdup(path);
	int rc = mkdir_p(dir);
	free(dir);
	struct ap_buf tmp = AP_BUF_INIT;
	ap_buf_addf(&tmp, "%s.%ld.tmp", path, (long)getpid());
	if (rc == 0)
		rc = json_dump_file(root, tmp.buf, JSON_INDENT(2));
	if (rc == 0 && rename(tmp.buf, path) < 0) {
		rc = -1;
		int e = errno;
		unlink(tmp.buf);
		errno = e;
	}
	json_decref(root);
	ap_buf_release(&tmp);
	if (rc < 0)
		return ap_error_set(err, "%s: cannot write the cost cache: %s", path, strerror(errno));
	return 0;
}

/* True when nothing is at path (the cache was never written). */
static bool errno_is_missing(const char *path)
{
	struct stat st;
	return lstat(path, &st) < 0 && errno == ENOENT;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *ap_cost_cache_path(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct ap_buf b = AP_BUF_INIT;
	if (xdg && *xdg)
		ap_buf_addf(&b, "%s/allocprof/costs.json", xdg);
	else if (home && *home && is_dir(home))
		ap_buf_addf(&b, "%s/.cache/allocprof/costs.json", home);
	else
		return NULL;	/* (a HOME that is not there is not made) */
	return ap_buf_detach(&b, NULL);
}

int ap_cost_get(struct ap_cost_table *c,
		void (*measuring)(void *ctx, const char *cache, const char *why), void *ctx,
		struct ap_error *err, struct ap_error *save_err)
{
	if (save_err)
		save_err->msg[0] = 0;
	const char *fixed = getenv("ALLOCPROF_TEST_COSTS");
	if (fixed && *fixed)
		return ap_cost_load(fixed, c, err) < 0 ? -1 : 0;
	char *path = ap_cost_cache_path();
	struct ap_error e = { .msg = "" };
	if (path) {
		if (ap_cost_load(path, c, &e) == 0) {
			if (c->measured_at > 0 && c->pool_shared_ns[0] > 0) {
				free(path);
				return 0;
			}
			ap_error_set(&e, c->measured_at > 0
					     ? "%s: measured by an older allocprof, without the cost of a hit "
					       "through the pool's shared deque"
					     : "%s: measured by an older allocprof, without its date and spread",
				     path);
		} else if (errno_is_missing(path)) {
			e.msg[0] = 0;	/* not measured yet */
		}
	}
	if (measuring)
		measuring(ctx, path, e.msg[0] ? e.msg : NULL);
	ap_cost_measure(c);
	if (path && ap_cost_save(path, c, &e) < 0 && save_err)
		*save_err = e;
	free(path);
	return 0;
}
