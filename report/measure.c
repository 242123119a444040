/* The measured replay (ap_measure.h): the script of a trace's allocation
 * sequence, and the interleaved runs of allocprof-replay that time it with
 * and without a pool. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "advise-int.h"
#include "ap_measure.h"
#include "ap_replay.h"
#include "script.h"
#include "work.h"


/* ---- the script ---- */

struct sthread {
	struct ap_rs_op *v;
	size_t n, alloc;
	uint32_t spawner;
	bool started;
	uint64_t window;	/* the window of its last event */
	uint64_t ts;		/* the time of its last event (started) */
	uint32_t *free_slots;	/* slots this thread freed: its next births reuse them */
	size_t nfree, free_alloc;
	/* Its blocks freed by other threads, the last XF_RING of them (the
	 * freeing thread and its FREE op; NULL until the first), and how
	 * many in all; the one its last WAIT on them waited for (b_alloc). */
	struct xfree *xf;
	uint64_t nxf, xf_waited;
	/* Its last XB_RING births (their ops), and how many in all; as a
	 * thread that frees others' blocks, the owner and the birth its last
	 * WAIT on an owner's births waited for (b_free). */
	uint64_t *xb;
	uint64_t nxb;
	uint32_t xb_owner;
	uint64_t xb_waited;
};

/* A producer no further ahead of its consumers than it was in the
 * program: before an allocation, a thread waits for the free (by
 * another thread) of one of its blocks that came XF_LAG such frees before
 * the allocation in the recorded order, every XF_EVERY of them. The
 * program's own queue held it back (a channel of 64 messages); the
 * windows' slack alone let a replayed producer run 2048 events ahead,
 * glibc trimmed what its consumer then freed, and the baseline faulted
 * 40 times as often as the program (a Rust sync_channel of 64: 10,000
 * page faults against 235). Every such wait is for an op before the
 * waiter's in the recorded order, as every other. */
#define XF_RING 32u	/* > XF_LAG + XF_EVERY */
#define XF_LAG 16u
#define XF_EVERY 8u

/* ...and a consumer no nearer its producer than it was: before it frees
 * a block another thread made, a thread waits for that thread's birth
 * XB_LAG before the last one it had made at that point of the recorded
 * order, every XB_EVERY such frees. The producer's lead on its consumers
 * was the program's own queue (a ring of 1024 records drained to half);
 * with nothing holding the consumer back, a replayed consumer that ran
 * faster than its producer (the program's work on the records is not
 * replayed) freed all but the last few, glibc trimmed the producer's
 * arena, and the baseline faulted 3-12 times as often as the program
 * (bench/twins' relay: 15,000-27,000 faults where the recorded runs made
 * 2,200-6,300), how often depending on how the threads took turns, and
 * the verdict with it (bench/twins/README.md, "Session 26"). Every such
 * wait is for an op before the waiter's in the recorded order. */
#define XB_RING 32u	/* > XB_LAG */
#define XB_LAG 16u
#define XB_EVERY 8u

/* A free of a thread's block by another thread: that thread's FREE op. */
struct xfree {
	uint32_t thread;
	uint64_t op;
};

/* Where an object is, and the last op that touched it. */
struct sobj {
	uint32_t slot, thread;
	uint64_t op;
};

/* The objects live in the replay, by their latest block's identity (the
 * replay's block address: an anonymous block's identity in a resolved
 * trace, else its address), in the store of the advisor's walk
 * (advise_objs.c): the last op on each, its index in its thread's ops as
 * the `birth` and the thread as the `thread` of an advise_obj, in a page
 * of its thread's allocations (4 bytes); its slot is that op's. A
 * resolved trace is replayed without the live map (ap_replay.h, "Memory"),
 * about 16 bytes a live block in all where the map and an array of these
 * by the replay's object ids took ~120 (session 28; its bound counts
 * AP_MEASURE_LIVE_BLOCK: ap_measure.h);
 * any other with it, and the store by the blocks' addresses
 * (AP_MEASURE_LIVE_BLOCK_MAP). */

struct builder {
	const struct ap_trace *t;
	const uint32_t *site_of_stack;
	size_t nsites;
	struct sthread *th;
	struct advise_objs *objs;
	/* A replay without the live map (a resolved trace) leaves the joins
	 * to its consumers: the next one (ws_joined's rule). */
	const struct ap_replay_join *joins;
	size_t njoins, next_join;
	uint64_t live_block;	/* what a live block costs here, for the bound */
	uint64_t nslots, nops;
	const double *cyc;
	size_t ncyc, ci;
	uint32_t prev, main_thread;
	bool any;
	uint64_t live, peak;	/* bytes the replay holds, now and at most */
	uint32_t *sync;		/* threads meeting at each barrier */
	size_t nsync, sync_alloc;
	uint64_t limit;		/* events replayed: the first `limit` */
	bool cut;		/* past them */
	bool cut_bytes;		/* cut there by AP_MEASURE_LIVE_BYTES */
	bool stopped;		/* the replay stopped at the cut (b_stop) */
	uint64_t nlive;		/* objects live in the replay now */
	double steps_per_ns;	/* ap_work's speed (0: the gaps are not replayed) */
	uint64_t work_steps;	/* WORK steps in the script */
	bool naps;		/* long gaps become SLEEP ops (b_naps) */
	uint64_t sleep_total;	/* the most they sleep in all */
	struct nap *nap;	/* the SLEEP ops, before b_naps chooses */
	size_t nnap, nap_alloc;
	uint64_t last_ts;	/* the time of the last event replayed */
	uint64_t sleep_ns;	/* what the SLEEPs chosen sleep */
	uint64_t sleep_wanted_ns;	/* ...before sleep_total shortened them */
	struct graph_det *gd;	/* object graphs (measure_graph.c) */
};

/* A SLEEP op, and the time between its thread's events around it. */
struct nap {
	uint32_t thread;
	uint64_t op, gap_ns;
};

struct ap_script {
	int fd;
	uint64_t events;	/* the trace's events it replays (the first ones) */
	bool cut_bytes;		/* fewer than asked: AP_MEASURE_LIVE_BYTES */
	uint64_t live_max;	/* the blocks live that bound allowed */
	double work_ns;		/* the program's time between calls its WORK ops spin */
	uint64_t sleep_ns;	/* the off-CPU time its SLEEP ops sleep */
	uint64_t sleep_wanted_ns;	/* ...would sleep but for the caps */
	uint64_t ops, bytes;
	uint32_t nsites;
	uint32_t nthreads;
	struct ap_graph *graphs;
	size_t ngraphs;
	/* With kinds (ap_script_set_kinds): the script's sites are a site
	 * map's kinds, site_of_kind[k] the site of kind k (nkinds), and the
	 * runner pools a site's every kind. */
	uint32_t *site_of_kind;
	size_t nkinds, nreal;
};

static uint64_t emit(struct builder *b, uint32_t thread, uint32_t w, uint32_t slot, uint64_t n)
{
	struct sthread *s = &b->th[thread];
	AP_ALLOC_GROW(s->v, s->n + 1, s->alloc);
	s->v[s->n] = (struct ap_rs_op){ .w = w, .slot = slot, .n = n };
	b->nops++;
	return s->n++;
}

/* The replay stops at the cut: the events past it would only grow its
 * live map (ap_replay_ops.failed, asked after each batch). */
static int b_stop(void *ctx, struct ap_error *err)
{
	struct builder *b = ctx;
	if (!b->cut)
		return 0;
	b->stopped = true;
	return ap_error_set(err, "(the script's events end here)");
}

