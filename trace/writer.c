/* Trace writer for tests and tools (ap_trace_writer.h): encodes format v2
 * with the same primitives the sampler uses (ap_trace_enc.h), and the same
 * choices: a SYNC record opens each chunk, a TIME record precedes the first
 * event of a new quantum, and a FREE names one of the chunk's recent ALLOCs
 * by distance when a direct-mapped table of them still holds it. */
#include "ap_trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One tid's pending EVENTS payload and the delta state of that chunk. */
struct tw_thread {
	uint32_t tid;
	struct ap_buf buf; /* payload so far; empty = no chunk open */
	uint64_t q, prev_addr;
	uint32_t cpu;
	uint64_t ord_all, ord_base; /* ALLOCs ever, and when the chunk began */
	uint64_t *ring_addr, *ring_ord; /* 4096 recent ALLOCs by address hash */
	size_t tagpos; /* the open record's tag in buf */
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
	struct tw_stack *stacks; /* stacks[i] has id i + 1 */
	size_t nstacks, stacks_alloc;
	uint32_t *stack_hash; /* open addressing: id, 0 empty */
	size_t stack_hash_size;
	size_t chunk_size;
	uint64_t quantum;
	struct ap_streams streams; /* chunk indices (ap_stream_of) */
	uint64_t data_chunks;	   /* META and EVENTS chunks written (END's count) */
	char error[512]; /* first sticky error, "" if none */
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

static void put_uv(struct ap_buf *b, uint64_t v)
{
	uint8_t tmp[AP_VARINT_MAX];
	ap_buf_add(b, tmp, ap_put_uv(tmp, v));
}

static void put_sv(struct ap_buf *b, int64_t v)
{
	put_uv(b, ap_zigzag(v));
}

static void put_str(struct ap_buf *b, const char *s, size_t len)
{
	put_uv(b, len);
	if (len) /* s may be NULL for an empty string (memcpy must not see it) */
		ap_buf_add(b, s, len);
}

static void put_u8(struct ap_buf *b, uint8_t v)
{
	ap_buf_add(b, &v, 1);
}

static void emit_chunk(struct ap_tw *tw, uint8_t type, uint32_t tid, const void *payload,
		       size_t len)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	uint32_t stream = ap_stream_of(type, tid);
	tw->data_chunks += type == AP_CHUNK_META || type == AP_CHUNK_EVENTS;
	ap_chunk_header(hdr, type, tid, stream, ap_streams_next(&tw->streams, stream), payload,
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
	h->max_depth = 64;
	h->page_size = 4096;
	h->time_quantum_ns = 1;
	h->sampler = "test";
}

static void kv_uint(struct ap_buf *b, uint64_t key, uint64_t v)
{
	put_uv(b, key);
	put_uv(b, AP_KV_UINT);
	put_uv(b, v);
}

static void kv_str(struct ap_buf *b, uint64_t key, const char *s, size_t len)
{
	put_uv(b, key);
	put_uv(b, AP_KV_STR);
	put_str(b, s, len);
}

struct ap_tw *ap_tw_new(const struct ap_tw_header *h)
{
	struct ap_tw *tw = ap_xcalloc(1, sizeof(*tw));
	ap_buf_init(&tw->out);
	ap_buf_init(&tw->meta);
	tw->chunk_size = 64 << 10;
	tw->quantum = h->time_quantum_ns ? h->time_quantum_ns : 1;

