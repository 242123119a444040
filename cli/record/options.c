/* record/options.c: `allocprof record`, its options: parsing and -h (record-int.h). */
#include "record-int.h"

/* --no-symbols: finished traces keep no SYMBOLS chunks */
bool rec_no_symbols;


static void record_usage(FILE *f)
{
	fputs("usage: allocprof record [OPTIONS] [--] PROGRAM [ARGS...]\n"
	      "       allocprof record -p PID [--duration D] [OPTIONS]\n\n"
	      "Runs PROGRAM with the allocprof sampler preloaded (LD_PRELOAD) and\n"
	      "writes its allocation trace. Options end at the first argument that\n"
	      "is not one, so the program's own options pass through.\n"
	      "With -p, attaches to the running process PID instead (ptrace: the\n"
	      "same user, or root), records until Ctrl-C, --duration or its exit,\n"
	      "and detaches: the process runs on as before, with the descriptors\n"
	      "it had. An exec, a crash or an _exit while attached ends the trace\n"
	      "there, with everything recorded up to it.\n\n"
	      "options:\n"
	      "  -p, --pid PID      attach to the running process PID (see ATTACH in\n"
	      "                     allocprof-record(1)); the trace's default name is\n"
	      "                     allocprof.<name>.<PID>.trace\n"
	      "      --duration D   with -p: detach after D, seconds or with a unit\n"
	      "                     (2.5, 500ms, 30s, 2m; default: at Ctrl-C, SIGTERM,\n"
	      "                     SIGHUP or the process's exit)\n"
	      "  -o, --output PATH  trace file (default: allocprof.<program>.<pid>.trace\n"
	      "                     in the current directory, <pid> the program's); an\n"
	      "                     existing trace or empty file is replaced, a symbolic\n"
	      "                     link followed, /dev/null discards the trace, anything\n"
	      "                     else is refused, and so is a trace another record\n"
	      "                     (or a process of an earlier run) is writing\n"
	      "      --rate BYTES   mean bytes between samples (default 512K; accepts\n"
	      "                     suffixes K, M, G; 1 records every allocation)\n"
	      "      --all          record every allocation and free (same as --rate 1)\n"
	      "      --gaps         with --all: also how long each thread ran between\n"
	      "                     its calls (stats' between_calls; one more clock\n"
	      "                     read a call, and a larger trace)\n"
	      "      --max-depth N  stack depth cap (default 64, at most 256)\n"
	      "      --no-children  profile only PROGRAM, not the programs it runs\n"
	      "                     nor the processes it forks\n"
	      "      --compress-level N\n"
	      "                     the zstd level of the trace, 0 to 19 (default 3,\n"
	      "                     with 15 on chunks that pack well); higher levels\n"
	      "                     make most traces a little smaller and record take\n"
	      "                     longer to finish; 0 leaves it as the sampler wrote it\n"
	      "      --no-symbols   do not keep the names, files and lines of the\n"
	      "                     trace's frames in it (by default they are added\n"
	      "                     when the trace is finished, so that reports read\n"
	      "                     it after the program is rebuilt, upgraded or gone)\n"
	      "      --live         show the live view (allocprof tui --follow) on the\n"
	      "                     trace while the program runs: the terminal is the\n"
	      "                     view's, the program's input /dev/null and its output\n"
	      "                     and errors in TRACE.out (named on the status line);\n"
	      "                     record says what it has to say once the view is quit\n"
	      "  -q, --quiet        no summary line at the end, nor lines about traces\n"
	      "                     still written by processes that outlive PROGRAM\n"
	      "  -h, --help         show this help\n\n"
	      "Processes PROGRAM forks write <output>.<pid>; an image that replaced\n"
	      "itself with exec after recording events leaves its trace, and the new\n"
	      "image writes <trace>.exec<n>; a program run with an environment that\n"
	      "no longer preloads the sampler (env -i, env -u LD_PRELOAD) runs\n"
	      "unprofiled, as without record. A name already taken gets -2, -3, ...\n"
	      "(<output>.<pid>-2): no file there is overwritten. A process still running when PROGRAM\n"
	      "exits (a daemon) keeps writing its trace: record names it and leaves\n"
	      "it as it is; it is complete once that process exits.\n\n"
	      "Every signal sent to allocprof goes on to PROGRAM, once (one sent to\n"
	      "the process group reaches it directly); Ctrl-Z stops both. A program\n"
	      "ended by a signal (Ctrl-C, timeout, SIGPIPE, a crash) leaves a\n"
	      "complete trace of what it did until then. So does one killed by\n"
	      "SIGKILL or ended by the exit_group system call: the sampler's\n"
	      "buffers are a file (<trace>.buffers) that record adds to the trace\n"
	      "once the process is gone.\n\n"
	      "Exit status: PROGRAM's own; if it died of a signal, allocprof dies of\n"
	      "the same signal (no core of its own) once the trace is finished; 1 if it\n"
	      "could not be run (not found, not executable, statically linked,\n"
	      "setuid or setgid: LD_PRELOAD cannot reach those) or its trace could\n"
	      "not be written (see -o); 2 for bad usage.\n"
	      "Environment: ALLOCPROF_PRELOAD overrides where liballocprof.so is\n"
	      "looked for; ALLOCPROF_COMPACT_LEVEL (0-19) is --compress-level's\n"
	      "default; ALLOCPROF_COMPACT_NO_THREAD=1 compacts the trace on\n"
	      "record's own thread only (the same file, later).\n",
	      f);
}


