/* `allocprof tui --follow`: the browser on a trace its program is still
 * writing. A thread of its own (the follower) reads what the file gained
 * every second or so (ap_follow_update, trace/ap_trace_follow.h) and
 * feeds only the new events to one replay that keeps its state
 * (ap_replay_feed) with top's values as its consumer (ap_values_run):
 * top's models are made again from those values, never by a replay
 * again. The timeline and the advisor's model cannot go on that way (the
 * timeline's stretches of time are a share of the whole run, which grows;
 * the advisor ranks sites after its walk, with its own passes over the
 * trace): once asked for, each is made again by a whole replay of the
 * trace so far, on the follower's thread, at most every few seconds and
 * never more often than it takes, so that the keys always answer. Once
 * the trace has ended nothing writes it: a view not made by then is made
 * by the work thread, as for any finished trace (tui-work.c).
 *
 * The trace's metadata grows with each update (the arrays of its stacks,
 * threads and mappings move): the browser holds the follower's lock while
 * it uses the trace (everything but waiting for a key), and the follower
 * takes it to read the file. The symbolizers hold pointers into the
 * mappings: each side makes its own again when they move (a dlopen),
 * keeping the old one until the end for what was made with it. */
#include <curses.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ap_trace_follow.h"
#include "tui-int.h"

/* Between updates. */
#define UPDATE_NS 1000000000ull
/* A timeline or advice made again at most this often, and not before as
 * long again as it took to make. */
#define REMAKE_NS 3000000000ull

struct tui_follow {
	struct ap_follow *f;
	char *path;
	const char *program_output; /* record --live: where the program writes */
	struct ap_sym_options symo;
	struct ap_suppressions *supp; /* NULL: none */
	pthread_t th;
	bool started;
	pthread_mutex_t mu; /* the trace's: the browser's while it uses it */
	pthread_mutex_t wmu; /* the follower's wake-ups */
	pthread_cond_t wcv;
	bool stop;	      /* under wmu */
	uint64_t maps_seen;   /* the browser's symbolizer: of the mappings then */
	size_t ui_nvalues;    /* stacks the browser's values have room for */
	struct ap_symbolizer **retired; /* symbolizers made before a dlopen */
	size_t nretired, retired_alloc;

	/* the follower's own */
	struct ap_values_run *V;
	struct ap_replay_run *run;
	struct ap_replay_consumer c;
	struct ap_symbolizer *wsym; /* for the sites of the timeline and the advisor */
	uint64_t wsym_maps;
	uint64_t tl_at, tl_took, adv_at, adv_took; /* when made, how long it took */
	uint64_t fed, fed_upto; /* events fed, the time they reach (published as
				 * events, upto_ns) */
	struct ap_advise_options ao;
	bool have_costs;

