/* lifecycle.c: the process's life as the sampler sees it. ap_init (the
 * constructor: settings, buffers, trace, handlers, then on), the end of a
 * normal exit (after every library's destructor), _exit and _Exit, the
 * exit status through __libc_start_main, and fork (no lock held across
 * it; the child starts a trace of its own). Owns proc: the state, the
 * pid, the exec generation. */
#include "sampler-int.h"
#include "cfi.h"

struct ap_proc proc = { .state = AP_INIT };

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
	/* glibc frees its blocks of exit handlers (beyond the first 32)
	 * after the handlers ran, this one too: with buffers that outlive
	 * the process, recording goes on (end_trace), and record adds what
	 * comes after END (its copy then ends the trace) */
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
	if (proc.state == AP_ON && proc.pid == sys_getpid()) {
		flush_all(0);
		/* not atexit(): that names this library's handle, and this
		 * library's own __cxa_finalize (its last destructor) would run
		 * ap_last right away */
		if (__cxa_atexit(ap_last, NULL, NULL) != 0)
			end_trace(AP_END_EXIT, exit_seen, (uint64_t)(exit_status & 0xff), 0);
	}
	tls.guard--;
}

/* _exit and _Exit skip atexit and destructors: the trace ends here (the
 * other threads' allocations until the kernel ends them recorded after
 * it: end_trace). But not in a vfork child (its pid is not the trace's),
 * which runs in its parent's memory on the parent's thread until it
 * leaves: ending the trace, or raising the thread's guard, there would do
 * it to the parent (whose trace ended at the child's _exit, nothing
 * recorded after). */
