/* The compactor's output (compact-int.h): the chunks in their order, each
 * numbered in its stream; the payloads compressed with zstd on writer
 * threads, at the level chosen for each; the META records held back and
 * joined; END with the chunks written.
 *
 * zstd is most of what compacting repetitive events costs (python3's
 * threads: 5.6 s at AP_COMPACT_DENSE_LEVEL of 11 s), the re-encoding the
 * rest: writer threads (struct zworker, one per CPU up to ZW_MAX)
 * compress the payloads while the next ones are encoded, and write them
 * in the order given. Whatever else the compactor writes waits until all
 * that was given is written (compact_drain), so the bytes are those
 * written in turn, with or without threads. Without (none could be made)
 * a payload is compressed and written at once. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compact-int.h"

/* META records held back: the sampler's META chunks are joined into one
 * until an EVENTS chunk (or HEADER, END, a copied chunk) is written, up to
 * this many bytes. Stacks share much across chunks, which zstd finds only
 * within one (level 10: python3 52 KB of stacks in 7 chunks, 49 KB in 3;
 * cppcheck 993 KB in 359, 873 KB in 18). */
#define COMPACT_META (4u << 20)
/* Payload bytes tried at AP_COMPACT_DENSE_LEVEL too (compact_write_compressed). */
#define DENSE_BUDGET (128u << 20)

#define ZW_MAX 4
/* Payloads given and not yet written, at most. */
#define ZQ (ZW_MAX + 1)

struct zjob {
	uint8_t type, flags;
	uint32_t tid;
	int level;
	uint8_t *raw;
	size_t len, cap;
	struct zout z;			  /* ZPRE bytes of room, then the frame */
	size_t zlen;			  /* its frame's size, or SIZE_MAX */
	bool packed;			  /* z holds the frame already (the trial's) */
	uint8_t pre[AP_CHUNK_COUNTS_MAX]; /* what the payload starts with, as stored */
	uint8_t npre;			  /* (EVENTS' counts) */
};

struct zworker {
	pthread_t th[ZW_MAX];
	unsigned nth; /* threads running */
	pthread_mutex_t mu;
	pthread_cond_t more, done; /* a job given / a job written */
	struct zjob q[ZQ];	   /* job k in q[k % ZQ] */
	uint64_t given, taken, written;
	bool quit;
	bool failed; /* a write failed: err says why, the rest is dropped */
	struct ap_error err;
	ZSTD_CCtx *zc; /* without threads */
};

static int cwrite(struct compactor *c, struct ap_error *err, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = write(c->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ap_error_set(err, "%s: %s", c->path, strerror(errno));
		p += n;
		len -= (size_t)n;
		c->st->bytes_out += (uint64_t)n;
	}
	return 0;
}

/* One chunk as it is. */
static int emit_chunk(struct compactor *c, struct ap_error *err, uint8_t type, uint8_t flags,
		      uint32_t tid, const uint8_t *payload, size_t len)
{
	uint8_t hdr[AP_CHUNK_HDR_LEN];
	uint32_t stream = ap_stream_of(type, tid);
	c->data_chunks += type == AP_CHUNK_META || type == AP_CHUNK_EVENTS;
	ap_chunk_header_flags(hdr, type, flags, tid, stream,
			      ap_streams_next(&c->out_streams, stream), payload, (uint32_t)len);
	if (cwrite(c, err, hdr, sizeof(hdr)) < 0)
		return -1;
	return cwrite(c, err, payload, len);
}

/* Room before a compressed frame: a chunk's counts and its `u32 raw_len`. */
#define ZPRE (AP_CHUNK_COUNTS_MAX + 4)

/* From this level on, and above zstd's largest size class of inputs
 * (256 KiB), its match tables are capped at 2^ZTABLE_LOG entries. Level
 * 15 on a chunk of a few MB asks for 2^22-2^23 (a 67 MB workspace,
 * zeroed at its first use: most of record's page faults on sqlite3);
 * 2^20 left every bench trace within 1 % of its size and record's peak
 * at 31 MB instead of 89. Level 9 (AP_COMPACT_LAST_LEVEL) asks for
 * 2^21 hash entries and a row table beside them: a workspace the
 * level-15 one did not hold, made anew and zeroed while the user waited
 * for record's end (12 ms of page faults at bench/realloc's); capped, it
 * fits in the one the earlier chunks warmed. Below level 9 zstd's own
 * tables are smaller than that (setting it there would raise them). */
