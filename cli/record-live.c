/* `allocprof record --live`: the live view (`allocprof tui --follow`, in
 * allocprof-report) on the trace while its program runs. The terminal is
 * the view's: the program's standard input is /dev/null and its standard
 * output and error go to <trace>.out, which the view names on its status
 * line; what record itself says meanwhile is held in a temporary file and
 * said once the view is quit. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "record-live.h"

extern char **environ;

int live_check(void)
{
	if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
		return 0;
	ap_say("record: --live shows the view on a terminal, and standard %s is not one "
	       "(record without it, then allocprof tui)",
	       isatty(STDIN_FILENO) ? "output" : "input");
	return -1;
}

int live_prepare(struct record_live *l, const char *out_pre)
{
	*l = (struct record_live){.out_fd = -1, .in_fd = -1, .saved_err = -1, .held = -1, .view = -1};
	/* next to the trace, renamed after it once its name is known */
	l->tmp_out = ap_xmalloc(strlen(out_pre) + 16);
	sprintf(l->tmp_out, "%s.out.XXXXXX", out_pre);
	l->out_fd = mkostemp(l->tmp_out, O_CLOEXEC);
	if (l->out_fd < 0) {
		ap_say("%s: %s", l->tmp_out, strerror(errno));
		free(l->tmp_out);
		l->tmp_out = NULL;
		return -1;
	}
	fchmod(l->out_fd, 0644); /* (as a file the program makes, not mkstemp's 0600) */
	l->in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (l->in_fd < 0) {
		ap_say("/dev/null: %s", strerror(errno));
		live_release(l);
		return -1;
	}
	return 0;
}

/* Whether the program still runs (not reaped: wait_program does). */
static bool running(pid_t pid)
{
	siginfo_t si = {0};
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

/* Whether the trace has its preamble and a chunk's header: the view can
 * open it. */
static bool has_header(const char *trace)
{
	struct stat st;
	return stat(trace, &st) == 0 && st.st_size > 16 + 32;
}

void live_start(struct record_live *l, const char *trace, pid_t pid, const sigset_t *mask)
{
	if (l->out_fd < 0)
		return;
	l->out = ap_xmalloc(strlen(trace) + 8);
	sprintf(l->out, "%s.out", trace);
	if (rename(l->tmp_out, l->out) < 0) {
		free(l->out);
		l->out = l->tmp_out;
		l->tmp_out = NULL;
	}
	/* the sampler writes the header as the program starts (10 s: a
	 * loaded machine; a program gone before has nothing to show) */
	for (int i = 0; i < 1000 && !has_header(trace); i++) {
		if (!running(pid))
			return;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (!has_header(trace))
		return;
	char path[PATH_MAX + 64];
	ap_report_path(path, sizeof(path));
	char *argv[] = {(char *)"allocprof", (char *)"tui", (char *)"--follow",
			(char *)"--program-output", l->out, (char *)"--", (char *)trace, NULL};
	/* record's own messages held until the view is gone */
	char held[] = "/tmp/allocprof-live-XXXXXX";
	l->held = mkostemp(held, O_CLOEXEC);
	if (l->held >= 0)
		unlink(held);
	l->saved_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	if (l->saved_err >= 0)
		posix_spawn_file_actions_adddup2(&fa, l->saved_err, STDERR_FILENO);
	/* the mask and SIGPIPE as allocprof was given them (record blocks
	 * every signal while the program runs) */
	sigset_t def;
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigmask(&at, mask);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	fflush(NULL);
	int e = posix_spawn(&l->view, path, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		l->view = -1;
		ap_say("%s: cannot run the live view (%s)", path, strerror(e));
		return;
	}
	if (l->held >= 0 && l->saved_err >= 0)
		dup2(l->held, STDERR_FILENO);
}

void live_end(struct record_live *l)
{
	if (l->view > 0) {
		int st;
		while (waitpid(l->view, &st, 0) < 0 && errno == EINTR)
			;
		l->view = -1;
		if (l->saved_err >= 0) {
			fflush(stderr);
			dup2(l->saved_err, STDERR_FILENO);
		}
		/* what record said meanwhile */
		char buf[4096];
		ssize_t n;
		off_t off = 0;
		while (l->held >= 0 && (n = pread(l->held, buf, sizeof(buf), off)) > 0) {
			if (write(STDERR_FILENO, buf, (size_t)n) != n)
				break;
			off += n;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st))
			ap_say("record: the live view ended with status %d", WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			ap_say("record: the live view was ended by signal %d", WTERMSIG(st));
	}
	live_release(l);
}

void live_release(struct record_live *l)
{
	if (l->out_fd >= 0)
		close(l->out_fd);
	if (l->in_fd >= 0)
		close(l->in_fd);
	if (l->held >= 0)
		close(l->held);
	if (l->saved_err >= 0)
		close(l->saved_err);
	if (l->tmp_out)
		unlink(l->tmp_out); /* (never given to the program) */
	free(l->tmp_out);
	free(l->out);
	*l = (struct record_live){.out_fd = -1, .in_fd = -1, .saved_err = -1, .held = -1, .view = -1};
}
