/* Iterating over a trace's events (ap_trace.h, "The events"): the one
 * front for every source, the events of a trace built in memory included,
 * and the progress reports. */
#include "ap_trace.h"
#include "trace-int.h"

#include <stdlib.h>
#include <string.h>

struct ap_events {
	const struct ap_trace *t;
	void *state;	/* the source's iteration; NULL: t->ev */
	size_t pos;	/* t->ev: the next one */
	uint64_t done, next_report;
	bool reported_end;
	bool failed; /* err holds why (ap_events_error) */
	struct ap_error err;
};

/* Events between progress reports. */
#define PROGRESS_EVERY (1u << 20)

struct ap_events *ap_events_open(const struct ap_trace *t)
{
	struct ap_events *it = ap_xcalloc(1, sizeof(*it));
	it->t = t;
	if (!t->ev && t->src)
		it->state = t->src->ops->open(t->src);
	it->next_report = PROGRESS_EVERY;
	return it;
}

ssize_t ap_events_next(struct ap_events *it, const struct ap_event **out)
{
	const struct ap_trace *t = it->t;
	size_t n = 0;
	if (it->failed)
		return -1;
	if (__atomic_load_n(&t->events_stop, __ATOMIC_RELAXED)) {
		/* stopped: no more */
	} else if (it->state) {
		ssize_t got = t->src->ops->next(it->state, out, &it->err);
		if (got < 0) {
			it->failed = true;
			return -1;
		}
		n = (size_t)got;
	} else if (t->ev && it->pos < t->nev) {
		n = t->nev - it->pos < AP_EVENTS_BATCH ? t->nev - it->pos : AP_EVENTS_BATCH;
		*out = t->ev + it->pos;
		it->pos += n;
	}
	it->done += n;
	if (t->events_progress) {
		if (n && it->done >= it->next_report) {
			t->events_progress(t->events_progress_ctx, it->done, t->nev);
			it->next_report = it->done + PROGRESS_EVERY;
		} else if (!n && !it->reported_end) {
			it->reported_end = true;
			t->events_progress(t->events_progress_ctx, t->nev, t->nev);
		}
	}
	return (ssize_t)n;
}

const char *ap_events_error(const struct ap_events *it)
{
	return it->failed ? it->err.msg : NULL;
}

void ap_events_close(struct ap_events *it)
{
	if (!it)
		return;
	if (it->state)
		it->t->src->ops->close(it->state);
	free(it);
}

void ap_events_stop(struct ap_trace *t)
{
	__atomic_store_n(&t->events_stop, 1, __ATOMIC_RELAXED);
}

void ap_events_progress(struct ap_trace *t, ap_progress_fn fn, void *ctx)
{
	t->events_progress = fn;
	t->events_progress_ctx = ctx;
}

int ap_trace_load_events(struct ap_trace *t, struct ap_error *err)
{
	if (!t || t->ev)
		return 0;
	struct ap_event *ev = ap_xmalloc((t->nev ? t->nev : 1) * sizeof(*ev));
	size_t n = 0;
	ssize_t k;
	const struct ap_event *batch;
	struct ap_events *it = ap_events_open(t);
	while ((k = ap_events_next(it, &batch)) > 0 && n + (size_t)k <= t->nev) {
		memcpy(ev + n, batch, (size_t)k * sizeof(*ev));
		n += (size_t)k;
	}
	if (k < 0) {
		ap_error_set(err, "%s", ap_events_error(it));
		ap_events_close(it);
		free(ev);
		return -1;
	}
	ap_events_close(it);
	t->ev = ev;
	t->nev = n;
	return 0;
}
