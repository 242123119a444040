/* The pprof renderer: the export model as profile.proto
 * (google/pprof proto/profile.proto), with the conventions of Go's heap
 * profiles (runtime/pprof/protomem.go), and the drop_frames regex that
 * makes pprof show each sample's call site as its leaf. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ap_export.h"
#include "ap_hash.h"
#include "report-int.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_DROP_FRAMES = 7,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_NUM = 3 };
enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4 };

/* ---- drop_frames ---------------------------------------------------------- */

void ap_export_pprof_simplify(const char *name, struct ap_buf *out)
{
	static const char *const reserved[] = { "(anonymous namespace)", "operator()" };
	const char *s = name[0] == '.' ? name + 1 : name;
	size_t i = 0;
	while (s[i]) {
		size_t skip = 0;
		for (size_t r = 0; r < AP_ARRAY_SIZE(reserved) && !skip; r++)
			if (!strncmp(s + i, reserved[r], strlen(reserved[r])))
				skip = strlen(reserved[r]);
		if (skip) {
			i += skip;
			continue;
		}
		if (s[i] == '(')
			break;
		i++;
	}
	ap_buf_add(out, s, i);
}

/* The name pprof's Prune matches drop_frames against: simplifyFunc of
 * the frame's Function.name. */
static void drop_key(const struct ap_frame *f, struct ap_buf *out)
{
	ap_buf_reset(out);
	ap_export_pprof_simplify(f->func, out);
}

/* The names pprof may drop (R): simplified names of allocator frames that
 * never appear from a call site outwards, nor in a stack of allocator
 * frames only. */
static void drop_names(const struct ap_export *x, struct ap_intern *r)
{
	struct ap_intern alloc = { 0 };
	struct ap_intern user = { 0 };
	struct ap_buf b = AP_BUF_INIT;
	for (size_t i = 0; i < x->nstacks; i++) {
		const struct ap_export_stack *s = &x->stacks[i];
		for (size_t k = 0; k < s->nframes; k++) {
			bool in_alloc = !s->all_allocator && k < s->site;
			drop_key(&s->frames[k], &b);
			ap_intern_add(in_alloc ? &alloc : &user, b.buf, b.len, NULL);
		}
	}
	for (size_t k = 0; k < alloc.n; k++)
		if (ap_intern_find(&user, alloc.str[k], alloc.len[k]) == UINT32_MAX)
			ap_intern_add(r, alloc.str[k], alloc.len[k], NULL);
	ap_intern_release(&alloc);
	ap_intern_release(&user);
	ap_buf_release(&b);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's regexp.QuoteMeta. */
static void add_quoted(struct ap_buf *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\.+*?()|[]{}^$", *s))
			ap_buf_addstr(out, "\\");
		ap_buf_add(out, s, 1);
	}
}

static void drop_regex(const struct ap_intern *r, struct ap_buf *out)
{
	const char **names = ap_xcalloc(r->n ? r->n : 1, sizeof(*names));
	for (size_t i = 0; i < r->n; i++)
		names[i] = r->str[i];
	qsort(names, r->n, sizeof(*names), str_cmp);
	for (size_t i = 0; i < r->n; i++) {
		if (i)
			ap_buf_addstr(out, "|");
		add_quoted(out, names[i]);
	}
	free(names);
}

void ap_export_drop_frames(const struct ap_export *x, struct ap_buf *out)
{
	struct ap_intern r = { 0 };
	drop_names(x, &r);
	drop_regex(&r, out);
	ap_intern_release(&r);
}

/* ---- the profile ---------------------------------------------------------- */

struct pprof {
	const struct ap_export *x;
	struct ap_intern strings, functions, locations, drop;
	struct ap_buf locs, funcs;	/* encoded Location and Function messages */
	uint64_t *map_id;		/* per trace mapping */
	bool *map_unsym;		/* per trace mapping: no PC has a name */
	struct ap_buf key, simple;	/* scratch */
	size_t *offs;			/* scratch: first frame of each depth */
	size_t aoffs;
	uint8_t *in_drop;		/* scratch: per frame, its name is in `drop` */
	size_t adrop;
};