static void b_event(void *ctx, size_t i, const struct ap_event *e)
{
	struct builder *b = ctx;
	uint32_t th = e->thread;
	if (i >= b->limit || b->nlive * b->live_block > AP_MEASURE_LIVE_BYTES) {
		if (i < b->limit) {
			b->limit = i;
			b->cut_bytes = true;
		}
		b->cut = true;
		return;
	}
	/* The cycles that fall before this event (a position p lies after
	 * event floor(p)). */
	while (b->ci < b->ncyc && b->cyc[b->ci] < (double)i) {
		emit(b, th, ap_rs_word(AP_RS_CYCLE, 0), 0, 0);
		b->ci++;
	}
	struct sthread *s = &b->th[th];
	uint64_t w = i / AP_RS_WINDOW;
	if (s->started && s->window < w) {
		/* The first event of a window after one with events: meet the
		 * threads that do the same at the window's barrier. */
		AP_ALLOC_GROW(b->sync, (size_t)w + 1, b->sync_alloc);
		while (b->nsync <= w)
			b->sync[b->nsync++] = 0;
		b->sync[w]++;
		emit(b, th, ap_rs_word(AP_RS_SYNC, 0), 0, w);
	}
	s->window = w;
	if (!s->started) {
		s->started = true;
		/* Started by the thread of the event before its first: the
		 * program's main thread starts the run. */
		if (b->any && th != b->main_thread) {
			s->spawner = b->prev;
			emit(b, b->prev, ap_rs_word(AP_RS_SPAWN, th), 0, 0);
		}
	}
	b->prev = th;
	b->any = true;
	/* A gap past AP_GAP_WORK_MAX_NS may be the thread off its CPU: a
	 * SLEEP for now, kept or not by b_naps. */
	if (b->naps && s->ts && e->ts > s->ts + AP_GAP_WORK_MAX_NS) {
		AP_ALLOC_GROW(b->nap, b->nnap + 1, b->nap_alloc);
		b->nap[b->nnap++] = (struct nap){ .thread = th, .gap_ns = e->ts - s->ts,
						  .op = emit(b, th, ap_rs_word(AP_RS_SLEEP, 0), 0, 0) };
	}
	s->ts = e->ts ? e->ts : 1;
	b->last_ts = e->ts;
	/* the program's own time before this call (a realloc's second half
	 * has none); a gap past AP_GAP_WORK_MAX_NS is not work to stand in
	 * for: the thread slept, waited or was preempted, and the program's
	 * calls around it are apart anyway */
	uint64_t ns = ap_gap_work_ns(e->gap);
	if (ns && b->steps_per_ns > 0) {
		uint64_t n = (uint64_t)((double)ns * b->steps_per_ns + 0.5);
		if (n) {
			emit(b, th, ap_rs_word(AP_RS_WORK, 0), 0, n);
			b->work_steps += n;
		}
	}
}

static int nap_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct nap *)a)->gap_ns, y = ((const struct nap *)b)->gap_ns;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The time the program was off its CPU by its own doing, from its wall
 * time less its CPU time and less the time it waited for a CPU (END's
 * run_delay_ns: preempted, by `record` itself on a shared CPU too), goes
 * to the longest gaps between its calls, each up to the gap
 * and AP_RS_SLEEP_MAX_NS, until it is spent (for the replayed share of the
 * run): a program that sleeps between requests comes back to a cold
 * CPU, and pays for that in its page faults and cache misses, which a
 * replay run back to back would not. The others sleep 0 (the runner
 * skips them). The longest gaps are the likeliest sleeps; a gap the
 * program spent computing stays short of the budget when the wall time
 * is mostly CPU time. */
#define NAP_MIN_NS 1e6
static void b_naps(struct builder *b)
{
	const struct ap_trace *t = b->t;
	if (!b->nnap || !t->cpu_ns || !t->has_run_delay || t->end_ns <= t->start_ns)
		return;
	/* A process whose threads never blocked (no voluntary switch) but
	 * to wait for record to take their events (END's sampler_waits) was
	 * never off its CPU by its own doing: what the clocks leave over is
	 * their skew (run_delay as schedstat last counted it: the demo, which
	 * computes only, beside a busy loop on its CPU: -2.3 to +0.02 ms of a
	 * 60 ms run, 1.48 ms once in a test run; bench/twins' arena, pinned
	 * with record to one CPU, 10.8-24.3 ms of 1.7 s) */
	if (t->has_switches && t->nvcsw <= t->sampler_waits)
		return;
	double wall = (double)(t->end_ns - t->start_ns);
	double off = wall - (double)t->cpu_ns - (double)t->run_delay_ns - (double)t->sampler_wait_ns;
	/* Less than NAP_MIN_NS off its CPU in the whole run is no sleep: a
	 * clock's granularity, the sampler's own writes (the demo, which
	 * computes only: 11 us in 13.8 ms since END's cpu_ns counts from
	 * the trace's start, as its wall time does). */
	if (off < NAP_MIN_NS)
		return;
	if (b->cut && b->last_ts > t->start_ns)
		off *= (double)(b->last_ts - t->start_ns) / wall;
	qsort(b->nap, b->nnap, sizeof(*b->nap), nap_cmp);
	size_t k;
	for (k = 0; k < b->nnap && off >= 1; k++) {
		uint64_t ns = b->nap[k].gap_ns < AP_RS_SLEEP_MAX_NS ? b->nap[k].gap_ns : AP_RS_SLEEP_MAX_NS;
		if ((double)ns > off)
			ns = (uint64_t)off;
		b->nap[k].gap_ns = ns;	/* from here on: what it sleeps */
		b->sleep_ns += ns;
		off -= (double)ns;
	}
	/* A server idle for minutes between its requests would make every
	 * run of the replay as long: past AP_RS_SLEEP_TOTAL_NS the naps are
	 * shortened alike (each still sends the CPU idle), so that the
	 * measurement keeps to its budget (ALLOCPROF_REPLAY_SLEEP=N: N ns
	 * at most). */
	b->sleep_wanted_ns = b->sleep_ns;
	double scale = b->sleep_ns > b->sleep_total ? (double)b->sleep_total / (double)b->sleep_ns : 1;
	b->sleep_ns = 0;
	for (size_t i = 0; i < k; i++) {
		uint64_t ns = (uint64_t)((double)b->nap[i].gap_ns * scale);
		b->th[b->nap[i].thread].v[b->nap[i].op].n = ns;
		b->sleep_ns += ns;
	}
}

/* ap_work's steps a nanosecond of this process's thread CPU time: the
 * fastest of five timings of 2^22 steps (a preempted one is slower, not
 * faster), once. */
static double work_steps_per_ns(void)
{
	static double speed;
	if (speed > 0)
		return speed;
	const uint64_t n = 1u << 22;
	double best = 0;
	uint64_t x = 1;
	for (int k = 0; k < 5; k++) {
		struct timespec a, z;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		x = ap_work(n, x);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &z);
		double ns = (double)(z.tv_sec - a.tv_sec) * 1e9 + (double)(z.tv_nsec - a.tv_nsec);
		if (ns > 0 && (double)n / ns > best)
			best = (double)n / ns;
	}
	__asm__ volatile("" : : "r"(x));
	return speed = best;
}

/* The op on `o` that `thread` is about to make must follow the last one:
 * wait for it when another thread made it. */
static void b_after(struct builder *b, const struct sobj *o, uint32_t thread)
{
	if (o->thread == thread)
		return;
	b->th[o->thread].v[o->op].w |= AP_RS_PUBLISH;
	emit(b, thread, ap_rs_word(AP_RS_WAIT, o->thread), 0, o->op);
}

/* Object o's last op is now `op` of `thread`, on its block `id`. */
static void b_put(struct builder *b, uint64_t id, uint32_t thread, uint64_t op)
{
	struct advise_obj ob = { .birth = op, .thread = thread };
	advise_objs_set(b->objs, id, &ob, thread, false);
}

/* The live object whose latest block is `id`, out of the store into *o:
 * false when none is (the old block of a join, whose object went on). */
static bool b_take(struct builder *b, uint64_t id, struct sobj *o)
{
	struct advise_obj ob;
	if (advise_objs_take(b->objs, id, &ob) == AP_OBJS_NONE)
		return false;
	o->thread = ob.thread;
	o->op = ob.birth;
	o->slot = b->th[o->thread].v[o->op].slot;
	return true;
}

