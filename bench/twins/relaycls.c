/* relaycls: relay.c's program, with the pool advise says there since
 * session 43 as its twin: four vpools, of 1, 2, 4 and 8 KiB records;
 * msg_new takes one from its request's class, or mallocs the class's
 * size (every block of a class serves every request of it); msg_free (on
 * the worker) puts it back to its class. relay.c's own twin is one vpool,
 * whose blocks drift to 8 KiB. Threaded: run.sh runs it unpinned. */
// site: msg_new
// threaded
#define RELAY_CLASSES 1
#include "relay.c"