#define ZTABLE_LEVEL 9
#define ZTABLE_MIN_INPUT (256u << 10)
#define ZTABLE_LOG 20

/* raw compressed at `level` into o after ZPRE bytes: its size, or
 * SIZE_MAX. The room is there for raw itself, too. */
static size_t zcompress(ZSTD_CCtx *zc, struct zout *o, const uint8_t *raw, size_t len, int level)
{
	size_t bound = ZSTD_compressBound(len) + ZPRE;
	if (bound > o->cap) {
		free(o->b);
		o->cap = bound;
		o->b = ap_xmalloc(bound);
	}
	size_t z;
	if (level < ZTABLE_LEVEL || len <= ZTABLE_MIN_INPUT) {
		z = ZSTD_compressCCtx(zc, o->b + ZPRE, o->cap - ZPRE, raw, len, level);
	} else {
		ZSTD_CCtx_reset(zc, ZSTD_reset_session_and_parameters);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, level);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_hashLog, ZTABLE_LOG);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_chainLog, ZTABLE_LOG);
		z = ZSTD_compress2(zc, o->b + ZPRE, o->cap - ZPRE, raw, len);
		ZSTD_CCtx_reset(zc, ZSTD_reset_session_and_parameters);
	}
	return ZSTD_isError(z) ? SIZE_MAX : z;
}

static void zjob_compress(ZSTD_CCtx *zc, struct zjob *j)
{
	j->zlen = zcompress(zc, &j->z, j->raw, j->len, j->level);
}

/* The job's chunk: compressed when that made it smaller, after the
 * counts it starts with (put in front of it in z, which has the room). */
static int zjob_emit(struct compactor *c, struct ap_error *err, struct zjob *j)
{
	uint8_t *at = j->z.b + AP_CHUNK_COUNTS_MAX - j->npre;
	if (j->zlen == SIZE_MAX || j->zlen + 4 >= j->len ||
	    j->zlen + 4 + j->npre > AP_CHUNK_MAX_PAYLOAD) {
		if (!j->npre)
			return emit_chunk(c, err, j->type, j->flags, j->tid, j->raw, j->len);
		/* (at least its bound, which is more than len) */
		memcpy(j->z.b + AP_CHUNK_COUNTS_MAX, j->raw, j->len);
		memcpy(at, j->pre, j->npre);
		return emit_chunk(c, err, j->type, j->flags, j->tid, at, j->npre + j->len);
	}
	ap_put_u32le(j->z.b + AP_CHUNK_COUNTS_MAX, (uint32_t)j->len);
	memcpy(at, j->pre, j->npre);
	return emit_chunk(c, err, j->type, j->flags | AP_CHUNK_F_ZSTD, j->tid, at,
			  j->npre + j->zlen + 4);
}

/* A writer thread: takes the next job, compresses it, writes it when the
 * ones before are written. */
static void *zw_main(void *arg)
{
	struct compactor *c = arg;
	struct zworker *zw = c->zw;
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	if (!zc)
		abort(); /* out of memory, as ap_xmalloc */
	pthread_mutex_lock(&zw->mu);
	for (;;) {
		while (zw->taken == zw->given && !zw->quit)
			pthread_cond_wait(&zw->more, &zw->mu);
		if (zw->taken == zw->given)
			break;
		uint64_t k = zw->taken++;
		struct zjob *j = &zw->q[k % ZQ];
		bool failed = zw->failed;
		pthread_mutex_unlock(&zw->mu);
		if (!failed && !j->packed)
			zjob_compress(zc, j);
		pthread_mutex_lock(&zw->mu);
		while (zw->written != k)
			pthread_cond_wait(&zw->done, &zw->mu);
		if (!zw->failed) {
			pthread_mutex_unlock(&zw->mu);
			int rc = zjob_emit(c, &zw->err, j);
			pthread_mutex_lock(&zw->mu);
			zw->failed = rc < 0;
		}
		zw->written++;
		pthread_cond_broadcast(&zw->done);
	}
	pthread_mutex_unlock(&zw->mu);
	ZSTD_freeCCtx(zc);
	return NULL;
}