static __attribute__((noreturn)) void leave(void (*real)(int), int status)
{
	if (proc.pid != sys_getpid()) {
		if (real)
			real(status);
		syscall(SYS_exit_group, status);
		__builtin_unreachable();
	}
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

/* fork: no profiler lock may be left held half-way in the child, and the
 * child starts a trace of its own. fork_prepare takes the locks and
 * fork_parent / fork_child let them go; between the two, nothing of the
 * sampler's can run on the forking thread (a malloc there would wait on
 * a lock it holds itself). The program's own handlers (gRPC's and many
 * libraries' allocate in all three) therefore have to run outside that
 * window: fork runs prepare handlers last registered first and the
 * others first registered first, so ours must be the first registered
 * (see __register_atfork below). */
static sigset_t fork_mask;	/* the forking thread's mask (threads.lock held) */
/* Before the sampler is on: whether the forking thread is the one that
 * runs ap_init (the main thread; see fork_child_body). */
static int fork_main;

/* In a fork's child, the sampler's locks let go: another thread of the
 * parent held them, perhaps (and the trace's, its owner with it). */
static void child_locks_release(void)
{
	own_blocks.lock = tracked_set.lock = meta.lock = threads.fallback.lock = threads.lock = 0;
	own_heap_lock = pre_lock = cfi_lock = 0;
	unw_child_reset();
	sig_child_reset();
	tfile.lock = sig_lock = 0;
	tfile.owner = 0;
}

/* The loader's write lock: glibc's dl_load_write_lock, the recursive
 * mutex dl_iterate_phdr holds around its callbacks, owned by the holder's
 * thread id. A handler that forked while the sampler was inside one (the
 * walk reads a new return address's rule there, libunwind looks modules up
 * there) left the child, whose thread has another id, holding it for
 * good: the unlock when the handler returned was refused (EPERM), and the
 * next dl_iterate_phdr, the walk's next rule, waited for ever
 * (tests/process/sigfork, `fork 50 --all`: once in some hundreds of
 * runs). Natively malloc never takes that lock. Found once, from inside a
 * dl_iterate_phdr callback, as the one recursive mutex in _rtld_global
 * owned by the calling thread; in such a child, a lock owned by the
 * forking thread's old id passes to its new one, and the interrupted
 * call lets it go as it would have in the parent. */
static pthread_mutex_t *loader_wlock;

struct wlock_find {
	uint8_t *g;
	size_t len;
	int tid;
	pthread_mutex_t *found;
	int n;
};

static int wlock_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	struct wlock_find *w = arg;
	for (size_t off = 0; off + sizeof(pthread_mutex_t) <= w->len; off += 8) {
		pthread_mutex_t *m = (pthread_mutex_t *)(w->g + off);
		if (m->__data.__owner == w->tid && m->__data.__lock != 0 &&
		    m->__data.__count == 1 && (m->__data.__kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP) {
			w->found = m;
			w->n++;
		}
	}
	return 1;
}

void loader_lock_probe(void)
{
	void *g = dlvsym(RTLD_DEFAULT, "_rtld_global", "GLIBC_PRIVATE");
	if (!g) {
		dlerror(); /* (not left pending for the program's first dlerror) */
		return;
	}
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1(g, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
		return;
	struct wlock_find w = { g, sym->st_size, (int)sys_gettid(), NULL, 0 };
	dl_iterate_phdr(wlock_cb, &w);
	if (w.n == 1)
		loader_wlock = w.found;
}

void loader_lock_adopt(uint32_t was, uint32_t now)
{
	pthread_mutex_t *m = loader_wlock;
	if (m && was && now && __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == (int)was)
		__atomic_store_n(&m->__data.__owner, (int)now, __ATOMIC_RELAXED);
}

/* A fork made while this thread is inside the sampler: a signal handler
 * that interrupted it forked. The code it interrupted may hold any of
 * the locks below and runs on once the handler returns, in the parent
 * and in the child: fork_prepare takes none (waiting on one this thread
 * holds never ends), and the child runs unrecorded (fork_child_inside). */
static __thread int fork_inside __attribute__((tls_model("initial-exec")));

/* Whether this thread is inside the sampler: its guard raised, or one of
 * the locks taken outside the guard (own_lock's: the pointer sets,
 * realloc's and free's set_remove; the early log's pre_add) held by it. */
static int inside_sampler(void)
{
	uint32_t id = lock_id;
	return tls.guard ||
	       (id && ((uint32_t)__atomic_load_n(&tracked_set.lock, __ATOMIC_RELAXED) == id ||
		       (uint32_t)__atomic_load_n(&own_blocks.lock, __ATOMIC_RELAXED) == id ||
		       (uint32_t)__atomic_load_n(&pre_lock, __ATOMIC_RELAXED) == id));
}

/* The child of such a fork: the sampler off before anything else, so that
 * nothing but the interrupted code takes its locks or state again; the
 * locks another thread of the parent held let go (this thread's are the
 * interrupted code's, which lets them go); the slots private copies, and
 * the parent's trace closed, so that nothing the child writes reaches the
 * parent's (a write the interrupted code was about to make fails). Nothing
 * else is reset: the interrupted code is using it. */
static void fork_child_inside(void)
{
	int saved = errno;
	__atomic_store_n(&proc.state, AP_DISABLED, __ATOMIC_RELEASE);
	child_locks_release();
	proc.pid = sys_getpid();
	uint32_t was = tls.tid;
	tls.tid = sys_gettid();
	loader_lock_adopt(was, tls.tid);
	__atomic_store_n(&tfile.ring, 0, __ATOMIC_RELAXED);
	buffers_privatize();
	int fd = __atomic_exchange_n(&tfile.fd, -1, __ATOMIC_RELAXED);
	if (fd >= 0)
		sys_close(fd);
	if (tfile.lockmap)
		munmap(tfile.lockmap, AP_BUFFERS_PAGE);
	tfile.lockmap = NULL;
	asym_register();
	errno = saved;
}

static void fork_prepare(void)
{
	if (inside_sampler()) {
		fork_inside = 1;
		return;
	}
	sigset_t mask;
	sig_block(&mask);
	tls.guard++;
	/* first: ap_init's switch (pre_switch) takes the others under it */
	lk_lock(&pre_lock);
	if (__atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) == AP_INIT)
		fork_main = sys_gettid() == (uint32_t)sys_getpid();
	lk_lock(&threads.lock);
	lk_lock(&threads.fallback.lock);
	lk_lock(&meta.lock);
	lk_lock(&tracked_set.lock);
	lk_lock(&own_blocks.lock);
	lk_lock(&own_heap_lock);
	lk_lock(&cfi_lock);
	fork_mask = mask;
	sig_fork_open(&mask);
}

static void fork_parent(void)
{
	if (fork_inside) {
		fork_inside = 0;
		return;
	}
	sigset_t mask = fork_mask;
	lk_unlock(&cfi_lock);
	lk_unlock(&own_heap_lock);
	lk_unlock(&own_blocks.lock);
	lk_unlock(&tracked_set.lock);
	lk_unlock(&meta.lock);
	lk_unlock(&threads.fallback.lock);
	lk_unlock(&threads.lock);
	lk_unlock(&pre_lock);
	tls.guard--;
	/* (blocked before the window closes: a signal between the two
	 * would run the program's handler under the window's mask) */
	sig_block(NULL);
	sig_fork_close();
	sig_restore(&mask);
}

/* The child, with signals blocked (fork_child). */
static void fork_child_body(struct ap_tls *t)
{
	int was_on = proc.state == AP_ON;
	proc.pid = 0; /* not the parent's, if getpid is refused */
	t->tid = 0;
	proc.pid = sys_getpid();
	t->tid = sys_gettid();
	if (!was_on) {
		buffers_detach(); /* the parent's slots are not ours to write */
		/* Forked before the sampler was on, by a thread other than
		 * ap_init's: ap_init will never run here (or its thread is
		 * gone half-way through it), and the child runs unrecorded
		 * instead of logging forever. A fork in a constructor
		 * before ours, on the main thread, goes on to run ap_init. */
		if (proc.state == AP_INIT && (proc.starting || !fork_main))
			pre_abandon();
		t->guard--;
		return;
	}
	/* The parent's trace stays open (and its writer's lock held) until
	 * this process has a trace of its own: record waits for that lock to
	 * go before it looks for the traces of forked children. */
	int parent_fd = tfile.fd;
	void *parent_lock = tfile.lockmap; /* (the ring's way: see tracefile.c) */
	/* the trace the parent's next image would write is not this one's
	 * (its lock stays with the parent's descriptor) */
	if (tfile.next_fd >= 0) {
		sys_close(tfile.next_fd);
		tfile.next_fd = -1;
	}
	tfile.fd = -1;
	tfile.ring = 0;
	tfile.lockmap = NULL;
	if (settings.no_children || proc.pid <= 0) {
		buffers_detach();
		if (parent_fd >= 0)
			sys_close(parent_fd);
		if (parent_lock)
			munmap(parent_lock, AP_BUFFERS_PAGE);
		proc.state = AP_DISABLED;
		t->guard--;
		return;
	}
	char parent[PATH_MAX];
	memcpy(parent, tfile.path, sizeof(parent));
	proc.gen = 0;
	make_path(tfile.path, 0);
	/* the trace's name is final before the buffers file takes it */
	int fd = base_is_device() ? -1 : trace_create(tfile.path);

	/* Clean state: other threads are gone, their buffers are dropped. */
	buffers_detach();
	buffers_forget(t);
	tfile.chunks = 0;
	/* (forked after its parent's final END: this trace's is to come) */
	tfile.final = 0;
	tfile.ender = 0;
	tfile.end_done = 0;
	stacks_forget();
	modules_forget();
	set_reset();
	t->calls = 0;
	t->consumed = 0;
	t->interval = t->countdown;

	if (open_trace(parent, fd) < 0) {
		buffers_abandon();
		proc.state = AP_DISABLED;
	} else if (t->thr && t->thr != &threads.dead) {
		meta_thread(t->tid);
	}
	if (parent_fd >= 0)
		sys_close(parent_fd);
	if (parent_lock)
		munmap(parent_lock, AP_BUFFERS_PAGE);
	/* Mappings are written when the first stack needs them: the loader
	 * lock is not ours to take here. */
	t->guard--;
}

/* The child's locks and address space, then its state (the guard raised,
 * let go by fork_child_body). */
static void fork_child_common(struct ap_tls *t)
{
	child_locks_release();
	asym_register(); /* the child's address space is a new one */
	fork_child_body(t);
}

static void fork_child(void)
{
	if (fork_inside) {
		fork_inside = 0;
		fork_child_inside();
		return;
	}
	/* the window's signals blocked again: the child's state is
	 * half-made until fork_child_body is done */
	sig_block(NULL);
	sig_fork_close();
	fork_child_common(&tls);
	sig_restore(&fork_mask);
	if (attach_mode)
		attach_fork_child(); /* last: it puts this library's data back */
}

/* How long a fork waits for the sampler's start on another thread. */
#define FORK_WAIT_MS 1000

/* A thread that forks while ap_init runs on another (a thread a
 * library's constructor started) waits for the sampler to turn on, so
 * that its child is recorded, but never long: one forking from inside
 * dlopen (a constructor's fork) holds the loader's lock, which the start
 * may need. Here, before the real fork, not in fork_prepare: the
 * program's prepare handlers run before ours and may hold what the start
 * needs meanwhile (an allocator's arena locks: jemalloc's). A fork the C
 * library makes itself (daemon) does not wait: its child is not recorded
 * (fork_child_body). */
EXPORT pid_t fork(void)
{
	for (int ms = 0; ms < FORK_WAIT_MS && !tls.guard &&
			 __atomic_load_n(&proc.starting, __ATOMIC_RELAXED) &&
			 __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) == AP_INIT;
	     ms++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	if (!real_fork)
		resolve();
	return real_fork();
}

/* _Fork (glibc 2.34): a fork that runs no handler. Its child recorded
 * into the parent's buffers, which the buffers file shares with record:
 * a parent that then died had the child's events in its trace as its own
 * (and the child's own were lost). The child gets what fork_child gives
 * a fork's: a trace of its own. No lock is taken before (_Fork may be
 * called from a signal handler): as after any fork of a process with
 * other threads, only async-signal-safe calls are the child's to make,
 * and the locks another thread held are let go in the child. */
EXPORT pid_t _Fork(void)
{
	if (!real_fork)
		resolve();
	if (!real__Fork) {
		errno = ENOSYS;
		return -1;
	}
	if (inside_sampler()) {
		/* (a handler that interrupted the sampler: see fork_inside) */
		pid_t pid = real__Fork();
		if (pid == 0)
			fork_child_inside();
		return pid;
	}
	/* (fork_prepare's fork_main, set in the child, alone there: a
	 * fork_prepare of another thread sets it under pre_lock meanwhile) */
	int main_thread = __atomic_load_n(&proc.state, __ATOMIC_ACQUIRE) == AP_INIT &&
			  sys_gettid() == (uint32_t)sys_getpid();
	/* the child with signals blocked until its state is its own, as
	 * fork_prepare leaves a fork's (a handler that allocates would
	 * otherwise run while it is half-made) */
	sigset_t mask;
	sig_block(&mask);
	pid_t pid = real__Fork();
	int saved = errno;
	if (pid == 0) {
		fork_main = main_thread;
		tls.guard++;
		fork_child_common(&tls);
		if (attach_mode)
			attach_fork_child();
	}
	sig_restore(&mask);
	errno = saved;
	return pid;
}

/* Registers the fork handlers, once, before anyone else's. */
static int (*real_register_atfork)(void (*)(void), void (*)(void), void (*)(void), void *);
extern void *__dso_handle;

void fork_handlers_register(void)
{
	static int done;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	if (!real_register_atfork) {
		resolve();
		real_register_atfork = must_sym("__register_atfork");
	}
	real_register_atfork(fork_prepare, fork_parent, fork_child, __dso_handle);
}

/* pthread_atfork (a static function in libc_nonshared.a, in every
 * object that calls it) registers through here. The libraries a
 * program links run their constructors before this library's: a
 * handler they register ahead of ours would run inside our window (a
 * prepare handler after ours, a parent or child handler before ours).
 * The first registration puts ours in front, whenever it comes. */
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
		      void *dso);

EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso)
{
	fork_handlers_register();
	return real_register_atfork(prepare, parent, child, dso);
}

/* ALLOCPROF_EXEC=<pid>.<gen>[:q][:f<fd>][:s<suffix>], set by the exec
 * wrapper for the next image (and by record, "<pid>.0:f<fd>", for the
 * program): gen > 0, the n-th image after one that recorded events; q,
 * fd 2 is no longer the run's stderr; f, the trace is open on fd and is
 * this image's (nothing recorded before it, or record made it); s, the
 * tail of the last image's trace path after ALLOCPROF_OUTPUT (".<pid>",
 * "-2", ".exec1": digits, dots, dashes and "exec" only). Returns 0, or -1
 * if ex is NULL or malformed. */
struct exec_marker {
	uint64_t pid;
	unsigned gen;
	int quiet;
	int fd;
	char sfx[AP_OUTPUT_SUFFIX_MAX];
};

/* The decimal at *s, moved past; -1 if there is none (or too long). */
static int64_t take_dec(const char **s)
{
	uint64_t v = 0;
	const char *p = *s;
	while (*p >= '0' && *p <= '9' && p - *s < 18)
		v = v * 10 + (uint64_t)(*p++ - '0');
	if (p == *s || (*p >= '0' && *p <= '9'))
		return -1;
	*s = p;
	return (int64_t)v;
}

