/* tickwheel: an idle daemon's timer wheel. The loop sleeps until the next
 * 1 ms tick (clock_nanosleep on an absolute time, as a daemon's event
 * loop does), then: a few new timers (0-7 a tick: connection timeouts,
 * retransmits, keepalives), each a malloc'd event of 64-224 bytes (the
 * callback's kind, its due tick, a name copied inline) hashed into a
 * wheel of 256 slots 5-1,500 ticks ahead; half of the timers a tick
 * cancels (the connection answered in time: a random live timer
 * unlinked and freed); then the slot of the tick, whose due timers fire
 * (a log line formatted, a counter) and are freed, the others left for a
 * later turn of the wheel. A few hundred timers live at a time; the CPU
 * time is a few milliseconds in a second of sleeping.
 * Unlike idle.c (a 1 ms sleep, then four 64 KiB buffers) and tickserv.c
 * (bursts of 8-64 KiB responses), the blocks are small and live for
 * hundreds of ticks, among others that do.
 * Twin: the events come from a vpool, all of 224 bytes. */
// site: timer_new
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "twin.h"

#define SLOTS 256
#define EVMAX 224

struct timer {
	struct timer *next, **pprev;	/* the slot's list */
	struct timer *lnext, **lpprev;	/* every live timer, for cancels */
	uint64_t due;
	unsigned kind, size;
	char name[];
};

static struct timer *wheel[SLOTS];
static struct timer *live;
static unsigned nlive;

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static struct timer *timer_new(size_t n)
{
#ifdef TWIN
	struct timer *t = tw_get(&pool, EVMAX);
#else
	struct timer *t = malloc(n);
#endif
	TW_ALLOC(n);
	if (!t)
		abort();
	t->size = (unsigned)n;
	return t;
}

TW_SITE static void timer_free(struct timer *t)
{
	TW_FREE(t->size);
#ifdef TWIN
	vpool_put(&pool, t);
#else
	free(t);
#endif
}

static void unlink_timer(struct timer *t)
{
	if (t->next)
		t->next->pprev = t->pprev;
	*t->pprev = t->next;
	if (t->lnext)
		t->lnext->lpprev = t->lpprev;
	*t->lpprev = t->lnext;
	nlive--;
}

static const char *const kinds[] = { "conn-timeout", "retransmit", "keepalive", "lease-renew" };

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 1000;
	uint64_t rng = 0x7177e2fee1deadULL, sum = 0, fired = 0, cancelled = 0;
	char line[256];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (uint64_t now = 0; now < (uint64_t)ticks; now++) {
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL))
			;
		/* new timers */
		unsigned add = (unsigned)(tw_rand(&rng) % 8);
		for (unsigned i = 0; i < add; i++) {
			uint64_t r = tw_rand(&rng);
			size_t namelen = 16 + (size_t)(r % 161);
			struct timer *t = timer_new(sizeof(struct timer) + namelen);
			t->kind = (unsigned)(r >> 8) % 4;
			t->due = now + 5 + (r >> 16) % 1496;
			int k = snprintf(t->name, namelen, "%s:%llu:", kinds[t->kind], (unsigned long long)(r >> 32));
			if ((size_t)k < namelen - 1)
				memset(t->name + k, 'a' + (int)(r % 26), namelen - (size_t)k - 1);
			t->name[namelen - 1] = 0;
			struct timer **slot = &wheel[t->due % SLOTS];
			t->next = *slot;
			if (t->next)
				t->next->pprev = &t->next;
			t->pprev = slot;
			*slot = t;
			t->lnext = live;
			if (live)
				live->lpprev = &t->lnext;
			t->lpprev = &live;
			live = t;
			nlive++;
		}
		/* cancels: about half as many as were added */
		unsigned cancel = add / 2 + (unsigned)(tw_rand(&rng) & 1);
		for (unsigned i = 0; i < cancel && nlive; i++) {
			unsigned skip = (unsigned)(tw_rand(&rng) % nlive);
			if (skip > 64)
				skip %= 64;
			struct timer *t = live;
			while (skip--)
				t = t->lnext;
			unlink_timer(t);
			sum = tw_mix(sum, t->due);
			cancelled++;
			timer_free(t);
		}
		/* the tick's slot */
		for (struct timer *t = wheel[now % SLOTS], *nx; t; t = nx) {
			nx = t->next;
			if (t->due != now)
				continue;
			unlink_timer(t);
			int n = snprintf(line, sizeof(line), "tick %llu fired %s (%u)", (unsigned long long)now,
					 t->name, t->kind);
			for (int k = 0; k < n; k += 8)
				sum = tw_mix(sum, (unsigned char)line[k]);
			fired++;
			timer_free(t);
		}
	}
	while (live) {
		struct timer *t = live;
		unlink_timer(t);
		timer_free(t);
	}
	printf("tickwheel %ld ticks fired %llu cancelled %llu checksum %016llx\n", ticks,
	       (unsigned long long)fired, (unsigned long long)cancelled, (unsigned long long)sum);
	return 0;
}
