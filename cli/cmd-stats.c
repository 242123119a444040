/* `allocprof stats`: the summary of one trace (program, duration, rate,
 * threads, events and the weighted totals), as text or one JSON object. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_trace.h"
#include "commands.h"
#include "views.h"

static void stats_usage(FILE *f)
{
	fputs("usage: allocprof stats [--json] [--no-children|--by-process] TRACE...\n\n"
	      "The summary of a trace: program, pid, duration, sampling rate, threads,\n"
	      "events, and the totals over the whole run: alloc_objects, alloc_space,\n"
	      "free_objects, inuse_objects and inuse_space (live at the end),\n"
	      "peak_inuse_space. Sampled traces show estimates scaled by the sampling\n"
	      "weights; traces recorded with --all are exact. A sampled trace's peak\n"
	      "is the one the sampler counted (every block, sampled or not, at glibc's\n"
	      "usable size: 0 to 40 bytes more than its request), exact to within the\n"
	      "bytes it says; in a trace without that count (older ones, a run of\n"
	      "several processes) it is the largest of the in-use estimates over\n"
	      "the run, biased upward, with the standard deviation of the estimate.\n"
	      "A truncated trace (the process was killed or is still running, or the\n"
	      "file was cut) is summarized from its complete part, with a warning.\n"
	      AP_VIEW_RUN_TEXT
	      "A run of several processes is summed over them, on one time line (its\n"
	      "peak is the largest sum of the processes' in-use bytes at one time).\n"
	      "Blocks live when their image exec'd another are not in use from the\n"
	      "exec on (exec_dropped), and a forked child's frees of blocks it\n"
	      "inherited are not unmatched (inherited_frees). A trace of a running\n"
	      "process (record -p) starts mid-run (attached): frees of blocks\n"
	      "allocated before the attach are pre_attach_frees, not unmatched.\n\n"
	      "options:\n"
	      "  --json               print one JSON object (keys as the names above)\n"
	      AP_VIEW_RUN_HELP
	      "  -h, --help           show this help\n",
	      f);
}

/* A duration as pprof labels one: the largest unit it reaches, "%.2f",
 * a trailing ".00" dropped. */
static void format_duration(char *out, size_t len, uint64_t ns)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"hrs", 3600e9}};
	if (!ns) {
		snprintf(out, len, "0");
		return;
	}
	size_t u = 0;
	while (u + 1 < AP_ARRAY_SIZE(units) && (double)ns >= units[u + 1].ns)
		u++;
	char num[64];
	snprintf(num, sizeof(num), "%.2f", (double)ns / units[u].ns);
	size_t n = strlen(num);
	if (n > 3 && !strcmp(num + n - 3, ".00"))
		num[n - 3] = 0;
	snprintf(out, len, "%s%s", num, units[u].name);
}

static uint64_t duration_ns(const struct ap_trace *t)
{
	return t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 0;
}

/* The command line as one line, each argument as a shell would take it. */
static void format_cmdline(struct ap_buf *b, const struct ap_trace *t)
{
	for (size_t i = 0; i < t->argc; i++) {
		const char *a = t->argv[i];
		if (i)
			ap_buf_addstr(b, " ");
		ap_buf_add_shell_word(b, a);
	}
}

static void print_count(const char *name, double v)
{
	printf("%-18s %.0f\n", name, v);
}

static void print_bytes(const char *name, double v)
{
	char b[64];
	ap_format_bytes(b, sizeof(b), v);
	printf("%-18s %s\n", name, b);
}

/* The text line shows this many thread names; --json has them all. */
#define MAX_THREADS_SHOWN 16

static const char *end_reason_name(uint64_t reason)
{
	switch (reason) {
	case AP_END_EXIT:
		return "exit";
	case AP_END_UNDERSCORE_EXIT:
		return "_exit";
	case AP_END_SIGNAL:
		return "signal";
	case AP_END_EXEC:
		return "exec";
	case AP_END_KILLED:
		return "killed";
	case AP_END_RAW_EXIT:
		return "exit_group";
	case AP_END_GONE:
		return "gone";
	case AP_END_SNAPSHOT:
		return "snapshot";
	case AP_END_DETACH:
		return "detached";
	case AP_END_STOPPED:
		return "stopped";
	}
	return "unknown";
}

