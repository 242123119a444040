/* symbolize/debugcache.h: separate debug files kept decompressed, by
 * build-id, for the symbolizer (debugcache.c). */
#ifndef AP_DEBUGCACHE_H
#define AP_DEBUGCACHE_H

#include <elfutils/libdwfl.h>

/* A Dwfl_Callbacks.find_debuginfo: dwfl_standard_find_debuginfo, with a
 * cache in front of it. A module's separate debug file whose DWARF
 * sections are compressed (libc6-dbg's: inflating them was ~35 ms of
 * every `allocprof symbols` run, the most of it) is kept once, its
 * sections decompressed, as <cache>/<xx>/<rest of the build-id>.debug
 * (<cache>: $XDG_CACHE_HOME/allocprof/debug, else
 * $HOME/.cache/allocprof/debug; ALLOCPROF_DEBUG_CACHE=0: none); later
 * runs read that copy, once its build-id is checked. A file the cache
 * has not used for 30 days goes when another is written. */
int ap_debugcache_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
				 Dwarf_Addr base, const char *file_name,
				 const char *debuglink_file, GElf_Word debuglink_crc,
				 char **debuginfo_file_name);

/* (ap_debugcache_counts: ap_symbolize.h) */

#endif
