/* allocprof: the command table and dispatch.
 *
 * Built twice: as allocprof-report, every command in one binary, and with
 * AP_LAUNCHER as `allocprof` itself, which runs `record` and hands every
 * other command to allocprof-report (exec, same arguments). The launcher
 * links libc, zstd and libm only: the report commands' libraries (libdw,
 * libstdc++, jansson, ncurses) cost ~3 ms of loading and page faults at
 * every start, which `record` would add to the run it measures. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#ifndef AP_LAUNCHER
#include "views.h"
#endif

int ap_sigpipe_ignored;

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	bool text;	/* prints text for a terminal: stdout goes through safe_stdout */
};

#define REPORT_EXE "allocprof-report"
#ifdef AP_LAUNCHER
static int run_report(int argc, char **argv);
#define REPORT_CMD(fn) run_report
#else
#define REPORT_CMD(fn) fn
#endif

static const struct command commands[] = {
	/* Subcommands, in the order `allocprof --help` lists them. */
	{ "record", cmd_record, "run a program and record its allocations into a trace", false },
	{ "top", REPORT_CMD(cmd_top), "the hottest allocation sites, as pprof -top shows them", true },
	{ "list", REPORT_CMD(cmd_list), "source of matching functions, each line annotated", true },
	{ "stats", REPORT_CMD(cmd_stats), "summary of a trace: program, duration, rate, totals", true },
	{ "advise", REPORT_CMD(cmd_advise), "which allocation sites a pool would pay at, and why", true },
	{ "try", REPORT_CMD(cmd_try), "run the program with the advised pools: what they save, measured", true },
	{ "calibrate", REPORT_CMD(cmd_calibrate), "measure allocation and pool costs for advise", false },
	{ "export", REPORT_CMD(cmd_export),
	  "write a trace as pprof profile.proto, folded stacks or JSON", false },
	{ "peek", REPORT_CMD(cmd_peek), "callers and callees of matching functions, as pprof -peek", true },
	{ "tree", REPORT_CMD(cmd_tree), "every node between its callers and callees, as pprof -tree", true },
	{ "timeline", REPORT_CMD(cmd_timeline), "in-use bytes over time, the top call sites stacked", true },
	{ "flamegraph", REPORT_CMD(cmd_flamegraph), "an interactive flame graph (SVG) of the call paths", false },
	{ "html", REPORT_CMD(cmd_html), "one interactive page: table, flame graph, timeline, advice", false },
	{ "diff", REPORT_CMD(cmd_diff), "what changed between two traces, per call site (and a CI gate)", true },
	{ "tui", REPORT_CMD(cmd_tui), "browse top, list and advise interactively (ncurses)", false },
	{ "snapshot", REPORT_CMD(cmd_snapshot), "a finished copy of a trace whose program runs on", false },
	{ "symbols", REPORT_CMD(cmd_symbols), "keep the frames' names and lines in a trace (record does)", false },
	{ NULL, NULL, NULL, false },
};

void ap_report_path(char *path, size_t len)
{
	const char *env = getenv("ALLOCPROF_REPORT");
	path[0] = 0;
#ifndef AP_LAUNCHER
	/* (allocprof-report itself) */
	ssize_t self_len = readlink("/proc/self/exe", path, len - 1);
	if (self_len > 0) {
		path[self_len] = 0;
		return;
	}
#endif
	if (env && *env) {
		snprintf(path, len, "%s", env);
	} else {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
		if (slash) {
			*slash = 0;
			snprintf(path, len, "%s/" REPORT_EXE, self);
		}
		if (!path[0] || access(path, X_OK) != 0)
			snprintf(path, len, "%s/" REPORT_EXE, AP_PKGLIBDIR);
	}
}

#ifdef AP_LAUNCHER

