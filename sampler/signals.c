/* signals.c: fatal signals. Puts the sampler's handler under every signal
 * whose default action ends the process, so that the trace is flushed and
 * ended before the process dies of it, while the program sees and sets
 * only its own dispositions and alternate stack (the interposed sigaction,
 * signal family and sigaltstack). */
#include "sampler-int.h"

/* Fatal signals. Every signal whose default action ends the process gets
 * our handler (sig_entry) for real, while the program sees and sets its
 * own disposition (sig_view) through the interposed sigaction and the
 * signal() family: sig_entry runs the program's handler when it has one,
 * and when the program's disposition is the default it ends the trace,
 * restores the default and re-raises, so that the process dies of the same
 * signal (core dump included). A program's handler that restores SIG_DFL
 * and re-raises therefore reaches the flush too. SIG_IGN is set for real
 * (it is inherited across exec). The handler runs on an alternate stack of
 * ours (sig_altstack) so that a stack overflow is flushed too; the program
 * sees only its own alternate stack. */
int sig_lock;
static struct sigaction sig_view[NSIG];	/* the program's dispositions */
/* Odd while sig_view changes (under sig_lock): queries read the view
 * without the lock (view_get). */
static unsigned sig_seq;
/* the flags the kernel keeps, learnt by sig_probe (0: not known) */
static unsigned sig_known_flags;
static uint8_t sig_ours[NSIG];		/* sig_entry is installed for real */
__thread void *alt_mine __attribute__((tls_model("initial-exec")));

int sig_on;		/* dispositions are managed (sig_install ran) */

/* Signals whose default action terminates (with or without a core). */
static int sig_fatal(int s)
{
	switch (s) {
	case SIGHUP: case SIGINT: case SIGQUIT: case SIGILL: case SIGTRAP:
	case SIGABRT: case SIGBUS: case SIGFPE: case SIGUSR1: case SIGSEGV:
	case SIGUSR2: case SIGPIPE: case SIGALRM: case SIGTERM: case SIGSTKFLT:
	case SIGXCPU: case SIGXFSZ: case SIGVTALRM: case SIGPROF: case SIGIO:
	case SIGPWR: case SIGSYS:
		return 1;
	}
	return s >= SIGRTMIN && s <= SIGRTMAX;
}

static int sig_managed(int s)
{
	return sig_on && s > 0 && s < NSIG && sig_fatal(s) && proc.pid == sys_getpid();
}

static void sig_entry(int s, siginfo_t *si, void *uc);

/* The view is copied a word at a time, so that a query that reads it
 * while a set writes it (view_get) reads words, not torn ones. */
#define VIEW_WORDS (sizeof(struct sigaction) / sizeof(uint64_t))
_Static_assert(sizeof(struct sigaction) % sizeof(uint64_t) == 0, "sigaction in words");