static void b_grown(struct builder *b, const struct ap_event *e, struct sobj *o, uint64_t old_size,
		    const struct ap_replay_block *blk);

/* A growth by copy at event i (ap_replay_join) that a replay without the
 * live map leaves to the builder: the new block blk continues the object
 * of the join's old block, if it is live; true when it did. */
static bool b_joined(struct builder *b, size_t i, const struct ap_event *e,
		     const struct ap_replay_block *blk)
{
	const struct ap_replay_join *jn = advise_join_at(b->joins, b->njoins, &b->next_join, i);
	struct sobj o;
	if (!jn || !b_take(b, jn->addr, &o))
		return false;
	b_grown(b, e, &o, jn->size, blk);
	return true;
}

static void b_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *blk)
{
	struct builder *b = ctx;
	if (b->cut)
		return;
	if (b->njoins && b_joined(b, i, e, blk))
		return;
	struct sthread *s = &b->th[e->thread];
	uint32_t slot = s->nfree ? s->free_slots[--s->nfree] : (uint32_t)b->nslots++;
	uint32_t site = AP_RS_NOSITE;
	if (blk->stack < b->t->nstacks && b->site_of_stack[blk->stack] < b->nsites &&
	    b->site_of_stack[blk->stack] < AP_RS_NOSITE)
		site = b->site_of_stack[blk->stack];
	unsigned type = e->kind == AP_KIND_CALLOC ? AP_RS_CALLOC : e->kind == AP_KIND_ALIGNED ? AP_RS_ALIGNED
											      : AP_RS_MALLOC;
	if (s->nxf > XF_LAG && s->nxf - XF_LAG >= s->xf_waited + XF_EVERY) {
		uint64_t k = s->nxf - XF_LAG;
		uint32_t ft = s->xf[(k - 1) % XF_RING].thread;
		uint64_t fop = s->xf[(k - 1) % XF_RING].op;
		b->th[ft].v[fop].w |= AP_RS_PUBLISH;
		emit(b, e->thread, ap_rs_word(AP_RS_WAIT, ft), 0, fop);
		s->xf_waited = k;
	}
	uint64_t bop = emit(b, e->thread, ap_rs_word(type, site), slot, blk->size);
	graph_det_birth(b->gd, e->thread, slot, site, bop);
	b_put(b, blk->addr, e->thread, bop);
	b->nlive++;
	if (!s->xb)
		s->xb = ap_xmalloc(XB_RING * sizeof(*s->xb));
	s->xb[s->nxb++ % XB_RING] = bop;
	b->live += blk->size;
	if (b->live > b->peak)
		b->peak = b->live;
}

/* Object o, of a block of old_size, grew to blk by event e. */
static void b_grown(struct builder *b, const struct ap_event *e, struct sobj *o, uint64_t old_size,
		    const struct ap_replay_block *blk)
{
	b->live += blk->size - old_size;
	if (b->live > b->peak)
		b->peak = b->live;
	b_after(b, o, e->thread);
	o->thread = e->thread;
	/* a realloc, or a growth by copy (ap_replay_join: no AP_EVF_REALLOC) */
	unsigned type = (e->flags & AP_EVF_REALLOC) ? AP_RS_REALLOC : AP_RS_MOVE;
	o->op = emit(b, e->thread, ap_rs_word(type, 0), o->slot, blk->size);
	b_put(b, blk->addr, o->thread, o->op);
}

static void b_grow(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *old,
		   const struct ap_replay_block *blk)
{
	struct builder *b = ctx;
	if (b->cut)
		return;
	struct sobj o;
	/* (the old block is live: the replay matched it) */
	if (!b_take(b, old->addr, &o)) {
		b_alloc(ctx, i, e, blk);
		return;
	}
	b_grown(b, e, &o, old->size, blk);
}

