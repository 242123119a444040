/* strcat (C++17): a log formatter building std::string lines by
 * appending pieces. Each request formats one log line: a timestamp, a
 * level, a logger name, then 10-200 fields (`key=value ` pairs and
 * quoted messages, 3-60 characters a piece) appended one after the other
 * to a std::string, which grows as libstdc++ grows it (beyond its 15
 * inline characters, to twice its capacity or the size needed, whichever
 * is larger: blocks of 31, 61, 121, ... 7681 bytes, each new one copied
 * into and the old one freed); the line is then hashed, as a sink would,
 * and dropped. The site is format_line(), which calls into libstdc++
 * (std::string's append, _M_mutate, _M_create and operator new are
 * libstdc++.so's: allocprof names the program's frame that called it).
 * A pool of the blocks should help a little, if at all: 6-9 blocks a
 * request, the small ones from tcache, the larger ones (above 1 KiB) from
 * glibc's bins and the top of the heap, which stays far below the trim
 * threshold (no page faults); a pool of blocks saves those malloc/free
 * pairs, but not the copy at each growth. A pool of strings, each reused
 * with its capacity kept, saves both: after a few requests no line grows.
 * Twin: what a C++ engineer does to pool it: format_line takes a
 * std::string from a vpool of them (through cxxshim.c, as packets.cpp:
 * one call a request), clear()s it (the capacity stays), builds the line
 * in it and puts it back; a string the pool's cycles drop is deleted.
 * The code that builds the line is the plain program's, libstdc++'s own
 * std::string (TW_GREW, in the twin only, counts the blocks the plain
 * program's string allocates, for the cycle pacing).
 * Not the twin: -DTWIN -DTWIN_ALLOC builds the other way to pool it, a
 * std::basic_string whose allocator takes blocks from a vpool: the same
 * blocks in the same order as plain, but that basic_string is compiled
 * into the program (inlined, no calls through the PLT into libstdc++.so)
 * and that alone makes it ~35 ms faster than plain with malloc behind the
 * same allocator (README, "Session 18: strcat and jsonnodes"). */
// site: format_line
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "twbase.h"

#if defined(TWIN) && defined(TWIN_ALLOC)
extern "C" {
void twcxx_init(void);
void *twcxx_get(size_t n);
void twcxx_put(void *p, size_t n);
}

/* A std::allocator-shaped allocator over the pool: a block of n chars
 * from twcxx_get (a pooled block at least that large, else malloc), given
 * back with twcxx_put. Stateless: every VpoolAlloc is equal. */
template <class T> struct VpoolAlloc {
	using value_type = T;
	VpoolAlloc() noexcept = default;
	template <class U> VpoolAlloc(const VpoolAlloc<U> &) noexcept {}
	T *allocate(size_t n)
	{
		void *p = twcxx_get(n * sizeof(T));
		if (!p)
			throw std::bad_alloc();
		return static_cast<T *>(p);
	}
	void deallocate(T *p, size_t n) noexcept { twcxx_put(p, n * sizeof(T)); }
};
template <class T, class U> bool operator==(const VpoolAlloc<T> &, const VpoolAlloc<U> &) { return true; }
template <class T, class U> bool operator!=(const VpoolAlloc<T> &, const VpoolAlloc<U> &) { return false; }

using line_string = std::basic_string<char, std::char_traits<char>, VpoolAlloc<char>>;
#define TW_GREW() ((void)0)
#else
using line_string = std::string;
#define TW_GREW() ((void)0)
#endif

#if defined(TWIN) && !defined(TWIN_ALLOC)
extern "C" {
void twcxx_obj_init(void (*del)(void *));
void *twcxx_obj_get(void);
void twcxx_obj_put(void *p);
void twcxx_alloced(size_t n);
void twcxx_freed(size_t n);
}

static void string_delete(void *p)
{
	delete static_cast<std::string *>(p);
}

/* The capacity the plain program's string would have: libstdc++ grows a
 * string past its capacity to the larger of twice that and the size
 * needed, from 15 inline characters; a block is capacity + 1 bytes. The
 * pacing counts those blocks as the plain program allocates them. */