static void view_copy(void *dst, const void *src)
{
	uint64_t *d = dst;
	const uint64_t *w = src;
	for (size_t i = 0; i < VIEW_WORDS; i++)
		__atomic_store_n(&d[i], __atomic_load_n(&w[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* sig_lock held */
static void view_set(int s, const struct sigaction *k)
{
	unsigned q = __atomic_load_n(&sig_seq, __ATOMIC_RELAXED);
	if (q & 1) {
		/* a handler's set inside this thread's own (own_lock's
		 * nesting): the sequence stays odd until the outer one ends */
		view_copy(&sig_view[s], k);
		return;
	}
	__atomic_store_n(&sig_seq, q + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	view_copy(&sig_view[s], k);
	__atomic_store_n(&sig_seq, q + 2, __ATOMIC_RELEASE);
}

/* A fork's child, its sig_lock let go: a set another thread was making
 * (gone in the child) left the sequence odd. */
void sig_child_reset(void)
{
	sig_seq &= ~1u;
}

/* A query's read of the view: a copy made while no set was under way,
 * without the lock. With the lock, queries of several threads waited on
 * each other, in sched_yield, whenever its holder was off the CPU (the
 * kernel answers them at once): tests/record/sigprog.c `taken`'s three
 * asking threads made 1,000-6,000 sched_yield calls in a run, ~50 now.
 * Only while a set is under way (the sequence odd or moved) does a query
 * take the lock as before: own_lock, so that a handler that interrupted
 * this thread's own set reads through (a disposition half-made in the
 * copy, no worse). */
static void view_get(int s, struct sigaction *out)
{
	for (int i = 0; i < 16; i++) {
		unsigned q = __atomic_load_n(&sig_seq, __ATOMIC_ACQUIRE);
		if (q & 1)
			continue;
		view_copy(out, &sig_view[s]);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&sig_seq, __ATOMIC_RELAXED) == q)
			return;
	}
	int nested = own_lock(&sig_lock);
	view_copy(out, &sig_view[s]);
	own_unlock(&sig_lock, nested);
}

/* The real disposition sig_apply last set, while nothing else has set
 * one since (sig_real_known): a set that changes nothing of it makes no
 * system call. Threads that set the same disposition over and over (a
 * library that ignores SIGPIPE around each write) otherwise waited on
 * sig_lock, in sched_yield, for each other's rt_sigaction, whenever the
 * holder was off the CPU inside it (tests/record/sigprog.c `taken set`:
 * 111,000-119,000 sched_yield calls in a run, 39,000-73,000 now). */
static struct sigaction sig_real[NSIG];
static uint8_t sig_real_known[NSIG];
/* Odd while a disposition is set outside sig_lock (sig_entry's
 * SA_RESETHAND, sig_die): a set under the lock that raced one keeps
 * nothing in sig_real. */
static unsigned sig_real_gen[NSIG];

static void sig_real_forget(int s)
{
	__atomic_store_n(&sig_real_known[s], 0, __ATOMIC_SEQ_CST);
}

/* A real disposition set outside sig_lock. */
static void sig_real_set_outside(int s, const struct sigaction *k)
{
	__atomic_add_fetch(&sig_real_gen[s], 1, __ATOMIC_SEQ_CST);
	sig_real_forget(s);
	real_sigaction(s, k, NULL);
	__atomic_add_fetch(&sig_real_gen[s], 1, __ATOMIC_SEQ_CST);
}

/* Puts the real disposition of s in line with sig_view[s]; `locked`:
 * under sig_lock, where the last one set is known (sig_entry's
 * SA_RESETHAND sets one without it). */
static void sig_apply_real(int s, int locked)
{
	const struct sigaction *v = &sig_view[s];
	struct sigaction k;
	memset(&k, 0, sizeof(k));
	if (v->sa_handler == SIG_IGN) {
		k.sa_handler = SIG_IGN;
	} else {
		k.sa_sigaction = sig_entry;
		if (v->sa_handler == SIG_DFL) {
			k.sa_flags = SA_SIGINFO | SA_ONSTACK;
			sigfillset(&k.sa_mask);
		} else {
			/* the program's mask and flags; SA_RESETHAND is done by
			 * sig_entry, which must stay installed to see the re-raise */
			k.sa_flags = (v->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
			k.sa_mask = v->sa_mask;
		}
	}
	if (!locked) {
		sig_real_set_outside(s, &k);
	} else if (!__atomic_load_n(&sig_real_known[s], __ATOMIC_SEQ_CST) ||
		   memcmp(&sig_real[s], &k, sizeof(k)) != 0) {
		unsigned g = __atomic_load_n(&sig_real_gen[s], __ATOMIC_SEQ_CST);
		sig_real_forget(s);
		if (real_sigaction(s, &k, NULL) == 0 && !(g & 1)) {
			sig_real[s] = k;
			__atomic_store_n(&sig_real_known[s], 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&sig_real_gen[s], __ATOMIC_SEQ_CST) != g)
				sig_real_forget(s);
		}
	}
	sig_ours[s] = k.sa_handler != SIG_IGN;
}

static void sig_apply(int s)
{
	sig_apply_real(s, 1);
}

/* The default action, after the trace has ended: the process dies of s as
 * it would have without us (a fault simply recurs on return). */
static void sig_die(int s)
{
	int saved = errno;
	tls.guard++;
	tfile.in_signal = 1;
	if (end_trace(AP_END_SIGNAL, 1, (uint64_t)s, 1) < 0)
		end_wait();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sig_real_set_outside(s, &sa);
	/* pending until the handler returns and the mask is restored */
	raise(s);
	tls.guard--;
	errno = saved;
}

/* A fork's window: from fork_prepare's last lock to fork_parent's (or
 * fork_child's) unlock, the forking thread holds the sampler's locks, and
 * a handler that allocated there would wait on them forever. Blocking
 * every signal through it (as before) told the program it was recorded:
 * a signal sent to the process in that window went to another of its
 * threads (tests/record/sigprog.c `taken`), where natively the kernel
 * gives it to the forking thread. So the signals whose real handler is
 * sig_entry stay open (sig_fork_open) and sig_entry, on the window's
 * thread, hands each back to the kernel for that thread, with its
 * siginfo, blocked until the window's mask is restored
 * (sig_fork_defer): it is then delivered as the kernel delivers any, on
 * the thread it chose. The faults (SIGSEGV and its kind) stay blocked:
 * one inside the window is the sampler's, and ends the process as it
 * would have. Signals whose handler is the program's own (SIGCHLD,
 * SIGWINCH ...) stay blocked too, as before. The window is the thread's
 * (GUARD_FORK): in the child, its copy, from the clone until fork_child
 * blocks every signal again; not another thread's, nor a vfork child's. */

static int sig_fault(int s)
{
	return s == SIGSEGV || s == SIGBUS || s == SIGILL || s == SIGFPE ||
	       s == SIGTRAP || s == SIGSYS;
}

/* Every signal is blocked (sig_block) and the locks are held: the
 * window opens for sig_entry's signals that prog (the program's mask)
 * does not block. */
void sig_fork_open(const sigset_t *prog)
{
	/* (without sig_known_flags, attached, a set installs the program's
	 * handler for a moment: it could run in the window) */
	if (!__atomic_load_n(&sig_on, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&sig_known_flags, __ATOMIC_RELAXED))
		return;
	sigset_t win;
	sigfillset(&win);
	int any = 0;
	for (int s = 1; s < NSIG; s++)
		if (sig_ours[s] && !sig_fault(s) && !sigismember(prog, s)) {
			sigdelset(&win, s);
			any = 1;
		}
	if (!any)
		return;
	tls.guard |= GUARD_FORK;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_sigmask(SIG_SETMASK, &win, NULL);
}

/* (before the mask is restored, or blocked again in the child) */
void sig_fork_close(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	tls.guard &= ~GUARD_FORK;
}

/* s came to the window's thread: back to the kernel, queued for this
 * thread with the sender's siginfo (a process may queue any siginfo to
 * its own threads), and blocked when the handler returns, until the
 * window's end restores the mask. Without rt_tgsigqueueinfo (a seccomp
 * filter's refusal), tgkill: the signal without its sender. */
static void sig_fork_defer(int s, siginfo_t *si, ucontext_t *uc)
{
	int saved = errno;
	long pid = sys_getpid(), tid = sys_gettid();
	siginfo_t copy = *si;
	/* blocked first: under SA_NODEFER it is not, and the one queued
	 * would come back at once, again and again */
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, s);
	pthread_sigmask(SIG_BLOCK, &one, NULL);
	if (!(may_call(SYS_rt_tgsigqueueinfo, (uint64_t)pid, (uint64_t)tid, (uint64_t)s,
		       (uint64_t)(uintptr_t)&copy) &&
	      syscall(SYS_rt_tgsigqueueinfo, pid, tid, s, &copy) == 0) &&
	    may_call(SYS_tgkill, (uint64_t)pid, (uint64_t)tid, (uint64_t)s, 0))
		syscall(SYS_tgkill, pid, tid, s);
	sigaddset(&uc->uc_sigmask, s);
	errno = saved;
}

static void sig_entry(int s, siginfo_t *si, void *uc)
{
	if (s == SIGXFSZ && in_trace_write)
		return; /* our write, not the program's: it gets EFBIG */
	if (UNLIKELY(tls.guard & GUARD_FORK)) {
		sig_fork_defer(s, si, uc);
		return;
	}
	struct sigaction *v = &sig_view[s];
	void (*h)(int) = v->sa_handler;
	if (h == SIG_DFL) {
		sig_die(s);
		return;
	}
	if (h == SIG_IGN)
		return; /* changed under us */
	int flags = v->sa_flags;
	void (*act)(int, siginfo_t *, void *) = v->sa_sigaction;
	if (flags & SA_RESETHAND) {
		/* as the kernel does: the handler becomes SIG_DFL, flags stay */
		v->sa_handler = SIG_DFL;
		sig_apply_real(s, 0);
	}
	/* last, so that it is a jump (tests/record/exports.sh): attached,
	 * no frame of ours stays under the program's handler */
	if (flags & SA_SIGINFO)
		act(s, si, uc);
	else
		h(s);
}

/* Our alternate signal stack for the calling thread, if it has none. */
#define ALT_SIZE (64u << 10)
void alt_install(void)
{
	stack_t cur;
	/* attached: a stack of ours would outlive the detach, still the
	 * thread's alternate stack */
	if (attach_mode || alt_mine || real_sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	uint8_t *m = mmap(NULL, ALT_SIZE + 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	mprotect(m, 4096, PROT_NONE); /* overflowing it faults, not corrupts */
	stack_t ss = { .ss_sp = m + 4096, .ss_size = ALT_SIZE, .ss_flags = 0 };
	if (real_sigaltstack(&ss, NULL) == 0)
		alt_mine = m + 4096;
	else
		munmap(m, ALT_SIZE + 4096);
}

/* The thread is exiting: its stack of ours goes (if the program has not
 * replaced it). */
void alt_remove(void)
{
	stack_t cur;
	if (!alt_mine)
		return;
	if (real_sigaltstack(NULL, &cur) == 0 && cur.ss_sp == alt_mine &&
	    !(cur.ss_flags & SS_ONSTACK)) {
		stack_t off = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
		real_sigaltstack(&off, NULL);
		munmap((uint8_t *)alt_mine - 4096, ALT_SIZE + 4096);
	}
	alt_mine = NULL;
}

/* The kernel's reading of a disposition, made without setting it (a
 * set then changes no mask: do_sigaction_managed): the flags it keeps
 * (sig_known_flags; since Linux 5.11 it clears those it does not know),
 * and the restorer glibc's sigaction puts in (sig_restorer). Learnt once,
 * by sig_probe, with every signal blocked; 0 until then, and attached
 * (the program's threads run meanwhile, and could take the probe's
 * flags): a set then installs the program's disposition and reads it
 * back. */
static void (*sig_restorer)(void);
#ifndef SA_RESTORER	/* (the kernel's; glibc's headers leave it out) */
#if defined(__x86_64__)
#define SA_RESTORER 0x04000000
#else
#define SA_RESTORER 0	/* glibc sets none there (and the sampler is x86-64's) */
#endif
#endif

/* sig_install's: s, ours, with every flag but SA_RESETHAND, read back,
 * then ours again (signals blocked: none is delivered meanwhile). */
static void sig_probe(int s)
{
	struct sigaction p, got;
	memset(&p, 0, sizeof(p));
	p.sa_sigaction = sig_entry;
	p.sa_flags = (int)(~0u & ~(unsigned)SA_RESETHAND);
	sigfillset(&p.sa_mask);
	sig_real_forget(s);
	if (real_sigaction(s, &p, NULL) == 0 && real_sigaction(s, NULL, &got) == 0 &&
	    (got.sa_flags & SA_SIGINFO)) {
		sig_restorer = got.sa_restorer;
		sig_known_flags = (unsigned)got.sa_flags | (unsigned)SA_RESETHAND;
	}
	sig_apply(s);
}

/* act as a query returns it once set: the mask without SIGKILL and
 * SIGSTOP, the flags the kernel keeps (glibc's SA_RESTORER among them),
 * glibc's restorer. */
static void sig_norm(struct sigaction *k, const struct sigaction *act)
{
	*k = *act;
	sigdelset(&k->sa_mask, SIGKILL);
	sigdelset(&k->sa_mask, SIGSTOP);
	k->sa_flags = (int)(((unsigned)act->sa_flags | (unsigned)SA_RESTORER) & sig_known_flags);
	k->sa_restorer = sig_restorer;
}

/* Attached, this runs while the program's other threads go on, its
 * sigaction calls already routed here: sig_on first, so that they take
 * sig_lock (a disposition set meanwhile is read here, not overwritten),
 * and a signal already ours is left as it is. */
void sig_install(void)
{
	sigset_t all, mask;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &mask);
	__atomic_store_n(&sig_on, 1, __ATOMIC_RELEASE);
	lk_lock(&sig_lock);
	for (int s = 1; s < NSIG; s++) {
		struct sigaction cur;
		if (!sig_fatal(s) || real_sigaction(s, NULL, &cur) < 0 ||
		    ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == sig_entry))
			continue;
		view_set(s, &cur);
		sig_apply(s);
	}
	for (int s = 1; s < NSIG && !attach_mode && !sig_known_flags; s++)
		if (sig_ours[s] && sig_view[s].sa_handler == SIG_DFL)
			sig_probe(s);
	lk_unlock(&sig_lock);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	alt_install();
}

/* Attached, at the detach (no thread inside the sampler; the routes to
 * sigaction gone): every disposition of ours back to the program's. One
 * the program set since the routes went (ours no longer there) stays. */
void sig_uninstall(void)
{
	if (!sig_on)
		return;
	for (int s = 1; s < NSIG; s++) {
		struct sigaction cur;
		if (!sig_ours[s] || real_sigaction(s, NULL, &cur) < 0 ||
		    !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != sig_entry)
			continue;
		sig_real_forget(s);
		real_sigaction(s, &sig_view[s], NULL);
		sig_ours[s] = 0;
	}
	sig_on = 0;
}

/* Program-visible calls. Signals are blocked while the view changes: a
 * handler of the program may call sigaction itself (a query blocks
 * nothing: do_sigaction_managed). The rest of the
 * family calls do_sigaction directly (by name it would be the C library's
 * when record -p loaded this library). Attached, the thread counts in
 * at_in meanwhile: a detach waits. */
static int do_sigaction_managed(int s, const struct sigaction *act, struct sigaction *old);

static int do_sigaction(int s, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction)
		resolve();
	if (!sig_managed(s))
		return real_sigaction(s, act, old);
	if (!attach_mode)
		return do_sigaction_managed(s, act, old);
	at_in++;
	int rc = do_sigaction_managed(s, act, old);
	at_in--;
	return rc;
}

EXPORT int sigaction(int s, const struct sigaction *act, struct sigaction *old)
{
	return do_sigaction(s, act, old);
}

static int do_sigaction_managed(int s, const struct sigaction *act, struct sigaction *old)
{
	if (!act) {
		/* A query changes nothing, and masks nothing: a thread that
		 * puts its mask back takes a signal pending for the process
		 * that another thread was woken for (python3 asks about
		 * every signal). The lock is taken as own_lock takes it: a
		 * handler that interrupted this thread inside reads through
		 * (a disposition it sets meanwhile may show half-made in the
		 * interrupted query's copy, no worse). */
		struct sigaction prev;
		view_get(s, &prev);
		if (old)
			*old = prev;
		return 0;
	}
	if (__atomic_load_n(&sig_known_flags, __ATOMIC_RELAXED)) {
		/* No mask either: the disposition the program asks for is
		 * read as the kernel would read it (sig_norm), and sig_apply
		 * puts the sampler's handler under it at once, so that the
		 * program's is never installed for real, not even for a
		 * moment (libraries that ignore SIGPIPE around each write,
		 * on several threads, set dispositions all the time) */
		struct sigaction k;
		sig_norm(&k, act);
		int nested = own_lock(&sig_lock);
		struct sigaction prev = sig_view[s];
		view_set(s, &k);
		sig_apply(s);
		own_unlock(&sig_lock, nested);
		if (old)
			*old = prev;
		return 0;
	}
	sigset_t all, mask;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &mask);
	/* (own_lock: a query this thread was in when the handler that
	 * makes this call came holds the lock already) */
	int nested = own_lock(&sig_lock);
	struct sigaction prev = sig_view[s];
	/* the kernel's own reading of act (mask without SIGKILL and SIGSTOP,
	 * the flags it knows, glibc's restorer) is what a query returns */
	sig_real_forget(s);
	int rc = real_sigaction(s, act, NULL);
	if (rc == 0) {
		struct sigaction k;
		real_sigaction(s, NULL, &k);
		view_set(s, &k);
		sig_apply(s);
	}
	own_unlock(&sig_lock, nested);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	errno = e;
	if (rc == 0 && old)
		*old = prev;
	return rc;
}

