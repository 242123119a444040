/* `allocprof record`: runs a program with liballocprof.so preloaded and
 * says where its trace went. */
#include "record/record-int.h"

/* A program's or process's name made fit for the default trace name
 * (allocprof.NAME.PID.trace), which a user types into a shell: letters,
 * digits and ._+- kept, each run of anything else (blanks, quotes, $, *,
 * escape sequences, bytes of other scripts) one _, at most 64 bytes, and
 * `none` for a name with neither a letter nor a digit left (perf writes
 * perf.data whatever runs; heaptrack keeps the name as it is). */
static void name_for_file(const char *name, const char *none, char *out, size_t cap)
{
	size_t n = 0;
	bool kept = false;
	for (const char *c = name; *c && n + 2 < cap && n < 64; c++) {
		bool alnum = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9');
		if (alnum || strchr("._+-", *c)) {
			out[n++] = *c;
			kept |= alnum;
		} else if (!n || out[n - 1] != '_') {
			out[n++] = '_';
		}
	}
	out[n] = 0;
	if (!kept)
		snprintf(out, cap, "%s", none);
}

/* ALLOCPROF_TEST_STOPTIME=1 (bench/attach.sh): how long the attach or
 * the detach held the process's threads stopped, one line */
static void say_stops(const char *what, const struct ap_stops *s)
{
	if (!getenv("ALLOCPROF_TEST_STOPTIME"))
		return;
	fprintf(stderr, "allocprof: %s stopped: every thread %u times, %.0f us, longest %.0f us; "
		"the calls' thread %u times, %.0f us, longest %.0f us\n", what, s->all_n,
		(double)s->all_ns / 1e3, (double)s->all_max_ns / 1e3, s->call_n,
		(double)s->call_ns / 1e3, (double)s->call_max_ns / 1e3);
}

/* record -p: attach, wait for Ctrl-C (SIGINT, SIGTERM, SIGHUP), the
 * duration or the process's exit, detach, finish the trace. */
static int record_attached(const struct record_opts *o)
{
	char so[PATH_MAX], comm[64] = "process", p[64];
	if (ap_find_sampler(so, sizeof(so), false) < 0)
		return AP_EXIT_FAIL;
	char *so_abs = realpath(so, NULL);
	if (!so_abs) {
		ap_say("%s: %s", so, strerror(errno));
		return AP_EXIT_FAIL;
	}
	snprintf(p, sizeof(p), "/proc/%d/comm", (int)o->attach);
	FILE *f = fopen(p, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	/* the process names itself (prctl PR_SET_NAME), escape sequences
	 * included: in the default trace's name and on the terminal, only
	 * what name_for_file keeps of it */
	char named[sizeof(comm)];
	name_for_file(comm, "process", named, sizeof(named));
	snprintf(comm, sizeof(comm), "%s", named);
	char cwd[PATH_MAX], out[PATH_MAX * 2];
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), ".");
	bool discard = false;
	char *resolved = NULL;
	int rc = AP_EXIT_FAIL;
	if (o->output && rec_check_output(o->output, &discard, &resolved) < 0)
		goto out;
	const char *given = resolved ? resolved : o->output;
	if (discard)
		snprintf(out, sizeof(out), "/dev/null");
	else if (given && given[0] == '/')
		snprintf(out, sizeof(out), "%s", given);
	else if (given)
		snprintf(out, sizeof(out), "%s/%s", cwd, given);
	else
		snprintf(out, sizeof(out), "%s/allocprof.%s.%d.trace", cwd, comm, (int)o->attach);
	if (!o->output && rec_check_output(out, &discard, &resolved) < 0)
		goto out;
	if (strlen(out) >= PATH_MAX - AP_OUTPUT_PATH_ROOM) {
		ap_say("%s: the trace's path is too long: choose a shorter -o", out);
		goto out;
	}
	if (ap_attach_check(o->attach, so_abs, out) < 0)
		goto out;
	/* its modules read as it sees them where a path here is another
	 * file (a tmpfs of its mount namespace, a chroot's libc) */
	char symfs[64];
	snprintf(symfs, sizeof(symfs), "/proc/%d/root", (int)o->attach);
	if (ap_attach_other_root(o->attach))
		rec_symfs = symfs;
	if (!discard) {
		if (rec_trace_is_live(out)) {
			ap_say("%s: another process is writing this trace: choose another -o", out);
			goto out;
		}
		unlink(out); /* the sampler makes it anew (checked above: a trace, or empty) */
	}
	/* ALLOCPROF=<pid>.<run>:<rate>:<depth>:<flags>:<output>
	 * (sampler/README.md): the run's number as a launched run has one */
	char cfg[PATH_MAX * 2 + 128];
	snprintf(cfg, sizeof(cfg), "%d.%llx" AP_CFG_SETTINGS_FMT, (int)ap_pid_inside(o->attach),
		 (unsigned long long)rec_new_run_id(), (unsigned long long)o->rate, o->max_depth,
		 AP_CFG_NO_CHILDREN | (o->gaps ? AP_CFG_GAPS : 0), out);

	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int pfd = (int)syscall(SYS_pidfd_open, o->attach, 0);
	struct ap_attached a;
	if (ap_attach(o->attach, so_abs, cfg, &a) < 0)
		goto out_sig;
	if (!o->quiet)
		fprintf(stderr, "allocprof: attached to %d (%s), recording into %s; %s\n",
			(int)o->attach, comm, a.trace,
			o->duration ? "detaching at the end of --duration or at Ctrl-C"
				    : "Ctrl-C detaches");
	say_stops("attach", &a.attach_stops);
	uint64_t end = o->duration ? rec_mono_ns() + o->duration : 0;
	for (;;) {
		struct pollfd pf[2] = { { sfd, POLLIN, 0 }, { pfd, POLLIN, 0 } };
		int ms = -1;
		if (end) {
			uint64_t now = rec_mono_ns();
			if (now >= end)
				break;
			ms = (int)((end - now) / 1000000) + 1;
		}
		/* every second: an exec is no event of the pidfd's */
		if (ms < 0 || ms > 1000)
			ms = 1000;
		int n = poll(pf, pfd >= 0 ? 2 : 1, ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (pf[0].revents & POLLIN)) {
			struct signalfd_siginfo si; /* taken: it ends nothing but the wait */
			if (read(sfd, &si, sizeof(si)) < 0)
				si.ssi_signo = 0;
			break;
		}
		if ((n > 0 && (pf[1].revents & POLLIN)) || !rec_pid_alive(o->attach) ||
		    (n == 0 && !ap_attached_here(&a)))
			break;
	}
	int d = ap_detach(&a);
	if (d < 0)
		goto out_sig;
	if (d == 0)
		say_stops("detach", &a.detach_stops);
	if (d == 1 && !o->quiet)
		fprintf(stderr, "allocprof: process %d is gone: the trace ends with it\n",
			(int)o->attach);
	else if (d == 2 && !o->quiet)
		fprintf(stderr, "allocprof: process %d exec'd another program: the trace ends at the "
			"exec\n", (int)o->attach);
	if (!discard && !rec_wait_released(a.trace)) {
		rec_say_live(a.trace, "trace", o->attach, rec_pid_alive(o->attach), o->quiet, false);
	} else if (!discard) {
		rec_finish_trace(a.trace, d > 0 ? "wrote" : "detached; wrote", o->quiet, NULL, NULL,
			     NULL);
	}
	rc = AP_EXIT_OK;
