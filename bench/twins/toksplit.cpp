/* toksplit (C++17, clang++): a CSV reader's tokenizer, the kind every
 * C++ code base has: split_line() cuts a line into its fields and
 * returns them as a std::vector<std::string>; the caller reads the
 * fields (a per-status count, bytes per method, a digest of the paths
 * and agents) and drops the vector. The lines are generated access-log
 * records of 9 fields, 90-600 bytes: a timestamp, a host, a method, a
 * path of 8-160 characters, a status, a size, a referrer, a user agent
 * (quoted, with doubled quotes inside, 20-200 characters) and a request
 * id. An unquoted field is constructed from its slice (a block when it is
 * longer than the 15 characters std::string keeps inline); a quoted one
 * is built by push_back, character by character, unescaping (libstdc++
 * grows it 15, 30, 60, ... a new block and a copy each time); the vector
 * grows 1, 2, 4, 8, 16 elements (32 bytes each). About twelve blocks a
 * line (memcheck: 11.6), all freed when the caller drops the vector.
 * The site is split_line (libstdc++'s string and vector code allocates;
 * allocprof names split_line's lines).
 * Twin: what a C++ engineer does once the profile shows it: a pool of
 * line objects (a vector of strings and a count), taken from a vpool
 * (cxxshim.c's object pool), each field assign()ed or rebuilt in the
 * string already there, so the vector and the strings keep their
 * capacity from line to line; the caller reads the same fields. */
// site: split_line
// cxx: clang++
// cc: clang
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "twbase.h"

#ifdef TWIN
#include "cxxshim.h"

struct Line {
	std::vector<std::string> f;
	size_t n = 0;
};
static void line_delete(void *p)
{
	delete static_cast<Line *>(p);
}
/* The pacing: the blocks the plain program's vector and strings take. */
static size_t plain_vcap, plain_bytes;
static void plain_field(size_t len, bool pushed)
{
	if (pushed) {
		/* a string built by push_back: 15 inline, then doubled */
		size_t cap = 15;
		while (cap < len) {
			twcxx_alloced(2 * cap + 1);
			if (cap > 15)
				twcxx_freed(cap + 1);
			cap *= 2;
		}
		if (cap > 15)
			plain_bytes += cap + 1;
	} else if (len > 15) {
		twcxx_alloced(len + 1);
		plain_bytes += len + 1;
	}
}
static void plain_vector(size_t n)
{
	if (n <= plain_vcap)
		return;
	size_t cap = plain_vcap ? 2 * plain_vcap : 1;
	twcxx_alloced(cap * 32);
	if (plain_vcap)
		twcxx_freed(plain_vcap * 32);
	plain_vcap = cap;
}
#endif

/* The fields of one line, cut at commas; a field in double quotes may
 * hold commas and doubled quotes. */
#ifndef TWIN
TW_SITE static std::vector<std::string> split_line(std::string_view line)
{
	std::vector<std::string> out;
	size_t i = 0;
	while (i <= line.size()) {
		if (i < line.size() && line[i] == '"') {
			std::string f;
			for (i++; i < line.size(); i++) {
				if (line[i] == '"') {
					if (i + 1 < line.size() && line[i + 1] == '"') {
						f.push_back('"');
						i++;
						continue;
					}
					i++;
					break;
				}
				f.push_back(line[i]);
			}
			out.push_back(std::move(f));
			i++;	/* the comma */
		} else {
			size_t end = line.find(',', i);
			if (end == std::string_view::npos)
				end = line.size();
			out.emplace_back(line.substr(i, end - i));
			i = end + 1;
		}
	}
	return out;
}
#else
static std::string &next_field(Line *l)
{
	if (l->n == l->f.size())
		l->f.emplace_back();
	return l->f[l->n++];
}

TW_SITE static Line *split_line(std::string_view line)
{
	Line *l = static_cast<Line *>(twcxx_obj_get());
	if (!l)
		l = new Line;
	l->n = 0;
	plain_vcap = 0;
	plain_bytes = 0;
	size_t i = 0;
	while (i <= line.size()) {
		std::string &f = next_field(l);
		plain_vector(l->n);
		if (i < line.size() && line[i] == '"') {
			f.clear();
			for (i++; i < line.size(); i++) {
				if (line[i] == '"') {
					if (i + 1 < line.size() && line[i + 1] == '"') {
						f.push_back('"');
						i++;
						continue;
					}
					i++;
					break;
				}
				f.push_back(line[i]);
			}
			plain_field(f.size(), true);
			i++;
		} else {
			size_t end = line.find(',', i);
			if (end == std::string_view::npos)
				end = line.size();
			f.assign(line.substr(i, end - i));
			plain_field(end - i, false);
			i = end + 1;
		}
	}
	return l;
}

