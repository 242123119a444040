/* advise testdata: a site whose pool hands blocks much larger than asked
 * for, over megabytes more memory: the shape advise measures a second
 * time with the site's blocks written and read whole (report/
 * advise_measure.c, measure_whole; tests/advise, "whole").
 *
 * A producer thread makes records of 2 to 18 KiB, their sizes varying
 * record by record: 2, 4, 8 or 16 KiB in turn and up to an eighth more
 * (i * 7919 mod an eighth, rounded down to 8: 8 KiB on average), each
 * just above a power of two, so that size classes with each request
 * rounded up to its class would hand out nearly twice the bytes asked
 * for (advise_round_fits leaves them out: the site is one pool's). It
 * fills each whole, and hands them to a consumer
 * thread in batches of 1024, which checksums every byte of each record
 * and frees it; the producer makes the next batch once the consumer is
 * done with the last (a turn each, under a mutex), so 1024 records are
 * live at the peak however the threads are scheduled, in the program and
 * in its replay, which keeps the order of the frees and the next births.
 * A pool at the site keeps each object at the largest size it reached (a
 * hit too small for a request is dropped for a block of the request's
 * size), so its objects drift to 18 KiB: its hits hand blocks about 2.2
 * times the size asked for, and a batch then holds ~18 MB, not ~8.
 * Every record is freed on another thread than the one that made it.
 * (bench/twins' relay, records of 1-8 KiB in a ring, is the program this
 * shape was found on; its threads' turns decide how many are live.)
 * usage: advise_whole [RECORDS]  (default 20000) */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdturn.h"
#include "tdutil.h"

#define BATCH 1024
static unsigned char *q[BATCH];
static size_t qn[BATCH], qlen;
static long nrec;
static uint64_t csum;

static size_t rec_size(long i)
{
	size_t base = (size_t)2048 << (i % 4);
	return (base + 8 + (size_t)(i * 7919) % (base / 8)) & ~(size_t)7;
}

__attribute__((noinline)) static unsigned char *rec_new(size_t n)
{
	unsigned char *m = malloc(n); /* SITE: advise_whole */
	if (!m)
		abort();
	td_sink = m;
	return m;
}

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 0; i < nrec;) {
		td_wait_turn(0);
		for (qlen = 0; qlen < BATCH && i < nrec; qlen++, i++) {
			size_t n = rec_size(i);
			unsigned char *m = rec_new(n);
			memset(m, (int)(i & 255), n);
			q[qlen] = m;
			qn[qlen] = n;
		}
		td_give_turn(1);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	for (long done = 0; done < nrec;) {
		td_wait_turn(1);
		for (size_t j = 0; j < qlen; j++, done++) {
			for (size_t k = 0; k < qn[j]; k += 8) {
				uint64_t w;
				memcpy(&w, q[j] + k, 8);
				sum = sum * 31 + w;
			}
			free(q[j]);
		}
		td_give_turn(0);
	}
	csum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	nrec = argc > 1 ? atol(argv[1]) : 20000;
	pthread_t p, c;
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL))
		abort();
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	td_say("advise_whole: %ld records, checksum %llx\n", nrec, (unsigned long long)csum);
	return 0;
}
