/* sampler-int.h: what the sampler's files share. The TLS block and a
 * thread's event buffer, the locks, the state each file owns and lets the
 * others read (declared here under the name of its owner), and the small
 * inline helpers the interposed entry points need: the hot path is one
 * translation unit (interpose.c) with no calls across files, and nothing
 * here may call malloc or stdio (memory from mmap, output by write(2)).
 * Internal to liballocprof.so: everything declared here is hidden, and
 * sampler.map exports only the interposed entry points. */
#ifndef AP_SAMPLER_INT_H
#define AP_SAMPLER_INT_H
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define UNW_LOCAL_ONLY
#include <libunwind.h> /* types only: the functions come from a dlopen */
#define AP_STACK_CACHE 1
#endif

#include "ap_trace_buffers.h"
#include "ap_trace_encode.h"

#pragma GCC visibility push(hidden) /* extern declarations too: no GOT loads */

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define DEFAULT_RATE AP_DEFAULT_RATE
#define DEFAULT_DEPTH AP_DEFAULT_DEPTH
#define MAX_DEPTH_CAP AP_MAX_DEPTH_CAP
#define OWN_FRAMES_SLACK 32	/* frames of ours (and libunwind's) to drop */
#define THR_BUF_SIZE AP_SAMPLER_CHUNK
#define META_BUF_SIZE AP_SAMPLER_META_CHUNK
#define EV_HDR AP_CHUNK_HDR_LEN
#define EV_MAX_REC AP_EV_MAX_REC
#define FLUSH_AGE_NS 1000000000ull
#define FILTER_BITS 16
#define MAX_MODULES 4096
/* dlsym's blocks while the real functions are resolved, then the
 * sampler's own small blocks under --all (boot.c, own_alloc) */
#define BOOT_ARENA_SIZE (256u << 10)
#define RING_SIZE AP_RING_TABLE_SIZE

enum { AP_INIT, AP_ON, AP_DISABLED, AP_ENDED };

/* ---- per-thread state: one small initial-exec TLS block ---------------- */

struct ap_thr;

struct ap_tls {
	int64_t countdown;	/* bytes (+1 per call) until the next sample */
	uint64_t calls;		/* allocation calls of this thread */
	struct ap_thr *thr;	/* NULL until registered, &threads.dead after exit */
	uint64_t rng;
	uint64_t consumed;	/* size+1 counted in finished intervals */
	int64_t interval;	/* length of the current interval */
	uint32_t tid;
	uint32_t guard;		/* inside the sampler: pass everything through */
	int32_t live_in;	/* usable bytes allocated and not yet in live_bytes
				 * (interpose.c); LIVE_DEAD_IN after thr_exit */
	int32_t live_out;	/* less those freed (<= 0); LIVE_DEAD_OUT after */
};
_Static_assert(sizeof(struct ap_tls) <= 64, "TLS block must stay small");

/* What glibc or libunwind allocate for us inside the guard is not the
 * program's: calls and countdown are put back after the code that may
 * allocate (a guarded call that took the fast path would stay counted).
 * Between hold and unhold the guard also carries GUARD_OWN: a malloc
 * that reaches malloc_slow then is the sampler's own (libunwind's, the
 * loader's), and comes from the boot arena (own_alloc), not the
 * program's heap. One that reaches it under a bare guard is a signal
 * handler's of the program's, interrupting the sampler: it gets glibc's
 * block, as without us (served from the arena, testdata/sigrealloc's
 * handler left glibc's thread cache short of the blocks its frees and
 * mallocs traded, and they reached glibc's bins while the interrupted
 * thread was inside glibc's realloc: "corrupted double-linked list",
 * about 1 run in 40 on a loaded CPU). */
#define GUARD_OWN (1u << 31)
/* On the thread inside fork's window (signals.c, sig_fork_open), and in
 * the child its copy, until the sampler's state is whole again: a signal
 * that comes meanwhile is handed back to the kernel for later. */
#define GUARD_FORK (1u << 30)
struct ap_hold {
	uint64_t calls;
	int64_t countdown;
	uint32_t guard;
};

static inline struct ap_hold hold(struct ap_tls *t)
{
	struct ap_hold h = { t->calls, t->countdown, t->guard };
	t->guard |= GUARD_OWN;
	return h;
}

