/* buffer.c: the thread buffers and the META buffer. Each thread that
 * records gets a 64 KiB buffer (its own stream of EVENTS chunks); emit
 * appends one record, with the TIME or SYNC record the clock asks for;
 * buffers are written as chunks when full, when old, at thread exit and
 * in flush_all, the META chunk always first. The owner/flusher protocol
 * that lets the owner append without an atomic instruction is described
 * at own_enter. */
#include "sampler-int.h"

static double tsc_per_ns;	/* 0: read the clock on every event */

static uint64_t thr_seq;
struct ap_threads threads;
struct ap_meta meta;

/* A thread's buffer is written by its owner on every event, and by
 * another thread only in flush_all (exit, _exit, exec, fatal signals).
 * The owner announces itself with a plain store (busy) and a compiler
 * barrier; a flusher from outside takes the lock, raises claim and calls
 * membarrier(PRIVATE_EXPEDITED), which makes every running thread of the
 * process pass a full barrier: after it, either the flusher sees the owner
 * busy (and waits for it), or the owner sees the claim (and waits on the
 * lock the flusher holds). Without membarrier (old kernels, seccomp) every
 * access takes the lock: an xchg per event, ~7 % of the time of recording
 * every allocation of the 64-byte loop. */
static int asym;		/* membarrier is registered */

void asym_register(void)
{
	asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The owner enters its buffer; returns whether it took the lock. */
static inline int own_enter(struct ap_thr *b, int shared)
{
	if (LIKELY(asym && !shared)) {
		__atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (LIKELY(!__atomic_load_n(&b->claim, __ATOMIC_ACQUIRE)))
			return 0;
		__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
	}
	lk_lock(&b->lock);
	return 1;
}

static inline void own_leave(struct ap_thr *b, int locked)
{
	if (locked)
		lk_unlock(&b->lock);
	else
		__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
}

/* Another thread enters b (bounded waits in a signal handler, where the
 * interrupted code may be the owner). Returns 0 if it gave up. */
static int remote_enter(struct ap_thr *b, int sig)
{
	if (sig ? !lk_trylock_bounded(&b->lock) : (lk_lock(&b->lock), 0))
		return 0;
	if (!asym)
		return 1;
	__atomic_store_n(&b->claim, 1, __ATOMIC_RELAXED);
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST); /* cannot fail once registered */
	for (int i = 0; __atomic_load_n(&b->busy, __ATOMIC_ACQUIRE); i++) {
		if (sig && i >= 2000) {
			__atomic_store_n(&b->claim, 0, __ATOMIC_RELEASE);
			lk_unlock(&b->lock);
			return 0;
		}
		sched_yield();
	}
	return 1;
}

static void remote_leave(struct ap_thr *b)
{
	__atomic_store_n(&b->claim, 0, __ATOMIC_RELEASE);
	lk_unlock(&b->lock);
}

/* TSC ticks per ns, over 200 us of CLOCK_MONOTONIC at start. A TSC that
 * does not advance steadily only makes TIME records come late, never
 * wrong: the deadline is a hint, the time is the clock's. */
void tsc_calibrate(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = rd_tsc(), t1, c1;
	do {
		t1 = now_ns(CLOCK_MONOTONIC);
		c1 = rd_tsc();
	} while (t1 - t0 < 200000);
	double r = (double)(c1 - c0) / (double)(t1 - t0);
	tsc_per_ns = r > 0.05 && r < 100 ? r : 0;
}

/* Writes out the pending META records; meta.lock held. */
static void meta_flush_locked(void)
{
	if (!meta.len || tfile.fd < 0)
		return;
	uint8_t *payload = meta.buf + AP_CHUNK_HDR_LEN;
	ap_chunk_header(meta.buf, AP_CHUNK_META, tls.tid, AP_STREAM_META, meta.nchunks++, payload,
			(uint32_t)meta.len);
	trace_write_data(meta.buf, AP_CHUNK_HDR_LEN + meta.len);
	meta.len = 0;
}

/* Room for n bytes of META records; meta.lock held. */
uint8_t *meta_reserve(size_t n)
{
	if (meta.len + n > META_BUF_SIZE)
		meta_flush_locked();
	return meta.buf + AP_CHUNK_HDR_LEN + meta.len;
}

void meta_thread(uint32_t tid)
{
	char path[64] = "/proc/self/task/";
	char name[64];
	size_t n = 16;
	n += put_dec(path + n, tid);
	memcpy(path + n, "/comm", 6);
	ssize_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = read(fd, name, sizeof(name));
		close(fd);
	}
	if (got < 0)
		got = 0;
	while (got > 0 && name[got - 1] == '\n')
		got--;
	lk_lock(&meta.lock);
	uint8_t *p = meta_reserve(AP_META_THREAD_MAX(sizeof(name)));
	meta.len += ap_put_thread(p, tid, name, (size_t)got);
	lk_unlock(&meta.lock);
}

