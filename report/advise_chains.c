/* Growth by copy (ap_advise_joins in ap_advise.h): the blocks of one
 * object that a program grows by hand, found in an --all trace so that
 * advise's model and its measured replay see one object that grows, as
 * they see a realloc chain.
 *
 * libstdc++ grows a std::string or a std::vector past its capacity by
 * allocating a new block (twice the capacity, or what the append needs),
 * copying the old one into it and freeing the old one: a realloc by hand,
 * where glibc's realloc would be one call the trace sees. A log line
 * built by 10-200 appends is then six to nine blocks born at as many
 * lines of the function that appends, and a pool of any one line's blocks
 * is not the pool a C++ engineer would write (a pool of strings, reused
 * with their capacity: after a few requests nothing grows).
 *
 * The rule, kept tight so that unrelated blocks (a ring that allocates
 * the next message and frees the last one) are not joined: the new block
 * B is an allocation (not a realloc's half) whose thread's very next
 * event is the free (not a realloc) of a live block A of the same thread
 * or another, where
 *   - B is twice A's size, give or take a byte (libstdc++'s strings
 *     grow to 2n - 1 bytes with their NUL, vectors to 2n; libc++ and
 *     Rust double too), or 2n + 100 (glibc's asprintf and open_memstream
 *     buffers), or more than twice (what an append needs: 1 % of
 *     strcat's growths) where B's site is not A's (another line). A
 *     looser rule (B at least 1.5 A) also joined a ring of 32-160 byte
 *     results whenever the next was 1.5 times the last (5,106 of
 *     bench/twins' midbuf's 20,000, all at one line) and a parser's
 *     strings made by one wrapper (3,079 of jsonnodes'); this one joins
 *     163 and 144 of them. And
 *   - B's and A's sites are in the same function of the program (the
 *     appends of one function, each at its own line), called directly or
 *     through the C++ standard library, not Rust's (its Vec and String
 *     grow by realloc); not a site that is the program's
 *     call of a C library (sqlite3_step: everything the library allocates
 *     in that call is that one site's, and such libraries grow by
 *     realloc), unless B is exactly 2n + 100 (glibc's string streams:
 *     open_memstream's buffer, grown by the fprintf calls that follow).
 * Then B continues A's object. A chain joins block by block. */
#include <stdlib.h>
#include <string.h>

#include "ap_advise.h"
#include "ap_hash.h"
#include "ap_replay.h"
#include "advise-int.h"

#define NONE UINT32_MAX
#define VIA_C (1u << 31)	/* (in a function's number: a C library's call) */
/* glibc's string streams (asprintf's buffer, open_memstream's) grow to
 * 2n + 100 bytes (_IO_str_overflow) */
#define STREAM_GROWTH 100

struct chain_thread {
	/* its last event's index if that event began an object that its
	 * next event may join (SIZE_MAX: it did not), and what that was
	 * before the event being handled (the replay's consumer: ch_event) */
	size_t began, before;
	uint64_t alloc_size;	/* the object `began`'s size and stack */
	uint32_t alloc_stack;
	/* The allocation before `began`'s (began2, before2 as above), when
	 * `began`'s is of the same site: a vector's new buffer, then the
	 * element emplace_back constructs in it, then the old buffer's free
	 * (libstdc++'s _M_realloc_insert), where the free joins the buffer
	 * two events back. */
	size_t began2, before2;
	uint64_t alloc_size2;
	uint32_t alloc_stack2;
	/* its events still to come (a resolved trace's pass: one whose last
	 * event is an allocation leaves no join pending) */
	uint64_t left;
};

struct advise_chains {
	const struct ap_trace *t;
	uint32_t *func_of_stack;	/* NONE: no function */
	const uint32_t *site_of_stack;
	struct chain_thread *th;	/* nthreads + 1 (the last: out of range) */
	struct ap_replay_join *j;
	size_t n, alloc;
	/* every join found by a pass of their own (advise_chains_complete):
	 * the events given later add none */
	bool complete;
};

static inline struct chain_thread *ch_thread(struct advise_chains *C, uint32_t thread)
{
	return &C->th[thread < C->t->nthreads ? thread : C->t->nthreads];
}

static uint32_t ch_func(const struct advise_chains *C, uint32_t stack)
{
	return stack < C->t->nstacks ? C->func_of_stack[stack] : NONE;
}

static uint32_t ch_site(const struct advise_chains *C, uint32_t stack)
{
	return stack < C->t->nstacks ? C->site_of_stack[stack] : NONE;
}

