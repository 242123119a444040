/* allocprof-replay: runs a replay script (measure/script.h) once, through
 * glibc's allocator, and prints what it cost: the measured replay behind
 * `allocprof advise`. With a site, that site's blocks are served by the
 * pool of pool/vpool.h, as a program following advise's advice would
 * serve them; without one, by malloc alone (the baseline). With
 * --free-list, the site's blocks are served instead by a free list of
 * each thread's own (a LIFO of pointers, FREE_LIST_MAX long at most, no
 * cycles): what a program that keeps its spares in a thread (a Vec of
 * them, a stack of freed nodes) would save (advise prints it beside
 * vpool's saving for a site whose objects stay in their thread).
 *
 *	allocprof-replay [--free-list | --graph MEMBERS] [--round-up] FD SITE CAP [CLASSES]
 *
 * FD: an open descriptor of the script; SITE: the site whose blocks are
 * pooled, or -1 for the baseline, with the script's other sites of the
 * same line's blocks after it ("3,17,18": the kinds of one line's
 * blocks, report/advise_sites.c, every one pooled; --graph's root and
 * members are one each); CAP: the pool's cap in bytes (an object
 * whose capacity is above it is freed, not Put), 0 for none; CLASSES:
 * the upper sizes of size classes, ascending, comma-separated, one pool
 * each (a request goes to the first class that holds it, an object back
 * to the first that holds its capacity; above the last, malloc and free
 * as without a pool; with --free-list, a list per class; with --round-up,
 * a request the pool has no block for is allocated at its class's upper
 * size, so that every block of a class serves its every request). With --graph,
 * MEMBERS the sites (comma-separated) of blocks SITE's objects own: the
 * objects are pooled whole, with those blocks (below, "--graph"). Prints one
 * line, `cpu_ns=N wall_ns=N minflt=N majflt=N maxrss_kb=N rss0_kb=N
 * calls=N hits=N spin_ns=N cpus=N wakes=N early=N` (cpu_ns without
 * spin_ns, the time spent spinning on other threads; cpus: the CPUs its
 * affinity let it use, which advise chooses; wakes: the threads woken by
 * others they were asleep on; early: those woken before the op they
 * waited for was done, none but by a stray wake-up), and exits 0; or
 * prints `allocprof-replay: why` on stderr and exits 1.
 *
 *	allocprof-replay --switch-probe
 *	allocprof-replay --fault-probe
 *
 * What one blocking hand-over between two threads costs here (switch_probe,
 * below): prints `switch_ns=N switches=N cpu_ns=N`; what one page fault of
 * a page given back and written again costs (fault_probe): prints
 * `fault_ns=N faults=N cpu_ns=N`.
 *
 * What a replayed op does (docs/pool-model.md, "The measured replay"):
 * every new block's first 64 bytes are written, and one byte in each of
 * its further pages, as the program's first write would fault them in
 * (with ALLOCPROF_REPLAY_TOUCH=S in the environment, S from 0 to 1: in
 * the pages of its first S of its bytes only, a program that writes a
 * prefix of what it allocates; with ALLOCPROF_REPLAY_WHOLE=SITE, every
 * byte of that site's blocks is written, and read before its free or
 * Put, in either variant: advise_measure.c's measure_whole);
 * a pooled block keeps the capacity it reached, stored in its first 8
 * bytes while it is in the pool, and one too small for a request is
 * freed and the request allocated anew; a calloc served from the pool is zeroed (the program would have
 * to); a realloc of a pooled block within its capacity calls nothing,
 * nor does a growth by copy (MOVE), which otherwise mallocs, copies the
 * old bytes and frees; a SLEEP sleeps (the recorded thread was off its CPU there).
 * Nothing here allocates but the replayed ops and the pool: the script
 * and the slots are mapped. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "script.h"
#include "vpool.h"
#include "work.h"

struct slot {
	char *p;
	uint64_t size;		/* the size the program asked for last */
	uint64_t cap;		/* pooled blocks: the largest size reached */
	uint32_t gen;		/* births in this slot (--graph: an owner's identity) */
	uint32_t owner;		/* --graph: a member's root's slot...; a root's thread */
	uint32_t ogen;		/* ...and that root's gen then; a root's spares index */
	bool pooled;
	bool whole;		/* of the site written and read whole (whole_site) */
	int8_t member;		/* --graph: the member it is (its index), or -1 */
	bool root;		/* --graph: a block of the root site, live */
};

#define MAX_CLASSES 8
/* A site's other kinds the runner takes, at most (report/advise_sites.c
 * makes no more: SITE_KINDS_MAX) */
#define MAX_KINDS 32
/* --graph: the most member sites, and the roots a thread has live
 * nested at once (deeper, the oldest is forgotten: its members born
 * later are not its) */
#define GRAPH_MAX 16
#define GRAPH_DEPTH 8

struct rthread {
	_Alignas(64) _Atomic uint64_t done;	/* ops done (published ones are exact) */
	_Atomic uint64_t wake_at;		/* the first op a sleeper waits for */
	pthread_mutex_t lk;			/* guards sleepers and wake_at's lowering */
	struct rthread *sleepers;		/* asleep on its ops: a list through wnext */
	/* As a sleeper on another thread's op: */
	atomic_uint wfx;			/* its futex word, bumped when it is woken */
	struct rthread *wnext;
	uint64_t wat;				/* the op it waits for */
	uint32_t idx;
	uint64_t calls, hits;			/* allocator calls made; pool hits */
	uint64_t spin_ns;			/* spent spinning on other threads */
	uint64_t wakes;				/* sleepers it woke */
	uint64_t early;				/* woken before its op was done */
	uint64_t work;				/* where its ap_work chain is */
	uint64_t sum;				/* what its whole reads summed (read_whole) */
	int64_t nap_owed;			/* ns of SLEEP not slept yet (nap) */
	/* --free-list: its free list of each class (mapped at its first
	 * Put), and how many blocks each holds */
	char **fl[MAX_CLASSES];
	uint32_t fln[MAX_CLASSES];
	/* --graph: its live blocks of the root site, the latest on top
	 * (slot, gen); members born now are the top one's */
	uint32_t rslot[GRAPH_DEPTH], rgen[GRAPH_DEPTH];
	unsigned rn;
	uint32_t spares_free;			/* its freed spares indexes (+ 1) */
};

