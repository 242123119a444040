/* testdata/lifecycle: allocates 5000 blocks of 32 bytes (kept), then ends
 * in the way argv[1] names; tests/record checks that the --all trace holds
 * all 5000 with END and that the program ends as it does without the
 * sampler.
 *   raise SIG   kill(getpid(), SIG) (SIG a number)
 *   pipe        writes into a pipe whose reader is closed: SIGPIPE
 *   rehandler   its own SIGSEGV handler restores SIG_DFL and re-raises
 *   resethand   a SIGTERM handler with SA_RESETHAND; raised twice
 *   overflow    recursion until the stack overflows (SIGSEGV)
 *   wait        prints "ready", then waits for a signal (pause)
 *   threadwait  3 threads allocate 100 blocks each (kept); then as wait
 *   closerange  close_range(3, ~0U, 0), 100 more blocks, exit 0
 *   closeloop   close() of every fd from 3 to 1023, 100 more, exit 0
 *   dup2loop    dup2 of /dev/null onto fds 3..1000, 100 more, exit 0
 *   fdtruth F   close(700), dup2 and dup3 of file F onto 700 and 701,
 *               100 more, close_range(3, ~0U): prints what each returned
 *   stderr F    closes fd 2, opens F (fd 2), limits descriptors to 3
 *               and forks (the child cannot open a file); exits with F's fd
 *   stderrexec F  closes fd 2, opens F (fd 2) and execs itself as child
 *   envexec     execle(argv[0], "child") with an empty environment; the
 *               child allocates 300 blocks and exits 4
 *   umask       umask(0777), fork; the child allocates 100 and exits
 *   fsize       RLIMIT_FSIZE 512 KiB, 300000 malloc/free pairs, exit 0;
 *               with an argument: then writes 600 KiB to that file itself
 *   fds         prints the descriptor its first open() gets
 * The query mode prints what sigaction, signal and sigaltstack tell the
 * program, for comparison with a run without the sampler:
 *   query       dispositions of every signal, a handler installed and
 *               run (SIGUSR1 three times), signal, sigset and sigignore,
 *               the alternate stack */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tdutil.h"

#define NBLOCKS 5000
static void *blocks[NBLOCKS + 300];
static volatile int depth_limit = -1;
static int *volatile null_ptr;

__attribute__((noinline)) static void alloc_blocks(unsigned from, unsigned n)
{
	for (unsigned i = from; i < from + n; i++) {
		blocks[i] = malloc(32);
		td_touch(blocks[i], 32, (unsigned char)i);
	}
}

static pthread_barrier_t wait_barrier;

static void *wait_thread(void *arg)
{
	alloc_blocks(NBLOCKS + 100 * (unsigned)(size_t)arg, 100);
	pthread_barrier_wait(&wait_barrier);
	for (;;)
		pause();
	return NULL;
}

static void segv_rehandler(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static volatile int term_seen;
static void term_once(int sig)
{
	term_seen++;
	(void)sig;
}

static volatile int usr1_seen;
static void usr1(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGUSR1 && si->si_signo == SIGUSR1)
		usr1_seen++;
}

__attribute__((noinline)) static int recurse(int n)
{
	volatile char pad[512];
	pad[0] = (char)n;
	if (n == depth_limit)
		return 0;
	return recurse(n + 1) + pad[0];
}

static void query(void)
{
	for (int s = 1; s < NSIG; s++) {
		struct sigaction sa;
		if (sigaction(s, NULL, &sa) < 0) {
			td_say("%d: error\n", s);
			continue;
		}
		td_say("%d: %s flags %#x\n", s,
		       sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignored"
											: "handler",
		       (unsigned)sa.sa_flags);
	}
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = usr1;
	sa.sa_flags = SA_SIGINFO;
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, &old);
	td_say("old usr1: %s\n", old.sa_handler == SIG_DFL ? "default" : "other");
	sigaction(SIGUSR1, NULL, &old);
	td_say("usr1: ours %d, siginfo %d, mask usr2 %d\n", old.sa_sigaction == usr1,
	       !!(old.sa_flags & SA_SIGINFO), sigismember(&old.sa_mask, SIGUSR2));
	/* what the kernel and glibc make of a disposition, as a query
	 * returns it: the flags it keeps (0x400, SA_UNSUPPORTED, is never
	 * kept since Linux 5.11; glibc adds its restorer's flag), the mask
	 * without SIGKILL and SIGSTOP, glibc's restorer */
	struct sigaction odd, back;
	memset(&odd, 0, sizeof(odd));
	odd.sa_sigaction = usr1;
	odd.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART | 0x400;
	sigaddset(&odd.sa_mask, SIGKILL);
	sigaddset(&odd.sa_mask, SIGSTOP);
	sigaddset(&odd.sa_mask, SIGTERM);
	sigaction(SIGUSR1, &odd, NULL);
	sigaction(SIGUSR1, NULL, &back);
	sigaction(SIGUSR1, &sa, NULL);
	td_say("usr1 set odd: flags %#x, mask kill %d stop %d term %d, restorer %s\n",
	       (unsigned)back.sa_flags, sigismember(&back.sa_mask, SIGKILL),
	       sigismember(&back.sa_mask, SIGSTOP), sigismember(&back.sa_mask, SIGTERM),
	       back.sa_restorer == old.sa_restorer ? "as before" : "another");
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	td_say("usr1 handled %d times\n", usr1_seen);
	void (*prev)(int) = signal(SIGHUP, SIG_IGN);
	td_say("signal(SIGHUP) returned %s\n", prev == SIG_DFL ? "default" : "other");
	prev = signal(SIGHUP, SIG_DFL);
	td_say("then %s\n", prev == SIG_IGN ? "ignored" : "other");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	prev = sigset(SIGUSR2, term_once);
	td_say("sigset(SIGUSR2) returned %s\n", prev == SIG_DFL ? "default" : "other");
	sigignore(SIGALRM);