/* hold, and the countdown run out meanwhile: libunwind's TLS comes from
 * malloc, through malloc_slow (own_alloc's, sampled too). */
static inline struct ap_hold hold_down(struct ap_tls *t)
{
	struct ap_hold h = hold(t);
	t->countdown = -1;
	return h;
}

static inline void unhold(struct ap_tls *t, struct ap_hold h)
{
	t->calls = h.calls;
	t->countdown = h.countdown;
	t->guard = (t->guard & ~GUARD_OWN) | (h.guard & GUARD_OWN);
}

/* A thread's event buffer (also used for the shared threads.fallback buffer). The
 * chunk header and base_ns are filled in place at flush time. */
struct ap_thr {
	struct ap_thr *next;	/* all buffers ever made */
	struct ap_thr *next_free;
	int lock;
	int busy, claim;	/* the owner's fast lock (own_enter) */
	int live;
	uint32_t tid;
	struct ap_tls *tls;	/* the owner's TLS block, while live */
	struct ap_evenc enc;	/* the chunk's delta state: quantum, address, cpu */
	uint64_t q0;		/* quantum of the chunk's SYNC (flush by age) */
	uint64_t tsc_next;	/* TSC at which the clock is read again */
	bool fine;		/* tsc_next set with several threads: a step of 1 */
	uint64_t events;	/* records appended since the trace started */
	size_t len;
	uint8_t *buf;		/* THR_BUF_SIZE bytes */
	struct ap_ring ring;	/* RING_SIZE recent ALLOCs, by address hash */
	struct sc_ent *sc;	/* the owner's stack cache (SC_SETS * 2), or NULL */
	uint32_t sc_epoch;	/* bumped when the buffer passes to a new thread */
	uint32_t sc_turn;	/* which way of a set is replaced next */
	uint32_t stream;	/* its chunks' stream, given at the first (0: none yet) */
	uint32_t nchunks;	/* chunks written into that stream */
	int64_t sc_bank;	/* TSC ticks the cache may still spend on fills */
	uint64_t sc_hits;	/* hits not yet credited to sc_bank (sc_settle) */
	uint32_t sc_unw;	/* ticks of one unwind and intern (running mean) */
	uint32_t sc_tick;	/* unwinds, to time one in SC_TIME_EVERY */
	bool sc_ups;		/* a key held another stack: sc_up looks */
	/* --all: the TSC when the owner's last recorded call returned to the
	 * program, and when its current call entered (interpose.c's
	 * gap_enter, gap_leave): the gap emit writes (0: not yet) */
	uint64_t gap_from, gap_at;
	/* --all: TSC ticks its owners spent unwinding (stack cache misses),
	 * every owner's since the trace started: END's unwind_ns */
	uint64_t unw_ticks;
};

/* ---- state and functions by owner --------------------------------- */

/* What each file lets the others use, under its name. A function's
 * contract is the comment at its definition; a struct's members say what
 * they hold and under which lock. */

/* nolibc.c */
int bounded_give_up(int tries, uint64_t *since);
int lk_trylock_bounded(int *l);
uint32_t sys_gettid(void);
pid_t sys_getpid(void);
int sys_close(int fd);
int sys_open(const char *path, int flags, mode_t mode);
ssize_t sys_read(int fd, void *buf, size_t n);
ssize_t sys_pwrite(int fd, const void *buf, size_t n, off_t at);
void sys_nap_ms(long ms);
int write_some(int fd, const void *data, size_t len, size_t *done);
size_t str_len(const char *s);
ssize_t self_exe(char *buf, size_t n);
int self_open(const char *name);
size_t put_dec(char *p, uint64_t v);
uint64_t parse_u64(const char *s, uint64_t dflt);
extern int err_state;	/* ap_init sets -1 when told fd 2 is not the run's */
void err_init(void);
int err_usable(void);
void say(const char *a, const char *b);

