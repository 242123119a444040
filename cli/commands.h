/* The subcommands of `allocprof`: one file cmd-<name>.c each, one entry
 * signature. main.c holds the table. */
#ifndef AP_COMMANDS_H
#define AP_COMMANDS_H

#include <stdio.h>

#include "ap_util.h"

int cmd_record(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_advise(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_tui(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_peek(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_try(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_symbols(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);

/* Where allocprof-report is: itself in allocprof-report; for the
 * launcher, next to it (the build tree, or a bindir that holds both),
 * else in the install's pkglibdir; $ALLOCPROF_REPORT overrides. */
void ap_report_path(char *path, size_t len);

/* Runs `allocprof-report` with argv (argv[0] the command) as a child and
 * waits for it: its exit status, or -1 (said) when it could not run. */
int ap_run_report_child(char **argv);

/* Writes b to `path` ("-": standard output, checked by main at exit); a
 * file is replaced only once it is complete (through a symbolic link: the
 * link stays), a device or a FIFO is written as it is (never replaced).
 * Returns 0, or -1 after printing the error. */
int ap_write_output(const char *path, const struct ap_buf *b);

/* Whether ap_write_output could write `path` (NULL or "-": standard
 * output, always): checked before a trace is read and replayed, so that
 * an output that cannot be written is said alone, as the first line, and
 * not after the notes and the work of a view. Returns 0, or -1 after
 * printing "PATH: why" as ap_write_output would. */
int ap_check_output(const char *path);

/* As pprof's awayFromTTY: a picture bound for standard output ("-")
 * when that is a terminal goes to a new file in the current directory
 * instead, the first of PREFIX001.EXT, PREFIX002.EXT, ... that does not
 * exist (created empty here, so two runs never pick the same one); its
 * name is put in *name. Returns `path` itself when it is not "-" or
 * standard output is not a terminal, name->buf after creating the file,
 * or NULL after printing why none could be. */
const char *ap_output_away_from_tty(const char *path, const char *prefix, const char *ext,
				    struct ap_buf *name);
/* Its new file alone: PREFIX001.EXT or the first that does not exist,
 * created empty; name->buf, or NULL after printing why none could be. */
const char *ap_output_new_file(const char *prefix, const char *ext, struct ap_buf *name);

/* Prints "allocprof: <fmt>" and a newline to stderr. */
void ap_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints the error in `err` with the "allocprof: " prefix. */
void ap_print_error(const struct ap_error *err);

/* For usage errors: prints "allocprof <cmd>: <msg>" and a hint to try -h;
 * returns AP_EXIT_USAGE. */
int ap_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* SIGPIPE was ignored when allocprof started (main() ignores it for its
 * own output; `record` gives the program the disposition found). */
extern int ap_sigpipe_ignored;

/* liballocprof.so's path (record/launch.c): $ALLOCPROF_PRELOAD, the build
 * tree's next to this binary, or the installed one. Returns 0, or -1
 * (after one line on stderr unless quiet). */
int ap_find_sampler(char *out, size_t len, bool quiet);

/* The program as execvp would find it: into `out`, or -1 with errno
 * (record/launch.c). */
int ap_find_program(const char *prog, char *out, size_t len);

/* Refuses programs LD_PRELOAD cannot reach (static, setuid/setgid, not
 * x86-64), `shown` naming it. Returns 0, or -1 after one line on stderr
 * (record/launch.c). */
int ap_check_program(const char *shown, const char *path);

/* advise's cost table (cmd-advise.c): 0, or -1 after printing why. */
struct ap_cost_table;
int ap_advise_load_costs(struct ap_cost_table *c);

/* True when `fd` is a terminal and progress may be drawn on stderr. */
int ap_progress_wanted(void);

/* How every command prints JSON (jansson flags): indented, keys in order,
 * reals with 15 significant digits -- all a double has without binary
 * noise (0.99955, not 0.99955000000000005). */
#define AP_JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

#endif