static void b_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *blk)
{
	(void)i;
	struct builder *b = ctx;
	if (b->cut)
		return;
	struct sobj taken, *o = &taken;
	if (!b_take(b, blk->addr, &taken))
		return;	/* the old block of a join: its object went on */
	b_after(b, o, e->thread);
	struct sthread *s = &b->th[e->thread];
	if (o->thread != e->thread) {
		/* (XB_LAG: held as far behind its producer as it was) */
		struct sthread *owner = &b->th[o->thread];
		if (owner->nxb > XB_LAG) {
			uint64_t k = owner->nxb - XB_LAG;
			uint64_t bop = owner->xb[(k - 1) % XB_RING];
			/* (not when the block's own birth, waited for above,
			 * is that one or later: a hand-over without a lead) */
			if (bop > o->op && (s->xb_owner != o->thread || k >= s->xb_waited + XB_EVERY)) {
				owner->v[bop].w |= AP_RS_PUBLISH;
				emit(b, e->thread, ap_rs_word(AP_RS_WAIT, o->thread), 0, bop);
				s->xb_owner = o->thread;
				s->xb_waited = k;
			}
		}
	}
	uint64_t op = emit(b, e->thread, ap_rs_word(AP_RS_FREE, 0), o->slot, 0);
	if (o->thread != e->thread) {
		struct sthread *owner = &b->th[o->thread];
		if (!owner->xf)
			owner->xf = ap_xmalloc(XF_RING * sizeof(*owner->xf));
		owner->xf[owner->nxf % XF_RING].thread = e->thread;
		owner->xf[owner->nxf % XF_RING].op = op;
		owner->nxf++;
	}
	graph_det_end(b->gd, e->thread, o->slot);
	b->nlive--;
	b->live -= blk->size;
	AP_ALLOC_GROW(s->free_slots, s->nfree + 1, s->free_alloc);
	s->free_slots[s->nfree++] = o->slot;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* MemAvailable of /proc/meminfo in bytes, 0 when unknown
 * (ALLOCPROF_TEST_MEMAVAIL, in bytes, stands in for it in tests). */
static uint64_t mem_available(void)
{
	char line[256];
	unsigned long long kb = 0;
	const char *test = getenv("ALLOCPROF_TEST_MEMAVAIL");
	if (test && *test)
		return strtoull(test, NULL, 10);
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

static uint32_t main_thread_of(const struct ap_trace *t)
{
	for (size_t k = 0; k < t->nthreads; k++)
		if (t->threads[k].tid == t->pid)
			return (uint32_t)k;
	return 0;
}

struct ap_script *ap_script_build(const struct ap_trace *t, const uint32_t *site_of_stack,
				  size_t nsites, const struct ap_replay_join *joins, size_t njoins,
				  const double *cycles, size_t ncycles, uint64_t max_events,
				  uint64_t sleep_max, struct ap_error *err)
{
	if (t->rate > 1) {
		ap_error_set(err, "a sampled trace does not hold the allocation sequence: record with --all");
		return NULL;
	}
	if (!t->nthreads || !t->nev) {
		ap_error_set(err, "no allocations to replay");
		return NULL;
	}
	if (t->nthreads > AP_RS_ARG_MAX) {
		ap_error_set(err, "too many threads to replay (%zu)", t->nthreads);
		return NULL;
	}
	struct ap_script *s = NULL;
	struct builder b = { .t = t, .site_of_stack = site_of_stack, .nsites = nsites,
			     .cyc = cycles, .ncyc = ncycles,
			     .limit = max_events && t->nev > max_events ? max_events : t->nev };
	b.th = ap_xcalloc(t->nthreads, sizeof(*b.th));
	b.gd = graph_det_new(t->nthreads, nsites);
	for (size_t k = 0; k < t->nthreads; k++) {
		b.th[k].spawner = UINT32_MAX;
		b.th[k].xb_owner = UINT32_MAX;
	}
	/* The program's time between its calls, spun between them: only
	 * with ALLOCPROF_REPLAY_WORK=1 for now. With the gaps of the
	 * compactor's windows (the mean of 64 records each) it made the
	 * replay's intervals wider and hid more of a pool's locked deque
	 * than the program's own bursts of work do (bench/twins' tokens:
	 * "within noise" where its twin costs 8 % more, on a loaded
	 * machine); on a quiet one, with the means or per-record gaps,
	 * prodcons measured 1.9x its twin's saving where back to back
	 * measured 0.72x (bench/twins/README.md, run X). */
	const char *wk = getenv("ALLOCPROF_REPLAY_WORK");
	if (t->ngap_records && wk && !strcmp(wk, "1"))
		b.steps_per_ns = work_steps_per_ns();
	/* The program's time off its CPU, slept where it was likeliest
	 * (b_naps): for a program of one thread, whose wall time less its
	 * CPU time is that thread's (in one of several, the time a thread
	 * waits for another is the replay's to wait too).
	 * ALLOCPROF_REPLAY_SLEEP=0 replays without, =N sleeps N ns at most
	 * in all (AP_RS_SLEEP_TOTAL_NS by default). */
	const char *sl = getenv("ALLOCPROF_REPLAY_SLEEP");
	char *sl_end = NULL;
	unsigned long long sl_n = sl && *sl ? strtoull(sl, &sl_end, 10) : 0;
	b.sleep_total = sl_end && !*sl_end && sl_n < AP_RS_SLEEP_TOTAL_NS ? sl_n : AP_RS_SLEEP_TOTAL_NS;
	/* (a cap under a nanosecond would sleep nothing, as 0 does) */
	if (sleep_max && sleep_max < b.sleep_total)
		b.sleep_total = sleep_max;
	b.naps = t->nthreads == 1 && b.sleep_total > 0;
	b.main_thread = main_thread_of(t);
	static const struct ap_replay_ops ops = {
		.event = b_event,
		.alloc = b_alloc,
		.grow = b_grow,
		.free = b_free,
		.failed = b_stop,
	};
	struct ap_replay_consumer c = { &ops, &b };
	b.objs = advise_objs_new(1);
	/* A resolved trace is replayed without the live map, and the joins
	 * are the builder's to apply; any other keeps the map (its blocks'
	 * addresses name them), and joins. */
	bool map = !t->resolved;
	b.live_block = map ? AP_MEASURE_LIVE_BLOCK_MAP : AP_MEASURE_LIVE_BLOCK;
	if (!map) {
		b.joins = joins;
		b.njoins = njoins;
	}
	int rrc = map ? ap_replay_joined(t, joins, njoins, &c, 1, NULL, err) : ap_replay(t, &c, 1, NULL, err);
	if (rrc < 0 && !b.stopped)
		goto out;
	b_naps(&b);

	/* The replay holds what the program held: it must fit. */
	uint64_t avail = mem_available();
	if (avail && b.peak > avail / 2) {
		char b1[32], b2[32];
		ap_format_bytes(b1, sizeof(b1), (double)b.peak);
		ap_format_bytes(b2, sizeof(b2), (double)avail);
		ap_error_set(err, "the run held up to %s at once, more than half the %s of memory available "
			     "for its replay", b1, b2);
		goto out;
	}

	int fd = memfd_create("allocprof-replay", MFD_CLOEXEC);
	if (fd < 0) {
		ap_error_set(err, "replay script: %s", strerror(errno));
		goto out;
	}
	struct ap_rs_header h = { .version = AP_RS_VERSION, .nthreads = (uint32_t)t->nthreads,
				  .nslots = b.nslots, .nops = b.nops, .main_thread = b.main_thread,
				  .nsyncs = b.nsync,
				  .nsites = (uint32_t)(nsites < AP_RS_NOSITE ? nsites : AP_RS_NOSITE) };
	memcpy(h.magic, AP_RS_MAGIC, 8);
	int rc = write_all(fd, &h, sizeof(h));
	uint64_t first = 0;
	for (size_t k = 0; k < t->nthreads && !rc; k++) {
		struct ap_rs_thread ti = { .first = first, .nops = b.th[k].n, .spawner = b.th[k].spawner };
		if (k == b.main_thread)
			ti.spawner = UINT32_MAX;
		first += b.th[k].n;
		rc = write_all(fd, &ti, sizeof(ti));
	}
	if (!rc && b.nsync) {
		uint64_t pad = 0, n = b.nsync * sizeof(*b.sync);
		rc = write_all(fd, b.sync, n);
		if (!rc && ap_rs_sync_bytes(b.nsync) > n)
			rc = write_all(fd, &pad, ap_rs_sync_bytes(b.nsync) - n);
	}
	for (size_t k = 0; k < t->nthreads && !rc; k++)
		rc = write_all(fd, b.th[k].v, b.th[k].n * sizeof(*b.th[k].v));
	if (rc) {
		ap_error_set(err, "replay script: %s", strerror(errno));
		close(fd);
		goto out;
	}
	/* For looking at a replay by hand: allocprof-replay 3 SITE CAP 3<FILE */
	const char *keep = getenv("ALLOCPROF_KEEP_SCRIPT");
	if (keep && *keep) {
		int kfd = open(keep, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		off_t off = 0;
		struct stat st;
		if (kfd >= 0 && fstat(fd, &st) == 0)
			while (off < st.st_size && sendfile(kfd, fd, &off, (size_t)(st.st_size - off)) > 0)
				;
		if (kfd >= 0)
			close(kfd);
	}
	s = ap_xcalloc(1, sizeof(*s));
	s->fd = fd;
	s->events = b.limit;
	s->cut_bytes = b.cut_bytes;
	s->live_max = AP_MEASURE_LIVE_BYTES / b.live_block;
	s->work_ns = b.steps_per_ns > 0 ? (double)b.work_steps / b.steps_per_ns : 0;
	s->sleep_ns = b.sleep_ns;
	s->sleep_wanted_ns = b.sleep_wanted_ns;
	s->ops = b.nops;
	s->bytes = ap_rs_size(h.nthreads, b.nsync, b.nops);
	s->nsites = h.nsites;
	s->nthreads = h.nthreads;
	s->ngraphs = graph_det_finish(b.gd, &s->graphs);
out:
	graph_det_free(b.gd);
	for (size_t k = 0; k < t->nthreads; k++) {
		free(b.th[k].v);
		free(b.th[k].free_slots);
		free(b.th[k].xf);
		free(b.th[k].xb);
	}
	free(b.th);
	advise_objs_free(b.objs);
	free(b.sync);
	free(b.nap);
	return s;
}

void ap_script_free(struct ap_script *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s->graphs);
	free(s->site_of_kind);
	free(s);
}

void ap_script_set_kinds(struct ap_script *s, const uint32_t *site_of_kind, size_t nkinds, size_t nsites)
{
	free(s->site_of_kind);
	s->site_of_kind = NULL;
	s->nkinds = s->nreal = 0;
	if (!site_of_kind || nkinds <= nsites)
		return;
	s->site_of_kind = ap_xmalloc(nkinds * sizeof(*s->site_of_kind));
	memcpy(s->site_of_kind, site_of_kind, nkinds * sizeof(*s->site_of_kind));
	s->nkinds = nkinds;
	s->nreal = nsites;
}

/* The runner's SITE of `site`: it, and its other kinds ("3,17,18"); "-1"
 * for none. */
static void site_arg(const struct ap_script *s, long site, char *b, size_t n)
{
	size_t k = (size_t)snprintf(b, n, "%ld", site);
	for (size_t j = s->nreal; site >= 0 && j < s->nkinds && k + 12 < n; j++)
		if (s->site_of_kind[j] == (uint32_t)site)
			k += (size_t)snprintf(b + k, n - k, ",%zu", j);
}

const struct ap_graph *ap_script_graphs(const struct ap_script *s, size_t *n)
{
	*n = s->ngraphs;
	return s->graphs;
}

uint64_t ap_script_ops(const struct ap_script *s)
{
	return s->ops;
}

double ap_script_work_ns(const struct ap_script *s)
{
	return s->work_ns;
}

uint64_t ap_script_sleep_ns(const struct ap_script *s)
{
	return s->sleep_ns;
}

uint64_t ap_script_sleep_wanted_ns(const struct ap_script *s)
{
	return s->sleep_wanted_ns;
}

uint64_t ap_script_events(const struct ap_script *s)
{
	return s->events;
}

bool ap_script_cut_bytes(const struct ap_script *s)
{
	return s->cut_bytes;
}

uint64_t ap_script_live_max(const struct ap_script *s)
{
	return s->live_max;
}

unsigned ap_script_threads(const struct ap_script *s)
{
	return s->nthreads;
}

uint64_t ap_script_bytes(const struct ap_script *s)
{
	return s->bytes;
}

/* ---- the runs ---- */

/* Runs of the baseline under the sampler. */
#define REC_RUNS 3

/* What a signal that ends the process must not leave behind: the runner
 * running (it would replay on, orphaned, for seconds) and the directory
 * measure_recorded records into (a --all trace in /tmp). Set while they
 * exist; a handler of SIGINT, SIGTERM and SIGHUP installed around the
 * runs (ap_measure) kills and reaps the one, removes the other and gives
 * the signal back to the action it had (the default ends the process; the
 * TUI's curses restores the terminal); an exit while they exist (the TUI
 * quit while its worker measures) does the same at exit. Async-signal-
 * safe: raw system calls on a path set in advance. */
static volatile pid_t live_runner;
static char live_dir[PATH_MAX];
static volatile sig_atomic_t live_dir_set;
static const int end_sigs[] = { SIGINT, SIGTERM, SIGHUP };
#define N_END_SIGS (sizeof(end_sigs) / sizeof(end_sigs[0]))
static struct sigaction end_old[N_END_SIGS];
static int end_installed;	/* ap_measure calls nest only in tests */

/* Removes dir and the regular files in it (the recorded runs' traces),
 * with no allocation: getdents64 and unlinkat. */
static void remove_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[4096];
		long n;
		/* Unlinking while listing may skip names: list until empty. */
		for (int pass = 0; pass < 16; pass++) {
			int removed = 0;
			lseek(fd, 0, SEEK_SET);
			while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
				for (long off = 0; off < n;) {
					struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
					off += e->d_reclen;
					const char *nm = e->d_name;
					if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
						continue;
					removed += unlinkat(fd, nm, 0) == 0;
				}
			if (!removed)
				break;
		}
		close(fd);
	}
	rmdir(dir);
}