/* The writer, and its threads if they can be made (signals stay with the
 * threads that were there: record's handlers are not for them). A stream
 * (c->stream) is compacted while the program runs, on the one core it
 * does not use: no threads. */
void compact_writer_start(struct compactor *c)
{
	c->ztrial = ZSTD_createCCtx();
	if (!c->ztrial)
		abort(); /* out of memory, as ap_xmalloc */
	struct zworker *zw = ap_xcalloc(1, sizeof(*zw));
	c->zw = zw;
	pthread_mutex_init(&zw->mu, NULL);
	pthread_cond_init(&zw->more, NULL);
	pthread_cond_init(&zw->done, NULL);
	unsigned cpus = compact_cpus();
	unsigned want = c->stream ? 0 : cpus > ZW_MAX ? ZW_MAX : cpus;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (zw->nth < want && pthread_create(&zw->th[zw->nth], NULL, zw_main, c) == 0)
		zw->nth++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!zw->nth && !(zw->zc = ZSTD_createCCtx()))
		abort(); /* out of memory, as ap_xmalloc */
}

unsigned compact_cpus(void)
{
	const char *nt = getenv("ALLOCPROF_COMPACT_NO_THREAD");
	return nt && !strcmp(nt, "1") ? 0 : ap_cpus_here();
}

/* What the writer failed at, as the compactor's error. */
static int zw_failed(struct compactor *c)
{
	*c->err = c->zw->err;
	return -1;
}

/* The trial's frame (zlen bytes in c->trial) as job j's: the buffers
 * trade places (j's is free: its chunk is written). */
static void zjob_take_trial(struct compactor *c, struct zjob *j, size_t zlen)
{
	struct zout z = j->z;
	j->z = c->trial;
	c->trial = z;
	j->zlen = zlen;
	j->packed = true;
}

/* Hands a payload over, to be compressed at `level` (or, with zlen not
 * SIZE_MAX, as the frame of zlen bytes in c->trial) and written after
 * those given before, behind the npre bytes pre (not compressed). */
static int zw_give(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
		   const uint8_t *pre, size_t npre, const uint8_t *raw, size_t len, int level,
		   size_t zlen)
{
	struct zworker *zw = c->zw;
	if (!zw->nth) {
		struct zjob *j = &zw->q[0];
		*j = (struct zjob){.type = type,
				   .flags = flags,
				   .tid = tid,
				   .level = level,
				   .raw = (uint8_t *)raw,
				   .len = len,
				   .cap = len,
				   .z = j->z,
				   .npre = (uint8_t)npre};
		memcpy(j->pre, pre, npre);
		if (zlen != SIZE_MAX)
			zjob_take_trial(c, j, zlen);
		else
			zjob_compress(zw->zc, j);
		int rc = zjob_emit(c, &zw->err, j);
		j->raw = NULL;
		return rc < 0 ? zw_failed(c) : 0;
	}
	pthread_mutex_lock(&zw->mu);
	while (zw->given - zw->written == ZQ)
		pthread_cond_wait(&zw->done, &zw->mu);
	bool failed = zw->failed;
	struct zjob *j = &zw->q[zw->given % ZQ];
	pthread_mutex_unlock(&zw->mu);
	if (failed)
		return zw_failed(c);
	AP_ALLOC_GROW(j->raw, len ? len : 1, j->cap);
	memcpy(j->raw, raw, len);
	memcpy(j->pre, pre, npre);
	j->npre = (uint8_t)npre;
	j->type = type;
	j->flags = flags;
	j->tid = tid;
	j->level = level;
	j->len = len;
	j->packed = false;
	if (zlen != SIZE_MAX)
		zjob_take_trial(c, j, zlen);
	pthread_mutex_lock(&zw->mu);
	zw->given++;
	pthread_cond_signal(&zw->more);
	pthread_mutex_unlock(&zw->mu);
	return 0;
}

/* Waits until everything given is written. */
int compact_drain(struct compactor *c)
{
	struct zworker *zw = c->zw;
	if (compact_encoders_drain(c) < 0)
		return -1;
	if (!zw)
		return 0;
	pthread_mutex_lock(&zw->mu);
	while (zw->written != zw->given)
		pthread_cond_wait(&zw->done, &zw->mu);
	bool failed = zw->failed;
	pthread_mutex_unlock(&zw->mu);
	return failed ? zw_failed(c) : 0;
}