#pragma GCC diagnostic pop
	sigaction(SIGUSR2, NULL, &old);
	td_say("usr2: ours %d\n", old.sa_handler == term_once);
	sigaction(SIGALRM, NULL, &old);
	td_say("alrm: ignored %d\n", old.sa_handler == SIG_IGN);
	stack_t ss;
	sigaltstack(NULL, &ss);
	td_say("altstack: flags %d size %zu\n", ss.ss_flags, ss.ss_size);
}

/* A forked child that allocates 100 blocks; returns once it has exited. */
static void fork_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		alloc_blocks(NBLOCKS, 100);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
}

static int child_image(void)
{
	alloc_blocks(0, 300);
	return 4;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "child"))
		return child_image();
	if (!strcmp(mode, "query")) {
		query();
		return 0;
	}
	if (!strcmp(mode, "fds")) {
		int fd = open("/dev/null", O_RDONLY);
		td_say("first open: %d\n", fd);
		return 0;
	}
	if (!strcmp(mode, "fsize")) {
		struct rlimit rl = { 512 << 10, 512 << 10 };
		setrlimit(RLIMIT_FSIZE, &rl);
		for (unsigned i = 0; i < 300000; i++) {
			void *p = malloc(16 + i % 64);
			td_sink = p;
			free(p);
		}
		if (argc > 2) {
			int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
			static char chunk[64 << 10];
			for (int i = 0; i < 10; i++)
				if (write(fd, chunk, sizeof(chunk)) < 0)
					td_say("write: error\n");
		}
		td_say("fsize: done\n");
		return 0;
	}
	if (!strcmp(mode, "rehandler"))
		signal(SIGSEGV, segv_rehandler);
	if (!strcmp(mode, "resethand")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = term_once;
		sa.sa_flags = SA_RESETHAND;
		sigaction(SIGTERM, &sa, NULL);
	}
	alloc_blocks(0, NBLOCKS);
	if (!strcmp(mode, "raise")) {
		kill(getpid(), argc > 2 ? atoi(argv[2]) : SIGTERM);
	} else if (!strcmp(mode, "pipe")) {
		int p[2];
		if (pipe(p) == 0) {
			close(p[0]);
			if (write(p[1], "x", 1) < 0)
				td_say("pipe: write failed\n");
		}
	} else if (!strcmp(mode, "rehandler")) {
		*null_ptr = 1;
	} else if (!strcmp(mode, "resethand")) {
		raise(SIGTERM);
		td_say("resethand: handled %d\n", term_seen);
		raise(SIGTERM);
	} else if (!strcmp(mode, "overflow")) {
		return recurse(0);
	} else if (!strcmp(mode, "wait") || !strcmp(mode, "threadwait")) {
		if (!strcmp(mode, "threadwait")) {
			pthread_barrier_init(&wait_barrier, NULL, 4);
			pthread_t t;
			for (size_t k = 0; k < 3; k++)
				pthread_create(&t, NULL, wait_thread, (void *)k);
			pthread_barrier_wait(&wait_barrier);
		}
		td_say("ready\n");
		for (;;)
			pause();
	} else if (!strcmp(mode, "closerange")) {
		syscall(SYS_close_range, 3u, ~0u, 0u);
		alloc_blocks(NBLOCKS, 100);
		return 0;
	} else if (!strcmp(mode, "closeloop")) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		alloc_blocks(NBLOCKS, 100);
		return 0;
	} else if (!strcmp(mode, "dup2loop")) {
		int nul = open("/dev/null", O_WRONLY);
		for (int fd = 3; fd <= 1000; fd++)
			if (fd != nul)
				dup2(nul, fd);
		alloc_blocks(NBLOCKS, 100);
		return 0;
	} else if (!strcmp(mode, "fdtruth") && argc > 2) {
		int r = close(700);
		td_say("close(700): %d %s\n", r, r < 0 && errno == EBADF ? "EBADF" : "");
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		td_say("dup2(fd, 700): %d\n", dup2(fd, 700));
		td_say("dup3(fd, 701): %d\n", dup3(fd, 701, O_CLOEXEC));
		alloc_blocks(NBLOCKS, 100);
		r = close_range(3, ~0u, 0);
		td_say("close_range: %d, 700 open: %d\n", r, fcntl(700, F_GETFD) >= 0);
		return 0;
	} else if (!strcmp(mode, "stderr") && argc > 2) {
		close(2);
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		struct rlimit rl = { 3, 3 };
		setrlimit(RLIMIT_NOFILE, &rl);
		fork_child();
		return fd;
	} else if (!strcmp(mode, "stderrexec") && argc > 2) {
		close(2);
		open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		execl(argv[0], argv[0], "child", (char *)NULL);
		return 99;
	} else if (!strcmp(mode, "envexec")) {
		char *const env[] = { NULL };
		execle(argv[0], argv[0], "child", (char *)NULL, env);
		return 99;
	} else if (!strcmp(mode, "umask")) {
		umask(0777);
		fork_child();
		return 0;
	}
	td_say("lifecycle: %s: did not end\n", mode);
	return 50;
}