static uint64_t str_id(struct pprof *p, const char *s)
{
	return ap_intern_add(&p->strings, s, strlen(s), NULL);
}

static uint64_t function_id(struct pprof *p, const struct ap_frame *f)
{
	const char *file = f->file ? f->file : "";
	ap_buf_reset(&p->key);
	ap_buf_add(&p->key, f->func, strlen(f->func) + 1);
	ap_buf_add(&p->key, f->mangled, strlen(f->mangled) + 1);
	ap_buf_addstr(&p->key, file);
	bool added;
	uint64_t id = ap_intern_add(&p->functions, p->key.buf, p->key.len, &added) + 1;
	if (added) {
		size_t m = ap_pb_begin(&p->funcs, PROFILE_FUNCTION);
		ap_pb_uint(&p->funcs, FUNCTION_ID, id);
		ap_pb_uint(&p->funcs, FUNCTION_NAME, str_id(p, f->func));
		ap_pb_uint(&p->funcs, FUNCTION_SYSTEM_NAME, str_id(p, f->mangled));
		ap_pb_uint(&p->funcs, FUNCTION_FILENAME, str_id(p, file));
		ap_pb_end(&p->funcs, m);
	}
	return id;
}

/* What a Location stands for: a PC, or one of the frames without one. */
enum loc_kind {
	LOC_PC,
	LOC_UNKNOWN,   /* the only frame of an empty stack */
	LOC_TRUNCATED, /* the AP_SYM_TRUNCATED marker of a cut stack */
};

/* The Location of `pc` with its lines from the `skip`th on (skip > 0 only
 * for samples emitted without their allocator frames), or of a frame of
 * another `kind` (pc 0). */
static uint64_t location_id(struct pprof *p, uint64_t pc, uint32_t skip, enum loc_kind kind)
{
	uint8_t key[13];
	bool unknown = kind != LOC_PC;
	memcpy(key, &pc, 8);
	memcpy(key + 8, &skip, 4);
	key[12] = (uint8_t)kind;
	bool added;
	uint64_t id = ap_intern_add(&p->locations, key, sizeof(key), &added) + 1;
	if (!added)
		return id;
	const struct ap_trace *t = p->x->trace;
	struct ap_buf *b = &p->locs;
	size_t m = ap_pb_begin(b, PROFILE_LOCATION);
	ap_pb_uint(b, LOCATION_ID, id);
	const struct ap_mapping *map = unknown ? NULL : ap_trace_mapping_for(t, pc);
	if (map)
		ap_pb_uint(b, LOCATION_MAPPING_ID, p->map_id[map - t->maps]);
	/* A return address, except in an unsymbolized mapping: there the
	 * call's own address (pc - 1), since pprof hands the address to
	 * addr2line as it is and the instruction after a call may be in
	 * another line, inline scope or even function. */
	bool unsym = map && p->map_unsym[map - t->maps];
	ap_pb_uint(b, LOCATION_ADDRESS, unsym && pc ? pc - 1 : pc);
	const struct ap_frame *fr;
	struct ap_frame none = { .func = AP_EXPORT_UNKNOWN, .mangled = AP_EXPORT_UNKNOWN };
	if (kind == LOC_TRUNCATED)
		none.func = none.mangled = AP_SYM_TRUNCATED;
	size_t n = 1;
	if (unknown)
		fr = &none;
	else
		n = ap_sym_pc(p->x->sym, pc, &fr);
	/* An address only, in a mapping marked unsymbolized: pprof
	 * -symbolize (or a profiler's debuginfo upload) can name it later. */
	if (unsym)
		n = 0;
	/* Innermost first: line[0] is the inlined callee, the last one the
	 * function it was inlined into. */
	for (size_t k = skip; k < n; k++) {
		uint64_t fid = function_id(p, &fr[k]);
		size_t lm = ap_pb_begin(b, LOCATION_LINE);
		ap_pb_uint(b, LINE_FUNCTION_ID, fid);
		ap_pb_int(b, LINE_LINE, fr[k].line);
		ap_pb_end(b, lm);
	}
	ap_pb_end(b, m);
	return id;
}