static void zw_stop(struct compactor *c)
{
	struct zworker *zw = c->zw;
	if (!zw)
		return;
	pthread_mutex_lock(&zw->mu);
	zw->quit = true;
	pthread_cond_broadcast(&zw->more);
	pthread_mutex_unlock(&zw->mu);
	for (unsigned i = 0; i < zw->nth; i++)
		pthread_join(zw->th[i], NULL);
	for (int k = 0; k < ZQ; k++) {
		if (zw->nth)
			free(zw->q[k].raw);
		free(zw->q[k].z.b);
	}
	ZSTD_freeCCtx(zw->zc);
	pthread_mutex_destroy(&zw->mu);
	pthread_cond_destroy(&zw->more);
	pthread_cond_destroy(&zw->done);
	free(zw);
	c->zw = NULL;
}

void compact_writer_stop(struct compactor *c)
{
	zw_stop(c);
	free(c->trial.b);
	c->trial = (struct zout){0};
	ZSTD_freeCCtx(c->ztrial);
	c->ztrial = NULL;
}

/* Bytes the compactor writes itself, after what the writer was given. */
int compact_out_write(struct compactor *c, const void *data, size_t len)
{
	return compact_drain(c) < 0 ? -1 : cwrite(c, c->err, data, len);
}

/* Writes one chunk as it is, after the META records held back (which
 * every chunk after them in the input came after, too). */
int compact_write_chunk(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
			const uint8_t *payload, size_t len)
{
	if (compact_encoders_drain(c) < 0 || (c->meta.len && compact_flush_meta(c) < 0))
		return -1;
	if (compact_drain(c) < 0)
		return -1;
	return emit_chunk(c, c->err, type, flags, tid, payload, len);
}

/* A payload, compressed when that makes it smaller, after the META held
 * back. A payload that zstd's level 1 packs to an eighth or less repeats
 * itself, and a deeper search (level AP_COMPACT_DENSE_LEVEL) packs it
 * much smaller than the level: it gets that level, for the first
 * DENSE_BUDGET bytes of such payloads. python3's threads handing dicts
 * over (PYTHONMALLOC=malloc, 147 MB raw): 1.31 MB at level 3, 694 K at
 * level 15 (heaptrack's file: 2.99 MB) for 5.7 s of compaction's CPU
 * instead of 4.7 s, most of it on the writer threads; level 17 there:
 * 659 K for 6.2 s. (The level is 12 since session 37: cppcheck 2.30 s ->
 * 1.81 s of record's wall for 0.2 % more file.) Random events (bench/mixed: 3 times smaller at level 3) would
 * pay for nothing, and the budget bounds what a long run pays. A payload
 * that level 1 leaves at 2/5 of its size or more is random events, where
 * the default level's deeper search finds little more: at that level,
 * level 1's frame is written (bench/mixed's 72 MB of payloads: 35,372,892
 * bytes at level 1, 35,379,663 at level 3; tests/trace/test-compact.c's
 * random events 1.4 % larger; elsewhere only chunks of a few KB, 2-3 %
 * larger), and the drain, which compacts while the program runs, does not
 * compress it twice (7 % less of its CPU time on bench/mixed). A level
 * asked for above the default is a smaller file asked for. The last
 * chunk of one thread's trace (`last`) gets AP_COMPACT_LAST_LEVEL
 * instead: its compression is what `record` does after the exit. */
int compact_write_compressed(struct compactor *c, uint8_t type, uint8_t flags, uint32_t tid,
			     const struct ap_chunk_counts *counts, const uint8_t *raw, size_t len,
			     bool last)
{
	uint8_t pre[AP_CHUNK_COUNTS_MAX];
	size_t npre = counts ? ap_put_chunk_counts(pre, counts) : 0;
	if (c->meta.len && compact_flush_meta(c) < 0)
		return -1;
	int level = c->level;
	size_t packed = SIZE_MAX;
	if (c->level >= AP_COMPACT_LEVEL && c->level < AP_COMPACT_DENSE_LEVEL &&
	    c->dense < DENSE_BUDGET && len >= 4096) {
		size_t z = zcompress(c->ztrial, &c->trial, raw, len, 1);
		if (z != SIZE_MAX && z <= len / 8) {
			level = last ? AP_COMPACT_LAST_LEVEL : AP_COMPACT_DENSE_LEVEL;
			c->dense += len;
		} else if (z != SIZE_MAX && z >= len / 5 * 2 && c->level == AP_COMPACT_LEVEL) {
			packed = z;
		}
	}
	return zw_give(c, type, flags | (counts ? AP_CHUNK_F_COUNTS : 0), tid, pre, npre, raw, len,
		       level, packed);
}

