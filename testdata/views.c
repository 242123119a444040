/* testdata for the `top` / `list` views (brief D): allocations whose count
 * per call site is known by construction. Each allocating line carries a
 * marker `VIEWS func=F flat=N [cum=N] [live=N]`: the function whose line
 * it is, how many allocations the line makes (flat; realloc counts as one),
 * how many pass through it (cum, when it differs: a call line; self=1 when
 * the call is recursive, so those are already counted in the function), and
 * how many of them are still live at exit (0 unless given). tests/report/e2e_views.py reads the
 * markers, records this program with --all and checks `top` and `list` against them. Built with
 * -fno-optimize-sibling-calls and noinline helpers so that every call below is a real frame; output
 * goes through write(2) so stdio's buffer is not an extra allocation. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

#define N_NODES 1000
#define LIVE_NODES 100
#define N_NAMES 300
#define N_TABLE 200
#define GROW_STEPS 9
#define N_DEEP 50
#define DEPTH 5

static void *nodes[N_NODES];
static char *names[N_NAMES];
static void *table[N_TABLE];
static void *deep[N_DEEP];

static NOINLINE void make_nodes(void)
{
	for (int i = 0; i < N_NODES; i++)
		nodes[i] = malloc(48); /* VIEWS func=make_nodes flat=1000 live=100 */
}

static NOINLINE void make_names(void)
{
	/* strdup is an allocator wrapper: the call site is this line. */
	static const char *const label[2] = {"even name", "odd name"};
	for (int i = 0; i < N_NAMES; i++)
		names[i] = strdup(label[i % 2]); /* VIEWS func=make_names flat=300 */
}

static NOINLINE void make_table(void)
{
	for (int i = 0; i < N_TABLE; i++)
		table[i] = calloc(4, 16); /* VIEWS func=make_table flat=200 */
}

/* A buffer grown by doubling: one malloc, GROW_STEPS reallocs; the last
 * block stays live. */
static NOINLINE char *grow_buffer(void)
{
	size_t cap = 16;
	char *buf = malloc(cap); /* VIEWS func=grow_buffer flat=1 */
	for (int i = 0; i < GROW_STEPS; i++) {
		cap *= 2;
		buf = realloc(buf, cap); /* VIEWS func=grow_buffer flat=9 live=1 */
		buf[cap - 1] = 0;
	}
	return buf;
}

/* Recursion: recurse() is on each of these stacks DEPTH + 1 times. */
static NOINLINE int recurse(int depth)
{
	if (depth > 0) {
		int r = recurse(depth - 1); /* VIEWS func=recurse flat=0 cum=50 self=1 */
		return r + 1;
	}
	for (int i = 0; i < N_DEEP; i++)
		deep[i] = malloc(24); /* VIEWS func=recurse flat=50 */
	return 0;
}

int main(void)
{
	make_nodes();		   /* VIEWS func=main flat=0 cum=1000 */
	make_names();		   /* VIEWS func=main flat=0 cum=300 */
	make_table();		   /* VIEWS func=main flat=0 cum=200 */
	char *buf = grow_buffer(); /* VIEWS func=main flat=0 cum=10 */
	int d = recurse(DEPTH);	   /* VIEWS func=main flat=0 cum=50 */

	for (int i = LIVE_NODES; i < N_NODES; i++)
		free(nodes[i]);
	for (int i = 0; i < N_NAMES; i++)
		free(names[i]);
	for (int i = 0; i < N_TABLE; i++)
		free(table[i]);
	for (int i = 0; i < N_DEEP; i++)
		free(deep[i]);
	static const char msg[] = "views done\n";
	if (write(1, msg, sizeof(msg) - 1) < 0 || d != DEPTH || !buf)
		return 1;
	return 0;
}