/* config.c */
struct ap_settings {
	uint64_t rate;		/* mean bytes between samples (1: every call) */
	int all;		/* rate 1: every allocation and free, no pointer set */
	int gaps;		/* --all with record --gaps: each record's gap (the TSC
				 * read at a call's entry and at its return) */
	unsigned max_depth;	/* frames kept per stack, 1..MAX_DEPTH_CAP */
	uint64_t seed;		/* ALLOCPROF_TEST_SEED, 0: none */
	uint64_t quantum;	/* ns per time quantum */
	/* Quanta between TIME records while the process has one thread: its
	 * order needs no fine time, and coarse steps keep its trace small.
	 * Once a second thread records, every quantum counts, so that two
	 * threads' events are ordered as finely as the quantum (the
	 * reader's merge). */
	uint64_t coarse_step;
	int no_children;	/* --no-children */
};
extern struct ap_settings settings;	/* written by ap_init only */
void cfg_load(void);
int cfg_use(const char *c);
const char *cfg(int which);
uint64_t cfg_run_pid(uint64_t *run_id, uint64_t *drainer);
int cfg_from_record(void);

/* lifecycle.c */
struct ap_proc {
	int state;		/* AP_INIT, AP_ON, ...: read with acquire */
	pid_t pid;		/* this process (a vfork child is not it) */
	unsigned gen;		/* exec generation of this pid (0: first image) */
	int starting;		/* ap_init has begun (it may be running) */
	int replaying;		/* ap_init replays the early log: emit takes
				 * its events while the state is AP_INIT */
};
extern struct ap_proc proc;
/* Registers the fork handlers, once, before anyone else's: from resolve,
 * at the process's first call of the malloc family, not once the trace
 * is open (a thread a library's constructor started may fork before,
 * and its child must not inherit the early log and its lock unseen). */
void fork_handlers_register(void);
void attach_fork_handlers(void);
long attach_start(const char *cfgs);

/* attach.c */
extern int attach_mode;		/* loaded by record -p: no buffers file, no
				 * signal handlers, no stack cache nor stack
				 * of its own (attach.c) */
int attach_loaded_late(void);
void attach_fork_child(void);
/* attached: 0 until this thread's first unwind of the attach, which first
 * sets libunwind's TLS of this thread as a new thread's (attach.c) */
extern __thread uint8_t unw_fresh __attribute__((tls_model("initial-exec")));
void unw_tls_fresh(void);
/* threads inside a routed call (record's detach waits for 0) */
extern __thread uint32_t at_in __attribute__((tls_model("initial-exec")));

/* interpose.c */
extern __thread struct ap_tls tls __attribute__((tls_model("initial-exec")));
/* The live-byte counter: every block the program's calls allocate or free
 * through the sampler, by glibc's usable size (its chunk header), sampled
 * or not. Each thread adds what it allocates into tls.live_in and what it
 * frees into tls.live_out (two fields: malloc and free do not wait on
 * each other's store) and folds both into `cur` when either passes
 * LIVE_BOUND (and at each sample, and when it exits), so `cur` is off
 * from the true sum by less than 2 LIVE_BOUND per thread, and `peak` is
 * the largest value `cur` took. */
#define LIVE_BOUND (32 << 10)
/* tls.live_in and live_out of an exited thread: every change folds */
#define LIVE_DEAD_IN INT32_MAX
#define LIVE_DEAD_OUT INT32_MIN
struct ap_live {
	int64_t cur;		/* atomic */
	int64_t peak;		/* atomic, the largest cur */
	uint32_t threads;	/* registered threads live now (threads.lock) */
	uint32_t threads_max;	/* the most at once */
};
extern struct ap_live live_bytes;
extern int live_on;		/* the C library's chunk headers can be read */
void live_fold(struct ap_tls *t, int64_t in, int64_t out);
/* The buffers file's copy of the peak and slack (NULL: none), which
 * record writes into the END of a process that could not (buffer.c). */
void live_mirror(struct ap_buffers_head *h);
void live_mirror_update(void);
void live_fold_all(struct ap_tls *t);
void live_dead(struct ap_tls *t);
void live_check(void);
int64_t live_peak_now(uint64_t *slack);
int64_t draw_interval(struct ap_tls *t);
/* a sampled call's work, run on the sampler's stack (on_slow_stack) */
void alloc_sampled(void *p, size_t n, unsigned kind, uint64_t caller, uint64_t cfa);
void realloc_sampled(void *old, void *q, size_t n, unsigned kind_tracked, uint64_t caller,
		     uint64_t cfa);
void free_sampled(void *p);

