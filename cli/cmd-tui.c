/* `allocprof tui`: the top, peek, list, timeline and advise views of a trace in one
 * interactive ncurses browser (cli/tui.c), or, with --batch, the same keys
 * applied without a terminal and the final screen printed as text. */
#include <curses.h>
#include <getopt.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "tui.h"

enum {
	OPT_FUNCTIONS = AP_VOPT_FIRST_OWN,
	OPT_LINES,
	OPT_FILES,
	OPT_CUM,
	OPT_SOURCE_PATH,
	OPT_BATCH,
	OPT_KEYS,
	OPT_SIZE,
	OPT_NO_MEASURE,
	OPT_FOLLOW,
	OPT_PROGRAM_OUTPUT,
};

static void tui_usage(FILE *f)
{
	fputs("usage: allocprof tui [OPTIONS] TRACE...\n"
	      "       allocprof tui --follow [OPTIONS] TRACE\n\n"
	      "Browses TRACE interactively: the top table (flat, flat%, sum%, cum,\n"
	      "cum%), Enter on a node for its callers and callees (as peek; Enter\n"
	      "there goes to one, Backspace back), 'L' for its annotated source (as\n"
	      "list), 'T' for in-use bytes over time (as timeline), 'a' for the pool\n"
	      "advisor (as advise), '?' for the keys. The options set where the\n"
	      "browser starts; keys change them. Byte values are each in their own\n"
	      "unit (20kB, 960B), not in the one unit top gives its table.\n\n"
	      "options:\n"
	      "  --functions          one node per function (default)\n"
	      "  --lines              one node per source line\n"
	      "  --files              one node per source file\n"
	      "  --cum                sort by cum instead of flat\n"
	      "  --source-path DIRS   where to look for sources that moved (as list)\n"
	      "  --batch              no terminal: apply --keys, print the final screen\n"
	      "  --keys KEYS          the keys for --batch: characters, and <up> <down>\n"
	      "                       <left> <right> <pgup> <pgdn> <home> <end> <enter>\n"
	      "                       <esc> <bs> <tab> <space> <lt> <resize:COLSxROWS>\n"
	      "  --size COLSxROWS     the screen size of --batch (default 100x30)\n"
	      "  --no-measure         the advisor's times from its cost model, not measured\n"
	      "  --follow             TRACE is still being written (allocprof record runs its\n"
	      "                       program): update top, the timeline and the advisor's\n"
	      "                       model (as --no-measure) every second or so, with only\n"
	      "                       the events new since; the status line says it follows,\n"
	      "                       and when the program ended. A finished trace opens as\n"
	      "                       without --follow. One trace, its child traces not read\n"
	      "  --program-output FILE  where the program writes (record --live says it),\n"
	      "                       named on the status line\n"
	      "  --alloc_space        bytes allocated (default)\n"
	      "  --alloc_objects      allocations made\n"
	      "  --inuse_space        bytes still allocated at the end of the trace\n"
	      "  --inuse_objects      allocations still live at the end of the trace\n"
	      "  --peak_space         bytes live when in-use bytes peaked\n"
	      "  --peak_objects       allocations live at that moment\n"
	      "  --temporary          allocations whose block its own thread freed as its\n"
	      "                       next event (not heaptrack's count: see man page)\n"
	      "  --focus REGEX        keep only stacks with a frame matching REGEX\n"
	      "  --ignore REGEX       drop stacks with a frame matching REGEX\n"
	      AP_VIEW_SYM_HELP
	      AP_VIEW_SUPP_HELP
	      "  --no-children        read only the trace files given, not their child traces\n"
	      "  -h, --help           show this help\n\n"
	      "Environment: NO_COLOR set and not empty draws without colours, in bold\n"
	      "and reverse video only (https://no-color.org).\n",
	      f);
}

/* ---- the terminal ------------------------------------------------------- */

static struct tui_screen term_screen;

/* Colours are used when the terminal has them and the user has not asked
 * for none: NO_COLOR set to anything but the empty string
 * (https://no-color.org). Set once by run_terminal(). */
static bool term_colors;

/* The pairs of the colour attributes, when the terminal has colours. */
static chtype attr_of(int a, bool colors)
{
	switch (a) {
	case TUI_TITLE:
		return colors ? COLOR_PAIR(1) | A_BOLD : A_REVERSE | A_BOLD;
	case TUI_BOLD:
		return A_BOLD;
	case TUI_CURSOR:
		return A_REVERSE;
	case TUI_GOOD:
		return colors ? COLOR_PAIR(2) | A_BOLD : A_BOLD;
	case TUI_BAD:
		return colors ? COLOR_PAIR(3) : A_NORMAL;
	case TUI_STATUS:
		return colors ? COLOR_PAIR(1) : A_REVERSE;
	}
	return A_NORMAL;
}