	uint8_t pre[AP_TRACE_PREAMBLE_LEN];
	memcpy(pre, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN);
	ap_put_u32le(pre + 8, AP_TRACE_VERSION);
	ap_put_u32le(pre + 12, AP_TRACE_BOM);
	ap_buf_add(&tw->out, pre, sizeof(pre));

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
	kv_uint(&p, AP_HK_START_REALTIME_NS, h->start_realtime_ns);
	kv_uint(&p, AP_HK_START_NS, h->start_ns);
	kv_uint(&p, AP_HK_MAX_DEPTH, h->max_depth);
	kv_uint(&p, AP_HK_PAGE_SIZE, h->page_size);
	kv_uint(&p, AP_HK_TIME_QUANTUM_NS, h->time_quantum_ns);
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

static void flush_thread(struct ap_tw *tw, struct tw_thread *t)
{
	if (!t->buf.len)
		return;
	flush_meta(tw); /* stacks before the events that use them */
	emit_chunk(tw, AP_CHUNK_EVENTS, t->tid, t->buf.buf, t->buf.len);
	ap_buf_reset(&t->buf);
}

int ap_tw_mapping(struct ap_tw *tw, uint64_t bias, const char *path, const uint8_t *build_id,
		  size_t build_id_len, const struct ap_segment *segs, size_t nsegs)
{
	put_u8(&tw->meta, AP_META_MAPPING);
	put_uv(&tw->meta, bias);
	put_str(&tw->meta, path, strlen(path));
	put_str(&tw->meta, (const char *)build_id, build_id_len);
	put_uv(&tw->meta, nsegs);
	for (size_t i = 0; i < nsegs; i++) {
		put_uv(&tw->meta, segs[i].vaddr);
		put_uv(&tw->meta, segs[i].memsz);
		put_uv(&tw->meta, segs[i].offset);
		put_uv(&tw->meta, segs[i].flags);
	}
	meta_added(tw);
	return 0;
}

static uint64_t hash_pcs(const uint64_t *pcs, uint32_t depth)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
	for (uint32_t i = 0; i < depth; i++) {
		h ^= pcs[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

static void stack_hash_insert(struct ap_tw *tw, uint32_t id)
{
	const struct tw_stack *s = &tw->stacks[id - 1];
	size_t mask = tw->stack_hash_size - 1;
	size_t i = hash_pcs(s->pcs, s->depth) & mask;
	while (tw->stack_hash[i])
		i = (i + 1) & mask;
	tw->stack_hash[i] = id;
}

uint32_t ap_tw_stack(struct ap_tw *tw, const uint64_t *pcs, uint32_t depth)
{
	if (tw->stack_hash_size) {
		size_t mask = tw->stack_hash_size - 1;
		for (size_t i = hash_pcs(pcs, depth) & mask; tw->stack_hash[i];
		     i = (i + 1) & mask) {
			const struct tw_stack *s = &tw->stacks[tw->stack_hash[i] - 1];
			if (s->depth == depth &&
			    (!depth || !memcmp(s->pcs, pcs, depth * sizeof(*pcs))))
				return tw->stack_hash[i];
		}
	}
	AP_ALLOC_GROW(tw->stacks, tw->nstacks + 1, tw->stacks_alloc);
	struct tw_stack *s = &tw->stacks[tw->nstacks++];
	s->depth = depth;
	s->pcs = ap_xmalloc(depth * sizeof(*pcs) + 1);
	if (depth)
		memcpy(s->pcs, pcs, depth * sizeof(*pcs));
	uint32_t id = (uint32_t)tw->nstacks;

	if (tw->nstacks * 2 > tw->stack_hash_size) {
		free(tw->stack_hash);
		tw->stack_hash_size = tw->stack_hash_size ? tw->stack_hash_size * 2 : 64;
		tw->stack_hash = ap_xcalloc(tw->stack_hash_size, sizeof(uint32_t));
		for (uint32_t k = 1; k <= id; k++)
			stack_hash_insert(tw, k);
	} else {
		stack_hash_insert(tw, id);
	}

	put_u8(&tw->meta, AP_META_STACK);
	put_uv(&tw->meta, id);
	put_uv(&tw->meta, depth);
	for (uint32_t i = 0; i < depth; i++) {
		if (i == 0)
			put_uv(&tw->meta, pcs[0]);
		else
			put_sv(&tw->meta, (int64_t)(pcs[i] - pcs[i - 1]));
	}
	meta_added(tw);
	return id;
}

int ap_tw_thread(struct ap_tw *tw, uint32_t tid, const char *name)
{
	put_u8(&tw->meta, AP_META_THREAD);
	put_uv(&tw->meta, tid);
	put_str(&tw->meta, name, strlen(name));
	meta_added(tw);
	return 0;
}

static struct tw_thread *get_thread(struct ap_tw *tw, uint32_t tid)
{
	for (size_t i = 0; i < tw->nthreads; i++)
		if (tw->threads[i].tid == tid)
			return &tw->threads[i];
	AP_ALLOC_GROW(tw->threads, tw->nthreads + 1, tw->threads_alloc);
	struct tw_thread *t = &tw->threads[tw->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	ap_buf_init(&t->buf);
	t->ring_addr = ap_xcalloc(1u << 12, sizeof(*t->ring_addr));
	t->ring_ord = ap_xcalloc(1u << 12, sizeof(*t->ring_ord));
	return t;
}

/* Opens the record: SYNC if the chunk is new, else TIME if the quantum
 * changed, then the tag and the cpu when it changes. Returns NULL (sticky
 * error) on a time going back. */
static struct tw_thread *begin_record(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu,
				      uint8_t tag)
{
	struct tw_thread *t = get_thread(tw, tid);
	if (t->started && ts < t->last_ts) {
		tw_fail(tw, "tid %u: timestamp %llu is before the previous one (%llu)", tid,
			(unsigned long long)ts, (unsigned long long)t->last_ts);
		return NULL;
	}
	uint64_t q = ts / tw->quantum;
	if (!t->buf.len) {
		put_u8(&t->buf, AP_EV_SYNC);
		put_uv(&t->buf, q);
		t->q = q;
		t->prev_addr = 0;
		t->cpu = 0;
		t->ord_base = t->ord_all;
	} else if (q != t->q) {
		put_u8(&t->buf, AP_EV_TIME);
		put_uv(&t->buf, q - t->q);
		t->q = q;
	}
	bool cpu_change = cpu != t->cpu;
	t->tagpos = t->buf.len;
	put_u8(&t->buf, (uint8_t)(tag | (cpu_change ? AP_TAG_CPU : 0)));
	if (cpu_change) {
		put_uv(&t->buf, cpu);
		t->cpu = cpu;
	}
	t->last_ts = ts;
	t->started = true;
	return t;
}

static void put_addr(struct ap_buf *b, uint64_t addr, uint64_t prev)
{
	uint8_t tmp[AP_VARINT_MAX + 1];
	ap_buf_add(b, tmp, ap_put_addr(tmp, addr, prev));
}

static size_t ring_slot(uint64_t addr)
{
	return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ull >> (64 - 12));
}

static void ring_put(struct tw_thread *t, uint64_t addr)
{
	size_t i = ring_slot(addr);
	t->ring_addr[i] = addr;
	t->ring_ord[i] = ++t->ord_all;
}

/* The block at addr by distance if the chunk's table still has it (the
 * entry is used up), else 0. */
static uint64_t ring_take(struct tw_thread *t, uint64_t addr)
{
	size_t i = ring_slot(addr);
	uint64_t o = t->ring_ord[i];
	if (t->ring_addr[i] != addr || o <= t->ord_base || t->ord_all - o >= AP_RING)
		return 0;
	t->ring_addr[i] = 0;
	t->ring_ord[i] = 0;
	return t->ord_all - o + 1;
}

/* FREE's or REALLOC's block: by distance (sets AP_TAG_REF in the tag at
 * `tagpos`) or by address. */
static void put_block(struct tw_thread *t, size_t tagpos, uint64_t addr)
{
	uint64_t d = ring_take(t, addr);
	if (d) {
		t->buf.buf[tagpos] |= AP_TAG_REF;
		put_uv(&t->buf, d);
	} else {
		put_addr(&t->buf, addr, t->prev_addr);
		t->prev_addr = addr; /* address fields move it, distances do not */
	}
}

static void end_record(struct ap_tw *tw, struct tw_thread *t)
{
	if (t->buf.len >= tw->chunk_size)
		flush_thread(tw, t);
}

static int check_kind(struct ap_tw *tw, unsigned kind)
{
	if (kind > 7)
		return tw_fail(tw, "allocation kind %u does not fit in 3 bits", kind);
	return 0;
}

int ap_tw_alloc(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, unsigned kind,
		uint64_t addr, uint64_t size, uint32_t stack)
{
	if (check_kind(tw, kind) < 0)
		return -1;
	struct tw_thread *t = begin_record(tw, tid, ts, cpu, AP_TAG(AP_EV_ALLOC, kind));
	if (!t)
		return -1;
	put_addr(&t->buf, addr, t->prev_addr);
	put_uv(&t->buf, size);
	put_uv(&t->buf, stack);
	ring_put(t, addr);
	t->prev_addr = addr;
	end_record(tw, t);
	return 0;
}

int ap_tw_free(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, uint64_t addr)
{
	struct tw_thread *t = begin_record(tw, tid, ts, cpu, AP_TAG(AP_EV_FREE, 0));
	if (!t)
		return -1;
	put_block(t, t->tagpos, addr);
	end_record(tw, t);
	return 0;
}

int ap_tw_realloc(struct ap_tw *tw, uint32_t tid, uint64_t ts, uint32_t cpu, unsigned kind,
		  uint64_t old_addr, uint64_t new_addr, uint64_t size, uint32_t stack,
		  unsigned flags)
{
	if (check_kind(tw, kind) < 0)
		return -1;
	struct tw_thread *t = begin_record(tw, tid, ts, cpu, AP_TAG(AP_EV_REALLOC, kind));
	if (!t)
		return -1;
	if (flags & AP_RF_OLD_TRACKED) {
		put_block(t, t->tagpos, old_addr);
	} else {
		put_addr(&t->buf, old_addr, t->prev_addr);
		t->prev_addr = old_addr;
	}
	put_uv(&t->buf, flags & ~AP_RF_NEW_ANON);
	put_addr(&t->buf, new_addr, t->prev_addr);
	ring_put(t, new_addr);
	put_uv(&t->buf, size);
	put_uv(&t->buf, stack);
	t->prev_addr = new_addr;
	end_record(tw, t);
	return 0;
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
		free(tw->threads[i].ring_addr);
		free(tw->threads[i].ring_ord);
	}
	free(tw->threads);
	for (size_t i = 0; i < tw->nstacks; i++)
		free(tw->stacks[i].pcs);
	free(tw->stacks);
	free(tw->stack_hash);
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
