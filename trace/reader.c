/* The trace reader (ap_trace.h): validates the framing of a trace, decodes
 * its chunks and merges the threads' event streams by time.
 *
 * Two passes over the file keep memory independent of the events:
 * pass 1 (ap_trace_read) checks every chunk, decodes HEADER/META/END and
 * decodes each EVENTS chunk only to validate and count it, or takes the
 * counts of one that carries them (AP_CHUNK_F_COUNTS) without decoding it;
 * pass 2 (each iteration, ap_events_open) decodes the EVENTS chunks again,
 * a batch at a time, in a k-way merge of the threads' streams, and checks
 * those pass 1 did not decode (file_corrupt).
 * Everything read from the file is bounds-checked against the bytes left
 * before it is used, so a corrupt count can never make us allocate or read
 * past the end. */
#include "ap_trace.h"
#include "trace-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* One entry of the mapping lookup index: disjoint, sorted by start. */
struct ap_map_range {
	uint64_t start, end;
	size_t map;
};

/* An EVENTS chunk found in pass 1, as pass 2 reads it again. */
struct ev_chunk {
	const uint8_t *payload; /* where pass 1 decoded it (not kept after) */
	uint32_t len;		/* the stored payload's length */
	uint32_t thread;	/* thread index */
	uint8_t columns;	/* its flags AP_CHUNK_F_COLUMNS, _REFS and _INDEX */
	bool zstd;		/* AP_CHUNK_F_ZSTD: stored compressed */
	uint8_t skip;		/* bytes of counts before the payload proper */
	bool counted;		/* AP_CHUNK_F_COUNTS: pass 1 did not decode it; pass 2
				 * checks it, against `want` */
	uint64_t off;		/* of the stored payload in the file */
	uint32_t crc;		/* the stored payload's, from its header */
	struct ap_chunk_counts want;
};

/* What a thread's chunks carry over, one to the next: its allocations so
 * far (the next one's index, which names an anonymous block) and the
 * index after the one its last REF named (AP_CHUNK_F_INDEX), from which
 * the next REF steps. */
struct thread_refs {
	uint64_t nalloc, next;
	uint64_t xnext; /* the same for REFs to another thread's allocations */
	struct ap_xowners xo; /* ...of each of the last ones (AP_CHUNK_F_XOWN) */
	bool counted; /* pass 1: a chunk before was not decoded (AP_CHUNK_F_COUNTS),
		       * so only nalloc is known */
};

struct rd {
	struct ap_chunk_walk walk; /* the chunks, checked (chunk.c) */
	const uint8_t *data;
	size_t size;
	void *map;	 /* data, if mapped (pass 1 only) */
	int fd;		 /* the file, with map: pass 2 reads it again */
	uint8_t *buf;	 /* data, if read into memory (the reader's) */
	size_t dropped;	 /* pages before it let go (drop_behind) */
	const char *name;
	struct ap_error *err;
	struct ap_trace *t;
	ap_progress_fn progress;
	void *progress_ctx;

	size_t threads_alloc;
	struct ap_u64map tid_index; /* tid -> thread index (slot NULL until the first) */
	uint64_t *thread_nev; /* ap_events per thread (pass 1) */
	struct thread_refs *thread_refs; /* per thread, carried across its chunks */

	uint64_t *pcs; /* all stacks' pcs; stacks[i].pcs are offsets until the end */
	size_t npcs, pcs_alloc;
	size_t stacks_alloc;
	size_t maps_alloc;

	struct ev_chunk *chunks;
	size_t nchunks, chunks_alloc;
	uint8_t **owned; /* decompressed payloads */
	size_t nowned, owned_alloc;
	uint8_t *scratch; /* an EVENTS payload, decompressed for pass 1 */
	size_t scratch_cap;
	ZSTD_DCtx *zd;

	size_t chunk_off; /* header offset of the chunk being decoded */
	uint64_t last_ts;
	bool any_event;
	uint32_t version;     /* the preamble's */
	uint64_t meta_bytes;  /* META payload bytes read (decompressed) */
	uint64_t shared_pcs;  /* PCs that STACK_SHARED records copied */
};

