/* The SYMBOLS payload (ap_symtab.h, docs/trace-format.md): its writer, its
 * checked decoder and the lookup. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ap_hash.h"
#include "ap_symtab.h"
#include "ap_trace.h"
#include "ap_trace_enc.h"

/* ---- decoding ---- */

struct dcur {
	const uint8_t *p, *end;
	char *why;
	size_t whylen;
};

static int bad(struct dcur *c, const char *what)
{
	snprintf(c->why, c->whylen, "SYMBOLS payload: %s", what);
	return -1;
}

static int d_uv(struct dcur *c, uint64_t *v, const char *what)
{
	if (ap_get_uv(&c->p, c->end, v) < 0)
		return bad(c, what);
	return 0;
}

/* A string index field: 0 none, else index + 1. */
static int d_str(struct dcur *c, char *const *strs, uint64_t nstr, const char **out,
		 const char *what)
{
	uint64_t v;
	if (d_uv(c, &v, what) < 0)
		return -1;
	if (v > nstr)
		return bad(c, "a string index past the table");
	*out = v ? strs[v - 1] : NULL;
	return 0;
}

static int decode_module(struct dcur *c, struct ap_symtab_module *m, char *const *strs,
			 uint64_t nstr, uint8_t **blk)
{
	uint64_t v, npcs;
	if (d_str(c, strs, nstr, &m->path, "truncated module path") < 0)
		return -1;
	if (!m->path)
		return bad(c, "a module without a path");
	if (d_uv(c, &v, "truncated build-id") < 0)
		return -1;
	if (v > (uint64_t)(c->end - c->p))
		return bad(c, "a build-id longer than the payload");
	memcpy(*blk, c->p, v);
	m->build_id = *blk;
	m->build_id_len = v;
	*blk += v;
	c->p += v;
	if (d_uv(c, &v, "truncated module flags") < 0)
		return -1;
	if (v & ~(uint64_t)AP_SYMTAB_FLAGS)
		return bad(c, "unknown module flags");
	m->flags = (unsigned)v;
	if (d_uv(c, &npcs, "truncated PC count") < 0)
		return -1;
	/* a PC takes at least 2 bytes and a frame 4: what the payload can hold */
	if (npcs > (uint64_t)(c->end - c->p) / 6)
		return bad(c, "more PCs than the payload holds");
	m->pcs = ap_xmalloc((npcs ? npcs : 1) * sizeof(*m->pcs));
	size_t falloc = 0;
	uint64_t off = 0;
	for (uint64_t i = 0; i < npcs; i++) {
		uint64_t d, nf;
		if (d_uv(c, &d, "truncated PC") < 0 || d_uv(c, &nf, "truncated frame count") < 0)
			return -1;
		if (i && !d)
			return bad(c, "PCs not in ascending order");
		if (d > UINT64_MAX - off)
			return bad(c, "a PC past 2^64");
		off += d;
		if (!nf || nf > AP_SYMTAB_MAX_FRAMES)
			return bad(c, "a PC with no frames or too many");
		if (nf > (uint64_t)(c->end - c->p) / 4)
			return bad(c, "more frames than the payload holds");
		m->pcs[i] = (struct ap_symtab_pc){off, (uint32_t)m->nframes, (uint32_t)nf};
		m->npcs = i + 1;
		AP_ALLOC_GROW(m->frames, m->nframes + nf, falloc);
		for (uint64_t k = 0; k < nf; k++) {
			struct ap_symtab_frame *f = &m->frames[m->nframes];
			uint64_t line, col;
			if (d_str(c, strs, nstr, &f->name, "truncated frame name") < 0 ||
			    d_str(c, strs, nstr, &f->file, "truncated frame file") < 0 ||
			    d_uv(c, &line, "truncated frame line") < 0 ||
			    d_uv(c, &col, "truncated frame column") < 0)
				return -1;
			if (line > INT32_MAX || col > INT32_MAX)
				return bad(c, "a line or column past 2^31");
			f->line = (uint32_t)line;
			f->column = (uint32_t)col;
			m->nframes++;
		}
	}
	return 0;
}

static void module_release(struct ap_symtab_module *m)
{
	free(m->pcs);
	free(m->frames);
}