/* Copies the screen model to curses, in runs of one attribute. */
static void term_blit(const struct tui_screen *s, int cursor_col)
{
	char run[4096];
	for (int r = 0; r < s->rows; r++) {
		const struct tui_cell *c = &s->cells[(size_t)r * (size_t)s->cols];
		int x = 0;
		move(r, 0);
		while (x < s->cols) {
			int a = c[x].attr;
			size_t len = 0;
			while (x < s->cols && c[x].attr == a && len + 4 < sizeof(run)) {
				memcpy(run + len, c[x].ch, c[x].len);
				len += c[x].len;
				x++;
			}
			run[len] = 0;
			attrset(attr_of(a, term_colors));
			/* The bottom-right cell cannot be written without
			 * scrolling; curses reports ERR for it, harmlessly. */
			addstr(run);
		}
	}
	attrset(A_NORMAL);
	if (cursor_col >= 0) {
		curs_set(1);
		move(s->rows - 1, cursor_col < s->cols ? cursor_col : s->cols - 1);
	} else {
		curs_set(0);
	}
}

static void term_draw(struct tui *t)
{
	int cursor;
	tui_draw(t, &term_screen, &cursor);
	term_blit(&term_screen, cursor);
	refresh();
}

/* A long step is about to run: say so on the status line, then put back
 * what it said (the first one runs before the first key: a note set
 * before the screen, the truncated trace's, was wiped before it was
 * ever seen). */
static void term_busy(struct tui *t, const char *what)
{
	char kept[sizeof(t->status)];
	memcpy(kept, t->status, sizeof(kept));
	snprintf(t->status, sizeof(t->status), "%s ...", what);
	term_draw(t);
	memcpy(t->status, kept, sizeof(kept));
}

/* Ctrl-C (SIGINT) or SIGTERM while the screen is up: ncurses' own
 * handler restored the terminal and exited with status 1, where a
 * shell and its scripts expect what every other command gives, death by
 * the signal (130, 143). Ours notes it, the main thread's getch returns
 * (the signal is sent on to it when another thread took it: the read
 * it waits in is interrupted, the handler being installed without
 * SA_RESTART), the screen is ended and the signal raised again. */
static volatile sig_atomic_t term_signal;
static pthread_t term_main;

static void on_term_signal(int s)
{
	if (!pthread_equal(pthread_self(), term_main)) {
		pthread_kill(term_main, s);
		return;
	}
	term_signal = s;
}

/* Installs on_term_signal for SIGINT and SIGTERM where they are not
 * ignored (record --live's view leaves Ctrl-C to the program). Before
 * newterm: ncurses installs its own only where it finds SIG_DFL. */
static const int term_sigs[] = { SIGINT, SIGTERM };

static void catch_term_signals(void)
{
	term_main = pthread_self();
	for (size_t i = 0; i < sizeof(term_sigs) / sizeof(term_sigs[0]); i++) {
		struct sigaction old, sa;
		if (sigaction(term_sigs[i], NULL, &old) < 0 || old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(term_sigs[i], &sa, NULL);
	}
}

/* Once the screen is gone: the actions catch_term_signals replaced are
 * the default again (the cleanup after it is no time to take a Ctrl-C
 * as nothing), and a signal noted until then ends us (ap_die_of_signal:
 * without waiting for the work under way). */
static void release_term_signals(void)
{
	for (size_t i = 0; i < sizeof(term_sigs) / sizeof(term_sigs[0]); i++) {
		struct sigaction cur;
		if (sigaction(term_sigs[i], NULL, &cur) == 0 && cur.sa_handler == on_term_signal)
			signal(term_sigs[i], SIG_DFL);
	}
	if (term_signal)
		ap_die_of_signal(term_signal);
}

static int run_terminal(struct tui *t)
{
	setlocale(LC_CTYPE, "");
	catch_term_signals();
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		release_term_signals();
		const char *term = getenv("TERM");
		ap_say("tui: cannot use terminal type '%s'", term ? term : "");
		return AP_EXIT_FAIL;
	}
	/* A terminal that cannot place the cursor (TERM=dumb: an Emacs
	 * shell buffer, a CI log) would get the last line drawn over and
	 * over: said, before the screen is touched. */
	const char *cup = tigetstr("cup");
	if (!cup || cup == (char *)-1) {
		const char *term = getenv("TERM");
		endwin();
		release_term_signals();
		delscreen(scr);
		ap_say("tui: terminal type '%s' cannot place the cursor (use top, list, advise, or "
		       "--batch)",
		       term ? term : "");
		return AP_EXIT_FAIL;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	const char *no_color = getenv("NO_COLOR");
	term_colors = has_colors() && !(no_color && *no_color);
	if (term_colors) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_WHITE, COLOR_BLUE);
		init_pair(2, COLOR_GREEN, -1);
		init_pair(3, COLOR_RED, -1);
	}
	t->busy = term_busy;
	tui_resize(t, LINES, COLS);
	tui_start_work(t);
	bool pending = true;
	while (!t->quit && !term_signal) {
		tui_poll(t, false, &pending);
		term_draw(t);
		/* while work runs, wake now and then to show how far it is */
		timeout(pending ? 250 : -1);
		/* (following: the trace may grow meanwhile) */
		if (t->follow)
			tui_follow_unlock(t);
		int key = getch();
		if (t->follow)
			tui_follow_lock(t);
		if (key == ERR)
			continue;
		if (key == KEY_RESIZE)
			tui_resize(t, LINES, COLS);
		tui_key(t, key);
	}
	endwin();
	release_term_signals();
	delscreen(scr);
	tui_screen_release(&term_screen);
	return AP_EXIT_OK;
}