out_sig:
	if (pfd >= 0)
		close(pfd);
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	free(so_abs);
	free(resolved);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { .rate = AP_DEFAULT_RATE, .max_depth = AP_DEFAULT_DEPTH,
				 .compress_level = -1 };
	int first = 0;
	int rc = rec_parse_opts(argc, argv, &o, &first);
	if (rc)
		return rc < 0 ? AP_EXIT_OK : rc;
	if (o.live && o.attach)
		return ap_usage_error("record", "--live views a program record starts, not one it "
				      "attaches to (-p): open allocprof tui --follow on the trace");
	if (o.live && live_check() < 0)
		return AP_EXIT_FAIL;
	/* "-o -" is standard output to every other command (export,
	 * flamegraph, html, timeline); a trace is a file, the name its
	 * children's traces are made from, and is never written there: not
	 * a file named "-" in the current directory either (./- says so) */
	if (o.output && !strcmp(o.output, "-")) {
		ap_say("-o -: a trace cannot go to standard output (its child traces are named "
		       "after its file): give a path (./- for a file named '-')");
		return AP_EXIT_FAIL;
	}
	rec_compress_level_opt = o.compress_level;
	rec_no_symbols = o.no_symbols;
	if (o.attach)
		return record_attached(&o);
	const char *prog = argv[first];
	if (!*prog)
		return ap_usage_error("record", "the program's name is empty");
	char path[PATH_MAX], so[PATH_MAX];
	if (ap_find_program(prog, path, sizeof(path)) < 0) {
		if (errno == ENOENT && !strchr(prog, '/'))
			ap_say("%s: command not found", prog);
		else
			ap_say("%s: %s", prog, strerror(errno));
		return AP_EXIT_FAIL;
	}
	if (ap_check_program(prog, path) < 0 || ap_find_sampler(so, sizeof(so), false) < 0 ||
	    rec_check_preload_path(so) < 0)
		return AP_EXIT_FAIL;

	/* The trace's path; the default name holds the program's pid, which
	 * the vfork child fills in (launch). */
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), ".");
	char bn[80];
	name_for_file(strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog, "program", bn,
		      sizeof(bn));
	struct ap_buf out_pre = AP_BUF_INIT, cfg_mid = AP_BUF_INIT;
	bool discard = false;
	char *resolved = NULL;
	if (o.output && rec_check_output(o.output, &discard, &resolved) < 0)
		return AP_EXIT_FAIL;
	if (resolved)
		o.output = resolved; /* the link's target, where the trace goes */
	if (o.output && o.output[0] == '/')
		ap_buf_addstr(&out_pre, o.output);
	else if (o.output)
		ap_buf_addf(&out_pre, "%s/%s", cwd, o.output);
	else
		ap_buf_addf(&out_pre, "%s/allocprof.%s.", cwd, bn);
	if (!o.output && rec_check_trace_dir(out_pre.buf) < 0) {
		ap_buf_release(&out_pre);
		return AP_EXIT_FAIL;
	}
	/* the sampler names the traces of children and later images after
	 * it, and needs this room past it (it would turn itself off) */
	size_t out_len = out_pre.len + (o.output ? 0 : strlen(".trace") + 10);
	if (!discard && out_len >= PATH_MAX - AP_OUTPUT_PATH_ROOM) {
		ap_say("%s: the trace's path is too long (%zu bytes; at most %d): choose "
			   "a shorter -o", o.output ? out_pre.buf : cwd, out_len,
			   PATH_MAX - AP_OUTPUT_PATH_ROOM - 1);
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	struct claim claim = { -1, -1, -1 };
	if (o.output && !discard && rec_claim_output(out_pre.buf, &claim) < 0) {
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	struct record_live live = { .out_fd = -1, .in_fd = -1, .saved_err = -1, .held = -1,
				    .view = -1 };
	if (o.live && (discard ? ap_usage_error("record", "--live shows the trace: it "
							  "cannot be discarded") :
				 live_prepare(&live, out_pre.buf) < 0 ? AP_EXIT_FAIL : 0)) {
		rec_claim_release(&claim);
		ap_buf_release(&out_pre);
		free(resolved);
		return discard ? AP_EXIT_USAGE : AP_EXIT_FAIL;
	}
	/* ALLOCPROF=<pid>.<run>.<record's pid>:<rate>:<depth>:<flags>:<output>
	 * (sampler/README.md) */
	uint64_t run_id = rec_new_run_id();
	ap_buf_addf(&cfg_mid, ".%llx.%ld" AP_CFG_SETTINGS_FMT, (unsigned long long)run_id,
		    (long)getpid(), (unsigned long long)o.rate, (unsigned)o.max_depth,
		    (o.no_children ? AP_CFG_NO_CHILDREN : 0) | (o.gaps ? AP_CFG_GAPS : 0),
		    out_pre.buf);
	struct launch L = {
		.path = path,
		.argv = argv + first,
		.cfg_mid = cfg_mid.buf,
		.out_suffix = o.output ? NULL : ".trace",
		.sigpipe_default = !ap_sigpipe_ignored,
		.out_fd = live.out_fd,
		.in_fd = live.in_fd,
	};
	L.cfg = ap_xmalloc(cfg_mid.len + 64);
	L.out_pre = out_pre.buf;
	L.out_path = ap_xmalloc(out_pre.len + 64);
	L.hand_fd = claim.hand;
	L.exec_var = claim.hand >= 0 ? ap_xmalloc(64) : NULL;
	const char *pre = getenv("LD_PRELOAD");
	struct ap_buf preload = AP_BUF_INIT;
	ap_buf_addf(&preload, "LD_PRELOAD=%s%s%s", so, pre && *pre ? ":" : "", pre ? pre : "");
	L.env = rec_program_env(preload.buf, L.cfg, L.exec_var);
	int nargs = argc - first;
	L.sh_argv = ap_xmalloc(((size_t)nargs + 2) * sizeof(*L.sh_argv));
	L.sh_argv[0] = (char *)"/bin/sh";
	L.sh_argv[1] = (char *)path;
	for (int i = 1; i <= nargs; i++)
		L.sh_argv[i + 1] = argv[first + i];

	/* Signals are relayed from before the program starts: a SIGTERM
	 * sent to us right after the launch must reach the program, not end
	 * us and leave it running. */
	struct relay relay;
	if (rec_relay_start(&relay) < 0) {
		live_release(&live);
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	L.mask = &relay.mask;

	fflush(NULL);
	struct timespec began;
	clock_gettime(CLOCK_REALTIME, &began);
	struct rec_span span = { (uint64_t)began.tv_sec * 1000000000u + (uint64_t)began.tv_nsec, 0,
				 run_id, rec_self_start() };
	pid_t pid = rec_launch(&L);
	int e = L.err;
	free(L.sh_argv);
	free(L.env);
	free(L.cfg);
	free(L.out_path);
	free(L.exec_var);
	if (claim.hand >= 0) { /* the program has it now */
		close(claim.hand);
		claim.hand = -1;
	}
	ap_buf_release(&preload);
	ap_buf_release(&cfg_mid);
	if (pid < 0 || e) {
		int err = pid < 0 ? errno : e;
		if (pid > 0)
			waitpid(pid, NULL, 0);
		rec_relay_end(&relay);
		live_release(&live);
		char interp[256];
		if (err == ENOENT && rec_missing_interpreter(path, interp, sizeof(interp)))
			ap_say("%s: its interpreter %s: %s", prog, interp, strerror(err));
		else
			ap_say("%s: %s", prog, strerror(err));
		if (o.output)
			rec_claim_abandon(&claim, out_pre.buf);
		ap_buf_release(&out_pre);
		free(resolved);
		return AP_EXIT_FAIL;
	}
	relay.program = pid;
	char output[PATH_MAX + 64], abs_out[PATH_MAX * 2 + 64];
	if (o.output)
		snprintf(output, sizeof(output), "%s", o.output);
	else
		snprintf(output, sizeof(output), "allocprof.%s.%d.trace", bn, (int)pid);
	if (o.output)
		snprintf(abs_out, sizeof(abs_out), "%s", out_pre.buf);
	else
		snprintf(abs_out, sizeof(abs_out), "%s%d.trace", out_pre.buf, (int)pid);
	ap_buf_release(&out_pre);
	if (!discard) {
		rec_finish_raw_fd(claim.run);
		rec_symbols_ahead(output);
		rec_drain_start(abs_out, span.run_id, o.quiet);
	}
	live_start(&live, abs_out, pid, &relay.mask);
	int status;
	struct ap_compact_stream *stream = NULL;
	int wrc = rec_wait_program(pid, &status, discard ? NULL : abs_out, &stream, &relay);
	uint64_t end_ns = rec_mono_ns();
	rec_drain_unwatch();
	rec_relay_end(&relay);
	if (wrc < 0) {
		rec_drain_stop();
		rec_symbols_ahead_end();
		live_end(&live);
		rec_claim_release(&claim);
		free(resolved);
		return AP_EXIT_FAIL;
	}

	bool main_live = false;
	char own[sizeof(output) + 16];
	const char *mine = discard ? output : rec_program_trace(output, pid, span.run_id, own,
								 sizeof(own));
	if (mine != output) {
		ap_compact_stream_abandon(stream); /* (of the empty file) */
		stream = NULL;
		if (!o.quiet)
			ap_say("%s: left empty: a library of the program's closed the descriptor "
			       "the sampler was to write it by; the program's trace is %s",
			       output, mine);
	}
	span.main_start_ns = discard ? 0 : rec_trace_start_ns(mine);
	if (discard) {
		if (!o.quiet)
			fprintf(stderr, "allocprof: trace discarded (%s)\n", output);
	} else if (rec_wait_released(mine)) {
		/* until the program's forked children have opened their own
		 * traces they hold its trace too (trace_is_live) */
		struct ap_finished fin;
		if (rec_finish_buffers(mine, &status, end_ns, &fin))
			rec_finish_trace(mine, "wrote", o.quiet, stream, &status, &fin);
		else
			ap_compact_stream_abandon(stream);
	} else {
		ap_compact_stream_abandon(stream);
		rec_say_live(mine, "trace", -1, false, o.quiet, true);
		main_live = true;
	}
	rec_symbols_ahead_end(); /* (if the trace was not finished) */
	struct rec_names done = { 0 };
	size_t live_left = 0;
	size_t nchildren = discard ? 0 : rec_finish_children(output, &span, o.quiet, pid, &status,
							     end_ns, &done, &live_left);
	rec_say_unfollowed(o.quiet);
	if (nchildren && !o.quiet) {
		struct ap_buf cmd = AP_BUF_INIT;
		ap_buf_add_shell_word(&cmd, output);
		fprintf(stderr,
			"allocprof: the reports read %s with its child traces as one run "
			"(allocprof top %s); --by-process shows each process, "
			"--no-children the program's trace alone\n",
			output, cmd.buf);
		ap_buf_release(&cmd);
	}
	live_end(&live); /* (the view says the end, then is quit) */
	if (main_live || live_left) {
		pid_t later = rec_finish_later(output, &span, pid, &status, end_ns, main_live,
					       &done, claim.run);
		if (later > 0 && !o.quiet)
			fprintf(stderr, "allocprof: process %d (allocprof record) finishes those "
				"traces when their processes have exited\n", (int)later);
	}
	rec_names_release(&done);
	rec_drain_stop();
	rec_claim_release(&claim); /* the run's lock: the finisher's, if any */
	free(resolved);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		ap_die_of_signal(WTERMSIG(status));
	return AP_EXIT_FAIL;
}