int ap_symtab_decode(struct ap_symtab *tab, const uint8_t *p, size_t len, char *why,
		     size_t whylen)
{
	struct dcur c = {p, p + len, why, whylen};
	uint64_t nstr, nmods;
	if (d_uv(&c, &nstr, "truncated string count") < 0)
		return -1;
	if (nstr > len)
		return bad(&c, "more strings than the payload holds");
	/* every string and build-id byte comes from the payload once: with a
	 * NUL after each string, len + nstr bytes hold them all */
	uint8_t *block = ap_xmalloc(len + nstr + 1), *blk = block;
	char **strs = ap_xmalloc((nstr ? nstr : 1) * sizeof(*strs));
	size_t first = tab->nmods;
	int rc = -1;
	for (uint64_t i = 0; i < nstr; i++) {
		uint64_t n;
		if (d_uv(&c, &n, "truncated string") < 0)
			goto out;
		if (n > (uint64_t)(c.end - c.p)) {
			bad(&c, "a string longer than the payload");
			goto out;
		}
		if (memchr(c.p, 0, n)) {
			bad(&c, "a string with a NUL byte");
			goto out;
		}
		memcpy(blk, c.p, n);
		blk[n] = 0;
		strs[i] = (char *)blk;
		blk += n + 1;
		c.p += n;
	}
	if (d_uv(&c, &nmods, "truncated module count") < 0)
		goto out;
	if (nmods > (uint64_t)(c.end - c.p) / 4) {
		bad(&c, "more modules than the payload holds");
		goto out;
	}
	for (uint64_t i = 0; i < nmods; i++) {
		AP_ALLOC_GROW(tab->mods, tab->nmods + 1, tab->mods_alloc);
		struct ap_symtab_module *m = &tab->mods[tab->nmods++];
		memset(m, 0, sizeof(*m));
		if (decode_module(&c, m, strs, nstr, &blk) < 0)
			goto out;
	}
	if (c.p != c.end) {
		bad(&c, "bytes after the last module");
		goto out;
	}
	rc = 0;
out:
	free(strs);
	if (rc < 0) {
		for (size_t i = first; i < tab->nmods; i++)
			module_release(&tab->mods[i]);
		tab->nmods = first;
		free(block);
		return -1;
	}
	AP_ALLOC_GROW(tab->blocks, tab->nblocks + 1, tab->blocks_alloc);
	tab->blocks[tab->nblocks++] = (char *)block;
	return 0;
}

const struct ap_symtab_frame *ap_symtab_lookup(const struct ap_symtab_module *m,
					       uint64_t offset, uint32_t *n)
{
	size_t lo = 0, hi = m->npcs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->pcs[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == m->npcs || m->pcs[lo].offset != offset)
		return NULL;
	*n = m->pcs[lo].n;
	return &m->frames[m->pcs[lo].first];
}

void ap_symtab_take(struct ap_symtab *dst, struct ap_symtab *src, uint32_t proc)
{
	for (size_t i = 0; i < src->nmods; i++) {
		AP_ALLOC_GROW(dst->mods, dst->nmods + 1, dst->mods_alloc);
		dst->mods[dst->nmods] = src->mods[i];
		dst->mods[dst->nmods++].proc = proc;
	}
	for (size_t i = 0; i < src->nblocks; i++) {
		AP_ALLOC_GROW(dst->blocks, dst->nblocks + 1, dst->blocks_alloc);
		dst->blocks[dst->nblocks++] = src->blocks[i];
	}
	free(src->mods);
	free(src->blocks);
	memset(src, 0, sizeof(*src));
}

void ap_symtab_release(struct ap_symtab *tab)
{
	if (!tab)
		return;
	for (size_t i = 0; i < tab->nmods; i++)
		module_release(&tab->mods[i]);
	free(tab->mods);
	for (size_t i = 0; i < tab->nblocks; i++)
		free(tab->blocks[i]);
	free(tab->blocks);
	memset(tab, 0, sizeof(*tab));
}

/* ---- writing ---- */

struct ap_symtab_writer {
	struct ap_buf *payloads;
	size_t npayloads, payloads_alloc;
	/* the payload being made: its strings, its finished modules */
	struct ap_intern strs;
	size_t str_bytes;
	struct ap_buf mods;
	uint64_t nmods;
	/* the module being made */
	bool in_module;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	unsigned flags;
	struct ap_buf pcs;
	uint64_t npcs, prev;
};

static void put_uv(struct ap_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	ap_buf_add(b, tmp, ap_put_uv(tmp, v));
}

static uint64_t str_ref(struct ap_symtab_writer *w, const char *s)
{
	if (!s)
		return 0;
	bool added;
	size_t n = strlen(s);
	uint32_t i = ap_intern_add(&w->strs, s, n, &added);
	if (added)
		w->str_bytes += n + 2;
	return (uint64_t)i + 1;
}

