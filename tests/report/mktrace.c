/* Writes the fixture trace (fixture.h) to a file, for the golden tests of
 * `allocprof top` and `list`. usage: mktrace OUT [RATE [rebuilt|attached]]
 * ("rebuilt": record a build-id that differs from this executable's;
 * "attached": a trace of record -p, from a running process). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mktrace OUT [RATE]\n");
		return 2;
	}
	uint64_t rate = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
	fx_fake_build_id = argc > 3 && !strcmp(argv[3], "rebuilt");
	fx_attached = argc > 3 && !strcmp(argv[3], "attached");
	struct ap_error err;
	if (ap_tw_close(fx_build(rate), argv[1], &err)) {
		fprintf(stderr, "mktrace: %s\n", err.msg);
		return 1;
	}
	return 0;
}