/* The size of raw compressed at level 1: a trial of two columns. */
size_t compact_trial_size(ZSTD_CCtx *zc, struct zout *o, const uint8_t *raw, size_t len)
{
	return zcompress(zc, o, raw, len, 1);
}

/* The META records held back, as one chunk. */
int compact_flush_meta(struct compactor *c)
{
	size_t len = c->meta.len;
	if (!len)
		return 0;
	c->meta.len = 0; /* (so that compact_write_chunk does not come back here) */
	return compact_write_compressed(c, AP_CHUNK_META, 0, c->meta_tid, NULL, c->meta.b, len,
					false);
}

/* A META payload's records added to those held back (stacks.h), which
 * are written first when they would grow past COMPACT_META. */
int compact_hold_meta(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		      size_t len)
{
	struct bytes *o = &c->meta;
	/* (the encoder threads write the META held back before their
	 * chunks: those came before this one) */
	if (compact_encoders_drain(c) < 0)
		return -1;
	if (o->len && o->len + len > COMPACT_META && compact_flush_meta(c) < 0)
		return -1;
	if (!o->len)
		c->meta_tid = tid;
	if (compact_stacks_meta(&c->stacks, o, payload, len) < 0)
		return compact_corrupt_at(c, off, "META record does not decode");
	return 0;
}

/* An END with the chunk count of the output (AP_EK_CHUNKS): its other
 * fields as they were, in their order (`pooled` with the blocks made
 * anonymous named by index). The input's count is checked as the reader
 * checks it: its last value, if it has one. */
int compact_write_end(struct compactor *c, size_t off, uint32_t tid, const uint8_t *payload,
		      size_t len)
{
	/* (the chunks counted are those written: all of them, first) */
	if (compact_drain(c) < 0)
		return -1;
	uint8_t *out = ap_xmalloc(2 * len * AP_VARINT_MAX + 4 * AP_VARINT_MAX + 2 * AP_KV_UINT_MAX);
	size_t n = 0;
	const uint8_t *p = payload, *end = payload + len;
	uint64_t chunks = 0;
	bool symbols = false;
	while (p < end) {
		const uint8_t *at = p;
		uint64_t key, kind, v;
		if (ap_get_uv(&p, end, &key) < 0 || ap_get_uv(&p, end, &kind) < 0 ||
		    kind > AP_KV_STR || ap_get_uv(&p, end, &v) < 0 ||
		    (kind == AP_KV_STR && v > (uint64_t)(end - p))) {
			free(out);
			return compact_corrupt_at(c, off, "END record does not decode");
		}
		if (kind == AP_KV_STR)
			p += v;
		if (key == AP_EK_CHUNKS && kind == AP_KV_UINT)
			chunks = v;
		if (key == AP_EK_SYMBOLS)
			symbols = true; /* as it was: the SYMBOLS chunks are copied */
		if (key == AP_EK_POOLED && kind == AP_KV_STR) {
			size_t k = compact_pooled_anon(c, p - v, (size_t)v, out + n);
			if (!k) {
				free(out);
				return compact_corrupt_at(c, off,
							  "END's pooled list does not decode");
			}
			n += k;
		} else if (key != AP_EK_CHUNKS) {
			memcpy(out + n, at, (size_t)(p - at));
			n += (size_t)(p - at);
		}
	}
	if (chunks > c->walk.data_chunks) {
		free(out);
		return compact_corrupt_at(c, off,
					  "missing chunks: the END counts more META and "
					  "EVENTS chunks than the file holds before it");
	}
	n += ap_put_kv_uint(out + n, AP_EK_CHUNKS, c->data_chunks);
	/* none yet: `allocprof symbols` sets how many it appends, in place
	 * (one byte), so that a file cut before them reads as cut */
	if (!symbols)
		n += ap_put_kv_uint(out + n, AP_EK_SYMBOLS, 0);
	int rc = compact_write_chunk(c, AP_CHUNK_END, 0, tid, out, n);
	free(out);
	return rc;
}