static const struct ap_rs_header *hdr;
static const struct ap_rs_thread *tinfo;
static const struct ap_rs_op *ops;
static const uint32_t *sync_n;		/* threads meeting at each barrier */
static atomic_uint *arrived;		/* at each barrier so far; a futex word each */
static atomic_uint *sleepers;		/* asleep at each barrier */
static struct slot *slots;
static struct rthread *thr;
static long page;
/* The share of a new block's (or a growth's) bytes whose pages the first
 * write faults in, from its start: 1, all of them, unless
 * ALLOCPROF_REPLAY_TOUCH says less (advise fits it to the recorded run's
 * page faults: docs/pool-model.md, "The measured replay"). */
static double touch_share = 1;
static uint32_t chosen = AP_RS_NOSITE;	/* the pooled site */
/* A site whose blocks the program writes and reads whole, as a record or
 * a message of the size it asked for is (ALLOCPROF_REPLAY_WHOLE=SITE, in
 * both variants): every byte of a new block, and of a growth, is written,
 * and every byte read before the block is freed or Put. The pool hands
 * such a site's requests blocks kept at the largest size they reached,
 * spread over more memory than malloc's of the request's size, and the
 * program's passes over them cost what a line and a byte a page do not
 * show (bench/twins' relay: records of 1-8 KiB, each filled and
 * checksummed whole; its twin costs 9-19 % more, where a replay writing a
 * line a page saved 3-26 ms and one writing and reading every byte cost
 * 15 ms: bench/twins/README.md, sessions 26 and 30). */
static uint32_t whole_site = AP_RS_NOSITE;
/* By the script's site: whether its blocks are pooled (the chosen site
 * and its other kinds), and written whole; NULL: none. */
static uint8_t *pool_kind, *whole_kind;
static uint64_t cap_limit;
static struct vpool pools[MAX_CLASSES];
static uint64_t class_max[MAX_CLASSES];	/* with classes: each one's upper size */
static unsigned nclasses = 1;
/* --round-up: a request a size class holds, and the pool has nothing
 * for, is allocated at the class's upper size, as a hand-pooler rounds
 * requests up to the class: every block a class hands out then serves
 * every request of that class (without it a pooled block too small for
 * the request is freed and the request allocated anew). */
static bool round_up;

/* The class of a size: with classes, the first that holds it (-1 above
 * the last); else the one class, 0. */
static int class_of(uint64_t size)
{
	if (!class_max[0])
		return 0;
	for (unsigned k = 0; k < nclasses; k++)
		if (size <= class_max[k])
			return (int)k;
	return -1;
}

/* --free-list: the site's blocks go to a free list of the thread that
 * frees them and come from the one of the thread that asks, LIFO, as a
 * program keeps its spares in a thread (a Rust Vec<T> of them, a C stack
 * of freed nodes): no lock, no CPU, no cycles (AP_RS_CYCLE is a vpool's).
 * A list holds FREE_LIST_MAX blocks at most (the prototype's bound,
 * bench/twins/README.md, session 31); a block beyond is freed. Its
 * blocks keep their capacity in their first 8 bytes, as a vpool's do, so
 * that a hit too small, a realloc within the capacity and a calloc
 * served from the list are what they are with a vpool. */
#define FREE_LIST_MAX 65536u
static bool free_list;

static char *fl_take(struct rthread *t, int k)
{
	return t->fln[k] ? t->fl[k][--t->fln[k]] : NULL;
}

