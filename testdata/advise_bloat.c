/* advise testdata: rounds of 64 buffers of 1 KiB held at once and
 * returned, with a 4 MiB request every 50 rounds. A plain pool keeps the
 * 4 MiB buffers for good (they keep being taken and returned); a cap on Put
 * keeps it at ~64 KiB. Expected verdict: pool with cap.
 * usage: advise_bloat [ROUNDS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

static void *held[64];

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 700;
	uint32_t sum = 0;
	for (unsigned r = 0; r < rounds; r++) {
		for (int i = 0; i < 64; i++) {
			size_t size = (r % 50 == 25 && i == 0) ? (4u << 20) : 1024;
			char *b = malloc(size); /* SITE: advise_bloat */
			b[0] = (char)r;
			b[size - 1] = (char)i;
			held[i] = b;
		}
		for (int i = 0; i < 64; i++) {
			sum += (uint8_t)((char *)held[i])[0];
			free(held[i]);
		}
	}
	td_say("advise_bloat: %u rounds, checksum %u\n", rounds, sum);
	return 0;
}
