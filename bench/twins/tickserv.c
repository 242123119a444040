/* tickserv: a server woken by a timer, bursty and mostly idle. The loop
 * poll()s a timerfd that fires every 2 ms; each tick brings a burst of
 * 0-31 requests (a skewed count: most ticks a few, one in four a big
 * burst), and each request gets a response buffer of 8-64 KiB
 * (log-uniform) from the site, writes a quarter of it, checksums it; the
 * buffers are freed when the burst is answered, then the loop sleeps in
 * poll until the next tick.
 * Unlike bursty.c (sixteen 16 KiB buffers back to back, no sleep) and
 * idle.c (a 1 ms sleep, then four 64 KiB buffers), the bursts vary, so
 * whether glibc trims the top of the heap after one (more than 128 KiB
 * free there) depends on its size: a big burst frees up to 2 MiB and the
 * next big one faults it in again. The wall time is mostly the timer.
 * Built with clang.
 * Twin: a hand-pooler's fixed buffers: every pooled buffer is 64 KiB
 * (the largest response), taken from a vpool and put back. */
// site: resp_new
// libs: -lm
// cc: clang
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "twin.h"

#define MAXBUF (64 << 10)

#ifdef TWIN
static struct vpool pool;
#endif

TW_SITE static uint8_t *resp_new(size_t n)
{
#ifdef TWIN
	uint8_t *b = tw_get(&pool, MAXBUF);
#else
	uint8_t *b = malloc(n);
#endif
	TW_ALLOC(n);
	if (!b)
		abort();
	return b;
}

TW_SITE static void resp_done(uint8_t *b, size_t n)
{
	TW_FREE(n);
#ifdef TWIN
	vpool_put(&pool, b);
#else
	free(b);
#endif
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 500;
	uint64_t rng = 0x71c4c1c4feedf00dULL, sum = 0, reqs = 0;
	uint8_t *bufs[32];
	size_t lens[32];
#ifdef TWIN
	tw_pool_init(&pool);
#endif
	int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	if (tfd < 0)
		abort();
	struct itimerspec its = { { 0, 2000000 }, { 0, 2000000 } };
	if (timerfd_settime(tfd, 0, &its, NULL) < 0)
		abort();
	for (long t = 0; t < ticks;) {
		struct pollfd pfd = { tfd, POLLIN, 0 };
		if (poll(&pfd, 1, -1) < 0)
			abort();
		uint64_t expired;
		if (read(tfd, &expired, sizeof(expired)) != sizeof(expired))
			abort();
		t++;	/* one burst a wake-up, however many ticks expired */
		uint64_t x = tw_rand(&rng);
		unsigned burst = (x & 3) == 0 ? 16 + (unsigned)((x >> 3) % 16) : (unsigned)((x >> 3) % 6);
		for (unsigned i = 0; i < burst; i++) {
			/* 8 KiB * 2^(0..3): log-uniform 8-64 KiB */
			unsigned e = (unsigned)(tw_rand(&rng) % 3072);
			size_t n = (size_t)(8192.0 * __builtin_exp2((double)e / 1024.0));
			uint8_t *b = resp_new(n);
			uint64_t seed = tw_rand(&rng);
			for (size_t k = 0; k + 8 <= n / 4; k += 8) {
				uint64_t w = seed ^ (k * 0x9e3779b97f4a7c15ULL);
				memcpy(b + k, &w, 8);
			}
			uint64_t h = n;
			for (size_t k = 0; k + 8 <= n / 4; k += 64) {
				uint64_t w;
				memcpy(&w, b + k, 8);
				h = tw_mix(h, w);
			}
			sum = tw_mix(sum, h);
			bufs[i] = b;
			lens[i] = n;
			reqs++;
		}
		for (unsigned i = 0; i < burst; i++)
			resp_done(bufs[i], lens[i]);
	}
	close(tfd);
	printf("tickserv %ld ticks %llu requests checksum %016llx\n", ticks, (unsigned long long)reqs,
	       (unsigned long long)sum);
	return 0;
}