/* ---- event buffers ----------------------------------------------------- */

/* Writes out a buffer's events (buffer lock held), META first so every id
 * the events use is already in the file. */
static void thr_flush_locked(struct ap_thr *b)
{
	if (b->len <= EV_HDR || tfile.fd < 0) {
		b->len = EV_HDR;
		return;
	}
	if (tfile.in_signal) {
		/* The crashed code may hold meta.lock: without the META records
		 * these events could name stacks the file lacks, so they stay. */
		if (!lk_trylock_bounded(&meta.lock))
			return;
	} else {
		lk_lock(&meta.lock);
	}
	meta_flush_locked();
	lk_unlock(&meta.lock);
	/* One stream per buffer: its chunks are written in order, under its
	 * lock, whichever thread it serves (docs/trace-format.md, "Streams") */
	if (!b->stream)
		b->stream = __atomic_add_fetch(&threads.nstreams, 1, __ATOMIC_RELAXED);
	ap_chunk_header(b->buf, AP_CHUNK_EVENTS, b->tid, b->stream, b->nchunks++,
			b->buf + AP_CHUNK_HDR_LEN, (uint32_t)(b->len - AP_CHUNK_HDR_LEN));
	trace_write_data(b->buf, b->len);
	b->len = EV_HDR;
}

/* The current quantum, from the clock only when the TSC deadline passed. */
static inline uint64_t cur_quantum(struct ap_thr *b)
{
	uint64_t c = rd_tsc();
	if (LIKELY(c < b->tsc_next))
		return b->enc.q;
	uint64_t now = now_ns(CLOCK_MONOTONIC), q = now / settings.quantum;
	uint64_t step = __atomic_load_n(&thr_seq, __ATOMIC_RELAXED) > 1 ? 1 : settings.coarse_step;
	q -= q % step;
	if (q < b->enc.q)
		q = b->enc.q;
	b->tsc_next = tsc_per_ns > 0
			      ? c + (uint64_t)((double)((q + step) * settings.quantum - now) * tsc_per_ns)
			      : 0;
	return q;
}

/* Appends one EVENTS record for the calling thread (a TIME or SYNC record
 * first when the quantum changed or the chunk is new). */
void emit(struct ap_tls *t, unsigned type, unsigned kind, uint64_t addr,
		 uint64_t addr2, uint64_t size, uint32_t stack, unsigned flags)
{
	int shared = t->thr == &threads.dead;
	struct ap_thr *b = shared ? &threads.fallback : t->thr;
	int c = sched_getcpu();
	uint32_t cpu = c < 0 ? 0 : (uint32_t)c;
	int locked = own_enter(b, shared);
	if (UNLIKELY(__atomic_load_n(&proc.state, __ATOMIC_RELAXED) != AP_ON)) {
		own_leave(b, locked);
		return;
	}
	uint64_t q = cur_quantum(b);
	if (b->tid != t->tid || b->len + EV_MAX_REC > THR_BUF_SIZE ||
	    (q != b->enc.q && (q - b->q0) * settings.quantum > FLUSH_AGE_NS)) {
		thr_flush_locked(b);
		b->tid = t->tid;
	}
	uint8_t *p = b->buf + b->len;
	if (b->len == EV_HDR) {
		/* a new chunk: its state starts over */
		p += ap_enc_sync(&b->enc, p, q);
		b->q0 = q;
		ap_ring_sync(&b->ring);
	} else if (q != b->enc.q) {
		p += ap_enc_time(&b->enc, p, q);
	}
	struct ap_evrec r = {.type = type, .kind = kind, .cpu = cpu, .addr = addr,
			     .addr2 = addr2, .size = size, .stack = stack, .flags = flags};
	p += ap_enc_event_ring(&b->enc, &b->ring, p, &r);
	b->len = (size_t)(p - b->buf);
	b->events++;
	own_leave(b, locked);
}

static struct ap_thr *thr_new(void)
{
	struct ap_thr *b = threads.free_list;
	if (b) {
		threads.free_list = b->next_free;
		return b;
	}
	size_t hdr = (sizeof(struct ap_thr) + 63) & ~(size_t)63;
	uint8_t *mem = map_mem(hdr + THR_BUF_SIZE + RING_SIZE * sizeof(struct ap_ring_ent));
	if (!mem)
		return NULL;
	b = (struct ap_thr *)mem;
	b->buf = mem + hdr;
	b->ring.ent = (struct ap_ring_ent *)(mem + hdr + THR_BUF_SIZE);
	b->next = threads.all;
	threads.all = b;
	return b;
}

