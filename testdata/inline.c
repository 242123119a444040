/* Allocations from static inline helpers at -O2, so that symbolizers show
 * inlined frames (issue 3). Every site is marked with a SITE: comment that
 * tests look up to know the line by construction.
 *
 * By construction (N = 1000 nodes, L = 500 labels):
 *   build_list   <- make_node (inlined): 1000 malloc(32)
 *   build_labels: 1 malloc(4000); <- label <- copy_name (both inlined):
 *                 250 strdup("even-label") = 11 B, 250 strdup("odd-label") = 10 B
 *   build_table  <- table <- zeroed (both inlined): 1 calloc(512, 1)
 * 1502 allocations, 41,762 bytes, everything freed before exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node {
	struct node *next;
	long val[3];
};

static inline struct node *make_node(struct node *next, long v)
{
	struct node *n = malloc(sizeof(*n)); /* SITE:make_node */
	if (!n)
		abort();
	n->next = next;
	n->val[0] = v;
	n->val[1] = v * 2;
	n->val[2] = v * 3;
	return n;
}

static inline char *copy_name(const char *s)
{
	char *p = strdup(s); /* SITE:copy_name */
	if (!p)
		abort();
	return p;
}

static inline char *label(int i)
{
	return copy_name(i % 2 ? "odd-label" : "even-label"); /* SITE:label */
}

static inline void *zeroed(size_t n)
{
	void *p = calloc(n, 1); /* SITE:zeroed */
	if (!p)
		abort();
	return p;
}

static inline long *table(size_t n)
{
	long *t = zeroed(n * sizeof(long)); /* SITE:table */
	t[0] = (long)n;
	return t;
}

__attribute__((noinline)) static struct node *build_list(int n)
{
	struct node *head = NULL;
	for (int i = 0; i < n; i++)
		head = make_node(head, i); /* SITE:build_list */
	return head;
}

__attribute__((noinline)) static char **build_labels(int n)
{
	char **v = malloc((size_t)n * sizeof(*v)); /* SITE:build_labels */
	if (!v)
		abort();
	for (int i = 0; i < n; i++)
		v[i] = label(i); /* SITE:build_labels_call */
	return v;
}

__attribute__((noinline)) static long *build_table(void)
{
	return table(64); /* SITE:build_table */
}

int main(void)
{
	struct node *head = build_list(1000);
	char **labels = build_labels(500);
	long *t = build_table();

	long sum = 0;
	while (head) {
		struct node *next = head->next;
		sum += head->val[0];
		free(head);
		head = next;
	}
	size_t chars = 0;
	for (int i = 0; i < 500; i++) {
		chars += strlen(labels[i]);
		free(labels[i]);
	}
	free(labels);
	sum += t[0];
	free(t);

	/* write(2), not stdio: no stdout buffer allocation in the counts */
	char line[128];
	int len = snprintf(line, sizeof(line), "inline: sum %ld chars %zu\n", sum, chars);
	if (write(1, line, (size_t)len) != len)
		return 1;
	return 0;
}