static void end_leftovers(void)
{
	pid_t p = live_runner;
	if (p > 0) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		live_runner = 0;
	}
	if (live_dir_set) {
		remove_dir(live_dir);
		live_dir_set = 0;
	}
}

static void on_end_signal(int sig)
{
	int e = errno;
	end_leftovers();
	for (size_t i = 0; i < N_END_SIGS; i++)
		if (end_sigs[i] == sig)
			sigaction(sig, &end_old[i], NULL);
	/* Pending until the handler returns, then the old action's. */
	raise(sig);
	errno = e;
}

static void end_handlers(bool on)
{
	static bool at_exit;
	if (on && end_installed++ == 0) {
		if (!at_exit) {
			atexit(end_leftovers);
			at_exit = true;
		}
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_end_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t i = 0; i < N_END_SIGS; i++) {
			sigaction(end_sigs[i], NULL, &end_old[i]);
			/* A signal the caller ignores stays ignored. */
			if (end_old[i].sa_handler != SIG_IGN)
				sigaction(end_sigs[i], &sa, NULL);
		}
	} else if (!on && --end_installed == 0) {
		for (size_t i = 0; i < N_END_SIGS; i++)
			if (end_old[i].sa_handler != SIG_IGN)
				sigaction(end_sigs[i], &end_old[i], NULL);
	}
}

void ap_measure_opts_init(struct ap_measure_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->budget_ns = 15e9;
	o->min_rounds = 6;
	o->max_rounds = 50;
	o->touch = 1;
	o->whole_site = -1;
}

struct sample {
	double cpu_ns, wall_ns, minflt, maxrss_kb, calls, hits, cpus, wakes;
	double took_ns;	/* the run's wall time as the budget counts it: fork to reap */
};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Runs the runner with args (args[0] its name) and reads what it says
 * into buf: 0 when it exited 0. With `sampler`, under liballocprof.so
 * recording every allocation into a trace in `dir`; with keep_fd >= 0,
 * that descriptor left open for it (the script: the caller formats its
 * number, keep_fd's dup, into args through fd_arg). With kill_at (a
 * CLOCK_MONOTONIC time in ns; 0: none), a runner still running then is
 * killed: -2, err saying so. */
static int runner_say(const char *runner, const char *const *args, int keep_fd, char *fd_arg,
		      size_t fd_arg_len, const char *sampler, const char *dir, double touch, const char *whole,
		      double kill_at, char *buf, size_t bufsz, struct ap_error *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return ap_error_set(err, "measured replay: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return ap_error_set(err, "measured replay: %s", strerror(errno));
	}
	if (pid == 0) {
		if (keep_fd >= 0)
			snprintf(fd_arg, fd_arg_len, "%d", dup(keep_fd));	/* without close-on-exec */
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		/* glibc's debugging aids change what malloc costs (meson's test
		 * runner sets MALLOC_PERTURB_); the tunables stay the user's. */
		unsetenv("LD_PRELOAD");
		unsetenv("MALLOC_PERTURB_");
		unsetenv("MALLOC_CHECK_");
		unsetenv("ALLOCPROF_REPLAY_TOUCH");
		unsetenv("ALLOCPROF_REPLAY_WHOLE");
		if (whole)
			setenv("ALLOCPROF_REPLAY_WHOLE", whole, 1);
		if (touch >= 0 && touch < 1) {
			char ts[32];
			snprintf(ts, sizeof(ts), "%.6f", touch);
			setenv("ALLOCPROF_REPLAY_TOUCH", ts, 1);
		}
		if (sampler) {
			/* sampler/README.md's separate variables: the trace
			 * written through its descriptor. record's one variable
			 * would have the sampler fill a ring for a drain that
			 * is not there, wait a second for it and take it over:
			 * the demo's replay of 2.4 ms then took 1.0 s, and its
			 * CPU under the sampler counted the waits' wake-ups and
			 * the takeover as recording's cost (26.6 ms against the
			 * 16.8 the recorded run took in all). */
			char path[PATH_MAX + 32], self[32];
			snprintf(path, sizeof(path), "%s/replay.trace", dir);
			snprintf(self, sizeof(self), "%d", (int)getpid());
			unsetenv("ALLOCPROF");
			setenv("ALLOCPROF_OUTPUT", path, 1);
			setenv("ALLOCPROF_PID", self, 1);
			setenv("ALLOCPROF_RATE", "1", 1);
			setenv("ALLOCPROF_MAX_DEPTH", "64", 1);
			setenv("ALLOCPROF_NO_CHILDREN", "1", 1);
			setenv("LD_PRELOAD", sampler, 1);
		}
		execv(runner, (char *const *)args);
		dprintf(2, "allocprof-replay: %s: %s\n", runner, strerror(errno));
		_exit(127);
	}
	live_runner = pid;
	close(pfd[1]);
	size_t len = 0;
	bool killed = false;
	for (;;) {
		if (kill_at > 0 && !killed) {
			double left = kill_at - now_ns();
			struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
			int ms = left <= 0 ? 0 : left >= 1e9 * 3600 ? 3600 * 1000 : (int)(left / 1e6) + 1;
			int pr = poll(&pf, 1, ms);
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0) {
				if (now_ns() < kill_at)
					continue;
				kill(pid, SIGKILL);
				killed = true;
			}
		}
		ssize_t r = read(pfd[0], buf + len, bufsz - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == bufsz - 1)
			break;
	}
	buf[len] = 0;
	close(pfd[0]);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	live_runner = 0;
	if (w < 0)	/* reaped by on_end_signal: the caller goes on, or not */
		return ap_error_set(err, "measured replay: stopped");
	if (killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		ap_error_set(err, "measured replay: a run still going at the budget's end, stopped");
		return -2;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		if (WIFSIGNALED(st))
			return ap_error_set(err, "measured replay: the runner died of %s",
					    strsignal(WTERMSIG(st)));
		char *nl = strchr(buf, '\n');
		if (nl)
			*nl = 0;
		return ap_error_set(err, "measured replay failed: %s",
				    buf[0] ? buf : "the runner exited with an error");
	}
	return 0;
}