/* boot.c */
extern uint8_t boot_arena[BOOT_ARENA_SIZE];
extern void *(*real_malloc)(size_t);
extern void *(*real_calloc)(size_t, size_t);
extern void *(*real_realloc)(void *, size_t);
extern void (*real_free)(void *);
extern int (*real_posix_memalign)(void **, size_t, size_t);
extern void *(*real_aligned_alloc)(size_t, size_t);
extern void *(*real_memalign)(size_t, size_t);
extern void *(*real_valloc)(size_t);
extern void *(*real_pvalloc)(size_t);
extern size_t (*real_usable_size)(void *);
extern void (*real__exit)(int);
extern void (*real__Exit)(int);
extern int (*real_execve)(const char *, char *const[], char *const[]);
extern int (*real_execvpe)(const char *, char *const[], char *const[]);
extern int (*real_fexecve)(int, char *const[], char *const[]);
extern int (*real_pipe2)(int[2], int);
extern int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
extern int (*real_close)(int);
extern int (*real_sigaltstack)(const stack_t *, stack_t *);
/* NULL until resolve() (tracefile.c's sigprocmask then calls
 * pthread_sigmask, what glibc's does) */
extern int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
extern pid_t (*real_fork)(void);
extern pid_t (*real__Fork)(void); /* NULL before glibc 2.34 */
void *must_sym(const char *name);
const char *malloc_owner(void);
void malloc_owner_find(void);
void resolve(void);
void boot_mark_filter(void);
void *boot_move(void *old, size_t n);
/* The sampler's own small blocks under --all: what the C library and
 * libunwind allocate for it while it records (libunwind's thread-local
 * block, made at a thread's first unwind), served from the boot arena,
 * not from the program's heap, which they would shift (an aligned block
 * the program asks for next would get another usable size than without
 * us). own_alloc: NULL when it cannot (too large, the arena full, a
 * signal handler inside it): the caller uses the real malloc. own_free:
 * a block of the boot arena given back (dlsym's stay). */
void *own_alloc(size_t n);
void own_free(void *p);
extern int own_heap_lock;
/* While the sampler starts (ap_init, not attached), every malloc and
 * calloc of the process is served by own_alloc where it can: the
 * loader's for libunwind's dlopen above all, which would otherwise make
 * the program's heap (the main arena, its tcache) before its main. */
void own_heap_swap(int on);
enum { PRE_ALLOC, PRE_FREE };
int pre_add(const void *freed, const void *got, uint64_t n, unsigned kind, uint64_t caller);
/* A realloc of an early block before the start (see the early log): the
 * real call made under the log's lock, and old's free and q's birth
 * logged together after it (a failed call logs nothing, as it changed
 * nothing), so that no other thread's birth at old's address comes
 * between them. 1 with *q the result (errno the call's), or 0 if the log
 * has closed (the state turned): nothing called, the caller takes the
 * live path. */
int pre_realloc(void *old, size_t n, unsigned kind, uint64_t caller, void **q);
void pre_switch(struct ap_tls *t, int state);
void pre_abandon(void);
extern int pre_lock;

/* ptrset.c */
struct ptr_set;
extern uint8_t ap_filter[1u << FILTER_BITS];
extern uint8_t own_filter[1u << FILTER_BITS];
extern struct ptr_set tracked_set, own_blocks;
void ps_insert(struct ptr_set *s, const void *p);
/* Counts s's keys into the filter f (zeroed by the caller). */
void ps_filter_fill(struct ptr_set *s, uint8_t *f);
int ps_remove(struct ptr_set *s, const void *p);
void set_reset(void);

/* stacks.c */
extern int (*unw_bt)(void **, int);
#ifdef AP_STACK_CACHE
extern int sc_on, sc_always;
#endif
void stacks_forget(void);
uint32_t stack_intern(const uint64_t *pcs, unsigned depth, const uint64_t **frames);
void unwinder_load(void);
/* An unload was seen (cfi.c): the modules mapped now are kept as the
 * ones libunwind's cached frame shapes are good for. */
void unw_unloaded(void);
/* A scan owed (a fork's child), done at a poll of cfi.c; the child's
 * reset of the ranges' lock. */