/* Returns whether the list took p (else the caller frees it). */
static bool fl_give(struct rthread *t, int k, char *p)
{
	if (!t->fl[k]) {
		/* mapped, not allocated: nothing here allocates but the
		 * replayed ops and the pool (its pages come as it fills) */
		void *m = mmap(NULL, FREE_LIST_MAX * sizeof(char *), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return false;
		t->fl[k] = m;
	}
	if (t->fln[k] == FREE_LIST_MAX)
		return false;
	t->fl[k][t->fln[k]++] = p;
	return true;
}

/* --graph M1,M2,...: the chosen site's objects pooled whole, with the
 * blocks of the member sites that they own, as a hand-pooler keeps a
 * request's context with its buffers and nodes in it (bench/twins'
 * ctxgraph; docs/pool-model.md, "Object graphs"). A member's block born
 * while its thread has a root live (a block of the chosen site; the
 * latest born, when several) is that root's: freed by that thread while
 * the root is still live, it stays with the root as a spare of its
 * member site, not freed, and the root's next birth of that site takes
 * it (kept when big enough, else freed and allocated anew, as a pooled
 * buffer is). A root goes into the vpool with its spares, and comes out
 * with them; one the pool drops (a cycle's victim, a thread's exit)
 * frees them with it. A spare's first 16 bytes hold the next spare of
 * its list and its capacity (glibc's smallest block has 24); a pooled
 * root's, after its capacity, the heads of its lists: a root smaller
 * than that is freed with its spares, not pooled. */
static unsigned nmembers;
static uint32_t member_site[GRAPH_MAX];
static int8_t *member_of;	/* by site: its member index, or -1; NULL: no --graph */
/* A live root's spares of member k: spares[ix * nmembers + k], ix its
 * slot's ogen, an index handed out densely (a thread's freed ones first,
 * linked through their first entry), so that the table's pages touched
 * are as many as roots live at once, not spread over every slot. */
static char **spares;
static uint32_t spares_cap;		/* indexes the table holds */
static _Atomic uint32_t spares_top;	/* never handed out from here on */

static char **spares_of(const struct slot *root)
{
	return spares + (uint64_t)root->ogen * nmembers;
}

/* An index for a new root of t, or UINT32_MAX when the table is full
 * (the root then owns nothing: its members are malloc's). */
static uint32_t spares_new(struct rthread *t)
{
	if (t->spares_free) {
		uint32_t ix = t->spares_free - 1;
		char **e = spares + (uint64_t)ix * nmembers;
		t->spares_free = (uint32_t)(uintptr_t)e[0];
		e[0] = NULL;
		return ix;
	}
	uint32_t ix = atomic_fetch_add_explicit(&spares_top, 1, memory_order_relaxed);
	return ix < spares_cap ? ix : UINT32_MAX;
}

static void spares_release(struct rthread *t, uint32_t ix)
{
	char **e = spares + (uint64_t)ix * nmembers;
	memset(e, 0, nmembers * sizeof(*e));
	e[0] = (char *)(uintptr_t)t->spares_free;
	t->spares_free = ix + 1;
}

/* Frees a root's spares (t: the thread that counts the calls, or none). */
static void spares_free(struct rthread *t, char **heads)
{
	for (unsigned k = 0; k < nmembers; k++) {
		for (char *x = heads[k]; x;) {
			char *next;
			memcpy(&next, x, sizeof(next));
			if (t)
				t->calls++;
			free(x);
			x = next;
		}
		heads[k] = NULL;
	}
}

static uint64_t root_bytes(void)
{
	return sizeof(uint64_t) * (1 + nmembers);
}

/* The root that `t`'s member born now belongs to: its latest live one,
 * or UINT32_MAX. */
static uint32_t owner_now(struct rthread *t)
{
	while (t->rn) {
		uint32_t r = t->rslot[t->rn - 1];
		if (slots[r].root && slots[r].gen == t->rgen[t->rn - 1])
			return r;
		t->rn--;
	}
	return UINT32_MAX;
}

static void root_push(struct rthread *t, uint32_t slot)
{
	if (t->rn == GRAPH_DEPTH) {
		memmove(t->rslot, t->rslot + 1, (GRAPH_DEPTH - 1) * sizeof(*t->rslot));
		memmove(t->rgen, t->rgen + 1, (GRAPH_DEPTH - 1) * sizeof(*t->rgen));
		t->rn--;
	}
	t->rslot[t->rn] = slot;
	t->rgen[t->rn++] = slots[slot].gen;
}

/* Whether member block s's root is live and `t`'s (its spares are its
 * thread's alone: a root's `owner` is the thread that made it). */
static bool owner_live(const struct rthread *t, const struct slot *s)
{
	const struct slot *r = &slots[s->owner];
	return r->root && r->gen == s->ogen && r->owner == t->idx;
}

/* A root of `t` ends: off its stack, with the dead ones above the live
 * (a stack of dead roots made every lookup walk it: tokarr's replay
 * spent a quarter of its time there). */
static void root_pop(struct rthread *t, uint32_t slot)
{
	if (t->rn && t->rslot[t->rn - 1] == slot)
		t->rn--;
	while (t->rn) {
		const struct slot *r = &slots[t->rslot[t->rn - 1]];
		if (r->root && r->gen == t->rgen[t->rn - 1])
			break;
		t->rn--;
	}
}

static atomic_uint running;		/* threads not finished; a futex word too */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "allocprof-replay: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static long futex(atomic_uint *w, int op, unsigned val)
{
	return syscall(SYS_futex, (unsigned *)w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

/* The program's first write of [p + from, p + to): its first cache line
 * (FIRST_WRITE bytes, or all of a smaller block: a program initializes
 * what it allocates, a header at least), and one byte in every further
 * page, as that write would fault them in. The line's stores are what a
 * pool's locked instructions wait behind in the program (a store must
 * drain before a lock-prefixed one completes) and malloc's tcache does
 * not: bench/twins' tokens (5-40 byte strings, copied in), whose twin's
 * pool costs 4-5 ns a Get and Put more than malloc, costs 0.5 ns more in
 * a replay that writes one byte a block, 1.9 ns in one that writes the
 * line (bench/twins/README.md, session 18). */
#define FIRST_WRITE 64u
static inline void touch(char *p, uint64_t from, uint64_t to)
{
	if (!p || to <= from)
		return;
	uint64_t line = to - from < FIRST_WRITE ? to - from : FIRST_WRITE;
	memset(p + from, 1, line);
	__asm__ volatile("" : : "r"(p) : "memory");	/* the stores are made */
	volatile char *q = (volatile char *)p;
	uintptr_t a = (uintptr_t)p;
	if (touch_share < 1) {
		/* the first write covers a prefix: the line at least */
		uint64_t end = from + (uint64_t)((double)(to - from) * touch_share);
		to = end > from + line ? end : from + line;
	}
	for (uint64_t o = from; o < to;) {
		q[o] = 1;
		o = ((a + o) | (uintptr_t)(page - 1)) + 1 - a;
	}
}

/* A new block's bytes [from, to) as the program's first writes make
 * them: touch(), or every byte at a site written whole. */
static inline void fill(const struct slot *s, uint64_t from, uint64_t to)
{
	if (!s->whole || !s->p || to <= from) {
		touch(s->p, from, to);
		return;
	}
	memset(s->p + from, 1, to - from);
	__asm__ volatile("" : : "r"(s->p) : "memory");
}

/* Every byte of a block of a site written whole, read before it goes
 * (the program's last pass over it: a checksum, a send). */
static void read_whole(struct rthread *t, const struct slot *s)
{
	uint64_t sum = 0, w;
	uint64_t k = 0;
	for (; k + 8 <= s->size; k += 8) {
		memcpy(&w, s->p + k, 8);
		sum += w;
	}
	for (; k < s->size; k++)
		sum += (unsigned char)s->p[k];
	t->sum += sum;
}

static void release(void *obj, void *ctx)
{
	(void)ctx;
	if (member_of) {
		char *heads[GRAPH_MAX];
		memcpy(heads, (char *)obj + sizeof(uint64_t), nmembers * sizeof(*heads));
		spares_free(NULL, heads);
	}
	free(obj);
}

/* Waiting for another thread is the harness's, not the allocator's: a
 * waiter spins a little (waking from a futex costs more than most waits
 * last; not on one CPU, where what it waits for cannot run meanwhile),
 * and the time it spins is taken off the run's CPU time; then it
 * sleeps, which costs no CPU time. A sleeper says which op it waits for
 * (wake_at, the smallest of them), and the publisher wakes the sleepers
 * when it gets there, not at every op it publishes: a consumer asleep
 * while its producer runs on the same CPU made the producer enter the
 * kernel to wake it at every block, half a million futex calls per
 * million events (bench/twins' prodcons on one CPU), the harness's
 * system time counted as the allocator's. And it wakes those sleepers
 * only, each on a futex word of its own, not every thread asleep on its
 * ops: four workers asleep on an acceptor's blocks all woke whenever the
 * first of them could go on, and the others went back to sleep, 25,600
 * sleeps for 10,200 wake-ups in a replay of bench/twins' workers on one
 * CPU, and 51,000-77,000 in one run of three when another process took
 * turns on the CPU (the replay's CPU time 2.5 times as much, in either
 * variant). A wake-up can be missed (a release store and a relaxed load
 * are not ordered): sleeps are bounded by WAIT_SLEEP_NS, so a missed one
 * costs time, never a hang. */
#define WAIT_SPINS 100
#define WAIT_SLEEP_NS 200000
static int wait_spins = WAIT_SPINS;	/* 0 on one CPU (main) */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps on w while it holds val, WAIT_SLEEP_NS at most. Returns whether
 * a wake-up ended the sleep (not the time, nor val gone). */
static bool sleep_on(atomic_uint *w, unsigned val)
{
	struct timespec to = { 0, WAIT_SLEEP_NS };
	return syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, val, &to, NULL, 0) == 0;
}

static void publish(struct rthread *t, uint64_t i)
{
	atomic_store_explicit(&t->done, i + 1, memory_order_release);
	if (atomic_load_explicit(&t->wake_at, memory_order_relaxed) > i)
		return;
	/* The sleepers whose op this is, or one before it, wake; the
	 * others sleep on, and wake_at becomes the first of theirs. */
	pthread_mutex_lock(&t->lk);
	uint64_t next = UINT64_MAX;
	for (struct rthread **p = &t->sleepers; *p;) {
		struct rthread *w = *p;
		if (w->wat <= i) {
			*p = w->wnext;
			atomic_fetch_add_explicit(&w->wfx, 1, memory_order_relaxed);
			futex(&w->wfx, FUTEX_WAKE, 1);
			t->wakes++;
		} else {
			if (w->wat < next)
				next = w->wat;
			p = &w->wnext;
		}
	}
	atomic_store(&t->wake_at, next);
	pthread_mutex_unlock(&t->lk);
}

/* Spins until done() or WAIT_SPINS; the spinning counts in *spin_ns.
 * Returns whether done() came true. */
#define SPIN_UNTIL(cond, spin_ns)                                            \
	({                                                                   \
		bool ok_ = false;                                            \
		uint64_t t0_ = mono_ns();                                    \
		for (int s_ = 0; s_ < wait_spins && !(ok_ = (cond)); s_++)   \
			__builtin_ia32_pause();                              \
		*(spin_ns) += mono_ns() - t0_;                               \
		ok_;                                                         \
	})

static void wait_for(struct rthread *me, struct rthread *t, uint64_t i)
{
	if (atomic_load_explicit(&t->done, memory_order_acquire) > i)
		return;
	if (SPIN_UNTIL(atomic_load_explicit(&t->done, memory_order_acquire) > i, &me->spin_ns))
		return;
	pthread_mutex_lock(&t->lk);
	me->wat = i;
	me->wnext = t->sleepers;
	t->sleepers = me;
	if (i < atomic_load(&t->wake_at))
		atomic_store(&t->wake_at, i);
	pthread_mutex_unlock(&t->lk);
	for (;;) {
		unsigned f = atomic_load(&me->wfx);
		if (atomic_load_explicit(&t->done, memory_order_acquire) > i)
			break;
		if (sleep_on(&me->wfx, f) && atomic_load_explicit(&t->done, memory_order_acquire) <= i)
			me->early++;
	}
	/* Still listed when it saw the op done first (or slept its time
	 * out): it leaves the list; wake_at, if it was its op, is met by the
	 * publisher's next op, which finds the list as it is. */
	pthread_mutex_lock(&t->lk);
	for (struct rthread **p = &t->sleepers; *p; p = &(*p)->wnext)
		if (*p == me) {
			*p = me->wnext;
			break;
		}
	pthread_mutex_unlock(&t->lk);
}

/* Barrier k: a thread arrives at it, and goes on once every thread of
 * barrier k - AP_RS_SLACK has arrived at that one (script.h). */
static void meet(struct rthread *me, uint64_t k)
{
	unsigned n = sync_n[k];
	if (n > 1) {
		unsigned v = atomic_fetch_add(&arrived[k], 1) + 1;
		if (v == n && atomic_load_explicit(&sleepers[k], memory_order_relaxed))
			futex(&arrived[k], FUTEX_WAKE, INT_MAX);
	}
	if (k < AP_RS_SLACK)
		return;
	k -= AP_RS_SLACK;
	n = sync_n[k];
	if (n <= 1 || atomic_load_explicit(&arrived[k], memory_order_acquire) >= n)
		return;
	if (SPIN_UNTIL(atomic_load_explicit(&arrived[k], memory_order_acquire) >= n, &me->spin_ns))
		return;
	atomic_fetch_add(&sleepers[k], 1);
	unsigned v;
	while ((v = atomic_load_explicit(&arrived[k], memory_order_acquire)) < n)
		sleep_on(&arrived[k], v);
}

static void *thread_main(void *arg);

static void spawn(uint32_t idx)
{
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &at, thread_main, &thr[idx]);
	if (rc)
		die("cannot start a thread: %s", strerror(rc));
	pthread_attr_destroy(&at);
}

/* A hit: the pooled block x of capacity cap serves a request of n bytes
 * in s (true); or, too small, is freed (false: the caller allocates).
 * A calloc's block comes back as the program left it, not cleared: a
 * hand-pooler of a zeroed work area clears what its code reads of it,
 * not the whole (bench/twins' imgtile: 4.4 MiB tiles, a band used;
 * clearing each whole made the pool save nothing, 154 ms of its 169
 * without). advise says so at such a site. Too small, it is dropped for
 * a block of the request's size, as the model's small hit is and a
 * hand-pooler does (bench/twins' tw_get: free, then malloc). Not a
 * realloc: it would copy bytes nobody reads, and glibc moves a mapped
 * chunk by mremap, keeping its pages (rasterjob's 2-8 MiB frames: 1,938
 * faults replayed where its twin made 7,984). */
static bool reuse(struct rthread *t, struct slot *s, char *x, uint64_t cap, uint64_t n)
{
	t->hits++;
	if (cap >= n) {
		s->p = x;
		s->cap = cap;
		fill(s, 0, n);
		return true;
	}
	t->calls++;
	free(x);
	return false;
}

/* A birth: the pool's object when it has one big enough, else malloc's. */
static void birth(struct rthread *t, const struct ap_rs_op *o, unsigned type)
{
	struct slot *s = &slots[o->slot];
	uint64_t n = o->n;
	uint32_t site = ap_rs_arg(o);
	s->size = n;
	s->cap = n;
	s->gen++;
	s->member = -1;
	s->root = false;
	s->pooled = pool_kind && site < hdr->nsites && pool_kind[site];
	s->whole = whole_kind && site < hdr->nsites && whole_kind[site];
	if (member_of && !s->pooled && site < hdr->nsites && member_of[site] >= 0) {
		uint32_t r = owner_now(t);
		if (r != UINT32_MAX) {
			s->member = member_of[site];
			s->owner = r;
			s->ogen = slots[r].gen;
			s->pooled = true;
			char **head = &spares_of(&slots[r])[s->member], *x = *head;
			if (x) {
				uint64_t cap;
				memcpy(head, x, sizeof(*head));
				memcpy(&cap, x + sizeof(char *), sizeof(cap));
				if (reuse(t, s, x, cap, n))
					return;
			}
		}
	}
	if (member_of && s->pooled && s->member < 0 && (s->ogen = spares_new(t)) != UINT32_MAX) {
		s->root = true;
		s->owner = t->idx;
		root_push(t, o->slot);
	}
	int k = s->pooled && s->member < 0 ? class_of(n) : -1;
	if (k >= 0) {
		char *x = free_list ? fl_take(t, k) : vpool_get(&pools[k]);
		if (x) {
			uint64_t cap;
			memcpy(&cap, x, sizeof(cap));
			if (member_of) {
				/* its spares come out with it (freed when it is
				 * too small, or owns nothing here) */
				char *heads[GRAPH_MAX];
				memcpy(heads, x + sizeof(cap), nmembers * sizeof(*heads));
				if (s->root && cap >= n)
					memcpy(spares_of(s), heads, nmembers * sizeof(*heads));
				else
					spares_free(t, heads);
			}
			if (reuse(t, s, x, cap, n))
				return;
		}
	}
	t->calls++;
	uint64_t want = n;
	if (k >= 0 && round_up) {
		n = class_max[k];
		s->cap = n;
	}
	switch (type) {
	case AP_RS_CALLOC:
		s->p = calloc(1, n);
		break;
	case AP_RS_ALIGNED: {
		void *p = NULL;
		s->p = posix_memalign(&p, 64, n) ? NULL : p;
		break;
	}
	default:
		s->p = malloc(n);
		break;
	}
	fill(s, 0, want);
}

/* A realloc, or a growth by copy (MOVE) as the program made it: a new
 * block, the old one's bytes copied into it, the old one freed. A pooled
 * block that reached the size before grows in place, calling nothing: a
 * reused buffer (or std::string) keeps its capacity. */
static void grow(struct rthread *t, const struct ap_rs_op *o, bool by_copy)
{
	struct slot *s = &slots[o->slot];
	uint64_t n = o->n, old = s->size;
	if (s->pooled && n <= s->cap) {
		s->size = n;
		fill(s, old, n);
		return;
	}
	char *p;
	if (by_copy) {
		t->calls++;
		p = malloc(n ? n : 1);
		if (p && s->p) {
			memcpy(p, s->p, old < n ? old : n);
			t->calls++;
			free(s->p);
		}
	} else {
		t->calls++;
		p = realloc(s->p, n ? n : 1);
	}
	if (!p)
		return;
	s->p = p;
	s->size = n;
	if (n > s->cap)
		s->cap = n;
	fill(s, old, n);
}

static void end(struct rthread *t, const struct ap_rs_op *o)
{
	struct slot *s = &slots[o->slot];
	if (s->whole && s->p)
		read_whole(t, s);
	if (s->member >= 0) {
		int m = s->member;
		s->member = -1;
		if (s->p && owner_live(t, s)) {
			/* kept by its root: a spare */
			char **head = &spares_of(&slots[s->owner])[m];
			memcpy(s->p, head, sizeof(*head));
			memcpy(s->p + sizeof(char *), &s->cap, sizeof(s->cap));
			*head = s->p;
		} else if (s->p) {
			t->calls++;
			free(s->p);
		}
		s->p = NULL;
		return;
	}
	int k = s->pooled && s->p && (!cap_limit || s->cap <= cap_limit) ? class_of(s->cap) : -1;
	if (member_of && s->pooled) {
		/* A root: into the pool with its spares (none when it had no
		 * index), if it can hold their lists. A root freed by another
		 * thread than its own races with a late member's free there,
		 * which may keep a spare in the index's lists for the next
		 * root: a block lost to the measurement, no worse (the
		 * detector's graphs are torn down by one thread). */
		char *none[GRAPH_MAX] = { NULL }, **heads = s->root ? spares_of(s) : none;
		if (s->root)
			root_pop(t, o->slot);
		if (k >= 0 && s->cap >= root_bytes())
			memcpy(s->p + sizeof(s->cap), heads, nmembers * sizeof(*heads));
		else
			k = -1;
		if (k < 0)
			spares_free(t, heads);
		if (s->root)
			spares_release(t, s->ogen);
		s->root = false;
	}
	if (k >= 0)
		memcpy(s->p, &s->cap, sizeof(s->cap));
	if (k >= 0 && !free_list) {
		vpool_put(&pools[k], s->p);
	} else if (k < 0 || !fl_give(t, k, s->p)) {
		t->calls++;
		free(s->p);
	}
	s->p = NULL;
}

/* The thread was off its CPU here (asleep, waiting for input): so is the
 * replay's, for as long in all, and its caches and TLB come back as cold.
 * A sleep lasts at least the timer's granularity, which can be a
 * millisecond (a VM's clock without high resolution timers: 50 us asked,
 * 1.13 ms slept), so what a sleep overran is owed back by the naps after
 * it, skipped until they have made it up: a daemon's 3,300 naps of 142 us
 * (469 ms) slept 3.7 s a run, and advise spent its 15 s budget on three
 * rounds of a 1 s program. */
static void nap(struct rthread *t, uint64_t ns)
{
	t->nap_owed += (int64_t)ns;
	if (t->nap_owed <= 0)
		return;
	uint64_t want = (uint64_t)t->nap_owed < AP_RS_SLEEP_MAX_NS ? (uint64_t)t->nap_owed : AP_RS_SLEEP_MAX_NS;
	struct timespec ts = { 0, (long)want }, a, z;
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &z);
	t->nap_owed -= (int64_t)(z.tv_sec - a.tv_sec) * 1000000000 + (z.tv_nsec - a.tv_nsec);
}

