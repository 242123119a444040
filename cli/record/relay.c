/* record/relay.c: `allocprof record`, the signals sent to record, passed on to the program (record-int.h). */
#include "record-int.h"

/* Whether record takes signal s through its signalfd while the program
 * runs (all but SIGCHLD are forwarded; SIGCHLD wakes the wait). */
bool rec_relayed(int s)
{
	return s != SIGKILL && s != SIGSTOP;
}

#define SENTINEL_STACK (16u << 10)

static long sentinel_sys(long nr, long a, long b, long c, long d)
{
	/* raw system calls: the sentinel shares record's memory and TLS, so
	 * it may not touch errno (record's) nor call into libc */
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The sentinel's body: every signal blocked; for each signal number record
 * writes, takes one pending instance of it if there is one and answers
 * 1 (there was) or 0. It dies with record (PR_SET_PDEATHSIG). */
static int sentinel_main(void *arg)
{
	const struct relay *r = arg;
	uint64_t all = ~0ull;
	sentinel_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all));
	sentinel_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
	for (;;) {
		unsigned char sig, had;
		if (sentinel_sys(SYS_read, r->req, (long)&sig, 1, 0) != 1)
			break;
		uint64_t one = 1ull << (sig - 1);
		struct timespec zero = { 0, 0 };
		had = sentinel_sys(SYS_rt_sigtimedwait, (long)&one, 0, (long)&zero, sizeof(one)) == sig;
		if (sentinel_sys(SYS_write, r->rep, (long)&had, 1, 0) != 1)
			break;
	}
	sentinel_sys(SYS_exit, 0, 0, 0, 0);
	return 0;
}

/* Starts the sentinel (it must join the group after record: the
 * kernel signals the newest members first). Without one every signal is
 * forwarded. */
static void relay_sentinel(struct relay *r)
{
	static char stack[SENTINEL_STACK] __attribute__((aligned(64)));
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) < 0)
		return;
	if (pipe2(b, O_CLOEXEC) < 0) {
		close(a[0]);
		close(a[1]);
		return;
	}
	r->req = a[1];
	r->rep = b[0];
	struct relay view = *r;
	view.req = a[0];
	view.rep = b[1];
	static struct relay sentinel_view;
	sentinel_view = view; /* the sentinel reads it: not on our stack */
	pid_t pid = clone(sentinel_main, stack + sizeof(stack), CLONE_VM | SIGCHLD, &sentinel_view);
	close(a[0]);
	close(b[1]);
	if (pid < 0) {
		close(r->req);
		close(r->rep);
		r->req = r->rep = -1;
		return;
	}
	r->sentinel = pid;
}

/* Blocks every relayed signal and opens the signalfd; before the launch
 * (the program gets r->mask back). Returns 0, or -1 after one line. */
int rec_relay_start(struct relay *r)
{
	r->sentinel = -1;
	r->req = r->rep = -1;
	sigemptyset(&r->set);
	for (int s = 1; s < NSIG; s++)
		if (rec_relayed(s))
			sigaddset(&r->set, s);
	sigprocmask(SIG_BLOCK, &r->set, &r->mask);
	r->sfd = signalfd(-1, &r->set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sfd < 0) {
		ap_say("signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &r->mask, NULL);
		return -1;
	}
	r->program = 0;
	relay_sentinel(r);
	return 0;
}

/* Whether the sentinel had a pending s: then s was sent to the group. */
static bool sent_to_group(struct relay *r, int s)
{
	unsigned char sig = (unsigned char)s, had = 0;
	if (r->sentinel < 0 || write(r->req, &sig, 1) != 1 || read(r->rep, &had, 1) != 1)
		return false;
	return had;
}

/* Forwards what record was sent; 1 if a SIGCHLD came (the program may
 * have changed state). */
int rec_relay_signals(struct relay *r)
{
	struct signalfd_siginfo si;
	int chld = 0;
	while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int s = (int)si.ssi_signo;
		if (s == SIGCHLD) {
			chld = 1;
			continue;
		}
		if (r->program <= 0)
			continue; /* the launch failed */
		if ((pid_t)si.ssi_pid == getpid() && si.ssi_code != SI_QUEUE)
			continue; /* our own (SIGPIPE from a write) */
		if (sent_to_group(r, s))
			continue;
		if (si.ssi_code == SI_QUEUE) {
			siginfo_t q;
			memset(&q, 0, sizeof(q));
			q.si_signo = s;
			q.si_code = SI_QUEUE;
			q.si_pid = (pid_t)si.ssi_pid;
			q.si_uid = si.ssi_uid;
			q.si_value.sival_ptr = (void *)(uintptr_t)si.ssi_ptr;
			if (syscall(SYS_rt_sigqueueinfo, r->program, s, &q) == 0)
				continue;
		}
		kill(r->program, s);
	}
	return chld;
}

/* The program stopped by s: record stops the same way, and goes on when
 * continued. */
void rec_relay_stop(struct relay *r, int s)
{
	if (s != SIGTSTP && s != SIGTTIN && s != SIGTTOU)
		return; /* SIGSTOP from a debugger, say: not a job's stop */
	rec_relay_signals(r); /* the group's copies are answered for first */
	struct sigaction dfl, was;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(s, &dfl, &was);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, s);
	kill(getpid(), s);
	sigprocmask(SIG_UNBLOCK, &one, NULL); /* stops here */
	sigprocmask(SIG_BLOCK, &one, NULL);
	sigaction(s, &was, NULL);
}

/* The program has ended: its signals are record's own again. */
void rec_relay_end(struct relay *r)
{
	if (r->sfd < 0)
		return;
	rec_relay_signals(r);
	if (r->sentinel > 0) {
		close(r->req);
		close(r->rep);
		kill(r->sentinel, SIGKILL);
		waitpid(r->sentinel, NULL, __WALL);
	}
	close(r->sfd);
	r->sfd = -1;
	/* a signal that came since goes to record now */
	sigprocmask(SIG_SETMASK, &r->mask, NULL);
}
