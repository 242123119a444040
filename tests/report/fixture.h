/* A synthetic trace whose stacks are real call chains of fixture.c, so the
 * symbolizer resolves them to real functions and lines. The allocation
 * pattern is fixed by the constants below: the tests derive every expected
 * value from them. */
#ifndef AP_TEST_FIXTURE_H
#define AP_TEST_FIXTURE_H

#include <stdint.h>

#include "ap_trace_writer.h"

/* alloc_small(): FX_N_SMALL blocks of FX_SZ_SMALL, all but FX_KEEP_SMALL freed */
#define FX_N_SMALL 100
#define FX_SZ_SMALL 16
#define FX_KEEP_SMALL 10
/* alloc_big(): FX_N_BIG blocks of FX_SZ_BIG, none freed */
#define FX_N_BIG 5
#define FX_SZ_BIG 4096
/* parse(): FX_N_PARSE blocks of FX_SZ_PARSE itself, and through
 * make_token() FX_N_TOKEN blocks of FX_SZ_TOKEN; all freed */
#define FX_N_PARSE 10
#define FX_SZ_PARSE 64
#define FX_N_TOKEN 30
#define FX_SZ_TOKEN 32
/* walk(): recurses FX_WALK_DEPTH times, then FX_N_WALK blocks of
 * FX_SZ_WALK, none freed */
#define FX_WALK_DEPTH 3
#define FX_N_WALK 7
#define FX_SZ_WALK 128
/* use_wrapper() -> wrap_alloc(): FX_N_WRAP blocks of FX_SZ_WRAP, all freed */
#define FX_N_WRAP 4
#define FX_SZ_WRAP 256
/* grow(): malloc(FX_GROW0), then realloc to FX_GROW1 and FX_GROW2 (both
 * sampled, the old block tracked); the last block stays live */
#define FX_GROW0 100
#define FX_GROW1 200
#define FX_GROW2 400

/* Builds the whole trace: a header with `rate` (1 = every allocation), a
 * mapping of this executable, the events of every site above on two
 * threads, and an END. Returns the writer for ap_tw_close[_mem]. */
struct ap_tw *fx_build(uint64_t rate);

/* When set before fx_build, the mapping records a build-id that differs
 * from the executable's (as if it were rebuilt since recording). */
extern int fx_fake_build_id;
/* When set before fx_build, the trace says it was recorded from a running
 * process (record -p: AP_HFLAG_ATTACHED). */
extern int fx_attached;

/* The line in fixture.c that carries the comment marker `tag` (e.g.
 * "L:small"), or -1. `src` is the path of fixture.c. */
int fx_line(const char *src, const char *tag);

#endif
