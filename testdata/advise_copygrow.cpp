// Growth by copy (advise's joins, report/advise_chains.c): objects that
// grow by a new block, a copy and a free of the old one, as libstdc++
// grows them, beside blocks that must not be taken for one object's.
//
// By construction, for N requests (argv[1], default 2000):
//   build_line: a std::string appended one character at a time to 1000
//       characters: libstdc++'s capacities 15 (inline), 30, 60, 120, 240,
//       480, 960, 1920: blocks of 31, 61, 121, 241, 481, 961 and 1921
//       bytes, each the old one's growth: 7 allocations and 6 growths by
//       copy a request;
//   collect: a std::vector<int> of 1000 push_backs: capacities 1, 2, 4,
//       ... 1024: 11 blocks of 4-4096 bytes, 10 growths a request;
//   hand_grow: C code that grows a buffer by hand (malloc twice the size,
//       memcpy, free the old): 64, 128, 256, 512 bytes: 4 allocations, 3
//       growths a request;
//   ring: a new message of 100-190 bytes, then the last one freed: a ring
//       of one, up to 1.9 times the last one's size but never twice: no
//       growth;
//   other_fn: a block of 4096 bytes, then, at once, the free of a 64-byte
//       block allocated by keep_small (another function): no growth;
//   between: a block of 1024 bytes, another allocation, then the free of
//       the 256 bytes the same function allocated before: no growth;
//   empty_ring: an empty string (1 byte) made, then the last one freed:
//       not twice the size, no growth;
//   emplace_lines: a std::vector<std::string> of 8 strings of 30
//       characters by emplace_back: capacities 1, 2, 4, 8 (blocks of 32,
//       64, 128 and 256 bytes), each growth allocating the new buffer,
//       then the string emplaced in it, then freeing the old buffer
//       (libstdc++'s _M_realloc_insert): 3 growths a request, the
//       strings' 8 blocks none;
//   twice_between: a block of 512 bytes, another at another line, then
//       the free of the 256 bytes the same function allocated before:
//       twice the size, but the allocation between is another line's,
//       no growth;
//   index_keys, in every fourth request (N a multiple of 4): a
//       std::unordered_map<int, int> of 60 keys: libstdc++'s bucket
//       arrays of 13, 29, 59 and 127 pointers (104-1016 bytes), each
//       allocated, the nodes moved over, the old one freed: 3 growths
//       (2.2 times the size, not twice: a prime number of buckets), the
//       60 nodes none;
//   not_prime: at one line, a block of 96 bytes, then one of 200 and the
//       96 freed: 2.08 times, as a bucket array grows, but 12 and 25 are
//       not primes: no growth.
// Growths by copy: 22 a request and 3 every fourth, 22 * N + 3 * N / 4 in
// all. Every block is freed.
//
// With T threads (argv[2], dividing N), each makes N / T of the requests
// while main, which allocated a block once they had started, waits for
// them: a thread quiet after an allocation (advise's walk holds the
// events after it back until its next one, report/advise.c walk_folded).
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long build_line(int k)
{
	std::string s;
	for (int i = 0; i < 1000; i++)
		s.push_back((char)('a' + (i + k) % 26));
	return s.size() + (unsigned char)s[k % 1000];
}

__attribute__((noinline)) static unsigned long collect(int k)
{
	std::vector<int> v;
	for (int i = 0; i < 1000; i++)
		v.push_back(i ^ k);
	return v.size() + (unsigned)v[k % 1000];
}

__attribute__((noinline)) static unsigned long hand_grow(int k)
{
	size_t cap = 64;
	char *p = (char *)malloc(cap);
	memset(p, k, cap);
	while (cap < 512) {
		char *q = (char *)malloc(2 * cap);
		memcpy(q, p, cap);
		memset(q + cap, k + 1, cap);
		free(p);
		p = q;
		cap *= 2;
	}
	unsigned long r = (unsigned char)p[cap - 1];
	free(p);
	return r;
}

static __thread char *last_msg;

__attribute__((noinline)) static void ring(int k)
{
	size_t n = 100 + (size_t)(k * 37 % 91);
	char *m = (char *)malloc(n);
	memset(m, k, n);
	sink += (unsigned char)m[n - 1];
	free(last_msg);
	last_msg = m;
}