/* One run of the runner: site -1 is the baseline; free_list serves the
 * site from each thread's free list, not a vpool. With `sampler`, under
 * liballocprof.so recording every allocation into a trace in `dir`. */
static int run_once(const struct ap_script *s, const char *runner, long site, bool free_list,
		    const struct ap_graph *graph, uint64_t cap, const char *classes, bool round_up,
		    const char *sampler,
		    const char *dir, double touch, long whole, double kill_at, struct sample *out,
		    struct ap_error *err)
{
	double t0 = now_ns();
	char a1[16] = "", a2[400], a3[24], buf[512], members[AP_GRAPH_MAX_MEMBERS * 12 + 1] = "";
	char ws[400];
	/* (a graph's root is one kind; a site's pool has every kind) */
	if (graph)
		snprintf(a2, sizeof(a2), "%ld", site);
	else
		site_arg(s, site, a2, sizeof(a2));
	if (whole >= 0)
		site_arg(s, whole, ws, sizeof(ws));
	snprintf(a3, sizeof(a3), "%llu", (unsigned long long)cap);
	const char *cl = classes && *classes ? classes : NULL;
	const char *ru = cl && round_up ? "--round-up" : NULL;
	const char *plain[] = { "allocprof-replay", a1, a2, a3, cl, NULL };
	const char *plain_ru[] = { "allocprof-replay", "--round-up", a1, a2, a3, cl, NULL };
	const char *fl[] = { "allocprof-replay", "--free-list", a1, a2, a3, cl, NULL };
	const char *fl_ru[] = { "allocprof-replay", "--free-list", "--round-up", a1, a2, a3, cl, NULL };
	const char *gr[] = { "allocprof-replay", "--graph", members, a1, a2, a3, NULL };
	for (uint32_t k = 0; graph && k < graph->nmembers; k++)
		snprintf(members + strlen(members), sizeof(members) - strlen(members), "%s%u", k ? "," : "",
			 graph->members[k]);
	const char *const *args = graph ? gr : free_list ? (ru ? fl_ru : fl) : ru ? plain_ru : plain;
	int rc = runner_say(runner, args, s->fd, a1, sizeof(a1), sampler, dir, touch, whole >= 0 ? ws : NULL, kill_at, buf,
			    sizeof(buf), err);
	if (rc < 0)
		return rc;
	/* The result is the line that starts with cpu_ns= (a preloaded
	 * sampler may have said something first). */
	char *res = strstr(buf, "cpu_ns=");
	if (res && res != buf && res[-1] != '\n')
		res = NULL;
	char *nl = strchr(res ? res : buf, '\n');
	if (nl)
		*nl = 0;
	unsigned long long cpu, wall, calls, hits;
	long minflt, majflt, maxrss, rss0;
	unsigned ncpus = 0;
	unsigned long long wakes = 0;
	if (!res || sscanf(res, "cpu_ns=%llu wall_ns=%llu minflt=%ld majflt=%ld maxrss_kb=%ld rss0_kb=%ld "
			"calls=%llu hits=%llu", &cpu, &wall, &minflt, &majflt, &maxrss, &rss0, &calls,
		   &hits) != 8)
		return ap_error_set(err, "measured replay: the runner said '%s'", buf);
	const char *c = strstr(res, " cpus=");
	if (c)
		sscanf(c, " cpus=%u", &ncpus);
	if ((c = strstr(res, " wakes=")))
		sscanf(c, " wakes=%llu", &wakes);
	*out = (struct sample){ .cpu_ns = (double)cpu, .wall_ns = (double)wall, .minflt = (double)minflt,
				.maxrss_kb = (double)(maxrss - rss0), .calls = (double)calls,
				.hits = (double)hits, .cpus = (double)ncpus, .wakes = (double)wakes,
				.took_ns = now_ns() - t0 };
	return 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ap_median_interval(double *d, size_t n, double *lo, double *hi)
{
	qsort(d, n, sizeof(*d), dbl_cmp);
	/* The largest k with P(Bin(n, 1/2) <= k - 1) <= 0.025: the median is
	 * in [d(k), d(n+1-k)] with confidence 1 - 2 P(Bin <= k - 1). With
	 * too few values for 95 %, the whole range, and what it gives. */
	double p = ldexp(1.0, -(int)n), cdf = p, conf = 1 - 2 * p;
	size_t k = 1;
	for (size_t j = 1; j < n / 2; j++) {
		p = p * (double)(n - j + 1) / (double)j;	/* P(Bin = j) */
		if (cdf + p > 0.025)
			break;
		cdf += p;
		k = j + 1;
		conf = 1 - 2 * cdf;
	}
	*lo = d[k - 1];
	*hi = d[n - k];
	return conf;
}

static void cost_of(struct sample *v, size_t n, struct ap_run_cost *c)
{
	double *x = ap_xmalloc(n * sizeof(*x));
#define MED(field)                                  \
	do {                                        \
		for (size_t r = 0; r < n; r++)      \
			x[r] = v[r].field;          \
		c->field = median(x, n);            \
	} while (0)
	MED(cpu_ns);
	MED(wall_ns);
	MED(minflt);
	MED(maxrss_kb);
	MED(calls);
	MED(hits);
	MED(cpus);
	MED(wakes);
#undef MED
	c->minflt_lo = c->minflt_hi = n ? v[0].minflt : 0;
	for (size_t r = 1; r < n; r++) {
		c->minflt_lo = fmin(c->minflt_lo, v[r].minflt);
		c->minflt_hi = fmax(c->minflt_hi, v[r].minflt);
	}
	/* the ceil(n/4)-th most */
	for (size_t r = 0; r < n; r++)
		x[r] = v[r].minflt;
	qsort(x, n, sizeof(*x), dbl_cmp);
	c->minflt_q3 = n ? x[n - (n + 3) / 4] : 0;
	free(x);
}

/* The budget's bookkeeping in one call of ap_measure: its deadline (0:
 * none) and what it left out. */
struct budget {
	double dl;
	struct ap_measure_cut cut;
};

/* Whether a run expected to take `expect` ns, with `reserve` ns more
 * kept for what must follow, ends by the deadline (an expectation of 0,
 * unknown, fits while the deadline is still ahead). */
static bool fits(const struct budget *bg, double expect, double reserve)
{
	if (bg->dl <= 0)
		return true;
	double now = now_ns();
	return expect <= 0 ? now < bg->dl : now + expect + reserve <= bg->dl;
}

/* A probe of the runner's (`allocprof-replay FLAG`, which prints
 * `KEY=N ...`): the median of AP_MEASURE_PROBES of its N; 0 when none said. The
 * switch probe: what one blocking hand-over between two threads costs on
 * the replay's CPUs; the fault probe: what a page fault of a page given
 * back and written again costs. Each within the budget with `reserve`
 * left (AP_MEASURE_PROBE_NS the first, what the last took after); one left out sets bg->cut.probes. */
static double probe_cost(const char *runner, const int *stop, const char *flag, const char *key,
			 struct budget *bg, double reserve)
{
	double v[AP_MEASURE_PROBES], took = AP_MEASURE_PROBE_NS;
	size_t n = 0, kl = strlen(key);
	for (size_t k = 0; k < AP_MEASURE_PROBES && !(stop && __atomic_load_n(stop, __ATOMIC_RELAXED)); k++) {
		if (!fits(bg, took, reserve)) {
			bg->cut.probes = true;
			break;
		}
		char buf[256], *end;
		struct ap_error e2;
		const char *args[] = { "allocprof-replay", flag, NULL };
		double t0 = now_ns();
		int rc = runner_say(runner, args, -1, NULL, 0, NULL, NULL, 1, NULL, 0, buf, sizeof(buf), &e2);
		took = now_ns() - t0;
		if (rc != 0 || strncmp(buf, key, kl) || buf[kl] != '=')
			continue;
		unsigned long long ns = strtoull(buf + kl + 1, &end, 10);
		if (end != buf + kl + 1 && ns)
			v[n++] = (double)ns;
	}
	return n ? median(v, n) : 0;
}

/* A run under the sampler takes a few times the wall time of the
 * baseline's (the demo's 24-26 ms against 7, under strace): the first
 * is expected to take AP_MEASURE_REC_RUNS times the baseline's and
 * AP_MEASURE_REC_NS. (Under record's one variable, with no drain, they
 * took a second more: bench/twins' prodcons 1.36 s against 0.33, the
 * demo's 1.00 s against 2.4 ms; run_once says why no longer.) */

/* The baseline under the sampler (--all), `runs` times, in a directory
 * of its own: what recording costs on this sequence. Each within the
 * budget with `reserve` left (the first: AP_MEASURE_REC_RUNS); one left out sets bg->cut.recorded. */
static void measure_recorded(const struct ap_script *s, const struct ap_measure_opts *o, size_t runs,
			     struct ap_run_cost *recorded, struct budget *bg, double base_ns,
			     double reserve)
{
	struct sample rec[REC_RUNS];
	size_t nrec = 0;
	double expect = AP_MEASURE_REC_RUNS * base_ns + AP_MEASURE_REC_NS;
	if (!fits(bg, expect, reserve)) {
		bg->cut.recorded = true;
		return;
	}
	const char *tmpdir = getenv("TMPDIR");
	char dirbuf[PATH_MAX];
	snprintf(dirbuf, sizeof(dirbuf), "%s/allocprof-replay-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(dirbuf))
		return;
	memcpy(live_dir, dirbuf, sizeof(live_dir));
	live_dir_set = 1;
	struct ap_error e2;
	for (size_t k = 0; k < runs && k < REC_RUNS; k++) {
		if (!fits(bg, expect, reserve)) {
			/* (left out only when none was made: `recorded` is
			 * then absent; fewer runs are a median of fewer) */
			bg->cut.recorded = !nrec;
			break;
		}
		double t0 = now_ns();
		if (run_once(s, o->runner, -1, false, NULL, 0, NULL, false, o->sampler, dirbuf, o->touch, o->whole_site, 0,
			     &rec[nrec], &e2) == 0)
			nrec++;
		expect = now_ns() - t0;
	}
	live_dir_set = 0;
	remove_dir(dirbuf);
	if (nrec)
		cost_of(rec, nrec, recorded);
}

/* Pins the calling thread to the first k CPUs of its affinity mask, which
 * *saved gets. Returns whether it did: not when the mask has k CPUs or
 * fewer, or cannot be read or set (the runs are then made as they are). */
static bool pin_first(unsigned k, cpu_set_t *saved)
{
	if (!k || sched_getaffinity(0, sizeof(*saved), saved) < 0 || (unsigned)CPU_COUNT(saved) <= k)
		return false;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (unsigned c = 0, got = 0; c < CPU_SETSIZE && got < k; c++)
		if (CPU_ISSET(c, saved)) {
			CPU_SET(c, &set);
			got++;
		}
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

static int measure_runs(const struct ap_script *s, const struct ap_measure_job *jobs, size_t n,
			const struct ap_measure_opts *o, struct ap_measured *out,
			struct ap_run_cost *base, struct ap_run_cost *recorded, struct ap_error *err);

int ap_measure(const struct ap_script *s, const struct ap_measure_job *jobs, size_t n,
	       const struct ap_measure_opts *o, struct ap_measured *out, struct ap_run_cost *base,
	       struct ap_run_cost *recorded, struct ap_error *err)
{
	/* A threaded replay costs what its threads cost on the CPUs they
	 * share: the runs go where o->cpus says (a fork inherits the mask). */
	cpu_set_t saved;
	bool pinned = pin_first(o->cpus, &saved);
	end_handlers(true);
	int rc = measure_runs(s, jobs, n, o, out, base, recorded, err);
	end_handlers(false);
	if (pinned)
		sched_setaffinity(0, sizeof(saved), &saved);
	return rc;
}

/* What a run of variant j is expected to take: what its last took, or
 * the baseline's last, or run_ns (0: unknown). */
static double expect_run(const double *last, size_t j, double run_ns)
{
	return last[j] > 0 ? last[j] : last[0] > 0 ? last[0] : run_ns;
}

/* The variants a budget that fits `fit` rounds' worth of runs (min_rounds
 * of them, each variant's run as long as the baseline's) keeps of na:
 * as many as fit, two at least; and the free lists (the variants from
 * nreq on, after every pool's: ap_measure_job.beside) only where
 * min_rounds rounds of every variant kept fit FREE_LIST_MARGIN times
 * over. They are beside the pools, never instead of them: a round of
 * seven variants (the demo's three sites and their lists) where one of
 * four fitted left a 92 ms budget one round, no measurement, under a
 * load that had left four variants two (tests/e2e/measure-run-budget.sh). */
#define FREE_LIST_MARGIN 2
/* A free list is measured in the first FREE_LIST_ROUNDS rounds (or
 * min_rounds, when more): beside the pools, it does not make every
 * round after them dearer (the demo, its three sites and their lists:
 * 50 rounds of seven variants, advise 1.9-2.3 s against 1.1-1.5). */
#define FREE_LIST_ROUNDS 12
static size_t variants_fit(double fit, size_t na, size_t nreq)
{
	if (fit < (double)na)
		na = fit >= 2 ? (size_t)fit : 2;
	if (na > nreq && fit < FREE_LIST_MARGIN * (double)na)
		na = nreq > 2 ? nreq : 2;
	return na;
}

static int measure_runs(const struct ap_script *s, const struct ap_measure_job *jobs, size_t n,
			const struct ap_measure_opts *o, struct ap_measured *out,
			struct ap_run_cost *base, struct ap_run_cost *recorded, struct ap_error *err)
{
	size_t nv = n + 1, maxr = o->max_rounds ? o->max_rounds : 1;
	size_t nreq = nv;	/* the variants before the first one beside */
	for (size_t j = 0; j < n; j++)
		if (jobs[j].beside) {
			nreq = j + 1;
			break;
		}
	struct sample *v = ap_xcalloc(nv * maxr, sizeof(*v));	/* v[round * nv + variant] */
	double *d = ap_xmalloc(maxr * sizeof(*d));
	double *last = ap_xcalloc(nv, sizeof(*last));	/* each variant's last run, as counted */
	double t0 = now_ns();
	struct budget bg = { .dl = o->deadline_ns > 0 ? o->deadline_ns
				   : o->budget_ns > 0 ? t0 + o->budget_ns
						      : 0,
			     .cut = { .rounds_wanted = o->min_rounds } };
	double kill_at = o->kill_at_deadline ? bg.dl : 0;
	unsigned rounds = 0;
	int rc = 0;
	memset(out, 0, n * sizeof(*out));
	memset(recorded, 0, sizeof(*recorded));
	size_t na = nv;	/* the variants still measured: 0 .. na-1 */
	bool recorded_done = false, by_deadline = false;
	double switch_ns = 0, fault_ns = 0;
	unsigned fl_rounds = o->min_rounds > FREE_LIST_ROUNDS ? o->min_rounds : FREE_LIST_ROUNDS;
	while (rounds < maxr) {
		/* Each round runs every variant once (the free lists in their
		 * first fl_rounds), starting one further each time, so no
		 * variant always follows the same one; none starts that would
		 * end past the deadline. */
		if (o->stop && __atomic_load_n(o->stop, __ATOMIC_RELAXED))
			break;
		size_t nr = rounds >= fl_rounds && na > nreq ? nreq : na;
		double round_ns = 0;
		for (size_t j = 0; j < nr; j++)
			round_ns += expect_run(last, j, o->run_ns);
		if (!fits(&bg, round_ns, 0)) {
			by_deadline = true;
			break;
		}
		if (rounds >= o->min_rounds && o->reserve_pairs > 0) {
			double pair = 0;
			for (size_t j = 1; j < nr; j++)
				pair = fmax(pair, last[j]);
			if (!fits(&bg, round_ns, o->reserve_pairs * (last[0] + pair)))
				break;
		}
		bool partial = false;
		for (size_t k = 0; k < nr && !rc; k++) {
			size_t j = (rounds + k) % nr;
			/* none starts that would end past the deadline, by what
			 * the last run of its kind (or the baseline's) took: a
			 * round cut short is not counted */
			if (k > 0 && !fits(&bg, expect_run(last, j, o->run_ns), 0)) {
				partial = by_deadline = true;
				break;
			}
			long site = j ? (long)jobs[j - 1].site : -1;
			uint64_t cap = j ? jobs[j - 1].cap : 0;
			char cl[128] = "";
			for (size_t c = 0; j && c < jobs[j - 1].nclasses; c++)
				snprintf(cl + strlen(cl), sizeof(cl) - strlen(cl), "%s%llu", c ? "," : "",
					 (unsigned long long)jobs[j - 1].classes[c]);
			if ((uint64_t)site >= s->nsites && site >= 0) {
				rc = ap_error_set(err, "measured replay: no site %ld", site);
				break;
			}
			rc = run_once(s, o->runner, site, j && jobs[j - 1].free_list, j ? jobs[j - 1].graph : NULL,
				      cap, cl, j && jobs[j - 1].round_up, NULL, NULL, o->touch, o->whole_site, kill_at, &v[rounds * nv + j],
				      err);
			if (rc == -2)
				bg.cut.killed = true;
			last[j] = v[rounds * nv + j].took_ns;
			if (rounds == 0 && j == 0 && bg.dl > 0 && last[0] > 0) {
				/* the first round after its baseline's run: as
				 * many sites as min_rounds rounds of them fit in
				 * what is left (two variants at least), as
				 * after the round below */
				double left = bg.dl - now_ns() + last[0];
				double fit = left / ((double)(o->min_rounds ? o->min_rounds : 1) * last[0]);
				nr = na = variants_fit(fit, na, nreq);
			}
		}
		if (rc || partial)
			break;
		rounds++;
		double el = now_ns() - t0;
		if (rounds == 1) {
			/* What a run takes, from the first round: as many sites
			 * as min_rounds rounds fit in what is left of the budget
			 * (one at least), the model's first first; then what
			 * recording costs on this sequence, three times (once
			 * for a long run), and the runner's probes, each when it
			 * leaves a round more to make. */
			double per = el / (double)nv, left = bg.dl > 0 ? bg.dl - now_ns() : o->budget_ns - el;
			unsigned more = o->min_rounds > 1 ? o->min_rounds - 1 : 1;
			double fit = left / (more * per);
			na = variants_fit(fit, na, nreq);
			if (na > nv)
				na = nv;
			/* the rounds still owed to min_rounds, kept from what
			 * recording's cost and the probes may take */
			double next = 0;
			for (size_t j = 0; j < na; j++)
				next += last[j];
			next *= more;
			if (!recorded_done && o->sampler) {
				/* three when they take a quarter of the budget at
				 * most (a second each at least: AP_MEASURE_REC_NS) */
				double rec = AP_MEASURE_REC_RUNS * last[0] + AP_MEASURE_REC_NS,
				       len = bg.dl > 0 ? bg.dl - t0 : o->budget_ns;
				measure_recorded(s, o, REC_RUNS * rec <= len / 4 ? REC_RUNS : 1, recorded, &bg,
						 last[0], next);
				recorded_done = true;
			}
			/* (not for a trial run without sites: its time is the
			 * one of a replay, which sizes the script) */
			if (s->nthreads > 1 && n > 0)
				switch_ns = probe_cost(o->runner, o->stop, "--switch-probe", "switch_ns", &bg,
						       next);
			/* (what the baseline's faults cost, where it faulted
			 * enough for a verdict to hang on them) */
			if (n > 0 && v[0].minflt >= AP_MEASURE_FAULT_PROBE_MIN)
				fault_ns = probe_cost(o->runner, o->stop, "--fault-probe", "fault_ns", &bg,
						      next);
			el = now_ns() - t0;
		}
		if (o->progress)
			o->progress(o->progress_ctx, rounds, el, o->budget_ns);
		if (rounds < o->min_rounds)
			continue;
		/* Tight enough: every pool's interval within a tenth of its
		 * saving, or within 1 % of the baseline's time (the free lists
		 * beside them never ask for rounds of their own: the demo's
		 * advise took 1.7-2.5 s where it took 1.0-1.2). */
		bool tight = true;
		double b[64], bm;
		size_t nb = rounds < 64 ? rounds : 64;
		for (size_t r = 0; r < nb; r++)
			b[r] = v[r * nv].cpu_ns;
		bm = median(b, nb);
		for (size_t j = 1; j < na && j < nreq; j++) {
			for (unsigned r = 0; r < rounds; r++)
				d[r] = v[r * nv].cpu_ns - v[r * nv + j].cpu_ns;
			double lo, hi;
			ap_median_interval(d, rounds, &lo, &hi);
			double m = median(d, rounds);
			tight &= hi - lo <= fmax(0.1 * fabs(m), 0.01 * bm);
		}
		/* (without a budget: min_rounds) */
		if (tight || bg.dl <= 0)
			break;
	}
	if (by_deadline && rounds < o->min_rounds) {
		bg.cut.rounds_cut = true;
		bg.cut.rounds = rounds;
	}
	if (!rounds && !rc)
		rc = ap_error_set(err, by_deadline ? "measured replay: no round fits in the budget"
						   : "measured replay: stopped before a round");
	if (o->cut)
		*o->cut = bg.cut;
	if (rc && !rounds) {
		if (o->cut)
			o->cut->sites = n;
		free(v);
		free(d);
		free(last);
		return -1;
	}
	/* A failure after complete rounds keeps them; a site is measured
	 * with two rounds at least (one difference has no interval), or
	 * min_rounds when fewer are asked. */
	unsigned enough = o->min_rounds < 2 ? o->min_rounds : 2;
	struct sample *col = ap_xmalloc(rounds * sizeof(*col));
	for (unsigned r = 0; r < rounds; r++)
		col[r] = v[r * nv];
	cost_of(col, rounds, base);
	base->switch_ns = switch_ns;
	base->fault_ns = fault_ns;
	for (size_t j = 1; j < na && rounds >= enough; j++) {
		struct ap_measured *m = &out[j - 1];
		unsigned rj = j >= nreq && rounds > fl_rounds ? fl_rounds : rounds;
		for (unsigned r = 0; r < rj; r++) {
			col[r] = v[r * nv + j];
			d[r] = v[r * nv].cpu_ns - v[r * nv + j].cpu_ns;
		}
		cost_of(col, rj, &m->cost);
		m->conf = ap_median_interval(d, rj, &m->low_ns, &m->high_ns);
		m->saved_ns = median(d, rj);
		m->rounds = rj;
		m->ok = true;
	}
	if (o->cut)
		for (size_t j = 0; j < n; j++)
			o->cut->sites += !out[j].ok;
	free(col);
	free(v);
	free(d);
	free(last);
	return 0;
}
