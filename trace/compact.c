/* ap_trace_compact (ap_trace_compact.h): the trace `record` leaves behind,
 * compressed after the program exited. The sampler writes small
 * uncompressed chunks (64 KiB per thread, no allocation inside malloc);
 * here each thread's consecutive EVENTS payloads are joined up to the
 * payload limit and compressed as one zstd frame, so the records of a
 * repetitive workload, identical bytes from chunk to chunk, compress
 * across the whole run. Joining is exact because every sampler chunk
 * starts with a SYNC record (the decoding state starts over). */
#include "ap_trace_compact.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ap_trace_enc.h"

/* A thread's events waiting to be compressed, in file order. */
struct pending {
	uint32_t tid;
	uint8_t *buf;
	size_t len, alloc;
};

struct compactor {
	const char *path;
	struct ap_error *err;
	int fd;
	int level;
	ZSTD_CCtx *zc;
	uint8_t *zbuf;
	size_t zcap;
	struct pending *pend;
	size_t npend, pend_alloc;
	uint32_t *tids; /* distinct tids seen, for the count */
	size_t ntids, tids_alloc;
	struct ap_compact_stats *st;
	bool failed;
};

static int cwrite(struct compactor *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = write(c->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ap_error_set(c->err, "%s: %s", c->path, strerror(errno));
		p += n;
		len -= (size_t)n;
		c->st->bytes_out += (uint64_t)n;
	}
	return 0;
}

static int write_chunk(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
		       const uint8_t *payload, size_t len)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	ap_chunk_header_flags(hdr, type, flags, tid, payload, (uint32_t)len);
	if (cwrite(c, hdr, sizeof(hdr)) < 0)
		return -1;
	return cwrite(c, payload, len);
}

/* A payload, compressed when that makes it smaller. */
static int write_compressed(struct compactor *c, uint8_t type, uint32_t tid, const uint8_t *raw,
			    size_t len)
{
	size_t bound = ZSTD_compressBound(len) + 4;
	if (bound > c->zcap) {
		free(c->zbuf);
		c->zcap = bound;
		c->zbuf = ap_xmalloc(c->zcap);
	}
	size_t z = ZSTD_compressCCtx(c->zc, c->zbuf + 4, c->zcap - 4, raw, len, c->level);
	if (ZSTD_isError(z) || z + 4 >= len || z + 4 > AP_CHUNK_MAX_PAYLOAD)
		return write_chunk(c, type, 0, tid, raw, len);
	ap_put_u32le(c->zbuf, (uint32_t)len);
	return write_chunk(c, type, AP_CHUNK_F_ZSTD, tid, c->zbuf, z + 4);
}

static int flush_pending(struct compactor *c, struct pending *p)
{
	if (!p->len)
		return 0;
	int rc = write_compressed(c, AP_CHUNK_EVENTS, p->tid, p->buf, p->len);
	p->len = 0;
	return rc;
}

static int flush_all(struct compactor *c)
{
	for (size_t i = 0; i < c->npend; i++)
		if (flush_pending(c, &c->pend[i]) < 0)
			return -1;
	return 0;
}

static struct pending *pending_for(struct compactor *c, uint32_t tid)
{
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].tid == tid)
			return &c->pend[i];
	AP_ALLOC_GROW(c->pend, c->npend + 1, c->pend_alloc);
	struct pending *p = &c->pend[c->npend++];
	memset(p, 0, sizeof(*p));
	p->tid = tid;
	return p;
}

/* Counts the event records of an uncompressed EVENTS payload. *joinable:
 * it starts with SYNC and has no padding, so it can follow another
 * payload. -1 if a record does not decode. */
static int count_records(const uint8_t *p, const uint8_t *end, uint64_t *n, bool *joinable)
{
	uint64_t v, a;
	*joinable = p < end && *p == AP_EV_SYNC;
	while (p < end) {
		uint8_t tag = *p++;
		unsigned type = AP_TAG_TYPE(tag);
		if (!tag) {
			*joinable = false;
			return 0;
		}
		if (type >= AP_EV_TIME && type <= AP_EV_SYNC) {
			if (ap_get_uv(&p, end, &v) < 0)
				return -1;
			continue;
		}
		if ((tag & AP_TAG_CPU) && ap_get_uv(&p, end, &v) < 0)
			return -1;
		int fields; /* varints after the first address */
		switch (type) {
		case AP_EV_ALLOC:
			fields = 2;
			break;
		case AP_EV_FREE:
			fields = 0;
			break;
		case AP_EV_REALLOC:
			fields = 4; /* new address, size, stack, flags */
			break;
		case AP_EV_TRACK:
			fields = 1;
			break;
		default:
			return -1;
		}
		if ((tag & AP_TAG_REF) ? ap_get_uv(&p, end, &v) < 0 : ap_get_addr(&p, end, 0, &a) < 0)
			return -1;
		if (type == AP_EV_REALLOC) {
			if (ap_get_addr(&p, end, 0, &a) < 0)
				return -1;
			fields--;
		}
		for (int i = 0; i < fields; i++)
			if (ap_get_uv(&p, end, &v) < 0)
				return -1;
		(*n)++;
	}
	return 0;
}

static void note_tid(struct compactor *c, uint32_t tid)
{
	for (size_t i = 0; i < c->ntids; i++)
		if (c->tids[i] == tid)
			return;
	AP_ALLOC_GROW(c->tids, c->ntids + 1, c->tids_alloc);
	c->tids[c->ntids++] = tid;
}

static int corrupt_at(struct compactor *c, size_t off, const char *why)
{
	return ap_error_set(c->err, "%s: corrupt chunk at byte %zu: %s", c->path, off, why);
}

