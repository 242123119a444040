/* allocprof symbols: keeps the names, files and lines of a trace's frames
 * in the trace (SYMBOLS chunks: docs/trace-format.md), as `record` does
 * when it finishes a trace. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_symbolize.h"
#include "ap_trace.h"
#include "ap_trace_follow.h"
#include "commands.h"
#include "views.h"

static void symbols_usage(FILE *f)
{
	fputs("usage: allocprof symbols [OPTIONS] TRACE...\n\n"
	      "Keeps the names, source files, lines and inline chains of every frame\n"
	      "of each TRACE in it, read from the program's files (and the perf map\n"
	      "/tmp/perf-PID.map a JIT wrote for code in no file), so that the reports\n"
	      "name the frames after the program is rebuilt, upgraded or removed, or\n"
	      "on another machine. `allocprof record` does this when it finishes a\n"
	      "trace (unless --no-symbols); this is for traces recorded with\n"
	      "--no-symbols. A trace that keeps its symbols already is left as it is;\n"
	      "frames whose file cannot be read (missing, or rebuilt since: its\n"
	      "build-id differs) are not kept, and the reports look for the file again.\n"
	      "The trace must be finished (not written any more).\n\n"
	      "options:\n"
	      "      --compress-level N\n"
	      "                     zstd level of the symbols, 0 to 19 (default 3; 0: not\n"
	      "                     compressed)\n"
	      "      --debug-dir DIR\n"
	      "                     look for separate debug files in DIR too (by\n"
	      "                     build-id under DIR/.build-id/, or by the file's\n"
	      "                     .gnu_debuglink name in DIR), to keep their lines\n"
	      "      --if-finished  leave a trace that is not finished (no end record,\n"
	      "                     or cut inside a chunk) as it is, without a word (what\n"
	      "                     record does; else that is an error)\n"
	      "      --ready-fd FD  (what record runs while its program runs) open the\n"
	      "                     files the frames of the one TRACE are in as it is\n"
	      "                     written, and keep its symbols once `go` is read from\n"
	      "                     FD; at the end of FD without it, leave the trace\n"
	      "      --symfs DIR    read a file under DIR where it is another file than\n"
	      "                     at its path here (as perf's --symfs): DIR a process's\n"
	      "                     /proc/PID/root, for a program of another mount\n"
	      "                     namespace or chroot (what record -p passes then)\n"
	      "  -q, --quiet        no line per trace\n"
	      "  -h, --help         show this help\n\n"
	      "Exit status: 0, 1 if a trace could not be read or written, 2 for bad\n"
	      "usage.\n",
	      f);
}

enum { OPT_LEVEL = AP_VOPT_FIRST_OWN, OPT_IF_FINISHED, OPT_READY_FD, OPT_SYMFS, OPT_DEBUG_DIR };

/* Past this many bytes of a trace with no stack yet, following it costs
 * more than opening the files ahead can save: it is left until the end. */
#define AHEAD_MAX_BYTES (64u << 20)

/* --ready-fd: follows the trace at path while its program writes it, and
 * once its stacks name modules opens their files (ap_sym_prefetch: the
 * debug information is most of what keeping the symbols costs, 35 ms for
 * libc6-dbg's compressed DWARF, and the program leaves a core idle);
 * then waits for `go` on fd. Returns 1 for `go`, 0 at the end of fd
 * without it (record gave the trace up). */