__attribute__((noinline)) static char *keep_small(int k)
{
	char *p = (char *)malloc(64);
	memset(p, k, 64);
	return p;
}

__attribute__((noinline)) static void other_fn(char *small, int k)
{
	char *big = (char *)malloc(4096);
	memset(big, k, 4096);
	free(small);
	sink += (unsigned char)big[k % 4096];
	free(big);
}

__attribute__((noinline)) static void between(int k)
{
	char *a = (char *)malloc(256);
	memset(a, k, 256);
	char *b = (char *)malloc(1024);
	memcpy(b, a, 256);
	char *c = (char *)malloc(32);
	memset(c, k, 32);
	free(a);
	sink += (unsigned char)b[k % 256] + (unsigned char)c[k % 32];
	free(c);
	free(b);
}

__attribute__((noinline)) static unsigned long emplace_lines(int k)
{
	std::vector<std::string> v;
	for (int i = 0; i < 8; i++)
		v.emplace_back(30, (char)('a' + (i + k) % 26));
	return v.size() + (unsigned char)v[k % 8][k % 30];
}

__attribute__((noinline)) static void twice_between(int k)
{
	char *a = (char *)malloc(256);
	memset(a, k, 256);
	char *b = (char *)malloc(512);
	memcpy(b, a, 256);
	char *c = (char *)malloc(48);
	memset(c, k, 48);
	free(a);
	sink += (unsigned char)b[k % 256] + (unsigned char)c[k % 48];
	free(c);
	free(b);
}

__attribute__((noinline)) static unsigned long index_keys(int k)
{
	std::unordered_map<int, int> m;
	for (int i = 0; i < 60; i++)
		m[i ^ k] = i;
	return m.size() + (unsigned)m[k];
}

__attribute__((noinline)) static void not_prime(int k)
{
	char *last = NULL;
	for (int i = 0; i < 2; i++) {
		char *p = (char *)malloc(i ? 200 : 96);
		memset(p, k, i ? 200 : 96);
		sink += (unsigned char)p[k % 96];
		free(last);
		last = p;
	}
	free(last);
}

static __thread char *last_empty;

__attribute__((noinline)) static void empty_ring(int k)
{
	char *e = (char *)malloc(1);
	e[0] = 0;
	sink += (unsigned char)e[0] + (unsigned)k;
	free(last_empty);
	last_empty = e;
}

static unsigned long requests(int first, int n)
{
	unsigned long sum = 0;
	for (int k = first; k < first + n; k++) {
		sum += build_line(k);
		sum += collect(k);
		sum += hand_grow(k);
		ring(k);
		other_fn(keep_small(k), k);
		between(k);
		empty_ring(k);
		sum += emplace_lines(k);
		twice_between(k);
		if (k % 4 == 0)
			sum += index_keys(k);
		not_prime(k);
	}
	free(last_msg);
	free(last_empty);
	last_msg = last_empty = NULL;
	return sum;
}

struct part {
	pthread_t tid;
	int first, n;
	unsigned long sum;
};

static void *part_run(void *arg)
{
	struct part *p = (struct part *)arg;
	p->sum = requests(p->first, p->n);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	unsigned long sum = 0;
	if (threads <= 0) {
		sum = requests(0, n);
	} else {
		if (n % threads) {
			fprintf(stderr, "advise_copygrow: %d threads do not divide %d requests\n",
				threads, n);
			return 2;
		}
		struct part *parts = (struct part *)calloc((size_t)threads, sizeof(*parts));
		for (int k = 0; k < threads; k++) {
			parts[k].first = k * (n / threads);
			parts[k].n = n / threads;
			if (pthread_create(&parts[k].tid, NULL, part_run, &parts[k]))
				return 1;
		}
		/* main's last event until the threads are done */
		char *late = (char *)malloc(48);
		memset(late, n, 48);
		for (int k = 0; k < threads; k++) {
			pthread_join(parts[k].tid, NULL);
			sum += parts[k].sum;
		}
		sum += (unsigned char)late[47];
		free(late);
		free(parts);
	}
	printf("copygrow %d requests sum %lu\n", n, sum + sink);
	return 0;
}
