/* try.h: what `allocprof try` (cli/cmd-try.c) and its preload library
 * (try/preload.c, liballocprof-try.so) tell each other.
 *
 * try writes a config file and runs the program with
 * ALLOCPROF_TRY=<config path> and the library in LD_PRELOAD. The config
 * is text, one item a line:
 *
 *	allocprof-try 1
 *	mode pool                    (or `mode base`: nothing pooled)
 *	pool ID                      (after site ID's line) a site pooled in
 *	                             mode pool; the others are looked up and
 *	                             counted as in mode base, so that every run
 *	                             does the same bookkeeping
 *	out PATH                     where each process appends its result
 *	site ID CAP NCLASSES C1 C2 C3 C4   (ID: 0, 1, ... in order; CAP 0: none;
 *	                             classes: ascending upper sizes, NCLASSES 0: one pool)
 *	pc ID KIND BUILDID OFFSET [DEPTH BUILDID2 OFFSET2]
 *	                             a call instruction of site ID: its return
 *	                             address is OFFSET (hex) past the load bias of
 *	                             the module whose GNU build-id is BUILDID (hex);
 *	                             KIND 0: a call of the malloc family, 1: a
 *	                             call of C++ operator new / new[]; 2: a
 *	                             library's call of the malloc family, whose
 *	                             site is up the stack: 3, the site's frame,
 *	                             DEPTH frames above such a call; 4, the frame
 *	                             of a site not pooled there (the walk stops);
 *	                             3 and 4 with the return address just inside
 *	                             (the library's), BUILDID2 OFFSET2: the pair
 *	                             is the frame
 *	gc N                         cycles at gogc:N (advise's --gc; 0: never)
 *
 * Each process that read the config appends, at its exit, one line per
 * site and one for the process (written in one write(2)):
 *
 *	proc pid=N calls=N hwm_kb=N cycles=N refused=WHY|-
 *	site id=N gets=N hits=N small=N private=N shared=N stolen=N victim=N
 *	     allocs_avoided=N alloc_bytes_avoided=N reallocs=N reallocs_avoided=N
 *	     realloc_bytes_avoided=N puts=N dropped_cap=N released=N held_peak=N
 *
 * (one line each; `refused` names why the library stood aside: another
 * allocator in front of it, a sanitizer runtime). */
#ifndef AP_TRY_H
#define AP_TRY_H

#define AP_TRY_ENV "ALLOCPROF_TRY"
#define AP_TRY_MAGIC "allocprof-try 1"
#define AP_TRY_MAX_SITES 16
#define AP_TRY_MAX_CLASSES 4
#define AP_TRY_KIND_CALL 0
#define AP_TRY_KIND_NEW 1
#define AP_TRY_KIND_LEAF 2  /* a library's call of the allocator: walk the stack */
#define AP_TRY_KIND_FRAME 3 /* a site's frame, DEPTH frames above a LEAF */
#define AP_TRY_KIND_STOP 4  /* another site's frame there: not pooled */

#endif