static void run(struct rthread *t)
{
	const struct ap_rs_thread *ti = &tinfo[t->idx];
	const struct ap_rs_op *o = ops + ti->first;
	for (uint64_t i = 0; i < ti->nops; i++, o++) {
		unsigned type = ap_rs_type(o);
		switch (type) {
		case AP_RS_MALLOC:
		case AP_RS_CALLOC:
		case AP_RS_ALIGNED:
			birth(t, o, type);
			break;
		case AP_RS_REALLOC:
		case AP_RS_MOVE:
			grow(t, o, type == AP_RS_MOVE);
			break;
		case AP_RS_FREE:
			end(t, o);
			break;
		case AP_RS_CYCLE:
			if (chosen != AP_RS_NOSITE && !free_list)
				for (unsigned k = 0; k < nclasses; k++)
					vpool_cycle(&pools[k]);
			break;
		case AP_RS_WAIT:
			wait_for(t, &thr[ap_rs_arg(o)], o->n);
			break;
		case AP_RS_SPAWN:
			spawn(ap_rs_arg(o));
			break;
		case AP_RS_SYNC:
			meet(t, o->n);
			break;
		case AP_RS_WORK:
			t->work = ap_work(o->n, t->work);
			break;
		case AP_RS_SLEEP:
			if (o->n)
				nap(t, o->n);
			break;
		}
		if (o->w & AP_RS_PUBLISH)
			publish(t, i);
	}
	atomic_store(&t->done, ti->nops);
}

