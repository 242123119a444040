/* advise testdata: results the program keeps (4 KiB records appended to a
 * list and never freed). Nothing comes back to a pool: verdict
 * no: escapes. usage: advise_escape [COUNT] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

struct record {
	struct record *next;
	char data[4096 - sizeof(struct record *)];
};

static struct record *results;

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 12000;
	for (unsigned i = 0; i < n; i++) {
		struct record *r = malloc(sizeof(*r)); /* SITE: advise_escape */
		r->data[0] = (char)i;
		r->next = results;
		results = r;
	}
	unsigned count = 0;
	for (struct record *r = results; r; r = r->next)
		count++;
	td_say("advise_escape: %u results kept\n", count);
	return 0;
}
