/* bench/realloc.c: the realloc-doubling buffer (bytes.Buffer): each round
 * appends 64-byte pieces to an empty buffer whose capacity doubles from 64
 * up to 64 KiB, then frees it. Usage: realloc ROUNDS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	unsigned long sum = 0;
	char piece[64];
	memset(piece, 'x', sizeof(piece));
	for (unsigned long r = 0; r < rounds; r++) {
		char *buf = NULL;
		size_t len = 0, cap = 0;
		while (len < 65536) {
			if (len + sizeof(piece) > cap) {
				cap = cap ? cap * 2 : 64;
				buf = realloc(buf, cap);
			}
			memcpy(buf + len, piece, sizeof(piece));
			len += sizeof(piece);
		}
		sum += (unsigned char)buf[len - 1];
		free(buf);
	}
	printf("realloc: %lu rounds, checksum %lu\n", rounds, sum);
	return 0;
}
