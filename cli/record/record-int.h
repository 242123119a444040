/* record/record-int.h: the parts of `allocprof record` (cli/cmd-record.c
 * and cli/record/): its options (options.c), the trace it claims before
 * the program starts (output.c), the program's start (launch.c), the
 * signals it passes on (relay.c), and the end: the wait, the sampler's
 * buffers, the compaction and the child traces (finish.c). */
#ifndef AP_RECORD_INT_H
#define AP_RECORD_INT_H

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ap_trace.h"
#include "ap_trace_buffers.h"
#include "ap_trace_compact.h"
#include "ap_trace_encode.h"
#include "commands.h"
#include "attach.h"
#include "record-live.h"

#define SAMPLER_SO "liballocprof.so"

struct record_opts {
	const char *output;
	uint64_t rate;
	unsigned max_depth;
	bool no_children;
	bool gaps;		/* --gaps */
	bool quiet;
	bool no_symbols;
	int compress_level; /* -1: ALLOCPROF_COMPACT_LEVEL's, else the default */
	pid_t attach;	    /* -p: 0 none */
	uint64_t duration;  /* --duration, ns (0: none) */
	bool live;	    /* --live: the live view while it runs (record-live.c) */
};

/* The trace `record -o` writes, made before the program starts and held
 * until it is finished (claim_output). */
struct claim {
	int hand;	/* the trace, open for the program's sampler (-1: none) */
	int run;	/* the same file opened again, holding the run's lock */
	int old;	/* the trace it replaced, its run's lock held (-1: none) */
};

/* Signals. Every catchable signal sent to record goes on to the program,
 * once: record blocks them all and reads them from a signalfd while the
 * program runs. A signal sent to the process group (Ctrl-C, `kill -INT
 * -PGID`, timeout, shells) reaches the program directly, and record must
 * not send a second copy; but siginfo does not say whether a signal was
 * sent to a process or to its group. The sentinel tells: a small process
 * of record's, in the same process group, that blocks every signal and
 * takes none unless record asks. When record reads a signal, it asks the
 * sentinel to take the same one: if it had it pending, the signal was sent
 * to the group (the kernel signals a group's members newest first, so
 * the sentinel, started last, has its copy before record has its own),
 * and the program has its copy already. Only the others go on to the
 * program: kill() for a plain signal (the program sees record as the
 * sender), sigqueue's own siginfo (value included) for a queued one.
 * Signals record sends itself (SIGPIPE of its own writes) and SIGCHLD are
 * not forwarded.
 *
 * Job control: when the program stops from SIGTSTP, SIGTTIN or SIGTTOU
 * (Ctrl-Z reaches both; one sent to record's pid is forwarded), record
 * stops itself with the same signal, so that its caller sees the job
 * stopped; SIGCONT resumes both (sent to the group, or forwarded). */
struct relay {
	sigset_t set;		/* what record blocks and reads from sfd */
	sigset_t mask;		/* record's mask before */
	int sfd;		/* signalfd of set, or -1 */
	pid_t sentinel;		/* or -1: every signal is forwarded */
	int req, rep;		/* pipes to and from the sentinel */
	pid_t program;
};

/* What the vfork child of launch() needs, all prepared beforehand: it
 * borrows our memory until execve, so it may not allocate. */
struct launch {
	const char *path;
	char *const *argv;
	char **sh_argv;		/* /bin/sh path args...: for a script without #! */
	char **env;		/* holds cfg, which the child completes */
	char *cfg;		/* room for "ALLOCPROF=<pid>" cfg_mid [<pid> out_suffix] */
	const char *cfg_mid;
	const char *out_suffix;	/* NULL: the output path holds no pid */
	char *out_path;		/* room for the default output's path (out_suffix) */
	const char *out_pre;	/* its start */
	int hand_fd;		/* the trace made for the program (-o), or -1 */
	int out_fd, in_fd;	/* --live: the program's output and input, or -1 */
	char *exec_var;		/* room for "ALLOCPROF_EXEC=<pid>.0:f<hand_fd>" */
	int sigpipe_default;
	const sigset_t *mask;	/* the signal mask to exec with */
	int err;		/* exec's errno, set by the child */
};

/* --no-symbols: finished traces keep no SYMBOLS chunks (options.c) */
extern bool rec_no_symbols;
/* --compress-level's value (-1: not given), for every trace of the run
 * (finish.c) */
extern int rec_compress_level_opt;
/* Where its symbols step reads the traces' files (`allocprof symbols
 * --symfs`), or NULL: record -p's /proc/PID/root when the process sees
 * another file system (finish.c) */
extern const char *rec_symfs;

