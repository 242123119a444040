/* record/attach.h: loading the sampler into a running process and taking
 * it out again (`allocprof record -p PID`), with ptrace. The sampler's
 * side is sampler/attach.c. */
#ifndef AP_RECORD_ATTACH_H
#define AP_RECORD_ATTACH_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* How long the process's threads were held stopped (ptrace) by an attach
 * or a detach: every thread at once (all_*: from the first stop to the
 * resume of the others), and the thread a call into the process ran on,
 * from its stop to its resume (call_*: the call's time included). */
struct ap_stops {
	uint64_t all_ns, all_max_ns;
	unsigned all_n;
	uint64_t call_ns, call_max_ns;
	unsigned call_n;
};

struct ap_attached {
	pid_t pid;
	uint64_t lib_base;	/* liballocprof.so in the process */
	char lib[PATH_MAX];	/* its path */
	uint64_t fn_detach, fn_finish;	/* its entry points there */
	uint64_t info_addr;	/* allocprof_attach_info */
	int64_t in_off;		/* the thunks' counter, from the thread pointer */
	uint64_t text_lo, text_hi;
	char trace[PATH_MAX];	/* where the sampler writes */
	bool futex_ok;		/* its threads come to no other safe point */
	struct ap_stops attach_stops, detach_stops;
};

/* Whether pid can be attached: 0, or -1 after one line on stderr saying
 * why not (no such process, ptrace not permitted and by what, statically
 * linked, the sampler already there, another mount namespace or root
 * where the library or the trace's directory is not the same file). so: the
 * library's path here; trace: the trace's absolute path. */
int ap_attach_check(pid_t pid, const char *so, const char *trace);

/* Whether pid sees another file system than record: another mount
 * namespace (a container) or another root (record or it in a chroot),
 * where a path may name another file than here. */
bool ap_attach_other_root(pid_t pid);

/* pid as the process itself sees it (its own PID namespace's number, the
 * last of NSpid in /proc/PID/status): the sampler's settings name it, so
 * that it knows itself for the process record attached. pid if unknown. */
pid_t ap_pid_inside(pid_t pid);

/* Loads the sampler (so) into pid and starts it with cfg (ALLOCPROF's
 * format: <pid>:<rate>:<depth>:<no_children>:<output>). Every thread is
 * stopped only while needed, and left running. 0 with *a filled in
 * (a->trace: the trace the sampler made), or -1 after one line on stderr. */
int ap_attach(pid_t pid, const char *so, const char *cfg, struct ap_attached *a);

/* Whether a's process is still the image the sampler was loaded into:
 * false once it is gone or has exec'd another program (the sampler went
 * with the image, which ended the trace, reason exec, if the exec came
 * through the C library). */
bool ap_attached_here(const struct ap_attached *a);

/* Takes the sampler out of a: every GOT entry back, waits until no thread
 * is inside it, then the trace ends and the sampler lets go of everything
 * it made (its library stays mapped, inert). 0; 1 if the process is gone
 * (it ended the trace itself at its exit, or not at all); 2 if it exec'd
 * another program (likewise, at the exec); -1 after one line on stderr. */
int ap_detach(struct ap_attached *a);

#endif