/* ALLOC e at i began an object (a realloc of an untracked block never
 * begins a chain); `pending`: the allocation the event before it began
 * (SIZE_MAX: none), kept two deep when it is of e's site. */
static inline void ch_began(const struct advise_chains *C, struct chain_thread *th, size_t pending,
			    size_t i, const struct ap_event *e, uint64_t size, uint32_t stack)
{
	th->began2 = SIZE_MAX;
	if (e->flags & AP_EVF_REALLOC) {
		th->began = SIZE_MAX;
		return;
	}
	if (pending != SIZE_MAX && ch_site(C, th->alloc_stack) == ch_site(C, stack) &&
	    ch_site(C, stack) != NONE) {
		th->began2 = pending;
		th->alloc_size2 = th->alloc_size;
		th->alloc_stack2 = th->alloc_stack;
	}
	th->began = i;
	th->alloc_size = size;
	th->alloc_stack = stack;
}

static bool is_prime(uint64_t n)
{
	if (n < 2 || (n > 2 && n % 2 == 0))
		return false;
	for (uint64_t d = 3; d * d <= n; d += 2)
		if (n % d == 0)
			return false;
	return true;
}

/* Whether a bucket array of a_size bytes grew to b_size as a hash table's
 * do: a prime number of pointers to another prime at least twice as many
 * and at most 2.25 times (libstdc++'s unordered containers: 13, 29, 59,
 * 127, 257, 541, 1109, 2357 ... buckets; libc++'s: the next prime after
 * 2n). The table allocates the new array, moves its nodes over and frees
 * the old one; its nodes are born between, so that a map's nodes were
 * born before its latest array, and the map (bench/twins' grpindex,
 * 3.6 arrays a map) was no one object that owns its nodes. */
static bool buckets_grow(uint64_t a_size, uint64_t b_size)
{
	const uint64_t ptr = sizeof(void *);
	if (a_size % ptr || b_size % ptr || b_size < 2 * a_size || 4 * b_size > 9 * a_size ||
	    b_size / ptr > UINT32_MAX)
		return false;
	return is_prime(a_size / ptr) && is_prime(b_size / ptr);
}

/* Whether block b (b_size, at b_stack's site) is one of a_size (at a_stack's)
 * grown as containers grow: to twice the capacity (libstdc++'s strings
 * 2n - 1 with their NUL, vectors, Rust's Vec and String, libc++ at
 * 16-byte steps 2n), or to 2n + 100 (glibc's string streams: asprintf's
 * and open_memstream's buffer, whose growths inside vfprintf are the
 * program's call's site); or a hash table's bucket array
 * (buckets_grow); or to more, what an append needs, at another site
 * (line) than the block it grows (one line makes more than twice only by
 * chance: a ring of results of random sizes, a wrapper's strings). */
static inline bool grows(const struct advise_chains *C, uint64_t a_size, uint32_t a_stack,
			 uint64_t b_size, uint32_t b_stack)
{
	if (!a_size || b_size <= a_size || b_size + 1 < 2 * a_size)
		return false;
	return b_size <= 2 * a_size + 1 || b_size == 2 * a_size + STREAM_GROWTH ||
	       buckets_grow(a_size, b_size) || ch_site(C, a_stack) != ch_site(C, b_stack);
}

/* FREE e ended block a (addr, size, stack): the join, if the allocation
 * bi (SIZE_MAX: none) of b_size at b_stack, its thread's event before
 * it or the one before that (ch_began), began an object that grows a.
 * Whether it joined. */
static inline bool ch_join(struct advise_chains *C, size_t bi, uint64_t b_size, uint32_t b_stack,
			   const struct ap_event *e, uint64_t addr, uint64_t size, uint32_t stack)
{
	if (bi == SIZE_MAX || (e->flags & AP_EVF_FROM_REALLOC))
		return false;
	if (!grows(C, size, stack, b_size, b_stack))
		return false;
	uint32_t f = ch_func(C, b_stack), g = ch_func(C, stack);
	if (f == NONE || g == NONE || (f & ~VIA_C) != (g & ~VIA_C))
		return false;
	/* a C library's call: its buffer grown by the library between the
	 * program's calls (open_memstream's, by fprintf) */
	if (((f | g) & VIA_C) && b_size != 2 * size + STREAM_GROWTH)
		return false;
	/* (ascending by i: found when its thread's next event comes, a join
	 * of a thread that went quiet comes after those of later events) */
	AP_ALLOC_GROW(C->j, C->n + 1, C->alloc);
	size_t k = C->n++;
	for (; k && C->j[k - 1].i > bi; k--)
		C->j[k] = C->j[k - 1];
	C->j[k] = (struct ap_replay_join){ .i = bi, .addr = addr, .size = size, .stack = stack };
	return true;
}

