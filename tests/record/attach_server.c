/* attach_server.c: a server-like program for `allocprof record -p`
 * (tests/record/attach.py). Three worker threads wait on pipes; the main
 * thread reads commands from stdin, one a line, and answers on stdout:
 *   work N   each worker, N times: frees the block it kept from the last
 *            round at that index (blocks live across rounds, so frees of
 *            blocks allocated before an attach come after it) and
 *            allocates one at the site in this program (exe_site, malloc),
 *            one in a shared library (attach_lib_site, malloc, freed at
 *            once), and one in the plugin if loaded (attach_plugin_site,
 *            calloc, freed at once); answers "done"
 *   reset    the window's counts to 0; "ok"
 *   count    "exe=A lib=B plugin=C": calls of each site in the window
 *   load     dlopen argv[1] (the plugin), dlsym its site; "ok"
 *   files N  opens N descriptors more (lowest numbers first, as open()
 *            gives them), each its own open file of a one-byte memfd; "ok"
 *   reserve  maps 4 GiB of nothing (PROT_NONE): where the last attach's
 *            range was, the next attach's must go elsewhere; "ok"
 *   check    whether every one of them is still that file, its byte "x",
 *            its offset 0 (nobody read, wrote or closed it): "ok N" or
 *            "bad FD"
 *   sigview  what sigaction says of SIGSEGV's disposition: "dfl", "ign" or
 *            "handler"
 *   crash    dies of a SIGSEGV (a store at address 0)
 *   _exit N  _exit(N)
 *   close N  close(N): "ok" or "EBADF" (or another errno's number)
 *   dup2 N   dup2(2, N): "ok", or the errno's number
 *   seccomp P|S  a seccomp filter that kills the process for newfstatat,
 *            openat, gettid or getpid (calls the sampler makes, not this
 *            program), installed with prctl (P) or syscall(SYS_seccomp)
 *            (S): "ok"
 *   fork     a child that waits (pause) until killed; "child PID"
 *   exec P A execl(P, P, A): another program in this process (nothing
 *            answered; "exec failed" if it failed)
 *   quit     "total exe=A lib=B plugin=C", frees everything, exit 3
 * Nothing here allocates but the sites (raw read and write, no stdio). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../process/seccomp-filter.h"

void *attach_lib_site(size_t n);

#define NW 3
#define KEEP 4096

static void *(*plugin_site)(size_t);
static long win[3], total[3]; /* exe, lib, plugin: atomics */
static void *kept[NW][KEEP];
static struct worker {
	int go[2], done[2];
	long n;
	int idx;
	pthread_t th;
} w[NW];

__attribute__((noinline)) static void *exe_site(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}