	/* published under mu, taken by tui_follow_poll */
	uint64_t gen, gen_taken;
	struct ap_stack_values *values;
	size_t nvalues; /* stacks values has room for */
	struct tui_timeline *timeline;
	struct ap_advice *advice;
	uint64_t events;     /* handed to the replay so far */
	uint64_t upto_ns;    /* the time they reach, from the start */
	uint64_t updated_at; /* CLOCK_MONOTONIC of the last update */
	double tl_age, adv_age; /* seconds the shown ones are behind, when made */
	bool ended, no_buffers, failed;
	bool gone;	/* ended without END (ap_follow_gone) */
	size_t children; /* once ended: the child traces beside it (not shown) */
	struct ap_error err;
	/* asked for by the browser (under mu) */
	bool want_timeline, want_advice;
	size_t nb; /* the timeline's width */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void retire(struct tui_follow *F, struct ap_symbolizer *s)
{
	AP_ALLOC_GROW(F->retired, F->nretired + 1, F->retired_alloc);
	F->retired[F->nretired++] = s;
}

/* Every event that can come out now, into the replay. */
static int feed(struct tui_follow *F, struct ap_error *err)
{
	const struct ap_event *ev;
	ssize_t got;
	ap_values_run_grow(F->V);
	while ((got = ap_follow_next(F->f, &ev, err)) > 0) {
		if (ap_replay_feed(F->run, ev, (size_t)got, err) < 0)
			return -1;
		F->fed += (uint64_t)got;
		F->fed_upto = ev[got - 1].ts - ap_follow_trace(F->f)->start_ns;
	}
	return got < 0 ? -1 : 0;
}

/* The values so far (or, ended, the replay's end: those of `top`), for
 * *n stacks. */
static struct ap_stack_values *values_now(struct tui_follow *F, bool ended, size_t *n,
					  struct ap_error *err)
{
	*n = ap_values_run_stacks(F->V);
	if (!ended)
		return ap_values_run_now(F->V);
	int rc = ap_replay_finish(F->run, NULL, err);
	F->run = NULL;
	struct ap_stack_values *v = ap_values_run_end(F->V);
	F->V = NULL;
	if (rc < 0) {
		free(v);
		return NULL;
	}
	return v;
}

/* The follower's symbolizer, made again when the mappings moved. */
static struct ap_symbolizer *worker_sym(struct tui_follow *F, struct ap_error *err)
{
	uint64_t maps = ap_follow_maps_changed(F->f);
	if (F->wsym && F->wsym_maps == maps)
		return F->wsym;
	if (F->wsym)
		retire(F, F->wsym);
	F->wsym = ap_sym_new(ap_follow_trace(F->f), &F->symo, err);
	F->wsym_maps = maps;
	return F->wsym;
}

/* The timeline of the trace so far, nb columns: a whole replay (its
 * stretches are shares of the run so far, which every update changes). */
static struct tui_timeline *make_timeline(struct tui_follow *F, struct ap_stack_values *values,
					  size_t nb, struct ap_error *err)
{
	struct ap_symbolizer *sym = worker_sym(F, err);
	if (!sym)
		return NULL;
	struct ap_view wv = {.trace = ap_follow_trace(F->f), .sym = sym, .values = values};
	struct tui_timeline *tl = ap_xcalloc(1, sizeof(*tl));
	ap_timeline_sites_init(&tl->sites, &wv, TIMELINE_SITES);
	if (ap_timeline_init(&tl->T, wv.trace, &tl->sites, nb, false, err) < 0) {
		tui_timeline_free(tl);
		return NULL;
	}
	return tl;
}

/* The advisor's model of the trace so far (its cost model: --no-measure),
 * a whole replay: it ranks the sites after its walk. */
static struct ap_advice *make_advice(struct tui_follow *F, struct ap_error *err)
{
	struct ap_symbolizer *sym = worker_sym(F, err);
	if (!sym)
		return NULL;
	struct ap_site_map m;
	ap_advise_sites(ap_follow_trace(F->f), sym, false, &m);
	struct ap_advice *a = ap_advise_run(ap_follow_trace(F->f), &m, &F->ao, err);
	ap_site_map_release(&m);
	return a;
}

/* Whether a view made at `at` that took `took` is due again. */
static bool due(uint64_t now, uint64_t at, uint64_t took, bool ended)
{
	return !at || ended || now - at >= (took > REMAKE_NS ? took : REMAKE_NS);
}

static bool stopping(struct tui_follow *F, uint64_t wait_ns)
{
	pthread_mutex_lock(&F->wmu);
	if (wait_ns && !F->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + wait_ns;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		while (!F->stop && pthread_cond_timedwait(&F->wcv, &F->wmu, &ts) != ETIMEDOUT)
			;
	}
	bool stop = F->stop;
	pthread_mutex_unlock(&F->wmu);
	return stop;
}

static void *follow_main(void *arg)
{
	struct tui_follow *F = arg;
	while (!stopping(F, UPDATE_NS)) {
		struct ap_error err = {{0}};
		pthread_mutex_lock(&F->mu);
		int rc = ap_follow_update(F->f, &err);
		bool want_tl = F->want_timeline, want_adv = F->want_advice;
		size_t nb = F->nb;
		pthread_mutex_unlock(&F->mu);
		/* (from here on the trace is only read, here and by the browser) */
		bool ended = rc == 1;
		struct ap_stack_values *values = NULL;
		size_t nvalues = 0;
		struct tui_timeline *tl = NULL;
		struct ap_advice *adv = NULL;
		if (rc >= 0 && feed(F, &err) == 0)
			values = values_now(F, ended, &nvalues, &err);
		bool failed = rc < 0 || !values;
		uint64_t now = mono_ns();
		if (!failed && want_tl && due(now, F->tl_at, F->tl_took, ended)) {
			failed = !(tl = make_timeline(F, values, nb, &err));
			F->tl_took = mono_ns() - now;
			F->tl_at = now = mono_ns();
		}
		if (!failed && want_adv && F->have_costs && due(now, F->adv_at, F->adv_took, ended)) {
			failed = !(adv = make_advice(F, &err));
			F->adv_took = mono_ns() - now;
			F->adv_at = mono_ns();
		}
		/* the processes the program started wrote traces of their
		 * own, which this view does not read: counted, to say so */
		size_t children = 0;
		if (ended) {
			char **kids;
			const struct ap_trace *t = ap_follow_trace(F->f);
			children = ap_trace_children(
			    F->path, (time_t)(t->start_realtime_ns / 1000000000u), &kids);
			for (size_t k = 0; k < children; k++)
				free(kids[k]);
			free(kids);
		}
		pthread_mutex_lock(&F->mu);
		F->children = children;
		if (values) {
			free(F->values);
			F->values = values;
			F->nvalues = nvalues;
		}
		if (tl) {
			tui_timeline_free(F->timeline);
			F->timeline = tl;
		}
		if (adv) {
			ap_advice_free(F->advice);
			F->advice = adv;
		}
		F->ended = ended;
		F->gone = ended && ap_follow_gone(F->f);
		F->events = F->fed;
		F->upto_ns = F->fed_upto;
		F->no_buffers = !ap_follow_has_buffers(F->f);
		F->updated_at = mono_ns();
		if (failed && !F->failed) {
			F->failed = true;
			F->err = err;
		}
		F->gen++;
		pthread_mutex_unlock(&F->mu);
		if (ended || failed)
			break;
	}
	return NULL;
}

int tui_follow_load(struct ap_view *v, const char *path, const struct ap_view_opts *o,
		    const char *program_output, struct tui_follow **out)
{
	struct ap_error err;
	struct ap_follow *f;
	memset(v, 0, sizeof(*v));
	*out = NULL;
	/* A trace record has just made is empty until its program's sampler
	 * writes the header: wait for it a while (10 s). */
	struct stat st;
	for (int i = 0; i < 100 && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
			st.st_size < AP_TRACE_PREAMBLE_LEN + AP_CHUNK_HDR_LEN;
	     i++) {
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
		ap_say("%s: empty after 10 s: no program is writing it (record one with "
		       "allocprof record --live)",
		       path);
		return AP_EXIT_FAIL;
	}
	if (ap_follow_open(path, &f, &err) < 0) {
		ap_print_error(&err);
		return AP_EXIT_FAIL;
	}
	if (ap_follow_limit(f) == UINT64_MAX) {
		/* finished: nothing to follow, opened as any trace */
		ap_follow_close(f);
		return 0;
	}
	struct tui_follow *F = ap_xcalloc(1, sizeof(*F));
	F->f = f;
	F->path = ap_xstrdup(path);
	F->program_output = program_output;
	F->symo = o->sym;
	pthread_mutex_init(&F->mu, NULL);
	pthread_mutex_init(&F->wmu, NULL);
	pthread_cond_init(&F->wcv, NULL);
	struct ap_trace *t = ap_follow_trace(f);
	F->V = ap_values_run_new(t);
	F->c = ap_values_run_consumer(F->V);
	F->run = ap_replay_start(t, &F->c, 1);
	v->trace = t;
	v->sym = ap_sym_new(t, &o->sym, &err);
	if (!v->sym || feed(F, &err) < 0 ||
	    !(v->values = values_now(F, false, &F->ui_nvalues, &err)))
		goto fail;
	F->events = F->fed;
	F->upto_ns = F->fed_upto;
	F->maps_seen = ap_follow_maps_changed(f);
	F->no_buffers = !ap_follow_has_buffers(f);
	F->updated_at = mono_ns();
	if (!o->no_suppressions || o->suppressions) {
		F->supp = ap_suppress_new(o->suppressions, !o->no_suppressions, &err);
		if (!F->supp)
			goto fail;
		ap_suppress_values(F->supp, t, v->sym, v->values, &v->suppressed);
	}
	*out = F;
	return 0;
fail:
	ap_print_error(&err);
	v->trace = NULL; /* the follower's */
	ap_view_release(v);
	tui_follow_free(F);
	return AP_EXIT_FAIL;
}

void tui_follow_start(struct tui *t)
{
	struct tui_follow *F = t->follow;
	ap_advise_options_init(&F->ao);
	F->have_costs = tui_load_costs(t) == 0;
	F->ao.costs = &t->costs;
	F->nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	F->started = pthread_create(&F->th, NULL, follow_main, F) == 0;
	if (!F->started)
		tui_set_status(t, "following: cannot start a thread: %s", strerror(errno));
}

/* Top's model made again (from the new values, or with a new
 * symbolizer), quietly: it happens every second. */
static void remake_top(struct tui *t)
{
	tui_busy_fn busy = t->busy;
	t->busy = NULL;
	tui_rebuild(t, true); /* (the models made so far go) */
	t->busy = busy;
}

/* The browser's values as long as the trace's stacks (which the follower
 * adds to): the new ones have no values yet. */
static void values_fit(struct tui *t)
{
	struct tui_follow *F = t->follow;
	size_t ns = t->v->trace->nstacks;
	if (ns <= F->ui_nvalues)
		return;
	t->v->values = ap_xrealloc(t->v->values, ns * sizeof(*t->v->values));
	memset(t->v->values + F->ui_nvalues, 0, (ns - F->ui_nvalues) * sizeof(*t->v->values));
	F->ui_nvalues = ns;
}

void tui_follow_lock(struct tui *t)
{
	struct tui_follow *F = t->follow;
	pthread_mutex_lock(&F->mu);
	values_fit(t);
	uint64_t maps = ap_follow_maps_changed(F->f);
	if (maps == F->maps_seen)
		return;
	/* a dlopen moved the mappings: the symbolizer made again, and what
	 * was made with it (top's models) */
	struct ap_error err;
	struct ap_symbolizer *s = ap_sym_new(t->v->trace, &F->symo, &err);
	if (!s) {
		tui_set_status(t, "%s", err.msg);
		return;
	}
	retire(F, t->v->sym);
	t->v->sym = s;
	F->maps_seen = maps;
	remake_top(t);
}

void tui_follow_unlock(struct tui *t)
{
	pthread_mutex_unlock(&t->follow->mu);
}

/* A view waited for opens where it was asked for (top or the call pages). */
static bool asked_here(const struct tui *t)
{
	enum tui_view_kind k = tui_view_of(t);
	return k == TUI_VIEW_TOP || k == TUI_VIEW_PEEK;
}

bool tui_follow_poll(struct tui *t)
{
	struct tui_follow *F = t->follow;
	F->nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	if (F->gen == F->gen_taken)
		return false;
	F->gen_taken = F->gen;
	if (F->failed && !t->failed)
		tui_replay_failed(t, &F->err);
	if (F->values) {
		free(t->v->values);
		t->v->values = F->values;
		F->ui_nvalues = F->nvalues;
		F->values = NULL;
		values_fit(t);
		if (F->supp)
			ap_suppress_values(F->supp, t->v->trace, t->v->sym, t->v->values,
					   &t->v->suppressed);
		remake_top(t);
	}
	if (F->timeline) {
		tui_timeline_free(t->timeline);
		t->timeline = F->timeline;
		F->timeline = NULL;
		F->tl_age = 0;
		if (tui_view_of(t) == TUI_VIEW_TIMELINE)
			tui_timeline_refresh(t);
		else if (t->waiting && t->wait_for == TUI_VIEW_TIMELINE && asked_here(t))
			tui_open_timeline(t);
	}
	if (F->advice) {
		ap_advice_free(t->advice);
		t->advice = F->advice;
		F->advice = NULL;
		if (t->advise_pos.cur >= t->advice->nsites)
			t->advise_pos.cur = t->advice->nsites ? t->advice->nsites - 1 : 0;
		if (t->waiting && t->wait_for == TUI_VIEW_ADVISE && asked_here(t))
			tui_open_advise(t);
	}
	return true;
}

bool tui_follow_wait(struct tui *t, enum tui_view_kind k)
{
	struct tui_follow *F = t->follow;
	bool have = k == TUI_VIEW_ADVISE ? t->advice != NULL : t->timeline != NULL;
	if (k == TUI_VIEW_ADVISE)
		F->want_advice = true;
	else
		F->want_timeline = true;
	F->nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	if (have || F->ended || F->failed) {
		t->waiting = false;
		return false;
	}
	t->waiting = true;
	t->wait_for = k;
	tui_set_status(t, "%s comes with the next update (a replay of the trace so far); the "
			  "other views work meanwhile",
		       k == TUI_VIEW_ADVISE ? "the advisor's model" : "the timeline");
	return true;
}

bool tui_follow_ended(const struct tui *t)
{
	return t->follow->ended || t->follow->failed || !t->follow->started;
}

void tui_follow_status(const struct tui *t, char *buf, size_t len)
{
	const struct tui_follow *F = t->follow;
	const struct ap_trace *tr = t->v->trace;
	char what[320];
	if (F->ended && F->gone) {
		snprintf(what, sizeof(what), "the recording stopped at %.1fs without ending the trace "
			 "(killed?): final as far as the file goes",
			 (double)(ap_trace_end_ns(tr) - tr->start_ns) / 1e9);
	} else if (F->ended) {
		char how[64] = "";
		/* (reasons 2 and 4: the status is the signal's number) */
		if (tr->end_status_known)
			snprintf(how, sizeof(how),
				 tr->end_reason == AP_END_KILLED   ? ", killed by signal %llu"
				 : tr->end_reason == AP_END_SIGNAL ? ", by signal %llu"
								   : ", exit status %llu",
				 (unsigned long long)tr->end_status);
		char kids[160] = "";
		if (F->children)
			snprintf(kids, sizeof(kids),
				 " for its process alone (%zu child trace%s: allocprof top reads "
				 "the whole run)",
				 F->children, F->children > 1 ? "s" : "");
		snprintf(what, sizeof(what), "program ended at %.1fs%s: final%s",
			 (double)(ap_trace_end_ns(tr) - tr->start_ns) / 1e9, how, kids);
	} else if (F->no_buffers) {
		snprintf(what, sizeof(what),
			 "following (no buffers file: the events come when the program ends)");
	} else {
		double ago = (double)(mono_ns() - F->updated_at) / 1e9;
		snprintf(what, sizeof(what), "following: %.1fs of the run, %llu events, updated %.0fs ago",
			 (double)F->upto_ns / 1e9, (unsigned long long)F->events, ago < 0 ? 0 : ago);
	}
	snprintf(buf, len, "%s%s%s | ", what, F->program_output ? "; its output: " : "",
		 F->program_output ? F->program_output : "");
}

void tui_follow_stop(struct tui *t)
{
	struct tui_follow *F = t->follow;
	if (!F || !F->started)
		return;
	pthread_mutex_lock(&F->wmu);
	F->stop = true;
	pthread_cond_signal(&F->wcv);
	pthread_mutex_unlock(&F->wmu);
	/* (a replay under way ends at its next batch) */
	ap_events_stop(ap_follow_trace(F->f));
	pthread_join(F->th, NULL);
	F->started = false;
}

void tui_follow_free(struct tui_follow *F)
{
	if (!F)
		return;
	free(F->values);
	tui_timeline_free(F->timeline);
	ap_advice_free(F->advice);
	ap_replay_abandon(F->run);
	ap_values_run_free(F->V);
	ap_sym_free(F->wsym);
	for (size_t i = 0; i < F->nretired; i++)
		ap_sym_free(F->retired[i]);
	free(F->retired);
	ap_suppress_free(F->supp);
	ap_follow_close(F->f);
	pthread_mutex_destroy(&F->mu);
	pthread_mutex_destroy(&F->wmu);
	pthread_cond_destroy(&F->wcv);
	free(F->path);
	free(F);
}
