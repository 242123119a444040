/* prodcons2: prodcons.c with each condition variable signalled after the
 * queue's mutex is let go, not while it is held: the same allocations in
 * the same order, and none of the context switches a woken thread
 * blocking on the mutex costs prodcons (bench/twins/README.md, session
 * 17). What a pool saves here is the allocator's share alone.
 * Twin: as prodcons. */
// site: msg_new
// threaded
#define SIGNAL_AFTER_UNLOCK 1
#include "prodcons.c"