static int exec_parse(const char *ex, struct exec_marker *m)
{
	m->pid = 0;
	m->quiet = 0;
	m->fd = -1;
	m->sfx[0] = 0;
	int64_t pid, gen;
	if (!ex || (pid = take_dec(&ex)) < 0 || *ex++ != '.' || (gen = take_dec(&ex)) < 0)
		return -1;
	m->pid = (uint64_t)pid;
	m->gen = (unsigned)gen;
	while (*ex == ':') {
		char f = ex[1];
		if (!f)
			return -1;
		ex += 2;
		if (f == 'q') {
			m->quiet = 1;
		} else if (f == 'f') {
			int64_t fd = take_dec(&ex);
			if (fd < 0 || fd > INT32_MAX)
				return -1;
			m->fd = (int)fd;
		} else if (f == 's') {
			size_t k = strspn(ex, "0123456789.-exc");
			if (k >= sizeof(m->sfx))
				return -1;
			memcpy(m->sfx, ex, k);
			m->sfx[k] = 0;
			ex += k;
		} else {
			return -1;
		}
	}
	return *ex ? -1 : 0;
}

/* The settings (cfg) into `settings` and the trace's base path: 0, or -1
 * (said why) when the sampler stays off. */
static int settings_load(void)
{
	const char *out = cfg(CFG_OUTPUT);
	if (!out || !*out)
		return -1;
	if (str_len(out) >= PATH_MAX - AP_OUTPUT_PATH_ROOM) {
		say("ALLOCPROF_OUTPUT", "path too long: profiling disabled");
		return -1;
	}
	memcpy(tfile.base, out, str_len(out) + 1);
	/* the flags: 1 --no-children, 2 --gaps (any other non-zero value:
	 * no children, as ALLOCPROF_NO_CHILDREN=yes always meant) */
	const char *nc = cfg(CFG_NO_CHILDREN);
	uint64_t fl = nc && *nc >= '0' && *nc <= '9' ? parse_u64(nc, 0) : nc && *nc ? 1 : 0;
	settings.no_children = (fl & AP_CFG_NO_CHILDREN) || (fl && !(fl & AP_CFG_GAPS));
	if (attach_mode)
		; /* the program's environment is its own */
	else if (settings.no_children)
		strip_preload();
	else
		exec_save_settings();
	settings.rate = parse_u64(cfg(CFG_RATE), DEFAULT_RATE);
	if (settings.rate == 0)
		settings.rate = 1;
	settings.all = settings.rate == 1;
	settings.gaps = settings.all && (fl & AP_CFG_GAPS);
	settings.max_depth = (unsigned)parse_u64(cfg(CFG_DEPTH), DEFAULT_DEPTH);
	if (settings.max_depth < 1)
		settings.max_depth = 1;
	if (settings.max_depth > MAX_DEPTH_CAP)
		settings.max_depth = MAX_DEPTH_CAP;
	settings.seed = parse_u64(getenv("ALLOCPROF_TEST_SEED"), 0);
	settings.quantum = parse_u64(getenv("ALLOCPROF_TIME_QUANTUM"), 0);
	if (settings.quantum >= 1 && settings.quantum <= 1000000000) {
		settings.coarse_step = 1; /* the user's quantum, for every process */
	} else {
		settings.quantum = AP_FINE_QUANTUM_NS;
	}
	tsc_calibrate();
	proc.pid = sys_getpid();
	return 0;
}