static void print_end(const struct ap_trace *t)
{
	if (!t->has_end) {
		printf("%-18s unknown: no end record (still running, or ended in a way the "
		       "sampler cannot see, such as SIGKILL)\n", "ended");
		return;
	}
	unsigned long long st = (unsigned long long)t->end_status;
	char status[48] = ", status not recorded";
	if (t->end_status_known)
		snprintf(status, sizeof(status), ", status %llu", st);
	switch (t->end_reason) {
	case AP_END_EXIT:
		printf("%-18s exit%s\n", "ended", status);
		break;
	case AP_END_UNDERSCORE_EXIT:
		printf("%-18s _exit%s\n", "ended", status);
		break;
	case AP_END_SIGNAL:
		printf("%-18s fatal signal %llu (SIG%s)\n", "ended", st,
		       st < 65 && sigabbrev_np((int)st) ? sigabbrev_np((int)st) : "?");
		break;
	case AP_END_EXEC:
		printf("%-18s exec (the program image was replaced)%s\n", "ended",
		       t->exec_unfollowed ? ", by one run unprofiled: the environment it was "
					    "given no longer preloads the sampler (clearenv, env -i)"
					  : "");
		break;
	case AP_END_KILLED:
		printf("%-18s killed by signal %llu (SIG%s), which the sampler cannot catch: record "
		       "finished the trace from its buffers (calls and bytes unknown)\n", "ended", st,
		       st < 65 && sigabbrev_np((int)st) ? sigabbrev_np((int)st) : "?");
		break;
	case AP_END_RAW_EXIT:
		printf("%-18s the exit_group system call, without exit()%s: record finished the "
		       "trace from its buffers (calls and bytes unknown)\n", "ended", status);
		break;
	case AP_END_GONE:
		printf("%-18s without an end record (SIGKILL or the exit_group system call, say): "
		       "finished from its buffers (calls and bytes unknown)\n",
		       "ended");
		break;
	case AP_END_SNAPSHOT:
		printf("%-18s not yet: a snapshot (allocprof snapshot) of the trace of a program "
		       "still running; calls and bytes unknown\n", "ended");
		break;
	case AP_END_DETACH:
		printf("%-18s detached (record -p): the process ran on\n", "ended");
		break;
	case AP_END_STOPPED: {
		char why[256];
		ap_trace_stop_why(t->stop_errno, why, sizeof(why));
		printf("%-18s not recorded: %s (record finished it)\n", "ended", why);
		break;
	}
	default:
		printf("%-18s reason %llu, status %llu\n", "ended",
		       (unsigned long long)t->end_reason, st);
	}
}

/* The PCs whose frames the trace keeps (SYMBOLS chunks), and in how
 * many tables (one per file, per chunk and per process of a run). */
static size_t kept_pcs(const struct ap_trace *t, size_t *tables)
{
	size_t n = 0;
	for (size_t i = 0; i < t->symtab.nmods; i++)
		n += t->symtab.mods[i].npcs;
	*tables = t->symtab.nmods;
	return n;
}