static void *thread_main(void *arg)
{
	struct rthread *t = arg;
	run(t);
	if (atomic_fetch_sub(&running, 1) == 1)
		futex(&running, FUTEX_WAKE, 1);
	return NULL;
}

/* The script is ours, but a damaged file must not make the runner write
 * out of bounds: every index is checked once, before the clock starts. */
static void check_script(uint64_t size)
{
	if (size < sizeof(*hdr) || memcmp(hdr->magic, AP_RS_MAGIC, 8) || hdr->version != AP_RS_VERSION)
		die("%s", "not a replay script of this version");
	if (!hdr->nthreads || hdr->nthreads > AP_RS_ARG_MAX || hdr->nops > size ||
	    hdr->nsyncs > size || ap_rs_size(hdr->nthreads, hdr->nsyncs, hdr->nops) != size ||
	    hdr->main_thread >= hdr->nthreads ||
	    hdr->nslots > UINT32_MAX)
		die("%s", "damaged replay script (header)");
	uint64_t sum = 0;
	for (uint32_t k = 0; k < hdr->nthreads; k++) {
		const struct ap_rs_thread *ti = &tinfo[k];
		if (ti->first != sum || ti->nops > hdr->nops - sum ||
		    (ti->spawner != UINT32_MAX && ti->spawner >= hdr->nthreads))
			die("%s", "damaged replay script (threads)");
		sum += ti->nops;
	}
	if (sum != hdr->nops || tinfo[hdr->main_thread].spawner != UINT32_MAX)
		die("%s", "damaged replay script (threads)");
	/* thr[].calls counts the SPAWNs of each thread here, and is reset. */
	for (uint32_t k = 0; k < hdr->nthreads; k++)
		for (uint64_t i = tinfo[k].first; i < tinfo[k].first + tinfo[k].nops; i++) {
			const struct ap_rs_op *o = &ops[i];
			uint32_t arg = ap_rs_arg(o);
			bool bad;
			switch (ap_rs_type(o)) {
			case AP_RS_MALLOC:
			case AP_RS_CALLOC:
			case AP_RS_ALIGNED:
			case AP_RS_REALLOC:
			case AP_RS_MOVE:
			case AP_RS_FREE:
				bad = o->slot >= hdr->nslots;
				break;
			case AP_RS_CYCLE:
			case AP_RS_WORK:
				bad = false;
				break;
			case AP_RS_SLEEP:
				bad = o->n > AP_RS_SLEEP_MAX_NS;
				break;
			case AP_RS_WAIT:
				bad = arg >= hdr->nthreads || o->n >= tinfo[arg].nops;
				break;
			case AP_RS_SPAWN:
				/* once, by the thread the table names */
				bad = arg >= hdr->nthreads || tinfo[arg].spawner != k || thr[arg].calls++;
				break;
			case AP_RS_SYNC:
				/* as many as the barrier's table says (counted in
				 * arrived[], then reset) */
				bad = o->n >= hdr->nsyncs || ++arrived[o->n] > sync_n[o->n];
				break;
			default:
				bad = true;
			}
			if (bad)
				die("%s", "damaged replay script (ops)");
		}
	for (uint32_t k = 0; k < hdr->nthreads; k++) {
		if (tinfo[k].spawner != UINT32_MAX && !thr[k].calls)
			die("%s", "damaged replay script (a thread nobody starts)");
		thr[k].calls = 0;
	}
	for (uint64_t k = 0; k < hdr->nsyncs; k++) {
		if (arrived[k] != sync_n[k])
			die("%s", "damaged replay script (barriers)");
		arrived[k] = 0;
	}
}