/* ---- batch -------------------------------------------------------------- */

static int run_batch(struct tui *t, const int *keys, int nkeys, const int *sizes)
{
	struct tui_screen s = {0};
	int cursor;
	tui_start_work(t);
	/* following: the keys once the trace has ended */
	while (t->follow) {
		tui_poll(t, false, NULL);
		if (tui_follow_ended(t))
			break;
		tui_follow_unlock(t);
		usleep(100000);
		tui_follow_lock(t);
	}
	for (int i = 0; i < nkeys && !t->quit; i++) {
		if (keys[i] == KEY_RESIZE) {
			tui_resize(t, sizes[1], sizes[0]);
			sizes += 2;
		}
		tui_key(t, keys[i]);
		/* a view that waits for its work opens before the next key */
		tui_poll(t, true, NULL);
	}
	tui_draw(t, &s, &cursor);
	tui_screen_print(&s, stdout);
	tui_screen_release(&s);
	return AP_EXIT_OK;
}

int cmd_tui(int argc, char **argv)
{
	static const struct option longopts[] = {
	    AP_VIEW_LONGOPTS,
	    {"functions", no_argument, NULL, OPT_FUNCTIONS},
	    {"lines", no_argument, NULL, OPT_LINES},
	    {"files", no_argument, NULL, OPT_FILES},
	    {"cum", no_argument, NULL, OPT_CUM},
	    {"source-path", required_argument, NULL, OPT_SOURCE_PATH},
	    {"source_path", required_argument, NULL, OPT_SOURCE_PATH},
	    {"batch", no_argument, NULL, OPT_BATCH},
	    {"keys", required_argument, NULL, OPT_KEYS},
	    {"size", required_argument, NULL, OPT_SIZE},
	    {"no-measure", no_argument, NULL, OPT_NO_MEASURE},
	    {"follow", no_argument, NULL, OPT_FOLLOW},
	    {"program-output", required_argument, NULL, OPT_PROGRAM_OUTPUT},
	    {NULL, 0, NULL, 0},
	};
	struct tui_options o = {0};
	bool batch = false, follow = false;
	const char *keys_text = NULL, *program_output = NULL;
	int cols = 100, rows = 30, opt;

	ap_view_opts_init(&o.view);
	ap_view_measure_init(&o.measure);
	optind = 1;
	opterr = 0;
	while ((opt = ap_view_getopt(argc, argv, ":h", longopts)) != -1) {
		int shared = opt == AP_VOPT_JSON ? 0 : ap_view_option_of(&o.view, "tui", opt, optarg);
		if (shared < 0)
			return AP_EXIT_USAGE;
		if (shared)
			continue;
		switch (opt) {
		case 'h':
			tui_usage(stdout);
			return AP_EXIT_OK;
		case AP_VOPT_JSON:
			return ap_usage_error("tui", "--json is for top, list and advise");
		case OPT_FUNCTIONS:
			o.view.report.granularity = AP_GRAN_FUNCTIONS;
			break;
		case OPT_LINES:
			o.view.report.granularity = AP_GRAN_LINES;
			break;
		case OPT_FILES:
			o.view.report.granularity = AP_GRAN_FILES;
			break;
		case OPT_CUM:
			o.by_cum = true;
			break;
		case OPT_SOURCE_PATH:
			o.source_path = optarg;
			break;
		case OPT_BATCH:
			batch = true;
			break;
		case OPT_NO_MEASURE:
			o.measure.off = true;
			break;
		case OPT_KEYS:
			keys_text = optarg;
			break;
		case OPT_FOLLOW:
			follow = true;
			break;
		case OPT_PROGRAM_OUTPUT:
			program_output = optarg;
			break;
		case OPT_SIZE:
			if (tui_parse_size(optarg, &cols, &rows))
				return ap_usage_error("tui",
						      "--size wants COLSxROWS, at least 20x5, "
						      "not '%s'",
						      optarg);
			break;
		default:
			return ap_view_bad_option("tui", opt, argv);
		}
	}
	if (argc == optind)
		return ap_usage_error("tui", "no trace given");
	if (o.view.by_process)
		return ap_usage_error("tui", "--by-process: the TUI shows one run; open a "
				      "process's trace with --no-children");
	if (keys_text && !batch)
		return ap_usage_error("tui", "--keys goes with --batch");
	if (follow && argc - optind != 1)
		return ap_usage_error("tui", "--follow follows one trace, not %d", argc - optind);
	if (ap_view_touch_check() < 0)
		return AP_EXIT_USAGE;

	int *keys = NULL, *sizes = NULL, nkeys = 0;
	if (batch) {
		struct ap_error err;
		nkeys = tui_parse_keys(keys_text ? keys_text : "", &keys, &sizes, &err);
		if (nkeys < 0)
			return ap_usage_error("tui", "--keys: %s", err.msg);
	} else if (!isatty(STDOUT_FILENO)) {
		ap_say("tui: standard output is not a terminal (use top/list/advise, or "
			   "--batch)");
		return AP_EXIT_FAIL;
	} else if (!isatty(STDIN_FILENO)) {
		ap_say("tui: standard input is not a terminal (use top/list/advise, or "
			   "--batch)");
		return AP_EXIT_FAIL;
	}

	/* The view of `record --live` shares the program's terminal, and a
	 * Ctrl-C there is for the program: the view stays to show how the
	 * run ended, until q (curses would end it with status 1). */
	if (program_output && !batch) {
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
	}
	struct ap_view v;
	struct tui_follow *F = NULL;
	int rc = follow ? tui_follow_load(&v, argv[optind], &o.view, program_output, &F) : 0;
	if (!rc && !F) /* (a finished trace follows nothing) */
		rc = ap_view_load(&v, argv + optind, (size_t)(argc - optind), &o.view);
	struct tui t;
	if (!rc) {
		rc = tui_init(&t, &v, &o, rows, cols);
		ap_view_warnings(&v);
		/* (following, nothing may be sampled yet) */
		char note[512] = "";
		if (!rc && !F && ap_view_sampling_note(v.trace, note, sizeof(note))) {
			tui_release(&t);
			rc = AP_EXIT_FAIL;
		}
		if (!rc && note[0])
			ap_say("note: %s", note);
		/* On a terminal the screen hides stderr: the first warning
		 * goes to the status line too. */
		const char *const *w = ap_sym_warnings(v.sym);
		if (!rc && !F && v.trace->truncated)
			/* (a trace still written is cut where it is: the
			 * follower's status line says how far it came) */
			snprintf(t.status, sizeof(t.status),
				 "warning: truncated trace (%s): showing its complete part",
				 v.trace->truncated_why);
		else if (!rc && note[0])
			/* why the table is empty, or its numbers rough */
			snprintf(t.status, sizeof(t.status), "note: %s", note);
		else if (!rc && !F && (v.trace->flags & AP_HFLAG_ATTACHED))
			/* why frees of blocks it never saw allocated, and
			 * nothing before the attach */
			snprintf(t.status, sizeof(t.status),
				 "note: recorded from a running process (record -p): the trace "
				 "starts mid-run, without the blocks allocated before");
		else if (!rc && w && *w)
			snprintf(t.status, sizeof(t.status), "warning: %s", *w);
		if (!rc) {
			/* the screen is the terminal's now: no progress on stderr */
			ap_events_progress(v.trace, NULL, NULL);
			if (F) {
				/* (held but while waiting for a key; the advisor
				 * made again and again: its cost model) */
				t.follow = F;
				t.o.measure.off = true;
				tui_follow_lock(&t);
				tui_follow_start(&t);
			}
			rc = batch ? run_batch(&t, keys, nkeys, sizes) : run_terminal(&t);
			if (F) {
				tui_follow_unlock(&t);
				tui_follow_stop(&t);
			}
			/* a replay that failed, said on the screen: again, now
			 * that the screen is gone */
			if (t.failed) {
				ap_print_error(&t.error);
				if (rc == AP_EXIT_OK)
					rc = AP_EXIT_FAIL;
			}
			tui_release(&t);
		}
		if (F)
			v.trace = NULL; /* the follower's */
		ap_view_release(&v);
	}
	tui_follow_free(F);
	free(keys);
	free(sizes);
	return rc;
}