static void print_text(const struct ap_trace *t, const struct ap_trace_totals *tot)
{
	struct ap_buf cmd = AP_BUF_INIT;
	char b[64];
	format_cmdline(&cmd, t);
	struct ap_buf safe = AP_BUF_INIT;
	printf("%-18s %s\n", "program", ap_safe_name(&safe, t->exe));
	printf("%-18s %s\n", "command", ap_safe_name(&safe, cmd.buf));
	printf("%-18s %llu\n", "pid", (unsigned long long)t->pid);
	/* Older traces do not say: the line is left out. */
	if (t->allowed_cpus)
		printf("%-18s %llu of the machine's %llu (its CPU affinity; advise replays on as many)\n",
		       "cpus", (unsigned long long)t->allowed_cpus, (unsigned long long)t->cpus);
	if (t->nprocs) {
		printf("%-18s %zu (%s)\n", "processes", t->nprocs,
		       "TRACE and its child traces, or the TRACEs given: --by-process shows each");
		struct ap_buf line = AP_BUF_INIT;
		for (size_t i = 0; i < t->nprocs; i++) {
			ap_buf_reset(&line);
			ap_view_add_cmdline(&line, t->procs[i].cmdline);
			printf("%-18s pid %llu: %s\n", "", (unsigned long long)t->procs[i].pid,
			       ap_safe_name(&safe, line.buf));
		}
		ap_buf_release(&line);
	}
	format_duration(b, sizeof(b), duration_ns(t));
	printf("%-18s %s%s\n", "duration", b, t->has_end ? "" : " (up to the last event)");
	if (t->flags & AP_HFLAG_ATTACHED)
		printf("%-18s yes (record -p): the trace starts mid-run, without the blocks "
		       "allocated before (their frees: pre_attach_frees)\n", "attached");
	if (t->malloc_owner)
		printf("%-18s the program's own malloc, in %s: these counts are not the "
		       "program's allocations (only calls that reached the C library's malloc)\n",
		       "allocator", t->malloc_owner);
	if (t->rate <= 1 && t->malloc_owner) {
		printf("%-18s every allocation the sampler saw (not the program's own allocator)\n",
		       "sampling");
	} else if (t->rate <= 1) {
		printf("%-18s every allocation (exact)\n", "sampling");
	} else {
		ap_format_bytes(b, sizeof(b), (double)t->rate);
		printf("%-18s one sample per %s allocated on average (estimates)\n", "sampling", b);
	}
	printf("%-18s %zu", "threads", t->nthreads);
	size_t shown = t->nthreads < MAX_THREADS_SHOWN ? t->nthreads : MAX_THREADS_SHOWN;
	for (size_t i = 0; i < shown; i++)
		printf("%s%s[%u]", i ? ", " : " (",
		       *t->threads[i].name ? ap_safe_name(&safe, t->threads[i].name) : "?",
		       t->threads[i].tid);
	ap_buf_release(&safe);
	if (shown < t->nthreads)
		printf(", and %zu more", t->nthreads - shown);
	printf("%s\n", t->nthreads ? ")" : "");
	print_end(t);
	if (t->has_switches) {
		printf("%-18s %llu: its threads blocked %llu times (a lock, a queue, a sleep) and were "
		       "preempted %llu", "switches", (unsigned long long)(t->nvcsw + t->nivcsw),
		       (unsigned long long)t->nvcsw, (unsigned long long)t->nivcsw);
		if (t->sampler_waits) {
			char d[32];
			format_duration(d, sizeof(d), t->sampler_wait_ns);
			printf("; blocked %llu times waiting for record to take their events, %s",
			       (unsigned long long)t->sampler_waits, d);
		}
		printf("\n");
	}
	if (t->has_minflt)
		printf("%-18s %llu minor (pages the kernel mapped in at a first touch), recording "
		       "included\n", "page faults", (unsigned long long)t->minflt);
	printf("%-18s %llu\n", "events", (unsigned long long)tot->events);
	printf("%-18s %llu\n", "samples", (unsigned long long)tot->samples);
	if (t->has_counts) {
		/* the sampler counts every call, sampled or not */
		printf("%-18s %llu (exact: every allocation call%s)\n", "calls",
		       (unsigned long long)t->calls,
		       t->malloc_owner ? " that reached the sampler" : "");
		ap_format_bytes(b, sizeof(b), (double)t->bytes);
		printf("%-18s %s (exact: bytes those calls requested)\n", "bytes", b);
	}
	print_count("alloc_objects", tot->alloc_objects);
	print_bytes("alloc_space", tot->alloc_space);
	print_count("free_objects", tot->free_objects);
	if (t->rate <= 1) {
		print_count("inuse_objects", tot->inuse_objects);
	} else {
		/* heavy-tailed: say so with the error bar (ap_trace_totals) */
		printf("%-18s %.0f ± %.0f (estimate from %llu live sample%s, one standard "
		       "deviation; blocks small next to the rate are rarely sampled, so it "
		       "mostly reads low and now and then far high: record with --all for "
		       "the exact count)\n",
		       "inuse_objects", round(tot->inuse_objects), round(tot->inuse_objects_sd),
		       (unsigned long long)tot->inuse_samples, tot->inuse_samples == 1 ? "" : "s");
	}
	print_bytes("inuse_space", tot->inuse_space);
	struct ap_view_peak pk = ap_view_peak(t, tot->peak_inuse_space, tot->peak_inuse_space_sd);
	if (pk.kind == AP_PEAK_EXACT) {
		print_bytes("peak_inuse_space", pk.bytes);
	} else if (pk.kind == AP_PEAK_COUNTED) {
		/* the sampler counted every block, sampled or not */
		char in[32];
		ap_format_bytes(b, sizeof(b), pk.bytes);
		ap_format_bytes(in, sizeof(in), pk.within);
		printf("%-18s %s (exact to within %s: every block counted by the sampler at "
		       "glibc's usable size, the request rounded up to 24 + 16k bytes, up to "
		       "40 more; --all counts requested bytes)\n",
		       "peak_inuse_space", b, in);
	} else {
		/* the largest of many estimates: say how far off it may be */
		char sd[64];
		ap_format_bytes(b, sizeof(b), pk.bytes);
		ap_format_bytes(sd, sizeof(sd), pk.within);
		printf("%-18s %s ± %s (the largest in-use estimate over the run: biased "
		       "upward; %s)\n",
		       "peak_inuse_space", b, sd,
		       t->nprocs ? "processes' peaks are counted one by one: see --by-process"
				 : "record with --all for the exact peak");
	}
	if (t->rate <= 1)
		printf("%-18s %.0f (blocks freed by their own thread's next event; by heaptrack's "
		       "rule, frees right after an allocation of their stack and size: %.0f)\n",
		       "temporary", round(tot->temporary), round(tot->temporary_heaptrack));
	else
		printf("%-18s n/a (blocks freed by their own thread's next event: a sampled "
		       "trace does not hold the events between; record with --all)\n", "temporary");
	if (t->ngap_records) {
		char g[32];
		format_duration(g, sizeof(g), tot->gap_ns);
		printf("%-18s %s (the threads' time in the program between their allocator "
		       "calls, the measured replay's work)\n",
		       "between_calls", g);
	}
	if (tot->unmatched_frees)
		printf("%-18s %llu (frees of blocks the trace never allocated)\n",
		       "unmatched_frees", (unsigned long long)tot->unmatched_frees);
	if (tot->pre_attach_frees)
		printf("%-18s %llu (frees of blocks allocated before the attach)\n",
		       "pre_attach_frees", (unsigned long long)tot->pre_attach_frees);
	if (tot->inherited_frees)
		printf("%-18s %llu (frees, in a forked child, of blocks it inherited from its "
		       "parent)\n",
		       "inherited_frees", (unsigned long long)tot->inherited_frees);
	if (tot->exec_dropped_objects > 0) {
		ap_format_bytes(b, sizeof(b), tot->exec_dropped_space);
		printf("%-18s %.0f blocks, %s (live when their image exec'd another: gone with "
		       "it, not in inuse_*)\n",
		       "exec_dropped", round(tot->exec_dropped_objects), b);
	}
	size_t kept_files;
	size_t kept = kept_pcs(t, &kept_files);
	if (kept)
		printf("%-18s kept in the trace: %zu PC%s of %zu file%s (allocprof-symbols(1))\n",
		       "symbols", kept, kept == 1 ? "" : "s", kept_files, kept_files == 1 ? "" : "s");
	else
		printf("%-18s none kept: read from the program's files\n", "symbols");
	if (t->truncated)
		printf("%-18s yes: %s\n", "truncated", t->truncated_why);
	else
		printf("%-18s no\n", "truncated");
	ap_buf_release(&cmd);
}