/* Where pprof's Prune (profile/prune.go) leaves this stack's leaf, as an
 * index into s->frames: scanning from the root, the first location (after
 * one without dropped names) with a dropped name is cut at its outermost
 * dropped line, and everything inside it goes. p->offs[d] is the first
 * frame of depth d. */
static size_t pprof_leaf(const struct pprof *p, uint32_t depth)
{
	bool found_user = false;
	for (uint32_t d = depth; d-- > 0;) {
		size_t m = SIZE_MAX;
		for (size_t k = p->offs[d + 1]; k-- > p->offs[d];)
			if (p->in_drop[k]) {
				m = k;
				break;
			}
		if (m == SIZE_MAX) {
			found_user = true;
			continue;
		}
		if (found_user)
			return m + 1;
	}
	return 0;
}

/* Encodes one sample; returns true when it had to leave out its
 * allocator frames. */
static bool add_sample(struct pprof *p, struct ap_buf *b, const struct ap_export_stack *s,
		       uint64_t **ids, size_t *aids)
{
	const struct ap_stack *st = &p->x->trace->stacks[s->id];
	size_t nids = 0;
	bool stripped = false;
	if (!s->nframes) {
		AP_ALLOC_GROW(*ids, 1, *aids);
		(*ids)[nids++] = location_id(p, 0, 0, LOC_UNKNOWN);
	} else {
		AP_ALLOC_GROW(p->offs, st->depth + 1, p->aoffs);
		AP_ALLOC_GROW(p->in_drop, s->nframes, p->adrop);
		p->offs[0] = 0;
		for (uint32_t d = 0; d < st->depth; d++) {
			const struct ap_frame *fr;
			p->offs[d + 1] = p->offs[d] + ap_sym_pc(p->x->sym, st->pcs[d], &fr);
		}
		for (size_t k = 0; k < s->nframes; k++) {
			drop_key(&s->frames[k], &p->simple);
			p->in_drop[k] = ap_intern_find(&p->drop, p->simple.buf, p->simple.len) != UINT32_MAX;
		}
		stripped = pprof_leaf(p, st->depth) != s->site;
		AP_ALLOC_GROW(*ids, st->depth, *aids);
		for (uint32_t d = 0; d < st->depth; d++) {
			if (stripped && p->offs[d + 1] <= s->site)
				continue;	/* only allocator frames */
			uint32_t skip = stripped && p->offs[d] < s->site ?
					(uint32_t)(s->site - p->offs[d]) : 0;
			(*ids)[nids++] = location_id(p, st->pcs[d], skip, LOC_PC);
		}
		/* the marker frame of a cut stack, outermost (ap_sym_stack) */
		if (s->frames[s->nframes - 1].truncated) {
			AP_ALLOC_GROW(*ids, nids + 1, *aids);
			(*ids)[nids++] = location_id(p, 0, 0, LOC_TRUNCATED);
		}
	}

	size_t m = ap_pb_begin(b, PROFILE_SAMPLE);
	ap_pb_packed(b, SAMPLE_LOCATION_ID, *ids, nids);
	uint64_t v[AP_SI_COUNT];
	for (int i = 0; i < AP_SI_COUNT; i++)
		v[i] = (uint64_t)llround(s->v[i]);
	ap_pb_packed(b, SAMPLE_VALUE, v, AP_SI_COUNT);
	if (s->size) {
		size_t lm = ap_pb_begin(b, SAMPLE_LABEL);
		ap_pb_uint(b, LABEL_KEY, str_id(p, "bytes"));
		ap_pb_int(b, LABEL_NUM, (int64_t)s->size);
		ap_pb_end(b, lm);
	}
	ap_pb_end(b, m);
	return stripped;
}

static void add_value_type(struct pprof *p, struct ap_buf *b, unsigned field,
			   const char *type, const char *unit)
{
	size_t m = ap_pb_begin(b, field);
	ap_pb_uint(b, VALUETYPE_TYPE, str_id(p, type));
	ap_pb_uint(b, VALUETYPE_UNIT, str_id(p, unit));
	ap_pb_end(b, m);
}