/* Buffers, modules, the unwinder, the trace (made at tfile.path unless fd
 * is open on it; parent: the trace of the image before), then on. 0, or
 * -1 with the sampler off (said why). */
static int start_trace(const char *parent, int fd)
{
	if (!attach_mode)
		malloc_owner_find();
	int have_bufs = buffers_init() == 0;
	int have_mods = modules_init() == 0;
	if (!have_bufs || !have_mods ||
	    pthread_key_create(&threads.key, thr_exit) != 0) {
		say(tfile.path, "out of memory: profiling disabled");
		return -1;
	}
	threads.fallback.len = EV_HDR;
	threads.fallback.live = 0;
	if (!unwinder_early) /* (else loaded, or tried, for an early call's stack) */
		unwinder_load();
	asym_register();
	if (open_trace(parent, fd) < 0) {
		buffers_abandon();
		return -1;
	}
	modules_snapshot();
	if (settings.all)
		memset(ap_filter, 0xff, sizeof(ap_filter));
	if (!attach_mode)
		sig_install(); /* attached: once the routes are in (attach.c) */
	fork_handlers_register();
	return 0; /* the caller turns the state on */
}

/* attach.c: the fork handlers, registered once for every attach to come */
void attach_fork_handlers(void)
{
	fork_handlers_register();
}