static uint64_t ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A line of /proc/self/status in kB ("VmRSS", "VmHWM"), 0 if unknown.
 * (getrusage's ru_maxrss is no use here: Linux carries it over exec, so
 * it holds the peak of the process that forked the runner.) */
static long status_kb(const char *key)
{
	char line[256];
	long v = 0;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The switch probe: two threads hand a turn to each other PROBE_TURNS
 * times through a futex word, each blocking until its turn comes, as a
 * program's threads block on a queue or a lock another holds. What one
 * switch costs (the process's CPU time over its context switches, the
 * futex calls included) is what advise prices the program's own switches
 * at, for objects it hands between threads (report/advise_verdict.c). */
#define PROBE_TURNS 4000u
static atomic_uint turn;

static void probe_turns(unsigned me)
{
	for (unsigned i = 0; i < PROBE_TURNS; i++) {
		unsigned t;
		while ((t = atomic_load_explicit(&turn, memory_order_acquire)) % 2 != me)
			futex(&turn, FUTEX_WAIT, t);
		atomic_fetch_add_explicit(&turn, 1, memory_order_release);
		futex(&turn, FUTEX_WAKE, 1);
	}
}

static void *probe_main(void *arg)
{
	(void)arg;
	probe_turns(1);
	return NULL;
}

static int switch_probe(void)
{
	struct rusage r0, r1;
	pthread_t th;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	int rc = pthread_create(&th, NULL, probe_main, NULL);
	if (rc)
		die("cannot start a thread: %s", strerror(rc));
	probe_turns(0);
	pthread_join(th, NULL);
	uint64_t cpu = ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	getrusage(RUSAGE_SELF, &r1);
	long sw = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
	printf("switch_ns=%llu switches=%ld cpu_ns=%llu\n",
	       (unsigned long long)(sw > 0 ? cpu / (uint64_t)sw : 0), sw, (unsigned long long)cpu);
	fflush(stdout);
	return ferror(stdout) ? 1 : 0;
}

/* What a page fault costs here when glibc has given the page back and a
 * write takes it again, as a replay's trimmed heap does: FAULT_PAGES pages
 * written a byte each and given back (MADV_DONTNEED), FAULT_ROUNDS times;
 * the process's CPU time over its minor faults. */
#define FAULT_PAGES 256
#define FAULT_ROUNDS 32
static int fault_probe(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = FAULT_PAGES * pg;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("cannot map %zu bytes: %s", len, strerror(errno));
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int r = 0; r < FAULT_ROUNDS; r++) {
		for (size_t i = 0; i < FAULT_PAGES; i++)
			((volatile char *)p)[i * pg] = (char)r;
		(void)madvise(p, len, MADV_DONTNEED);
	}
	uint64_t cpu = ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	getrusage(RUSAGE_SELF, &r1);
	long f = r1.ru_minflt - r0.ru_minflt;
	munmap(p, len);
	printf("fault_ns=%llu faults=%ld cpu_ns=%llu\n",
	       (unsigned long long)(f > 0 ? cpu / (uint64_t)f : 0), f, (unsigned long long)cpu);
	fflush(stdout);
	return ferror(stdout) ? 1 : 0;
}