/* FREE e ended block a: joined to the allocation just before it, or
 * else to the one before that (bi2: the buffer of a vector whose growth
 * constructed an element of the same site in it first). */
static inline void ch_ended(struct advise_chains *C, const struct chain_thread *th, size_t bi, size_t bi2,
			    const struct ap_event *e, uint64_t addr, uint64_t size, uint32_t stack)
{
	if (!ch_join(C, bi, th->alloc_size, th->alloc_stack, e, addr, size, stack))
		ch_join(C, bi2, th->alloc_size2, th->alloc_stack2, e, addr, size, stack);
}

/* The replay's consumer (a trace not resolved). */
static void ch_event(void *ctx, size_t i, const struct ap_event *e)
{
	(void)i;
	struct chain_thread *th = ch_thread(ctx, e->thread);
	th->before = th->began;
	th->began = SIZE_MAX;
	th->before2 = th->began2;
	th->began2 = SIZE_MAX;
}

static void ch_alloc(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *b)
{
	struct chain_thread *th = ch_thread(ctx, e->thread);
	ch_began(ctx, th, th->before, i, e, b->size, b->stack);
}

static void ch_free(void *ctx, size_t i, const struct ap_event *e, const struct ap_replay_block *a)
{
	(void)i;
	struct chain_thread *th = ch_thread(ctx, e->thread);
	ch_ended(ctx, th, th->before, th->before2, e, a->addr, a->size, a->stack);
}

/* A run of n events of thread h ended: the last of its events, an
 * allocation there leaves no join pending. */
static inline void ch_run_ends(struct chain_thread *h, size_t n)
{
	h->left -= n;
	if (!h->left)
		h->began = h->began2 = SIZE_MAX;
}

/* Events base.. of a resolved trace, from the events alone: the
 * replay's calls above, without the replay (its rule:
 * ap_replay_resolved_free; an ALLOC half of a realloc, a grow or not,
 * never begins a chain). */
void advise_chains_events(struct advise_chains *C, size_t base, const struct ap_event *ev, size_t n)
{
	if (C->complete)
		return;
	/* (the last event's thread's, looked up again when it changes; its
	 * events counted off `left` a run at a time) */
	uint32_t thread = 0;
	struct chain_thread *h = ch_thread(C, 0);
	size_t run = 0;
	for (size_t j = 0; j < n; j++) {
		const struct ap_event *e = &ev[j];
		if (e->thread != thread) {
			ch_run_ends(h, j - run);
			run = j;
			thread = e->thread;
			h = ch_thread(C, thread);
		}
		if (e->type == AP_EV_ALLOC) {
			ch_began(C, h, h->began, base + j, e, e->size, (e->flags & AP_EVF_SAMPLED) ? e->stack : 0);
			continue;
		}
		size_t before = h->began, before2 = h->began2;
		h->began = h->began2 = SIZE_MAX;
		if (ap_replay_resolved_free(e))
			ch_ended(C, h, before, before2, e, e->addr, e->size, e->stack);
	}
	ch_run_ends(h, n - run);
}

/* Whether site s is the program's call of a C library (sqlite3_step,
 * opendir): every allocation inside that call is the site's, so the
 * site's function says nothing of which are one object's (the library
 * grows its own by realloc). The C++ standard library's calls are the
 * growth this is about. */
static bool via_c_library(const struct ap_site_map *m, size_t s)
{
	return m->via && m->via[s] && strncmp(m->via[s], "std::", 5) != 0;
}

/* Each stack's function: its site's (function, file), numbered, with
 * VIA_C where the site is the program's call of a C library
 * (via_c_library: joined only by glibc's stream growth); NONE where no
 * join can be (no function). */
static uint32_t *funcs_of_stacks(const struct ap_trace *t, const struct ap_site_map *m)
{
	uint32_t *func_of_site = ap_xmalloc((m->nsites ? m->nsites : 1) * sizeof(*func_of_site));
	struct ap_intern names = { 0 };
	struct ap_buf key = AP_BUF_INIT;
	for (size_t s = 0; s < m->nsites; s++) {
		ap_buf_reset(&key);
		ap_buf_addf(&key, "%s\t%s", m->function[s] ? m->function[s] : "",
			    m->file && m->file[s] ? m->file[s] : "");
		bool added;
		/* (Rust's Vec and String grow by realloc: a block of a Rust
		 * frame's twice another's is two objects, rswords' 9,828 Strings
		 * joined by chance) */
		func_of_site[s] = m->function[s] && !(m->rust && m->rust[s])
					  ? ap_intern_add(&names, key.buf, key.len, &added) |
						    (via_c_library(m, s) ? VIA_C : 0)
					  : NONE;
	}
	ap_intern_release(&names);
	ap_buf_release(&key);
	uint32_t *f = ap_xmalloc((t->nstacks ? t->nstacks : 1) * sizeof(*f));
	for (size_t k = 0; k < t->nstacks; k++) {
		uint32_t s = m->site_of_stack[k];
		f[k] = s < m->nsites ? func_of_site[s] : NONE;
	}
	free(func_of_site);
	return f;
}