static int wait_ready(const char *path, int fd, int *opened)
{
	struct ap_follow *f = NULL;
	bool ahead = false; /* done, or given up */
	int tries = 0, wait_ms = 5;
	char c = 0;
	*opened = 0;
	for (;;) {
		/* the trace first: one already finished (or a quick program's)
		 * is read before a `go` that is there already */
		struct ap_error err;
		struct stat st;
		if (ahead) {
			/* waiting for fd only */
		} else if (stat(path, &st) < 0 ||
			   (!f && st.st_size <= (off_t)AHEAD_MAX_BYTES &&
			    ap_follow_open(path, &f, &err) < 0)) {
			/* no file or header yet; ~10 s without: never mind */
			ahead = tries > 120;
		} else {
			/* (past the bound, a first pass would decode all of it) */
			int u = st.st_size > (off_t)AHEAD_MAX_BYTES ? -1 : ap_follow_update(f, &err);
			if (u >= 0 && ap_follow_trace(f)->nstacks > 1) {
				int n = ap_sym_prefetch(ap_follow_trace(f));
				*opened = n > 0 ? n : 0;
				ahead = true;
			} else if (u != 0) {
				ahead = true; /* too big, corrupt, or ended without a stack */
			}
			if (ahead) {
				ap_follow_close(f);
				f = NULL;
			}
		}
		/* 5 ms at first (most programs' first chunk of events comes
		 * soon), then slower up to 100 ms: a sampled run may write none
		 * for a long time */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = poll(&p, 1, ahead ? -1 : wait_ms);
		if (++tries > 20 && wait_ms < 100)
			wait_ms = wait_ms * 2 > 100 ? 100 : wait_ms * 2;
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0) {
			ssize_t r = read(fd, &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
	}
	ap_follow_close(f);
	return c == 'g';
}

int cmd_symbols(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"compress-level", required_argument, NULL, OPT_LEVEL},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"if-finished", no_argument, NULL, OPT_IF_FINISHED},
	    {"ready-fd", required_argument, NULL, OPT_READY_FD},
	    {"symfs", required_argument, NULL, OPT_SYMFS},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int level = 3, opt, ready_fd = -1;
	bool quiet = false, if_finished = false;
	const char *debug_dir = NULL;
	opterr = 0;
	optind = 1;
	while ((opt = ap_view_getopt(argc, argv, ":hq", longopts)) != -1) {
		switch (opt) {
		case 'h':
			symbols_usage(stdout);
			return AP_EXIT_OK;
		case 'q':
			quiet = true;
			break;
		case OPT_IF_FINISHED:
			if_finished = true;
			break;
		case OPT_SYMFS:
			ap_sym_symfs(optarg);
			break;
		case OPT_DEBUG_DIR: {
			struct stat st;
			int bad = stat(optarg, &st) < 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
			if (bad)
				return ap_usage_error("symbols", "--debug-dir: %s: %s", optarg,
						      strerror(bad));
			debug_dir = optarg;
			break;
		}
		case OPT_LEVEL:
			if (ap_view_parse_level("symbols", optarg, &level) < 0)
				return AP_EXIT_USAGE;
			break;
		case OPT_READY_FD: {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > 65535 ||
			    fcntl(v, F_GETFD) < 0)
				return ap_usage_error("symbols", "--ready-fd wants an open file "
						      "descriptor");
			ready_fd = (int)v;
			break;
		}
		default:
			return ap_view_bad_option("symbols", opt, argv);
		}
	}
	if (optind >= argc)
		return ap_usage_error("symbols", "no trace given");
	if (ready_fd >= 0 && optind + 1 != argc)
		return ap_usage_error("symbols", "--ready-fd follows one trace");
	int opened = 0;
	if (ready_fd >= 0) {
		int go = wait_ready(argv[optind], ready_fd, &opened);
		close(ready_fd);
		if (!go) {
			ap_sym_prefetch_release();
			return AP_EXIT_OK;
		}
	}
	int rc = 0;
	ap_sym_share(true); /* the traces of one run share their files */
	for (int i = optind; i < argc; i++) {
		struct ap_error err;
		int k = ap_sym_keep_file(argv[i], debug_dir, level, &err);
		if (k < 0 || (k == 1 && !if_finished)) {
			ap_print_error(&err);
			rc = AP_EXIT_FAIL;
		} else if (!quiet && (k == 0 || k == 2)) {
			fprintf(stderr, "allocprof: %s %s\n", argv[i],
				k == 0 ? "keeps its symbols now" : "keeps its symbols already");
		}
	}
	int unused = ap_sym_prefetch_release();
	if (getenv("ALLOCPROF_TEST_OPENED"))
		fprintf(stderr, "allocprof: symbols: %d traces, %u files opened\n", argc - optind,
			ap_sym_files_opened());
	if (getenv("ALLOCPROF_TEST_DEBUG_CACHE")) {
		unsigned read, written;
		ap_debugcache_counts(&read, &written);
		fprintf(stderr, "allocprof: symbols: debug files: %u from the cache, %u kept in it\n",
			read, written);
	}
	if (ready_fd >= 0 && getenv("ALLOCPROF_TEST_AHEAD"))
		fprintf(stderr, "allocprof: symbols: %d modules opened ahead, %d not used\n", opened,
			unused);
	return rc;
}