static int run_report(int argc, char **argv)
{
	char path[PATH_MAX + 64];
	ap_report_path(path, sizeof(path));
	char **av = calloc((size_t)argc + 2, sizeof(*av));
	if (!av) {
		ap_say("out of memory");
		return AP_EXIT_FAIL;
	}
	av[0] = (char *)"allocprof";
	for (int i = 0; i < argc; i++)
		av[i + 1] = argv[i];
	fflush(NULL);
	execv(path, av);
	ap_say("%s: cannot run " REPORT_EXE " (%s): it holds every command but record; "
		   "set ALLOCPROF_REPORT to its path", path, strerror(errno));
	free(av);
	return AP_EXIT_FAIL;
}

int ap_run_report_child(char **argv)
{
	char path[PATH_MAX + 64];
	ap_report_path(path, sizeof(path));
	size_t n = 0;
	while (argv[n])
		n++;
	char **av = calloc(n + 2, sizeof(*av));
	if (!av) {
		ap_say("out of memory");
		return -1;
	}
	av[0] = (char *)"allocprof";
	memcpy(av + 1, argv, n * sizeof(*av));
	fflush(NULL);
	pid_t pid;
	int e = posix_spawn(&pid, path, NULL, NULL, av, environ);
	free(av);
	if (e) {
		ap_say("%s: cannot run " REPORT_EXE " (%s)", path, strerror(e));
		return -1;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif

void ap_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("allocprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void ap_print_error(const struct ap_error *err)
{
	fprintf(stderr, "allocprof: %s\n", err->msg);
}

int ap_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "allocprof: %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see 'allocprof %s -h')\n", cmd);
	va_end(ap);
	return AP_EXIT_USAGE;
}

int ap_progress_wanted(void)
{
	return isatty(STDERR_FILENO) && !getenv("ALLOCPROF_NO_PROGRESS");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: allocprof <command> [options] [args]\n\n"
		   "Allocation-hotspot profiler for native Linux programs.\n\n"
		   "commands:\n");
	for (size_t i = 0; commands[i].name; i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun 'allocprof <command> -h' for a command's options.\n"
		   "Typical use:\n"
		   "  allocprof record -o app.trace ./app args...\n"
		   "  allocprof top --alloc_objects app.trace\n"
		   "  allocprof list 'parse_.*' app.trace\n"
		   "  allocprof advise app.trace\n");
}

/* Levenshtein distance, small strings only (command names). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 64;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			d[i][j] = c;
		}
	return d[la][lb];
}

#ifndef AP_LAUNCHER
/* What the text commands print passes through ap_buf_add_safe (util,
 * "Text for a terminal"): the symbols, paths, thread names and command
 * lines in it come from the profiled program, and no byte of theirs may
 * reach the terminal as a control. One place for every line of every
 * text command; a UTF-8 sequence cut between two writes waits in `cut`
 * for the rest. */
struct safe_out {
	unsigned char cut[4];
	size_t ncut;
	struct ap_buf b;
};

/* The filter of stdout, for as long as the process lives: exit() flushes
 * the stream but does not close it, and a command may exit from deep
 * inside (a corrupt chunk), so its state stays reachable from here rather
 * than be freed by a close that may never come (LeakSanitizer). */
static struct safe_out *safe_out_state;

