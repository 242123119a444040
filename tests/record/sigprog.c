/* tests/record/sigprog: what a program sees of the signals sent to it under
 * `allocprof record` (issue 24, "The program can tell"). One argument picks
 * the mode:
 *
 *   server   a server that waits for SIGTERM in pause() (its handler sets a
 *            flag) while 4 threads malloc and free in a loop; prints
 *            "ready" once the threads run and "stopped" when it ends
 *   count    counts every catchable signal it receives (4 threads allocate
 *            meanwhile), waits (nanosleep) until SIGTERM has come and
 *            the file named by its second argument exists, then prints
 *            "SIG<name> <count>" for each signal received, in number order
 *   die SIG  prints "ready", then waits (pause) for a signal; with
 *            SIG=ABRT it calls abort() instead
 *   exit N   exits with status N
 *   loop N   N malloc/free pairs of 4000 bytes on one thread
 *   late N   the same, then a second thread makes 10 allocations, and the
 *            program exits at once (record's trace compaction, issue 24
 *            item 8)
 *   taken N [set]  which thread runs the handler of a signal sent to the
 *            process: the main thread waits in nanosleep while 3 threads
 *            ask sigaction about SIGUSR2 (with `set`: set a handler for
 *            it, as a library that ignores SIGPIPE around each write
 *            does) and allocate at call depths of
 *            0 to 39 (stacks new to the sampler: libunwind's steps); a
 *            child process sends SIGUSR1 to the process N times, 300 us
 *            apart; prints "main some other K" (K, the handlers run on
 *            the other threads, is 0 natively: the kernel wakes the main
 *            thread, and nothing else looks at the process's pending
 *            signals; "some": how many reach main depends on how many
 *            the kernel merged)
 *   forks N  N forks (each child exits at once, the parent waits) while
 *            another thread, SIGUSR1 blocked in it, sends SIGUSR1 to the
 *            process every 20 us; the handler is set with SA_NODEFER
 *            (it counts; one that allocated would reenter malloc
 *            natively); prints "forks N" (a signal that came inside
 *            fork's window was queued back for the forking thread, and
 *            under SA_NODEFER came back at once, for ever: SIGSEGV)
 *   fds      prints what fcntl(F_DUPFD, n) gives for n = 0, 3, 10, 700 and
 *            the soft limit - 1, and how many files open() gets under its
 *            RLIMIT_NOFILE (second argument: a soft limit to set first)
 *
 * Output by write(2); allocations through a volatile sink, so that the
 * compiler keeps every malloc/free pair. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;
static volatile sig_atomic_t stop, got_term;
static volatile sig_atomic_t counts[NSIG];

static void say(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(1, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void *churn(void *arg)
{
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u + 1;
	while (!stop) {
		x = x * 1103515245u + 12345u;
		size_t n = 16 + (x >> 16) % 4000;
		char *p = malloc(n);
		if (!p)
			abort();
		p[0] = (char)x;
		p[n - 1] = (char)n;
		sink = p;
		free(p);
	}
	return NULL;
}

static pthread_t th[4];

static void start_threads(void)
{
	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1)))
			abort();
}

static void stop_threads(void)
{
	stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
}

static void on_term(int s)
{
	(void)s;
	got_term = 1;
}

static void on_count(int s)
{
	counts[s]++;
	if (s == SIGTERM)
		got_term = 1;
}

static void *ten(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++) {
		char *p = malloc(100);
		if (!p)
			abort();
		p[0] = (char)i;
		sink = p;
		free(p);
	}
	return NULL;
}

static int loop(long n)
{
	for (; n > 0; n--) {
		char *p = malloc(4000);
		if (!p)
			return 1;
		p[0] = (char)n;
		sink = p;
		free(p);
	}
	return 0;
}

static int server(void)
{
	struct sigaction sa = { .sa_handler = on_term };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	start_threads();
	say("ready\n");
	while (!got_term)
		pause();
	stop_threads();
	say("stopped\n");
	return 0;
}

static int count(const char *done)
{
	/* every signal a caller may send that the program can catch (not
	 * SIGCHLD and SIGURG, whose default is to ignore them: a count of
	 * those would say nothing; SIGCONT and SIGTSTP are caught too) */
	static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE,
				    SIGALRM, SIGTERM, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU,
				    SIGWINCH, SIGXCPU, SIGVTALRM, SIGPROF, SIGPWR };
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa = { .sa_handler = on_count, .sa_flags = SA_RESTART };
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&block, sigs[i]);
	}
	/* the threads take no signal: every one comes to the waiting main
	 * thread, so that a count is read after its handler ran */
	pthread_sigmask(SIG_BLOCK, &block, &old);
	start_threads();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	say("ready\n");
	while (!got_term || access(done, F_OK) < 0) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	stop_threads();
	char line[64];
	for (int s = 1; s < NSIG; s++)
		if (counts[s]) {
			snprintf(line, sizeof(line), "SIG%s %d\n", sigabbrev_np(s), (int)counts[s]);
			say(line);
		}
	return 0;
}

