/* advise testdata: a 32 KiB buffer used once every 10 ms, for 60 requests.
 * With cycles every 2 ms (advise --gc=interval:2ms) requests are five
 * cycles apart, so a pool would be empty at each: verdict no: too rare.
 * usage: advise_rare [REQUESTS] [PERIOD_MS] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tdutil.h"

static uint32_t handle(unsigned req)
{
	char *buf = malloc(32 * 1024); /* SITE: advise_rare */
	td_sink = buf;
	memset(buf, (int)(req & 0xff), 1024);
	uint32_t sum = (uint8_t)buf[req % 1024];
	free(buf);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
	long period_ms = argc > 2 ? atol(argv[2]) : 10;
	struct timespec ts = { period_ms / 1000, (period_ms % 1000) * 1000000L };
	uint32_t sum = 0;
	for (unsigned r = 0; r < n; r++) {
		sum += handle(r);
		nanosleep(&ts, NULL);
	}
	td_say("advise_rare: %u requests, checksum %u\n", n, sum);
	return 0;
}
