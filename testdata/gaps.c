/* Work of a known length between allocator calls, for the gaps --all
 * records (docs/trace-format.md, AP_CHUNK_F_GAPS): every round allocates,
 * works about W us, frees, works about W/4 us, and the program prints the
 * time its own clock saw it work, the allocator calls and the work
 * between them (stretches under 50 us: one longer was preempted). Threads:
 * `gaps N W T` runs T threads of N rounds each.
 * The work is a dependent chain the compiler cannot drop; the clock is
 * read around each stretch of it, outside the allocator calls. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long rounds;
static double work_us;
static uint64_t steps_per_us;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t chain(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

struct result {
	uint64_t worked_ns, sum;
};

static void *run(void *arg)
{
	struct result *r = arg;
	uint64_t x = 1;
	for (long i = 0; i < rounds; i++) {
		char *p = malloc(64 + (size_t)(i % 7) * 16);
		if (!p)
			abort();
		uint64_t t0 = now_ns();
		x = chain(steps_per_us * (uint64_t)work_us, x);
		p[0] = (char)x;
		uint64_t t1 = now_ns();
		r->sum += (unsigned char)p[0];
		free(p);
		uint64_t t2 = now_ns();
		x = chain(steps_per_us * (uint64_t)work_us / 4, x);
		uint64_t t3 = now_ns();
		/* a stretch a preemption made longer than 50 us is not the
		 * program's work (the rule of the gaps: AP_GAP_WORK_MAX_NS) */
		r->worked_ns += (t1 - t0 <= 50000 ? t1 - t0 : 0) + (t3 - t2 <= 50000 ? t3 - t2 : 0);
	}
	r->sum += x & 1;
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 20000;
	work_us = argc > 2 ? atof(argv[2]) : 2;
	long nthreads = argc > 3 ? atol(argv[3]) : 1;
	if (rounds <= 0 || work_us < 1 || nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: gaps [ROUNDS [WORK_US [THREADS]]]\n");
		return 2;
	}
	/* steps of the chain a microsecond, roughly (the fastest of five:
	 * a preempted one is slow): the test compares the time the program
	 * measured, not this */
	uint64_t dt = UINT64_MAX;
	for (int k = 0; k < 5; k++) {
		uint64_t t0 = now_ns();
		chain(1000000, 1);
		uint64_t d = now_ns() - t0;
		dt = d < dt ? d : dt;
	}
	steps_per_us = dt ? 1000000000ull / dt : 1000;
	if (!steps_per_us)
		steps_per_us = 1;
	pthread_t th[64];
	struct result res[64];
	memset(res, 0, sizeof(res));
	for (long k = 1; k < nthreads; k++)
		if (pthread_create(&th[k], NULL, run, &res[k]))
			abort();
	run(&res[0]);
	uint64_t worked = res[0].worked_ns, sum = res[0].sum;
	for (long k = 1; k < nthreads; k++) {
		pthread_join(th[k], NULL);
		worked += res[k].worked_ns;
		sum += res[k].sum;
	}
	printf("calls %ld worked_ns %llu (%llu)\n", 2 * rounds * nthreads,
	       (unsigned long long)worked, (unsigned long long)(sum & 1));
	return 0;
}