static int die(const char *sig)
{
	if (!strcmp(sig, "ABRT"))
		abort();
	say("ready\n");
	for (;;)
		pause();
}

static int fds(const char *lim)
{
	struct rlimit rl;
	if (lim) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = strtoul(lim, NULL, 10);
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			perror("setrlimit");
			return 1;
		}
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	char line[128];
	long at[] = { 0, 3, 10, 700, (long)rl.rlim_cur - 1 };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		int fd = fcntl(0, F_DUPFD, at[i]);
		snprintf(line, sizeof(line), "F_DUPFD %ld: %d%s%s\n", at[i], fd,
			 fd < 0 ? " " : "", fd < 0 ? strerrorname_np(errno) : "");
		say(line);
		if (fd >= 0)
			close(fd);
	}
	int n = 0, last = -1;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			snprintf(line, sizeof(line), "opened %d, last %d, then %s\n", n, last,
				 strerrorname_np(errno));
			say(line);
			break;
		}
		last = fd;
		n++;
	}
	return 0;
}

static pid_t main_tid;
static volatile sig_atomic_t on_main, on_other;

static void on_usr1(int s)
{
	(void)s;
	if (gettid() == main_tid)
		on_main++;
	else
		on_other++;
}

__attribute__((noinline)) static void deep(int d, size_t n)
{
	if (d > 0) {
		deep(d - 1, n + 8);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	char *p = malloc(n);
	if (!p)
		abort();
	p[0] = (char)n;
	sink = p;
	free(p);
}

static int taken_sets;	/* the threads set SIGUSR2's disposition, not ask */

static void on_usr2(int s)
{
	(void)s;
}

static void *asker(void *arg)
{
	int i = (int)(uintptr_t)arg;
	struct sigaction mine = { .sa_handler = on_usr2 };
	sigemptyset(&mine.sa_mask);
	while (!stop) {
		struct sigaction old;
		sigaction(SIGUSR2, taken_sets ? &mine : NULL, &old);
		deep(i++ % 40, 64);
	}
	return NULL;
}

static int taken(long n)
{
	main_tid = gettid();
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, asker, (void *)(uintptr_t)(i * 13)))
			abort();
	usleep(100000);
	pid_t me = getpid(), kid = fork();
	if (kid < 0)
		abort();
	if (kid == 0) {
		for (long k = 0; k < n; k++) {
			kill(me, SIGUSR1);
			usleep(300);
		}
		_exit(0);
	}
	while (waitpid(kid, NULL, WNOHANG) != kid) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	char out[64];
	snprintf(out, sizeof(out), "main %s other %d\n", on_main > 0 ? "some" : "none",
		 (int)on_other);
	say(out);
	return 0;
}

static volatile sig_atomic_t forks_done;

static volatile sig_atomic_t nodefer_calls;

static void on_usr1_nodefer(int s)
{
	(void)s;
	nodefer_calls++;
}

static void *sender(void *arg)
{
	(void)arg;
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &one, NULL);
	pid_t me = getpid();
	while (!forks_done) {
		kill(me, SIGUSR1);
		struct timespec ts = { 0, 20 * 1000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int forks(long n)
{
	struct sigaction sa = { .sa_handler = on_usr1_nodefer, .sa_flags = SA_NODEFER | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, sender, NULL))
		abort();
	long done = 0;
	for (long i = 0; i < n; i++) {
		pid_t k = fork();
		if (k == 0)
			_exit(0);
		if (k < 0)
			continue;
		int st;
		while (waitpid(k, &st, 0) < 0 && errno == EINTR)
			;
		done++;
	}
	forks_done = 1;
	pthread_join(t, NULL);
	char out[64];
	snprintf(out, sizeof(out), "forks %ld\n", done);
	say(out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "server"))
		return server();
	if (!strcmp(argv[1], "count") && argc > 2)
		return count(argv[2]);
	if (!strcmp(argv[1], "die") && argc > 2)
		return die(argv[2]);
	if (!strcmp(argv[1], "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(argv[1], "loop") && argc > 2)
		return loop(atol(argv[2]));
	if (!strcmp(argv[1], "late") && argc > 2) {
		loop(atol(argv[2]));
		pthread_t t;
		if (pthread_create(&t, NULL, ten, NULL) || pthread_join(t, NULL))
			return 1;
		return 0;
	}
	if (!strcmp(argv[1], "taken") && argc > 2) {
		taken_sets = argc > 3 && !strcmp(argv[3], "set");
		return taken(atol(argv[2]));
	}
	if (!strcmp(argv[1], "forks") && argc > 2)
		return forks(atol(argv[2]));
	if (!strcmp(argv[1], "fds"))
		return fds(argc > 2 ? argv[2] : NULL);
	return 2;
}