static void batch_policy(void)
{
	/* No wakeup preemption: a replay thread woken when the op it waits
	 * for is done (one block of another thread's) does not take the CPU
	 * from the thread that did it. With it, the threads of a replay that
	 * share a CPU could fall into step, a switch per handed-over block,
	 * where the program waited per batch of its own: bench/twins'
	 * prodcons2, one script on one CPU, baseline 385-480 ms with 1.3-1.6 k
	 * page faults in most runs and 0.9-1.4 s with 118-304 k (glibc
	 * trimming the producer's arena at every message) in the others;
	 * under SCHED_BATCH 285-322 ms and 1.4-1.5 k faults in every run (the
	 * pooled run 156-173 ms either way). A thread that has a CPU to itself
	 * runs as before. A caller's real-time or idle policy is kept. */
	if (sched_getscheduler(0) == SCHED_OTHER) {
		struct sched_param sp = { 0 };
		(void)sched_setscheduler(0, SCHED_BATCH, &sp);
	}
}

/* A site and the script's other sites of its blocks, "S[,K...]" (at most
 * MAX_KINDS more): 0, or -1 when malformed. */
static int site_list(const char *a, uint32_t *site, uint32_t *more, unsigned *nmore)
{
	char *end;
	*nmore = 0;
	for (bool first = true; first || *a; first = false) {
		unsigned long long v = strtoull(a, &end, 10);
		if (end == a || (*end && *end != ',') || v >= AP_RS_NOSITE || (!first && *nmore == MAX_KINDS))
			return -1;
		if (first)
			*site = (uint32_t)v;
		else
			more[(*nmore)++] = (uint32_t)v;
		a = *end ? end + 1 : end;
		if (*end && !*a)
			return -1;
	}
	return 0;
}

/* A map of the script's sites with site and more[] set (mapped: nothing
 * here allocates but the replayed ops and the pool); NULL when one is
 * not the script's. */