void unw_poll(void);
void unw_child_reset(void);
/* Whether a stack libunwind traced has a return address outside those
 * modules; then unwind_steps unwinds it again, looking each frame up. */
int unw_suspect(const uint64_t *pcs, unsigned d);
unsigned unwind_steps(uint64_t *pcs);
/* tracefile.c: the exec being made runs its image unprofiled (exec.c sets
 * it before END, which says so) */
extern int exec_unfollowed;
/* boot.c: unwinder_load ran for an early call's stack (early_stack) */
extern int unwinder_early;

/* lifecycle.c: the loader's write lock, found (at the start) and, in the
 * child of a fork a handler made inside the sampler, passed from the
 * forking thread's old id to its new one */
void loader_lock_probe(void);
void loader_lock_adopt(uint32_t was, uint32_t now);

/* modules.c */
int modules_init(void);
void modules_forget(void);
int pc_known(uint64_t pc);
void modules_snapshot(void);
/* Whether a module may have been unloaded since the last snapshot (the
 * loader's unload count, as cfi.c last saw it, moved). */
int modules_stale(void);
/* Whether a module written was unloaded since (modules_dead_any), and
 * pc lies in its range (the ranges' envelope first: two compares for a
 * PC elsewhere) and in no module written: it may be another's code, not
 * yet written (stack_intern looks before it looks the stack up). */
extern int modules_dead_any;
int pc_moved(uint64_t pc);
/* After the program's dlclose: a snapshot if something was unloaded,
 * while recording. */
void modules_after_unload(void);

/* cfi.c: how many times the loader's unload count was seen to move */
uint32_t cfi_unloads(void);

/* stacks.c, meta.lock held: a module was written where another one was
 * unloaded from (stacks_new_era: stacks are interned anew, new ids for
 * the same PC numbers, now another module's code); a module was unloaded
 * (stacks_drop_cached: every thread's cached stack ids are dropped, as
 * its range may hold another module before the next snapshot sees it). */
void stacks_new_era(void);
void stacks_drop_cached(void);

/* buffer.c */
struct ap_threads {
	pthread_key_t key;	/* its destructor is thr_exit */
	int lock;		/* all, free_list, every buffer's live and tls */
	struct ap_thr *all;	/* every buffer ever made */
	struct ap_thr *free_list;	/* buffers of exited threads, for reuse */
	struct ap_thr dead;	/* marker: the thread's key destructor ran */
	struct ap_thr fallback;	/* events of threads past their destructor */
	uint32_t nstreams;	/* EVENTS streams given (META is stream 0) */
	uint64_t exited_calls, exited_consumed;	/* counts of exited threads */
};
extern struct ap_threads threads;
uint64_t unwind_ns_all(void);
struct ap_meta {
	int lock;		/* the buffer, stack table inserts, the module list */
	uint8_t *buf;		/* header room + META_BUF_SIZE */
	size_t len;
	uint32_t nchunks;	/* META chunks written */
};
extern struct ap_meta meta;
void asym_register(void);
void tsc_calibrate(void);
int buffers_init(void);
void buffers_detach(void);
/* The child of a fork made while its thread was inside the sampler (a
 * signal handler that interrupted it forked): every slot and the buffers
 * file's head page become private copies in place, so that the code the
 * handler interrupted, which runs on, never writes the parent's. */
void buffers_privatize(void);
void buffers_abandon(void);
int buffers_durable(void);
struct ap_buffers_head *ring_of_buffers(uint8_t **data);
struct ap_buffers_head *ring_make(uint8_t **data);
void buffers_stop(void);
/* why the trace stopped: the errno of the write that failed */
void buffers_stop_why(int err);
uint8_t *meta_reserve(size_t n);
void meta_thread(uint32_t tid);
void emit(struct ap_tls *t, unsigned type, unsigned kind, uint64_t addr, uint64_t addr2,
	  uint64_t size, uint32_t stack, unsigned flags);
void thr_register(struct ap_tls *t);
void thr_exit(void *arg);
void buffers_forget(struct ap_tls *t);
void flush_all(int sig);
uint64_t events_total(void);