static void line_done(Line *l)
{
	twcxx_freed(plain_bytes + plain_vcap * 32);
	twcxx_obj_put(l);
}
#endif

static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD"};
static const char *const hosts[] = {"api.example.com", "static.cdn.example.net", "10.0.3.17",
				    "auth-gateway.internal.example.org"};
static const char seg[] = "users/orders/items/v2/search/assets/img/thumbs/archive/reports/2026/"
			  "export/settings/profile/session/refresh/health/metrics/";
static const char words[] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
			    "Chrome/120.0 Safari/537.36 \"quoted\" curl/8.5.0 python-requests/2.31 ";

static size_t gen_line(uint64_t *rng, char *out, long seq)
{
	uint64_t r = tw_rand(rng), r2 = tw_rand(rng);
	int n = snprintf(out, 128, "2026-12-06T16:%02ld:%02ld.%06ld,%s,%s,/", (seq / 60) % 60, seq % 60,
			 (long)(r % 1000000), hosts[r % 4], methods[(r >> 8) % 5]);
	size_t len = (size_t)n;
	size_t plen = 8 + (size_t)((r >> 16) % 153);
	for (size_t k = 0; k < plen; k++)
		out[len++] = seg[(r2 + k * 13 + (k >> 3) * 7) % (sizeof(seg) - 1)];
	len += (size_t)snprintf(out + len, 64, ",%d,%lu,-,\"", (int)(200 + ((r >> 24) % 5) * 100 + (r >> 40) % 4),
				(unsigned long)((r >> 28) % 200000));
	size_t alen = 20 + (size_t)((r2 >> 8) % 181), off = (size_t)((r2 >> 20) % 64);
	for (size_t k = 0; k < alen; k++) {
		char c = words[(off + k) % (sizeof(words) - 1)];
		out[len++] = c;
		if (c == '"')
			out[len++] = '"';
	}
	len += (size_t)snprintf(out + len, 64, "\",%016llx", (unsigned long long)tw_rand(rng));
	return len;
}

/* What the reader does with a line's fields. */
static uint64_t consume(const std::string *f, size_t n, uint64_t *by_status, uint64_t *by_method)
{
	if (n != 9)
		abort();
	unsigned status = (unsigned)atoi(f[4].c_str());
	by_status[(status / 100) % 8]++;
	for (unsigned m = 0; m < 5; m++)
		if (f[2] == methods[m])
			by_method[m] += strtoul(f[5].c_str(), nullptr, 10);
	uint64_t h = f[3].size();
	for (char c : f[3])
		h = h * 131 + (unsigned char)c;
	for (size_t k = 0; k < f[7].size(); k += 3)
		h = tw_mix(h, (unsigned char)f[7][k]);
	return tw_mix(h, f[8].size() + f[1].size() + f[0][20]);
}

int main(int argc, char **argv)
{
	long lines = argc > 1 ? atol(argv[1]) : 300000;
	uint64_t rng = 0x70c5b117deadbeefULL, sum = 0, by_status[8] = {0}, by_method[5] = {0};
	static char buf[1024];
#ifdef TWIN
	twcxx_obj_init(line_delete);
#endif
	for (long q = 0; q < lines; q++) {
		size_t len = gen_line(&rng, buf, q);
#ifdef TWIN
		Line *l = split_line(std::string_view(buf, len));
		sum = tw_mix(sum, consume(l->f.data(), l->n, by_status, by_method));
		line_done(l);
#else
		std::vector<std::string> f = split_line(std::string_view(buf, len));
		sum = tw_mix(sum, consume(f.data(), f.size(), by_status, by_method));
#endif
	}
	for (unsigned k = 0; k < 8; k++)
		sum = tw_mix(sum, by_status[k]);
	for (unsigned k = 0; k < 5; k++)
		sum = tw_mix(sum, by_method[k]);
	printf("toksplit %ld lines checksum %016llx\n", lines, (unsigned long long)sum);
	return 0;
}
