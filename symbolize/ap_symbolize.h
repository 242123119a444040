/* Offline symbolization of trace PCs with elfutils libdwfl: function, file,
 * line, column and the chain of inlined frames, cached per unique PC; and the
 * choice of the call site (the first frame below the allocator frames). */
#ifndef AP_SYMBOLIZE_H
#define AP_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_trace.h"
#include "ap_util.h"

/* The language a frame's name was demangled as. */
enum ap_sym_lang {
	AP_SYM_PLAIN,	/* not demangled: a C name, module+0xoff, no_demangle */
	AP_SYM_CXX,	/* a C++ name (__cxa_demangle) */
	AP_SYM_RUST,	/* a Rust name, legacy or v0 (libiberty's rust_demangle) */
};

/* One source-level frame. A PC expands to one or more frames: the inlined
 * callees first (innermost), the real function last. All strings are owned
 * by the symbolizer and live until ap_sym_free(). */
struct ap_frame {
	const char *func;	/* the name every view shows: the short name
				 * (ap_sym_short_name) of a demangled one, the
				 * full one with full_names; "module+0xoff" when
				 * unknown */
	const char *full;	/* the whole demangled name (return type,
				 * template arguments, parameters; also with
				 * no_demangle), or == mangled */
	const char *mangled;	/* linkage name as in the symbol table, or == func */
	enum ap_sym_lang lang;	/* what `full` was demangled from */
	const char *file;	/* source file (absolute when DWARF says so), or NULL */
	int line;		/* 0 when unknown */
	int column;		/* 0 when unknown */
	const char *module;	/* path of the module, or NULL when the PC is in none */
	uint64_t module_offset;	/* pc - module bias */
	uint64_t pc;		/* the PC this frame came from */
	bool inlined;		/* an inlined callee (not the last frame of its PC) */
	bool unsymbolized;	/* no name was found: func is "module+0xoff" or "0x<pc>" */
	bool module_unusable;	/* unsymbolized because the module's file is missing
				 * or rebuilt (a warning says which), or the PC is
				 * in no module; false when the file was read */
	bool allocator;		/* an allocator frame (see ap_sym_stack) */
	bool truncated;		/* the AP_SYM_TRUNCATED marker (pc 0, no module) */
};

/* Name of the marker frame ap_sym_stack puts outermost on a stack that was
 * cut at the trace's max_depth: its callers are missing. */
#define AP_SYM_TRUNCATED "[truncated]"

struct ap_sym_options {
	const char *debug_dir;		/* extra directory for separate debug files, or NULL */
	/* A regex (ap_regex.h): more allocator frames, or NULL. Searched
	 * (unanchored, use ^...$ to anchor) in the demangled name. */
	const char *drop_frames;
	bool no_demangle;	/* frame.func is the linkage name */
	bool full_names;	/* frame.func is the full demangled name */
};

struct ap_symbolizer;

/* Builds a symbolizer for the mappings of `t` (which must outlive it).
 * Modules whose build-id differs from the recorded one are not used: their
 * PCs resolve to "module+0xoff" and a warning is queued (ap_sym_warnings).
 * Returns NULL with err set on failure (bad drop_frames regex, libdwfl
 * failure). */
struct ap_symbolizer *ap_sym_new(const struct ap_trace *t,
				 const struct ap_sym_options *opts,
				 struct ap_error *err);
void ap_sym_free(struct ap_symbolizer *s);

/* The frames of one PC (a return address: looked up at pc-1), innermost
 * first. *frames points into the symbolizer's cache. Never fails: an
 * unknown PC gives one frame named "module+0xoff" or "0x<pc>". */
size_t ap_sym_pc(struct ap_symbolizer *s, uint64_t pc, const struct ap_frame **frames);

/* Expands a whole stack into source-level frames, innermost first, into an
 * array owned by the caller (*out, *n; realloc'd as needed, free() it).
 * Marks allocator frames (allocprof's own, the libc malloc family and its
 * __libc_ / _int_ internals, C++ operator new/new[], strdup/strndup/
 * asprintf and similar wrappers, C++ standard library frames (std::,
 * __gnu_cxx::: allocator, allocator_traits, vector growth, string
 * construction) and functions matching drop_frames) at the inner end of
 * the stack with
 * frame.allocator = true, and returns the index of the call site: the first
 * frame that is not an allocator frame (or 0 when all are). A stack as
 * deep as the trace's max_depth was cut there by the sampler (or is
 * exactly that deep) unless its outermost frame is a process or thread
 * entry (_start, start_thread, clone, clone3): it ends with
 * one more frame, the AP_SYM_TRUNCATED marker (frame.truncated; never an
 * allocator frame, never the call site of a stack with other frames). */
