/* The trace reader (ap_trace.h), its file stage: validates the framing of
 * a trace, and hands its chunks to the stages that decode them.
 *
 * Two passes over the file keep memory independent of the events:
 * pass 1 (ap_trace_read) checks every chunk, decodes HEADER/META/END
 * (meta.c) and decodes each EVENTS chunk only to validate and count it,
 * or takes the counts of one that carries them (AP_CHUNK_F_COUNTS)
 * without decoding it (decode.c);
 * pass 2 (each iteration, ap_events_open) decodes the EVENTS chunks again,
 * a batch at a time, in a k-way merge of the threads' streams (order.c),
 * and checks those pass 1 did not decode (a corrupt one ends the pass
 * with its error: file_next).
 * Everything read from the file is bounds-checked against the bytes left
 * before it is used, so a corrupt count can never make us allocate or read
 * past the end. */
#include "file.h"
#include "meta.h"
#include "order.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

int rd_corrupt(struct rd *r, const char *fmt, ...)
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
long rd_thread_index(struct rd *r, uint32_t tid)
{
	struct ap_trace *t = r->t;
	if (!r->tid_index.slot)
		ap_u64map_init(&r->tid_index, 16);
	uint32_t known = ap_u64map_get(&r->tid_index, tid);
	if (known != AP_U64MAP_NONE)
		return (long)known;
	if (t->nthreads >= AP_MAX_THREADS)
		return rd_corrupt(r, "more than %u threads", AP_MAX_THREADS);
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

/* The checks of a compressed payload (AP_CHUNK_F_ZSTD) that need no
 * decompressing: `u32 raw_len` and a zstd frame that says it holds
 * raw_len bytes (at most a payload's) and is exactly the rest. Nothing
 * is allocated before they hold. -1 with r's error set if one fails. */
int zframe_check(struct rd *r, const uint8_t *payload, uint32_t len)
{
	if (len < 4)
		return rd_corrupt(r, "compressed payload of %u bytes has no length", len);
	uint32_t raw = ap_get_u32le(payload);
	if (raw > AP_CHUNK_MAX_PAYLOAD)
		return rd_corrupt(r, "decompressed length %u exceeds %u", raw, AP_CHUNK_MAX_PAYLOAD);
	if (ZSTD_getFrameContentSize(payload + 4, len - 4) != raw)
		return rd_corrupt(r, "compressed payload is not a zstd frame of %u bytes", raw);
	if (ZSTD_findFrameCompressedSize(payload + 4, len - 4) != len - 4)
		return rd_corrupt(r, "compressed payload is not exactly one zstd frame");
	return 0;
}

/* ---- pass 2: the k-way merge, streamed ----
 *
 * The reader keeps the file (open, or read into memory) and the list of
 * EVENTS chunks pass 1 checked; each iteration over the events (events.c)
 * merges the threads' chunks again, a batch at a time, decoding one chunk
 * per thread at a time (decompressing it into the thread's buffer): the
 * merge is order.c's, the chunks it asks for are read here. */

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


/* The merge's input (struct ap_order_input): chunk `id` read again. */
static int file_chunk(void *ctx, uint32_t id, struct ap_order_bufs *b, struct ap_order_chunk *out,
		      const char **why)
{
	struct file_it *it = ctx;
	const struct ev_chunk *c = &it->f->chunks[id];
	bool bad;
	out->payload = chunk_payload(it->f, it->zd, c, &b->in, &b->in_cap, &b->raw, &b->raw_cap,
				     &out->len, &bad);
	if (!out->payload) {
		*why = "does not decompress";
		return bad ? -1 : 1;
	}
	out->columns = c->columns;
	out->counted = c->counted;
	out->want = c->want;
	return 0;
}

void *file_open(struct ap_evsrc *src)
{
	struct file_src *f = (struct file_src *)src;
	struct file_it *it = ap_xcalloc(1, sizeof(*it));
	it->f = f;
	if (!(it->zd = ZSTD_createDCtx()))
		abort(); /* out of memory, as ap_xmalloc */
	struct ap_order_input in = {it, file_chunk};
	it->o = ap_order_new(&in, f->nthreads, f->quantum, f->nstacks, f->anon_min, &f->tids);
	for (size_t i = 0; i < f->nthreads; i++)
		ap_order_add(it->o, i, f->order + f->start[i], f->start[i + 1] - f->start[i]);
	return it;
}

/* The merge's next batch; the first corrupt chunk it met ends the
 * iteration, its batch not handed out: -1 with err set, "NAME: corrupt
 * chunk at byte N: why". */
ssize_t file_next(void *state, const struct ap_event **out, struct ap_error *err)
{
	struct file_it *it = state;
	ssize_t n = ap_order_next(it->o, out);
	if (ap_order_changed(it->o))
		__atomic_store_n(&it->f->changed, 1, __ATOMIC_RELAXED);
	uint32_t id;
	const char *why = ap_order_error(it->o, &id);
	if (n >= 0 || !why)
		return n;
	char msg[320];
	snprintf(msg, sizeof(msg), "%s: corrupt chunk at byte %llu: %s", it->f->name,
		 (unsigned long long)(it->f->chunks[id].off - AP_CHUNK_HDR_LEN), why);
	return ap_error_set(err, "%s", msg);
}

void file_close(void *state)
{
	struct file_it *it = state;
	ap_order_free(it->o);
	ZSTD_freeDCtx(it->zd);
	free(it);
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

void source_index(struct file_src *f, struct rd *r)
{
	struct ap_trace *t = r->t;
	size_t nth = t->nthreads;
	for (size_t i = f->nthreads; i < nth; i++)
		ap_u64map_put(&f->tids, t->threads[i].tid, (uint32_t)i);
	f->nthreads = nth;
	f->nstacks = t->nstacks;
	/* Group chunk indexes by thread, keeping file order (counting sort). */
	free(f->start);
	free(f->order);
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
	uint64_t total = 0;
	for (size_t i = 0; i < nth; i++)
		total += r->thread_nev[i];
	t->nev = (size_t)total;
	t->last_ts = r->any_event ? r->last_ts : 0;
}

void make_source(struct rd *r)
{
	struct ap_trace *t = r->t;
	size_t nth = t->nthreads;
	struct file_src *f = ap_xcalloc(1, sizeof(*f));
	f->base.ops = &file_ops;
	f->fd = r->fd;
	f->buf = r->buf;
	f->quantum = t->time_quantum_ns;
	f->anon_min = nth > AP_ANON_LOW_THREADS ? AP_ANON_MIN : AP_ANON_BASE;
	f->name = ap_xstrdup(r->name ? r->name : "trace");
	ap_u64map_init(&f->tids, nth + 1);
	f->chunks = r->chunks;
	f->nchunks = r->nchunks;
	r->chunks = NULL;
	for (size_t i = 0; i < f->nchunks; i++)
		f->chunks[i].payload = NULL; /* read again from f->off */
	source_index(f, r);
	t->src = &f->base;
}

/* ---- the file ---- */

int read_preamble(struct rd *r)
{
	if (r->size < AP_TRACE_MAGIC_LEN || memcmp(r->data, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN))
		return ap_error_set(r->err, "%s: not an allocprof trace", r->name);
	if (r->size < AP_TRACE_PREAMBLE_LEN)
		return ap_error_set(
		    r->err, "%s: truncated trace: the file ends inside its preamble", r->name);
	uint32_t version = ap_get_u32le(r->data + 8);
	uint32_t bom = ap_get_u32le(r->data + 12);
	if (version != AP_TRACE_VERSION)
		return ap_error_set(r->err, "%s: trace format version %u, this allocprof reads %u: "
				    "recorded by %s allocprof%s",
				    r->name, version, AP_TRACE_VERSION,
				    version < AP_TRACE_VERSION ? "an older" : "a newer",
				    version < AP_TRACE_VERSION ? " (record it again)" : "");
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
		return rd_corrupt(r, "compressed payload does not decompress: %s",
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

int rd_walk(struct rd *r, enum ap_chunk_result *resp)
{
	struct ap_trace *t = r->t;
	struct ap_chunk_walk *w = &r->walk;
	size_t next_progress = w->off + (4u << 20);
	enum ap_chunk_result res;
	struct ap_chunk ch;
	char why[160];
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
			return rd_corrupt(r, "%s", why);
		if (res != AP_CHUNK_OK)
			break;
		if (ch.type == AP_CHUNK_EVENTS && !(ch.flags & AP_CHUNK_F_COLUMNS))
			t->resolved = false;
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
					 ch.flags & AP_EV_ENCODING_FLAGS);
			if (!rc)
				chunk_stored(r, &ch);
			break;
		case AP_CHUNK_END:
			rc = decode_end(r, &c);
			break;
		case AP_CHUNK_SYMBOLS:
			t->symbols_chunks++;
			if (ap_symtab_decode(&t->symtab, payload, len, why, sizeof(why)) < 0)
				rc = rd_corrupt(r, "%s", why);
			break;
		}
		if (rc < 0)
			return -1;
	}
	*resp = res;
	return 0;
}

void ap_trace_stop_why(uint64_t stop_errno, char *buf, size_t len)
{
	int e = stop_errno > 0 && stop_errno < 4096 ? (int)stop_errno : 0;
	snprintf(buf, len, "the trace stopped at a chunk that did not fit (%s%s); the process ran "
		 "on, and what it did after is not in the trace",
		 e ? strerror(e) : "a write failed",
		 e == EFBIG ? ": the file size limit, RLIMIT_FSIZE, ulimit -f"
		 : e == ENOSPC || e == EDQUOT ? ": the disk was full" : "");
}

int rd_walk_end(struct rd *r, enum ap_chunk_result res)
{
	struct ap_trace *t = r->t;
	struct ap_chunk_walk *w = &r->walk;
	t->bytes_used = w->off;
	if (!w->have_header)
		return ap_error_set(
		    r->err, "%s: no header chunk: the trace is empty or was cut before its header",
		    r->name);
	if (res == AP_CHUNK_CUT) {
		t->truncated = true;
		snprintf(t->truncated_why, sizeof(t->truncated_why),
			 "file ends inside a chunk at byte %zu", w->off);
	} else if (t->has_end && t->end_reason == AP_END_STOPPED) {
		t->truncated = true;
		ap_trace_stop_why(t->stop_errno, t->truncated_why, sizeof(t->truncated_why));
	} else if (!t->has_end) {
		t->truncated = true;
		snprintf(t->truncated_why, sizeof(t->truncated_why),
			 "no end record: the process is still running, or it ended in a way "
			 "the sampler cannot see (SIGKILL, say)");
	} else if (t->symbols_chunks < t->symbols_said) {
		/* every event is here, but not the names record kept */
		t->truncated = true;
		snprintf(t->truncated_why, sizeof(t->truncated_why),
			 "the file ends at byte %zu, before its symbols (%llu of %llu SYMBOLS "
			 "chunks): it was cut, and its frames are named from the program's "
			 "files, where they still are",
			 w->off, (unsigned long long)t->symbols_chunks,
			 (unsigned long long)t->symbols_said);
	}
	return 0;
}

static int read_chunks(struct rd *r)
{
	enum ap_chunk_result res;
	ap_chunk_walk_init(&r->walk, r->data, r->size);
	r->t->resolved = true; /* until an EVENTS chunk is not */
	if (rd_walk(r, &res) < 0)
		return -1;
	return rd_walk_end(r, res);
}

void trace_init(struct ap_trace *t)
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

void rd_release(struct rd *r)
{
	ap_u64map_release(&r->tid_index);
	free(r->thread_nev);
	free(r->thread_refs);
	free(r->chunks);
	free(r->pcs);
	free(r->map_tag);
	free(r->remaps);
	for (size_t i = 0; i < r->nowned; i++)
		free(r->owned[i]);
	free(r->owned);
	free(r->scratch);
	ZSTD_freeDCtx(r->zd);
	ap_chunk_walk_release(&r->walk);
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
	rd_release(r);
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
	/* O_NONBLOCK: a FIFO nobody writes to would block the open for ever */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return ap_error_set(err, "%s: %s", path, strerror(errno));
	struct stat st;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || fstat(fd, &st) < 0) {
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
	/* (a FIFO reads as ended at once while it has no writer) */
	if (S_ISFIFO(st.st_mode) && size == 0) {
		free(buf);
		return ap_error_set(err, "%s: a FIFO with no writer, not a trace file", path);
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

/* Here, not in crc32c.c, which the sampler compiles too: the sampler
 * needs no libm (sampler/interpose.c, ln_x87). */
double ap_sample_weight(uint64_t size, uint64_t rate)
{
	if (rate <= 1)
		return 1.0;
	double p = -expm1(-((double)size + 1.0) / (double)rate);
	return 1.0 / p;
}

double ap_trace_weight(const struct ap_trace *t, uint64_t size)
{
	return ap_sample_weight(size, t->rate);
}