/* signal() and its variants as glibc defines them, through sigaction. */
static sighandler_t set_handler(int s, sighandler_t h, int flags, int mask_self)
{
	struct sigaction sa, old;
	if (h == SIG_ERR || s < 1 || s >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (mask_self)
		sigaddset(&sa.sa_mask, s);
	sa.sa_flags = flags;
	if (do_sigaction(s, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

EXPORT sighandler_t signal(int s, sighandler_t h)
{
	return set_handler(s, h, SA_RESTART, 1);
}

sighandler_t bsd_signal(int s, sighandler_t h); /* not declared by glibc */
EXPORT sighandler_t bsd_signal(int s, sighandler_t h)
{
	return set_handler(s, h, SA_RESTART, 1);
}

EXPORT sighandler_t sysv_signal(int s, sighandler_t h)
{
	return set_handler(s, h, (int)(SA_RESETHAND | SA_NODEFER), 0);
}

EXPORT int siginterrupt(int s, int flag)
{
	struct sigaction sa;
	if (do_sigaction(s, NULL, &sa) < 0)
		return -1;
	if (flag)
		sa.sa_flags &= ~SA_RESTART;
	else
		sa.sa_flags |= SA_RESTART;
	return do_sigaction(s, &sa, NULL);
}

/* glibc's sigset and sigignore call its sigaction internally, past ours:
 * the same, through ours. */
EXPORT sighandler_t sigset(int s, sighandler_t h)
{
	sigset_t one, mask;
	struct sigaction sa, old;
	if (h == SIG_ERR || s < 1 || s >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&one);
	sigaddset(&one, s);
	if (h == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &one, &mask) < 0 || do_sigaction(s, NULL, &old) < 0)
			return SIG_ERR;
		return sigismember(&mask, s) ? SIG_HOLD : old.sa_handler;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (do_sigaction(s, &sa, &old) < 0 || sigprocmask(SIG_UNBLOCK, &one, &mask) < 0)
		return SIG_ERR;
	return sigismember(&mask, s) ? SIG_HOLD : old.sa_handler;
}

EXPORT int sigignore(int s)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	return do_sigaction(s, &sa, NULL);
}

/* The program sees its own alternate stack, or none: never ours. Setting
 * one replaces ours for real; disabling its own puts ours back. */
EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	if (!real_sigaltstack)
		resolve();
	stack_t cur;
	if (!sig_on || !alt_mine || real_sigaltstack(NULL, &cur) < 0)
		return real_sigaltstack(ss, old);
	if (cur.ss_sp != alt_mine || (cur.ss_flags & SS_DISABLE)) {
		/* the program's own (or none) */
		int rc = real_sigaltstack(ss, old);
		if (rc == 0 && ss && (ss->ss_flags & SS_DISABLE)) {
			stack_t mine = { .ss_sp = alt_mine, .ss_size = ALT_SIZE, .ss_flags = 0 };
			real_sigaltstack(&mine, NULL);
		}
		return rc;
	}
	int rc = 0;
	if (ss && !(ss->ss_flags & SS_DISABLE)) {
		rc = real_sigaltstack(ss, NULL);
	} else if (ss && ss->ss_flags != SS_DISABLE) {
		errno = EINVAL;
		rc = -1;
	}
	if (rc == 0 && old) {
		old->ss_sp = NULL;
		old->ss_size = 0;
		old->ss_flags = SS_DISABLE;
	}
	return rc;
}