/* First slow-path call of a thread: its buffer, its key, its countdown. */
void thr_register(struct ap_tls *t)
{
	t->tid = sys_gettid();
	uint64_t seq = __atomic_fetch_add(&thr_seq, 1, __ATOMIC_RELAXED);
	uint64_t seed = settings.seed ? settings.seed + seq * 0x9e3779b97f4a7c15ull
				: now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)t->tid << 32) ^
					  (uintptr_t)t;
	seed = (seed ^ (seed >> 31)) * 0xbf58476d1ce4e5b9ull;
	t->rng = seed ? seed : 1;
	lk_lock(&threads.lock);
	struct ap_thr *b = thr_new();
	if (b) {
		b->tid = t->tid;
		b->tls = t;
		b->sc_epoch++; /* another thread, another stack */
		b->sc_bank = 0;
		b->len = EV_HDR;
		b->events = 0;
		b->lock = b->busy = b->claim = 0;
		__atomic_store_n(&b->live, 1, __ATOMIC_RELEASE);
	}
	lk_unlock(&threads.lock);
	t->thr = b ? b : &threads.dead;
	struct ap_hold h = hold(t);
	if (b)
		pthread_setspecific(threads.key, b); /* may allocate the key's page */
	if (sig_on)
		alt_install();
	meta_thread(t->tid);
	unhold(t, h);
	/* The countdown ran from 0 until now: start a real interval. */
	t->interval = draw_interval(t);
	t->countdown += t->interval;
}

/* A forked child (the calling thread t is its only one): the other
 * threads' buffers are free again, and every buffer, with the META
 * buffer, starts over in the child's new file (its streams too). */
void buffers_forget(struct ap_tls *t)
{
	threads.free_list = NULL;
	for (struct ap_thr *b = threads.all; b; b = b->next) {
		b->lock = b->busy = b->claim = 0;
		b->len = EV_HDR;
		b->events = 0;
		b->stream = b->nchunks = 0; /* a new file: its streams start over */
		if (b == t->thr)
			continue;
		b->live = 0;
		b->tls = NULL;
		b->next_free = threads.free_list;
		threads.free_list = b;
	}
	if (t->thr && t->thr != &threads.dead) {
		t->thr->tid = t->tid;
		t->thr->sc_epoch++; /* the cached ids are the parent's */
	}
	threads.fallback.len = EV_HDR;
	threads.fallback.events = 0;
	threads.fallback.stream = threads.fallback.nchunks = 0;
	threads.nstreams = 0;
	threads.exited_calls = threads.exited_consumed = 0;
	meta.len = 0;
	meta.nchunks = 0;
}

/* pthread key destructor: the thread is exiting. */
void thr_exit(void *arg)
{
	struct ap_thr *b = arg;
	struct ap_tls *t = &tls;
	t->guard++;
	int locked = own_enter(b, 0);
	thr_flush_locked(b);
	own_leave(b, locked);
	__atomic_fetch_add(&threads.exited_calls, t->calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&threads.exited_consumed,
			   t->consumed + (uint64_t)(t->interval - t->countdown),
			   __ATOMIC_RELAXED);
	t->calls = 0;
	t->consumed = 0;
	t->interval = t->countdown;
	t->thr = &threads.dead;
	lk_lock(&threads.lock);
	__atomic_store_n(&b->live, 0, __ATOMIC_RELEASE);
	b->tls = NULL;
	b->next_free = threads.free_list;
	threads.free_list = b;
	lk_unlock(&threads.lock);
	alt_remove();
	slow_stack_release();
	t->guard--;
}

/* Flushes every buffer; with `sig` set, never waits on a lock for long. */
void flush_all(int sig)
{
	if (sig ? !lk_trylock_bounded(&threads.lock) : (lk_lock(&threads.lock), 0))
		return;
	for (struct ap_thr *b = threads.all; b; b = b->next) {
		if (!__atomic_load_n(&b->live, __ATOMIC_ACQUIRE))
			continue;
		if (b == tls.thr && asym) {
			/* Ours: if a signal interrupted this thread inside emit, the
			 * events up to len are complete, and the interrupted code
			 * never resumes (the process is ending). */
			thr_flush_locked(b);
			continue;
		}
		if (!remote_enter(b, sig))
			continue;
		thr_flush_locked(b);
		remote_leave(b);
	}
	lk_unlock(&threads.lock);
	if (sig ? lk_trylock_bounded(&threads.fallback.lock) : (lk_lock(&threads.fallback.lock), 1)) {
		thr_flush_locked(&threads.fallback);
		lk_unlock(&threads.fallback.lock);
	}
	if (sig ? lk_trylock_bounded(&meta.lock) : (lk_lock(&meta.lock), 1)) {
		meta_flush_locked();
		lk_unlock(&meta.lock);
	}
}

uint64_t events_total(void)
{
	uint64_t n = threads.fallback.events;
	for (struct ap_thr *b = threads.all; b; b = b->next)
		n += b->events;
	return n;
}

