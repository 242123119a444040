/* Symbols kept with a trace: the SYMBOLS chunks `record` appends after END
 * (docs/trace-format.md, "SYMBOLS payload"), so that reports name frames
 * when the binaries are upgraded, rebuilt or gone. This is the payload's
 * codec and the table the reader keeps; symbolize/ fills and reads it. */
#ifndef AP_SYMTAB_H
#define AP_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_util.h"

/* Module flags (the payload's `flags`). */
#define AP_SYMTAB_HAS_LINES 1u	/* the module had line information */
#define AP_SYMTAB_PERF_MAP 2u	/* a perf map's names (/tmp/perf-PID.map) of PCs in no
				 * module: `offset` is the PC, `path` the map file */
#define AP_SYMTAB_FLAGS (AP_SYMTAB_HAS_LINES | AP_SYMTAB_PERF_MAP)

/* Most frames one PC may expand to (its inline chain). */
#define AP_SYMTAB_MAX_FRAMES 1024u

/* One source-level frame of a PC: inlined callees first, the function
 * last. name NULL: none was found (the frame is "module+0xoff"). */
struct ap_symtab_frame {
	const char *name;	/* the linkage name, or the plain name DWARF or the
				 * symbol table gives (demangled by the reader) */
	const char *file;	/* NULL when unknown */
	uint32_t line, column;	/* 0 when unknown */
};

struct ap_symtab_pc {
	uint64_t offset;	/* pc - the module's bias (PERF_MAP: the pc) */
	uint32_t first, n;	/* frames[first, first + n) */
};

/* The PCs of one module that one SYMBOLS chunk names, sorted by offset.
 * A module may have several (one per chunk, one per process of a run). */
struct ap_symtab_module {
	const char *path;
	const uint8_t *build_id;
	size_t build_id_len;
	unsigned flags;
	uint32_t proc;		/* the process of a whole run it belongs to (0: the
				 * trace's own) */
	struct ap_symtab_pc *pcs;
	size_t npcs;
	struct ap_symtab_frame *frames;
	size_t nframes;
};

struct ap_symtab {
	struct ap_symtab_module *mods;
	size_t nmods, mods_alloc;
	char **blocks;		/* the strings, one block per payload */
	size_t nblocks, blocks_alloc;
};

/* Decodes one SYMBOLS payload (decompressed) into tab, adding its modules.
 * Returns 0, or -1 with the reason in why (tab keeps what it had). */
int ap_symtab_decode(struct ap_symtab *tab, const uint8_t *p, size_t len, char *why,
		     size_t whylen);

/* The frames of `offset` in module table m, or NULL; *n their count. */
const struct ap_symtab_frame *ap_symtab_lookup(const struct ap_symtab_module *m,
					       uint64_t offset, uint32_t *n);

/* Moves src's modules into dst with proc set (a whole run). */
void ap_symtab_take(struct ap_symtab *dst, struct ap_symtab *src, uint32_t proc);

void ap_symtab_release(struct ap_symtab *tab);

/* ---- writing ----
 * Modules, then their PCs in ascending order, then each PC's frames; the
 * payloads come out at about AP_SYMTAB_PAYLOAD_TARGET bytes each (a module
 * too big for one continues in the next). */
#define AP_SYMTAB_PAYLOAD_TARGET (8u << 20)

struct ap_symtab_writer;
struct ap_symtab_writer *ap_symtab_writer_new(void);
void ap_symtab_writer_module(struct ap_symtab_writer *w, const char *path,
			     const uint8_t *build_id, size_t build_id_len, unsigned flags);
/* A PC of the current module: offsets strictly ascending within a module. */
void ap_symtab_writer_pc(struct ap_symtab_writer *w, uint64_t offset, uint32_t nframes);
void ap_symtab_writer_frame(struct ap_symtab_writer *w, const char *name, const char *file,
			    uint32_t line, uint32_t column);
/* The payloads so far, each complete (call after the last frame). */
size_t ap_symtab_writer_payloads(struct ap_symtab_writer *w, const struct ap_buf **out);
void ap_symtab_writer_free(struct ap_symtab_writer *w);

/* Appends SYMBOLS chunks with w's payloads (zstd at `level`, 0: none) to
 * the finished trace at path. The file is left as it was on failure.
 * end_off, when not 0, is the offset of the trace's last END chunk
 * (ap_trace's end_off): its `symbols` field, if the compactor wrote it,
 * is then set to the count of chunks appended (docs/trace-format.md).
 * Returns 0, or -1 with err set. */
int ap_symtab_append(const char *path, struct ap_symtab_writer *w, int level, size_t end_off,
		     struct ap_error *err);

#endif
