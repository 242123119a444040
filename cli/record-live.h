/* `allocprof record --live` (record-live.c): the live view on the trace
 * while the program runs, the terminal the view's. */
#ifndef AP_RECORD_LIVE_H
#define AP_RECORD_LIVE_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct record_live {
	int out_fd, in_fd; /* the program's standard output and error, and input;
			    * -1: not live */
	char *tmp_out;	   /* out_fd's name until the trace's is known */
	char *out;	   /* <trace>.out */
	int saved_err;	   /* record's standard error while the view is up */
	int held;	   /* what record says meanwhile (a temporary file) */
	pid_t view;	   /* the view's process, or -1 */
};

/* Standard input and output must be a terminal: 0, or -1 after one line
 * that says which is not. */
int live_check(void);
/* Before the launch: the program's output file opened next to the
 * trace (out_pre: the trace's path, or the start of its default name),
 * and /dev/null for its input. Returns 0, or -1 after saying why. */
int live_prepare(struct record_live *l, const char *out_pre);
/* After the launch of `pid`: its output file named <trace>.out, and once
 * the trace has its header (while pid runs) the view started on it, with
 * `mask` as its signal mask; record's own standard error held from then
 * on. Nothing happens when not live; a view that cannot start is said. */
void live_start(struct record_live *l, const char *trace, pid_t pid, const sigset_t *mask);
/* After the program ended and its trace was finished: waits for the view
 * to be quit, then says what record held, and releases l. */
void live_end(struct record_live *l);
void live_release(struct record_live *l);

#endif
