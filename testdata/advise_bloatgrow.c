/* advise testdata: bloat through growth. 64 buffers of 8 KiB are taken and
 * returned every round; in one round (of 300) each of them grows to 4 MiB by
 * realloc. Every request is for 8 KiB, but a pool keeps what the buffers
 * grew to: 64 x 4 MiB = 256 MiB held for a load that needs 512 KiB.
 * Verdict: pool with a cap. The rounds make the pool worth ~5 % of the
 * program's CPU time with the tests' cost table (60 made it 1.4 %, beside
 * the 1 % a verdict wants: a recording beside a busy CPU flipped it).
 * usage: advise_bloatgrow [ROUNDS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdutil.h"

static char *held[64];

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
	uint32_t sum = 0;
	for (unsigned r = 0; r < rounds; r++) {
		for (int i = 0; i < 64; i++) {
			char *b = malloc(8192); /* SITE: advise_bloatgrow */
			td_touch(b, 8192, (unsigned char)r);
			held[i] = b;
		}
		if (r == rounds / 3)
			for (int i = 0; i < 64; i++) {
				size_t cap = 8192;
				while (cap < (4u << 20)) {
					cap *= 2;
					held[i] = realloc(held[i], cap);
					td_touch(held[i], cap, (unsigned char)i);
				}
			}
		for (int i = 0; i < 64; i++) {
			sum += (uint8_t)held[i][0];
			free(held[i]);
		}
	}
	td_say("advise_bloatgrow: %u rounds, checksum %u\n", rounds, sum);
	return 0;
}