/* The module being made goes into the payload being made. */
static void end_module(struct ap_symtab_writer *w)
{
	if (!w->in_module || !w->npcs)
		return;
	put_uv(&w->mods, str_ref(w, w->path));
	put_uv(&w->mods, w->build_id_len);
	ap_buf_add(&w->mods, w->build_id, w->build_id_len);
	put_uv(&w->mods, w->flags);
	put_uv(&w->mods, w->npcs);
	ap_buf_add(&w->mods, w->pcs.buf, w->pcs.len);
	w->nmods++;
	ap_buf_reset(&w->pcs);
	w->npcs = 0;
	w->prev = 0;
}

static void end_payload(struct ap_symtab_writer *w)
{
	end_module(w);
	if (!w->nmods)
		return;
	AP_ALLOC_GROW(w->payloads, w->npayloads + 1, w->payloads_alloc);
	struct ap_buf *b = &w->payloads[w->npayloads++];
	ap_buf_init(b);
	put_uv(b, w->strs.n);
	for (size_t i = 0; i < w->strs.n; i++) {
		put_uv(b, w->strs.len[i]);
		ap_buf_add(b, w->strs.str[i], w->strs.len[i]);
	}
	put_uv(b, w->nmods);
	ap_buf_add(b, w->mods.buf, w->mods.len);
	ap_intern_release(&w->strs);
	memset(&w->strs, 0, sizeof(w->strs));
	w->str_bytes = 0;
	ap_buf_reset(&w->mods);
	w->nmods = 0;
}

struct ap_symtab_writer *ap_symtab_writer_new(void)
{
	struct ap_symtab_writer *w = ap_xcalloc(1, sizeof(*w));
	ap_buf_init(&w->mods);
	ap_buf_init(&w->pcs);
	return w;
}

void ap_symtab_writer_module(struct ap_symtab_writer *w, const char *path,
			     const uint8_t *build_id, size_t build_id_len, unsigned flags)
{
	end_module(w);
	free(w->path);
	free(w->build_id);
	w->path = ap_xstrdup(path);
	w->build_id = ap_xmalloc(build_id_len ? build_id_len : 1);
	if (build_id_len)
		memcpy(w->build_id, build_id, build_id_len);
	w->build_id_len = build_id_len;
	w->flags = flags & AP_SYMTAB_FLAGS;
	w->in_module = true;
}

void ap_symtab_writer_pc(struct ap_symtab_writer *w, uint64_t offset, uint32_t nframes)
{
	if (w->str_bytes + w->mods.len + w->pcs.len > AP_SYMTAB_PAYLOAD_TARGET) {
		/* this payload is full: the module goes on in the next one */
		end_payload(w);
	}
	put_uv(&w->pcs, w->npcs ? offset - w->prev : offset);
	put_uv(&w->pcs, nframes);
	w->prev = offset;
	w->npcs++;
}

void ap_symtab_writer_frame(struct ap_symtab_writer *w, const char *name, const char *file,
			    uint32_t line, uint32_t column)
{
	put_uv(&w->pcs, str_ref(w, name));
	put_uv(&w->pcs, str_ref(w, file));
	put_uv(&w->pcs, line);
	put_uv(&w->pcs, column);
}

size_t ap_symtab_writer_payloads(struct ap_symtab_writer *w, const struct ap_buf **out)
{
	end_payload(w);
	*out = w->payloads;
	return w->npayloads;
}

void ap_symtab_writer_free(struct ap_symtab_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->npayloads; i++)
		ap_buf_release(&w->payloads[i]);
	free(w->payloads);
	ap_intern_release(&w->strs);
	ap_buf_release(&w->mods);
	ap_buf_release(&w->pcs);
	free(w->path);
	free(w->build_id);
	free(w);
}

/* One chunk: header, then the payload (compressed when it pays). */
static void add_chunk(struct ap_buf *out, const struct ap_buf *pl, uint32_t index, int level)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	uint8_t flags = 0;
	uint8_t *z = NULL;
	const uint8_t *body = (const uint8_t *)pl->buf;
	size_t len = pl->len;
	if (level > 0) {
		size_t cap = 4 + ZSTD_compressBound(pl->len);
		z = ap_xmalloc(cap);
		size_t zn = ZSTD_compress(z + 4, cap - 4, pl->buf, pl->len, level);
		if (!ZSTD_isError(zn) && zn + 4 < pl->len) {
			ap_put_u32le(z, (uint32_t)pl->len);
			body = z;
			len = zn + 4;
			flags = AP_CHUNK_F_ZSTD;
		}
	}
	ap_chunk_header_flags(hdr, AP_CHUNK_SYMBOLS, flags, 0, AP_STREAM_SYMBOLS, index, body,
			      (uint32_t)len);
	ap_buf_add(out, hdr, sizeof(hdr));
	ap_buf_add(out, body, len);
	free(z);
}

