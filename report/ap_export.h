/* Exports of a trace for other tools (`allocprof export`): pprof's
 * profile.proto (gzip'd, for go tool pprof, Pyroscope, Parca), Brendan
 * Gregg's folded stacks (flamegraph.pl, speedscope) and JSON. One model --
 * every stack with a value, symbolized once -- and three renderers that
 * write into a buffer; the command decides where the bytes go. */
#ifndef AP_EXPORT_H
#define AP_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_report.h"
#include "ap_symbolize.h"
#include "ap_trace.h"
#include "ap_util.h"

/* One stack of the trace with a non-zero value in some sample index. */
struct ap_export_stack {
	uint32_t id;			/* the trace's stack id */
	struct ap_frame *frames;	/* ap_sym_stack's expansion, innermost first */
	size_t nframes;			/* 0 only for an empty (depth 0) stack */
	size_t site;			/* index of the call site in frames */
	bool all_allocator;		/* every frame is an allocator frame (site 0) */
	double v[AP_SI_COUNT];		/* ap_report_stack_values of the stack */
	uint64_t size;			/* the size of every sampled allocation
					 * of the stack when they all share one,
					 * else 0 */
};

struct ap_export {
	const struct ap_trace *trace;
	struct ap_symbolizer *sym;
	struct ap_export_stack *stacks;	/* by stack id, ascending */
	size_t nstacks;
	double total[AP_SI_COUNT];	/* sum over all stacks */
	struct ap_frame *frame_store;	/* private: holds every stack's frames */
	/* private: per mapping of the trace, "[module]" when pprof sees it
	 * without names (ap_report_unnamed_maps over the stacks), else NULL */
	char **unnamed_node;
};

/* Name of a frame-less (depth 0) stack's only node, as `top` shows it. */
#define AP_EXPORT_UNKNOWN "<unknown>"

/* The frames the views show of `s`, the call site first: frames[site..)
 * (an all-allocator stack keeps its allocator frames), or for a frame-less
 * stack one frame named AP_EXPORT_UNKNOWN (no file, line 0, no module).
 * Sets *n (at least 1); the frames live as long as the model. */
const struct ap_frame *ap_export_stack_frames(const struct ap_export_stack *s, size_t *n);

/* The name of frame `fr`'s node, as `top` and pprof name it: its function
 * (fr->func), or "[module]" when its mapping has no name at all for pprof
 * (then its frames are all that one node, where fr->func says
 * "module+0xoff"). The folded stacks and the flame graph name frames so. */
const char *ap_export_node_name(const struct ap_export *x, const struct ap_frame *fr);
/* The mapping that makes `fr` such a node, or NULL (for ap_filter_stack). */
const struct ap_mapping *ap_export_unnamed_map(const struct ap_export *x, const struct ap_frame *fr);

/* Builds the model of `t`: `values` is ap_report_stack_values(t) (NULL to
 * compute it here); every stack with a non-zero value is expanded with
 * ap_sym_stack. `t` and `sym` must outlive the model. `progress` may be
 * NULL. Returns NULL with err set when a pass over the events fails
 * (ap_events_next, ap_replay). */
struct ap_export *ap_export_new(const struct ap_trace *t, const struct ap_stack_values *values,
				struct ap_symbolizer *sym, ap_report_progress_fn progress,
				void *progress_ctx, struct ap_error *err);
void ap_export_free(struct ap_export *x);

/* Parses a sample index name ("alloc_space", ...). Returns 0, or -1 when
 * `name` is none of the four. */
int ap_export_parse_index(const char *name, enum ap_sample_index *out);

/* A JSON string of s as UTF-8 can hold it (ap_buf_add_utf8: jansson
 * refuses other bytes, and a json_pack of them fails); null for NULL. */
struct json_t;
struct json_t *ap_json_text(const char *s);

/* What ap_export_pprof wrote, for the command's summary line. */
struct ap_pprof_stats {
	size_t samples, locations, functions, mappings, strings;
	size_t stripped;	/* samples emitted without their allocator frames
				 * (see ap_export_drop_frames) */
	size_t raw_bytes;	/* the protobuf before gzip */
};