/* The mappings whose PCs (those of the exported stacks) all went without
 * a name -- a binary rebuilt since recording, a file gone, one without
 * any symbols: exported unsymbolized, as addresses, for pprof to
 * symbolize once the binary is there. pprof symbolizes only a mapping
 * with none of has_functions, has_filenames, has_line_numbers, so a
 * mapping where some PCs have names keeps the names it has. */
static void find_unsymbolized(struct pprof *p)
{
	uint32_t *ids = ap_xcalloc(p->x->nstacks ? p->x->nstacks : 1, sizeof(*ids));
	for (size_t i = 0; i < p->x->nstacks; i++)
		ids[i] = p->x->stacks[i].id;
	p->map_unsym = ap_report_unnamed_maps(p->x->trace, p->x->sym, ids, p->x->nstacks);
	free(ids);
}

/* One Mapping per recorded module, the main program first (pprof takes the
 * first mapping for the main binary). */
static size_t add_mappings(struct pprof *p, struct ap_buf *b)
{
	const struct ap_trace *t = p->x->trace;
	size_t *order = ap_xcalloc(t->nmaps ? t->nmaps : 1, sizeof(*order));
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < t->nmaps; i++)
			if ((strcmp(t->maps[i].path, t->exe) == 0) == (pass == 0))
				order[n++] = i;
	struct ap_buf hex = AP_BUF_INIT;
	for (size_t k = 0; k < n; k++) {
		const struct ap_mapping *map = &t->maps[order[k]];
		p->map_id[order[k]] = k + 1;
		/* The file offset at memory_start: its lowest segment's. */
		uint64_t off = 0, low = UINT64_MAX, start = map->start, limit = map->end;
		for (size_t s = 0; s < map->nsegs; s++)
			if (map->segs[s].vaddr < low) {
				low = map->segs[s].vaddr;
				off = map->segs[s].offset;
			}
		/* pprof symbolizes a mapping as /proc/PID/maps has it: the
		 * executable segment, page-aligned (binutils' GetBase wants
		 * one program header for it), where the code and so every
		 * return address is. */
		for (size_t s = 0; p->map_unsym[order[k]] && s < map->nsegs; s++) {
			const struct ap_segment *sg = &map->segs[s];
			if (!(sg->flags & 1 /* PF_X */))
				continue;
			uint64_t pg = t->page_size ? t->page_size : 4096;
			start = (map->bias + sg->vaddr) & ~(pg - 1);
			limit = (map->bias + sg->vaddr + sg->memsz + pg - 1) & ~(pg - 1);
			off = sg->offset & ~(pg - 1);
			break;
		}
		ap_buf_reset(&hex);
		for (size_t i = 0; i < map->build_id_len; i++)
			ap_buf_addf(&hex, "%02x", map->build_id[i]);
		size_t m = ap_pb_begin(b, PROFILE_MAPPING);
		ap_pb_uint(b, MAPPING_ID, k + 1);
		ap_pb_uint(b, MAPPING_MEMORY_START, start);
		ap_pb_uint(b, MAPPING_MEMORY_LIMIT, limit);
		ap_pb_uint(b, MAPPING_FILE_OFFSET, off);
		ap_pb_uint(b, MAPPING_FILENAME, str_id(p, map->path));
		ap_pb_uint(b, MAPPING_BUILD_ID, str_id(p, hex.buf));
		/* Symbolized here: pprof must not symbolize again; an
		 * unsymbolized mapping is left for pprof to do. */
		bool sym = !p->map_unsym[order[k]];
		ap_pb_bool(b, MAPPING_HAS_FUNCTIONS, sym);
		ap_pb_bool(b, MAPPING_HAS_FILENAMES, sym);
		ap_pb_bool(b, MAPPING_HAS_LINE_NUMBERS, sym);
		ap_pb_bool(b, MAPPING_HAS_INLINE_FRAMES, sym);
		ap_pb_end(b, m);
	}
	ap_buf_release(&hex);
	free(order);
	return n;
}