static size_t plain_cap;

static inline void plain_grew(size_t size)
{
	if (size <= plain_cap)
		return;
	size_t cap = size < 2 * plain_cap ? 2 * plain_cap : size;
	twcxx_alloced(cap + 1);
	if (plain_cap > 15)
		twcxx_freed(plain_cap + 1);
	plain_cap = cap;
}
#undef TW_GREW
#define TW_GREW() plain_grew(line.size())
#endif

static const char *const levels[] = {"DEBUG ", "INFO ", "WARN ", "ERROR "};
static const char *const loggers[] = {
	"http.server ", "db.pool ", "cache.lru ", "auth.session.refresh ", "scheduler.worker.7 ",
};
static const char *const keys[] = {
	"id", "user", "path", "status", "latency_us", "bytes", "remote_addr", "trace", "span",
	"method", "query", "retries", "shard", "region", "x_forwarded_for_chain",
};
/* Message words; pieces are cut from this text at a pseudo-random offset. */
static const char text[] =
	"the quick brown fox jumps over the lazy dog while the connection pool "
	"reports that every worker is busy and the request waits in the queue "
	"until a timeout of several seconds expires or a slot becomes free again ";

/* One log line, hashed and dropped: the site. */
TW_SITE static uint64_t format_line(uint64_t *rng, long seq)
{
#if defined(TWIN) && !defined(TWIN_ALLOC)
	std::string *pooled = static_cast<std::string *>(twcxx_obj_get());
	if (!pooled)
		pooled = new std::string;
	pooled->clear();	/* the capacity stays */
	plain_cap = 15;
	std::string &line = *pooled;
#else
	line_string line;
#endif
	char num[24];
	tw_sink = &line;
	auto r = std::to_chars(num, num + sizeof(num), 1700000000000LL + seq * 37);
	line.append(num, (size_t)(r.ptr - num));
	TW_GREW();
	line.push_back(' ');
	TW_GREW();
	uint64_t x = tw_rand(rng);
	line.append(levels[x & 3]);
	TW_GREW();
	line.append(loggers[(x >> 2) % 5]);
	TW_GREW();
	unsigned fields = 10 + (unsigned)((x >> 8) % 191);	/* 10-200 pieces */
	for (unsigned f = 0; f < fields; f++) {
		uint64_t y = tw_rand(rng);
		if (y & 1) {
			/* key=value: a key, '=', a number of 1-20 digits */
			line.append(keys[(y >> 1) % 15]);
			TW_GREW();
			line.push_back('=');
			TW_GREW();
			uint64_t v = (y >> 8) >> ((y >> 4) % 60);
			r = std::to_chars(num, num + sizeof(num), v);
			line.append(num, (size_t)(r.ptr - num));
			TW_GREW();
			line.push_back(' ');
			TW_GREW();
		} else {
			/* a quoted piece of the message text, 3-60 characters */
			size_t len = 3 + (size_t)((y >> 1) % 58);
			size_t off = (size_t)((y >> 8) % (sizeof(text) - 1 - len));
			line.push_back('"');
			TW_GREW();
			line.append(text + off, len);
			TW_GREW();
			line.append("\" ", 2);
			TW_GREW();
		}
	}
	/* the sink: FNV-1a over the line */
	uint64_t h = 1469598103934665603ULL;
	for (char c : line)
		h = (h ^ (unsigned char)c) * 1099511628211ULL;
	h ^= line.size();
#if defined(TWIN) && !defined(TWIN_ALLOC)
	if (plain_cap > 15)
		twcxx_freed(plain_cap + 1);	/* the plain line's destructor */
	twcxx_obj_put(pooled);
#endif
	return h;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 150000;
	uint64_t rng = 0x9e3779b97f4a7c15ULL, sum = 0;
#if defined(TWIN) && defined(TWIN_ALLOC)
	twcxx_init();
#elif defined(TWIN)
	twcxx_obj_init(string_delete);
#endif
	for (long r = 0; r < n; r++)
		sum ^= format_line(&rng, r) + (sum << 6) + (sum >> 2);
	std::printf("strcat %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
