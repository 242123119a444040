/* Trace writer for tests and tools (ap_trace_writer.h): the sampler's
 * records from the sampler's encoder (ap_trace_encode.h), with the same
 * choices: a SYNC record opens each chunk, a TIME record precedes the first
 * event of a new quantum, and a FREE names one of the chunk's recent ALLOCs
 * by distance when the sampler's table of them (struct ap_ring) holds it. */
#include "ap_trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_hash.h"
#include "ap_trace_encode.h"

/* One tid's pending EVENTS payload and the delta state of that chunk. */
struct tw_thread {
	uint32_t tid;
	struct ap_buf buf; /* payload so far; empty = no chunk open */
	struct ap_evenc enc;
	struct ap_ring ring;
	bool started; /* an event was ever written (ts order check) */
	uint64_t last_ts;
};

struct tw_stack {
	uint64_t *pcs;
	uint32_t depth;
};

struct ap_tw {
	struct ap_buf out;  /* the file so far */
	struct ap_buf meta; /* pending META payload */
	struct tw_thread *threads;
	size_t nthreads, threads_alloc;
	struct ap_u64map tid_index; /* tid -> index in threads (tests write 70,000) */
	struct tw_stack *stacks; /* stacks[i] has id i + 1 */
	size_t nstacks, stacks_alloc;
	struct ap_index stack_index; /* pcs -> stack (id - 1) */
	size_t chunk_size;
	uint64_t quantum;
	struct ap_streams streams; /* chunk indices (ap_stream_of) */
	uint64_t data_chunks;	   /* META and EVENTS chunks written (END's count) */
	char error[512]; /* first sticky error, "" if none */
	bool gaps;	 /* EVENTS records carry gaps (ap_tw_set_gaps) */
	uint8_t gap;	 /* the next record's (ap_tw_gap) */
};

