/* Following a trace as it is written (trace/ap_trace_follow.h, the merge
 * going on in order.c, ap_replay_start/feed/finish and ap_values_run): a
 * trace of three threads (one that starts late), freeing one another's
 * blocks within shared quanta, is written to a file in three parts, the
 * buffers file saying where the threads are in the first two. After each
 * part the events handed out are exactly the first ones of the whole
 * trace's merge, up to the limit and no further; at the end they are all
 * of them, in the same order, and the values of the replay fed part by
 * part equal those of one replay of the finished trace. */
#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ap_check.h"
#include "ap_replay.h"
#include "ap_report.h"
#include "ap_trace.h"
#include "ap_trace_buffers.h"
#include "ap_trace_follow.h"
#include "ap_trace_writer.h"

#define QUANTUM 10000u
#define NADDR 64

static void write_at(const char *path, const uint8_t *data, size_t len, bool append)
{
	int fd = open(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
	CHECK(fd >= 0, "open %s", path);
	CHECK(write(fd, data, len) == (ssize_t)len, "write %s", path);
	close(fd);
}

/* A buffers file with one thread buffer that holds records from time ts
 * on (its first record the SYNC the sampler opens a buffer with). */
static void write_buffers(const char *path, uint64_t ts)
{
	static uint8_t file[2 * AP_BUFFERS_PAGE];
	memset(file, 0, sizeof(file));
	struct ap_buffers_head h = {.version = AP_BUFFERS_VERSION, .pid = (uint32_t)getpid()};
	memcpy(h.magic, AP_BUFFERS_MAGIC, sizeof(h.magic));
	memcpy(file, &h, sizeof(h));
	uint8_t *rec = file + AP_BUFFERS_PAGE + AP_SLOT_HDR + AP_CHUNK_HDR_LEN;
	rec[0] = AP_EV_SYNC;
	size_t n = 1 + ap_put_uv(rec + 1, ts / QUANTUM);
	struct ap_slot s = {.magic = AP_SLOT_MAGIC, .type = AP_CHUNK_EVENTS,
			    .size = AP_BUFFERS_PAGE, .tid = 11, .stream = 2, .index = 1,
			    .len = AP_CHUNK_HDR_LEN + n};
	memcpy(file + AP_BUFFERS_PAGE, &s, sizeof(s));
	write_at(path, file, sizeof(file), false);
}

struct fed {
	struct ap_event *ev;
	size_t n, alloc;
};

/* Every event the follower hands out now, into `all` and the replay. */
static void drain(struct ap_follow *f, struct ap_replay_run *run, struct fed *all)
{
	const struct ap_event *ev;
	ssize_t got;
	struct ap_error err;
	while ((got = ap_follow_next(f, &ev, &err)) > 0) {
		AP_ALLOC_GROW(all->ev, all->n + (size_t)got, all->alloc);
		memcpy(all->ev + all->n, ev, (size_t)got * sizeof(*ev));
		all->n += (size_t)got;
		CHECK(ap_replay_feed(run, ev, (size_t)got, &err) == 0, "feed: %s", err.msg);
	}
	CHECK(got == 0, "follow next: %s", err.msg);
}

/* Field by field: the struct has padding. */
static bool same_event(const struct ap_event *a, const struct ap_event *b)
{
	return a->ts == b->ts && a->addr == b->addr && a->size == b->size &&
	       a->stack == b->stack && a->thread == b->thread && a->cpu == b->cpu &&
	       a->type == b->type && a->kind == b->kind && a->flags == b->flags &&
	       a->gap == b->gap;
}

/* The events handed out so far are the whole merge's first ones, those
 * before `limit` and only those. */
static void check_prefix(const struct fed *all, const struct ap_trace *whole, uint64_t limit,
			 const char *when)
{
	size_t want = 0;
	while (want < whole->nev && whole->ev[want].ts < limit)
		want++;
	CHECK(all->n == want, "%s: %zu events handed out, want %zu (of %zu)", when, all->n, want,
	      whole->nev);
	for (size_t i = 0; i < all->n && i < want; i++)
		if (!same_event(&all->ev[i], &whole->ev[i])) {
			CHECK(0, "%s: event %zu differs (ts %llu addr %#llx, want ts %llu addr %#llx)",
			      when, i, (unsigned long long)all->ev[i].ts,
			      (unsigned long long)all->ev[i].addr,
			      (unsigned long long)whole->ev[i].ts,
			      (unsigned long long)whole->ev[i].addr);
			break;
		}
}

/* The trace (*data, *len), where its first two parts end (cut) and the
 * limits the buffers file says after each. */
static void make_trace(uint8_t **data, size_t *len, size_t cut[2], uint64_t limit[2])
{
	struct ap_tw_header h;
	ap_tw_header_init(&h);
	h.time_quantum_ns = QUANTUM;
	struct ap_tw *tw = ap_tw_new(&h);
	ap_tw_set_chunk_size(tw, 256);
	uint32_t st[5];
	for (unsigned i = 0; i < 5; i++) {
		uint64_t pcs[] = {0x401000 + 16 * i, 0x402000};
		st[i] = ap_tw_stack(tw, pcs, 2);
	}
	ap_tw_thread(tw, 10, "one");
	ap_tw_thread(tw, 11, "two");
	uint64_t state = 0x9e3779b97f4a7c15ull, ts = h.start_ns;
	bool live[NADDR] = {false};
	const int steps = 6000, cut_at[2] = {2000, 4000};
	uint32_t tid = 10;
	for (int i = 0; i < steps; i++) {
		for (int c = 0; c < 2; c++)
			if (i == cut_at[c]) {
				/* a part ends: every buffer written; the limit a
				 * little before, so that the part holds events the
				 * merge must keep for later */
				ap_tw_flush(tw);
				cut[c] = ap_tw_size(tw);
				limit[c] = ts - 5 * QUANTUM;
				limit[c] -= limit[c] % QUANTUM;
			}
		if (i == cut_at[0])
			ap_tw_thread(tw, 12, "late");
		ts += ap_test_next(&state) % 3000;
		/* each thread runs a while (a turn of the merge's), then another */
		uint32_t nthreads = i < cut_at[0] ? 2 : 3;
		if (ap_test_next(&state) % 8 == 0)
			tid = 10 + (uint32_t)(ap_test_next(&state) % nthreads);
		unsigned a = (unsigned)(ap_test_next(&state) % NADDR);
		uint64_t addr = 0x10000 + 0x100 * (uint64_t)a;
		uint64_t size = 8 + ap_test_next(&state) % 200;
		uint32_t s = st[ap_test_next(&state) % 5];
		if (!live[a]) {
			ap_tw_alloc(tw, tid, ts, 0, AP_KIND_MALLOC, addr, size, s);
			live[a] = true;
		} else if (ap_test_next(&state) % 4 == 0) {
			/* a realloc to a free address, by any thread */
			unsigned b = (unsigned)(ap_test_next(&state) % NADDR);
			if (live[b])
				continue;
			ap_tw_realloc(tw, tid, ts, 0, AP_KIND_REALLOC, addr, 0x10000 + 0x100 * (uint64_t)b,
				      size, s, AP_RF_NEW_SAMPLED | AP_RF_OLD_TRACKED);
			live[a] = false;
			live[b] = true;
		} else {
			ap_tw_free(tw, tid, ts, 0, addr);
			live[a] = false;
		}
	}
	struct ap_tw_end end = { .end_ns = ts + 1, .reason = AP_END_EXIT };
	ap_tw_end(tw, &end);
	struct ap_error err;
	CHECK(ap_tw_close_mem(tw, data, len, &err) == 0, "writer: %s", err.msg);
}

/* --write PATH MS: the trace written to PATH in its three parts, MS
 * milliseconds apart, as a program under record would write it (for
 * tests/tui/follow-batch.sh, which follows it). */
static int write_slowly(const char *path, long ms)
{
	uint8_t *data;
	size_t len, cut[2];
	uint64_t limit[2];
	char bpath[4096];
	snprintf(bpath, sizeof(bpath), "%s%s", path, AP_BUFFERS_SUFFIX);
	make_trace(&data, &len, cut, limit);
	struct timespec pause = {ms / 1000, ms % 1000 * 1000000};
	/* The buffers file first, mapped while this process writes, as the
	 * sampler's is for its process's life (record's drain appends what
	 * its ring holds): a trace with neither a buffers file nor a writer's
	 * lock is one finished or left, and a reader that found the first
	 * part before the buffers file read it so (tui --follow on a loaded
	 * machine: a truncated trace, or one finished a second time) */
	write_buffers(bpath, limit[0]);
	int bfd = open(bpath, O_RDONLY | O_CLOEXEC);
	void *map = bfd < 0 ? MAP_FAILED : mmap(NULL, 2 * AP_BUFFERS_PAGE, PROT_READ, MAP_SHARED, bfd, 0);
	CHECK(map != MAP_FAILED, "map %s", bpath);
	if (bfd >= 0)
		close(bfd);
	/* (as the sampler does: a chunk in the file, then its buffer empty) */
	write_at(path, data, cut[0], false);
	nanosleep(&pause, NULL);
	write_at(path, data + cut[0], cut[1] - cut[0], true);
	write_buffers(bpath, limit[1]);
	nanosleep(&pause, NULL);
	write_at(path, data + cut[1], len - cut[1], true);
	unlink(bpath);
	if (map != MAP_FAILED)
		munmap(map, 2 * AP_BUFFERS_PAGE);
	free(data);
	return failures != 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--write"))
		return write_slowly(argv[2], atol(argv[3]));
	char dir[] = "/tmp/ap-test-follow-XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	char path[256], bpath[300];
	snprintf(path, sizeof(path), "%s/t.trace", dir);
	snprintf(bpath, sizeof(bpath), "%s%s", path, AP_BUFFERS_SUFFIX);
	uint8_t *data;
	size_t len, cut[2];
	uint64_t limit[2];
	struct ap_error err;
	make_trace(&data, &len, cut, limit);

	/* the whole trace, merged and replayed at once */
	struct ap_trace *whole;
	CHECK(ap_trace_read_mem(data, len, "whole", &whole, &err) == 0, "read: %s", err.msg);
	CHECK(ap_trace_load_events(whole, &err) == 0, "events: %s", err.msg);
	struct ap_stack_values *want = ap_report_stack_values(whole, &err);
	CHECK(want != NULL, "values: %s", err.msg);

	/* part 1, then part 2: only the events before each limit */
	write_at(path, data, cut[0], false);
	write_buffers(bpath, limit[0]);
	struct ap_follow *f;
	CHECK(ap_follow_open(path, &f, &err) == 0, "follow: %s", err.msg);
	struct ap_trace *t = ap_follow_trace(f);
	CHECK(ap_follow_limit(f) == limit[0], "limit %llu, want %llu",
	      (unsigned long long)ap_follow_limit(f), (unsigned long long)limit[0]);
	struct ap_values_run *V = ap_values_run_new(t);
	struct ap_replay_consumer c = ap_values_run_consumer(V);
	struct ap_replay_run *run = ap_replay_start(t, &c, 1);
	struct fed all = {0};
	drain(f, run, &all);
	check_prefix(&all, whole, limit[0], "part 1");
	CHECK(t->nthreads == 2, "part 1: %zu threads", t->nthreads);

	write_at(path, data + cut[0], cut[1] - cut[0], true);
	write_buffers(bpath, limit[1]);
	CHECK(ap_follow_update(f, &err) == 0, "update 2: %s", err.msg);
	ap_values_run_grow(V);
	drain(f, run, &all);
	check_prefix(&all, whole, limit[1], "part 2");
	CHECK(t->nthreads == 3, "part 2: %zu threads", t->nthreads);
	struct ap_stack_values *now = ap_values_run_now(V);
	CHECK(now != NULL, "values now");
	free(now);

	/* the rest, the END, the buffers file gone: every event */
	write_at(path, data + cut[1], len - cut[1], true);
	unlink(bpath);
	CHECK(ap_follow_update(f, &err) == 1, "update 3: not ended (%s)", err.msg);
	ap_values_run_grow(V);
	drain(f, run, &all);
	check_prefix(&all, whole, UINT64_MAX, "the end");
	CHECK(ap_replay_finish(run, NULL, &err) == 0, "finish: %s", err.msg);
	struct ap_stack_values *got = ap_values_run_end(V);
	CHECK(t->nstacks == whole->nstacks, "%zu stacks, want %zu", t->nstacks, whole->nstacks);
	for (size_t s = 0; s < whole->nstacks && got && want; s++)
		for (int k = 0; k < AP_SI_COUNT; k++)
			CHECK(got[s].v[k] == want[s].v[k], "stack %zu value %d: %g, want %g", s, k,
			      got[s].v[k], want[s].v[k]);

	free(got);
	free(want);
	free(all.ev);
	ap_follow_close(f);
	ap_trace_free(whole);
	free(data);
	unlink(path);
	rmdir(dir);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
