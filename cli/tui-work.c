/* The work `allocprof tui` does while the user browses: the timeline's
 * and the advisor's replays on a thread of their own, and a timeline of a
 * new width. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui-int.h"

/* ---- the work done while the user browses -------------------------------
 *
 * On a long trace the advisor's and the timeline's replays take seconds.
 * A worker thread runs them from the start (tui_start_work): `a` and `T`
 * then open at once, or, asked for before their work is done, open when
 * it is, while the other views stay usable. The worker reads only the
 * trace, the site maps and the cost table, made before it starts (the
 * symbolizer is not thread-safe); what it makes is taken over under the
 * lock by tui_poll. */
struct tui_work {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ap_trace *trace;
	struct ap_trace *adv_trace; /* what the advisor advises (tui_advised) */
	struct ap_site_map sites;
	struct ap_advise_options ao;
	struct ap_view_measure measure;
	struct tui_timeline *timeline; /* sites chosen; T made by the worker */
	size_t nb;
	bool have_costs, joined;
	/* under mu */
	bool advice_done, timeline_done;
	bool timeline_failed; /* then timeline_err says why */
	struct ap_error timeline_err;
	struct ap_advice *advice;
	struct ap_error err;
	/* the replay running now: events done of total, and how many
	 * replays began before it (the advisor may replay more than once) */
	uint64_t done, total, passes;
	bool advice_taken, timeline_taken;
	int wait_depth;	/* t->depth when the view waited for was asked for */
};

static void work_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct tui_work *w = ctx;
	if (done < __atomic_load_n(&w->done, __ATOMIC_RELAXED))
		__atomic_fetch_add(&w->passes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->total, total, __ATOMIC_RELAXED);
	__atomic_store_n(&w->done, done, __ATOMIC_RELAXED);
}

