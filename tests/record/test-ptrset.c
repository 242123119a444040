/* tests/record/test-ptrset: the sampler's pointer set (sampler/ptrset.c)
 * stays exact when a signal handler works on it in the middle of one of
 * its thread's own operations, rehashes included (issue 24: no signal
 * mask around the set any more). The main loop inserts and removes keys
 * of its own while a profiling timer's handler, at a high rate, inserts
 * and removes keys of another range on the same set; both sides keep a
 * model. The handler's keys are also made to go in bursts longer than the
 * rehash journal every other time, so that a copy is redone. At the end every key of both
 * models is looked up: present exactly when the model says so, and the
 * set's count and filter agree. Exit 0 and a summary line, or 1 and what
 * differed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "../../sampler/ptrset.c"

struct ap_settings settings;
void boot_mark_filter(void)
{
}

#define MAIN_KEYS 200000
#define HANDLER_KEYS 4096
#define BURST (PS_JOURNAL + 8)

static struct ptr_set set = { .tab = &tracked_tab0, .filter = ap_filter };
static unsigned char main_in[MAIN_KEYS], handler_in[HANDLER_KEYS];
static volatile unsigned long hits, nested_seen, rehash_seen;
static unsigned handler_next;

static uint64_t main_key(unsigned i)
{
	return 0x10000000ull + (uint64_t)i * 16;
}

static uint64_t handler_key(unsigned i)
{
	return 0x90000000ull + (uint64_t)i * 16;
}

static void on_prof(int s)
{
	(void)s;
	if (__atomic_load_n(&set.lock, __ATOMIC_RELAXED) == (int)lock_id)
		nested_seen++;
	if (__atomic_load_n(&set.rehashing, __ATOMIC_RELAXED))
		rehash_seen++;
	/* bursts that fit the journal and bursts that overflow it, in turn */
	int burst = hits % 2 ? 3 : BURST;
	for (int b = 0; b < burst; b++) {
		unsigned i = handler_next++ % HANDLER_KEYS;
		void *p = (void *)(uintptr_t)handler_key(i);
		if (handler_in[i]) {
			if (!ps_remove(&set, p))
				abort(); /* reported below as a difference too */
			handler_in[i] = 0;
		} else {
			ps_insert(&set, p);
			handler_in[i] = 1;
		}
	}
	hits++;
}

/* 1 if p is in the set (removed and put back). */
static int present(void *p)
{
	if (!ps_remove(&set, p))
		return 0;
	ps_insert(&set, p);
	return 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_prof, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_PROF, &it, NULL);
	uint64_t x = 88172645463325252ull;
	unsigned long ops = 0;
	for (int round = 0; round < 12; round++) {
		/* grow to many keys (rehashes), then thin out at random */
		for (unsigned i = 0; i < MAIN_KEYS; i++) {
			if (!main_in[i]) {
				ps_insert(&set, (void *)(uintptr_t)main_key(i));
				main_in[i] = 1;
				ops++;
			}
		}
		for (unsigned k = 0; k < MAIN_KEYS; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			unsigned i = (unsigned)(x % MAIN_KEYS);
			if (main_in[i]) {
				if (!ps_remove(&set, (void *)(uintptr_t)main_key(i))) {
					printf("main key %u: not found while the model has it\n", i);
					return 1;
				}
				main_in[i] = 0;
				ops++;
			}
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	size_t want = 0;
	for (unsigned i = 0; i < MAIN_KEYS; i++) {
		want += main_in[i];
		if (present((void *)(uintptr_t)main_key(i)) != main_in[i]) {
			printf("main key %u: present %d, model %d\n", i, !main_in[i], main_in[i]);
			return 1;
		}
		if (main_in[i] && !ap_filter[filter_slot((void *)(uintptr_t)main_key(i))]) {
			printf("main key %u: its filter slot is 0\n", i);
			return 1;
		}
	}
	for (unsigned i = 0; i < HANDLER_KEYS; i++) {
		want += handler_in[i];
		if (present((void *)(uintptr_t)handler_key(i)) != handler_in[i]) {
			printf("handler key %u: present %d, model %d\n", i, !handler_in[i],
			       handler_in[i]);
			return 1;
		}
	}
	if (set.count != want) {
		printf("count %zu, model %zu\n", set.count, want);
		return 1;
	}
	if (nested_seen < 10) {
		printf("only %lu of %lu signals came inside an operation: not tested\n",
		       nested_seen, hits);
		return 77;
	}
	printf("%lu operations, %lu signals (%lu inside an operation, %lu of them in a "
	       "rehash; 3 or %lu keys each), %zu keys at the end: the set is exact\n",
	       ops, hits, nested_seen, rehash_seen, (unsigned long)BURST, want);
	return 0;
}