/* Every chunk of the input, rewritten. */
static int compact_chunks(struct compactor *c, const uint8_t *data, size_t size)
{
	size_t off = AP_TRACE_PREAMBLE_LEN;
	if (cwrite(c, data, off) < 0)
		return -1;
	while (off < size) {
		const uint8_t *h = data + off;
		size_t left = size - off;
		uint32_t len = left >= AP_CHUNK_HDR_LEN ? ap_get_u32le(h + 12) : 0;
		if (left < AP_CHUNK_HDR_LEN || (ap_get_u32le(h) == AP_CHUNK_MAGIC &&
						 ap_crc32c(h, 20) == ap_get_u32le(h + 20) &&
						 len <= AP_CHUNK_MAX_PAYLOAD &&
						 len > left - AP_CHUNK_HDR_LEN)) {
			/* the incomplete last chunk: kept as it was, after the rest */
			c->st->cut = true;
			c->st->cut_at = off;
			if (flush_all(c) < 0 || cwrite(c, h, left) < 0)
				return -1;
			return 0;
		}
		if (ap_get_u32le(h) != AP_CHUNK_MAGIC || ap_crc32c(h, 20) != ap_get_u32le(h + 20) ||
		    len > AP_CHUNK_MAX_PAYLOAD)
			return corrupt_at(c, off, "bad chunk header");
		const uint8_t *payload = h + AP_CHUNK_HDR_LEN;
		if (ap_crc32c(payload, len) != ap_get_u32le(h + 16))
			return corrupt_at(c, off, "payload checksum mismatch");
		uint8_t type = h[4], flags = h[5];
		uint32_t tid = ap_get_u32le(h + 8);
		int rc = 0;
		if (type == AP_CHUNK_EVENTS && !flags) {
			uint64_t n = 0;
			bool joinable;
			if (count_records(payload, payload + len, &n, &joinable) < 0)
				return corrupt_at(c, off, "bad event record");
			c->st->events += n;
			note_tid(c, tid);
			struct pending *p = pending_for(c, tid);
			if (!joinable || p->len + len > AP_CHUNK_MAX_PAYLOAD)
				rc = flush_pending(c, p);
			if (!rc && !joinable) {
				rc = write_compressed(c, type, tid, payload, len);
			} else if (!rc) {
				AP_ALLOC_GROW(p->buf, p->len + len, p->alloc);
				memcpy(p->buf + p->len, payload, len);
				p->len += len;
			}
		} else if (type == AP_CHUNK_META && !flags) {
			rc = write_compressed(c, type, tid, payload, len);
		} else {
			/* HEADER, END, chunks compressed already: everything
			 * before them stays before them */
			if (type == AP_CHUNK_EVENTS) {
				note_tid(c, tid);
				rc = flush_pending(c, pending_for(c, tid));
			} else if (type != AP_CHUNK_META) {
				rc = flush_all(c);
			}
			if (!rc)
				rc = write_chunk(c, type, flags, tid, payload, len);
		}
		if (rc < 0)
			return -1;
		c->st->has_end = type == AP_CHUNK_END;
		off += AP_CHUNK_HDR_LEN + (size_t)len;
	}
	return flush_all(c);
}

int ap_trace_compact(const char *path, int level, struct ap_compact_stats *st,
		     struct ap_error *err)
{
	memset(st, 0, sizeof(*st));
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return ap_error_set(err, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(in, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		int e = errno;
		close(in);
		return ap_error_set(err, "%s: %s", path, e ? strerror(e) : "not a regular file");
	}
	size_t size = (size_t)sb.st_size;
	st->bytes_in = size;
	void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, in, 0) : MAP_FAILED;
	close(in);
	if (map == MAP_FAILED)
		return ap_error_set(err, "%s: %s", path, size ? strerror(errno) : "empty file");
	const uint8_t *data = map;
	int rc = -1;
	struct ap_buf tmp = AP_BUF_INIT;
	struct compactor c = {.path = path, .err = err, .fd = -1, .level = level, .st = st};
	if (size < AP_TRACE_PREAMBLE_LEN || memcmp(data, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN)) {
		ap_error_set(err, "%s: not an allocprof trace", path);
		goto out;
	}
	if (ap_get_u32le(data + 8) != AP_TRACE_VERSION) {
		ap_error_set(err, "%s: trace format version %u, this allocprof writes %u", path,
			     ap_get_u32le(data + 8), AP_TRACE_VERSION);
		goto out;
	}
	ap_buf_addf(&tmp, "%s.compact.XXXXXX", path);
	c.fd = mkostemp(tmp.buf, O_CLOEXEC);
	if (c.fd < 0) {
		ap_error_set(err, "%s: %s", tmp.buf, strerror(errno));
		goto out;
	}
	c.zc = ZSTD_createCCtx();
	if (!c.zc)
		abort(); /* out of memory, as ap_xmalloc */
	if (compact_chunks(&c, data, size) < 0)
		goto out;
	fchmod(c.fd, sb.st_mode & 07777);
	if (close(c.fd) < 0) {
		c.fd = -1;
		ap_error_set(err, "%s: %s", tmp.buf, strerror(errno));
		goto out;
	}
	c.fd = -1;
	if (rename(tmp.buf, path) < 0) {
		ap_error_set(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	st->nthreads = c.ntids;
	rc = 0;
out:
	if (c.fd >= 0)
		close(c.fd);
	if (rc < 0 && tmp.len)
		unlink(tmp.buf);
	ap_buf_release(&tmp);
	for (size_t i = 0; i < c.npend; i++)
		free(c.pend[i].buf);
	free(c.pend);
	free(c.tids);
	free(c.zbuf);
	ZSTD_freeCCtx(c.zc);
	munmap(map, size);
	return rc;
}