static void *work_main(void *arg)
{
	struct tui_work *w = arg;
	/* the timeline first: one replay, where the advisor may make several */
	struct ap_error tl_err;
	bool tl_failed = ap_timeline_init(&w->timeline->T, w->trace, &w->timeline->sites, w->nb,
					  false, &tl_err) < 0;
	pthread_mutex_lock(&w->mu);
	w->timeline_done = true;
	w->timeline_failed = tl_failed;
	if (tl_failed)
		w->timeline_err = tl_err;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	struct ap_error err = {{0}};
	struct ap_advice *a = NULL;
	/* (a failed replay fails again: the advisor's would) */
	if (tl_failed)
		err = tl_err;
	else if (w->have_costs)
		a = ap_advise_run(w->adv_trace, &w->sites, &w->ao, &err);
	if (a)
		ap_view_measure_run(&w->measure, a, w->adv_trace, &w->sites, &w->ao);
	pthread_mutex_lock(&w->mu);
	w->advice = a;
	w->err = err;
	w->advice_done = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

void tui_start_work(struct tui *t)
{
	/* (following, once the trace has ended: nothing writes it any more) */
	if (t->work || (t->follow && !tui_follow_ended(t)))
		return;
	struct tui_work *w = ap_xcalloc(1, sizeof(*w));
	w->trace = t->v->trace;
	tui_busy(t, "finding the call sites");
	/* (neither: the advice is not made, and `a` says why) */
	w->have_costs = tui_load_costs(t) == 0 && tui_advised(t) == 0;
	w->adv_trace = t->adv ? t->adv->trace : w->trace;
	ap_advise_options_init(&w->ao);
	w->ao.costs = &t->costs;
	w->measure = t->o.measure;
	ap_advise_sites(w->adv_trace, t->adv ? t->adv->sym : t->v->sym, false, &w->sites);
	w->timeline = ap_xcalloc(1, sizeof(*w->timeline));
	ap_timeline_sites_init(&w->timeline->sites, t->v, TIMELINE_SITES);
	/* as timeline_refresh sizes it */
	w->nb = t->cols > 33 ? (size_t)t->cols - 23 : 10;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	ap_events_progress(w->trace, work_progress, w);
	if (w->adv_trace != w->trace)
		ap_events_progress(w->adv_trace, work_progress, w);
	if (pthread_create(&w->th, NULL, work_main, w) != 0) {
		/* no thread: the views are made when asked for, as without */
		ap_events_progress(w->trace, NULL, NULL);
		ap_events_progress(w->adv_trace, NULL, NULL);
		ap_site_map_release(&w->sites);
		tui_timeline_free(w->timeline);
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return;
	}
	t->work = w;
}

static bool work_done_for(const struct tui_work *w, enum tui_view_kind k)
{
	return k == TUI_VIEW_ADVISE ? w->advice_done : w->timeline_done;
}

/* Before view k opens: true if it must wait for its work (then it opens
 * from tui_poll). */
bool tui_work_wait(struct tui *t, enum tui_view_kind k)
{
	struct tui_work *w = t->work;
	if (!w)
		return false;
	tui_poll(t, false, NULL);
	pthread_mutex_lock(&w->mu);
	bool done = work_done_for(w, k);
	pthread_mutex_unlock(&w->mu);
	if (done)
		return false;
	t->waiting = true;
	t->wait_for = k;
	w->wait_depth = t->depth;
	return true;
}

bool tui_poll(struct tui *t, bool block, bool *pending)
{
	bool followed = false;
	if (t->follow) {
		followed = tui_follow_poll(t);
		if (!tui_follow_ended(t)) {
			/* (wake now and then: the status line says how old it is) */
			if (pending)
				*pending = true;
			return followed;
		}
		/* ended: the views not made yet are made as for any finished
		 * trace, by the work thread */
		tui_start_work(t);
	}
	struct tui_work *w = t->work;
	if (pending)
		*pending = false;
	if (!w)
		return followed;
	bool changed = tui_tljob_poll(t, block) || followed;
	if (t->tljob && tui_view_of(t) == TUI_VIEW_TIMELINE && !t->waiting) {
		tui_set_status(t, "%s", TLJOB_STATUS);
		changed = true;
	}
	pthread_mutex_lock(&w->mu);
	while (block && t->waiting && !work_done_for(w, t->wait_for))
		pthread_cond_wait(&w->cv, &w->mu);
	if (w->advice_done && !w->advice_taken) {
		w->advice_taken = true;
		if (!t->advice)
			t->advice = w->advice;
		else
			ap_advice_free(w->advice);
		if (!w->advice && w->have_costs)
			tui_replay_failed(t, &w->err);
		w->advice = NULL;
	}
	if (w->timeline_done && !w->timeline_taken) {
		w->timeline_taken = true;
		if (w->timeline_failed)
			tui_replay_failed(t, &w->timeline_err);
		if (!t->timeline && !w->timeline_failed)
			t->timeline = w->timeline;
		else
			tui_timeline_free(w->timeline);
		w->timeline = NULL;
	}
	bool running = !(w->advice_done && w->timeline_done);
	bool ready = t->waiting && work_done_for(w, t->wait_for);
	pthread_mutex_unlock(&w->mu);
	if (!running && !w->joined) {
		pthread_join(w->th, NULL);
		w->joined = true;
		/* the progress function stays: a resize's job may be reading it
		 * (it goes with the work, in work_release) */
	}
	if (ready) {
		t->waiting = false;
		t->status[0] = 0;
		/* opened from where it was asked for, else only made */
		if (t->depth == w->wait_depth) {
			if (t->wait_for == TUI_VIEW_ADVISE)
				tui_open_advise(t);
			else
				tui_open_timeline(t);
		}
		changed = true;
	} else if (t->waiting) {
		uint64_t done = __atomic_load_n(&w->done, __ATOMIC_RELAXED);
		uint64_t total = __atomic_load_n(&w->total, __ATOMIC_RELAXED);
		/* the timeline's is the first replay, the advisor's the rest */
		uint64_t pass = __atomic_load_n(&w->passes, __ATOMIC_RELAXED);
		char what[96] = "replaying the trace for the timeline";
		if (t->wait_for == TUI_VIEW_ADVISE) {
			if (pass < 1)
				snprintf(what, sizeof(what), "waiting for the timeline's replay");
			else
				snprintf(what, sizeof(what),
					 "replaying the trace through the pool model (pass %llu)",
					 (unsigned long long)pass);
		}
		tui_set_status(t, "%s: %d%% (it opens when done; the other views work meanwhile)",
			   what, total ? (int)(done * 100 / total) : 0);
		changed = true;
	}
	if (pending)
		*pending = running || t->tljob;
	return changed;
}

/* The timeline of a new width, replayed on a thread of its own (as the
 * worker's, from the trace and the chosen sites only) while the old one
 * stays shown; tui_poll takes it over. */
struct tui_tljob {
	pthread_t th;
	struct ap_trace *trace;
	const struct ap_timeline_sites *sites;
	struct ap_timeline T;
	size_t nb;
	bool failed; /* then err says why */
	struct ap_error err;
	int done; /* atomic */
};

static void *tljob_main(void *arg)
{
	struct tui_tljob *j = arg;
	j->failed = ap_timeline_init(&j->T, j->trace, j->sites, j->nb, false, &j->err) < 0;
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Makes the timeline of width nb on a thread; false if it cannot (then
 * the caller makes it). One running for another width is let finish:
 * tui_poll then starts the width wanted. */
bool tui_tljob_start(struct tui *t, size_t nb)
{
	if (t->tljob)
		return true;
	struct tui_tljob *j = ap_xcalloc(1, sizeof(*j));
	j->trace = t->v->trace;
	j->sites = &t->timeline->sites;
	j->nb = nb;
	if (pthread_create(&j->th, NULL, tljob_main, j) != 0) {
		free(j);
		return false;
	}
	t->tljob = j;
	return true;
}

/* Takes over a finished timeline job (waits for it with `block`); true
 * if it did. */
bool tui_tljob_poll(struct tui *t, bool block)
{
	struct tui_tljob *j = t->tljob;
	if (!j || (!block && !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)))
		return false;
	pthread_join(j->th, NULL);
	if (!strcmp(t->status, TLJOB_STATUS))
		t->status[0] = 0;
	if (j->failed) {
		/* the old width stays shown */
		tui_replay_failed(t, &j->err);
		ap_timeline_release(&j->T);
		free(j);
		t->tljob = NULL;
		return true;
	}
	ap_timeline_release(&t->timeline->T);
	t->timeline->T = j->T;
	free(j);
	t->tljob = NULL;
	if (tui_view_of(t) == TUI_VIEW_TIMELINE)
		tui_timeline_refresh(t); /* draws it, or starts the width wanted now */
	return true;
}

void tui_work_release(struct tui *t)
{
	if (t->tljob) {
		ap_events_stop(t->tljob->trace);
		pthread_join(t->tljob->th, NULL);
		ap_timeline_release(&t->tljob->T);
		free(t->tljob);
		t->tljob = NULL;
	}
	struct tui_work *w = t->work;
	if (!w)
		return;
	if (!w->joined) {
		/* its results are not wanted: end its replay early */
		ap_events_stop(w->trace);
		ap_events_stop(w->adv_trace);
		pthread_join(w->th, NULL);
	}
	ap_events_progress(w->trace, NULL, NULL);
	ap_events_progress(w->adv_trace, NULL, NULL);
	ap_advice_free(w->advice);
	tui_timeline_free(w->timeline);
	ap_site_map_release(&w->sites);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
	t->work = NULL;
}
