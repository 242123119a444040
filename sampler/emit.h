/* emit.h: appending a record to the calling thread's buffer, inline, so
 * that the sampled paths of interpose.c append without a call (buffer.c
 * owns the buffers and the state below: its comments say what each
 * holds). */
#ifndef AP_SAMPLER_EMIT_H
#define AP_SAMPLER_EMIT_H
#include "sampler-int.h"

#if defined(__x86_64__) && defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
#define AP_RSEQ_CPU 1
#include <sys/rseq.h> /* __rseq_offset: ld.so's, outside the hidden pragma */
#endif

#pragma GCC visibility push(hidden)
extern double tsc_per_ns;	/* 0: read the clock on every event */
extern double ns_per_tsc;	/* its inverse (0 with it), for the gaps */
extern uint64_t thr_seq;	/* threads registered so far */
extern int asym;		/* membarrier is registered */
extern size_t thr_flush_at;	/* a thread buffer's length that is written as a chunk */
/* Writes out a buffer's events (buffer lock held), META first. */
void thr_flush_locked(struct ap_thr *b);

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

/* The CPU the thread runs on, as sched_getcpu answers: glibc's (2.35 on)
 * reads the kernel's rseq area of the thread, and asks the vDSO when that
 * holds no CPU (rseq not registered: -1, -2). The same read inline spares
 * each event a call through the PLT and its stack protector (the event's
 * cpu is the same number). */
#ifdef AP_RSEQ_CPU
static inline int cur_cpu(void)
{
	const volatile int32_t __seg_fs *id =
		(const volatile int32_t __seg_fs *)(uintptr_t)(__rseq_offset +
							       offsetof(struct rseq, cpu_id));
	int c = *id;
	return LIKELY(c >= 0) ? c : sched_getcpu();
}
#else
static inline int cur_cpu(void)
{
	return sched_getcpu();
}
#endif

/* The current quantum, from the clock only when the TSC deadline passed;
 * the TSC it is for in *tsc: at (a TSC the caller read), or 0 to read it
 * now. */
static inline uint64_t cur_quantum(struct ap_thr *b, uint64_t *tsc, uint64_t at)
{
	uint64_t c = *tsc = at ? at : rd_tsc();
	/* A deadline set while the process had one thread is a step of
	 * coarse_step quanta: once a second thread has come, the clock is
	 * read again. Its events are in fine quanta, and this thread's next
	 * one (the free of a block the other allocated, after a join) must
	 * not take the coarse quantum before them: the merge would put the
	 * free first, and count it unmatched. */
	if (LIKELY(c < b->tsc_next) &&
	    (b->fine || __atomic_load_n(&thr_seq, __ATOMIC_RELAXED) <= 1))
		return b->enc.q;
	uint64_t now = now_ns(CLOCK_MONOTONIC), q = now / settings.quantum;
	b->fine = __atomic_load_n(&thr_seq, __ATOMIC_RELAXED) > 1;
	uint64_t step = b->fine ? 1 : settings.coarse_step;
	q -= q % step;
	if (q < b->enc.q)
		q = b->enc.q;
	b->tsc_next = tsc_per_ns > 0
			      ? c + (uint64_t)((double)((q + step) * settings.quantum - now) * tsc_per_ns)
			      : 0;
	return q;
}

/* emit_at's work in b: the thread's own buffer, or (shared) the buffer
 * of threads that have exited (threads.fallback), which takes its lock. */
static inline __attribute__((always_inline)) void emit_in(struct ap_tls *t, struct ap_thr *b,
							  int shared, unsigned type,
							  unsigned kind, uint64_t addr,
							  uint64_t addr2, uint64_t size,
							  uint32_t stack, unsigned flags,
							  uint64_t at)
{
	int c = cur_cpu();
	uint32_t cpu = c < 0 ? 0 : (uint32_t)c;
	int locked = own_enter(b, shared);
	if (UNLIKELY(__atomic_load_n(&proc.state, __ATOMIC_RELAXED) != AP_ON) &&
	    !__atomic_load_n(&proc.replaying, __ATOMIC_RELAXED)) {
		own_leave(b, locked);
		return;
	}
	uint64_t tsc;
	uint64_t q = cur_quantum(b, &tsc, at);
	if (b->tid != t->tid || b->len + EV_MAX_REC > thr_flush_at ||
	    (q != b->enc.q && (q - b->q0) * settings.quantum > FLUSH_AGE_NS)) {
		thr_flush_locked(b);
		b->tid = t->tid;
		slot_of(b->buf)->tid = t->tid;
	}
	uint8_t *p = b->buf + b->len;
	if (b->len == EV_HDR) {
		/* a new chunk: its state starts over (and whether its
		 * records have gaps is its slot's, made so: slot_map) */
		p += ap_enc_sync(&b->enc, p, q);
		b->q0 = q;
		ap_ring_sync(&b->ring);
		b->enc.gaps = slot_of(b->buf)->flags & AP_CHUNK_F_GAPS;
	} else if (q != b->enc.q) {
		p += ap_enc_time(&b->enc, p, q);
	}
	struct ap_evrec r = {.type = type, .kind = kind, .cpu = cpu, .addr = addr,
			     .addr2 = addr2, .size = size, .stack = stack, .flags = flags};
	if (b->enc.gaps && !shared) {
		if (b->gap_from && b->gap_at > b->gap_from)
			r.gap = ap_gap_code((uint64_t)((double)(b->gap_at - b->gap_from) * ns_per_tsc));
		/* the call returns to the program about now (a free after
		 * the real free: gap_leave) */
		b->gap_from = tsc;
	}
	p += ap_enc_event_ring(&b->enc, &b->ring, p, &r);
	b->len = (size_t)(p - b->buf);
	slot_publish(b->buf, b->len);
	b->events++;
	own_leave(b, locked);
}

/* A record of a thread past its exit (buffer.c), out of line: the
 * thread's own buffer is the path every record takes but these. */
void emit_shared(struct ap_tls *t, unsigned type, unsigned kind, uint64_t addr,
		 uint64_t addr2, uint64_t size, uint32_t stack, unsigned flags, uint64_t at);

/* Appends one EVENTS record for the calling thread (a TIME or SYNC record
 * first when the quantum changed or the chunk is new), at the TSC `at`
 * (0: read now). */
static inline __attribute__((always_inline)) void emit_at(struct ap_tls *t, unsigned type,
							  unsigned kind, uint64_t addr,
							  uint64_t addr2, uint64_t size,
							  uint32_t stack, unsigned flags,
							  uint64_t at)
{
	if (UNLIKELY(t->thr == &threads.dead))
		emit_shared(t, type, kind, addr, addr2, size, stack, flags, at);
	else
		emit_in(t, t->thr, 0, type, kind, addr, addr2, size, stack, flags, at);
}

#pragma GCC visibility pop
#endif