/* Option value: "--opt VALUE" or "--opt=VALUE". */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static bool opt_is(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(arg, name, n) && (arg[n] == 0 || arg[n] == '=');
}

/* The value of option `name`, a number from lo to hi, into *out: 0, or
 * the usage error's exit status. */
static int opt_number(int argc, char **argv, int *i, const char *name, uint64_t lo, uint64_t hi,
		      uint64_t *out)
{
	const char *v = opt_value(argc, argv, i, name);
	if (!v)
		return ap_usage_error("record", "%s needs a number", name);
	char *end;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || *v < '0' || *v > '9' || *end || *out < lo || *out > hi)
		return ap_usage_error("record", "%s: '%s' is not a number from %llu to %llu", name,
				      v, (unsigned long long)lo, (unsigned long long)hi);
	return 0;
}

int rec_parse_opts(int argc, char **argv, struct record_opts *o, int *first)
{
	int i, rc;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			record_usage(stdout);
			return -1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--all")) {
			o->rate = 1;
		} else if (!strcmp(a, "--gaps")) {
			o->gaps = true;
		} else if (!strcmp(a, "--no-children")) {
			o->no_children = true;
		} else if (!strcmp(a, "--no-symbols")) {
			o->no_symbols = true;
		} else if (!strcmp(a, "--live")) {
			o->live = true;
		} else if (!strcmp(a, "-o") || opt_is(a, "--output")) {
			if (!(v = opt_value(argc, argv, &i, a[1] == 'o' ? "-o" : "--output")) || !*v)
				return ap_usage_error("record", "%s needs a path", a);
			o->output = v;
		} else if (!strncmp(a, "-o", 2)) {
			o->output = a + 2;
		} else if (opt_is(a, "--rate")) {
			if (!(v = opt_value(argc, argv, &i, "--rate")))
				return ap_usage_error("record", "--rate needs a size");
			if (ap_parse_size(v, &o->rate) < 0 || o->rate == 0)
				return ap_usage_error("record", "--rate: '%s' is not a size in bytes (like 512K)", v);
		} else if (opt_is(a, "--compress-level")) {
			uint64_t l;
			if ((rc = opt_number(argc, argv, &i, "--compress-level", 0, 19, &l)))
				return rc;
			o->compress_level = (int)l;
		} else if (!strcmp(a, "-p") || opt_is(a, "--pid")) {
			uint64_t p;
			if ((rc = opt_number(argc, argv, &i, a[1] == 'p' ? "-p" : "--pid", 1,
					     INT32_MAX, &p)))
				return rc;
			o->attach = (pid_t)p;
		} else if (opt_is(a, "--duration")) {
			uint64_t ns;
			if (!(v = opt_value(argc, argv, &i, "--duration")))
				return ap_usage_error("record", "--duration needs a time");
			if (ap_parse_duration(v, &ns) < 0 || ns < 1000000 || ns > 1000000000ull * 1000000000ull)
				return ap_usage_error("record", "--duration: '%s' is not a time from 1ms to 1e9s "
						      "(seconds, or with a unit: 500ms, 30s, 2m)", v);
			o->duration = ns;
		} else if (opt_is(a, "--max-depth")) {
			uint64_t d;
			if ((rc = opt_number(argc, argv, &i, "--max-depth", 1, AP_MAX_DEPTH_CAP,
					     &d)))
				return rc;
			o->max_depth = (unsigned)d;
		} else {
			return ap_usage_error("record", "unknown option '%s'", a);
		}
	}
	if (o->attach && i < argc)
		return ap_usage_error("record", "-p attaches to a running process: no program "
				      "to run with it ('%s')", argv[i]);
	if (o->gaps && o->rate != 1)
		return ap_usage_error("record", "--gaps goes with --all (a sampled trace has no gaps)");
	if (o->duration && !o->attach)
		return ap_usage_error("record", "--duration goes with -p");
	if (o->attach && o->no_children)
		return ap_usage_error("record", "--no-children: an attached process's children "
				      "are never recorded");
	if (o->attach) {
		*first = i;
		return 0;
	}
	if (i >= argc)
		return ap_usage_error("record", "no program to run");
	*first = i;
	return 0;
}