/* tracefile.c */
struct ap_tracefile {
	int fd;			/* -1: not open, or a write failed (the trace stops),
				 * or the ring takes the chunks (ring) */
	int ring;		/* chunks go into the buffers file's ring (record
				 * writes them): no descriptor held */
	void *lockmap;		/* a page of the trace mapped, which holds the
				 * writer's lock without a descriptor */
	int next_fd;		/* the next image's trace, made before a root
				 * process gave up the right to (trace_next_make);
				 * -1: none */
	char next_path[PATH_MAX]; /* next_fd's path: the next image's name */
	int lock;		/* trace_enter: writes, moving the descriptor */
	uint32_t owner;		/* tid holding lock (a handler may nest) */
	int in_signal;		/* flushing from a fatal-signal handler */
	uint64_t chunks;	/* META and EVENTS chunks written whole, for END */
	uint32_t ender;		/* the thread in end_trace (0: none yet) */
	int end_done;		/* END written, or given up: read with acquire */
	int final;		/* the END of the process's end (end_trace) */
	char path[PATH_MAX];	/* this image's trace */
	char base[PATH_MAX];	/* ALLOCPROF_OUTPUT */
};
extern struct ap_tracefile tfile;
/* Whether chunks can still be written (by the descriptor or the ring). */
static inline int trace_writable(void)
{
	return tfile.fd >= 0 || __atomic_load_n(&tfile.ring, __ATOMIC_RELAXED);
}
extern __thread int in_trace_write __attribute__((tls_model("initial-exec")));
void trace_write_data(const void *data, size_t len);
/* libunwind's address-checking pipe, which is never made (tracefile.c):
 * numbers no descriptor can have (-1 is libunwind's "none") */
#define UNW_FD_R (-0x4150)
#define UNW_FD_W (-0x4151)
long unw_check(const void *addr);
/* whether a return address is in libunwind's text (stacks.c) */
extern uintptr_t unw_text_lo, unw_text_hi;
/* libunwind's signal masks are made for real (tracefile.c's sigprocmask):
 * the program has libunwind of its own */
extern int unw_masks_kept;
static inline int from_unwinder(const void *ret)
{
	return (uintptr_t)ret - unw_text_lo < unw_text_hi - unw_text_lo;
}
int base_is_device(void);
void make_path(char *out, unsigned gen);
void trace_mode_init(void);
int trace_create(char *path);
/* fd, if it is a trace handed over (ALLOCPROF_EXEC :f); else a trace of
 * this image's own made at tfile.path (trace_create): its name is final
 * before the buffers file takes it. */
int trace_handed_or_create(int fd);
int open_trace(const char *parent, int fd);
int trace_direct(int rdwr);
void trace_next_make(void);
void trace_next_drop(void);
/* creds.c: whether nr changes the process's ids, capabilities or root
 * (the trace's descriptor opened first, while it can be) */
int creds_call(long nr);
int end_trace(unsigned reason, int have_status, uint64_t status, int sig);

/* pools.c: END's `pooled` key/value (the objects registered pools hold
 * now), in mapped memory with `front` bytes free before it (*map, *maplen:
 * munmap them); returns its length, 0 when there is none. */
size_t pools_end_kv(size_t front, uint8_t **kv, void **map, size_t *maplen);
void end_wait(void);

/* signals.c */
extern int sig_on, sig_lock;
extern __thread void *alt_mine __attribute__((tls_model("initial-exec")));
void alt_install(void);
void alt_remove(void);
void sig_install(void);
void sig_uninstall(void);
void sig_fork_open(const sigset_t *prog);
void sig_fork_close(void);
void sig_child_reset(void);

/* exec.c */
void exec_save_settings(void);
/* END's keys for the children posix_spawn started unprofiled (exec.c), at
 * most SPAWN_PUT_MAX bytes */
size_t spawn_put(uint8_t *p);
#define SPAWN_PUT_MAX (4 * AP_VARINT_MAX + 256)
void strip_preload(void);

/* refused.c */
long raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6);
int refused(int nr, int err);	/* 1: err is a seccomp filter's answer to nr (noted) */
int may_call(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);
unsigned filters_count(void);
#define REFUSED_PUT_MAX (2 * AP_VARINT_MAX + AP_VARINT_MAX + 8 * 24)
size_t refused_put(uint8_t *p);