size_t ap_sym_stack(struct ap_symbolizer *s, const struct ap_stack *st,
		    struct ap_frame **out, size_t *n, size_t *alloc);

/* Whether func is one of the C library's allocating wrappers that
 * ap_sym_stack counts among the allocator frames, whose caller is the
 * call site (strdup, asprintf and their internal names). */
bool ap_sym_alloc_wrapper(const char *func);

/* Appends the short name of the demangled name `func`: for C++ the name
 * Go's pprof shows by default (no return type, template arguments,
 * parameters or const/& qualifiers: "geo::detail::make_point"); for Rust
 * the path without generic arguments, an inherent impl's "<Type>::"
 * unwrapped ("app::store::Registry::add" from both manglings; a trait
 * impl stays "<Type as Trait>::method"); any other name as it is. */
void ap_sym_short_name(const char *func, enum ap_sym_lang lang, struct ap_buf *out);

/* Appends the name Go's pprof shows for a name it cannot demangle (a
 * DWARF name with no linkage name: an inlined template constructor,
 * "thread<main()::<lambda()> >") when the export gives it as both
 * Function.name and system_name: for a name of that shape (an
 * identifier, then <...> to its end), without its (...) and <...>
 * groups ("thread"), else as it is. Returns whether it differs. */
bool ap_sym_pprof_plain(const char *name, struct ap_buf *out);

/* Adds the frames of every PC of the trace's stacks to w, for `record`
 * to keep them with the trace (ap_symtab.h): per mapping whose file could
 * be read, each PC's frames as the views would name them (the linkage
 * name, demangled again when read); PCs in no module that a perf map
 * (/tmp/perf-PID.map) names, as the perf map's. */
void ap_sym_keep(struct ap_symbolizer *s, struct ap_symtab_writer *w);

/* Reads the finished trace at path and appends its symbols (SYMBOLS
 * chunks, zstd at `level`; 0: not compressed), looking for separate debug
 * files in debug_dir too (NULL: the default places). Returns 0 once they are
 * appended; 2 for a trace that keeps them already, left as it is; 1 with
 * err set for a trace that is not finished (no END: its process may
 * still write it; or cut inside a chunk), left as it is; or -1 with err
 * set. */
int ap_sym_keep_file(const char *path, const char *debug_dir, int level, struct ap_error *err);

/* Opens ahead, in this process, the files of the modules t's stacks name
 * (their debug information read and, if compressed, inflated: 35 ms for
 * libc6-dbg's libc here), so that a symbolizer made later in the process
 * (without a debug_dir) for a trace of the same run, such as
 * ap_sym_keep_file's, takes them instead of opening them again: `record`
 * does this while the program runs. t need not outlive the call. Returns
 * how many modules it opened, or -1 (nothing opened). The frames are the
 * same either way. */
int ap_sym_prefetch(const struct ap_trace *t);
/* Closes the modules opened ahead and those symbolizers gave back;
 * returns how many of the first no symbolizer took. */
int ap_sym_prefetch_release(void);
/* While on, a symbolizer made without a debug_dir gives the modules it
 * opened to the cache ap_sym_prefetch fills when it is freed, for the
 * next one in the process: a file mapped by the processes of one run
 * (libc, at another address in each) is opened and its debug information
 * inflated once for all their traces (`allocprof symbols` with several
 * traces: 62 child traces of bash took 2.1 s of CPU, mostly inflating
 * libc6-dbg's DWARF again for each). ap_sym_prefetch_release closes them. */
void ap_sym_share(bool on);
/* The files of the traces symbolized in this process as a process of
 * another mount namespace or chroot sees them (perf report's --symfs):
 * a module whose path under `dir` (/proc/PID/root, say: `record -p`) is a
 * regular file that is not the file at that path here (another device or
 * inode) is read there. NULL: the paths as they are here (the default).
 * The names kept and shown stay the recorded paths. `dir` must outlive
 * the symbolizers. */
void ap_sym_symfs(const char *dir);
/* How many separate debug files the symbolizers of this process read
 * from the cache of those kept decompressed, and kept in it
 * (symbolize/debugcache.h; for tests: ALLOCPROF_TEST_DEBUG_CACHE). */
void ap_debugcache_counts(unsigned *read, unsigned *written);
/* How many module files the symbolizers of this process have opened (for
 * tests: ALLOCPROF_TEST_OPENED). */
unsigned ap_sym_files_opened(void);

/* Warnings collected so far (build-id mismatches, missing files), one line
 * each without prefix; NULL-terminated array owned by the symbolizer. */
const char *const *ap_sym_warnings(const struct ap_symbolizer *s);

#endif
