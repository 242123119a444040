/* liballocprof.so: the preloaded sampler. Interposes the malloc family,
 * samples allocations by a Poisson process over bytes (or records every one
 * with rate 1), unwinds sampled stacks with libunwind and writes the trace
 * of docs/trace-format.md. Nothing here may call malloc on its own behalf:
 * memory comes from mmap, output goes out with write(2), and whatever glibc
 * or libunwind allocate for us passes through under the per-thread guard. */
#include "stacks.h"
__thread struct ap_tls tls __attribute__((tls_model("initial-exec")));

int ap_state = AP_INIT;

pid_t ap_pid;
unsigned ap_gen;		/* exec generation of this pid (0: first image) */

int64_t draw_interval(struct ap_tls *t)
{
	if (ap_rate <= 1)
		return 0;
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	uint64_t r = x * 0x2545f4914f6cdd1dull;
	double u = ((double)(r >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double v = -log(u) * (double)ap_rate;
	if (v > 1e15)
		v = 1e15;
	return (int64_t)v;
}

/* ---- the sampled paths -------------------------------------------------- */

static inline __attribute__((always_inline)) void record_alloc(struct ap_tls *t, void *p, size_t n,
								unsigned kind, uint64_t ret,
								uint64_t cfa)
{
	/* an address the program now owns is not ours, even if its free
	 * reached glibc without passing through us */
	if (ap_all)
		own_forget(p);
	uint32_t id = stack_here(t, ret, cfa);
	if (!id)
		return;
	if (!ap_all)
		set_insert(p);
	emit(t, AP_EV_ALLOC, kind, (uintptr_t)p, 0, n, id, 0);
}

/* The countdown went negative (or the thread is new, or the sampler is not
 * running): decide, and record if sampled. */
static inline __attribute__((always_inline)) void *alloc_slow_body(void *p, size_t n,
								    unsigned kind,
								    uint64_t caller,
								    uint64_t cfa)
{
	struct ap_tls *t = &tls;
	int st = __atomic_load_n(&ap_state, __ATOMIC_ACQUIRE);
	if (t->guard || st != AP_ON) {
		if (st == AP_DISABLED) {
			t->countdown = INT64_MAX / 2;
		} else {
			/* our own allocation, or not started yet: not counted
			 * now (pre_replay counts the program's early ones) */
			t->countdown = (int64_t)((uint64_t)t->countdown + n + 1);
			t->calls--;
			if (st == AP_INIT && !t->guard && p)
				pre_add(PRE_ALLOC, p, n, kind, caller);
			else if (st == AP_ON && ap_all && p)
				ps_insert(&own_blocks, p);
		}
		return p;
	}
	int saved = errno;
	t->guard = 1;
	if (!t->thr)
		thr_register(t);
	if (t->countdown < 0) {
		t->consumed += (uint64_t)(t->interval - t->countdown);
		t->interval = draw_interval(t);
		t->countdown = t->interval;
		if (p)
			record_alloc(t, p, n, kind, caller, cfa);
	}
	t->guard = 0;
	errno = saved;
	return p;
}

/* caller and cfa: the program's return address and its CFA at the call of
 * the entry point (0 if unknown) */
static __attribute__((noinline)) void *alloc_slow(void *p, size_t n, unsigned kind,
						    uint64_t caller, uint64_t cfa)
{
	return alloc_slow_body(p, n, kind, caller, cfa);
}

static inline __attribute__((always_inline)) void *account(void *p, size_t n,
							    unsigned kind)
{
	struct ap_tls *t = &tls;
	t->calls++;
	int64_t c = (int64_t)((uint64_t)t->countdown - n - 1);
	t->countdown = c;
	if (UNLIKELY(c < 0)) /* inlined: the return address is the entry point's */
		return alloc_slow(p, n, kind, (uint64_t)(uintptr_t)__builtin_return_address(0),
				  (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
	return p;
}

/* A block is being freed: record it if it was tracked. Called before the
 * real free so that a block reused at once by another thread is seen
 * allocated after this free. */
static __attribute__((noinline)) void free_slow(void *p)
{
	struct ap_tls *t = &tls;
	if (!p || is_boot(p))
		return;
	int st = __atomic_load_n(&ap_state, __ATOMIC_ACQUIRE);
	if (t->guard || st != AP_ON) {
		if (st == AP_INIT && !t->guard)
			pre_add(PRE_FREE, p, 0, 0, 0);
		else if (!ap_all)
			set_remove(p);
		else
			own_forget(p);
		real_free(p);
		return;
	}
	int saved = errno;
	t->guard = 1;
	if (ap_all ? !own_forget(p) : set_remove(p)) {
		if (!t->thr)
			thr_register(t);
		emit(t, AP_EV_FREE, 0, (uintptr_t)p, 0, 0, 0, 0);
	}
	t->guard = 0;
	errno = saved;
	real_free(p);
}

/* ---- the interposed entry points --------------------------------------- */

/* Only calls that succeed are counted (a NULL is no allocation, and
 * valgrind does not count it either). A request below MALLOC_CHECK_MIN
 * fails only when the heap cannot grow at all (the process is out of
 * memory), and its fast path stays what a bare forwarding shim does: the
 * countdown, then the real malloc as a tail call (no frame, no return
 * through us; checking the result costs ~1.3 ns a pair on the 64-byte
 * loop, as much as the rest of the fast path). A larger one, which may
 * simply be too large, is checked first. */
#define MALLOC_CHECK_MIN 4096

/* malloc tail-jumped here: our return address is the program's */
static __attribute__((noinline)) void *malloc_slow(size_t n)
{
	return alloc_slow_body(real_malloc(n), n, AP_KIND_MALLOC,
			       (uint64_t)(uintptr_t)__builtin_return_address(0),
			       (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
}

static __attribute__((noinline)) void *malloc_checked(size_t n)
{
	void *p = real_malloc(n);
	return LIKELY(p != NULL) ? account(p, n, AP_KIND_MALLOC) : p;
}

EXPORT void *malloc(size_t n)
{
	if (UNLIKELY(n >= MALLOC_CHECK_MIN))
		return malloc_checked(n);
	struct ap_tls *t = &tls;
	t->calls++;
	int64_t c = (int64_t)((uint64_t)t->countdown - n - 1);
	t->countdown = c;
	if (UNLIKELY(c < 0))
		return malloc_slow(n);
	return real_malloc(n);
}

EXPORT void free(void *p)
{
	if (UNLIKELY(ap_filter[filter_slot(p)])) {
		free_slow(p);
		return;
	}
	real_free(p);
}

void cfree(void *p); /* obsolete, no longer declared by glibc */
EXPORT void cfree(void *p)
{
	free(p);
}

EXPORT void *calloc(size_t a, size_t b)
{
	size_t n;
	void *p = real_calloc(a, b);
	if (UNLIKELY(!p || __builtin_mul_overflow(a, b, &n)))
		return p; /* failed (ENOMEM, also on overflow): not counted */
	return account(p, n, AP_KIND_CALLOC);
}

/* realloc and reallocarray: the old block leaves the set before the real
 * call (it may be reused by another thread as soon as it is freed) and
 * goes back if the call fails. */
static void *realloc_common(void *old, size_t n, void *q, int was_tracked,
			    unsigned kind, uint64_t caller, uint64_t cfa)
{
	struct ap_tls *t = &tls;
	if (was_tracked == 2) {
		/* before ap_init: logged as the free of old and an allocation,
		 * which is how valgrind counts a realloc */
		if (q || n == 0)
			pre_add(PRE_FREE, old, 0, 0, 0);
		if (q)
			pre_add(PRE_ALLOC, q, n, kind, caller);
		return q;
	}
	if (!q) {
		if (n == 0) {
			/* glibc: realloc(p, 0) freed p */
			if (was_tracked && !t->guard) {
				int saved = errno;
				t->guard = 1;
				if (!t->thr)
					thr_register(t);
				emit(t, AP_EV_FREE, 0, (uintptr_t)old, 0, 0, 0, 0);
				t->guard = 0;
				errno = saved;
			}
		} else if (was_tracked && !ap_all) {
			set_insert(old); /* failed: old is still live */
		}
		return q;
	}
	t->calls++;
	t->countdown = (int64_t)((uint64_t)t->countdown - n - 1);
	if (LIKELY(t->countdown >= 0 && !was_tracked))
		return q;
	int st = __atomic_load_n(&ap_state, __ATOMIC_ACQUIRE);
	if (t->guard || st != AP_ON) {
		if (t->countdown < 0)
			alloc_slow(NULL, n, kind, 0, 0); /* undoes the countdown */
		if (st == AP_ON && ap_all && own_forget(old))
			ps_insert(&own_blocks, q);
		return q;
	}
	int saved = errno;
	t->guard = 1;
	if (!t->thr)
		thr_register(t);
	unsigned flags = was_tracked ? AP_RF_OLD_TRACKED : 0;
	uint32_t id = 0;
	if (t->countdown < 0) {
		t->consumed += (uint64_t)(t->interval - t->countdown);
		t->interval = draw_interval(t);
		t->countdown = t->interval;
		id = stack_here(t, caller, cfa);
		if (id)
			flags |= AP_RF_NEW_SAMPLED;
	}
	if (flags) {
		if (!ap_all)
			set_insert(q);
		emit(t, AP_EV_REALLOC, kind, (uintptr_t)old, (uintptr_t)q, n, id,
		     flags);
	}
	t->guard = 0;
	errno = saved;
	return q;
}

static inline int take_tracked(void *old)
{
	if (LIKELY(!ap_filter[filter_slot(old)]))
		return 0;
	if (UNLIKELY(__atomic_load_n(&ap_state, __ATOMIC_ACQUIRE) == AP_INIT))
		return tls.guard ? 0 : 2; /* 2: an early block (see pre_log) */
	if (ap_all)
		return __atomic_load_n(&ap_state, __ATOMIC_ACQUIRE) == AP_ON &&
		       !tls.guard;
	return set_remove(old);
}

EXPORT void *realloc(void *old, size_t n)
{
	if (!old) {
		void *p = real_realloc(NULL, n);
		return p ? account(p, n, AP_KIND_REALLOC) : p;
	}
	if (UNLIKELY(is_boot(old)))
		return boot_move(old, n);
	int tracked = take_tracked(old);
	return realloc_common(old, n, real_realloc(old, n), tracked,
			      AP_KIND_REALLOC, (uint64_t)(uintptr_t)__builtin_return_address(0),
			      (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
}

/* glibc's reallocarray is the overflow check followed by a call of realloc
 * through the PLT, which would reach our realloc and count twice: do the
 * same here, on the real realloc. */
EXPORT void *reallocarray(void *old, size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!old) {
		void *p = real_realloc(NULL, n);
		return p ? account(p, n, AP_KIND_REALLOCARRAY) : p;
	}
	if (UNLIKELY(is_boot(old)))
		return boot_move(old, n);
	int tracked = take_tracked(old);
	return realloc_common(old, n, real_realloc(old, n), tracked,
			      AP_KIND_REALLOCARRAY, (uint64_t)(uintptr_t)__builtin_return_address(0),
			      (uint64_t)(uintptr_t)__builtin_dwarf_cfa());
}

EXPORT int posix_memalign(void **out, size_t al, size_t n)
{
	int rc = real_posix_memalign(out, al, n);
	if (rc == 0)
		account(*out, n, AP_KIND_ALIGNED);
	return rc;
}

EXPORT void *aligned_alloc(size_t al, size_t n)
{
	void *p = real_aligned_alloc(al, n);
	return p ? account(p, n, AP_KIND_ALIGNED) : p;
}

EXPORT void *memalign(size_t al, size_t n)
{
	void *p = real_memalign(al, n);
	return p ? account(p, n, AP_KIND_ALIGNED) : p;
}

EXPORT void *valloc(size_t n)
{
	void *p = real_valloc(n);
	return p ? account(p, n, AP_KIND_ALIGNED) : p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p = real_pvalloc(n);
	/* pvalloc allocates n rounded up to a page (and valgrind counts that):
	 * the rounded size is the request. */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return p ? account(p, (n + pg - 1) & ~(pg - 1), AP_KIND_ALIGNED) : p;
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (UNLIKELY(is_boot(p)))
		return boot_size(p);
	return real_usable_size(p);
}

/* ---- process lifecycle -------------------------------------------------- */

/* exit()'s status, for END: on_exit hands it over (a return from main is
 * an exit too), before the destructors run. */
static int exit_seen;
static int exit_status;

static void note_exit(int status, void *arg)
{
	exit_status = status;
	exit_seen = 1;
}

/* on_exit handlers run last registered first, and __libc_start_main
 * registers the loader's destructor pass (which runs ap_fini) after the
 * preloaded libraries' constructors: note_exit is registered from the
 * program's main, through __libc_start_main, so that it runs before. */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int main_wrapper(int argc, char **argv, char **envp)
{
	on_exit(note_exit, NULL);
	return real_main(argc, argv, envp); /* a tail call: no frame of ours */
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
		      void (*fini)(void), void (*rtld_fini)(void), void *stack_end);

EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
			     void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	int (*real)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
		    void *) = must_sym("__libc_start_main");
	real_main = main;
	return real(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso); /* glibc's, not declared */

/* The end of a normal exit. Registered by ap_fini while exit() runs the
 * ELF destructors (_dl_fini, itself the first exit handler registered and
 * so the last to run): glibc runs a handler registered meanwhile after
 * _dl_fini returns, that is after every library's destructor. */
static void ap_last(void *unused)
{
	(void)unused;
	tls.guard++;
	end_trace(AP_END_EXIT, exit_seen, (uint64_t)(exit_status & 0xff), 0);
	tls.guard--;
}

/* Destructors run in the reverse of the initialization order, and the
 * preloaded library is initialized after the libraries the program links:
 * theirs run after this one, and their frees are part of the program's
 * life. So recording goes on: everything so far is flushed (a crash in a
 * later destructor keeps it) and the trace ends in ap_last. */
__attribute__((destructor)) static void ap_fini(void)
{
	tls.guard++;
	if (ap_state == AP_ON && ap_pid == sys_getpid()) {
		flush_all(0);
		/* not atexit(): that names this library's handle, and this
		 * library's own __cxa_finalize (its last destructor) would run
		 * ap_last right away */
		if (__cxa_atexit(ap_last, NULL, NULL) != 0)
			end_trace(AP_END_EXIT, exit_seen, (uint64_t)(exit_status & 0xff), 0);
	}
	tls.guard--;
}

/* _exit and _Exit skip atexit and destructors: the trace ends here. */
static __attribute__((noreturn)) void leave(void (*real)(int), int status)
{
	tls.guard++;
	end_trace(AP_END_UNDERSCORE_EXIT, 1, (uint64_t)(status & 0xff), 0);
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _exit(int status)
{
	leave(real__exit, status);
}

EXPORT void _Exit(int status)
{
	leave(real__Exit, status);
}

/* fork: no profiler lock may be held across it, and the child starts a
 * trace of its own. */
static sigset_t fork_mask;	/* the forking thread's mask (list_lock held) */

static void fork_prepare(void)
{
	sigset_t mask;
	sig_block(&mask);
	tls.guard++;
	lk_lock(&list_lock);
	lk_lock(&fallback.lock);
	lk_lock(&meta_lock);
	lk_lock(&tracked_set.lock);
	lk_lock(&own_blocks.lock);
	fork_mask = mask;
}

static void fork_parent(void)
{
	sigset_t mask = fork_mask;
	lk_unlock(&own_blocks.lock);
	lk_unlock(&tracked_set.lock);
	lk_unlock(&meta_lock);
	lk_unlock(&fallback.lock);
	lk_unlock(&list_lock);
	tls.guard--;
	sig_restore(&mask);
}

/* The child, with signals still blocked as fork_prepare left them. */
static void fork_child_body(struct ap_tls *t)
{
	int was_on = ap_state == AP_ON;
	ap_pid = sys_getpid();
	t->tid = sys_gettid();
	t->pid = (uint32_t)ap_pid;
	if (!was_on) {
		t->guard--;
		return;
	}
	/* The parent's trace stays open (and its writer's lock held) until
	 * this process has a trace of its own: record waits for that lock to
	 * go before it looks for the traces of forked children. */
	int parent_fd = ap_fd;
	ap_fd = -1;
	if (ap_no_children) {
		if (parent_fd >= 0)
			sys_close(parent_fd);
		ap_state = AP_DISABLED;
		t->guard--;
		return;
	}
	char parent[PATH_MAX];
	memcpy(parent, ap_path, sizeof(parent));
	ap_gen = 0;
	make_path(ap_path, 0);

	/* Clean state: other threads are gone, their buffers are dropped. */
	thr_free = NULL;
	for (struct ap_thr *b = thr_all; b; b = b->next) {
		b->lock = b->busy = b->claim = 0;
		b->len = EV_HDR;
		b->events = 0;
		b->stream = b->nchunks = 0; /* a new file: its streams start over */
		if (b == t->thr)
			continue;
		b->live = 0;
		b->tls = NULL;
		b->next_free = thr_free;
		thr_free = b;
	}
	if (t->thr && t->thr != &dead_thr) {
		t->thr->tid = t->tid;
		t->thr->sc_epoch++; /* the cached ids are the parent's */
	}
	fallback.len = EV_HDR;
	fallback.events = 0;
	fallback.stream = fallback.nchunks = 0;
	nstreams = 0;
	data_chunks = 0;
	meta_len = 0;
	meta_nchunks = 0;
	stk_cur = NULL;
	stk_next_id = 1;
	mod_count = 0;
	set_reset();
	exited_calls = exited_consumed = 0;
	t->calls = 0;
	t->consumed = 0;
	t->interval = t->countdown;

	if (open_trace(parent) < 0) {
		ap_state = AP_DISABLED;
	} else if (t->thr && t->thr != &dead_thr) {
		meta_thread(t->tid);
	}
	if (parent_fd >= 0)
		sys_close(parent_fd);
	/* Mappings are written when the first stack needs them: the loader
	 * lock is not ours to take here. */
	t->guard--;
}

static void fork_child(void)
{
	struct ap_tls *t = &tls;
	own_blocks.lock = tracked_set.lock = meta_lock = fallback.lock = list_lock = 0;
	/* held by another thread of the parent, perhaps: not by this one */
	trace_lock = sig_lock = 0;
	trace_owner = 0;
	asym_register(); /* the child's address space is a new one */
	fork_child_body(t);
	sig_restore(&fork_mask);
}

__attribute__((constructor(101))) static void ap_init(void)
{
	struct ap_tls *t = &tls;
	err_init();
	resolve();
	t->guard++;
	pre_close();
	cfg_load();
	const char *out = cfg(CFG_OUTPUT);
	if (!out || !*out || str_len(out) >= PATH_MAX - 64)
		goto off;
	memcpy(ap_base, out, str_len(out) + 1);
	const char *nc = cfg(CFG_NO_CHILDREN);
	ap_no_children = nc && *nc && *nc != '0';
	if (ap_no_children)
		strip_preload();
	else
		exec_save_settings();
	ap_rate = parse_u64(cfg(CFG_RATE), DEFAULT_RATE);
	if (ap_rate == 0)
		ap_rate = 1;
	ap_all = ap_rate == 1;
	ap_max_depth = (unsigned)parse_u64(cfg(CFG_DEPTH), DEFAULT_DEPTH);
	if (ap_max_depth < 1)
		ap_max_depth = 1;
	if (ap_max_depth > MAX_DEPTH_CAP)
		ap_max_depth = MAX_DEPTH_CAP;
	ap_seed = parse_u64(getenv("ALLOCPROF_TEST_SEED"), 0);
	ap_quantum = parse_u64(getenv("ALLOCPROF_TIME_QUANTUM"), 0);
	if (ap_quantum >= 1 && ap_quantum <= 1000000000) {
		ap_coarse_step = 1; /* the user's quantum, for every process */
	} else {
		ap_quantum = AP_FINE_QUANTUM_NS;
	}
	tsc_calibrate();
	ap_pid = sys_getpid();
	t->pid = (uint32_t)ap_pid;

	/* ALLOCPROF_EXEC=<pid>.<gen>[:q]: an earlier image of this process
	 * wrote its own trace (gen > 0), or its fd 2 was no longer the run's
	 * stderr (:q). */
	const char *ex = getenv("ALLOCPROF_EXEC");
	char prev[PATH_MAX];
	prev[0] = 0;
	if (ex) {
		const char *dot = strchr(ex, '.');
		const char *colon = dot ? strchr(dot, ':') : NULL;
		char pidtxt[24], gentxt[24];
		size_t pl = dot ? (size_t)(dot - ex) : 0;
		size_t gl = dot ? (colon ? (size_t)(colon - dot - 1) : str_len(dot + 1)) : 0;
		if (dot && pl < sizeof(pidtxt) && gl < sizeof(gentxt)) {
			memcpy(pidtxt, ex, pl);
			pidtxt[pl] = 0;
			memcpy(gentxt, dot + 1, gl);
			gentxt[gl] = 0;
			if (parse_u64(pidtxt, 0) == (uint64_t)ap_pid) {
				ap_gen = (unsigned)parse_u64(gentxt, 0);
				if (ap_gen)
					make_path(prev, ap_gen - 1);
				if (colon && colon[1] == 'q')
					err_state = -1;
			}
		}
	}
	make_path(ap_path, ap_gen);
	trace_mode_init();

	meta_buf = map_mem(AP_CHUNK_HDR_LEN + META_BUF_SIZE);
	fallback.buf = map_mem(THR_BUF_SIZE + RING_SIZE * sizeof(struct ap_ring_ent));
	mods = map_mem(MAX_MODULES * sizeof(struct mod));
	tracked_set.cap = 4096;
	tracked_set.tab = map_mem(tracked_set.cap * sizeof(uint64_t));
	if (fallback.buf)
		fallback.ring.ent = (struct ap_ring_ent *)(fallback.buf + THR_BUF_SIZE);
	if (!meta_buf || !fallback.buf || !mods || !tracked_set.tab ||
	    pthread_key_create(&thr_key, thr_exit) != 0) {
		say(ap_path, "out of memory: profiling disabled");
		goto off;
	}
	fallback.len = EV_HDR;
	fallback.live = 0;
	unwinder_load();
	asym_register();
	if (open_trace(prev[0] ? prev : NULL) < 0)
		goto off;
	modules_snapshot();
	if (ap_all)
		memset(ap_filter, 0xff, sizeof(ap_filter));
	sig_install();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	__atomic_store_n(&ap_state, AP_ON, __ATOMIC_RELEASE);
	pre_replay(t);
	t->guard--;
	return;

off:
	ap_state = AP_DISABLED;
	pre_release();
	t->guard--;
}