/* slowstack.c */
extern __thread uint8_t *slow_top __attribute__((tls_model("initial-exec")));
#define SLOW_NONE ((uint8_t *)1)	/* slow_top: no stack of ours, run in place */
uint8_t *slow_stack_new(void);
void slow_stack_release(void);
void ap_on_stack_alloc_sampled(void *p, size_t n, unsigned kind, uint64_t caller, uint64_t cfa);
void ap_on_stack_realloc_sampled(void *old, void *q, size_t n, unsigned kind_tracked,
				 uint64_t caller, uint64_t cfa);
void ap_on_stack_free_sampled(void *p);

/* fn(...) on the calling thread's sampler stack (slowstack.c), mapped the
 * first time, through ap_on_stack_<fn>; only with the guard set, so that
 * nothing else of the sampler's runs on that stack meanwhile. */
#define on_slow_stack(fn, ...)                                   \
	do {                                                     \
		if (UNLIKELY(!slow_top))                         \
			slow_top = slow_stack_new();             \
		if (slow_top == SLOW_NONE)                       \
			fn(__VA_ARGS__);                         \
		else                                             \
			ap_on_stack_##fn(__VA_ARGS__);           \
	} while (0)

/* errno around the slow paths, read and written without a call of
 * __errno_location per event: the C library's errno is in the static TLS
 * block, at the same offset from the thread pointer in every thread
 * (errno_off, set by resolve, which ap_init runs first: before the state
 * can turn AP_ON, and only then do the slow paths save errno). */
extern intptr_t errno_off;
void errno_locate(void);
static inline __attribute__((always_inline)) int errno_get(void)
{
#if defined(__x86_64__)
	return *(const volatile int __seg_fs *)errno_off;
#else
	return errno;
#endif
}

static inline __attribute__((always_inline)) void errno_put(int v)
{
#if defined(__x86_64__)
	*(volatile int __seg_fs *)errno_off = v;
#else
	errno = v;
#endif
}

/* Range of this library's image, to drop our own frames from stacks. */
extern char __ehdr_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