static int tw_fail(struct ap_tw *tw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int tw_fail(struct ap_tw *tw, const char *fmt, ...)
{
	if (!tw->error[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(tw->error, sizeof(tw->error), fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Room for n more bytes at the end of b, for an encoder to write; then
 * buf_commit with what it wrote. */
static uint8_t *buf_room(struct ap_buf *b, size_t n)
{
	ap_buf_grow(b, n);
	return (uint8_t *)b->buf + b->len;
}

static void buf_commit(struct ap_buf *b, size_t n)
{
	b->len += n;
	b->buf[b->len] = 0;
}

static void emit_chunk(struct ap_tw *tw, uint8_t type, uint32_t tid, const void *payload,
		       size_t len)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	uint32_t stream = ap_stream_of(type, tid);
	tw->data_chunks += type == AP_CHUNK_META || type == AP_CHUNK_EVENTS;
	ap_chunk_header_flags(hdr, type, type == AP_CHUNK_EVENTS && tw->gaps ? AP_CHUNK_F_GAPS : 0,
			      tid, stream, ap_streams_next(&tw->streams, stream), payload,
			      (uint32_t)len);
	ap_buf_add(&tw->out, hdr, sizeof(hdr));
	ap_buf_add(&tw->out, payload, len);
}

void ap_tw_header_init(struct ap_tw_header *h)
{
	static const char *const argv[] = {"/bin/test"};
	memset(h, 0, sizeof(*h));
	h->rate = 1;
	h->flags = AP_HFLAG_ALL;
	h->pid = 1000;
	h->ppid = 1;
	h->exe = "/bin/test";
	h->argv = argv;
	h->argc = 1;
	h->cpus = 2;
	h->start_realtime_ns = 1700000000000000000ull;
	h->start_ns = 1000000000ull;
	h->max_depth = AP_DEFAULT_DEPTH;
	h->page_size = 4096;
	h->time_quantum_ns = 1;
	h->sampler = "test";
}

static void kv_uint(struct ap_buf *b, unsigned key, uint64_t v)
{
	buf_commit(b, ap_put_kv_uint(buf_room(b, AP_KV_UINT_MAX), key, v));
}

static void kv_str(struct ap_buf *b, unsigned key, const char *s, size_t len)
{
	buf_commit(b, ap_put_kv_str(buf_room(b, 2 * AP_VARINT_MAX + AP_STR_MAX(len)), key, s, len));
}

struct ap_tw *ap_tw_new(const struct ap_tw_header *h)
{
	struct ap_tw *tw = ap_xcalloc(1, sizeof(*tw));
	ap_buf_init(&tw->out);
	ap_buf_init(&tw->meta);
	tw->chunk_size = AP_SAMPLER_CHUNK;
	tw->quantum = h->time_quantum_ns ? h->time_quantum_ns : 1;

	buf_commit(&tw->out, ap_put_preamble(buf_room(&tw->out, AP_TRACE_PREAMBLE_LEN)));

	struct ap_buf p = AP_BUF_INIT;
	const char *exe = h->exe ? h->exe : "";
	const char *sampler = h->sampler ? h->sampler : "";
	kv_uint(&p, AP_HK_RATE, h->rate);
	kv_uint(&p, AP_HK_FLAGS, h->flags);
	kv_uint(&p, AP_HK_PID, h->pid);
	kv_uint(&p, AP_HK_PPID, h->ppid);
	kv_str(&p, AP_HK_EXE, exe, strlen(exe));
	if (h->argv) {
		struct ap_buf cmd = AP_BUF_INIT;
		for (size_t i = 0; i < h->argc; i++)
			ap_buf_add(&cmd, h->argv[i], strlen(h->argv[i]) + 1);
		kv_str(&p, AP_HK_CMDLINE, cmd.buf, cmd.len);
		ap_buf_release(&cmd);
	}
	kv_uint(&p, AP_HK_CPUS, h->cpus);
	if (h->allowed_cpus)
		kv_uint(&p, AP_HK_ALLOWED_CPUS, h->allowed_cpus);
	kv_uint(&p, AP_HK_START_REALTIME_NS, h->start_realtime_ns);
	kv_uint(&p, AP_HK_START_NS, h->start_ns);
	kv_uint(&p, AP_HK_MAX_DEPTH, h->max_depth);
	kv_uint(&p, AP_HK_PAGE_SIZE, h->page_size);
	kv_uint(&p, AP_HK_TIME_QUANTUM_NS, h->time_quantum_ns);
	if (h->time_step_ns)
		kv_uint(&p, AP_HK_TIME_STEP_NS, h->time_step_ns);
	kv_str(&p, AP_HK_SAMPLER, sampler, strlen(sampler));
	if (h->parent_trace)
		kv_str(&p, AP_HK_PARENT_TRACE, h->parent_trace, strlen(h->parent_trace));
	emit_chunk(tw, AP_CHUNK_HEADER, (uint32_t)h->pid, p.buf, p.len);
	ap_buf_release(&p);
	return tw;
}

/* A record is at most ~60 bytes: a chunk closed at this size stays under
 * the format's 16 MiB payload limit. */
#define TW_MAX_CHUNK (AP_CHUNK_MAX_PAYLOAD - 1024)

void ap_tw_set_chunk_size(struct ap_tw *tw, size_t bytes)
{
	tw->chunk_size = bytes < 16 ? 16 : bytes > TW_MAX_CHUNK ? TW_MAX_CHUNK : bytes;
}

static void flush_meta(struct ap_tw *tw)
{
	if (!tw->meta.len)
		return;
	emit_chunk(tw, AP_CHUNK_META, 0, tw->meta.buf, tw->meta.len);
	ap_buf_reset(&tw->meta);
}

/* META records written so far become a chunk once they fill one (a trace
 * with very many stacks); earlier is always allowed. */
static void meta_added(struct ap_tw *tw)
{
	if (tw->meta.len >= tw->chunk_size && tw->meta.len >= (64u << 10))
		flush_meta(tw);
}

void ap_tw_set_gaps(struct ap_tw *tw)
{
	ap_tw_flush(tw);
	tw->gaps = true;
}

void ap_tw_gap(struct ap_tw *tw, uint8_t code)
{
	tw->gap = code;
}

static void flush_thread(struct ap_tw *tw, struct tw_thread *t)
{
	/* the next chunk starts with SYNC, which empties the table: it is
	 * made again then (a writer of many short threads holds none) */
	free(t->ring.ent);
	t->ring.ent = NULL;
	if (!t->buf.len)
		return;
	flush_meta(tw); /* stacks before the events that use them */
	emit_chunk(tw, AP_CHUNK_EVENTS, t->tid, t->buf.buf, t->buf.len);
	ap_buf_reset(&t->buf);
}

int ap_tw_mapping(struct ap_tw *tw, uint64_t bias, const char *path, const uint8_t *build_id,
		  size_t build_id_len, const struct ap_segment *segs, size_t nsegs)
{
	size_t plen = strlen(path);
	buf_commit(&tw->meta,
		   ap_put_mapping(buf_room(&tw->meta, AP_META_MAPPING_MAX(plen, build_id_len)), bias,
				  path, plen, build_id, build_id_len, nsegs));
	for (size_t i = 0; i < nsegs; i++)
		buf_commit(&tw->meta, ap_put_segment(buf_room(&tw->meta, AP_META_SEGMENT_MAX),
						     segs[i].vaddr, segs[i].memsz, segs[i].offset,
						     segs[i].flags));
	meta_added(tw);
	return 0;
}

/* A stack as the index looks it up. */
struct stack_probe {
	const uint64_t *pcs;
	uint32_t depth;
};

static bool stack_is(const void *ctx, uint32_t i, const void *key)
{
	const struct ap_tw *tw = ctx;
	const struct stack_probe *k = key;
	const struct tw_stack *s = &tw->stacks[i];
	return s->depth == k->depth && (!k->depth || !memcmp(s->pcs, k->pcs, k->depth * sizeof(*k->pcs)));
}

uint32_t ap_tw_stack(struct ap_tw *tw, const uint64_t *pcs, uint32_t depth)
{
	struct stack_probe k = { pcs, depth };
	bool added;
	uint32_t i = ap_index_add(&tw->stack_index, ap_hash_bytes(pcs, depth * sizeof(*pcs)), stack_is,
				  tw, &k, (uint32_t)tw->nstacks, &added);
	if (!added)
		return i + 1;
	AP_ALLOC_GROW(tw->stacks, tw->nstacks + 1, tw->stacks_alloc);
	struct tw_stack *s = &tw->stacks[tw->nstacks++];
	s->depth = depth;
	s->pcs = ap_xmalloc(depth * sizeof(*pcs) + 1);
	if (depth)
		memcpy(s->pcs, pcs, depth * sizeof(*pcs));
	uint32_t id = (uint32_t)tw->nstacks;

	buf_commit(&tw->meta, ap_put_stack(buf_room(&tw->meta, AP_META_STACK_MAX(depth)), id, pcs,
					   depth));
	meta_added(tw);
	return id;
}

int ap_tw_thread(struct ap_tw *tw, uint32_t tid, const char *name)
{
	size_t n = strlen(name);
	buf_commit(&tw->meta, ap_put_thread(buf_room(&tw->meta, AP_META_THREAD_MAX(n)), tid, name, n));
	meta_added(tw);
	return 0;
}

static struct tw_thread *get_thread(struct ap_tw *tw, uint32_t tid)
{
	if (!tw->tid_index.slot)
		ap_u64map_init(&tw->tid_index, 16);
	uint32_t known = ap_u64map_get(&tw->tid_index, tid);
	if (known != AP_U64MAP_NONE)
		return &tw->threads[known];
	ap_u64map_put(&tw->tid_index, tid, (uint32_t)tw->nthreads);
	AP_ALLOC_GROW(tw->threads, tw->nthreads + 1, tw->threads_alloc);
	struct tw_thread *t = &tw->threads[tw->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	ap_buf_init(&t->buf);
	return t;
}

void ap_tw_flush_thread(struct ap_tw *tw, uint32_t tid)
{
	flush_thread(tw, get_thread(tw, tid));
}

/* Appends record r of tid at time ts: SYNC first if the chunk is new, else
 * TIME if the quantum changed. Fails (sticky error) on a time going back. */
static int put_record(struct ap_tw *tw, uint32_t tid, uint64_t ts, struct ap_evrec *r)
{
	if (r->kind > 7)
		return tw_fail(tw, "allocation kind %u does not fit in 3 bits", r->kind);
	struct tw_thread *t = get_thread(tw, tid);
	if (t->started && ts < t->last_ts)
		return tw_fail(tw, "tid %u: timestamp %llu is before the previous one (%llu)", tid,
			       (unsigned long long)ts, (unsigned long long)t->last_ts);
	uint64_t q = ts / tw->quantum;
	uint8_t *p = buf_room(&t->buf, AP_EV_MAX_REC), *start = p;
	if (!t->ring.ent)
		t->ring.ent = ap_xcalloc(AP_RING_TABLE_SIZE, sizeof(*t->ring.ent));
	if (!t->buf.len) {
		p += ap_enc_sync(&t->enc, p, q);
		ap_ring_sync(&t->ring);
	} else if (q != t->enc.q) {
		p += ap_enc_time(&t->enc, p, q);
	}
	t->enc.gaps = tw->gaps;
	r->gap = tw->gap;
	tw->gap = 0;
	p += ap_enc_event_ring(&t->enc, &t->ring, p, r);
	buf_commit(&t->buf, (size_t)(p - start));
	t->last_ts = ts;
	t->started = true;
	if (t->buf.len >= tw->chunk_size)
		flush_thread(tw, t);
	return 0;
}

int ap_tw_alloc(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, unsigned kind,
		uint64_t addr, uint64_t size, uint32_t stack)
{
	struct ap_evrec r = {.type = AP_EV_ALLOC, .kind = kind, .cpu = cpu, .addr = addr,
			     .size = size, .stack = stack};
	return put_record(tw, tid, ts, &r);
}

int ap_tw_free(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, uint64_t addr)
{
	struct ap_evrec r = {.type = AP_EV_FREE, .cpu = cpu, .addr = addr};
	return put_record(tw, tid, ts, &r);
}

int ap_tw_realloc(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, unsigned kind,
		  uint64_t old_addr, uint64_t new_addr, uint64_t size, uint32_t stack,
		  unsigned flags)
{
	struct ap_evrec r = {.type = AP_EV_REALLOC, .kind = kind, .cpu = cpu, .addr = old_addr,
			     .addr2 = new_addr, .size = size, .stack = stack,
			     .flags = flags & ~AP_RF_NEW_ANON};
	return put_record(tw, tid, ts, &r);
}

void ap_tw_flush(struct ap_tw *tw)
{
	flush_meta(tw);
	for (size_t i = 0; i < tw->nthreads; i++)
		flush_thread(tw, &tw->threads[i]);
}

void ap_tw_end(struct ap_tw *tw, const struct ap_tw_end *end)
{
	ap_tw_flush(tw);
	struct ap_buf p = AP_BUF_INIT;
	kv_uint(&p, AP_EK_END_NS, end->end_ns);
	kv_uint(&p, AP_EK_REASON, end->reason);
	kv_uint(&p, AP_EK_STATUS, end->status);
	kv_uint(&p, AP_EK_CALLS, end->calls);
	kv_uint(&p, AP_EK_BYTES, end->bytes);
	kv_uint(&p, AP_EK_CHUNKS, tw->data_chunks);
	if (end->live_peak) {
		kv_uint(&p, AP_EK_LIVE_PEAK, end->live_peak);
		kv_uint(&p, AP_EK_LIVE_SLACK, end->live_slack);
	}
	if (end->unwind_ns)
		kv_uint(&p, AP_EK_UNWIND_NS, end->unwind_ns);
	if (end->has_switches) {
		kv_uint(&p, AP_EK_NVCSW, end->nvcsw);
		kv_uint(&p, AP_EK_NIVCSW, end->nivcsw);
	}
	if (end->has_minflt)
		kv_uint(&p, AP_EK_MINFLT, end->minflt);
	if (end->sampler_waits) {
		kv_uint(&p, AP_EK_SAMPLER_WAITS, end->sampler_waits);
		kv_uint(&p, AP_EK_SAMPLER_WAIT_NS, end->sampler_wait_ns);
	}
	emit_chunk(tw, AP_CHUNK_END, 0, p.buf, p.len);
	ap_buf_release(&p);
}

void ap_tw_raw_chunk(struct ap_tw *tw, uint8_t type, uint32_t tid, const void *payload, size_t len)
{
	ap_tw_flush(tw);
	emit_chunk(tw, type, tid, payload, len);
}

size_t ap_tw_size(const struct ap_tw *tw)
{
	return tw->out.len;
}

void ap_tw_discard(struct ap_tw *tw)
{
	if (!tw)
		return;
	ap_buf_release(&tw->out);
	ap_streams_release(&tw->streams);
	ap_buf_release(&tw->meta);
	for (size_t i = 0; i < tw->nthreads; i++) {
		ap_buf_release(&tw->threads[i].buf);
		free(tw->threads[i].ring.ent);
	}
	free(tw->threads);
	if (tw->tid_index.slot)
		ap_u64map_release(&tw->tid_index);
	for (size_t i = 0; i < tw->nstacks; i++)
		free(tw->stacks[i].pcs);
	free(tw->stacks);
	ap_index_release(&tw->stack_index);
	free(tw);
}

int ap_tw_close_mem(struct ap_tw *tw, uint8_t **data, size_t *len, struct ap_error *err)
{
	if (tw->error[0]) {
		ap_error_set(err, "trace writer: %s", tw->error);
		ap_tw_discard(tw);
		return -1;
	}
	ap_tw_flush(tw);
	*data = (uint8_t *)ap_buf_detach(&tw->out, len);
	ap_tw_discard(tw);
	return 0;
}

int ap_tw_close(struct ap_tw *tw, const char *path, struct ap_error *err)
{
	uint8_t *data;
	size_t len;
	if (ap_tw_close_mem(tw, &data, &len, err) < 0)
		return -1;
	int rc = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
		goto out_free;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = ap_error_set(err, "%s: %s", path,
					  n < 0 ? strerror(errno) : "short write");
			goto out_close;
		}
		off += (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = ap_error_set(err, "%s: %s", path, strerror(errno));
	}
	fd = -1;
out_close:
	if (fd >= 0)
		close(fd);
out_free:
	free(data);
	return rc;
}