int rec_parse_opts(int argc, char **argv, struct record_opts *o, int *first);
int rec_check_preload_path(const char *so);
int rec_check_trace_dir(const char *path);
int rec_check_output(const char *path, bool *discard, char **resolved);
void rec_claim_release(struct claim *c);
void rec_claim_abandon(struct claim *c, const char *path);
int rec_claim_output(const char *path, struct claim *c);
bool rec_relayed(int s);
int rec_relay_start(struct relay *r);
int rec_relay_signals(struct relay *r);
void rec_relay_stop(struct relay *r, int s);
void rec_relay_end(struct relay *r);
int rec_wait_program(pid_t pid, int *status, const char *trace,
		     struct ap_compact_stream **stream, struct relay *r);
uint64_t rec_mono_ns(void);
/* Finishes the trace at `path` from its buffers file (trace/buffers.c);
 * false if another process is finishing it (then the caller leaves it). */
bool rec_finish_buffers(const char *path, const int *status, uint64_t end_ns,
			struct ap_finished *fin);
/* Starts the helper that keeps the symbols of the trace at path (the
 * program's, as rec_finish_trace will name it) and opens their files
 * while the program runs (finish.c); nothing with --no-symbols. */
void rec_symbols_ahead(const char *path);
/* Ends the helper if rec_finish_trace did not use it. */
void rec_symbols_ahead_end(void);
void rec_finish_trace(const char *path, const char *what, bool quiet,
		      struct ap_compact_stream *stream, const int *status,
		      const struct ap_finished *fin);
/* The run's descriptor of the trace as the program's sampler wrote it
 * (the claim's, holding the run's lock): once a compacted trace has taken
 * its name, its pages are dropped while the symbols are kept (finish.c,
 * while_symbols). -1: none. */
void rec_finish_raw_fd(int fd);
bool rec_trace_is_live(const char *path);
/* Says in one line how many programs of the run rec_finish_trace found
 * exec'd with an environment that no longer preloads the sampler (they ran
 * unprofiled), and by which processes; nothing if none, or `quiet`. */
void rec_say_unfollowed(bool quiet);
/* drain.c: the rings of the run's traces, drained while their processes
 * run (from the program's start to record's end) */
void rec_drain_start(const char *trace, uint64_t run_id, bool quiet);
void rec_drain_before_fork(void);
void rec_drain_after_fork(bool child);
void rec_drain_restart(void);
void rec_drain_stop(void);
void rec_drain_unwatch(void);
bool rec_wait_released(const char *path);
bool rec_pid_alive(pid_t pid);
/* When this process started (/proc/self/stat's starttime, clock ticks
 * since boot; 0: unknown). */
unsigned long long rec_self_start(void);
void rec_say_live(const char *path, const char *what, pid_t pid, bool alive, bool quiet,
		  bool later);
/* A list of trace names (malloc'd) */
struct rec_names {
	char **name;
	size_t n, alloc;
};
void rec_names_release(struct rec_names *l);
void rec_names_add(struct rec_names *l, char *name); /* takes name */
/* When a run began: since_ns, record's clock (CLOCK_REALTIME) before
 * the program started; main_start_ns, its trace's HEADER start_realtime
 * (0: none). A child trace (at a child suffix of -o) is the run's if it
 * began at since_ns or later and before a later run's trace took -o. */
struct rec_span {
	uint64_t since_ns, main_start_ns;
	uint64_t run_id; /* the run's number (HEADER run_id), 0: none */
	/* when record started (rec_self_start): a process of the run
	 * started at or after it; a pid whose process started before is
	 * another's (a child trace named by its pid in a pid namespace of
	 * its own: .2 is kthreadd's pid outside) */
	unsigned long long record_start;
};
/* The program's trace: `output`, unless the file record made there was
 * left empty: a library of the program's closed the descriptor record
 * handed the sampler (ALLOCPROF_EXEC :f) and opened a file of its own on
 * it before the sampler started, so that the sampler made its own trace
 * at <output>-<k> (sampler/tracefile.c, trace_create). Then that one
 * (written into buf), found by its HEADER: the program's pid, the run's
 * number. */
const char *rec_program_trace(const char *output, pid_t pid, uint64_t run_id, char *buf,
			      size_t size);
/* A run's number: 48 random bits, never 0. */
uint64_t rec_new_run_id(void);
/* The HEADER's start_realtime of the trace at `path` (0: none read). */
uint64_t rec_trace_start_ns(const char *path);
size_t rec_finish_children(const char *output, const struct rec_span *span, bool quiet,
			   pid_t main_pid, const int *main_status, uint64_t main_end_ns,
			   struct rec_names *done, size_t *live_left);
pid_t rec_finish_later(const char *output, const struct rec_span *span, pid_t main_pid,
		       const int *main_status, uint64_t main_end_ns, bool main_live,
		       struct rec_names *done, int run_fd);
pid_t rec_launch(struct launch *L);
/* Whether `path`, which exec found missing (ENOENT), is a script whose
 * interpreter is missing: then it is in `out` (len bytes). */
bool rec_missing_interpreter(const char *path, char *out, size_t len);
char **rec_program_env(char *preload, char *cfg, char *exec_var);

#endif