static inline void lk_lock(int *l)
{
	int z = 0;
	/* compare-and-swap, not exchange: a waiter must not overwrite the
	 * holder's lock id in a lock taken with own_lock */
	while (!__atomic_compare_exchange_n(l, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			sched_yield();
		z = 0;
	}
}

static inline void lk_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* The locks that a malloc, free or realloc on the same thread can take
 * again from a signal handler (the pointer sets, the early log) hold the
 * id of the thread that holds them (lock_id, per thread, never 0 or 1):
 * own_lock returns 1 without waiting when the calling thread holds the
 * lock already (a handler interrupted it inside), and the code under the
 * lock is written so that such a nested call may run between any two of
 * its instructions (ptrset.c, "Signal handlers"). No signal mask changes:
 * a thread that blocks and unblocks signals takes process-directed ones
 * meant for another thread. */
extern __thread uint32_t lock_id __attribute__((tls_model("initial-exec")));
uint32_t lock_id_new(void);

static inline int own_lock(int *l)
{
	uint32_t id = lock_id;
	if (UNLIKELY(!id))
		id = lock_id_new();
	if (__atomic_load_n(l, __ATOMIC_RELAXED) == (int)id)
		return 1;
	int z = 0;
	while (!__atomic_compare_exchange_n(l, &z, (int)id, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			sched_yield();
		z = 0;
	}
	return 0;
}

static inline void own_unlock(int *l, int nested)
{
	if (!nested)
		__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* fork_prepare holds the profiler's locks with every signal blocked, so
 * that none is held half-way in the child (and a SIGCHLD handler that
 * frees runs after fork returns). */
static inline void sig_block(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old); /* returns its error, errno stays */
}

static inline void sig_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static inline void *map_mem(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The clock clk in ns. Inline: emit reads CLOCK_MONOTONIC here each
 * time a quantum ends. */
static inline uint64_t now_ns(int clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Events carry no time of their own: a TIME record precedes the first event
 * of each new quantum. Knowing when a quantum ends takes a clock read per
 * event; rdtsc (~11 ns here, constant and non-stop TSC) is checked against
 * a deadline, and only a passed deadline reads CLOCK_MONOTONIC (vDSO,
 * ~25 ns), which stays the one source of the times written. */
static inline uint64_t rd_tsc(void)
{
	return __builtin_ia32_rdtsc();
}

/* The settings. `allocprof record` passes them in one variable, so the
 * program's environment grows by that entry and LD_PRELOAD only (as under
 * valgrind; a program that copies its environment, like perl, allocates
 * per entry): ALLOCPROF=<pid>:<rate>:<max_depth>:<flags>:<output>, the
 * fields after the pid's as AP_CFG_SETTINGS_FMT (trace/ap_trace_enc.h)
 * writes them.
 * Without it the separate ALLOCPROF_PID, _RATE, _MAX_DEPTH, _NO_CHILDREN
 * and _OUTPUT variables are read. */
enum { CFG_PID, CFG_RATE, CFG_DEPTH, CFG_NO_CHILDREN, CFG_OUTPUT, CFG_N };

static inline int is_boot(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < sizeof(boot_arena);
}

static inline size_t filter_slot(const void *p)
{
	return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >>
			(64 - FILTER_BITS));
}

/* A block of own_alloc's (boot.c): OWN_TAG where glibc's chunk header
 * would be (a chunk of 8 bytes: blk_size reads 0, so the live count
 * does not move), and its size with OWN_MAGIC above it before that. A
 * block of dlsym's has its size at p - 8. */
#define OWN_TAG 13u
#define OWN_MAGIC 0x4f574e42u /* "OWNB" */
static inline int own_block(const void *p)
{
	uint64_t tag, sz;
	memcpy(&tag, (const uint8_t *)p - 8, sizeof(tag));
	memcpy(&sz, (const uint8_t *)p - 16, sizeof(sz));
	return tag == OWN_TAG && sz >> 32 == OWN_MAGIC;
}

static inline size_t boot_size(const void *p)
{
	size_t n;
	if (own_block(p)) {
		memcpy(&n, (const uint8_t *)p - 16, sizeof(n));
		return (uint32_t)n;
	}
	memcpy(&n, (const uint8_t *)p - 8, sizeof(n));
	return n;
}

/* A buffer (b->buf, meta.buf) is the tail of a slot of the buffers file
 * (trace/ap_trace_buffers.h), whose header sits right before it. */
static inline struct ap_slot *slot_of(uint8_t *buf)
{
	return (struct ap_slot *)(void *)(buf - AP_SLOT_HDR);
}

/* The buffer's bytes in use (chunk header room included) are published
 * after each record: what a death leaves there is whole records. */
static inline void slot_publish(uint8_t *buf, size_t len)
{
	__atomic_store_n(&slot_of(buf)->len, (uint64_t)len, __ATOMIC_RELEASE);
}

/* n bytes of META records were put at meta_reserve's pointer (meta.lock
 * held). */
static inline void meta_commit(size_t n)
{
	meta.len += n;
	slot_publish(meta.buf, AP_CHUNK_HDR_LEN + meta.len);
}

/* ---- the pointer set: which live blocks are tracked (sampled mode) ----- */

/* A counting filter (ap_filter, one byte per slot, saturating) answers "not
 * tracked" for almost every free without touching the set. The set itself
 * is an open-addressing table of addresses (ptrset.c) under own_lock; it
 * grows instead of ever failing an insert. The same structure, with a
 * filter of its own, holds the blocks glibc and libunwind allocated for us
 * (own_blocks, below). */
#define PS_JOURNAL 32
struct ps_tab;
struct ps_op {
	uint64_t key;
	int remove;
};
struct ptr_set {
	int lock;		/* own_lock (1: fork_prepare's lk_lock) */
	struct ps_tab *tab;	/* never NULL */
	size_t count;		/* keys in the set */
	uint8_t *filter;
	/* the holder's rehash, and what handlers did meanwhile (ptrset.c) */
	int rehashing;
	struct ps_tab *next;
	uint32_t jn;
	struct ps_op journal[PS_JOURNAL];
};

static inline void set_insert(const void *p)
{
	ps_insert(&tracked_set, p);
}

static inline int set_remove(const void *p)
{
	return ps_remove(&tracked_set, p);
}

/* p is being freed (or realloc'd): 1 if it was one of own_blocks. */
static inline int own_forget(const void *p)
{
	return UNLIKELY(own_filter[filter_slot(p)]) && ps_remove(&own_blocks, p);
}
#pragma GCC visibility pop
#endif