int ap_export_pprof(const struct ap_export *x, enum ap_sample_index default_si,
		    bool gzip, struct ap_buf *out, struct ap_pprof_stats *stats,
		    struct ap_error *err)
{
	const struct ap_trace *t = x->trace;
	struct pprof p;
	memset(&p, 0, sizeof(p));
	p.x = x;
	p.strings = p.functions = p.locations = p.drop = (struct ap_intern){ 0 };
	ap_buf_init(&p.locs);
	ap_buf_init(&p.funcs);
	ap_buf_init(&p.key);
	ap_buf_init(&p.simple);
	p.map_id = ap_xcalloc(t->nmaps ? t->nmaps : 1, sizeof(*p.map_id));
	find_unsymbolized(&p);
	str_id(&p, "");	/* string_table[0] must be "" */

	struct ap_buf b = AP_BUF_INIT;
	for (int i = 0; i < AP_SI_COUNT; i++) {
		enum ap_sample_index si = (enum ap_sample_index)i;
		add_value_type(&p, &b, PROFILE_SAMPLE_TYPE, ap_sample_index_name(si),
			       ap_sample_index_is_bytes(si) ? "bytes" : "count");
	}
	size_t nmaps = add_mappings(&p, &b);

	drop_names(x, &p.drop);
	uint64_t *ids = NULL;
	size_t aids = 0, stripped = 0;
	for (size_t i = 0; i < x->nstacks; i++)
		stripped += add_sample(&p, &b, &x->stacks[i], &ids, &aids);
	free(ids);
	ap_buf_add(&b, p.locs.buf, p.locs.len);
	ap_buf_add(&b, p.funcs.buf, p.funcs.len);

	struct ap_buf text = AP_BUF_INIT;
	drop_regex(&p.drop, &text);
	if (text.len)
		ap_pb_uint(&b, PROFILE_DROP_FRAMES, str_id(&p, text.buf));
	ap_pb_int(&b, PROFILE_TIME_NANOS, (int64_t)t->start_realtime_ns);
	if (t->end_ns > t->start_ns)
		ap_pb_int(&b, PROFILE_DURATION_NANOS, (int64_t)(t->end_ns - t->start_ns));
	add_value_type(&p, &b, PROFILE_PERIOD_TYPE, "space", "bytes");
	ap_pb_int(&b, PROFILE_PERIOD, (int64_t)t->rate);
	ap_buf_reset(&text);
	ap_buf_addf(&text, "program: %s", t->exe);
	ap_pb_uint(&b, PROFILE_COMMENT, str_id(&p, text.buf));
	ap_buf_reset(&text);
	ap_buf_addstr(&text, "cmdline:");
	for (size_t i = 0; i < t->argc; i++)
		ap_buf_addf(&text, " %s", t->argv[i]);
	ap_pb_uint(&b, PROFILE_COMMENT, str_id(&p, text.buf));
	ap_pb_uint(&b, PROFILE_DEFAULT_SAMPLE_TYPE,
		   str_id(&p, ap_sample_index_name(default_si)));
	ap_buf_release(&text);
	/* Last: every string is interned by now. */
	for (size_t i = 0; i < p.strings.n; i++)
		ap_pb_bytes(&b, PROFILE_STRING_TABLE, p.strings.str[i], p.strings.len[i]);

	if (stats)
		*stats = (struct ap_pprof_stats){
			.samples = x->nstacks, .locations = p.locations.n,
			.functions = p.functions.n, .mappings = nmaps,
			.strings = p.strings.n, .stripped = stripped,
			.raw_bytes = b.len,
		};
	int rc = 0;
	if (gzip)
		rc = ap_export_gzip(b.buf, b.len, 6, out, err);
	else
		ap_buf_add(out, b.buf, b.len);

	ap_buf_release(&b);
	ap_intern_release(&p.strings);
	ap_intern_release(&p.functions);
	ap_intern_release(&p.locations);
	ap_intern_release(&p.drop);
	ap_buf_release(&p.locs);
	ap_buf_release(&p.funcs);
	ap_buf_release(&p.key);
	ap_buf_release(&p.simple);
	free(p.map_id);
	free(p.map_unsym);
	free(p.offs);
	free(p.in_drop);
	return rc;
}