static int corrupt(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int corrupt(struct rd *r, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ap_error_set(r->err, "%s: corrupt chunk at byte %zu: %s", r->name, r->chunk_off,
			    why);
}

/* ---- threads ---- */

/* Index of the thread `tid`, created if new; -1 (error set) if the trace
 * has more threads than an event can name. */
static long thread_index(struct rd *r, uint32_t tid)
{
	struct ap_trace *t = r->t;
	if (!r->tid_index.slot)
		ap_u64map_init(&r->tid_index, 16);
	uint32_t known = ap_u64map_get(&r->tid_index, tid);
	if (known != AP_U64MAP_NONE)
		return (long)known;
	if (t->nthreads >= AP_MAX_THREADS)
		return corrupt(r, "more than %u threads", AP_MAX_THREADS);
	AP_ALLOC_GROW(t->threads, t->nthreads + 1, r->threads_alloc);
	r->thread_nev = ap_xrealloc(r->thread_nev, r->threads_alloc * sizeof(*r->thread_nev));
	r->thread_refs = ap_xrealloc(r->thread_refs, r->threads_alloc * sizeof(*r->thread_refs));
	r->thread_refs[t->nthreads] = (struct thread_refs){0};
	struct ap_thread *th = &t->threads[t->nthreads];
	th->tid = tid;
	th->name = ap_xstrdup("");
	th->events = 0;
	r->thread_nev[t->nthreads] = 0;
	ap_u64map_put(&r->tid_index, tid, (uint32_t)t->nthreads);
	t->nthreads++;
	return (long)t->nthreads - 1;
}

/* ---- primitive readers over a payload ---- */

struct cur {
	const uint8_t *p, *end;
	const uint8_t *base; /* start of the file, for offsets */
};

static int get_uv(struct rd *r, struct cur *c, uint64_t *v, const char *what)
{
	if (ap_get_uv(&c->p, c->end, v) < 0)
		return corrupt(r, "bad varint for %s at byte %zu", what, (size_t)(c->p - c->base));
	return 0;
}

/* A string: points into the payload, not NUL-terminated. */
static int get_str(struct rd *r, struct cur *c, const uint8_t **s, size_t *len, const char *what)
{
	uint64_t n;
	if (get_uv(r, c, &n, what) < 0)
		return -1;
	if (n > (uint64_t)(c->end - c->p))
		return corrupt(r, "%s of %llu bytes runs past the end of the payload", what,
			       (unsigned long long)n);
	*s = c->p;
	*len = (size_t)n;
	c->p += n;
	return 0;
}

static char *dup_str(const uint8_t *s, size_t len)
{
	char *p = ap_xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

/* ---- HEADER and END ---- */

/* Calls `field` for each key/value; unknown keys are the callee's to skip. */
struct kv {
	uint64_t key, kind, u;
	const uint8_t *s;
	size_t len;
};

static int next_kv(struct rd *r, struct cur *c, struct kv *kv)
{
	if (get_uv(r, c, &kv->key, "a key") < 0 || get_uv(r, c, &kv->kind, "a kind") < 0)
		return -1;
	if (kv->kind == AP_KV_UINT)
		return get_uv(r, c, &kv->u, "a value");
	if (kv->kind == AP_KV_STR)
		return get_str(r, c, &kv->s, &kv->len, "a string value");
	return corrupt(r, "key %llu has unknown kind %llu", (unsigned long long)kv->key,
		       (unsigned long long)kv->kind);
}

static int want_kind(struct rd *r, const struct kv *kv, uint64_t kind, const char *name)
{
	if (kv->kind != kind)
		return corrupt(r, "%s (key %llu) is %s, expected %s", name,
			       (unsigned long long)kv->key,
			       kv->kind == AP_KV_STR ? "a string" : "a number",
			       kind == AP_KV_STR ? "a string" : "a number");
	return 0;
}

static void set_argv(struct ap_trace *t, const uint8_t *s, size_t len)
{
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (!s[i] || i + 1 == len)
			n++;
	t->argv = ap_xcalloc(n + 1, sizeof(char *));
	t->argc = 0;
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (!s[i] || i + 1 == len) {
			size_t end = s[i] ? i + 1 : i;
			t->argv[t->argc++] = dup_str(s + start, end - start);
			start = i + 1;
		}
	}
	t->argv[t->argc] = NULL;
}

static void set_str(char **dst, const struct kv *kv)
{
	free(*dst);
	*dst = dup_str(kv->s, kv->len);
}

static int decode_header(struct rd *r, struct cur *c)
{
	struct ap_trace *t = r->t;
	bool have_rate = false;
	t->time_quantum_ns = 1; /* without the key: every time exact */
	while (c->p < c->end) {
		struct kv kv;
		if (next_kv(r, c, &kv) < 0)
			return -1;
		const char *name = NULL;
		uint64_t *num = NULL;
		char **str = NULL;
		switch (kv.key) {
		case AP_HK_RATE:
			name = "rate";
			num = &t->rate;
			have_rate = true;
			break;
		case AP_HK_FLAGS:
			name = "flags";
			num = &t->flags;
			break;
		case AP_HK_PID:
			name = "pid";
			num = &t->pid;
			break;
		case AP_HK_PPID:
			name = "ppid";
			num = &t->ppid;
			break;
		case AP_HK_CPUS:
			name = "cpus";
			num = &t->cpus;
			break;
		case AP_HK_ALLOWED_CPUS:
			name = "allowed_cpus";
			num = &t->allowed_cpus;
			break;
		case AP_HK_START_REALTIME_NS:
			name = "start_realtime_ns";
			num = &t->start_realtime_ns;
			break;
		case AP_HK_START_NS:
			name = "start_ns";
			num = &t->start_ns;
			break;
		case AP_HK_MAX_DEPTH:
			name = "max_depth";
			num = &t->max_depth;
			break;
		case AP_HK_PAGE_SIZE:
			name = "page_size";
			num = &t->page_size;
			break;
		case AP_HK_TIME_QUANTUM_NS:
			name = "time_quantum_ns";
			num = &t->time_quantum_ns;
			break;
		case AP_HK_TIME_STEP_NS:
			name = "time_step_ns";
			num = &t->time_step_ns;
			break;
		case AP_HK_EXE:
			name = "exe";
			str = &t->exe;
			break;
		case AP_HK_SAMPLER:
			name = "sampler";
			str = &t->sampler;
			break;
		case AP_HK_PARENT_TRACE:
			name = "parent_trace";
			str = &t->parent_trace;
			break;
		case AP_HK_MALLOC_OWNER:
			name = "malloc_owner";
			str = &t->malloc_owner;
			break;
		case AP_HK_CMDLINE:
			if (want_kind(r, &kv, AP_KV_STR, "cmdline") < 0)
				return -1;
			set_argv(t, kv.s, kv.len);
			continue;
		default:
			continue; /* unknown key: skipped */
		}
		if (want_kind(r, &kv, num ? AP_KV_UINT : AP_KV_STR, name) < 0)
			return -1;
		if (num)
			*num = kv.u;
		else
			set_str(str, &kv);
	}
	if (!have_rate)
		return corrupt(r, "the header has no sampling rate");
	if (t->rate == 0)
		return corrupt(r, "the header's sampling rate is 0");
	if (t->time_quantum_ns == 0)
		return corrupt(r, "the header's time quantum is 0");
	if (t->time_step_ns % t->time_quantum_ns)
		return corrupt(r, "the header's time step %llu ns is not a multiple of its "
			       "quantum %llu ns", (unsigned long long)t->time_step_ns,
			       (unsigned long long)t->time_quantum_ns);
	/* events name their CPU in 16 bits: more CPUs than that is damage,
	 * and consumers size per-CPU tables by it */
	if (t->cpus > AP_MAX_CPUS)
		return corrupt(r, "the header's CPU count %llu is more than %u",
			       (unsigned long long)t->cpus, AP_MAX_CPUS);
	/* advise's replay runs on that many CPUs */
	if (t->allowed_cpus > AP_MAX_CPUS)
		return corrupt(r, "the header's allowed CPU count %llu is more than %u",
			       (unsigned long long)t->allowed_cpus, AP_MAX_CPUS);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* END's `pooled`: blocks by address or by thread and index, each as
 * the identity the events give it (an anonymous block's), sorted here. */
static int decode_pooled(struct rd *r, const struct kv *kv)
{
	struct ap_trace *t = r->t;
	const uint8_t *p = kv->s, *end = kv->s + kv->len;
	size_t n = 0, alloc = 0;
	uint64_t *v = NULL;
	while (p < end) {
		uint64_t x, tid = 0;
		if (ap_get_uv(&p, end, &x) < 0 || ((x & 1) && ap_get_uv(&p, end, &tid) < 0)) {
			free(v);
			return corrupt(r, "END's pooled list has a bad varint");
		}
		uint64_t id = x >> 1;
		if (x & 1) {
			/* a thread that made no event names no block */
			uint32_t ti = r->tid_index.slot && tid <= UINT32_MAX ?
				ap_u64map_get(&r->tid_index, tid) : AP_U64MAP_NONE;
			if (ti == AP_U64MAP_NONE || id >= AP_THREAD_ALLOCS_MAX)
				continue;
			id = AP_ANON_BASE | (uint64_t)ti << 40 | id;
		}
		AP_ALLOC_GROW(v, n + 1, alloc);
		v[n++] = id;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	free(t->pooled);
	t->pooled = v;
	t->npooled = n;
	return 0;
}

static int decode_end(struct rd *r, struct cur *c)
{
	struct ap_trace *t = r->t;
	free(t->pooled);	/* the last END counts */
	t->pooled = NULL;
	t->npooled = 0;
	uint64_t end_ns = 0, reason = 0, status = 0, calls = 0, bytes = 0, chunks = 0, cpu_ns = 0;
	uint64_t live_peak = 0, live_slack = 0;
	bool has_status = false, has_calls = false, has_live = false;
	while (c->p < c->end) {
		struct kv kv;
		if (next_kv(r, c, &kv) < 0)
			return -1;
		const char *name = NULL;
		uint64_t *num = NULL;
		switch (kv.key) {
		case AP_EK_END_NS:
			name = "end_ns";
			num = &end_ns;
			break;
		case AP_EK_REASON:
			name = "reason";
			num = &reason;
			break;
		case AP_EK_STATUS:
			name = "status";
			num = &status;
			has_status = true;
			break;
		case AP_EK_CALLS:
			name = "calls";
			num = &calls;
			has_calls = true;
			break;
		case AP_EK_BYTES:
			name = "bytes";
			num = &bytes;
			break;
		case AP_EK_CHUNKS:
			name = "chunks";
			num = &chunks;
			break;
		case AP_EK_CPU_NS:
			name = "cpu_ns";
			num = &cpu_ns;
			break;
		case AP_EK_LIVE_PEAK:
			name = "live_peak";
			num = &live_peak;
			has_live = true;
			break;
		case AP_EK_LIVE_SLACK:
			name = "live_slack";
			num = &live_slack;
			break;
		case AP_EK_POOLED:
			if (want_kind(r, &kv, AP_KV_STR, "pooled") < 0 || decode_pooled(r, &kv) < 0)
				return -1;
			continue;
		default:
			continue;
		}
		if (want_kind(r, &kv, AP_KV_UINT, name) < 0)
			return -1;
		*num = kv.u;
	}
	/* Chunks written after the writer counted may come before the END
	 * too; fewer than it counted were deleted or lost. */
	if (chunks > r->walk.data_chunks)
		return corrupt(r, "missing chunks: the writer wrote %llu META and EVENTS chunks "
			       "before this END, the file holds %llu (deleted or lost)",
			       (unsigned long long)chunks,
			       (unsigned long long)r->walk.data_chunks);
	/* The last END counts (an exec that failed lets the process go on). */
	t->has_end = true;
	t->end_ns = end_ns;
	t->end_reason = reason;
	t->end_status = status;
	t->end_status_known = has_status;
	t->has_counts = has_calls;
	t->calls = calls;
	t->bytes = bytes;
	t->cpu_ns = cpu_ns;
	t->has_live_peak = has_live;
	t->live_peak = live_peak;
	t->live_slack = live_slack;
	return 0;
}

/* ---- META ---- */

static int decode_mapping(struct rd *r, struct cur *c)
{
	struct ap_trace *t = r->t;
	uint64_t bias, nseg;
	const uint8_t *path, *bid;
	size_t path_len, bid_len;
	if (get_uv(r, c, &bias, "a mapping's bias") < 0 ||
	    get_str(r, c, &path, &path_len, "a mapping's path") < 0 ||
	    get_str(r, c, &bid, &bid_len, "a mapping's build-id") < 0 ||
	    get_uv(r, c, &nseg, "a mapping's segment count") < 0)
		return -1;
	if (bid_len > sizeof(t->maps[0].build_id))
		return corrupt(r, "build-id of %zu bytes (at most %zu)", bid_len,
			       sizeof(t->maps[0].build_id));
	/* Each segment takes at least 4 bytes: bound the count before allocating. */
	if (nseg > (uint64_t)(c->end - c->p) / 4)
		return corrupt(r, "mapping with %llu segments in %zu bytes",
			       (unsigned long long)nseg, (size_t)(c->end - c->p));
	struct ap_segment *segs = ap_xcalloc(nseg ? nseg : 1, sizeof(*segs));
	uint64_t start = UINT64_MAX, end = 0;
	for (uint64_t i = 0; i < nseg; i++) {
		uint64_t fl;
		if (get_uv(r, c, &segs[i].vaddr, "a segment's vaddr") < 0 ||
		    get_uv(r, c, &segs[i].memsz, "a segment's memsz") < 0 ||
		    get_uv(r, c, &segs[i].offset, "a segment's offset") < 0 ||
		    get_uv(r, c, &fl, "a segment's flags") < 0)
			goto fail;
		segs[i].flags = (uint32_t)fl;
		uint64_t s = bias + segs[i].vaddr;
		uint64_t e = s + segs[i].memsz;
		if (s < bias || e < s) {
			corrupt(r, "segment [%#llx + %#llx, size %#llx) wraps around",
				(unsigned long long)bias, (unsigned long long)segs[i].vaddr,
				(unsigned long long)segs[i].memsz);
			goto fail;
		}
		if (s < start)
			start = s;
		if (e > end)
			end = e;
	}
	if (!nseg)
		start = end = bias;
	AP_ALLOC_GROW(t->maps, t->nmaps + 1, r->maps_alloc);
	struct ap_mapping *m = &t->maps[t->nmaps++];
	memset(m, 0, sizeof(*m));
	m->bias = bias;
	m->start = start;
	m->end = end;
	m->path = dup_str(path, path_len);
	memcpy(m->build_id, bid, bid_len);
	m->build_id_len = bid_len;
	m->segs = segs;
	m->nsegs = (size_t)nseg;
	return 0;
fail:
	free(segs);
	return -1;
}

/* The start of a STACK or STACK_SHARED record: its id, which must be
 * the next one. */
static int stack_id(struct rd *r, struct cur *c, uint64_t *depth)
{
	struct ap_trace *t = r->t;
	uint64_t id;
	if (get_uv(r, c, &id, "a stack id") < 0 || get_uv(r, c, depth, "a stack depth") < 0)
		return -1;
	if (id != t->nstacks)
		return corrupt(r, "stack id %llu where %zu was next (ids are dense from 1)",
			       (unsigned long long)id, t->nstacks);
	if (id > UINT32_MAX)
		return corrupt(r, "stack id %llu does not fit 32 bits", (unsigned long long)id);
	return 0;
}

/* `n` PCs (the first as uv, each next as an sv delta) into r->pcs at
 * r->npcs, room made by the caller. */
static int stack_pcs(struct rd *r, struct cur *c, uint64_t n)
{
	uint64_t pc = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (i == 0) {
			if (get_uv(r, c, &pc, "a pc") < 0)
				return -1;
		} else {
			int64_t d;
			if (ap_get_sv(&c->p, c->end, &d) < 0)
				return corrupt(r, "bad varint for a pc delta at byte %zu",
					       (size_t)(c->p - c->base));
			pc += (uint64_t)d;
		}
		r->pcs[r->npcs + i] = pc;
	}
	return 0;
}

/* The stack whose PCs are at r->npcs, `depth` of them, is the next one. */
static void stack_add(struct rd *r, uint64_t depth)
{
	struct ap_trace *t = r->t;
	AP_ALLOC_GROW(t->stacks, t->nstacks + 1, r->stacks_alloc);
	t->stacks[t->nstacks].depth = (uint32_t)depth;
	/* An offset into r->pcs until the pool stops moving (see finish). */
	t->stacks[t->nstacks].pcs = (uint64_t *)(uintptr_t)r->npcs;
	t->nstacks++;
	r->npcs += depth;
}

static int decode_stack(struct rd *r, struct cur *c)
{
	uint64_t depth;
	if (stack_id(r, c, &depth) < 0)
		return -1;
	if (depth > (uint64_t)(c->end - c->p))
		return corrupt(r, "stack of depth %llu in %zu bytes", (unsigned long long)depth,
			       (size_t)(c->end - c->p));
	AP_ALLOC_GROW(r->pcs, r->npcs + depth, r->pcs_alloc);
	if (stack_pcs(r, c, depth) < 0)
		return -1;
	stack_add(r, depth);
	return 0;
}

static int decode_stack_shared(struct rd *r, struct cur *c)
{
	struct ap_trace *t = r->t;
	uint64_t depth, base, shared;
	if (stack_id(r, c, &depth) < 0 || get_uv(r, c, &base, "a base stack id") < 0 ||
	    get_uv(r, c, &shared, "a count of shared frames") < 0)
		return -1;
	if (base == 0 || base >= t->nstacks)
		return corrupt(r, "shared stack %zu names stack %llu, which is not before it",
			       t->nstacks, (unsigned long long)base);
	uint32_t bdepth = t->stacks[base].depth;
	if (shared == 0 || shared > depth || shared > bdepth)
		return corrupt(r, "shared stack %zu of depth %llu shares %llu frames of stack "
			       "%llu (depth %u)",
			       t->nstacks, (unsigned long long)depth, (unsigned long long)shared,
			       (unsigned long long)base, bdepth);
	if (depth - shared > (uint64_t)(c->end - c->p) || depth > UINT32_MAX)
		return corrupt(r, "stack of depth %llu (%llu shared) in %zu bytes",
			       (unsigned long long)depth, (unsigned long long)shared,
			       (size_t)(c->end - c->p));
	r->shared_pcs += shared;
	if (r->shared_pcs > AP_SHARED_PCS_PER_BYTE * r->meta_bytes + AP_SHARED_PCS_SLACK)
		return corrupt(r, "shared stacks of %llu frames in %llu bytes of META records",
			       (unsigned long long)r->shared_pcs,
			       (unsigned long long)r->meta_bytes);
	AP_ALLOC_GROW(r->pcs, r->npcs + depth, r->pcs_alloc);
	if (stack_pcs(r, c, depth - shared) < 0)
		return -1;
	size_t from = (size_t)(uintptr_t)t->stacks[base].pcs + bdepth - shared;
	memcpy(r->pcs + r->npcs + (depth - shared), r->pcs + from, shared * sizeof(*r->pcs));
	stack_add(r, depth);
	return 0;
}

static int decode_thread(struct rd *r, struct cur *c)
{
	uint64_t tid;
	const uint8_t *name;
	size_t len;
	if (get_uv(r, c, &tid, "a thread id") < 0 ||
	    get_str(r, c, &name, &len, "a thread name") < 0)
		return -1;
	if (tid > UINT32_MAX)
		return corrupt(r, "thread id %llu does not fit 32 bits", (unsigned long long)tid);
	long idx = thread_index(r, (uint32_t)tid);
	if (idx < 0)
		return -1;
	struct ap_thread *th = &r->t->threads[idx];
	free(th->name);
	th->name = dup_str(name, len);
	return 0;
}

static int decode_meta(struct rd *r, struct cur *c)
{
	while (c->p < c->end) {
		uint8_t tag = *c->p++;
		int rc;
		switch (tag) {
		case 0:
			return 0; /* padding */
		case AP_META_MAPPING:
			rc = decode_mapping(r, c);
			break;
		case AP_META_STACK:
			rc = decode_stack(r, c);
			break;
		case AP_META_STACK_SHARED:
			if (r->version < 4)
				goto unknown;
			rc = decode_stack_shared(r, c);
			break;
		case AP_META_THREAD:
			rc = decode_thread(r, c);
			break;
		default:
		unknown:
			return corrupt(r, "unknown META record tag %u at byte %zu", tag,
				       (size_t)(c->p - 1 - c->base));
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- EVENTS ---- */

struct evcur {
	const uint8_t *p, *end;
};

struct evdec {
	struct evcur c0, c1, c2, c3; /* columns: tags etc., addresses, sizes, times */
	struct evcur c4;	     /* distances (AP_CHUNK_F_REFS) */
	struct evcur *ca, *cs;	     /* &c1, &c2 for a payload in columns, else &c0 */
	bool refs;		     /* distances from c4, else from *ca (a flag, not a
				      * pointer: copies of a decoder fix up ca and cs only) */
	bool index;		     /* REFs are allocation indexes (AP_CHUNK_F_INDEX) */
	bool xown;		     /* ...stepping by owner (AP_CHUNK_F_XOWN) */
	bool sized;		     /* sizes predicted by stack (AP_CHUNK_F_SIZES) */
	uint64_t nrec, nev;	     /* records and ap_events decoded (AP_CHUNK_F_COUNTS) */
	uint64_t last_q;	     /* the last record's quantum */
	struct ap_size_pred *pred; /* the table for them (its owner's; NULL in scan mode,
				    * which reads the fields and needs no sizes) */
	uint64_t until, step;	     /* times column: records left before q += step */
	uint64_t q, quantum, addr;
	uint32_t cpu;
	uint32_t thread;
	uint64_t anon_min; /* address fields from here up are corrupt (0: AP_ANON_BASE) */
	uint64_t sync_base; /* th.nalloc at the payload start or the last SYNC */
	uint64_t *ring;	 /* their addresses, ring[pos & (ring_cap - 1)] */
	size_t ring_cap; /* grows to AP_RING as a chunk needs it */
	struct thread_refs th; /* the thread's, across its payloads */
	const struct ap_u64map *tids; /* tid -> thread index (pass 2: another
				       * thread's allocations; NULL: none known) */
};

/* The times column's next (records to skip, quanta to add) pair; none
 * left: no more steps. */
static inline int next_time(struct evdec *d)
{
	if (d->c3.p >= d->c3.end) {
		d->until = UINT64_MAX;
		return 0;
	}
	if (ap_get_uv(&d->c3.p, d->c3.end, &d->until) < 0 ||
	    ap_get_uv(&d->c3.p, d->c3.end, &d->step) < 0)
		return -1;
	return 0;
}

/* Starts decoding a payload: `columns` is its chunk's flags
 * AP_CHUNK_F_COLUMNS (in columns) and AP_CHUNK_F_REFS (with the distances
 * column), or 0 (rows). Returns -1 with *why set if the column lengths do
 * not fit the payload. */
static int evdec_start(struct evdec *d, const uint8_t *payload, uint32_t len, uint32_t thread,
		       uint64_t quantum, unsigned columns, const char **why)
{
	d->q = 0;
	d->quantum = quantum;
	if (!d->anon_min)
		d->anon_min = AP_ANON_BASE;
	d->c0 = (struct evcur){payload, payload + len};
	d->ca = d->cs = &d->c0;
	d->addr = 0;
	d->cpu = 0;
	d->thread = thread;
	d->sync_base = d->th.nalloc;
	d->until = UINT64_MAX;
	d->c3 = d->c4 = (struct evcur){NULL, NULL};
	d->refs = d->index = d->xown = d->sized = false;
	if (!(columns & AP_CHUNK_F_COLUMNS))
		return 0;
	uint64_t l1, l2, l3, l4 = 0;
	if (ap_get_uv(&d->c0.p, d->c0.end, &l1) < 0 || ap_get_uv(&d->c0.p, d->c0.end, &l2) < 0 ||
	    ap_get_uv(&d->c0.p, d->c0.end, &l3) < 0 ||
	    ((columns & AP_CHUNK_F_REFS) && ap_get_uv(&d->c0.p, d->c0.end, &l4) < 0) ||
	    l1 > (uint64_t)(d->c0.end - d->c0.p) || l2 > (uint64_t)(d->c0.end - d->c0.p) - l1 ||
	    l3 > (uint64_t)(d->c0.end - d->c0.p) - l1 - l2 ||
	    l4 > (uint64_t)(d->c0.end - d->c0.p) - l1 - l2 - l3) {
		*why = "column lengths run past the end of the payload";
		return -1;
	}
	d->refs = columns & AP_CHUNK_F_REFS;
	d->index = columns & AP_CHUNK_F_INDEX;
	d->xown = columns & AP_CHUNK_F_XOWN;
	d->sized = (columns & AP_CHUNK_F_SIZES) && d->pred;
	if (d->sized)
		ap_size_pred_reset(d->pred);
	d->c4 = (struct evcur){d->c0.end - l4, d->c0.end};
	d->c3 = (struct evcur){d->c4.p - l3, d->c4.p};
	d->c2 = (struct evcur){d->c3.p - l2, d->c3.p};
	d->c1 = (struct evcur){d->c2.p - l1, d->c2.p};
	d->c0.end = d->c1.p;
	d->ca = &d->c1;
	d->cs = &d->c2;
	return next_time(d) < 0 ? (*why = "bad varint in the times column", -1) : 0;
}

/* The identity of the thread's index-th allocation when it is anonymous. */
static inline uint64_t anon_id(const struct evdec *d, uint64_t index)
{
	return ap_anon_id(d->thread, index);
}

/* ALLOCs since the payload start or the last SYNC. */
static inline uint64_t ring_count(const struct evdec *d)
{
	return d->th.nalloc - d->sync_base;
}

/* Counts an ALLOC (or a REALLOC's new block) and remembers its address
 * for FREEs by distance (`scan`, or REFs by index: only counts it; see
 * evdec_next). */
static inline __attribute__((always_inline)) void ring_push(struct evdec *d, uint64_t addr,
							    bool scan)
{
	uint64_t nal = ring_count(d);
	d->th.nalloc++;
	if (scan || d->index)
		return;
	if (nal == d->ring_cap && d->ring_cap < AP_RING) {
		/* not wrapped yet: positions keep their slots */
		d->ring_cap = d->ring_cap ? d->ring_cap * 2 : 64;
		d->ring = ap_xrealloc(d->ring, d->ring_cap * sizeof(*d->ring));
	}
	d->ring[nal & (d->ring_cap - 1)] = addr;
}

/* A size field v of a payload with AP_CHUNK_F_SIZES: the size. */
static inline uint64_t predicted_size(struct evdec *d, uint32_t stack, uint64_t v)
{
	uint64_t size = ap_size_pred_get(d->pred, stack) + (uint64_t)ap_unzigzag(v);
	ap_size_pred_put(d->pred, stack, size);
	return size;
}

enum { DEC_END = -1, DEC_BAD = -2, DEC_SKIP = -3 };

/* An allocation's address field at AP_ANON_BASE (AP_ANON_MIN in a trace
 * of more than 65535 threads) or above: no x86-64
 * process has such an address (user space ends at 2^47, or 2^56 with
 * five-level page tables), and identities up there are the anonymous
 * blocks', which the merge knows to be new. */
#define NO_ADDRESS "an allocation at an address no process has (0xff00000000000000 or above, " \
	"0x8000000000000000 with more than 65535 threads)"

/* ap_get_uv, faster: the one-byte case first, and with 10 bytes left no
 * bounds check per byte (varints were half of the decode time). */
static inline int rd_uv(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	if (q < end && q[0] < 0x80) {
		*v = q[0];
		*p = q + 1;
		return 0;
	}
	if (end - q < AP_VARINT_MAX)
		return ap_get_uv(p, end, v);
	/* two and three bytes (sizes, address deltas) unrolled */
	uint64_t r = q[0] & 0x7f;
	if (q[1] < 0x80) {
		*v = r | (uint64_t)q[1] << 7;
		*p = q + 2;
		return 0;
	}
	r |= (uint64_t)(q[1] & 0x7f) << 7;
	if (q[2] < 0x80) {
		*v = r | (uint64_t)q[2] << 14;
		*p = q + 3;
		return 0;
	}
	r |= (uint64_t)(q[2] & 0x7f) << 14;
	for (unsigned i = 3; i < AP_VARINT_MAX; i++) {
		uint8_t b = q[i];
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (i == AP_VARINT_MAX - 1 && b > 1)
				return -1;
			*v = r;
			*p = q + i + 1;
			return 0;
		}
	}
	return -1;
}

static inline int rd_sv(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	if (rd_uv(p, end, &u) < 0)
		return -1;
	*v = ap_unzigzag(u);
	return 0;
}

/* An address field (ap_put_addr) relative to prev. */
static inline int rd_addr(const uint8_t **p, const uint8_t *end, uint64_t prev, uint64_t *out)
{
	uint64_t v;
	if (rd_uv(p, end, &v) < 0)
		return -1;
	return ap_addr_finish(p, end, v, prev, out);
}

/* A REF to another thread's allocation, field k (bit 0 set): `uv tid`
 * follows in column c; index = xnext + step (the other thread's chunks
 * may come later in the file, so the index is only checked against the
 * 2^40 an identity holds). With AP_CHUNK_F_XOWN, bit 1 says the tid is
 * the last one's (none follows), and the step is from that owner's
 * `next` (struct ap_xowners). A tid the trace does not know names no
 * block (thread bits 0xffff: no thread has that index). */
static int rd_xref(struct evdec *d, struct evcur *c, uint64_t k, uint64_t *out, bool scan)
{
	uint64_t tid;
	if (d->xown && (k & 2)) {
		if (!d->th.xo.n)
			return -1; /* (no last tid) */
		tid = d->th.xo.tid[0];
	} else if (rd_uv(&c->p, c->end, &tid) < 0 || tid > UINT32_MAX) {
		return -1;
	}
	int64_t step = ap_unzigzag(k >> (d->xown ? 2 : 1));
	uint64_t mag = step < 0 ? 0 - (uint64_t)step : (uint64_t)step;
	uint64_t *next = d->xown ? ap_xowners_use(&d->th.xo, (uint32_t)tid) : &d->th.xnext;
	if (step < 0 ? mag > *next : mag >= AP_THREAD_ALLOCS_MAX - *next)
		return -1;
	uint64_t idx = *next + (uint64_t)step;
	*next = idx + 1;
	if (scan) {
		*out = 0;
		return 0;
	}
	uint32_t ti = d->tids ? ap_u64map_get(d->tids, tid) : AP_U64MAP_NONE;
	*out = ti == AP_U64MAP_NONE ? AP_ANON_BASE | (uint64_t)AP_ANON_LOW_THREADS << 40 | idx
				    : ap_anon_id(ti, idx);
	return 0;
}

/* A block named by distance (AP_TAG_REF): 1 is the last ALLOC (`scan`:
 * checked, not looked up); or, in a chunk with AP_CHUNK_F_INDEX, by the
 * thread's allocation index, relative to its last REF's. */
static inline __attribute__((always_inline)) int rd_ref(struct evdec *d, uint64_t *out, bool scan)
{
	uint64_t k;
	struct evcur *c = d->refs ? &d->c4 : d->ca;
	if (rd_uv(&c->p, c->end, &k) < 0)
		return -1;
	if (d->index) {
		if (k == 0) { /* the common case: the allocation after the last */
			if (d->th.next >= d->th.nalloc)
				return -1;
			*out = anon_id(d, d->th.next++);
			return 0;
		}
		/* bit 0: another thread's allocation (its tid follows);
		 * the rest zigzag(index - next) */
		if (k & 1)
			return rd_xref(d, c, k, out, scan);
		int64_t step = ap_unzigzag(k >> 1);
		uint64_t mag = step < 0 ? 0 - (uint64_t)step : (uint64_t)step;
		/* index = next + step, below the allocations so far
		 * (next <= nalloc) */
		if (step < 0 ? mag > d->th.next : mag >= d->th.nalloc - d->th.next)
			return -1;
		uint64_t idx = d->th.next + (uint64_t)step;
		d->th.next = idx + 1;
		*out = anon_id(d, idx);
		return 0;
	}
	uint64_t nal = ring_count(d);
	if (k == 0 || k > nal || k > AP_RING)
		return -1;
	*out = scan ? 0 : d->ring[(nal - k) & (d->ring_cap - 1)];
	return 0;
}

/* Decodes one record into ev[0..n). Returns n (0 for a TRACK record, 1 or
 * 2), DEC_SKIP for TIME and SYNC, DEC_END at the end of the payload, or
 * DEC_BAD with *why set. Stack ids must be below `nstacks`. `scan` (pass
 * 1, a constant): every check is made, but the addresses of blocks named
 * by distance are not looked up (they are 0) and the ring is not kept. */
static inline __attribute__((always_inline)) int evdec_next(struct evdec *d, struct ap_event ev[2],
							    size_t nstacks, const char **why,
							    bool scan)
{
	struct evcur *c = &d->c0;
	if (c->p >= c->end || *c->p == 0)
		return DEC_END;
	uint8_t tag = *c->p++;
	uint64_t u;
	unsigned type = AP_TAG_TYPE(tag), kind = AP_TAG_KIND(tag);
	if (type >= AP_EV_TIME) {
		if (type == 7 || (tag & ~7u))
			return *why = type == 7 ? "unknown event type" : "TIME or SYNC tag with flags",
			       DEC_BAD;
		if (rd_uv(&c->p, c->end, &u) < 0)
			return *why = "bad time varint", DEC_BAD;
		uint64_t q = type == AP_EV_TIME ? d->q + u : u;
		if (q < u || q > UINT64_MAX / d->quantum)
			return *why = "time out of range", DEC_BAD;
		d->q = q;
		if (type == AP_EV_SYNC) {
			d->addr = 0;
			d->cpu = 0;
			d->sync_base = d->th.nalloc;
			if (d->sized)
				ap_size_pred_reset(d->pred);
		}
		return DEC_SKIP;
	}
	while (__builtin_expect(d->until == 0, 0)) { /* the times column says: a new quantum */
		if (d->q + d->step < d->q || d->q + d->step > UINT64_MAX / d->quantum)
			return *why = "time out of range", DEC_BAD;
		d->q += d->step;
		if (next_time(d) < 0)
			return *why = "bad varint in the times column", DEC_BAD;
	}
	d->until--;
	d->nrec++;
	d->last_q = d->q;
	if (tag & AP_TAG_CPU) {
		if (rd_uv(&c->p, c->end, &u) < 0)
			return *why = "bad cpu varint", DEC_BAD;
		if (u > UINT16_MAX)
			return *why = "cpu number out of range", DEC_BAD;
		d->cpu = (uint32_t)u;
	}
	if ((tag & AP_TAG_REF) && type == AP_EV_TRACK)
		return *why = "distance flag on a TRACK record", DEC_BAD;
	struct ap_event *e = &ev[0];
	e->ts = d->q * d->quantum;
	e->thread = d->thread;
	e->cpu = (uint16_t)d->cpu;
	switch (type) {
	case AP_EV_ALLOC: {
		uint64_t size, stack, addr = 0;
		if (((tag & AP_TAG_REF) ? (addr = scan ? 0 : anon_id(d, d->th.nalloc), 0)
					: rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0) ||
		    rd_uv(&d->cs->p, d->cs->end, &size) < 0 || rd_uv(&c->p, c->end, &stack) < 0)
			return *why = "ALLOC record runs past the end of the payload or has a bad "
				      "varint",
			       DEC_BAD;
		if (!(tag & AP_TAG_REF) && (addr = d->addr) >= d->anon_min)
			return *why = NO_ADDRESS, DEC_BAD;
		if (kind > AP_KIND_REALLOCARRAY)
			return *why = "unknown allocation kind", DEC_BAD;
		if (stack == 0)
			return *why = "ALLOC with stack id 0", DEC_BAD;
		if (stack >= nstacks)
			return *why = "stack id used before its STACK record", DEC_BAD;
		if (d->sized)
			size = predicted_size(d, (uint32_t)stack, size);
		ring_push(d, addr, scan);
		e->addr = addr;
		e->size = size;
		e->stack = (uint32_t)stack;
		e->type = AP_EV_ALLOC;
		e->kind = (uint8_t)kind;
		e->flags = AP_EVF_SAMPLED;
		d->nev++;
		return 1;
	}
	case AP_EV_FREE:
		/* every address field moves d->addr; a distance does not */
		if ((tag & AP_TAG_REF) ? rd_ref(d, &e->addr, scan) < 0
				       : rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0)
			return *why = "FREE record runs past the end of the payload, has a bad "
				      "varint or names a block not allocated before it",
			       DEC_BAD;
		if (!(tag & AP_TAG_REF))
			e->addr = d->addr;
		e->size = 0;
		e->stack = 0;
		e->type = AP_EV_FREE;
		e->kind = 0;
		e->flags = 0;
		d->nev++;
		return 1;
	case AP_EV_REALLOC: {
		uint64_t size, stack, fl, old = 0, addr = 0;
		if (((tag & AP_TAG_REF) ? rd_ref(d, &old, scan) < 0
					: rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0) ||
		    rd_uv(&c->p, c->end, &fl) < 0)
			return *why = "REALLOC record runs past the end of the payload, has a bad "
				      "varint or names a block not allocated before it",
			       DEC_BAD;
		if (!(tag & AP_TAG_REF))
			old = d->addr;
		if (((fl & AP_RF_NEW_ANON) ? (addr = scan ? 0 : anon_id(d, d->th.nalloc), 0)
					   : rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0) ||
		    rd_uv(&d->cs->p, d->cs->end, &size) < 0 || rd_uv(&c->p, c->end, &stack) < 0)
			return *why = "REALLOC record runs past the end of the payload, has a bad "
				      "varint or names a block not allocated before it",
			       DEC_BAD;
		if (kind > AP_KIND_REALLOCARRAY)
			return *why = "unknown allocation kind", DEC_BAD;
		if (stack >= nstacks)
			return *why = "stack id used before its STACK record", DEC_BAD;
		if ((fl & AP_RF_NEW_SAMPLED) && stack == 0)
			return *why = "sampled REALLOC with stack id 0", DEC_BAD;
		if ((tag & AP_TAG_REF) && !(fl & AP_RF_OLD_TRACKED))
			return *why = "REALLOC names an untracked old block by distance", DEC_BAD;
		if (d->sized)
			size = predicted_size(d, (uint32_t)stack, size);
		if (!(fl & AP_RF_NEW_ANON) && (addr = d->addr) >= d->anon_min)
			return *why = NO_ADDRESS, DEC_BAD;
		ring_push(d, addr, scan);
		int n = 0;
		if (fl & AP_RF_OLD_TRACKED) {
			e->addr = old;
			e->size = 0;
			e->stack = 0;
			e->type = AP_EV_FREE;
			e->kind = 0;
			e->flags = AP_EVF_FROM_REALLOC;
			ev[1] = *e;
			e = &ev[1];
			n = 1;
		}
		e->addr = addr;
		e->size = size;
		e->stack = (uint32_t)stack;
		e->type = AP_EV_ALLOC;
		e->kind = (uint8_t)kind;
		e->flags = AP_EVF_REALLOC | ((fl & AP_RF_NEW_SAMPLED) ? AP_EVF_SAMPLED : 0);
		d->nev += (uint64_t)n + 1;
		return n + 1;
	}
	case AP_EV_TRACK: {
		uint64_t size;
		if (rd_addr(&d->ca->p, d->ca->end, d->addr, &d->addr) < 0 ||
		    rd_uv(&d->cs->p, d->cs->end, &size) < 0)
			return *why = "TRACK record runs past the end of the payload or has a bad "
				      "varint",
			       DEC_BAD;
		return 0; /* unused: no event */
	}
	default:
		return *why = "unknown event type", DEC_BAD;
	}
}

/* Pass 1: a chunk's events (k) count into its thread's (idx) and the
 * trace's; it is remembered for pass 2. */
static int count_chunk(struct rd *r, long idx, const struct ap_chunk_counts *k,
		       const uint8_t *payload, uint32_t len, unsigned columns)
{
	struct ap_trace *t = r->t;
	if (k->records) {
		if (k->last_q > UINT64_MAX / t->time_quantum_ns)
			return corrupt(r, "time out of range");
		uint64_t last = k->last_q * t->time_quantum_ns;
		if (!r->any_event || last > r->last_ts)
			r->last_ts = last;
		r->any_event = true;
	}
	t->threads[idx].events += k->records;
	r->thread_nev[idx] += k->events;
	t->nrecords += k->records;
	AP_ALLOC_GROW(r->chunks, r->nchunks + 1, r->chunks_alloc);
	r->chunks[r->nchunks++] = (struct ev_chunk){.payload = payload, .len = len,
						    .thread = (uint32_t)idx,
						    .columns = (uint8_t)columns};
	return 0;
}

/* Pass 1 for one EVENTS chunk: validate, count, remember. */
static int scan_events(struct rd *r, uint32_t tid, const uint8_t *payload, uint32_t len,
		       unsigned columns)
{
	struct ap_trace *t = r->t;
	char newer[128];
	if (ap_chunk_flags_since(columns, r->version, newer, sizeof(newer)) < 0)
		return corrupt(r, "%s", newer);
	long idx = thread_index(r, tid);
	if (idx < 0)
		return -1;
	if (r->thread_refs[idx].counted && (columns & AP_CHUNK_F_INDEX))
		return corrupt(r, "allocation indexes without counts after a chunk with them");
	struct evdec d = {.th = r->thread_refs[idx]}; /* scanning: no ring */
	const char *bad = NULL;
	if (evdec_start(&d, payload, len, (uint32_t)idx, t->time_quantum_ns, columns, &bad) < 0)
		return corrupt(r, "%s", bad);
	struct ap_event ev[2];
	for (;;) {
		const uint8_t *rec = d.c0.p;
		const char *why = NULL;
		int n = evdec_next(&d, ev, t->nstacks, &why, true);
		if (n == DEC_END)
			break;
		if (n == DEC_BAD)
			return corrupt(r, "%s (record at byte %zu of the payload)", why,
				       (size_t)(rec - payload));
	}
	/* (identities have 40 bits for the index; the decoder does not
	 * check each ALLOC) */
	if (d.th.nalloc > AP_THREAD_ALLOCS_MAX)
		return corrupt(r, "more than 2^40 allocations in one thread");
	r->thread_refs[idx] = d.th;
	if (columns && (d.c1.p != d.c1.end || d.c2.p != d.c2.end || d.c3.p != d.c3.end ||
			d.c4.p != d.c4.end))
		return corrupt(r, "columns of a size the records do not use");
	struct ap_chunk_counts k = {d.nrec, d.nev, 0, d.last_q};
	return count_chunk(r, idx, &k, payload, len, columns);
}

/* The checks of a compressed payload (AP_CHUNK_F_ZSTD) that need no
 * decompressing: `u32 raw_len` and a zstd frame that says it holds
 * raw_len bytes (at most a payload's) and is exactly the rest. Nothing
 * is allocated before they hold. -1 with r's error set if one fails. */
static int zframe_check(struct rd *r, const uint8_t *payload, uint32_t len)
{
	if (len < 4)
		return corrupt(r, "compressed payload of %u bytes has no length", len);
	uint32_t raw = ap_get_u32le(payload);
	if (raw > AP_CHUNK_MAX_PAYLOAD)
		return corrupt(r, "decompressed length %u exceeds %u", raw, AP_CHUNK_MAX_PAYLOAD);
	if (ZSTD_getFrameContentSize(payload + 4, len - 4) != raw)
		return corrupt(r, "compressed payload is not a zstd frame of %u bytes", raw);
	if (ZSTD_findFrameCompressedSize(payload + 4, len - 4) != len - 4)
		return corrupt(r, "compressed payload is not exactly one zstd frame");
	return 0;
}

/* Pass 1 for an EVENTS chunk with AP_CHUNK_F_COUNTS (ch): its counts, and
 * the checks that need no decoding; pass 2 decodes it, and checks the
 * rest (file_corrupt). */
static int count_events(struct rd *r, const struct ap_chunk *ch)
{
	unsigned columns = ch->flags & (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
					AP_CHUNK_F_SIZES | AP_CHUNK_F_XOWN | AP_CHUNK_F_COUNTS);
	char newer[128];
	if (ap_chunk_flags_since(columns, r->version, newer, sizeof(newer)) < 0)
		return corrupt(r, "%s", newer);
	long idx = thread_index(r, ch->tid);
	if (idx < 0)
		return -1;
	const uint8_t *p = ch->payload, *end = ch->payload + ch->len;
	struct ap_chunk_counts k;
	if (ap_get_chunk_counts(&p, end, &k) < 0)
		return corrupt(r, "the counts run past the end of the payload");
	if ((ch->flags & AP_CHUNK_F_ZSTD) && zframe_check(r, p, (uint32_t)(end - p)) < 0)
		return -1;
	/* a record takes a byte or more of the payload, and makes two
	 * ap_events at most (a REALLOC) */
	uint32_t raw = (ch->flags & AP_CHUNK_F_ZSTD) ? ap_get_u32le(p) : (uint32_t)(end - p);
	if (k.records > raw || k.events > 2 * k.records || k.allocs > k.records)
		return corrupt(r, "counts the payload cannot hold");
	struct thread_refs *th = &r->thread_refs[idx];
	if (k.allocs > AP_THREAD_ALLOCS_MAX - th->nalloc)
		return corrupt(r, "more than 2^40 allocations in one thread");
	th->nalloc += k.allocs;
	th->counted = true;
	if (count_chunk(r, idx, &k, ch->payload, ch->len, columns & ~AP_CHUNK_F_COUNTS) < 0)
		return -1;
	struct ev_chunk *e = &r->chunks[r->nchunks - 1];
	e->counted = true;
	e->skip = (uint8_t)(p - ch->payload);
	e->want = k;
	return 0;
}

int ap_trace_decode_events(const uint8_t *payload, size_t len, unsigned flags, uint64_t quantum,
			   struct ap_decode_thread *th, struct ap_event **ev, size_t *nev,
			   size_t *alloc, const char **why)
{
	struct evdec d = {0};
	int rc = 0;
	if (len > UINT32_MAX || !quantum) {
		*why = len > UINT32_MAX ? "payload too long" : "time quantum 0";
		return -1;
	}
	d.th = (struct thread_refs){th->nalloc, th->next, th->xnext, th->xo, false};
	if (flags & AP_CHUNK_F_SIZES)
		d.pred = ap_xcalloc(1, sizeof(*d.pred));
	if (evdec_start(&d, payload, (uint32_t)len, th->thread, quantum,
			flags & (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS | AP_CHUNK_F_INDEX |
				 AP_CHUNK_F_SIZES | AP_CHUNK_F_XOWN),
			why) < 0) {
		free(d.pred);
		return -1;
	}
	for (;;) {
		AP_ALLOC_GROW(*ev, *nev + 2, *alloc);
		int n = evdec_next(&d, *ev + *nev, SIZE_MAX, why, false);
		if (n == DEC_END)
			break;
		if (n == DEC_BAD) {
			rc = -1;
			break;
		}
		if (n > 0)
			*nev += (size_t)n;
	}
	free(d.ring);
	free(d.pred);
	th->nalloc = d.th.nalloc;
	th->next = d.th.next;
	th->xnext = d.th.xnext;
	th->xo = d.th.xo;
	if (!rc && th->nalloc > AP_THREAD_ALLOCS_MAX) {
		*why = "more than 2^40 allocations in one thread";
		rc = -1;
	}
	return rc;
}

/* ---- pass 2: the k-way merge, streamed ----
 *
 * The reader keeps the file (open, or read into memory) and the list of
 * EVENTS chunks pass 1 checked; each iteration over the events (events.c)
 * merges the threads' chunks again, a batch at a time, decoding one chunk
 * per thread at a time (decompressing it into the thread's buffer). */

/* The events of a file the reader checked (ap_trace.src): read again
 * from the file, a chunk at a time (fd), or from the reader's copy of it
 * (buf). A file is not kept mapped: another process truncating it would
 * make a mapping fault; a chunk that reads short or with another checksum
 * than pass 1 saw ends its thread's events there and marks the trace
 * changed (ap_trace_changed). */
struct file_src {
	struct ap_evsrc base;
	int fd;			/* the file; -1: in buf */
	uint8_t *buf;
	int changed;		/* atomic */
	struct ev_chunk *chunks;
	size_t nchunks;
	uint32_t *order;	/* chunk indexes grouped by thread, file order */
	size_t *start;		/* thread i's: order[start[i], start[i + 1]) */
	size_t nthreads;
	uint64_t quantum;
	uint64_t anon_min;	/* the anonymous identities' floor (ap_trace_enc.h) */
	struct ap_u64map tids; /* tid -> thread index, for REFs across threads */
	size_t nstacks;	 /* the stack ids events may use */
	char *name;	 /* the file's, for messages */
};

/* One thread's events, decoded as the merge asks for them. */
struct stream {
	struct evdec d;
	const uint32_t *chunk; /* this thread's chunk indexes, file order */
	size_t nchunk, ci;
	struct ap_event buf[2]; /* the record being handed out (REALLOC: 2) */
	int nbuf, bi;		/* buf[bi] is the stream's head */
	uint8_t *raw;		/* the current chunk, decompressed */
	size_t raw_cap;
	uint8_t *in;		/* the current chunk as stored, read from the file */
	size_t in_cap;
	const struct ev_chunk *cur; /* the chunk being decoded (NULL: none, or given up) */
	const uint8_t *pay;	    /* its payload */
	uint64_t nalloc0;	    /* the thread's allocations before it */
};

/* The pages of the mapped file (map, size bytes; NULL: not mapped) that
 * lie wholly inside [p, p + len) are not needed again by pass 1: let them
 * go from the process (they stay in the page cache), so that memory does
 * not grow with the file. */
static void drop_mapped(const uint8_t *map, size_t size, const uint8_t *p, size_t len)
{
	if (!map || p < map || len > size || p > map + size - len)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice only */
}

/* Decompresses an AP_CHUNK_F_ZSTD payload (z, len bytes) pass 1 checked
 * into *raw. */
static bool unzstd(ZSTD_DCtx *zd, const uint8_t *z, uint32_t len, uint8_t **raw, size_t *cap,
		   uint32_t *rawlen)
{
	uint32_t n = ap_get_u32le(z);
	AP_ALLOC_GROW(*raw, n ? n : 1, *cap);
	size_t got = ZSTD_decompressDCtx(zd, *raw, n, z + 4, len - 4);
	*rawlen = n;
	return !ZSTD_isError(got) && got == n;
}

/* Chunk c as stored: in the reader's copy, or read into *in again and
 * checked against pass 1's checksum. NULL: the file changed. */
static const uint8_t *chunk_bytes(struct file_src *f, uint8_t **in, size_t *cap,
				  const struct ev_chunk *c)
{
	if (f->fd < 0)
		return f->buf + c->off;
	AP_ALLOC_GROW(*in, c->len ? c->len : 1, *cap);
	size_t got = 0;
	while (got < c->len) {
		ssize_t n = pread(f->fd, *in + got, c->len - got, (off_t)(c->off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		got += (size_t)n;
	}
	return ap_crc32c(*in, c->len) == c->crc ? *in : NULL;
}

/* Chunk c's payload, decompressed if it is, read with the buffers given
 * (NULL: the file changed, or *bad: it does not decompress); *len its
 * length. */
static const uint8_t *chunk_payload(struct file_src *f, ZSTD_DCtx *zd, const struct ev_chunk *c,
				    uint8_t **in, size_t *in_cap, uint8_t **raw, size_t *raw_cap,
				    uint32_t *len, bool *bad)
{
	const uint8_t *payload = chunk_bytes(f, in, in_cap, c);
	*bad = false;
	if (!payload)
		return NULL;
	payload += c->skip;
	*len = c->len - c->skip;
	if (c->zstd && !unzstd(zd, payload, *len, raw, raw_cap, len)) {
		*bad = true;
		return NULL;
	}
	return c->zstd ? *raw : payload;
}

/* A heap entry: the stream's head time, and the stream (= thread index,
 * which breaks ties). */
struct hkey {
	uint64_t ts;
	size_t s;
};

static inline bool hkey_less(const struct hkey *a, const struct hkey *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->s < b->s);
}

static void heap_down(struct hkey *h, size_t n)
{
	size_t k = 0;
	struct hkey x = h[0];
	for (;;) {
		size_t c = 2 * k + 1;
		if (c >= n)
			break;
		if (c + 1 < n && hkey_less(&h[c + 1], &h[c]))
			c++;
		if (!hkey_less(&h[c], &x))
			break;
		h[k] = h[c];
		k = c;
	}
	h[k] = x;
}

static void heap_push(struct hkey *h, size_t *n, struct hkey x)
{
	size_t k = (*n)++;
	while (k && hkey_less(&x, &h[(k - 1) / 2])) {
		h[k] = h[(k - 1) / 2];
		k = (k - 1) / 2;
	}
	h[k] = x;
}

/* ---- cross-thread order within a quantum ----
 *
 * Events carry the time of their quantum, so the merge cannot tell the
 * order of two threads' events in one quantum: a FREE by thread B of a
 * block thread A allocated in that quantum may come first. The merge keeps
 * the addresses of live blocks; a stream whose head is a FREE of an address
 * that is not live, or an ALLOC at an address that is, is held back while
 * other streams still have events in the same quantum, and is let go right
 * after the event that unblocks it (the ALLOC, or the FREE), or when the
 * quantum is over (it was not an ordering problem: a free of a block
 * allocated before the sampler started, say). Each thread's own order is
 * kept. */
struct live_slot {
	uint64_t key;
	uint32_t cnt; /* 0: empty slot */
	uint32_t own; /* the stream of the last ALLOC there */
};

struct live {
	struct live_slot *slot;
	size_t mask, n;
};

static inline size_t live_hash(uint64_t a, size_t mask)
{
	return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 24) & mask;
}

/* a's slot, or the empty one where it would go. */
static inline struct live_slot *live_find(const struct live *l, uint64_t a)
{
	size_t i = live_hash(a, l->mask);
	while (l->slot[i].cnt && l->slot[i].key != a)
		i = (i + 1) & l->mask;
	return &l->slot[i];
}

static void live_alloc(struct live *l, size_t cap)
{
	l->mask = cap - 1;
	l->slot = ap_xcalloc(cap, sizeof(*l->slot));
}

static void live_add(struct live *l, uint64_t a, uint32_t own)
{
	if ((l->n + 1) * 2 > l->mask + 1) {
		struct live o = *l;
		live_alloc(l, (o.mask + 1) * 2);
		for (size_t i = 0; i <= o.mask; i++)
			if (o.slot[i].cnt)
				*live_find(l, o.slot[i].key) = o.slot[i];
		free(o.slot);
	}
	struct live_slot *x = live_find(l, a);
	if (!x->cnt) {
		x->key = a;
		l->n++;
	}
	x->cnt++;
	x->own = own;
}

/* One block at a fewer (none if absent); backward-shift deletion. */
static void live_del(struct live *l, uint64_t a)
{
	struct live_slot *x = live_find(l, a);
	if (!x->cnt || --x->cnt)
		return;
	l->n--;
	size_t i = (size_t)(x - l->slot);
	for (size_t j = (i + 1) & l->mask; l->slot[j].cnt; j = (j + 1) & l->mask) {
		size_t home = live_hash(l->slot[j].key, l->mask);
		/* can j's entry move to the hole at i? (home not in (i, j]) */
		if (((j - home) & l->mask) >= ((j - i) & l->mask)) {
			l->slot[i] = l->slot[j];
			l->slot[j].cnt = 0;
			i = j;
		}
	}
}

/* Would e unblock a head waiting on h? */
static inline bool ev_unblocks(const struct ap_event *e, const struct ap_event *h)
{
	return e->addr == h->addr && e->type != h->type;
}

struct merge {
	struct file_src *f;
	ZSTD_DCtx *zd;
	struct stream *st;
	struct hkey *heap, *held; /* held: streams held back, key = head time */
	size_t nheap, nheld;
	struct live live;
	bool track;
	/* the last ALLOC handed out, not yet in live: most blocks are freed
	 * by the very next event, and then never go in */
	bool pend;
	uint32_t pend_own;
	uint64_t pend_addr;
	struct ap_event *out;	/* the batch: room for AP_EVENTS_BATCH + a chain */
	size_t nout;
	/* frees_own_later's: a stream's next chunk, as stored and decompressed
	 * (chunk la_chunk - 1 of the file, 0: none), kept for the next ask */
	uint8_t *la_in, *la_raw;
	size_t la_in_cap, la_raw_cap;
	size_t la_chunk;
	const uint8_t *la_payload;
	uint32_t la_len;
	/* the first chunk this iteration found corrupt (file_corrupt): the
	 * batch it was found in is not handed out, and the iteration ends */
	bool bad;
	char why[320];
};

/* This iteration found chunk c corrupt: the first such message is kept,
 * for file_next to return. */
static void file_corrupt(struct merge *m, const struct ev_chunk *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void file_corrupt(struct merge *m, const struct ev_chunk *c, const char *fmt, ...)
{
	if (m->bad)
		return;
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(m->why, sizeof(m->why), "%s: corrupt chunk at byte %llu: %s", m->f->name,
		 (unsigned long long)(c->off - AP_CHUNK_HDR_LEN), why);
	m->bad = true;
}

/* How far frees_own_later looks: records of the stream (its current
 * chunk and the ones after it). */
#define OWN_LOOKAHEAD 256

/* Stream s (its head onwards) in quantum ts: does it free the block at addr
 * (one it allocated) before it allocates at addr again, within ts? Then a
 * FREE of addr by another thread in ts is not of that block, whose address
 * the other thread only saw reused: a block is freed once, and its own
 * thread frees this one. (A thread passing blocks on and freeing its own,
 * all at one address within a quantum, made the merge pair the wrong ones:
 * 1 free in 4,000 unmatched on a 4-thread C++ program.) Looks ahead
 * without consuming: on a copy of the decoder, whose ring slots it writes
 * are put back afterwards (the ring is shared with the real decoder). */
static bool frees_own_later(struct merge *m, struct stream *s, uint64_t addr, uint64_t ts)
{
	for (int i = s->bi; i < s->nbuf; i++) {
		const struct ap_event *e = &s->buf[i];
		if (e->ts != ts)
			return false;
		if (e->addr == addr)
			return e->type == AP_EV_FREE;
	}
	struct evdec d = s->d;
	d.sized = false; /* (sizes are not looked at: the table stays as it is) */
	/* ca and cs point into the decoder itself */
	d.ca = s->d.ca == &s->d.c1 ? &d.c1 : &d.c0;
	d.cs = s->d.cs == &s->d.c2 ? &d.c2 : &d.c0;
	struct {
		size_t slot;
		uint64_t old;
	} saved[OWN_LOOKAHEAD];
	int nsaved = 0;
	bool own = false;
	size_t ci = s->ci; /* the stream's next chunk */
	for (int steps = 0; steps < OWN_LOOKAHEAD; steps++) {
		/* an ALLOC next would grow the ring (reallocating it): stop
		 * (REFs by index use no ring) */
		if (!d.index && ring_count(&d) == d.ring_cap && d.ring_cap < AP_RING)
			break;
		size_t slot = d.index ? 0 : ring_count(&d) & (d.ring_cap - 1);
		uint64_t nal = d.th.nalloc, old = d.index ? 0 : d.ring[slot];
		struct ap_event ev[2];
		const char *why;
		int n = evdec_next(&d, ev, SIZE_MAX, &why, false);
		if (!d.index && d.th.nalloc != nal)
			saved[nsaved++] = (typeof(saved[0])){slot, old};
		if (n == 0 || n == DEC_SKIP)
			continue;
		if (n == DEC_END && ci < s->nchunk) {
			/* on into the thread's next chunk, read apart (where
			 * a chunk ends must not change the merge's order) */
			const struct ev_chunk *c = &m->f->chunks[s->chunk[ci]];
			if (m->la_chunk != s->chunk[ci] + 1) {
				/* (a FREE after another at the chunk's end asks
				 * again: read it once) */
				bool bad_unused;
				m->la_payload = chunk_payload(m->f, m->zd, c, &m->la_in,
							      &m->la_in_cap, &m->la_raw,
							      &m->la_raw_cap, &m->la_len, &bad_unused);
				m->la_chunk = m->la_payload ? s->chunk[ci] + 1 : 0;
			}
			ci++;
			const char *why_unused;
			d.pred = NULL; /* (the stream's size table stays as it is) */
			if (m->la_payload &&
			    evdec_start(&d, m->la_payload, m->la_len, (uint32_t)c->thread,
					m->f->quantum, c->columns, &why_unused) == 0)
				continue;
			break;
		}
		if (n < 0)
			break;
		int k;
		for (k = 0; k < n; k++)
			if (ev[k].ts != ts || ev[k].addr == addr)
				break;
		if (k < n) {
			own = ev[k].ts == ts && ev[k].type == AP_EV_FREE;
			break;
		}
	}
	while (nsaved--)
		s->d.ring[saved[nsaved].slot] = saved[nsaved].old;
	return own;
}


/* Stream s's chunk ended: true if it holds what its counts say (a chunk
 * pass 1 decoded holds it). */
static bool chunk_end_ok(struct merge *m, struct stream *s)
{
	const struct ev_chunk *c = s->cur;
	const struct evdec *d = &s->d;
	if (!c || !c->counted)
		return true;
	if (c->columns && (d->c1.p != d->c1.end || d->c2.p != d->c2.end || d->c3.p != d->c3.end ||
			   d->c4.p != d->c4.end)) {
		file_corrupt(m, c, "columns of a size the records do not use");
		return false;
	}
	if (d->nrec != c->want.records || d->nev != c->want.events ||
	    d->th.nalloc - s->nalloc0 != c->want.allocs ||
	    (d->nrec && d->last_q != c->want.last_q)) {
		file_corrupt(m, c,
			     "its counts say %llu records, %llu events and %llu allocations, "
			     "its payload holds %llu, %llu and %llu%s",
			     (unsigned long long)c->want.records, (unsigned long long)c->want.events,
			     (unsigned long long)c->want.allocs, (unsigned long long)d->nrec,
			     (unsigned long long)d->nev,
			     (unsigned long long)(d->th.nalloc - s->nalloc0),
			     d->nrec && d->last_q != c->want.last_q ? ", ending at another time" : "");
		return false;
	}
	return true;
}

/* Stream s's decoder found its chunk corrupt (why): it is said, and the
 * stream ends here (its decoder at the payload's end). */
static void stream_bad(struct merge *m, struct stream *s, const char *why)
{
	if (s->cur)
		file_corrupt(m, s->cur, "%s (near byte %zu of the payload)", why,
			     (size_t)(s->d.c0.p - s->pay));
	s->cur = NULL;
	s->ci = s->nchunk;
	s->d.c0.p = s->d.c0.end;
}

/* Moves s to its next event (s->buf[s->bi]); false when it has no more. */
static bool stream_advance(struct merge *m, struct stream *s)
{
	if (++s->bi < s->nbuf)
		return true;
	for (;;) {
		const char *why;
		int n = s->ci ? evdec_next(&s->d, s->buf, m->f->nstacks, &why, false) : DEC_END;
		if (n > 0) {
			s->nbuf = n;
			s->bi = 0;
			return true;
		}
		if (n == 0 || n == DEC_SKIP)
			continue; /* a TRACK, TIME or SYNC record */
		/* end of this chunk (DEC_BAD only in one pass 1 did not decode) */
		if (n == DEC_BAD)
			stream_bad(m, s, why);
		else if (!chunk_end_ok(m, s))
			s->ci = s->nchunk;
		const struct ev_chunk *c =
		    s->ci < s->nchunk ? &m->f->chunks[s->chunk[s->ci++]] : NULL;
		uint32_t len = 0;
		bool bad = false;
		const uint8_t *payload =
		    c ? chunk_payload(m->f, m->zd, c, &s->in, &s->in_cap, &s->raw, &s->raw_cap, &len,
				      &bad)
		      : NULL;
		const char *why_start = "does not decompress";
		if (payload) {
			if ((c->columns & AP_CHUNK_F_SIZES) && !s->d.pred)
				s->d.pred = ap_xcalloc(1, sizeof(*s->d.pred));
			s->d.nrec = s->d.nev = s->d.last_q = 0;
			s->nalloc0 = s->d.th.nalloc;
			s->cur = c;
			s->pay = payload;
			if (evdec_start(&s->d, payload, len, (uint32_t)c->thread, m->f->quantum,
					c->columns, &why_start) == 0)
				continue;
			bad = true;
		}
		if (bad)
			file_corrupt(m, c, "%s", why_start);
		else if (c)
			__atomic_store_n(&m->f->changed, 1, __ATOMIC_RELAXED);
		s->ci = s->nchunk;
		s->cur = NULL;
		/* the decoder points into what is freed here: an empty
		 * payload instead, for frees_own_later, which may look
		 * at a stream that has ended */
		static const uint8_t none[1];
		const char *why_unused;
		evdec_start(&s->d, none, 0, s->d.thread, m->f->quantum, 0, &why_unused);
		free(s->raw);
		free(s->in);
		s->raw = s->in = NULL;
		s->raw_cap = s->in_cap = 0;
		return false;
	}
}

/* Is an ALLOC at addr at an address no block had before (an anonymous
 * identity: each is a thread's n-th allocation)? */
static inline bool fresh(const struct merge *m, uint64_t addr)
{
	return addr >= m->f->anon_min;
}

/* live, as the merge hands out e (of stream si). An ALLOC waits in pend;
 * a FREE at its address right after it cancels it out (the set is as if
 * both had gone through it: a block there before it is owned by pend's
 * stream). */
static inline void live_track(struct merge *m, const struct ap_event *e, size_t si)
{
	if (m->pend) {
		if (e->type != AP_EV_ALLOC && e->addr == m->pend_addr) {
			m->pend = false;
			if (!fresh(m, e->addr)) {
				struct live_slot *x = live_find(&m->live, e->addr);
				if (x->cnt)
					x->own = m->pend_own;
			}
			return;
		}
		live_add(&m->live, m->pend_addr, m->pend_own);
	}
	m->pend = e->type == AP_EV_ALLOC;
	if (m->pend) {
		m->pend_addr = e->addr;
		m->pend_own = (uint32_t)si;
	} else {
		live_del(&m->live, e->addr);
	}
}

/* Must stream si's head e wait? A FREE waits for a live block at its
 * address that its own thread does not free later in the quantum; an
 * ALLOC, for its address to be free. */
static bool ev_blocked(struct merge *m, size_t si, const struct ap_event *e)
{
	uint32_t c, own;
	if (e->type == AP_EV_ALLOC && fresh(m, e->addr))
		return false;
	if (m->pend && m->pend_addr == e->addr) {
		c = 1; /* (and those in live) */
		own = m->pend_own;
	} else {
		const struct live_slot *x = live_find(&m->live, e->addr);
		c = x->cnt;
		own = x->own;
	}
	if (e->type != AP_EV_FREE)
		return c != 0;
	return c == 0 || (own != si && frees_own_later(m, &m->st[own], e->addr, e->ts));
}

/* Does stream si, out of the heap, keep its turn with the next event h:
 * would the heap hand h out next, and file_next not hold it back? */
static inline bool turn_keeps(struct merge *m, size_t si, const struct ap_event *h)
{
	return !m->nheld && m->nheap && m->nout < AP_EVENTS_BATCH &&
	       (h->ts < m->heap[0].ts ||
		(h->ts == m->heap[0].ts && si < m->heap[0].s && !ev_blocked(m, si, h)));
}

/* Stream si's turn, its head just handed out and none held: its records
 * decoded straight into the batch while it keeps the turn. Leaves its next
 * head in s->buf; false when it has no more. */
static bool stream_turn(struct merge *m, size_t si)
{
	struct stream *s = &m->st[si];
	while (m->nout < AP_EVENTS_BATCH) {
		struct ap_event *ev = m->out + m->nout;
		const char *why;
		int n = evdec_next(&s->d, ev, m->f->nstacks, &why, false);
		if (n == 0 || n == DEC_SKIP)
			continue;
		if (n == DEC_BAD)
			stream_bad(m, s, why);
		if (n < 0)
			break; /* the chunk's end */
		for (int k = 0; k < n; k++) {
			if (!turn_keeps(m, si, &ev[k])) {
				/* (ev[0] of 2 handed out: the head is buf[1]) */
				memcpy(s->buf, ev, (size_t)n * sizeof(*ev));
				s->nbuf = n;
				s->bi = k;
				return true;
			}
			live_track(m, &ev[k], si);
			m->nout++;
		}
	}
	s->nbuf = s->bi = 0;
	return stream_advance(m, s);
}

/* Hands out stream si's head, then the heads of held streams it unblocks
 * (and those theirs); each goes back into the heap with its next event.
 * si must not be in the heap. */
static void merge_emit(struct merge *m, size_t si)
{
	for (;;) {
		struct stream *s = &m->st[si];
		struct ap_event e = s->buf[s->bi];
		m->out[m->nout++] = e;
		if (m->track)
			live_track(m, &e, si);
		/* its next still comes before every other stream's head (a
		 * thread's turn): at once, as the heap would give it */
		bool more = m->nheap && !m->nheld && s->bi + 1 >= s->nbuf ? stream_turn(m, si)
									  : stream_advance(m, s);
		if (more && turn_keeps(m, si, &s->buf[s->bi]))
			continue;
		if (more)
			heap_push(m->heap, &m->nheap, (struct hkey){s->buf[s->bi].ts, si});
		size_t k;
		int own = -1; /* frees_own_later(s, ...), asked once */
		for (k = 0; k < m->nheld; k++) {
			struct stream *w = &m->st[m->held[k].s];
			if (!ev_unblocks(&e, &w->buf[w->bi]))
				continue;
			if (e.type != AP_EV_ALLOC)
				break;
			if (own < 0)
				own = more && frees_own_later(m, s, e.addr, e.ts);
			if (!own)
				break;
		}
		if (k == m->nheld)
			return;
		si = m->held[k].s;
		m->held[k] = m->held[--m->nheld];
	}
}

/* Lets the earliest held stream go: its head is handed out as it is. */
static void merge_release(struct merge *m)
{
	size_t best = 0;
	for (size_t k = 1; k < m->nheld; k++)
		if (hkey_less(&m->held[k], &m->held[best]))
			best = k;
	size_t si = m->held[best].s;
	m->held[best] = m->held[--m->nheld];
	merge_emit(m, si);
}

static void *file_open(struct ap_evsrc *src)
{
	struct file_src *f = (struct file_src *)src;
	size_t nth = f->nthreads;
	struct merge *m = ap_xcalloc(1, sizeof(*m));
	m->f = f;
	if (!(m->zd = ZSTD_createDCtx()))
		abort(); /* out of memory, as ap_xmalloc */
	m->st = ap_xcalloc(nth ? nth : 1, sizeof(*m->st));
	m->heap = ap_xmalloc((nth ? nth : 1) * sizeof(*m->heap));
	m->held = ap_xmalloc((nth ? nth : 1) * sizeof(*m->held));
	/* a chain of unblocked held streams is emitted whole */
	m->out = ap_xmalloc((AP_EVENTS_BATCH + nth + 2) * sizeof(*m->out));
	for (size_t i = 0; i < nth; i++) {
		m->st[i].chunk = f->order + f->start[i];
		m->st[i].d.tids = &f->tids;
		m->st[i].d.anon_min = f->anon_min;
		m->st[i].nchunk = f->start[i + 1] - f->start[i];
		if (stream_advance(m, &m->st[i]))
			heap_push(m->heap, &m->nheap, (struct hkey){m->st[i].buf[m->st[i].bi].ts, i});
	}
	/* One thread needs no live set: nothing can be out of order. */
	m->track = m->nheap > 1;
	if (m->track)
		live_alloc(&m->live, 1024);
	return m;
}

static ssize_t file_next(void *state, const struct ap_event **out, struct ap_error *err)
{
	struct merge *m = state;
	m->nout = 0;
	*out = m->out;
	while (m->nout < AP_EVENTS_BATCH && !m->bad) {
		if (m->nheld) {
			/* held streams wait only while their quantum has other events */
			uint64_t held_ts = m->held[0].ts;
			for (size_t k = 1; k < m->nheld; k++)
				if (m->held[k].ts < held_ts)
					held_ts = m->held[k].ts;
			if (!m->nheap || m->heap[0].ts > held_ts) {
				merge_release(m);
				continue;
			}
		} else if (m->nheap == 1) {
			/* the last stream left: straight through, decoded into
			 * the batch (its head, then record after record) */
			struct stream *s = &m->st[m->heap[0].s];
			bool more = true;
			for (; s->bi < s->nbuf; s->bi++)
				m->out[m->nout++] = s->buf[s->bi];
			while (m->nout + 2 <= AP_EVENTS_BATCH) {
				const char *why;
				int n = evdec_next(&s->d, m->out + m->nout, m->f->nstacks, &why,
						   false);
				if (n > 0) {
					m->nout += (size_t)n;
					continue;
				}
				if (n == 0 || n == DEC_SKIP)
					continue;
				if (n == DEC_BAD)
					stream_bad(m, s, why);
				/* the chunk's end: the next one's first record */
				if (!(more = stream_advance(m, s)))
					break;
				for (; s->bi < s->nbuf; s->bi++)
					m->out[m->nout++] = s->buf[s->bi];
			}
			/* the batch is full: the stream's next head, if any */
			if (more)
				more = stream_advance(m, s);
			if (!more)
				m->nheap = 0;
			else
				m->heap[0].ts = s->buf[s->bi].ts;
			continue;
		}
		if (!m->nheap)
			break;
		struct hkey top = m->heap[0];
		m->heap[0] = m->heap[--m->nheap];
		heap_down(m->heap, m->nheap);
		struct stream *s = &m->st[top.s];
		if (m->track && m->nheap && m->heap[0].ts == top.ts &&
		    ev_blocked(m, top.s, &s->buf[s->bi])) {
			m->held[m->nheld++] = top;
			continue;
		}
		merge_emit(m, top.s);
	}
	if (m->bad)
		return ap_error_set(err, "%s", m->why);
	return (ssize_t)m->nout;
}

static void file_close(void *state)
{
	struct merge *m = state;
	for (size_t i = 0; i < m->f->nthreads; i++) {
		free(m->st[i].d.ring);
		free(m->st[i].d.pred);
		free(m->st[i].raw);
		free(m->st[i].in);
	}
	ZSTD_freeDCtx(m->zd);
	free(m->live.slot);
	free(m->held);
	free(m->la_in);
	free(m->la_raw);
	free(m->heap);
	free(m->st);
	free(m->out);
	free(m);
}

static void file_release(struct ap_evsrc *src)
{
	struct file_src *f = (struct file_src *)src;
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f->chunks);
	free(f->order);
	free(f->start);
	free(f->name);
	ap_u64map_release(&f->tids);
	free(f);
}

static bool file_changed(const struct ap_evsrc *src)
{
	return __atomic_load_n(&((const struct file_src *)src)->changed, __ATOMIC_RELAXED);
}

static const struct ap_evsrc_ops file_ops = {file_open, file_next, file_close, file_release,
					     file_changed};

/* After pass 1: the source of r's events, the file handed over to it
 * (its descriptor, or the reader's copy). */
static void make_source(struct rd *r)
{
	struct ap_trace *t = r->t;
	size_t nth = t->nthreads;
	struct file_src *f = ap_xcalloc(1, sizeof(*f));
	f->base.ops = &file_ops;
	f->fd = r->fd;
	f->buf = r->buf;
	f->nthreads = nth;
	f->quantum = t->time_quantum_ns;
	f->anon_min = nth > AP_ANON_LOW_THREADS ? AP_ANON_MIN : AP_ANON_BASE;
	f->nstacks = t->nstacks;
	f->name = ap_xstrdup(r->name ? r->name : "trace");
	ap_u64map_init(&f->tids, nth + 1);
	for (size_t i = 0; i < nth; i++)
		ap_u64map_put(&f->tids, t->threads[i].tid, (uint32_t)i);
	f->chunks = r->chunks;
	f->nchunks = r->nchunks;
	r->chunks = NULL;
	for (size_t i = 0; i < f->nchunks; i++)
		f->chunks[i].payload = NULL; /* read again from f->off */
	/* Group chunk indexes by thread, keeping file order (counting sort). */
	f->start = ap_xcalloc(nth + 1, sizeof(*f->start));
	for (size_t i = 0; i < f->nchunks; i++)
		f->start[f->chunks[i].thread + 1]++;
	for (size_t i = 0; i < nth; i++)
		f->start[i + 1] += f->start[i];
	f->order = ap_xmalloc((f->nchunks + 1) * sizeof(*f->order));
	size_t *fill = ap_xmalloc((nth + 1) * sizeof(*fill));
	memcpy(fill, f->start, (nth + 1) * sizeof(*fill));
	for (size_t i = 0; i < f->nchunks; i++)
		f->order[fill[f->chunks[i].thread]++] = (uint32_t)i;
	free(fill);
	t->src = &f->base;
	uint64_t total = 0;
	for (size_t i = 0; i < nth; i++)
		total += r->thread_nev[i];
	t->nev = (size_t)total;
	t->last_ts = r->any_event ? r->last_ts : 0;
}

/* ---- mappings ---- */

static int range_cmp(const void *a, const void *b)
{
	const struct ap_map_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Builds the disjoint lookup index: each mapping in order cuts what it
 * overlaps out of the ranges of the ones before it. */
void ap_trace_index_maps(struct ap_trace *t)
{
	struct ap_map_range *ix = NULL;
	size_t n = 0, alloc = 0;
	for (size_t m = 0; m < t->nmaps; m++) {
		uint64_t s = t->maps[m].start, e = t->maps[m].end;
		if (s >= e)
			continue;
		size_t out = 0;
		size_t nold = n;
		AP_ALLOC_GROW(ix, n + 2, alloc);
		for (size_t i = 0; i < nold; i++) {
			struct ap_map_range x = ix[i];
			if (x.end <= s || x.start >= e) {
				ix[out++] = x;
				continue;
			}
			if (x.start < s)
				ix[out++] = (struct ap_map_range){x.start, s, x.map};
			if (x.end > e) {
				/* a range cut in two: the right part goes at the end */
				AP_ALLOC_GROW(ix, n + 2, alloc);
				ix[n++] = (struct ap_map_range){e, x.end, x.map};
			}
		}
		/* move the right parts added past nold down after `out` */
		size_t extra = n - nold;
		memmove(ix + out, ix + nold, extra * sizeof(*ix));
		n = out + extra;
		AP_ALLOC_GROW(ix, n + 1, alloc);
		ix[n++] = (struct ap_map_range){s, e, m};
	}
	if (n)
		qsort(ix, n, sizeof(*ix), range_cmp);
	t->map_index = ix;
	t->nmap_index = n;
}

const struct ap_mapping *ap_trace_mapping_for(const struct ap_trace *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nmap_index;
	while (lo < hi) { /* first range with start > pc */
		size_t mid = lo + (hi - lo) / 2;
		if (t->map_index[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct ap_map_range *x = &t->map_index[lo - 1];
	return pc < x->end ? &t->maps[x->map] : NULL;
}

/* ---- the file ---- */

static int read_preamble(struct rd *r)
{
	if (r->size < AP_TRACE_MAGIC_LEN || memcmp(r->data, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN))
		return ap_error_set(r->err, "%s: not an allocprof trace", r->name);
	if (r->size < AP_TRACE_PREAMBLE_LEN)
		return ap_error_set(
		    r->err, "%s: truncated trace: the file ends inside its preamble", r->name);
	uint32_t version = ap_get_u32le(r->data + 8);
	uint32_t bom = ap_get_u32le(r->data + 12);
	if (version < AP_TRACE_VERSION_MIN || version > AP_TRACE_VERSION)
		return ap_error_set(r->err, "%s: trace format version %u, this allocprof reads %u "
				    "to %u: recorded by %s allocprof%s",
				    r->name, version, AP_TRACE_VERSION_MIN, AP_TRACE_VERSION,
				    version < AP_TRACE_VERSION ? "an older" : "a newer",
				    version < AP_TRACE_VERSION ? " (record it again)" : "");
	r->version = version;
	if (bom != AP_TRACE_BOM)
		return ap_error_set(r->err,
				    "%s: wrong byte-order mark %#010x (expected %#010x): written "
				    "on a machine of another byte order, or damaged",
				    r->name, bom, AP_TRACE_BOM);
	return 0;
}

/* A compressed payload (AP_CHUNK_F_ZSTD): `u32 raw_len` and a zstd frame
 * that must say, and give, exactly raw_len bytes. Nothing is allocated
 * before the frame's own header agrees with raw_len, and raw_len is bounded
 * like any payload. On success *payload and *len are the decompressed
 * bytes: in r's scratch buffer (until the next call) if `scratch`, else
 * owned by r until the read ends. */
static int decompress(struct rd *r, const uint8_t **payload, uint32_t *len, bool scratch)
{
	if (zframe_check(r, *payload, *len) < 0)
		return -1;
	uint32_t raw = ap_get_u32le(*payload);
	const uint8_t *z = *payload + 4;
	size_t zlen = *len - 4;
	if (!r->zd && !(r->zd = ZSTD_createDCtx()))
		abort(); /* out of memory, as ap_xmalloc */
	uint8_t *out;
	if (scratch) {
		AP_ALLOC_GROW(r->scratch, raw ? raw : 1, r->scratch_cap);
		out = r->scratch;
	} else {
		out = ap_xmalloc(raw ? raw : 1);
	}
	size_t got = ZSTD_decompressDCtx(r->zd, out, raw, z, zlen);
	if (ZSTD_isError(got) || got != raw) {
		if (!scratch)
			free(out);
		return corrupt(r, "compressed payload does not decompress: %s",
			       ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
	}
	if (!scratch) {
		AP_ALLOC_GROW(r->owned, r->nowned + 1, r->owned_alloc);
		r->owned[r->nowned++] = out;
	}
	*payload = out;
	*len = raw;
	return 0;
}

/* Pass 1 is past `off`: what it needs from before is copied out, or
 * kept as chunk offsets pass 2 maps in again. */
static void drop_behind(struct rd *r, size_t off)
{
	drop_mapped(r->map, r->size, r->data + r->dropped, off - r->dropped);
	r->dropped = off;
}

/* The EVENTS chunk ch, just counted: pass 2 reads it again as stored
 * (and decompresses it), when it comes. */
static void chunk_stored(struct rd *r, const struct ap_chunk *ch)
{
	struct ev_chunk *e = &r->chunks[r->nchunks - 1];
	e->off = (uint64_t)(ch->payload - r->data);
	e->len = ch->len;
	e->crc = ap_get_u32le(r->data + ch->off + 16);
	e->zstd = ch->flags & AP_CHUNK_F_ZSTD;
}

static int read_chunks(struct rd *r)
{
	struct ap_trace *t = r->t;
	struct ap_chunk_walk *w = &r->walk;
	size_t next_progress = 4u << 20;
	enum ap_chunk_result res;
	struct ap_chunk ch;
	char why[160];
	ap_chunk_walk_init(w, r->data, r->size);
	for (;;) {
		r->chunk_off = w->off;
		if (w->off >= next_progress) {
			if (r->progress)
				r->progress(r->progress_ctx, w->off, r->size);
			/* what is behind is copied out or kept as chunk offsets */
			drop_behind(r, w->off);
			next_progress = w->off + (4u << 20);
		}
		res = ap_chunk_next(w, &ch, why, sizeof(why));
		if (res == AP_CHUNK_BAD)
			return corrupt(r, "%s", why);
		if (res != AP_CHUNK_OK)
			break;
		if (ch.type == AP_CHUNK_EVENTS && (ch.flags & AP_CHUNK_F_COUNTS)) {
			if (count_events(r, &ch) < 0)
				return -1;
			chunk_stored(r, &ch);
			continue;
		}
		const uint8_t *payload = ch.payload, *base = r->data;
		uint32_t len = ch.len;
		if (ch.flags & AP_CHUNK_F_ZSTD) {
			if (decompress(r, &payload, &len, ch.type == AP_CHUNK_EVENTS) < 0)
				return -1;
			base = payload; /* offsets in messages: within the payload */
		}
		struct cur c = {payload, payload + len, base};
		int rc = 0;
		switch (ch.type) {
		case AP_CHUNK_HEADER:
			rc = decode_header(r, &c);
			break;
		case AP_CHUNK_META:
			r->meta_bytes += len;
			rc = decode_meta(r, &c);
			break;
		case AP_CHUNK_EVENTS:
			rc = scan_events(r, ch.tid, payload, len,
					 ch.flags & (AP_CHUNK_F_COLUMNS | AP_CHUNK_F_REFS |
						     AP_CHUNK_F_INDEX | AP_CHUNK_F_SIZES |
						     AP_CHUNK_F_XOWN));
			if (!rc)
				chunk_stored(r, &ch);
			break;
		case AP_CHUNK_END:
			rc = decode_end(r, &c);
			break;
		case AP_CHUNK_SYMBOLS:
			if (ap_symtab_decode(&t->symtab, payload, len, why, sizeof(why)) < 0)
				rc = corrupt(r, "%s", why);
			break;
		}
		if (rc < 0)
			return -1;
	}
	t->bytes_used = w->off;
	if (!w->have_header)
		return ap_error_set(
		    r->err, "%s: no header chunk: the trace is empty or was cut before its header",
		    r->name);
	if (res == AP_CHUNK_CUT) {
		t->truncated = true;
		snprintf(t->truncated_why, sizeof(t->truncated_why),
			 "file ends inside a chunk at byte %zu", w->off);
	} else if (!t->has_end) {
		t->truncated = true;
		snprintf(t->truncated_why, sizeof(t->truncated_why),
			 "no end record: the process is still running, or it ended in a way "
			 "the sampler cannot see (SIGKILL, say)");
	}
	return 0;
}

static void trace_init(struct ap_trace *t)
{
	memset(t, 0, sizeof(*t));
	t->exe = ap_xstrdup("");
	t->sampler = ap_xstrdup("");
	t->argv = ap_xcalloc(1, sizeof(char *));
	t->stacks = ap_xcalloc(1, sizeof(*t->stacks));
	t->nstacks = 1; /* stacks[0]: no stack */
}

/* The pcs pool stopped growing: turn the stacks' offsets into pointers. */
static void fix_stack_pointers(struct rd *r)
{
	struct ap_trace *t = r->t;
	if (!r->pcs)
		r->pcs = ap_xmalloc(sizeof(*r->pcs));
	for (size_t i = 1; i < t->nstacks; i++)
		t->stacks[i].pcs = r->pcs + (uintptr_t)t->stacks[i].pcs;
	t->stacks[0].pcs = r->pcs;
	r->pcs = NULL;
}

/* Reads r->data; on success the trace owns it (r->map or r->buf), else
 * the caller still does. */
static int read_data(struct rd *r)
{
	r->t = ap_xmalloc(sizeof(*r->t));
	trace_init(r->t);
	r->t->file_size = r->size;
	int rc = read_preamble(r);
	if (!rc)
		rc = read_chunks(r);
	fix_stack_pointers(r);
	if (!rc) {
		struct ap_trace *t = r->t;
		drop_behind(r, r->size);
		make_source(r);
		ap_trace_index_maps(t);
		if (!t->has_end)
			t->end_ns = r->any_event ? r->last_ts : t->start_ns;
		if (r->progress)
			r->progress(r->progress_ctx, r->size, r->size);
	}
	ap_u64map_release(&r->tid_index);
	free(r->thread_nev);
	free(r->thread_refs);
	free(r->chunks);
	for (size_t i = 0; i < r->nowned; i++)
		free(r->owned[i]);
	free(r->owned);
	free(r->scratch);
	ZSTD_freeDCtx(r->zd);
	ap_chunk_walk_release(&r->walk);
	if (rc) {
		ap_trace_free(r->t);
		r->t = NULL;
	}
	return rc;
}

int ap_trace_read_mem(const void *data, size_t len, const char *name, struct ap_trace **out,
		      struct ap_error *err)
{
	/* the events are read from it later: a copy of our own */
	uint8_t *copy = ap_xmalloc(len ? len : 1);
	if (len)
		memcpy(copy, data, len);
	struct rd r = {.data = copy, .size = len, .fd = -1, .buf = copy, .name = name, .err = err};
	if (read_data(&r) < 0) {
		free(copy);
		return -1;
	}
	*out = r.t;
	return 0;
}

/* Files up to this size are read ahead whole when mapped; bigger ones are
 * faulted in as the passes walk them (and let go behind them). */
#define POPULATE_MAX (64u << 20)

int ap_trace_read(const char *path, struct ap_trace **out, struct ap_error *err,
		  ap_progress_fn progress, void *progress_ctx)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ap_error_set(err, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return ap_error_set(err, "%s: %s", path, strerror(e));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return ap_error_set(err, "%s: %s", path, strerror(EISDIR));
	}
	/* a device would be read until memory runs out (/dev/zero) */
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		close(fd);
		return ap_error_set(err, "%s: is a %s device, not a trace file", path,
				    S_ISCHR(st.st_mode) ? "character" : "block");
	}
	void *map = NULL;
	uint8_t *buf = NULL;
	size_t size = 0;
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		size = (size_t)st.st_size;
		/* MAP_POPULATE: one pass of read-ahead instead of a fault per page */
		map = mmap(NULL, size, PROT_READ,
			   MAP_PRIVATE | (size <= POPULATE_MAX ? MAP_POPULATE : 0), fd, 0);
		if (map == MAP_FAILED)
			map = NULL;
		else if (size > POPULATE_MAX)
			madvise(map, size, MADV_SEQUENTIAL); /* advice only */
	}
	if (!map) {
		/* Not mappable (a pipe, an empty file, procfs): read it all. */
		size_t alloc = 0;
		size = 0;
		for (;;) {
			AP_ALLOC_GROW(buf, size + 65536, alloc);
			ssize_t n = read(fd, buf + size, alloc - size);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				int e = errno;
				free(buf);
				close(fd);
				return ap_error_set(err, "%s: %s", path, strerror(e));
			}
			if (n == 0)
				break;
			size += (size_t)n;
			/* a pipe that does not start like a trace is no trace:
			 * no need to read the rest, which may never end */
			if (size >= AP_TRACE_MAGIC_LEN && size - (size_t)n < AP_TRACE_MAGIC_LEN &&
			    memcmp(buf, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN))
				break;
		}
	}
	if (!map) {
		close(fd);
		fd = -1;
	}
	struct rd r = {
	    .data = map ? map : buf,
	    .size = size,
	    .map = map,
	    .fd = fd,
	    .buf = map ? NULL : buf,
	    .name = path,
	    .err = err,
	    .progress = progress,
	    .progress_ctx = progress_ctx,
	};
	int rc = read_data(&r);
	if (map)
		munmap(map, size); /* pass 2 reads the file (fd, the trace's now) */
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return -1;
	}
	*out = r.t;
	return 0;
}

bool ap_trace_changed(const struct ap_trace *t)
{
	return t->src && t->src->ops->changed(t->src);
}

void ap_trace_free(struct ap_trace *t)
{
	if (!t)
		return;
	free(t->pooled);
	free(t->exe);
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->sampler);
	free(t->parent_trace);
	free(t->malloc_owner);
	for (size_t i = 0; i < t->nmaps; i++) {
		free(t->maps[i].path);
		free(t->maps[i].segs);
	}
	free(t->maps);
	if (t->stacks)
		free(t->stacks[0].pcs); /* the pool all stacks point into */
	free(t->stacks);
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].name);
	free(t->threads);
	free(t->ev);
	if (t->src)
		t->src->ops->release(t->src);
	free(t->map_index);
	for (size_t i = 0; i < t->nprocs; i++) {
		free(t->procs[i].path);
		free(t->procs[i].exe);
		free(t->procs[i].cmdline);
	}
	free(t->procs);
	ap_symtab_release(&t->symtab);
	free(t);
}

double ap_trace_weight(const struct ap_trace *t, uint64_t size)
{
	return ap_sample_weight(size, t->rate);
}