/* Renders the model as a gzip'd pprof profile.proto (Go's heap-profile
 * conventions: sample types alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes; period_type space/bytes, period
 * the trace's rate; values already unbiased; default_sample_type
 * `default_si`) and appends it to `out`. With `gzip` false the raw
 * protobuf is appended instead. `stats` may be NULL. Returns 0, or -1 with
 * err set when zlib fails. */
int ap_export_pprof(const struct ap_export *x, enum ap_sample_index default_si,
		    bool gzip, struct ap_buf *out, struct ap_pprof_stats *stats,
		    struct ap_error *err);

/* The profile's drop_frames: an RE2 alternation of the allocator frames'
 * function names (as pprof simplifies them, regex-quoted), chosen so that
 * pprof's pruning leaves every sample's call site as its leaf, exactly as
 * `allocprof top` shows it. A name that is an allocator frame in one stack
 * but a call site or caller in another (or in a stack made only of
 * allocator frames) is left out, since pprof would cut the other stack
 * there; the stacks that needed it are emitted without their allocator
 * frames. Appends to `out` (nothing when there are no allocator frames). */
void ap_export_drop_frames(const struct ap_export *x, struct ap_buf *out);

/* The export's functions are named as the symbolizer names frames for
 * every view (ap_frame.func: the short name, ap_sym_short_name, unless
 * full_names); system_name is the mangled name. */

/* pprof's simplifyFunc (profile/prune.go): drops a leading '.' and the
 * argument list from the first '(' that is not part of "(anonymous
 * namespace)" or "operator()". Appends to `out`. */
void ap_export_pprof_simplify(const char *name, struct ap_buf *out);

/* Renders folded stacks, one line per distinct frame sequence: the frames
 * from the outermost caller to the call site (allocator frames dropped,
 * inlined frames as frames of their own) joined by ';', a space, and the
 * value of `si` rounded to an integer. Stacks that fold to the same line
 * are summed; lines are sorted; lines whose value rounds to 0 are left
 * out. Appends to `out`; returns the number of lines. */
size_t ap_export_folded(const struct ap_export *x, enum ap_sample_index si,
			struct ap_buf *out);

/* Renders the JSON document of docs/json.md ("allocprof export
 * --format=json"); stacks are sorted by `si`, descending, ties by id.
 * Appends to `out` (with a final newline). Returns 0, or -1 with err set
 * when jansson fails. */
int ap_export_json(const struct ap_export *x, enum ap_sample_index si,
		   struct ap_buf *out, struct ap_error *err);

/* ---- protobuf wire encoding (proto3), as Go's runtime/pprof/protobuf.go
 * writes it; used by the pprof renderer, public for its unit test. ---- */

/* A base-128 varint. */
void ap_pb_varint(struct ap_buf *b, uint64_t v);
/* Field `field` as a varint (wire type 0); omitted when v is 0. */
void ap_pb_uint(struct ap_buf *b, unsigned field, uint64_t v);
/* The same for a signed value (two's complement, as int64 is encoded). */
void ap_pb_int(struct ap_buf *b, unsigned field, int64_t v);
/* A bool field; omitted when false. */
void ap_pb_bool(struct ap_buf *b, unsigned field, bool v);
/* A length-delimited field (wire type 2): bytes or a string; written even
 * when empty (string_table[0] must be ""). */
void ap_pb_bytes(struct ap_buf *b, unsigned field, const void *data, size_t len);
/* Repeated uint64/int64 as one packed field; omitted when n is 0. */
void ap_pb_packed(struct ap_buf *b, unsigned field, const uint64_t *v, size_t n);
/* An embedded message: ap_pb_begin writes the key and returns a mark;
 * the message's fields follow; ap_pb_end inserts its length. */
size_t ap_pb_begin(struct ap_buf *b, unsigned field);
void ap_pb_end(struct ap_buf *b, size_t mark);

/* gzip (RFC 1952) of data[0..len) at `level`, appended to `out`. Returns
 * 0, or -1 with err set. */
int ap_export_gzip(const void *data, size_t len, int level, struct ap_buf *out,
		   struct ap_error *err);

#endif