/* No event given yet. (An event of a thread out of range, which a
 * resolved trace does not have, never ends one's pending join.) */
static void chains_reset(struct advise_chains *C)
{
	const struct ap_trace *t = C->t;
	for (size_t k = 0; k <= t->nthreads; k++)
		C->th[k] = (struct chain_thread){ .began = SIZE_MAX, .before = SIZE_MAX,
						  .began2 = SIZE_MAX, .before2 = SIZE_MAX,
						  .left = k < t->nthreads ? t->threads[k].events : UINT64_MAX };
	C->n = 0;
}

struct advise_chains *advise_chains_new(const struct ap_trace *t, const struct ap_site_map *m)
{
	const char *env = getenv("ALLOCPROF_GROWTH_BY_COPY");
	if (t->rate > 1 || !m->site_of_stack || !m->function || !t->nev || (env && !strcmp(env, "0")))
		return NULL;
	struct advise_chains *C = ap_xcalloc(1, sizeof(*C));
	*C = (struct advise_chains){ .t = t, .func_of_stack = funcs_of_stacks(t, m),
			      .site_of_stack = m->site_of_stack };
	C->th = ap_xmalloc((t->nthreads + 1) * sizeof(*C->th));
	chains_reset(C);
	return C;
}

size_t advise_chains_horizon(const struct advise_chains *C)
{
	size_t h = SIZE_MAX;
	if (!C->complete)
		for (size_t k = 0; k <= C->t->nthreads; k++) {
			/* (a block of no function's joins nothing) */
			if (C->th[k].began < h && ch_func(C, C->th[k].alloc_stack) != NONE)
				h = C->th[k].began;
			if (C->th[k].began2 < h && ch_func(C, C->th[k].alloc_stack2) != NONE)
				h = C->th[k].began2;
		}
	return h;
}

const struct ap_replay_join *advise_chains_found(const struct advise_chains *C, size_t *n)
{
	*n = C->n;
	return C->j;
}

void advise_chains_end(struct advise_chains *C, struct ap_replay_join **out, size_t *n)
{
	if (out) {
		*out = NULL;
		*n = 0;
	}
	if (!C)
		return;
	if (out) {
		*out = C->j;
		*n = C->n;
	} else {
		free(C->j);
	}
	free(C->func_of_stack);
	free(C->th);
	free(C);
}

/* The chains of a resolved trace, from its events alone. */
static int chains_of_events(struct advise_chains *C, struct ap_error *err)
{
	struct ap_events *it = ap_events_open(C->t);
	const struct ap_event *ev;
	ssize_t got;
	size_t base = 0;
	while ((got = ap_events_next(it, &ev)) > 0) {
		advise_chains_events(C, base, ev, (size_t)got);
		base += (size_t)got;
	}
	int rc = got < 0 ? ap_error_set(err, "%s", ap_events_error(it)) : 0;
	ap_events_close(it);
	return rc;
}

int advise_chains_complete(struct advise_chains *C, struct ap_error *err)
{
	if (C->complete)
		return 0;
	chains_reset(C);
	if (chains_of_events(C, err) < 0)
		return -1;
	C->complete = true;
	return 0;
}

int ap_advise_joins(const struct ap_trace *t, const struct ap_site_map *m,
		    struct ap_replay_join **out, size_t *n, struct ap_error *err)
{
	*out = NULL;
	*n = 0;
	struct advise_chains *C = advise_chains_new(t, m);
	if (!C)
		return 0;
	/* (the old block's address: the identity its FREE names it by, with
	 * or without the live map) */
	static const struct ap_replay_ops ops = {
		.event = ch_event,
		.alloc = ch_alloc,
		.free = ch_free,
	};
	struct ap_replay_consumer c = { &ops, C };
	if ((t->resolved ? chains_of_events(C, err) : ap_replay(t, &c, 1, NULL, err)) < 0) {
		advise_chains_end(C, NULL, NULL);
		return -1;
	}
	advise_chains_end(C, out, n);
	return 0;
}