/* A weighted total as a JSON number: an integer (pprof's values are
 * integers too; with rate 1 they are exact). */
static json_t *json_total(double v)
{
	v = round(v);
	if (fabs(v) < 9.0e18)
		return json_integer((json_int_t)v);
	return json_real(v);
}

static json_t *json_u64(uint64_t v)
{
	if (v <= (uint64_t)INT64_MAX)
		return json_integer((json_int_t)v);
	return json_real((double)v);
}

static int print_json(const struct ap_trace *t, const struct ap_trace_totals *tot)
{
	json_t *o = json_object();
	json_t *argv = json_array();
	for (size_t i = 0; i < t->argc; i++)
		json_array_append_new(argv, ap_json_text(t->argv[i]));
	json_t *threads = json_array();
	for (size_t i = 0; i < t->nthreads; i++)
		json_array_append_new(threads, json_pack("{s:I,s:o,s:o}", "tid",
							 (json_int_t)t->threads[i].tid, "name",
							 ap_json_text(t->threads[i].name), "events",
							 json_u64(t->threads[i].events)));
	json_object_set_new(o, "program", ap_json_text(t->exe));
	json_object_set_new(o, "argv", argv);
	json_object_set_new(o, "pid", json_u64(t->pid));
	json_object_set_new(o, "cpus", json_u64(t->cpus));
	json_object_set_new(o, "allowed_cpus", t->allowed_cpus ? json_u64(t->allowed_cpus) : json_null());
	if (t->nprocs) {
		json_t *ps = json_array();
		for (size_t i = 0; i < t->nprocs; i++) {
			const struct ap_process *p = &t->procs[i];
			json_t *x = json_object();
			json_object_set_new(x, "trace", ap_json_text(p->path));
			json_object_set_new(x, "pid", json_u64(p->pid));
			json_object_set_new(x, "ppid", json_u64(p->ppid));
			json_object_set_new(x, "command", ap_json_text(p->cmdline));
			json_object_set_new(x, "threads", json_u64(p->nthreads));
			json_object_set_new(x, "events", json_u64(p->events));
			if (p->has_counts) {
				json_object_set_new(x, "calls", json_u64(p->calls));
				json_object_set_new(x, "bytes", json_u64(p->bytes));
			}
			json_array_append_new(ps, x);
		}
		json_object_set_new(o, "processes", ps);
	}
	json_object_set_new(o, "duration_ns", json_u64(duration_ns(t)));
	json_object_set_new(o, "rate", json_u64(t->rate));
	json_object_set_new(o, "exact", json_boolean(t->rate <= 1));
	json_object_set_new(o, "threads", json_integer((json_int_t)t->nthreads));
	json_object_set_new(o, "events", json_u64(tot->events));
	json_object_set_new(o, "samples", json_u64(tot->samples));
	json_object_set_new(o, "alloc_objects", json_total(tot->alloc_objects));
	json_object_set_new(o, "alloc_space", json_total(tot->alloc_space));
	json_object_set_new(o, "free_objects", json_total(tot->free_objects));
	json_object_set_new(o, "inuse_objects", json_total(tot->inuse_objects));
	json_object_set_new(o, "inuse_space", json_total(tot->inuse_space));
	json_object_set_new(o, "inuse_objects_sd", json_total(tot->inuse_objects_sd));
	json_object_set_new(o, "inuse_samples", json_u64(tot->inuse_samples));
	struct ap_view_peak pk = ap_view_peak(t, tot->peak_inuse_space, tot->peak_inuse_space_sd);
	json_object_set_new(o, "peak_inuse_space", json_total(pk.bytes));
	json_object_set_new(o, "peak_inuse_space_sd",
			    json_total(pk.kind == AP_PEAK_ESTIMATE ? pk.within : 0));
	json_object_set_new(o, "peak_inuse_space_kind", json_string(ap_view_peak_kind_name(pk.kind)));
	json_object_set_new(o, "peak_inuse_space_within", json_total(pk.within));
	json_object_set_new(o, "peak_inuse_space_estimate", json_total(tot->peak_inuse_space));
	json_object_set_new(o, "peak_usable_space",
			    t->has_live_peak ? json_u64(t->live_peak) : json_null());
	json_object_set_new(o, "temporary", t->rate <= 1 ? json_total(tot->temporary) : json_null());
	json_object_set_new(o, "temporary_heaptrack",
			    t->rate <= 1 ? json_total(tot->temporary_heaptrack) : json_null());
	json_object_set_new(o, "between_calls_ns",
			    t->ngap_records ? json_integer((json_int_t)tot->gap_ns) : json_null());
	json_object_set_new(o, "unmatched_frees", json_u64(tot->unmatched_frees));
	json_object_set_new(o, "pre_attach_frees", json_u64(tot->pre_attach_frees));
	json_object_set_new(o, "attached", json_boolean(t->flags & AP_HFLAG_ATTACHED));
	json_object_set_new(o, "inherited_frees", json_u64(tot->inherited_frees));
	json_object_set_new(o, "exec_dropped_objects", json_total(tot->exec_dropped_objects));
	json_object_set_new(o, "exec_dropped_space", json_total(tot->exec_dropped_space));
	json_object_set_new(o, "end_reason",
			    t->has_end ? json_string(end_reason_name(t->end_reason)) : json_null());
	json_object_set_new(o, "exec_unfollowed", json_boolean(t->has_end && t->exec_unfollowed));
	json_object_set_new(o, "spawn_unfollowed", json_integer((json_int_t)t->spawn_unfollowed));
	json_object_set_new(o, "end_status", t->has_end && t->end_status_known
						 ? json_u64(t->end_status) : json_null());
	json_object_set_new(o, "sampler_waits", json_u64(t->sampler_waits));
	json_object_set_new(o, "sampler_wait_ns", json_u64(t->sampler_wait_ns));
	json_object_set_new(o, "nvcsw", t->has_switches ? json_u64(t->nvcsw) : json_null());
	json_object_set_new(o, "nivcsw", t->has_switches ? json_u64(t->nivcsw) : json_null());
	json_object_set_new(o, "minflt", t->has_minflt ? json_u64(t->minflt) : json_null());
	json_object_set_new(o, "calls", t->has_counts ? json_u64(t->calls) : json_null());
	json_object_set_new(o, "bytes", t->has_counts ? json_u64(t->bytes) : json_null());
	json_object_set_new(o, "malloc_owner",
			    t->malloc_owner ? ap_json_text(t->malloc_owner) : json_null());
	size_t kept_files;
	json_object_set_new(o, "symbols_kept", json_u64(kept_pcs(t, &kept_files)));
	json_object_set_new(o, "truncated", json_boolean(t->truncated));
	json_object_set_new(o, "truncated_why",
			    t->truncated ? ap_json_text(t->truncated_why) : json_null());
	/* last: its per-thread "events" must not come before the total's */
	json_object_set_new(o, "thread_list", threads);
	char *s = json_dumps(o, AP_JSON_FLAGS);
	json_decref(o);
	if (!s) {
		ap_say("stats: cannot encode JSON");
		return AP_EXIT_FAIL;
	}
	puts(s);
	free(s);
	return AP_EXIT_OK;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    AP_VIEW_RUN_LONGOPTS,
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool json = false;
	struct ap_view_opts vo;
	ap_view_opts_init(&vo);
	int c;
	opterr = 0;
	optind = 1;
	while ((c = ap_view_getopt(argc, argv, ":h", longopts)) != -1) {
		switch (c) {
		case 'h':
			stats_usage(stdout);
			return AP_EXIT_OK;
		case 'j':
			json = true;
			vo.json = true;
			break;
		case AP_VOPT_NO_CHILDREN:
		case AP_VOPT_BY_PROCESS:
			ap_view_option(&vo, c, optarg);
			break;
		default:
			return ap_view_bad_option("stats", c, argv);
		}
	}
	if (optind >= argc)
		return ap_usage_error("stats", "no trace file given");
	if (vo.by_process)
		return ap_view_by_process(cmd_stats, argc, argv, optind, &vo);

	struct ap_trace *t = NULL;
	int rc;
	if (ap_view_read(&t, argv + optind, (size_t)(argc - optind), &vo,
			 ": the totals cover its complete part"))
		return AP_EXIT_FAIL;
	struct ap_trace_totals tot;
	struct ap_error err;
	if (ap_trace_totals(t, &tot, &err) < 0) {
		ap_print_error(&err);
		rc = AP_EXIT_FAIL;
	} else if (json)
		rc = print_json(t, &tot);
	else {
		print_text(t, &tot);
		rc = AP_EXIT_OK;
	}
	ap_view_trace_done(t);
	return rc;
}