static void count(int site)
{
	__atomic_fetch_add(&win[site], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&total[site], 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
	struct worker *me = arg;
	char c;
	while (read(me->go[0], &c, 1) == 1) {
		for (long i = 0; i < me->n; i++) {
			int k = (int)(i % KEEP);
			free(kept[me->idx][k]);
			kept[me->idx][k] = exe_site(16 + (size_t)(i % 200));
			count(0);
			free(attach_lib_site(48));
			count(1);
			void *(*ps)(size_t) = __atomic_load_n(&plugin_site, __ATOMIC_ACQUIRE);
			if (ps) {
				free(ps(24));
				count(2);
			}
		}
		if (write(me->done[1], "d", 1) != 1)
			break;
	}
	return NULL;
}

static int *volatile nowhere; /* NULL, read at run time: crash's store faults */
static int memfd = -1;
static int files[4096];
static int nfiles;

/* "ok" once n more descriptors are open on the memfd */
static const char *open_files(long n)
{
	char path[64];
	if (memfd < 0) {
		memfd = memfd_create("attach-files", MFD_CLOEXEC);
		if (memfd < 0 || write(memfd, "x", 1) != 1)
			return "no memfd\n";
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	for (long i = 0; i < n && nfiles < 4096; i++) {
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return "open failed\n";
		files[nfiles++] = fd;
	}
	return "ok\n";
}

static void check_files(char *out, size_t cap)
{
	struct stat m, st;
	char c;
	fstat(memfd, &m);
	for (int i = 0; i < nfiles; i++) {
		int fd = files[i];
		if (fstat(fd, &st) < 0 || st.st_ino != m.st_ino || st.st_dev != m.st_dev ||
		    st.st_size != 1 || lseek(fd, 0, SEEK_CUR) != 0 || pread(fd, &c, 1, 0) != 1 ||
		    c != 'x') {
			snprintf(out, cap, "bad %d\n", fd);
			return;
		}
	}
	snprintf(out, cap, "ok %d\n", nfiles);
}

static void say(const char *s)
{
	size_t n = strlen(s);
	if (write(1, s, n) != (ssize_t)n)
		_exit(1);
}

static int get_line(char *buf, size_t cap)
{
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = read(0, buf + n, 1);
		if (r <= 0)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

int main(int argc, char **argv)
{
	char line[256], out[256];
	for (int i = 0; i < NW; i++) {
		w[i].idx = i;
		if (pipe(w[i].go) || pipe(w[i].done) ||
		    pthread_create(&w[i].th, NULL, worker, &w[i]))
			return 1;
	}
	while (get_line(line, sizeof(line)) == 0) {
		if (!strncmp(line, "work ", 5)) {
			long n = atol(line + 5);
			for (int i = 0; i < NW; i++) {
				w[i].n = n;
				if (write(w[i].go[1], "g", 1) != 1)
					return 1;
			}
			char c;
			for (int i = 0; i < NW; i++)
				if (read(w[i].done[0], &c, 1) != 1)
					return 1;
			say("done\n");
		} else if (!strcmp(line, "reset")) {
			for (int s = 0; s < 3; s++)
				__atomic_store_n(&win[s], 0, __ATOMIC_RELAXED);
			say("ok\n");
		} else if (!strcmp(line, "count")) {
			snprintf(out, sizeof(out), "exe=%ld lib=%ld plugin=%ld\n", win[0], win[1],
				 win[2]);
			say(out);
		} else if (!strcmp(line, "load")) {
			void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
			void *f = h ? dlsym(h, "attach_plugin_site") : NULL;
			__atomic_store_n(&plugin_site, (void *(*)(size_t))f, __ATOMIC_RELEASE);
			say(f ? "ok\n" : "no plugin\n");
		} else if (!strncmp(line, "files ", 6)) {
			say(open_files(atol(line + 6)));
		} else if (!strcmp(line, "reserve")) {
			void *m = mmap(NULL, 1ull << 32, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			say(m != MAP_FAILED ? "ok\n" : "reserve failed\n");
		} else if (!strcmp(line, "check")) {
			check_files(out, sizeof(out));
			say(out);
		} else if (!strcmp(line, "sigview")) {
			struct sigaction sa;
			sigaction(SIGSEGV, NULL, &sa);
			say(sa.sa_handler == SIG_DFL	? "dfl\n"
			    : sa.sa_handler == SIG_IGN ? "ign\n"
						       : "handler\n");
		} else if (!strcmp(line, "crash")) {
			*nowhere = 0;
		} else if (!strncmp(line, "_exit ", 6)) {
			_exit(atoi(line + 6));
		} else if (!strncmp(line, "close ", 6) || !strncmp(line, "dup2 ", 5)) {
			int fd = atoi(strchr(line, ' ') + 1);
			int rc = line[0] == 'c' ? close(fd) : dup2(2, fd);
			if (rc < 0 && errno == EBADF)
				say("EBADF\n");
			else if (rc < 0)
				snprintf(out, sizeof(out), "%d\n", errno), say(out);
			else
				say("ok\n");
		} else if (!strncmp(line, "seccomp ", 8)) {
			say(seccomp_refuse(SECCOMP_RET_KILL_PROCESS, 4, line[8] == 'S') == 0 ? "ok\n"
											  : "failed\n");
		} else if (!strcmp(line, "fork")) {
			pid_t c = fork();
			if (c == 0)
				for (;;)
					pause();
			snprintf(out, sizeof(out), "child %d\n", (int)c);
			say(out);
		} else if (!strncmp(line, "exec ", 5)) {
			char *prog = line + 5, *arg = strchr(prog, ' ');
			if (arg)
				*arg++ = 0;
			execl(prog, prog, arg, (char *)NULL);
			say("exec failed\n");
		} else if (!strcmp(line, "quit")) {
			break;
		}
	}
	for (int i = 0; i < NW; i++)
		for (int k = 0; k < KEEP; k++)
			free(kept[i][k]);
	snprintf(out, sizeof(out), "total exe=%ld lib=%ld plugin=%ld\n", total[0], total[1],
		 total[2]);
	say(out);
	return 3;
}