/* attach.c, on a thread record stopped (the program's other threads run
 * on, none of them in the sampler): cfg in ALLOCPROF's format. 0, or a
 * negative errno with the sampler off. */
long attach_start(const char *cfgs)
{
	struct ap_tls *t = &tls;
	t->guard++;
	err_state = -1; /* fd 2 is the program's */
	if (cfg_use(cfgs) < 0) {
		t->guard--;
		return -EINVAL;
	}
	long rc = settings_load() < 0 ? -EINVAL : 0;
	if (rc == 0) {
		make_path(tfile.path, 0);
		trace_mode_init();
		if (start_trace(NULL, -1) < 0)
			rc = -EIO;
	}
	/* ap_init closed the early log: nothing to replay */
	__atomic_store_n(&proc.state, rc < 0 ? AP_DISABLED : AP_ON, __ATOMIC_RELEASE);
	t->guard--;
	return rc;
}

__attribute__((constructor(101))) static void ap_init(void)
{
	struct ap_tls *t = &tls;
	err_init();
	resolve();
	t->guard++;
	__atomic_store_n(&proc.starting, 1, __ATOMIC_RELAXED);
	if (attach_loaded_late())
		goto off; /* record -p loaded it: allocprof_attach starts it */
	own_heap_swap(1);
	cfg_load();
	if (settings_load() < 0)
		goto off;

	/* ALLOCPROF_EXEC (exec_parse): the trace handed over, or where an
	 * earlier image of this process wrote its own. */
	struct exec_marker em;
	const char *parent = NULL;
	char prev[PATH_MAX];
	make_path(tfile.path, 0);
	int have_em = exec_parse(getenv("ALLOCPROF_EXEC"), &em) == 0;
	if (have_em)
		unsetenv("ALLOCPROF_EXEC"); /* ours: the program never sees it */
	if (have_em && em.pid == (uint64_t)proc.pid) {
		size_t bl = str_len(tfile.base), sl = str_len(em.sfx);
		proc.gen = em.gen;
		if (em.quiet)
			err_state = -1;
		memcpy(prev, tfile.base, bl);
		memcpy(prev + bl, em.sfx, sl + 1);
		if (em.fd >= 0) {
			/* an image that recorded nothing handed its trace on,
			 * or record the trace it made */
			memcpy(tfile.path, prev, bl + sl + 1);
		} else if (proc.gen && !base_is_device()) {
			/* <the process's name>.exec<gen> */
			char *x = strstr(prev + bl, ".exec");
			size_t pl = x ? (size_t)(x - prev) : bl + sl;
			memcpy(tfile.path, prev, pl);
			memcpy(tfile.path + pl, ".exec", 5);
			tfile.path[pl + 5 + put_dec(tfile.path + pl + 5, proc.gen)] = 0;
			parent = prev;
		}
	}
	trace_mode_init();
	/* the trace's name is final before the buffers file takes it */
	int fd = have_em && em.pid == (uint64_t)proc.pid && em.fd >= 0
			 ? trace_handed_or_create(em.fd)
		 : base_is_device() ? -1
				    : trace_create(tfile.path);

	if (start_trace(parent, fd) < 0)
		goto off;
	/* libunwind's first trace makes its state, some of it on the
	 * program's heap: made here, before main, as under --all (whose
	 * first unwind is the program's first call), not at the first
	 * sample, mid-run, where the block it took moved how glibc split the
	 * program's next aligned blocks (memalign(64, 1870): 1880 usable
	 * bytes, 1912 without us; tests/record/heapshift.c loop) */
	if (unw_bt) {
		void *raw[4];
		unw_bt(raw, 4);
	}
	pre_switch(t, AP_ON);
	own_heap_swap(0);
	t->guard--;
	return;

off:
	own_heap_swap(0);
	pre_switch(t, AP_DISABLED);
	t->guard--;
}
