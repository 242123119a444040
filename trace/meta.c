/* HEADER and END (pooled) and META records (mapping, stack,
 * stack_shared, thread), decoded in pass 1 into the trace being read. */
#include "meta.h"
#include "file.h"

#include <stdlib.h>
#include <string.h>

static int get_uv(struct rd *r, struct cur *c, uint64_t *v, const char *what)
{
	if (ap_get_uv(&c->p, c->end, v) < 0)
		return rd_corrupt(r, "bad varint for %s at byte %zu", what, (size_t)(c->p - c->base));
	return 0;
}

/* A string: points into the payload, not NUL-terminated. */
static int get_str(struct rd *r, struct cur *c, const uint8_t **s, size_t *len, const char *what)
{
	uint64_t n;
	if (get_uv(r, c, &n, what) < 0)
		return -1;
	if (n > (uint64_t)(c->end - c->p))
		return rd_corrupt(r, "%s of %llu bytes runs past the end of the payload", what,
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
	return rd_corrupt(r, "key %llu has unknown kind %llu", (unsigned long long)kv->key,
		       (unsigned long long)kv->kind);
}

static int want_kind(struct rd *r, const struct kv *kv, uint64_t kind, const char *name)
{
	if (kv->kind != kind)
		return rd_corrupt(r, "%s (key %llu) is %s, expected %s", name,
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

int decode_header(struct rd *r, struct cur *c)
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
		case AP_HK_RUN_PID:
			name = "run_pid";
			num = &t->run_pid;
			break;
		case AP_HK_RUN_ID:
			name = "run_id";
			num = &t->run_id;
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
		return rd_corrupt(r, "the header has no sampling rate");
	if (t->rate == 0)
		return rd_corrupt(r, "the header's sampling rate is 0");
	if (t->time_quantum_ns == 0)
		return rd_corrupt(r, "the header's time quantum is 0");
	if (t->time_step_ns % t->time_quantum_ns)
		return rd_corrupt(r, "the header's time step %llu ns is not a multiple of its "
			       "quantum %llu ns", (unsigned long long)t->time_step_ns,
			       (unsigned long long)t->time_quantum_ns);
	/* events name their CPU in 16 bits: more CPUs than that is damage,
	 * and consumers size per-CPU tables by it */
	if (t->cpus > AP_MAX_CPUS)
		return rd_corrupt(r, "the header's CPU count %llu is more than %u",
			       (unsigned long long)t->cpus, AP_MAX_CPUS);
	/* advise's replay runs on that many CPUs */
	if (t->allowed_cpus > AP_MAX_CPUS)
		return rd_corrupt(r, "the header's allowed CPU count %llu is more than %u",
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
			return rd_corrupt(r, "END's pooled list has a bad varint");
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

int decode_end(struct rd *r, struct cur *c)
{
	struct ap_trace *t = r->t;
	free(t->pooled);	/* the last END counts */
	t->pooled = NULL;
	t->npooled = 0;
	uint64_t end_ns = 0, reason = 0, status = 0, calls = 0, bytes = 0, chunks = 0, cpu_ns = 0;
	uint64_t live_peak = 0, live_slack = 0, run_delay = 0, nvcsw = 0, nivcsw = 0, unwind = 0;
	uint64_t minflt = 0, stop_errno = 0, symbols = 0, unfollowed = 0, spawned = 0;
	uint64_t sampler_waits = 0, sampler_wait_ns = 0;
	char spawn_first[sizeof(t->spawn_first)] = "";
	bool has_minflt = false;
	bool has_status = false, has_calls = false, has_live = false, has_delay = false;
	bool has_csw = false;
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
		case AP_EK_RUN_DELAY_NS:
			name = "run_delay_ns";
			num = &run_delay;
			has_delay = true;
			break;
		case AP_EK_NVCSW:
			name = "nvcsw";
			num = &nvcsw;
			has_csw = true;
			break;
		case AP_EK_NIVCSW:
			name = "nivcsw";
			num = &nivcsw;
			break;
		case AP_EK_UNWIND_NS:
			name = "unwind_ns";
			num = &unwind;
			break;
		case AP_EK_MINFLT:
			name = "minflt";
			num = &minflt;
			has_minflt = true;
			break;
		case AP_EK_SAMPLER_WAITS:
			name = "sampler_waits";
			num = &sampler_waits;
			break;
		case AP_EK_SAMPLER_WAIT_NS:
			name = "sampler_wait_ns";
			num = &sampler_wait_ns;
			break;
		case AP_EK_STOP_ERRNO:
			name = "stop_errno";
			num = &stop_errno;
			break;
		case AP_EK_SYMBOLS:
			name = "symbols";
			num = &symbols;
			break;
		case AP_EK_UNFOLLOWED:
			name = "unfollowed";
			num = &unfollowed;
			break;
		case AP_EK_SPAWN_UNFOLLOWED:
			name = "spawn_unfollowed";
			num = &spawned;
			break;
		case AP_EK_SPAWN_FIRST:
			if (want_kind(r, &kv, AP_KV_STR, "spawn_first") < 0)
				return -1;
			{
				size_t l = kv.len < sizeof(spawn_first) ? kv.len : sizeof(spawn_first) - 1;
				memcpy(spawn_first, kv.s, l);
				spawn_first[l] = 0;
			}
			continue;
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
		return rd_corrupt(r, "missing chunks: the writer wrote %llu META and EVENTS chunks "
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
	t->has_run_delay = has_delay;
	t->run_delay_ns = run_delay;
	t->has_switches = has_csw;
	t->nvcsw = nvcsw;
	t->nivcsw = nivcsw;
	t->unwind_ns = unwind;
	t->has_minflt = has_minflt;
	t->minflt = minflt;
	t->sampler_waits = sampler_waits;
	t->sampler_wait_ns = sampler_wait_ns;
	t->stop_errno = stop_errno;
	t->symbols_said = symbols;
	t->exec_unfollowed = reason == AP_END_EXEC && unfollowed;
	t->spawn_unfollowed = spawned;
	memcpy(t->spawn_first, spawn_first, sizeof(spawn_first));
	t->end_off = r->chunk_off;
	return 0;
}

/* ---- META ---- */

/* A module loaded where another one was before it in the trace (the
 * sampler writes a module again once one it wrote was unloaded: a plugin
 * unloaded and another loaded at its address, or it again) starts an era:
 * its mapping's addresses, and the PCs in its range of the stacks written
 * after it, are read with the era's tag above the highest user address,
 * so that each stack resolves to the module that was there when it was
 * written. Past AP_ERA_MAX eras (or AP_ERA_WORK_MAX mappings compared), a
 * record replaces what it overlaps for every stack, as before eras. */
#define AP_ERA_SHIFT 56
#define AP_ERA_MAX 127
#define AP_ERA_MASK (((uint64_t)1 << AP_ERA_SHIFT) - 1)
/* Mappings compared in all, at most: a file of a million MAPPING records
 * is read in its time, the later ones replacing the earlier as before
 * (a program's modules, a few thousand at most, take a few million). */
#define AP_ERA_WORK_MAX ((uint64_t)1 << 26)

/* The tag of a mapping of [start, end): that of the latest one before it
 * overlapping it, when that one is the same module (written again), a new
 * era's when it is another, 0 when none overlaps. */
static uint64_t map_era(struct rd *r, uint64_t bias, uint64_t start, uint64_t end, const uint8_t *path,
			size_t path_len, const uint8_t *bid, size_t bid_len)
{
	const struct ap_trace *t = r->t;
	if (r->nremaps >= AP_ERA_MAX || r->era_work >= AP_ERA_WORK_MAX)
		return 0;
	for (size_t i = t->nmaps; i-- > 0;) {
		if (++r->era_work >= AP_ERA_WORK_MAX)
			return 0;
		const struct ap_mapping *o = &t->maps[i];
		uint64_t tag = r->map_tag[i];
		if (o->end - tag <= start || o->start - tag >= end || start >= end)
			continue;
		if (o->bias - tag == bias && o->build_id_len == bid_len && !memcmp(o->build_id, bid, bid_len) &&
		    strlen(o->path) == path_len && !memcmp(o->path, path, path_len))
			return tag;
		tag = (uint64_t)(r->nremaps + 1) << AP_ERA_SHIFT;
		AP_ALLOC_GROW(r->remaps, r->nremaps + 1, r->remaps_alloc);
		r->remaps[r->nremaps++] = (struct rd_remap){ start, end, tag };
		return tag;
	}
	return 0;
}

/* The PCs of the stack at r->pcs[r->npcs .. + depth): each in the range
 * of the latest module of an era (map_era) read with its tag, others as
 * they are (a shared frame copied from an earlier stack, tagged there,
 * untagged first; a PC above the user addresses that is no era's tag
 * stays as it is). */
static void stack_eras(struct rd *r, uint64_t depth)
{
	if (!r->nremaps)
		return;
	for (uint64_t i = 0; i < depth; i++) {
		uint64_t pc = r->pcs[r->npcs + i], era = pc >> AP_ERA_SHIFT, tag = 0;
		if (era >= 1 && era <= r->nremaps && (pc & AP_ERA_MASK) >= r->remaps[era - 1].start &&
		    (pc & AP_ERA_MASK) < r->remaps[era - 1].end)
			pc &= AP_ERA_MASK;
		for (size_t k = r->nremaps; k-- > 0;)
			if (pc >= r->remaps[k].start && pc < r->remaps[k].end) {
				tag = r->remaps[k].tag;
				break;
			}
		r->pcs[r->npcs + i] = pc + tag;
	}
}

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
		return rd_corrupt(r, "build-id of %zu bytes (at most %zu)", bid_len,
			       sizeof(t->maps[0].build_id));
	/* Each segment takes at least 4 bytes: bound the count before allocating. */
	if (nseg > (uint64_t)(c->end - c->p) / 4)
		return rd_corrupt(r, "mapping with %llu segments in %zu bytes",
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
			rd_corrupt(r, "segment [%#llx + %#llx, size %#llx) wraps around",
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
	uint64_t tag = map_era(r, bias, start, end, path, path_len, bid, bid_len);
	AP_ALLOC_GROW(r->map_tag, t->nmaps + 1, r->map_tag_alloc);
	r->map_tag[t->nmaps] = tag;
	AP_ALLOC_GROW(t->maps, t->nmaps + 1, r->maps_alloc);
	struct ap_mapping *m = &t->maps[t->nmaps++];
	memset(m, 0, sizeof(*m));
	m->bias = bias + tag;
	m->start = start + tag;
	m->end = end + tag;
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
		return rd_corrupt(r, "stack id %llu where %zu was next (ids are dense from 1)",
			       (unsigned long long)id, t->nstacks);
	if (id > UINT32_MAX)
		return rd_corrupt(r, "stack id %llu does not fit 32 bits", (unsigned long long)id);
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
				return rd_corrupt(r, "bad varint for a pc delta at byte %zu",
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
		return rd_corrupt(r, "stack of depth %llu in %zu bytes", (unsigned long long)depth,
			       (size_t)(c->end - c->p));
	AP_ALLOC_GROW(r->pcs, r->npcs + depth, r->pcs_alloc);
	if (stack_pcs(r, c, depth) < 0)
		return -1;
	stack_eras(r, depth);
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
		return rd_corrupt(r, "shared stack %zu names stack %llu, which is not before it",
			       t->nstacks, (unsigned long long)base);
	uint32_t bdepth = t->stacks[base].depth;
	if (shared == 0 || shared > depth || shared > bdepth)
		return rd_corrupt(r, "shared stack %zu of depth %llu shares %llu frames of stack "
			       "%llu (depth %u)",
			       t->nstacks, (unsigned long long)depth, (unsigned long long)shared,
			       (unsigned long long)base, bdepth);
	if (depth - shared > (uint64_t)(c->end - c->p) || depth > UINT32_MAX)
		return rd_corrupt(r, "stack of depth %llu (%llu shared) in %zu bytes",
			       (unsigned long long)depth, (unsigned long long)shared,
			       (size_t)(c->end - c->p));
	r->shared_pcs += shared;
	if (r->shared_pcs > AP_SHARED_PCS_PER_BYTE * r->meta_bytes + AP_SHARED_PCS_SLACK)
		return rd_corrupt(r, "shared stacks of %llu frames in %llu bytes of META records",
			       (unsigned long long)r->shared_pcs,
			       (unsigned long long)r->meta_bytes);
	AP_ALLOC_GROW(r->pcs, r->npcs + depth, r->pcs_alloc);
	if (stack_pcs(r, c, depth - shared) < 0)
		return -1;
	size_t from = (size_t)(uintptr_t)t->stacks[base].pcs + bdepth - shared;
	memcpy(r->pcs + r->npcs + (depth - shared), r->pcs + from, shared * sizeof(*r->pcs));
	stack_eras(r, depth);
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
		return rd_corrupt(r, "thread id %llu does not fit 32 bits", (unsigned long long)tid);
	long idx = rd_thread_index(r, (uint32_t)tid);
	if (idx < 0)
		return -1;
	struct ap_thread *th = &r->t->threads[idx];
	free(th->name);
	th->name = dup_str(name, len);
	return 0;
}

int decode_meta(struct rd *r, struct cur *c)
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
			rc = decode_stack_shared(r, c);
			break;
		case AP_META_THREAD:
			rc = decode_thread(r, c);
			break;
		default:
			return rd_corrupt(r, "unknown META record tag %u at byte %zu", tag,
				       (size_t)(c->p - 1 - c->base));
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}