static uint8_t *kinds_map(uint32_t site, const uint32_t *more, unsigned nmore)
{
	if (site >= hdr->nsites)
		return NULL;
	uint8_t *m = mmap(NULL, hdr->nsites, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("%s", "out of memory for the sites");
	m[site] = 1;
	for (unsigned k = 0; k < nmore; k++) {
		if (more[k] >= hdr->nsites)
			return NULL;
		m[more[k]] = 1;
	}
	return m;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--switch-probe")) {
		batch_policy();
		return switch_probe();
	}
	if (argc == 2 && !strcmp(argv[1], "--fault-probe"))
		return fault_probe();
	const char *graph = NULL;
	for (;;) {
		if (argc > 1 && !strcmp(argv[1], "--free-list")) {
			free_list = true;
			argv++;
			argc--;
		} else if (argc > 2 && !strcmp(argv[1], "--graph")) {
			graph = argv[2];
			argv += 2;
			argc -= 2;
		} else if (argc > 1 && !strcmp(argv[1], "--round-up")) {
			round_up = true;
			argv++;
			argc--;
		} else {
			break;
		}
	}
	if (argc != 4 && argc != 5)
		die("%s", "usage: allocprof-replay [--free-list | --graph SITES] [--round-up] FD SITE CAP [CLASSES], or "
			  "allocprof-replay --switch-probe or --fault-probe (run by allocprof advise)");
	char *end;
	long fd = strtol(argv[1], &end, 10);
	if (*end || fd < 0 || fd > INT_MAX)
		die("bad descriptor '%s'", argv[1]);
	long long site = -1;
	uint32_t site_more[MAX_KINDS];
	unsigned nsite_more = 0;
	if (strcmp(argv[2], "-1")) {
		uint32_t v;
		if (site_list(argv[2], &v, site_more, &nsite_more) < 0)
			die("bad site '%s'", argv[2]);
		site = v;
	}
	if (graph && nsite_more)
		die("%s", "--graph's root is one site");
	if (free_list && site < 0)
		die("%s", "--free-list wants a site");
	if (graph && (site < 0 || free_list || argc == 5))
		die("%s", "--graph wants a site, one pool, no --free-list");
	if (round_up && (site < 0 || argc != 5))
		die("%s", "--round-up wants a site and its classes");
	for (const char *g = graph; g && *g;) {
		unsigned long long v = strtoull(g, &end, 10);
		if (end == g || (*end && *end != ',') || nmembers == GRAPH_MAX || v >= AP_RS_NOSITE ||
		    v == (unsigned long long)site)
			die("bad --graph '%s' (member sites, not the root, %d at most)", graph, GRAPH_MAX);
		member_site[nmembers++] = (uint32_t)v;
		g = *end ? end + 1 : end;
	}
	if (graph && !nmembers)
		die("%s", "bad --graph '' (member sites, not the root)");
	unsigned long long cap = strtoull(argv[3], &end, 10);
	if (*end)
		die("bad cap '%s'", argv[3]);
	cap_limit = cap;
	if (argc == 5) {
		const char *c = argv[4];
		nclasses = 0;
		while (*c) {
			unsigned long long v = strtoull(c, &end, 10);
			if (end == c || (*end && *end != ',') || nclasses == MAX_CLASSES ||
			    (nclasses && v <= class_max[nclasses - 1]) || !v)
				die("bad classes '%s'", argv[4]);
			class_max[nclasses++] = v;
			c = *end ? end + 1 : end;
		}
		if (!nclasses)
			die("bad classes '%s'", argv[4]);
	}
	page = sysconf(_SC_PAGESIZE);
	const char *ts = getenv("ALLOCPROF_REPLAY_TOUCH");
	if (ts && *ts) {
		double v = strtod(ts, &end);
		if (*end || !(v >= 0 && v <= 1))
			die("bad ALLOCPROF_REPLAY_TOUCH '%s' (a share from 0 to 1)", ts);
		touch_share = v;
	}
	const char *ws = getenv("ALLOCPROF_REPLAY_WHOLE");
	uint32_t whole_more[MAX_KINDS];
	unsigned nwhole_more = 0;
	if (ws && *ws) {
		if (site_list(ws, &whole_site, whole_more, &nwhole_more) < 0)
			die("bad ALLOCPROF_REPLAY_WHOLE '%s' (a site, and its other kinds)", ws);
	}

	struct stat st;
	if (fstat((int)fd, &st) < 0)
		die("script: %s", strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(*hdr))
		die("%s", "script: not a replay script");
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, (int)fd, 0);
	if (map == MAP_FAILED)
		die("script: %s", strerror(errno));
	close((int)fd);
	hdr = map;
	tinfo = (const struct ap_rs_thread *)(hdr + 1);
	if (memcmp(hdr->magic, AP_RS_MAGIC, 8) || !hdr->nthreads || hdr->nthreads > AP_RS_ARG_MAX ||
	    (uint64_t)st.st_size < ap_rs_size(hdr->nthreads, 0, 0))
		die("%s", "not a replay script, or a damaged one");
	thr = mmap(NULL, hdr->nthreads * sizeof(*thr), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (thr == MAP_FAILED)
		die("%s", "out of memory for the threads");
	if (hdr->nsyncs > (uint64_t)st.st_size ||
	    (uint64_t)st.st_size < ap_rs_size(hdr->nthreads, hdr->nsyncs, 0))
		die("%s", "damaged replay script (header)");
	sync_n = (const uint32_t *)(tinfo + hdr->nthreads);
	ops = (const struct ap_rs_op *)((const char *)sync_n + ap_rs_sync_bytes(hdr->nsyncs));
	arrived = mmap(NULL, 2 * (hdr->nsyncs ? hdr->nsyncs : 1) * sizeof(*arrived),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	sleepers = arrived + (hdr->nsyncs ? hdr->nsyncs : 1);
	if (arrived == MAP_FAILED)
		die("%s", "out of memory for the barriers");
	check_script((uint64_t)st.st_size);
	if (site >= 0) {
		pool_kind = kinds_map((uint32_t)site, site_more, nsite_more);
		if (!pool_kind)
			die("no site '%s' in the script", argv[2]);
	}
	if (whole_site != AP_RS_NOSITE) {
		whole_kind = kinds_map(whole_site, whole_more, nwhole_more);
		if (!whole_kind)
			die("no site '%s' in the script (ALLOCPROF_REPLAY_WHOLE)", ws);
	}

	size_t slot_bytes = (hdr->nslots ? hdr->nslots : 1) * sizeof(struct slot);
	slots = mmap(NULL, slot_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		     -1, 0);
	if (slots == MAP_FAILED)
		die("%s", "out of memory for the slots");
	for (uint32_t k = 0; k < hdr->nthreads; k++) {
		thr[k].idx = k;
		thr[k].wake_at = UINT64_MAX;
	}
	if (nmembers) {
		/* mapped: nothing here allocates but the replayed ops and the
		 * pool (the spares' heads of roots' slots only are touched) */
		size_t nsl = hdr->nslots ? hdr->nslots : 1;
		member_of = mmap(NULL, hdr->nsites ? hdr->nsites : 1, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		spares_cap = (uint32_t)nsl;
		spares = mmap(NULL, nsl * nmembers * sizeof(*spares), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (member_of == MAP_FAILED || spares == MAP_FAILED)
			die("%s", "out of memory for the graph's spares");
		memset(member_of, -1, hdr->nsites);
		for (unsigned k = 0; k < nmembers; k++) {
			if (member_site[k] >= hdr->nsites)
				die("no site '%u' in the script", member_site[k]);
			member_of[member_site[k]] = (int8_t)k;
		}
	}
	if (site >= 0) {
		chosen = (uint32_t)site;
		for (unsigned k = 0; k < nclasses && !free_list; k++)
			if (vpool_init(&pools[k], 0, release, NULL) < 0)
				die("%s", "cannot make the pool");
	}
	atomic_store(&running, hdr->nthreads);
	batch_policy();
	/* On one CPU the thread waited for cannot run while its waiter
	 * spins: sleep at once (prodcons' replay: 41 ms of 250 ms wall
	 * time spun, for nothing). */
	cpu_set_t aff;
	if (sched_getaffinity(0, sizeof(aff), &aff) == 0 && CPU_COUNT(&aff) == 1)
		wait_spins = 0;

	struct rusage r0, r1;
	long rss0 = status_kb("VmRSS");
	getrusage(RUSAGE_SELF, &r0);
	uint64_t c0 = ns(CLOCK_PROCESS_CPUTIME_ID), w0 = ns(CLOCK_MONOTONIC);
	for (uint32_t k = 0; k < hdr->nthreads; k++)
		if (tinfo[k].spawner == UINT32_MAX && k != hdr->main_thread)
			spawn(k);
	run(&thr[hdr->main_thread]);
	atomic_fetch_sub(&running, 1);
	for (unsigned r; (r = atomic_load(&running)) != 0;)
		futex(&running, FUTEX_WAIT, r);
	uint64_t c1 = ns(CLOCK_PROCESS_CPUTIME_ID), w1 = ns(CLOCK_MONOTONIC);
	getrusage(RUSAGE_SELF, &r1);

	uint64_t calls = 0, hits = 0, spin = 0, wakes = 0, early = 0;
	for (uint32_t k = 0; k < hdr->nthreads; k++) {
		calls += thr[k].calls;
		hits += thr[k].hits;
		spin += thr[k].spin_ns;
		wakes += thr[k].wakes;
		early += thr[k].early;
	}
	/* The spinning is the harness's (above); it cannot exceed the CPU
	 * time, but keep the figure sane if the clocks disagree. */
	uint64_t cpu = c1 - c0;
	cpu = spin < cpu ? cpu - spin : 0;
	cpu_set_t cpus;
	int ncpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
	printf("cpu_ns=%llu wall_ns=%llu minflt=%ld majflt=%ld maxrss_kb=%ld rss0_kb=%ld calls=%llu "
	       "hits=%llu spin_ns=%llu cpus=%d wakes=%llu early=%llu\n",
	       (unsigned long long)cpu, (unsigned long long)(w1 - w0), r1.ru_minflt - r0.ru_minflt,
	       r1.ru_majflt - r0.ru_majflt, status_kb("VmHWM"), rss0, (unsigned long long)calls,
	       (unsigned long long)hits, (unsigned long long)spin, ncpus, (unsigned long long)wakes,
	       (unsigned long long)early);
	fflush(stdout);
	_exit(ferror(stdout) ? 1 : 0);
}
