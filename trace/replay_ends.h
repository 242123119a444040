/* The replay's view of a whole run's processes (replay_ends.c): which
 * ended, how and when, from the trace's metadata alone; and which FREE
 * that found no block is of a block inherited at a fork. The replay
 * (replay.c) hands the blocks of a process that ended to its consumers
 * (ap_replay_ops.exited, exec_dropped) at these times. */
#ifndef AP_REPLAY_ENDS_H
#define AP_REPLAY_ENDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_trace.h"

/* The processes of a whole run that ended by exec (if `execs`) or for
 * good (if `exits`), by their END's time. */
struct ap_replay_end {
	uint64_t ts;
	uint32_t proc;
	bool exec;
};

/* The processes that ended by exec (if `execs`) or for good (if `exits`),
 * by their END's time, in *out (malloc'd; NULL when none): their count. */
size_t ap_replay_ends_of(const struct ap_trace *t, bool execs, bool exits, struct ap_replay_end **out);
/* Whether process p (of a whole run; the trace itself otherwise) ended by
 * exec: its heap went with its image. */
bool ap_replay_exec_ended(const struct ap_trace *t, uint32_t p);
/* Whether FREE e, which found no live block in its process, is of a block
 * the process inherited (see replay_ends.c). */
bool ap_replay_inherited(const struct ap_trace *t, const struct ap_event *e);

#endif