/* END's `symbols` (AP_EK_SYMBOLS), the one byte the compactor wrote as 0,
 * set in place to the count of SYMBOLS chunks appended after it, with the
 * chunk's checksums. After the chunks are whole: a file cut before them
 * then reads as cut (the reader compares), and a reader meanwhile sees
 * the symbols before the count that asks for them. An END without the
 * field (a trace the compactor did not write) is left as it is. */
static void mark_end(int fd, size_t end_off, size_t nchunks)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	if (pread(fd, hdr, sizeof(hdr), (off_t)end_off) != (ssize_t)sizeof(hdr) ||
	    ap_get_u32le(hdr) != AP_CHUNK_MAGIC || hdr[4] != AP_CHUNK_END || hdr[5] ||
	    !ap_chunk_header_ok(hdr))
		return;
	uint32_t len = ap_get_u32le(hdr + 12);
	if (len > 4096)
		return; /* an END is a few dozen bytes */
	uint8_t pl[4096];
	if (pread(fd, pl, len, (off_t)(end_off + AP_CHUNK_HDR_LEN)) != (ssize_t)len ||
	    ap_crc32c(pl, len) != ap_get_u32le(hdr + 16))
		return;
	const uint8_t *p = pl, *end = pl + len;
	while (p < end) {
		uint64_t key, kind, v;
		if (ap_get_uv(&p, end, &key) < 0 || ap_get_uv(&p, end, &kind) < 0)
			return;
		const uint8_t *at = p;
		if (ap_get_uv(&p, end, &v) < 0)
			return;
		if (kind == AP_KV_STR) {
			if (v > (uint64_t)(end - p))
				return;
			p += v;
			continue;
		}
		if (key != AP_EK_SYMBOLS)
			continue;
		if (kind != AP_KV_UINT || p - at != 1 || v)
			return; /* not the compactor's byte, or set already */
		pl[at - pl] = (uint8_t)(nchunks < AP_END_SYMBOLS_MAX ? nchunks : AP_END_SYMBOLS_MAX);
		ap_chunk_header_flags(hdr, AP_CHUNK_END, 0, ap_get_u32le(hdr + 8),
				      ap_get_u32le(hdr + 20), ap_get_u32le(hdr + 24), pl, len);
		uint8_t whole[AP_CHUNK_HDR_LEN + 4096];
		memcpy(whole, hdr, sizeof(hdr));
		memcpy(whole + sizeof(hdr), pl, len);
		/* one write: a reader sees the chunk before or after */
		(void)!pwrite(fd, whole, sizeof(hdr) + len, (off_t)end_off);
		return;
	}
}

int ap_symtab_append(const char *path, struct ap_symtab_writer *w, int level, size_t end_off,
		     struct ap_error *err)
{
	const struct ap_buf *pl;
	size_t n = ap_symtab_writer_payloads(w, &pl);
	if (!n)
		return 0;
	struct ap_buf out = AP_BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		if (pl[i].len > AP_CHUNK_MAX_PAYLOAD) {
			ap_buf_release(&out);
			return ap_error_set(err, "%s: the symbols do not fit a chunk", path);
		}
		add_chunk(&out, &pl[i], (uint32_t)i, level);
	}
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		ap_buf_release(&out);
		if (e == ELOOP) /* O_NOFOLLOW: the trace is written where it is */
			return ap_error_set(err, "%s: cannot add the symbols: a symbolic link "
					    "(give the trace's own path)", path);
		return ap_error_set(err, "%s: cannot add the symbols: %s", path, strerror(e));
	}
	size_t done = 0;
	while (done < out.len) {
		ssize_t k = write(fd, out.buf + done, out.len - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : ENOSPC;
			/* the trace as it was: no cut chunk at its end */
			if (ftruncate(fd, st.st_size) < 0) {
				/* nothing more to do: the reader reports the cut */
			}
			close(fd);
			ap_buf_release(&out);
			return ap_error_set(err, "%s: cannot add the symbols: %s", path, strerror(e));
		}
		done += (size_t)k;
	}
	ap_buf_release(&out);
	if (close(fd) < 0)
		return ap_error_set(err, "%s: cannot add the symbols: %s", path, strerror(errno));
	if (end_off) {
		/* not O_APPEND, where pwrite would append */
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			mark_end(fd, end_off, n);
			close(fd);
		}
	}
	return 0;
}