static ssize_t safe_write(void *cookie, const char *data, size_t len)
{
	struct safe_out *o = cookie;
	const unsigned char *p = (const unsigned char *)data;
	size_t left = len;
	ap_buf_reset(&o->b);
	while (o->ncut && left) { /* the cut sequence, completed */
		o->cut[o->ncut++] = *p++;
		left--;
		char out[12];
		size_t olen, n = ap_safe_char(o->cut, o->ncut, AP_SAFE_LINES, out, &olen);
		if (n || o->ncut == sizeof(o->cut)) {
			ap_buf_add_safe(&o->b, (const char *)o->cut, o->ncut, AP_SAFE_LINES);
			o->ncut = 0;
		}
	}
	size_t i = 0;
	while (i < left) {
		char out[12];
		size_t olen, n = ap_safe_char(p + i, left - i, AP_SAFE_LINES, out, &olen);
		if (!n) { /* cut: the rest comes with the next write */
			memcpy(o->cut, p + i, left - i);
			o->ncut = left - i;
			break;
		}
		ap_buf_add(&o->b, out, olen);
		i += n;
	}
	for (size_t done = 0; done < o->b.len;) {
		ssize_t w = write(STDOUT_FILENO, o->b.buf + done, o->b.len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		done += (size_t)w;
	}
	return (ssize_t)len;
}

static int safe_close(void *cookie)
{
	struct safe_out *o = cookie;
	int rc = 0;
	if (o->ncut) {
		ap_buf_reset(&o->b);
		ap_buf_add_safe(&o->b, (const char *)o->cut, o->ncut, AP_SAFE_LINES);
		rc = write(STDOUT_FILENO, o->b.buf, o->b.len) == (ssize_t)o->b.len ? 0 : -1;
	}
	ap_buf_release(&o->b);
	if (o == safe_out_state)
		safe_out_state = NULL;
	free(o);
	return rc;
}

/* stdout of a text command, from here on through safe_write. */
static void safe_stdout(void)
{
	struct safe_out *o = ap_xcalloc(1, sizeof(*o));
	safe_out_state = o;
	ap_buf_init(&o->b);
	cookie_io_functions_t io = { .write = safe_write, .close = safe_close };
	FILE *f = fopencookie(o, "w", io);
	if (!f) {
		safe_out_state = NULL;
		free(o);
		return;
	}
	fflush(stdout);
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	stdout = f;
}
#endif

/* Results go to stdout; a write error there (disk full) must fail the
 * command, but a closed pipe (`allocprof top | head`) is quiet. */
static int finish_stdout(int rc)
{
#ifndef AP_LAUNCHER
	if (rc == AP_EXIT_OK && ap_view_read_short())
		rc = AP_EXIT_FAIL;
#endif
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno == EPIPE)
			return rc;
		ap_say("write error on standard output: %s", strerror(errno));
		return AP_EXIT_FAIL;
	}
	return rc;
}

int main(int argc, char **argv)
{
	/* A closed pipe must not kill us with SIGPIPE in the middle of output;
	 * write errors are checked at the end instead. */
	struct sigaction pipe_was;
	ap_sigpipe_ignored = sigaction(SIGPIPE, NULL, &pipe_was) == 0 &&
			     pipe_was.sa_handler == SIG_IGN;
	signal(SIGPIPE, SIG_IGN);

	if (argc < 2) {
		usage(stderr);
		return AP_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		if (!strcmp(name, "help") && argc > 2) {
			char *hargv[] = { argv[2], (char *)"--help", NULL };
			for (size_t i = 0; commands[i].name; i++)
				if (!strcmp(commands[i].name, argv[2]))
					return finish_stdout(commands[i].fn(2, hargv));
		}
		usage(stdout);
		return finish_stdout(AP_EXIT_OK);
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("allocprof %s\n", AP_VERSION);
		return finish_stdout(AP_EXIT_OK);
	}
	for (size_t i = 0; commands[i].name; i++)
		if (!strcmp(commands[i].name, name)) {
#ifndef AP_LAUNCHER
			if (commands[i].text)
				safe_stdout();
#endif
			return finish_stdout(commands[i].fn(argc - 1, argv + 1));
		}

	fprintf(stderr, "allocprof: '%s' is not an allocprof command", name);
	const char *best = NULL;
	size_t bestd = 3;
	for (size_t i = 0; commands[i].name; i++) {
		size_t dist = edit_distance(name, commands[i].name);
		if (dist < bestd || (!strncmp(name, commands[i].name, strlen(name)) && strlen(name) >= 2)) {
			bestd = dist;
			best = commands[i].name;
		}
	}
	if (best)
		fprintf(stderr, ": did you mean '%s'?", best);
	fprintf(stderr, " (see 'allocprof --help')\n");
	return AP_EXIT_USAGE;
}
