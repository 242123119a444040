/* The advisor's verdicts (docs/pool-model.md §8): from a site's replay results
 * and statistics to one verdict and the sentences that explain it. The
 * thresholds are here, named, in one place. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise-int.h"

/* Objects never freed, as a share of requests, that make a site "escapes". */
#define ESCAPE_SHARE 0.5
/* Below this share of all allocated bytes a site is "little to gain". */
#define MIN_GAIN_SHARE 0.02
/* A pool pays from this hit rate on. */
#define GOOD_HIT_RATE 0.5
/* "too rare": at least this share of the requests come two or more cycles
 * after the one before (the pool is empty then). */
#define RARE_SHARE 0.5
/* "too small": objects whose capacity is up to SMALL_MAX bytes (glibc's
 * tcache sizes, where malloc is itself a per-thread cache of free blocks,
 * at its cheapest) whose requests save through a pool (allocation, first
 * touch and reallocs through malloc, less the pool's get+put) less than
 * (SMALL_FACTOR - 1) times the pool's get+put, and more than nothing: a
 * saving under the pool's own price is within that price's error (a
 * calibration that priced a get and put twice as high would make it a
 * loss), which at malloc's cheapest sizes is the price of the whole
 * difference. Where the pool saves nothing it costs more: "no: costs
 * more", at any size (a user's review: "too small" said of objects whose
 * text priced malloc at 11 ns and the pool at 4). Bigger objects are
 * never "too small": a noisy calibration must not call a 32 KiB buffer
 * small. */
#define SMALL_FACTOR 2.0
#define SMALL_MAX 1024
/* ...and objects up to TINY_MAX bytes that do not grow are "too small"
 * outright: glibc's tcache is already a per-thread cache of such blocks. */
#define TINY_MAX 256
/* Capacities are skewed when the largest is this many times the 90th
 * percentile... */
#define SKEW_FACTOR 16.0
/* ...and a cap is worth it when it cuts the peak held bytes this much. */
#define CAP_GAIN 4.0
/* The smallest cap suggested: glibc's tcache's largest block (SMALL_MAX).
 * It was 64 KiB (the cap of Go's fmt, whose buffers are that big), which
 * left every site whose sizes stay below it uncapped however skewed: a
 * hash map's 56-byte nodes and its bucket arrays of up to 40 KiB, made at
 * one line, whose pool handed the arrays' blocks to node requests
 * (bench/twins' wordbatch, README "Session 29"). */
#define MIN_CAP 1024u
/* Size classes: clusters of capacities at least this far apart, each with
 * at least this share of the objects. */
#define CLASS_RATIO 4.0
#define CLASS_SHARE 0.1
/* Sampled traces: a site whose object count is less certain than 30
 * small samples would make it (a relative error above 1/sqrt(30), 18%) is
 * too uncertain for a verdict; the --rate suggested then would give about
 * WANT_SAMPLES. */
#define MIN_SAMPLES 30
#define WANT_SAMPLES 100
/* Measured: a pool pays where the lower end of the saving's interval is
 * above zero and the saving is at least this share of the program's CPU
 * time. The model's estimate needs as much: "pool, ~155us" of a sampled
 * 1.21 s git run (0.013 %) was a site whose measured replay costs more (a
 * user's review, session 29). */
#define MIN_SAVE_SHARE AP_MIN_SAVE_SHARE
/* Objects one thread makes and another frees: how often the program's
 * threads then wait for each other (their own queues and locks) moves
 * when a pool makes one of them faster, by as much as this share of what
 * the recorded run's context switches cost, either way, and no replay of
 * the recorded order of hand-overs shows it (its threads switch where the
 * script makes them wait, the same with and without the pool). Measured
 * against a replay that cannot see it (bench/twins/README.md, "Session
 * 18"): prodcons' twin saves 231 ms more than its replay, 43 % of its
 * switches' 543 ms; a Rust sync_channel whose replay saves 9.6 ms loses
 * 4 ms with the pool, 46 % of its switches' 29 ms the other way. It is
 * said, with `allocprof try`, not made a verdict: "unsure" (session 18 to
 * 22, where the saving's lower end was below it) was what advise said at
 * every threaded program of bench/twins, whose twins saved 52 % (prodcons),
 * 12 % (workers) and 6 % (chan) in session 23, the program's switches
 * falling with the pool (prodcons 230,000 to 54,000, chan 61,000 to
 * 46,000, `perf stat`), where the measured saving alone gives each its
 * verdict's sign ("Session 23"). */
#define WAIT_MOVE 0.5

/* A pool that hands blocks this many times the size requested, on
 * average over its hits (it keeps each object at the largest size it
 * reached, and a hit too small is dropped for a block of the request's
 * size, so where one site's sizes vary widely it keeps the big ones),
 * and whose replay's peak memory was this much above the baseline's,
 * measured a saving the program need not have: the replay writes a line
 * and a byte a page of each new block, and a program that writes or
 * reads its blocks whole goes through that much more memory with the
 * pool. bench/twins' relay (records of 1-8 KiB, 1,024 in flight, each
 * filled and checksummed whole): blocks of 8 KiB for requests of 4.6 KiB
 * on average, a peak of 10.2-10.6 MB against 4.8 MB; its replay saved
 * 10-26 ms where its twin cost 17-28 ms (9-13 %) once its baseline
 * faulted as the program did (branch tw26's 08cd41c), and a runner that
 * wrote and read every byte measured -15 ms (bench/twins/README.md,
 * sessions 26 and 27). Sites whose blocks stay within an L2 cache's
 * size of the baseline's (0.5-2 MiB a core; prodcons, prodcons2, workers:
 * 1.0-1.8 MB more, their twins saving) are judged by their saving, and
 * so are those of a program the fit found to write only a prefix of its
 * blocks (docs/pool-model.md §9; xzreq: blocks of 997 kB for requests of
 * 196 kB, 3.7 MB more, its first 30 % written; its twin saves 34 %). */
#define LARGER_RATIO 1.5
#define LARGER_MIN_BYTES (4.0 * 1024 * 1024)

/* A measured saving of less than this a call avoided (an allocation or a
 * realloc), at its interval's lower end, is not taken for a pool's: the replay's calls are not the
 * program's code around them, and at a few ns a call the difference is
 * in that. A C program that makes and frees a 3-byte temporary string
 * 8.8 M times (tcache's work): its replay saved 18 ms, 2 ns a call, 3.7 %;
 * its hand-pooled twin nothing measurable (0 to 5 ms of 423). The twins
 * whose pools pay save 14 ns a call and more in their replays (bench/twins:
 * mtbuf 14, strcat 16, prodcons2 61, cache 79); strbuild's (6 ns) and
 * packets' (4 ns) twins save nothing their intervals tell from zero. */
#define MIN_SAVE_PER_CALL 5.0
/* ...and it is a few ns a call only while its middle is under this many
 * times that: a middle of 15 ns a call or more is not, whatever its lower
 * end (that end is then the interval's width, not the saving a call:
 * bench/twins' prodcons2, 75.7 ns a call [3.7, 113.2] in one recording,
 * 133.7 [90.7, 185.3] and 127.4 [117.1, 146.5] in the next two, its twin
 * saving 35 %, was "little to gain" once and "pool" twice, session 36).
 * The savers' replays measure 14 ns a call and more (the list above),
 * tinytmp's and wordbatch's 2 to 10.4. */
#define SLIM_MIDDLE_MAX 3.0
/* ...up to this share of the program's CPU time: beyond it a saving of
 * a few ns a call is much of what the program does, and stands. (tinytmp's
 * replays saved 3 to 7.5 % of its run, 2-3.5 ns a call, its twin none.) */
#define SLIM_SHARE_MAX 0.2

/* A replay whose baseline faults this many times the recorded run (and a
 * thousand more), where its pooled run does not, measured a saving the
 * program cannot have: its heap was trimmed where the program's was not.
 * bench/twins' relay (a two-stage pipeline, a ring of 1024 records): its
 * twin costs 29 ms (15 %); replays of its recordings faulted 1,185,
 * 42,850-92,157 and 7,303-127,119 times where the program faulted
 * ~2,000, and "saved" nothing, 85 ms and 10 ms. Taken from the upper
 * quartile of the baseline's runs, not the median: the trimming comes in
 * bursts, and relay's baseline (a recording that faulted 2,872 times)
 * faulted 4,231-11,701 times in 16 runs of 25 and 33,554-54,180 in 9
 * (the same with either runner): a median of 11-12 k, at the threshold,
 * made the verdict "pool" or "unsure" from one advise to the next. The
 * pooled runs are taken the same way (a pool whose runs trim in the same
 * bursts saves none of them), and the quartile only from
 * FAULTS_Q3_ROUNDS runs on (of fewer it is their most: one run would
 * decide). */
#define FAULTS_MORE 4
#define FAULTS_Q3_ROUNDS 8
/* ...unless the runner priced a fault (its fault probe) and those beyond
 * the recorded run's cost less than this share of the saving: then they
 * are taken off it, and the verdict is what is left's. */
#define EXCESS_SHARE 0.5
/* Faults beyond the recorded run's are priced in full from this many
 * times its and a thousand more, and in part below, on a ramp from none
 * at the run's own count (a baseline that faults as the run did is left
 * as it is: the recording's own faults are in the run's count). A step
 * there made one fault more or less move the saving by all of them
 * (excess_weight). */
#define EXCESS_MORE 1.25
#define EXCESS_MIN 1000

/* A measured cost that the cost model's figure for the pool's own gets
 * and puts does not reach a third of is not the pool's work, whatever the
 * objects' size (git's inflate windows: 32 KiB, 100 % private hits, the
 * model saving 40 us and the replay costing 600 us, 504 page faults more;
 * clang's objects of 112 B, the model saving 65 us and the replay costing
 * 1.6 ms, 693 page faults and 7.8 MB of peak RSS more), when the pooled
 * runs faulted more by this many and this share. Without those faults
 * it is the pool's work after all, which the model puts low where the
 * objects go through its deques (cppcheck's 56-byte values: 58,843 hits
 * from the shared deque, the model 138 us, the replay 918 us, 5 faults
 * more). */
#define OWN_WORK_SHARE 3.0
#define FAULTS_MOVED_MIN 100
#define FAULTS_MOVED_SHARE 0.02

const char *ap_fl_why(enum ap_fl_state st)
{
	switch (st) {
	case AP_FL_MEASURED:
		return NULL;
	case AP_FL_CROSSES:
		return "crosses threads";
	case AP_FL_BUDGET:
		return "budget";
	case AP_FL_NOT_MEASURED:
		break;
	}
	return "not measured";
}

const char *ap_verdict_name(enum ap_verdict v)
{
	switch (v) {
	case AP_VERDICT_POOL:
		return "pool";
	case AP_VERDICT_POOL_CAP:
		return "pool with cap";
	case AP_VERDICT_SIZE_CLASSES:
		return "size classes";
	case AP_VERDICT_TOO_RARE:
		return "no: too rare";
	case AP_VERDICT_TOO_SMALL:
		return "no: too small";
	case AP_VERDICT_ESCAPES:
		return "no: escapes";
	case AP_VERDICT_LITTLE_GAIN:
		return "no: little to gain";
	case AP_VERDICT_UNSURE:
		return "unsure: too few samples";
	case AP_VERDICT_ELSEWHERE:
		return "elsewhere";
	case AP_VERDICT_COSTS_MORE:
		return "no: costs more";
	case AP_VERDICT_NOISE:
		return "within noise";
	case AP_VERDICT_FAULTS:
		return "unsure: replay faults";
	case AP_VERDICT_LARGER:
		return "unsure: larger blocks";
	}
	return "?";
}

static uint64_t pow2_ceil(double x)
{
	uint64_t p = 1;
	while ((double)p < x && p < (UINT64_C(1) << 62))
		p <<= 1;
	return p;
}

/* The capacities when any object came back, else the requests. */
static const struct size_hist *cap_hist(const struct site_facts *f)
{
	return f->cap.total > 0 ? &f->cap : &f->req;
}

bool advise_cap_pays(const struct ap_advise_site *s)
{
	return s->capped && s->rc.peak_held_bytes * CAP_GAIN <= s->r.peak_held_bytes &&
	       s->rc.hit_rate >= GOOD_HIT_RATE;
}

uint64_t advise_pick_cap(const struct site_facts *f, double gets)
{
	const struct size_hist *h = cap_hist(f);
	double max = h->max, p90 = size_hist_quantile(h, 0.9);
	if (gets <= 0 || p90 <= 0 || max < SKEW_FACTOR * p90)
		return 0;
	uint64_t cap = pow2_ceil(4 * p90);
	if (cap < MIN_CAP)
		cap = MIN_CAP;
	return (double)cap < max ? cap : 0;
}

/* Clusters of capacities: runs of non-empty buckets whose neighbours are
 * less than CLASS_RATIO apart. Fills the upper size of each cluster with at
 * least CLASS_SHARE of the objects; returns how many. */
static size_t size_classes(const struct site_facts *f, uint64_t *classes, size_t max)
{
	const struct size_hist *h = cap_hist(f);
	size_t n = 0;
	double w = 0, last = 0;
	for (unsigned b = 0; b <= SIZE_BUCKETS; b++) {
		bool end = b == SIZE_BUCKETS;
		if (!end && h->w[b] <= 0)
			continue;
		double v = end ? 0 : size_bucket_value(b);
		if (w > 0 && (end || v >= CLASS_RATIO * last)) {
			if (w >= CLASS_SHARE * h->total && n < max)
				classes[n++] = pow2_ceil(last);
			w = 0;
		}
		if (end)
			break;
		w += h->w[b];
		last = v;
	}
	return n;
}

void ap_advise_format_duration(char *out, size_t len, double ns)
{
	double a = fabs(ns);
	if (a >= 1e9)
		snprintf(out, len, "%.3gs", ns / 1e9);
	else if (a >= 1e6)
		snprintf(out, len, "%.3gms", ns / 1e6);
	else if (a >= 1e3)
		snprintf(out, len, "%.3gus", ns / 1e3);
	else
		snprintf(out, len, "%.0fns", ns);
}

/* "s" unless n is 1 (as printed with %.0f). */
static const char *plural(double n)
{
	return n >= 0.5 && n < 1.5 ? "" : "s";
}

static void fmt_bytes(char *out, size_t len, double b)
{
	ap_format_bytes(out, len, b);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	struct ap_buf b = AP_BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	char tmp[1024];
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	ap_buf_addstr(&b, tmp);
	return ap_buf_detach(&b, NULL);
}

/* A --rate that gives about WANT_SAMPLES samples at a site of n objects
 * of mean size `size` (a sample of size s is taken with probability
 * 1 - exp(-s/R)); 0 when only --all would. Never the trace's own `rate`
 * or above: where the sizes are skewed (git's 147-byte median and 1 MiB
 * blocks, 3.2 kB on average) the mean makes every small object look
 * sampled, and the rate would be larger than the one that left the count
 * uncertain. The count's relative error, `err`, is that of its small
 * objects, whose weights R/s make it grow as sqrt(R): the rate that
 * brings it to 1/sqrt(WANT_SAMPLES) is rate * (1/WANT_SAMPLES) / err^2. */
static uint64_t rate_for(double n, double size, double err, uint64_t rate)
{
	if (n <= WANT_SAMPLES || size <= 0)
		return 0;
	double r = -size / log1p(-WANT_SAMPLES / n);
	if (rate > 1) {
		if (err > 0)
			r = fmin(r, (double)rate / WANT_SAMPLES / (err * err));
		r = fmin(r, (double)rate / 2);
	}
	uint64_t p = 1;
	while ((double)(p * 2) <= r && p < (UINT64_C(1) << 40))
		p *= 2;
	return p >= 256 ? p : 0;
}

/* How a site's objects grow, after "by", for people. */
static const char *grow_how(const struct ap_advise_site *s)
{
	if (s->copy_share < 0.9)
		return ap_advise_growth_how(s);
	return "copy (a new block, the old one copied into it and freed, as std::string and "
	       "std::vector grow)";
}

/* A site whose objects grow by copy: what its pool is. */
static void by_copy_words(struct ap_buf *t, const struct ap_advise_site *s)
{
	if (ap_advise_by_copy(s) && s->r.gets > 0)
		ap_buf_addstr(t, " Its blocks are one object's, grown by copy: a pool here is of that "
			      "object (the string, vector or buffer that owns them), cleared on reuse "
			      "so that it keeps its capacity, not of its blocks (allocprof try can only "
			      "pool blocks).");
}

/* A site whose objects grow by copy, measured: what the replay made of a
 * growth and what it did not. It makes each growth's calls and copy (a
 * malloc, the old block's bytes copied, a free: measure/runner.c), and
 * the pooled object within its capacity makes none; the container's own
 * code for a growth (libstdc++'s _M_realloc_insert or _M_mutate and
 * _M_create, operator new and delete around malloc and free, the branch
 * that finds the capacity short) is the program's, which the replay does
 * not run, and an object reused with its capacity skips it too.
 * bench/twins/README.md, session 33: vecgrow and strcat saved some 20 ns
 * a growth more than their replays (callgrind: 55 instructions a growth
 * in vecgrow's _M_realloc_insert alone, beside malloc, free and the
 * copy, whose instructions the replay's baseline makes one for one). */
static void growth_code_words(struct ap_buf *t, const struct ap_advise_site *s)
{
	if (s->measured && ap_advise_by_copy(s) && s->r.reallocs_avoided >= 0.5 && s->m.saved_ns > 0)
		ap_buf_addstr(t, " The replay measured makes each growth's calls and copy; the "
			      "container's own code for a growth (libstdc++'s _M_realloc_insert or "
			      "_M_mutate, operator new and delete; vfprintf's for asprintf's buffer), "
			      "which a reused object skips too, "
			      "is the program's and is not replayed: the program may save more than "
			      "measured (bench/twins' vecgrow and strcat: some 20 ns a growth).");
}

/* A site whose objects come aligned, measured: glibc makes an aligned
 * block by splitting a larger chunk and freeing what is left either
 * side, so each new one lands elsewhere in the heap, where a pooled one
 * is reused in place (bench/twins' alnbuf, 16-192 KiB from
 * aligned_alloc(64), a quarter written: over 10,000 requests 317
 * addresses across 3.3 MiB against 18 within 2 KiB for malloc's; the
 * twin saved 213-243 ms, its replay 43, cachegrind 1.38 M against 0.58 M
 * L1 write misses at equal instructions). The replay writes a line and a
 * byte a page of each block: the cache misses of a program writing much
 * of a block that moved are not in it. */
#define ALIGNED_SHARE 0.5
static void aligned_words(struct ap_buf *t, const struct ap_advise_site *s)
{
	if (s->measured && s->aligned_share >= ALIGNED_SHARE && s->r.gets - s->r.misses > 0 &&
	    s->p50_size >= 4096)
		ap_buf_addf(t, " Its objects are aligned (%.0f%%: posix_memalign, aligned_alloc): glibc "
			    "carves each from a larger chunk, so a new one lands elsewhere in the heap, "
			    "where a pooled one is reused in place; the replay writes a line and a byte "
			    "a page of each block, so the cache misses of a program that writes much of "
			    "each new block are not in the saving measured: the program may save more "
			    "(bench/twins' alnbuf, a quarter of each block written, saved 5 times its "
			    "replay's).",
			    100 * s->aligned_share);
}

/* A site whose objects shrink by realloc, measured with a saving: the
 * pool measured keeps an object at its capacity and makes no realloc
 * within it (measure/runner.c), so a shrink to fit is not made and what
 * the program keeps holds the whole block. bench/twins' shrinkfit (4-64
 * KiB buffers, 10-90 % written, shrunk to fit and kept): advise 128-180
 * ms, a twin that keeps the buffer unshrunk ~175 ms at 2.7 times the
 * peak RSS, and one that copies the result out to its size and pools the
 * buffer -2 [-149, 36] ms. */
#define SHRINK_SHARE 0.5
static void shrink_words(struct ap_buf *t, const struct ap_advise_site *s)
{
	if (!s->measured || s->shrink_share < SHRINK_SHARE || s->m.saved_ns <= 0 ||
	    s->r.gets - s->r.misses <= 0)
		return;
	ap_buf_addf(t, " Its objects are shrunk by realloc (%.0f%% of their reallocs make them "
		    "smaller): the pool measured keeps each at the capacity it had and skips the "
		    "shrink, so what the program keeps of an object holds its whole block; a pool "
		    "of the buffer that copies the result out to its size instead saves the "
		    "allocation and pays a copy, and may save nothing (bench/twins' shrinkfit).",
		    100 * s->shrink_share);
}

/* A measured pool at a site that is the program's call of a C library
 * (via opendir, via open_memstream): the blocks are the library's to
 * allocate, so a pool there is a change of the call, whose own code the
 * replay does not have. bench/twins' memstream: a pool of
 * open_memstream's buffer measured 28-33 ms of 1.5 s; its twin, which
 * writes the report with vsnprintf into a pooled buffer instead, -53 to
 * +58 ms (vsnprintf's FILE set up at every line). */
static void via_words(struct ap_buf *t, const struct ap_advise_site *s)
{
	if (!s->measured || !s->via || !strncmp(s->via, "std::", 5) ||
	    (s->verdict != AP_VERDICT_POOL && s->verdict != AP_VERDICT_POOL_CAP &&
	     s->verdict != AP_VERDICT_SIZE_CLASSES))
		return;
	ap_buf_addf(t, " The blocks are allocated inside %s, the library's code: a pool here means "
		    "keeping what the call made for the next request (a DIR rewound, a stream's "
		    "buffer kept) or calling a function that takes your pooled buffer instead; the "
		    "saving measured is the allocator's, and the code of such a change is not in it.",
		    s->via);
}

/* A site whose objects come from calloc, measured: the pool measured
 * hands a block back as the program left it (measure/runner.c). */
#define CALLOC_SHARE 0.5
static void calloc_words(struct ap_buf *t, const struct ap_advise_site *s)
{
	if (s->measured && s->calloc_share >= CALLOC_SHARE && s->r.gets - s->r.misses > 0)
		ap_buf_addf(t, " Its objects come from calloc (%.0f%%): the pool measured hands a "
			    "block back as the program left it, not cleared; clear what your code "
			    "reads of it (clearing it whole at every reuse costs what calloc's "
			    "zeroing costs now, and `allocprof try` clears it whole).",
			    100 * s->calloc_share);
}

/* "24B", or "16B that grow to 2kB (7 reallocs each)" (or "growths"). */
static void object_words(char *out, size_t len, const struct ap_advise_site *s)
{
	char b1[32], b2[32];
	fmt_bytes(b1, sizeof(b1), s->p50_size);
	if (s->reallocs_per_object >= 0.5 && s->p50_cap > s->p50_size) {
		fmt_bytes(b2, sizeof(b2), s->p50_cap);
		snprintf(out, len, "%s that grow to %s (%.2g %s%s each)", b1, b2, s->reallocs_per_object,
			 ap_advise_growth_noun(s), plural(s->reallocs_per_object));
	} else {
		snprintf(out, len, "%s", b1);
	}
}

/* How often requests come, for people: "every 3.4ms, 200 cycles apart". */
static void spacing_words(char *out, size_t len, const struct ap_advise_site *s,
			  const struct ap_advice *a)
{
	char d1[32], d2[32];
	const struct ap_replay_result *r = &s->r;
	double apart = r->gaps > 0 ? r->gap_cycles / r->gaps : 0;
	ap_advise_format_duration(d1, sizeof(d1), s->mean_gap_ns);
	ap_advise_format_duration(d2, sizeof(d2), a->mean_cycle_ns);
	if (s->mean_gap_ns > 0)
		snprintf(out, len, "Requests come every %s, %.3g collection cycles apart on average "
			 "(a cycle every %s)", d1, apart, d2);
	else
		snprintf(out, len, "Requests come %.3g collection cycles apart on average "
			 "(a cycle every %s)", apart, d2);
}

/* No verdict from too few samples: say so, and the rate that would give
 * one. */
static void judge_unsure(const struct ap_advice *a, struct ap_advise_site *s)
{
	const struct ap_replay_result *r = &s->r;
	char b1[32], b2[32];
	double hr = r->hit_rate * 100;
	double n = s->alloc_objects > 0 ? s->alloc_objects : r->gets;
	s->suggest_rate = rate_for(n, s->alloc_space / (n > 0 ? n : 1), s->rel_error, a->rate);
	s->verdict = AP_VERDICT_UNSURE;
	if (s->suggest_rate) {
		fmt_bytes(b1, sizeof(b1), (double)s->suggest_rate);
		snprintf(b2, sizeof(b2), "--rate %llu", (unsigned long long)s->suggest_rate);
		s->reasons = xasprintf("Only %llu sample%s here (+-%.0f%%): too few to judge a pool "
				       "(the replay says hit rate %.0f%%). Record with %s (one sample "
				       "per %s: its count then within about +-%.0f%%) or --all to "
				       "decide.",
				       (unsigned long long)s->samples, plural((double)s->samples),
				       100 * s->rel_error, hr, b2, b1, 100 / sqrt(WANT_SAMPLES));
	} else {
		s->reasons = xasprintf("Only %llu sample%s here (+-%.0f%%): too few to judge a pool "
				       "(the replay says hit rate %.0f%%). Record with --all to decide.",
				       (unsigned long long)s->samples, plural((double)s->samples),
				       100 * s->rel_error, hr);
	}
}

/* "pool with cap 64kB", "size classes 1kB, 64kB", "see SITE", or the
 * verdict's name. */
/* The site a verdict "see SITE" names: its id, or UINT32_MAX. */
static uint32_t see_site(const struct ap_advise_site *s)
{
	if (s->verdict != AP_VERDICT_ELSEWHERE)
		return UINT32_MAX;
	if (s->born_at)
		return s->born_site;
	return s->births_seen && s->grows_at ? s->grows_site : UINT32_MAX;
}

static void set_verdict_text(struct ap_advise_site *s)
{
	char b1[32];
	struct ap_buf t = AP_BUF_INIT;
	ap_buf_addstr(&t, ap_verdict_name(s->verdict));
	if (s->verdict == AP_VERDICT_ELSEWHERE) {
		ap_buf_reset(&t);
		if (s->born_at)
			ap_buf_addf(&t, "see %s", s->born_at);
		else if (s->births_seen && s->grows_at)
			ap_buf_addf(&t, "see %s", s->grows_at);
		else if (s->births_seen)
			ap_buf_addstr(&t, "see where they grow");
		else
			ap_buf_addstr(&t, "see where they are born");
	} else if (s->verdict == AP_VERDICT_POOL_CAP) {
		fmt_bytes(b1, sizeof(b1), (double)s->cap);
		ap_buf_addf(&t, " %s", b1);
	} else if (s->verdict == AP_VERDICT_SIZE_CLASSES) {
		for (size_t i = 0; i < s->nclasses; i++) {
			fmt_bytes(b1, sizeof(b1), (double)s->classes[i]);
			ap_buf_addf(&t, "%s%s", i ? ", " : " ", b1);
		}
		if (s->round_up)
			ap_buf_addstr(&t, " (rounded up)");
	}
	free(s->verdict_text);
	s->verdict_text = ap_buf_detach(&t, NULL);
}

/* A pool cheaper a hit than malloc and free, and dearer in all: the
 * requests that find it empty or an object too small pay the pool's work
 * on top of malloc's. */
static char *dearer_in_all(const struct ap_advise_site *s, const char *obj)
{
	char d1[32];
	ap_advise_format_duration(d1, sizeof(d1), -s->r.time_saved_ns);
	return xasprintf("Objects of %s cost %.0fns through malloc and free here and %.0fns through a "
			 "pool's get and put, but %.0f request%s find%s the pool empty and %.0f an "
			 "object too small, and pay the pool's work on top of malloc's: the pool would "
			 "cost more than it saves (about %s).", obj, s->life_cost_ns, s->pool_cost_ns,
			 s->r.misses, plural(s->r.misses), *plural(s->r.misses) ? "" : "s", s->r.small_hits,
			 d1);
}

/* A pool dearer a hit than malloc and free. */
static char *costs_more(const struct ap_advise_site *s, const char *obj)
{
	char d1[32];
	ap_advise_format_duration(d1, sizeof(d1), -s->r.time_saved_ns);
	return xasprintf("Objects of %s cost %.0fns through malloc and free here, against %.0fns for a "
			 "pool's get and put: the pool would cost more than it saves (about %s): keep "
			 "malloc.", obj, s->life_cost_ns, s->pool_cost_ns, d1);
}

/* Objects up to SMALL_MAX whose pool saves, in all, less a request than
 * its own get and put (`net` ns a request): why the difference of a hit
 * does not count. */
static char *small_saving(const struct ap_advise_site *s, const char *obj, double net)
{
	const struct ap_replay_result *r = &s->r;
	char b1[32], why[256] = "";
	fmt_bytes(b1, sizeof(b1), SMALL_MAX);
	bool empty = r->misses >= 0.5, small = r->small_hits >= 0.5;
	if (empty || small) {
		double n = empty ? r->misses : r->small_hits;
		snprintf(why, sizeof(why), ", but %.0f of its %.0f requests find%s %s", n, r->gets,
			 *plural(n) ? "" : "s", empty ? "the pool empty" : "an object too small");
		if (empty && small)
			snprintf(why + strlen(why), sizeof(why) - strlen(why), " and %.0f an object too small",
				 r->small_hits);
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 ", and pay the pool's work on top of malloc's");
	}
	return xasprintf("Objects of %s cost %.0fns through malloc and free here and %.0fns through a "
			 "pool's get and put%s: in all a pool would save about %.0fns a request, less "
			 "than its own get and put. For objects up to %s, where malloc is at its "
			 "cheapest, a saving under the pool's own cost is within the cost model's error "
			 "(a get and put priced twice as high would make it a loss): keep malloc.",
			 obj, s->life_cost_ns, s->pool_cost_ns, why, net, b1);
}

/* The run's time a saving is a share of, before any measurement: its CPU
 * time (END's, recording included) where the trace says it, else the
 * wall time. */
static double model_cpu(const struct ap_advice *a)
{
	return a->program_cpu_ns ? (double)a->program_cpu_ns : (double)a->duration_ns;
}

/* A pool that hits but saves, by the cost model, under MIN_SAVE_SHARE of
 * the run. In a sampled trace, which no replay measures, say what the
 * model cannot see where it could change that: page faults, were glibc to
 * give the avoided blocks' pages back between uses (zlib's 4 x 64 KiB a
 * request: 154 us by the model, 136-202 ms measured). */
static char *small_estimate(const struct ap_advice *a, const struct ap_advise_site *s, double hr)
{
	const struct ap_replay_result *r = &s->r;
	char d1[32], d2[32], d3[32], more[320] = "";
	double cpu = model_cpu(a), most = advise_generous_ns(r);
	ap_advise_format_duration(d1, sizeof(d1), r->time_saved_ns);
	ap_advise_format_duration(d2, sizeof(d2), cpu);
	if (a->sampled && most >= MIN_SAVE_SHARE * cpu) {
		ap_advise_format_duration(d3, sizeof(d3), most);
		snprintf(more, sizeof(more), " The model cannot see page faults: were glibc to give "
			 "these blocks' pages back between uses, each 4 KiB a pool keeps would save one, "
			 "up to about %s in all. A sampled trace cannot be replayed: record with --all "
			 "and advise measures it.", d3);
	}
	return xasprintf("A pool would hit %.0f%% of requests but save only about %s of the run's %s%s "
			 "(%.2g%%), under the %.0f%% worth the risks of pooling (stale data, use after "
			 "return).%s", hr, d1, d2, a->program_cpu_ns ? " of CPU time" : "",
			 100 * r->time_saved_ns / cpu, 100 * MIN_SAVE_SHARE, more);
}

/* A growth site's objects are "born at" one site when nine in ten are. */
#define BORN_MOST 0.9

void advise_judge(const struct ap_advice *a, struct ap_advise_site *s,
		  const struct site_facts *f, const struct ap_advise_options *o)
{
	(void)o;
	const struct ap_replay_result *r = &s->r;
	char b1[32], b2[32], b3[32], b4[32], d1[32], d2[32], obj[160], sp[256];
	double hr = r->hit_rate * 100;
	bool few = a->sampled && s->rel_error > 1 / sqrt((double)MIN_SAMPLES);
	object_words(obj, sizeof(obj), s);
	free(s->reasons);	/* (judged again: a test's second case) */
	s->reasons = NULL;

	/* The order is the order of the reasons' force: first what makes a
	 * pool impossible here (nothing born here, too little known, objects
	 * kept, the pool empty at each request), then what makes it not worth
	 * it (cheaper through malloc, too small a share), then the kinds of
	 * pool. */
	if (r->gets <= 0) {
		s->verdict = AP_VERDICT_ELSEWHERE;
		if (s->born_at && s->born_share < BORN_MOST)
			s->reasons = xasprintf("Objects born elsewhere are resized here by %s (grown or "
					       "shrunk), %.0f%% of them born at %s, the others at other sites: "
					       "a pool belongs where they are born (see those sites), and keeps "
					       "them at the largest size they reach.", grow_how(s),
					       100 * s->born_share, s->born_at);
		else if (s->born_at)
			s->reasons = xasprintf("Objects born at %s are resized here by %s (grown or "
					       "shrunk): a pool belongs where they are born (see that site), and "
					       "keeps them at the largest size they reach.", s->born_at, grow_how(s));
		else if (a->sampled && s->births_seen)
			s->reasons = xasprintf("The %llu sample%s here saw the birth of objects that later grow "
					       "by realloc%s%s; an object is counted once, by its last block, so "
					       "these are counted where their growth was sampled.",
					       (unsigned long long)s->births_seen,
					       plural((double)s->births_seen), s->grows_at ? " at " : "",
					       s->grows_at ? s->grows_at : "");
		else
			s->reasons = xasprintf("Only %ss of objects born elsewhere%s: a pool belongs where "
					       "they are born.", ap_advise_growth_noun(s),
					       a->sampled ? " (no sample saw where)" : "");
	} else if (few && s->life_share < MIN_GAIN_SHARE) {
		fmt_bytes(b1, sizeof(b1), s->life_share * a->total_alloc_space);
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		s->reasons = xasprintf("The site's objects take about %s, %.2g%% of the program's bytes "
				       "(from %llu sample%s): too little to be worth the risks of pooling.",
				       b1, 100 * s->life_share, (unsigned long long)s->samples,
				       plural((double)s->samples));
	} else if (few) {
		judge_unsure(a, s);
	} else if (r->escaped >= ESCAPE_SHARE * r->gets) {
		s->verdict = AP_VERDICT_ESCAPES;
		s->reasons = xasprintf("%.0f%% of the objects are never freed: they are results the program keeps, "
				       "so nothing comes back to a pool.", 100 * r->escaped / r->gets);
	} else if (r->gets < 1.5) {
		s->verdict = AP_VERDICT_TOO_RARE;
		s->reasons = xasprintf("One request in the whole run: a pool would have nothing to hand back.");
	} else if (r->gets - r->misses < 0.5) {
		/* (no hit: no kind of pool to speak of, nor a share of hits) */
		s->verdict = AP_VERDICT_TOO_RARE;
		s->reasons = xasprintf("No request of the %.0f would find a pooled object: each comes while "
				       "the objects before it are still in use, or after the pool has "
				       "dropped them.", r->gets);
	} else if (r->hit_rate < GOOD_HIT_RATE && r->gaps > 0 && r->far_gaps >= RARE_SHARE * r->gaps) {
		spacing_words(sp, sizeof(sp), s, a);
		s->verdict = AP_VERDICT_TOO_RARE;
		s->reasons = xasprintf("%s: a pooled object is dropped at the second cycle after its Put, so "
				       "the pool is empty at %.0f%% of requests (hit rate %.0f%%).",
				       sp, 100 * r->far_gaps / r->gaps, hr);
	} else if (s->p90_cap <= TINY_MAX && s->reallocs_per_object < 0.5) {
		s->verdict = AP_VERDICT_TOO_SMALL;
		if (s->life_cost_ns <= s->pool_cost_ns)
			s->reasons = xasprintf("Objects of %s are what glibc's malloc already keeps in a "
					       "per-thread cache (tcache): malloc and free cost %.0fns here, "
					       "no more than the %.0fns of a pool's get and put: keep malloc.",
					       obj, s->life_cost_ns, s->pool_cost_ns);
		else
			s->reasons = xasprintf("Objects of %s are what glibc's malloc already keeps in a "
					       "per-thread cache (tcache), at its cheapest. The cost model "
					       "prices malloc and free at %.0fns here and a pool's get and put "
					       "at %.0fns, but that is the pool's cheapest path, its thread's "
					       "private slot of one object; the others go through a locked "
					       "deque, and pools of objects this small, measured against "
					       "hand-pooled twins, saved nothing or cost more: keep malloc.",
					       obj, s->life_cost_ns, s->pool_cost_ns);
	} else if (s->p50_cap <= SMALL_MAX && r->time_saved_ns < (SMALL_FACTOR - 1) * s->pool_cost_ns * r->gets) {
		double net = r->time_saved_ns / r->gets;
		if (net <= 0) {
			/* (a loss is a loss at any size: not "too small") */
			s->verdict = AP_VERDICT_COSTS_MORE;
			s->reasons = s->life_cost_ns > s->pool_cost_ns ? dearer_in_all(s, obj) : costs_more(s, obj);
		} else {
			s->verdict = AP_VERDICT_TOO_SMALL;
			s->reasons = small_saving(s, obj, net);
		}
	} else if (s->life_share < MIN_GAIN_SHARE) {
		fmt_bytes(b1, sizeof(b1), s->life_share * a->total_alloc_space);
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		s->reasons = xasprintf("The site's objects take %s, %.2g%% of the program's bytes: too little to be "
				       "worth the risks of pooling (stale data, use after return).",
				       b1, 100 * s->life_share);
	} else if (r->hit_rate >= GOOD_HIT_RATE && r->time_saved_ns > 0 &&
		   r->time_saved_ns < MIN_SAVE_SHARE * model_cpu(a)) {
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		s->reasons = small_estimate(a, s, hr);
	} else if (a->sampled && s->samples < MIN_SAMPLES && !s->exact) {
		/* Certain counts (big blocks), but no pool from a handful;
		 * unless every block was sampled: then it is all there is. */
		judge_unsure(a, s);
	} else {
		uint64_t cl[4];
		size_t ncl = size_classes(f, cl, 4);
		bool bloated = advise_cap_pays(s);
		if (ncl >= 2 && r->small_hits >= 0.1 * (r->gets - r->misses)) {
			s->verdict = AP_VERDICT_SIZE_CLASSES;
			memcpy(s->classes, cl, ncl * sizeof(*cl));
			s->nclasses = ncl;
			fmt_bytes(b1, sizeof(b1), (double)cl[0]);
			fmt_bytes(b2, sizeof(b2), (double)cl[ncl - 1]);
			s->reasons = xasprintf("Objects cluster at %zu sizes (%s ... %s), each common: one pool hands "
					       "small objects to big requests (%.0f%% of hits too small); use a pool per class.",
					       ncl, b1, b2, 100 * r->small_hits / (r->gets - r->misses));
		} else if (bloated) {
			fmt_bytes(b1, sizeof(b1), r->peak_held_bytes);
			fmt_bytes(b2, sizeof(b2), s->rc.peak_held_bytes);
			fmt_bytes(b3, sizeof(b3), (double)s->cap);
			s->verdict = AP_VERDICT_POOL_CAP;
			if (s->max_cap > 1.5 * s->max_size) {
				fmt_bytes(b4, sizeof(b4), s->max_cap);
				fmt_bytes(d1, sizeof(d1), s->p90_cap);
				s->reasons = xasprintf("A few objects grow by %s to up to %s (90%% stay within %s) "
						       "and, taken and returned again and again, make the pool hold %s "
						       "at peak; dropping objects above %s on Put holds %s and still "
						       "hits %.0f%%.", ap_advise_growth_how(s), b4,
						       d1, b1, b3, b2, s->rc.hit_rate * 100);
			} else {
				fmt_bytes(b4, sizeof(b4), s->max_size);
				fmt_bytes(d1, sizeof(d1), s->p90_size);
				s->reasons = xasprintf("A few requests of up to %s (90%% are within %s) make the pool "
						       "hold %s at peak; dropping objects above %s on Put holds %s and "
						       "still hits %.0f%%.", b4, d1, b1, b3, b2, s->rc.hit_rate * 100);
			}
		} else if (r->hit_rate >= GOOD_HIT_RATE && r->time_saved_ns > 0) {
			fmt_bytes(b1, sizeof(b1), r->bytes_avoided);
			fmt_bytes(b2, sizeof(b2), r->peak_held_bytes);
			ap_advise_format_duration(d1, sizeof(d1), r->time_saved_ns);
			s->verdict = AP_VERDICT_POOL;
			char re[160] = "";
			if (r->reallocs_avoided >= 0.5) {
				fmt_bytes(b3, sizeof(b3), s->p50_cap);
				snprintf(re, sizeof(re), " and %.0f %s%s (a pooled object keeps the %s it grew "
					 "to, so it grows once, not at every request)",
					 r->reallocs_avoided, ap_advise_growth_noun(s),
					 plural(r->reallocs_avoided), b3);
			}
			s->reasons = xasprintf("%.0f%% of requests would reuse a pooled object, avoiding %.0f "
					       "allocation%s%s (%s, about %s); the pool would hold %s at peak.",
					       hr, r->allocs_avoided, plural(r->allocs_avoided), re, b1, d1, b2);
		} else if (r->hit_rate >= GOOD_HIT_RATE) {
			/* (no saving: time_saved_ns > 0 is a pool above) */
			s->verdict = AP_VERDICT_COSTS_MORE;
			s->reasons = s->life_cost_ns > s->pool_cost_ns ? dearer_in_all(s, obj) : costs_more(s, obj);
		} else {
			ap_advise_format_duration(d1, sizeof(d1), s->mean_life_ns);
			spacing_words(sp, sizeof(sp), s, a);
			s->verdict = AP_VERDICT_LITTLE_GAIN;
			s->reasons = xasprintf("Only %.0f%% of requests would find a pooled object (objects live %s). "
					       "%s: the pool would mostly add work.", hr, d1, sp);
		}
	}
	(void)d2;

	/* Where the objects grow, or are born. */
	struct ap_buf t = AP_BUF_INIT;
	ap_buf_addstr(&t, s->reasons);
	if (s->verdict != AP_VERDICT_ELSEWHERE) {
		if (a->sampled && r->gets > 0 && s->adopted >= 0.1 * r->gets) {
			ap_buf_addf(&t, " %.0f%% of these objects were first seen growing by realloc%s%s "
				    "(their birth was not sampled): the reallocs before a buffer's first "
				    "sample are not seen, so the reallocs avoided are a lower bound.",
				    100 * s->adopted / r->gets, s->grows_at ? " at " : "",
				    s->grows_at ? s->grows_at : "");
		} else if (a->sampled && r->gets > 0 && s->seen_growing >= 0.5 * r->gets) {
			if (s->born_at)
				ap_buf_addf(&t, " These are buffers that grow here, born elsewhere (at %s, "
					    "where the samples that saw a birth put it).", s->born_at);
			else
				ap_buf_addf(&t, " These are buffers that grow here, born elsewhere (no sample "
					    "saw where).");
			ap_buf_addf(&t, " Reallocs before a buffer's first sample are not seen: the "
				    "reallocs avoided are a lower bound.");
		} else if (s->grows_at) {
			ap_buf_addf(&t, " Its objects grow by %s at %s (%.2g %s%s per object).",
				    grow_how(s), s->grows_at, s->reallocs_per_object,
				    ap_advise_growth_noun(s), plural(s->reallocs_per_object));
		}
		by_copy_words(&t, s);
	}
	free(s->reasons);
	s->reasons = ap_buf_detach(&t, NULL);

	set_verdict_text(s);
}

void ap_advise_refer(struct ap_advice *a, size_t shown)
{
	for (size_t i = 0; i < shown && i < a->nsites; i++) {
		struct ap_advise_site *s = &a->sites[i];
		uint32_t id = see_site(s);
		if (id == UINT32_MAX)
			continue;
		size_t j = 0;
		while (j < a->nsites && a->sites[j].site_id != id)
			j++;
		if (j < shown)
			continue;
		set_verdict_text(s);
		struct ap_buf t = AP_BUF_INIT;
		ap_buf_addstr(&t, s->verdict_text);
		if (j < a->nsites)
			ap_buf_addf(&t, " (shown with -n %zu)", j + 1);
		else
			ap_buf_addstr(&t, " (shown with --min-share 0 -n 0)");
		free(s->verdict_text);
		s->verdict_text = ap_buf_detach(&t, NULL);
	}
}

/* "`allocprof try --site NAME`": the site by its name, shell-quoted, as
 * try takes it (its site_id, which the text gave, reads as the rank
 * advise numbers its sites by: a user typed --site 2 for the second). */
static void try_hint(struct ap_buf *b, const struct ap_advise_site *s)
{
	ap_buf_addstr(b, "`allocprof try --site ");
	ap_buf_add_shell_word(b, s->name);
	ap_buf_addstr(b, "`");
	if (s->own_list)
		/* (try runs vpool: the Rust site's own list is the
		 * program's to write) */
		ap_buf_addstr(b, " (with vpool, not the free list measured here)");
}

static bool good(const struct ap_advise_site *s)
{
	return s->verdict == AP_VERDICT_POOL || s->verdict == AP_VERDICT_POOL_CAP ||
	       s->verdict == AP_VERDICT_SIZE_CLASSES;
}

/* The share of the faults a baseline of `base` faults made beyond the
 * recorded run's `prog` that is priced: none at prog, all from
 * EXCESS_MORE times it and EXCESS_MIN more, linear between. */
static double excess_weight(double base, double prog)
{
	double full = EXCESS_MORE * prog + EXCESS_MIN;
	if (!(base > prog))
		return 0;
	return base >= full ? 1 : (base - prog) / (full - prog);
}

/* The faults priced of a baseline that made `base` where the recorded
 * run made `prog` and the pooled replay `pool`: those beyond the more of
 * the two, on the ramp. */
static double excess_priced(double base, double prog, double pool)
{
	double beyond = base - fmax(prog, pool);
	return beyond > 0 ? excess_weight(base, prog) * beyond : 0;
}

/* The sites a pool pays at first, measured before estimated, each by the
 * time saved (measured, else the model's); then the others, measured
 * first, by bytes. */
static int site_cmp(const void *x, const void *y)
{
	const struct ap_advise_site *a = x, *b = y;
	if (good(a) != good(b))
		return good(a) ? -1 : 1;
	if (a->measured != b->measured)
		return a->measured ? -1 : 1;
	if (good(a)) {
		double ta = ap_advise_site_saved_ns(a), tb = ap_advise_site_saved_ns(b);
		if (ta != tb)
			return ta > tb ? -1 : 1;
	}
	if (a->alloc_space != b->alloc_space)
		return a->alloc_space > b->alloc_space ? -1 : 1;
	return strcmp(a->name, b->name);
}

void advise_rank(struct ap_advice *a)
{
	qsort(a->sites, a->nsites, sizeof(*a->sites), site_cmp);
}

/* Whether the measured text says the page faults of both ways: when they
 * are a quarter apart and more than a hundred. */
static bool faults_said(const struct ap_run_cost *B, const struct ap_measured *m)
{
	double fb = B->minflt, fp = m->cost.minflt;
	return fb > 100 && (fp < 0.8 * fb || fp > 1.25 * fb);
}

/* Whether most of a saving is page faults the pool saves: those the
 * pooled runs made fewer than the baseline's, at what one costs the
 * runner (its fault probe), half the saving or more, where the baseline
 * faulted as the recorded run did (none beyond it taken off). Such a
 * saving is the faults' price in a process that does nothing else;
 * the program pays more for each (docs/pool-model.md, §9: bench/twins'
 * xzreq, 1.99 us of its CPU time a fault against its replay's 1.46 in
 * session 24, 3.8 against 2.9 on a busier machine in session 33). */
#define FAULTS_MOST_SHARE 0.5
static bool faults_most(const struct ap_advice *a, const struct ap_run_cost *B,
			const struct ap_advise_site *s)
{
	const struct ap_measured *m = &s->m;
	double fewer = B->minflt - m->cost.minflt;
	double share = a->measure_share > 0 && a->measure_share < 1 ? a->measure_share : 1;
	return m->saved_ns > 0 && B->fault_ns > 0 && s->excess_faults <= 0 && faults_said(B, m) &&
	       fewer / share * B->fault_ns >= FAULTS_MOST_SHARE * m->saved_ns;
}

/* "measured, 12 runs each way: a pool here saves 2.6ms of CPU time (2.1ms
 * to 3.1ms, 97% interval), 1.2% of the 210ms the program took" */
/* m's saving (or cost) into d1 and its interval into d2 and d3, each of
 * 32 bytes: a cost is said as a cost, its interval too. */
static void saving_words(const struct ap_measured *m, char *d1, char *d2, char *d3)
{
	ap_advise_format_duration(d1, 32, fabs(m->saved_ns));
	ap_advise_format_duration(d2, 32, m->saved_ns >= 0 ? m->low_ns : -m->high_ns);
	ap_advise_format_duration(d3, 32, m->saved_ns >= 0 ? m->high_ns : -m->low_ns);
}

/* Why a replay's heap was trimmed where the program's was not: with
 * threads, the order they took turns in; with one, the heap the
 * allocator's calls alone leave (the program's other memory, its stacks,
 * mappings and what ran before the trace began, is not replayed). */
static const char *trim_why(const struct ap_advice *a)
{
	return a->script_threads > 1 ? "how the replay's threads took turns decides it"
				     : "the replay makes the allocator's calls alone, in the program's "
				       "order, and its heap is not laid out exactly as the program's was";
}

void advise_saving_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_measured *m,
			 const char *what)
{
	char d1[32], d2[32], d3[32], d4[32];
	saving_words(m, d1, d2, d3);
	if (m->saved_ns >= 0)
		ap_buf_addf(b, "%s saves %s of CPU time", what, d1);
	else
		ap_buf_addf(b, "%s costs %s more CPU time", what, d1);
	ap_buf_addf(b, " (%s to %s, %.0f%% interval)", d2, d3, 100 * m->conf);
	if (a->program_cpu_est_ns) {
		char d5[32];
		ap_advise_format_duration(d4, sizeof(d4), (double)a->program_cpu_est_ns);
		ap_advise_format_duration(d5, sizeof(d5), (double)a->program_cpu_ns);
		if (a->program_cpu_est_ns > a->program_cpu_ns)
			/* the estimate's floor: the replay took longer than
			 * the whole recorded run (threads that wait for each
			 * other at handed-over blocks, more than the program's) */
			ap_buf_addf(b, ", %.2g%% of the ~%s of CPU time its replay takes (more than the "
				    "recorded run's %s, recording included)",
				    100 * fabs(m->saved_ns) / (double)a->program_cpu_est_ns, d4, d5);
		else
			ap_buf_addf(b, ", %.2g%% of the program's ~%s of CPU time (the recorded run's %s "
				    "less what recording cost on the replay)",
				    100 * fabs(m->saved_ns) / (double)a->program_cpu_est_ns, d4, d5);
	} else if (a->program_cpu_ns) {
		ap_advise_format_duration(d4, sizeof(d4), (double)a->program_cpu_ns);
		ap_buf_addf(b, ", %.2g%% of the %s of CPU time the recorded run took (recording included)",
			    100 * fabs(m->saved_ns) / (double)a->program_cpu_ns, d4);
	} else if (a->duration_ns) {
		ap_advise_format_duration(d4, sizeof(d4), (double)a->duration_ns);
		ap_buf_addf(b, ", %.2g%% of the run's %s (the trace does not hold its CPU time)",
			    100 * fabs(m->saved_ns) / (double)a->duration_ns, d4);
	}
}

void advise_excess_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_run_cost *B,
			 const struct advise_excess *x)
{
	char d6[32], d7[32], d8[32], d9[32];
	double prog = ap_advise_prog_faults(a);
	ap_advise_format_duration(d6, sizeof(d6), x->ns);
	ap_advise_format_duration(d7, sizeof(d7), B->fault_ns);
	ap_advise_format_duration(d8, sizeof(d8), x->lo_ns);
	ap_advise_format_duration(d9, sizeof(d9), x->hi_ns);
	ap_buf_addf(b, "; that is the replay's saving less %s (%s to %s, taken off the "
		    "interval's upper and lower end: from the fewest and the most faults of "
		    "its runs) for the %.0f page faults its baseline made beyond the recorded "
		    "run's %.0f (glibc trimmed the replay's heap where it did not trim the "
		    "program's: %s), at the %s one costs here, measured", d6, d8, d9,
		    x->faults, prog, trim_why(a), d7);
	double w = excess_weight(B->minflt, prog);
	if (w < 1)
		ap_buf_addf(b, ", %.0f%% of them counted (a baseline under %.3g times the run's "
			    "faults and %d more faults partly as the recording did)", 100 * w,
			    EXCESS_MORE, EXCESS_MIN);
	if (a->measure_share > 0 && a->measure_share < 1)
		ap_buf_addf(b, ", scaled with the saving to the whole run");
}

static void measured_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_advise_site *s)
{
	const struct ap_measured *m = &s->m;
	const struct ap_run_cost *B = ap_advise_site_base(a, s);
	char d4[32];
	if (s->own_list) {
		/* (ap_advise_site.own_list: a Rust site's pool is the
		 * program's own; vpool's figure is beside it) */
		ap_buf_addf(b, "Measured (the run's allocations replayed %u times each way, with and "
			    "without a pool here, the program's own: a free list of each thread's "
			    "spares, as a Rust program keeps them in a Vec, or a Vec<String> kept and "
			    "cleared; pool/vpool.h is C): ", m->rounds);
		advise_saving_words(b, a, m, "such a free list");
	} else {
		ap_buf_addf(b, "Measured (the run's allocations replayed %u times each way, with and "
			    "without a pool here): ", m->rounds);
		advise_saving_words(b, a, m, "a pool");
	}
	if (faults_said(B, m))
		ap_buf_addf(b, "; page faults %.0f against %.0f without it", m->cost.minflt,
			    B->minflt);
	if (faults_most(a, B, s)) {
		ap_advise_format_duration(d4, sizeof(d4), B->fault_ns);
		ap_buf_addf(b, ", which at the %s one costs here (the runner's probe) are most of the "
			    "saving; a fault costs a program more than its replay (the program's own "
			    "work around it leaves the kernel's path and the caches cold: bench/twins' "
			    "xzreq paid 1.3 times as much a fault, system and user time), so the "
			    "program may save more than measured", d4);
	}
	if (s->excess_faults > 0) {
		struct advise_excess x = { s->excess_faults, s->excess_faults_ns, s->excess_faults_ns_lo,
					   s->excess_faults_ns_hi };
		advise_excess_words(b, a, B, &x);
	}
	if (ap_run_faults_vary(B))
		ap_buf_addf(b, " (from %.0f to %.0f between runs: when glibc trims the heap depends on how "
			    "the threads interleave, and the saving with it; the interval says how much)",
			    B->minflt_lo, B->minflt_hi);
	ap_buf_addstr(b, ".");
}

/* The replay's result the measured pool is judged on: the capped one's
 * where the site was measured with its cap (advise_judge_measured). */
static const struct ap_replay_result *measured_result(const struct ap_advise_site *s)
{
	bool capped = s->verdict == AP_VERDICT_POOL_CAP || (!good(s) && advise_cap_pays(s));
	return capped && s->capped ? &s->rc : &s->r;
}

bool advise_larger_shape(const struct ap_advice *a, const struct ap_advise_site *s,
			 const struct ap_measured *m, const struct ap_run_cost *base)
{
	/* (classes rounded up won only where their blocks are not much
	 * larger than asked: advise_round_wins) */
	if (s->round_up)
		return false;
	const struct ap_replay_result *r = measured_result(s);
	double given = r->allocs_avoided > 0 ? r->hit_cap_bytes / r->allocs_avoided : 0;
	double asked = r->allocs_avoided > 0 ? r->alloc_bytes_avoided / r->allocs_avoided : 0;
	return asked > 0 && given >= LARGER_RATIO * asked &&
	       1024 * (m->cost.maxrss_kb - base->maxrss_kb) >= LARGER_MIN_BYTES &&
	       !(a->touch_share > 0 && a->touch_share < 1);
}

bool advise_round_fits(const struct ap_advise_site *s)
{
	/* (objects that grow are larger than their requests: classes of
	 * the requests' sizes are not theirs) */
	return s->nround_classes > 0 && s->round_ratio > 0 && s->round_ratio < LARGER_RATIO &&
	       s->verdict != AP_VERDICT_SIZE_CLASSES && s->reallocs_per_object < 0.5 &&
	       !ap_advise_by_copy(s);
}

/* "1KiB, 2KiB, 4KiB and 8KiB" */
static void classes_words(struct ap_buf *b, const uint64_t *classes, size_t n)
{
	char c[32];
	for (size_t i = 0; i < n; i++) {
		fmt_bytes(c, sizeof(c), (double)classes[i]);
		ap_buf_addf(b, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", c);
	}
}

/* m pays: its interval above zero, the saving MIN_SAVE_SHARE of the
 * program's CPU time at least */
static bool pays(const struct ap_advice *a, const struct ap_measured *m)
{
	return m->low_ns > 0 && m->saved_ns >= MIN_SAVE_SHARE * advise_program_cpu_ns(a);
}

bool advise_round_may_win(const struct ap_advice *a, const struct ap_advise_site *s)
{
	return s->round_state == AP_FL_MEASURED && s->measured && !s->round_up &&
	       advise_larger_shape(a, s, &s->m, &a->base) && pays(a, &s->rm);
}

void advise_round_wins(const struct ap_advice *a, struct ap_advise_site *s)
{
	if (!advise_round_may_win(a, s) || !s->round_whole || !pays(a, &s->rmw))
		return;
	const struct ap_replay_result *r = measured_result(s);
	double given = r->hit_cap_bytes / r->allocs_avoided, asked = r->alloc_bytes_avoided / r->allocs_avoided;
	char b1[32], b2[32], b3[32], d1[32], d2[32], d3[32];
	struct ap_buf t = AP_BUF_INIT;
	fmt_bytes(b1, sizeof(b1), given);
	fmt_bytes(b2, sizeof(b2), asked);
	fmt_bytes(b3, sizeof(b3), 1024 * (s->m.cost.maxrss_kb - a->base.maxrss_kb));
	char d4[32], d5[32], d6[32];
	saving_words(&s->m, d1, d2, d3);
	saving_words(&s->rm, d4, d5, d6);
	ap_buf_addstr(&t, "Size classes, each request rounded up to its class (");
	classes_words(&t, s->round_classes, s->nround_classes);
	ap_buf_addf(&t, "; a request above the last is malloc's): a pool per class, whose every "
		    "block serves every request of its class, handing out %.2g times the bytes asked "
		    "for, measured with their blocks written and read whole, every byte, as a program "
		    "writes and reads a record of the size it asks for (writing a line and a byte a "
		    "page of each new block, they measured %s %s, %s to %s). One pool for the site "
		    "keeps each object at the largest size it reached (one too small for a request is "
		    "dropped for a block of the request's size): its hits hand blocks of %s on "
		    "average for requests of %s, %.2g times as large, its replay's peak memory %s "
		    "above malloc's, and it measured %s %s (%s to %s), a line a page, in blocks a "
		    "program writing or reading them whole goes through that much more of. (The "
		    "counts above are that one pool's, by the model.)",
		    s->round_ratio, s->rm.saved_ns >= 0 ? "saving" : "costing", d4, d5, d6, b1, b2,
		    given / asked, b3, s->m.saved_ns >= 0 ? "saving" : "costing", d1, d2, d3);
	struct ap_measured one = s->m;
	s->mw = s->rm;
	s->m = s->rmw;
	s->mw_base = s->rmw_base;
	s->whole_measured = true;
	s->rm = one;
	s->round_up = true;
	s->verdict = AP_VERDICT_SIZE_CLASSES;
	s->nclasses = s->nround_classes;
	memcpy(s->classes, s->round_classes, s->nclasses * sizeof(*s->classes));
	free(s->reasons);
	s->reasons = ap_buf_detach(&t, NULL);
}

/* A site measured with its blocks written and read whole (s->m; the
 * first measurement, a line and a byte a page, in s->mw): why, and what
 * the other measured. */
static void whole_words(struct ap_buf *t, const struct ap_advice *a, const struct ap_advise_site *s,
			double given, double asked)
{
	char b1[32], b2[32], b3[32], b4[32], d1[32], d2[32], d3[32];
	const struct ap_measured *l = &s->mw;
	fmt_bytes(b1, sizeof(b1), given);
	fmt_bytes(b2, sizeof(b2), asked);
	fmt_bytes(b3, sizeof(b3), s->p50_size);
	fmt_bytes(b4, sizeof(b4), s->max_size);
	ap_buf_addf(t, " Measured with the site's blocks written and read whole, every byte, as a "
		    "program writes and reads a record or a message of the size it asks for: its "
		    "requests vary in size (half up to %s, the largest %s), the pool keeps each object "
		    "at the largest size it reached, and its hits hand blocks of %s on average for "
		    "requests of %s, %.2g times as large, ",
		    b3, b4, b1, b2, asked > 0 ? given / asked : 0);
	fmt_bytes(b1, sizeof(b1), 1024 * l->cost.maxrss_kb);
	fmt_bytes(b2, sizeof(b2), 1024 * a->base.maxrss_kb);
	saving_words(l, d1, d2, d3);
	ap_buf_addf(t, "a peak of %s against %s without the pool, which a program going through its "
		    "blocks goes through. A replay writing only a line and a byte a page of each new "
		    "block, as for other sites, measured the pool %s %s (%s to %s), which that "
		    "memory's cost is not in (bench/twins: records of 1-8KiB, each filled and "
		    "checksummed whole, whose hand-pooled twin costs 9-19%% more).",
		    b1, b2, l->saved_ns >= 0 ? "saving" : "costing", d1, d2, d3);
}

/* Whether a baseline's faults (B) beyond the recorded run's (prog_faults)
 * leave the saving of m open (FAULTS_MORE): the baseline faulted that
 * many times more, and m's pooled runs half of it at most. The median
 * run's, or with enough runs (a quartile of fewer is their most) the
 * upper quartile's, the same for both variants: a pool whose runs trim
 * as often as the baseline's saves no faults. */
bool advise_replay_faulted(const struct ap_advice *a, const struct ap_run_cost *B,
			   const struct ap_measured *m, double prog_faults)
{
	bool q3 = m->rounds >= FAULTS_Q3_ROUNDS;
	double base_faults = q3 ? fmax(B->minflt, B->minflt_q3) : B->minflt;
	double pool_faults = q3 ? fmax(m->cost.minflt, m->cost.minflt_q3) : m->cost.minflt;
	return a->has_program_minflt && base_faults >= FAULTS_MORE * prog_faults + 1000 &&
	       pool_faults <= 0.5 * base_faults;
}

/* The baseline's faults beyond the recorded run's and m's (x->faults),
 * and their price (x->ns), priced as the saving is scaled: to the whole
 * run. Taken off m's saving where the runner priced them and, where the
 * baseline faulted FAULTS_MORE times the run (replay_faults), they are
 * less than EXCESS_SHARE of it (advise_judge_measured says why): then
 * returns true. Where the baseline's runs faulted from minflt_lo to
 * minflt_hi and the pooled ones theirs, the faults beyond the run's are
 * as uncertain as those counts say, and no more the same in every run
 * than the saving: the most of them (the baseline's most against the
 * pool's fewest) off the interval's lower end (x->hi_ns), the fewest off
 * its upper end (x->lo_ns). */
bool advise_excess_off(const struct ap_advice *a, const struct ap_run_cost *B, struct ap_measured *m,
		       double prog_faults, bool replay_faults, struct advise_excess *x)
{
	double scale = a->measure_share > 0 && a->measure_share < 1 ? a->measure_share : 1;
	*x = (struct advise_excess){ 0 };
	x->faults = a->has_program_minflt ? B->minflt - fmax(prog_faults, m->cost.minflt) : 0;
	x->ns = a->has_program_minflt
			? excess_priced(B->minflt, prog_faults, m->cost.minflt) * B->fault_ns / scale
			: 0;
	if (!(x->ns > 0 && (!replay_faults || x->ns < EXCESS_SHARE * m->saved_ns)))
		return false;
	double lo = excess_priced(fmin(B->minflt_lo, B->minflt), prog_faults,
				  fmax(m->cost.minflt_hi, m->cost.minflt));
	double hi = excess_priced(fmax(B->minflt_hi, B->minflt), prog_faults,
				  fmin(m->cost.minflt_lo, m->cost.minflt));
	x->lo_ns = lo * B->fault_ns / scale;
	x->hi_ns = hi * B->fault_ns / scale;
	m->saved_ns -= x->ns;
	m->low_ns -= x->hi_ns;
	m->high_ns -= x->lo_ns;
	return true;
}

double advise_program_cpu_ns(const struct ap_advice *a)
{
	return a->program_cpu_est_ns ? (double)a->program_cpu_est_ns
	       : a->program_cpu_ns   ? (double)a->program_cpu_ns
				     : (double)a->duration_ns;
}

void advise_replay_faults_words(struct ap_buf *b, const struct ap_advice *a, const struct ap_run_cost *B,
				const struct ap_measured *m, const char *what, double excess, double excess_ns)
{
	char b1[32], b2[32];
	bool q3 = m->rounds >= FAULTS_Q3_ROUNDS;
	ap_buf_addf(b, " But the replay without %s made %.0f page faults a run (%.0f to %.0f", what,
		    B->minflt, B->minflt_lo, B->minflt_hi);
	if (q3 && B->minflt_q3 > B->minflt)
		ap_buf_addf(b, "; a quarter of the runs %.0f or more", B->minflt_q3);
	ap_buf_addf(b, ") "
		    "where the recorded run made %.0f, recording included, and with the pool "
		    "%.0f: glibc trimmed the replay's heap where it did not trim the program's "
		    "(%s), and the saving is mostly those faults, which the program does not "
		    "make",
		    ap_advise_prog_faults(a), m->cost.minflt, trim_why(a));
	if (excess_ns > 0) {
		ap_advise_format_duration(b1, sizeof(b1), excess_ns);
		ap_advise_format_duration(b2, sizeof(b2), B->fault_ns);
		ap_buf_addf(b, " (%.0f beyond the recorded run's: %s at the %s one costs here, "
			    "measured, half the saving or more)", excess, b1, b2);
	}
	ap_buf_addf(b, "; %s may save it nothing, or cost it. ", what);
}

void advise_judge_measured(const struct ap_advice *a, struct ap_advise_site *s)
{
	const struct ap_measured *m = &s->m;
	/* A site the model judged by size or cost, not as a pool, whose cap
	 * pays was measured with its cap (report/advise_measure.c): the pool
	 * one would build there. */
	bool capped = s->verdict == AP_VERDICT_POOL_CAP || (!good(s) && advise_cap_pays(s));
	const struct ap_replay_result *r = measured_result(s);
	/* the baseline's runs m is measured against */
	const struct ap_run_cost *B = ap_advise_site_base(a, s);
	double cpu = advise_program_cpu_ns(a);
	char b1[32], b2[32], b3[32], b4[32], obj[160];
	struct ap_buf t = AP_BUF_INIT;
	bool kept = false;	/* the model's reasons are in the text */
	/* the pool measured: the model's kind (report/advise_measure.c) */
	s->shape = good(s) ? s->verdict : capped ? AP_VERDICT_POOL_CAP : AP_VERDICT_POOL;
	object_words(obj, sizeof(obj), s);
	/* Objects handed between threads: what the program's own waits for
	 * each other cost in the recorded run (its context switches, at
	 * what one costs on the replay's CPUs), when known. */
	bool handed = ap_advise_handed(s);
	double waits = handed && a->has_switches && a->base.switch_ns > 0
			       ? (double)a->program_switches * a->base.switch_ns
			       : 0;
	/* never more than the program's whole CPU time (a switch of the
	 * program's may cost less than the probe's) */
	bool at_cpu = cpu > 0 && waits > cpu;
	if (at_cpu)
		waits = cpu;
	/* The recorded run's page faults, for the share of it replayed (the
	 * fit's rule: ap_advise_run_faults). */
	double prog_faults = ap_advise_prog_faults(a);
	/* The median run's, or with enough runs (a quartile of fewer is
	 * their most) the upper quartile's, the same for both variants: a
	 * pool whose runs trim as often as the baseline's saves no faults
	 * (advise_replay_faulted). */
	bool replay_faults = advise_replay_faulted(a, B, m, prog_faults);
	/* Such faults priced at what one costs the runner (its fault probe:
	 * a page given back and written again) and taken off the saving: what
	 * is left is the pool's saving on the program's own faults and calls
	 * (bench/twins' prodcons2, session 23: a baseline of 19,608 faults a
	 * run where the recorded run made 1,945 and the pooled replay 520,
	 * 17,663 at 1.4 us, 25 ms of a saving of 225). Only where the runner
	 * priced them; where the baseline faulted FAULTS_MORE times the run,
	 * only when they are less than half the saving: else the saving is
	 * mostly those faults, and the verdict stays open (relay, whose twin
	 * costs 9 %: 30,589 to 82,993 faults beyond, 46-114 ms of savings of
	 * 69-147; how many the program would make with the pool's objects
	 * held, and what its own waits then do, no replay says). Below that
	 * they are taken off whatever their share, on the ramp of
	 * excess_weight (all of them from EXCESS_MORE times the run's):
	 * relay's baseline faulted 10,600 times where the recorded run did
	 * 2,592, 10.7 ms at 1.33 us, and the replay "saved" 10.2 ms. */
	s->excess_faults = s->excess_faults_ns = s->excess_faults_ns_lo = s->excess_faults_ns_hi = 0;
	struct advise_excess x;
	if (advise_excess_off(a, B, &s->m, prog_faults, replay_faults, &x)) {
		s->excess_faults = x.faults;
		s->excess_faults_ns = x.ns;
		s->excess_faults_ns_lo = x.lo_ns;
		s->excess_faults_ns_hi = x.hi_ns;
		replay_faults = false;
	}
	double excess = x.faults, excess_ns = x.ns;
	/* The free list measured beside the pool, priced the same way (its
	 * own faults against the same baseline's). */
	s->fl_excess_faults = s->fl_excess_faults_ns = 0;
	if (s->fl_state == AP_FL_MEASURED &&
	    advise_excess_off(a, B, &s->fl, prog_faults, advise_replay_faulted(a, B, &s->fl, prog_faults), &x)) {
		s->fl_excess_faults = x.faults;
		s->fl_excess_faults_ns = x.ns;
	}
	measured_words(&t, a, s);
	/* Blocks handed larger than asked for, by enough memory to matter
	 * (LARGER_RATIO): open, unless measured with them written whole,
	 * whose measurement the verdict then follows (and says so). */
	double given = r->allocs_avoided > 0 ? r->hit_cap_bytes / r->allocs_avoided : 0;
	double asked = r->allocs_avoided > 0 ? r->alloc_bytes_avoided / r->allocs_avoided : 0;
	bool larger = !s->whole_measured && advise_larger_shape(a, s, m, B);
	if (s->whole_measured && !s->round_up)	/* (the classes': advise_round_wins) */
		whole_words(&t, a, s, given, asked);
	if (m->low_ns > 0 && m->saved_ns >= MIN_SAVE_SHARE * cpu && replay_faults) {
		s->verdict = AP_VERDICT_FAULTS;
		advise_replay_faults_words(&t, a, B, m, "a pool", excess, excess_ns);
		try_hint(&t, s);
		ap_buf_addstr(&t, " measures the program itself.");
		if (s->shape != AP_VERDICT_POOL && s->reasons) {
			ap_buf_addf(&t, " The pool measured: %s", s->reasons);
			kept = true;
		}
	} else if (m->low_ns > 0 && m->saved_ns >= MIN_SAVE_SHARE * cpu && m->saved_ns < SLIM_SHARE_MAX * cpu &&
		   m->low_ns < MIN_SAVE_PER_CALL * (r->allocs_avoided + r->reallocs_avoided) &&
		   m->saved_ns < SLIM_MIDDLE_MAX * MIN_SAVE_PER_CALL * (r->allocs_avoided + r->reallocs_avoided)) {
		/* (the interval's lower end, as for the share: a pool must be
		 * shown to clear it; tinytmp's replays of one recording
		 * measured 4.5 and 5.0 ns a call, its intervals 0.6-7.7 and
		 * 2.6-11 ns, and were "little to gain" and "pool" by their
		 * middles) */
		double calls = r->allocs_avoided + r->reallocs_avoided;
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		ap_buf_addf(&t, " That is %.1fns for each of the %.0f allocations and reallocs it "
			    "avoids (objects of %s",
			    m->saved_ns / calls, calls, obj);
		if (m->saved_ns >= MIN_SAVE_PER_CALL * calls)
			ap_buf_addf(&t, "; %.1fns at the interval's lower end", m->low_ns / calls);
		ap_buf_addstr(&t, "): at a few ns a call the difference is in the code around the "
			      "calls, which the replay does not run, more than in the pool (a 3-byte "
			      "temporary pooled by hand saved nothing measurable where its replay "
			      "measured 2ns a call): too little to be worth the risks of pooling.");
	} else if (m->low_ns > 0 && m->saved_ns >= MIN_SAVE_SHARE * cpu && larger) {
		s->verdict = AP_VERDICT_LARGER;
		fmt_bytes(b1, sizeof(b1), given);
		fmt_bytes(b2, sizeof(b2), asked);
		fmt_bytes(b3, sizeof(b3), s->p50_size);
		fmt_bytes(b4, sizeof(b4), s->max_size);
		ap_buf_addf(&t, " But the site's requests vary in size (half up to %s, the largest "
			    "%s), and the pool keeps each object at the largest size it reached (one "
			    "too small for a request is dropped for a block of the request's size): "
			    "its hits hand blocks of %s on average for requests of %s, %.2g times as "
			    "large, and its replay's peak memory was ",
			    b3, b4, b1, b2, given / asked);
		fmt_bytes(b1, sizeof(b1), 1024 * m->cost.maxrss_kb);
		fmt_bytes(b2, sizeof(b2), 1024 * B->maxrss_kb);
		ap_buf_addf(&t, "%s against %s without it. The replay writes a line and a byte a "
			    "page of each new block; a program that writes or reads its blocks whole "
			    "goes through that much more memory with the pool, which is not in this "
			    "saving (bench/twins: records of 1-8KiB, each filled and checksummed "
			    "whole, whose replay saved 10-26ms and whose hand-pooled twin cost 9-13%% "
			    "more). A pool may save the program that, nothing, or cost it; ",
			    b1, b2);
		try_hint(&t, s);
		ap_buf_addstr(&t, " measures the program itself, with the pool.");
		if (s->shape != AP_VERDICT_POOL && s->reasons) {
			ap_buf_addf(&t, " The pool measured: %s", s->reasons);
			kept = true;
		}
	} else if (m->low_ns > 0 && m->saved_ns >= MIN_SAVE_SHARE * cpu) {
		bool said = good(s);
		if (!said) {
			s->verdict = s->shape;
			free(s->reasons);
			s->reasons = NULL;
		}
		fmt_bytes(b1, sizeof(b1), r->bytes_avoided);
		fmt_bytes(b2, sizeof(b2), r->peak_held_bytes);
		ap_buf_addf(&t, " %.0f%% of requests reuse a pooled object, avoiding %.0f allocation%s",
			    100 * r->hit_rate, r->allocs_avoided, plural(r->allocs_avoided));
		if (r->reallocs_avoided >= 0.5)
			ap_buf_addf(&t, " and %.0f %s%s", r->reallocs_avoided, ap_advise_growth_noun(s),
				    plural(r->reallocs_avoided));
		ap_buf_addf(&t, " (%s); the pool holds %s at peak.", b1, b2);
		if (!said && s->verdict == AP_VERDICT_POOL_CAP) {
			fmt_bytes(b1, sizeof(b1), (double)s->cap);
			fmt_bytes(b2, sizeof(b2), s->r.peak_held_bytes);
			fmt_bytes(b3, sizeof(b3), s->max_cap > s->max_size ? s->max_cap : s->max_size);
			ap_buf_addf(&t, " Measured with a cap: objects above %s (the largest are %s) are "
				    "freed on Put, not kept; without it the pool would hold %s at peak, "
				    "handing blocks kept at the largest size they reached to small "
				    "requests.", b1, b3, b2);
		}
		/* The kind of pool: why a cap, why classes. */
		if (s->verdict != AP_VERDICT_POOL && s->reasons) {
			ap_buf_addf(&t, " %s", s->reasons);
			kept = true;
		}
	} else if (m->low_ns > 0) {
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		ap_buf_addf(&t, " Less than %.0f%% of the program's time: too little to be worth the "
			    "risks of pooling (stale data, use after return).", 100 * MIN_SAVE_SHARE);
	} else if (m->high_ns < 0 && -m->low_ns < MIN_SAVE_SHARE * cpu) {
		/* A cost whose whole interval is under 1 % of the program's
		 * time: what a saving that small is ("little to gain" above),
		 * too little to want either way. The interval's upper end
		 * hovers at zero there, and one recording's "costs more" was
		 * the next one's "little to gain" (bench/twins' taskpool:
		 * -0.4 to -0.7 ms in 563). */
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		ap_advise_format_duration(b1, sizeof(b1), -m->low_ns);
		ap_buf_addf(&t, " The pool costs, but at most %s, less than %.0f%% of the program's "
			    "time: too little to matter either way; keep malloc.", b1,
			    100 * MIN_SAVE_SHARE);
	} else if (m->high_ns < 0) {
		s->verdict = AP_VERDICT_COSTS_MORE;
		double more_faults = m->cost.minflt - B->minflt;
		if (s->whole_measured)
			/* why: whole_words */
			ap_buf_addstr(&t, " The program's passes over its blocks, spread over that much "
				      "more memory, cost more than the pool saves: keep malloc.");
		else if (r->time_saved_ns > m->saved_ns / OWN_WORK_SHARE &&
		    more_faults >= FAULTS_MOVED_MIN && more_faults >= FAULTS_MOVED_SHARE * B->minflt) {
			/* The pool's own gets and puts, by the cost model, are
			 * far from what the replay measured, and the pooled
			 * runs faulted more: what it measured is the heap the
			 * pool's objects left around them. */
			ap_advise_format_duration(b1, sizeof(b1), fabs(r->time_saved_ns));
			ap_buf_addf(&t, " By the cost model a pool here would %s about %s (what it "
				    "avoids less its own gets and puts), far from what was measured: the "
				    "cost is how the objects the pool holds move the rest of the heap "
				    "(where glibc puts other blocks, what it trims and faults in again",
				    r->time_saved_ns >= 0 ? "save" : "cost", b1);
			if (!faults_said(B, m))
				ap_buf_addf(&t, "; page faults %.0f against %.0f without it",
					    m->cost.minflt, B->minflt);
			ap_buf_addstr(&t, "): keep malloc.");
		} else if (s->p90_cap <= TINY_MAX && s->reallocs_per_object < 0.5)
			ap_buf_addf(&t, " Objects of %s are what glibc's malloc already keeps in a "
				    "per-thread cache (tcache), cheaper than a pool's get and put: keep "
				    "malloc.", obj);
		else
			ap_buf_addf(&t, " At %.0f%% hits, the pool's own work costs more than the "
				    "allocations it avoids: keep malloc.", 100 * r->hit_rate);
	} else if (m->high_ns < MIN_SAVE_SHARE * cpu && m->saved_ns <= -MIN_SAVE_SHARE * cpu) {
		/* Across zero, the most it could save too little, and its
		 * middle a cost of 1 % or more: a cost, as where the whole
		 * interval is below zero. Whether its end reaches a little
		 * past zero is the interval's width, which moves from one
		 * recording to the next (bench/twins' ordbook: a cost of 121,
		 * 162 and 140 ms of 2.4 s over three recordings, the last
		 * one's interval ending at a saving of 12.7 ms: "costs more",
		 * "costs more", "little to gain", session 34). */
		s->verdict = AP_VERDICT_COSTS_MORE;
		ap_advise_format_duration(b1, sizeof(b1), m->high_ns);
		ap_advise_format_duration(b2, sizeof(b2), -m->saved_ns);
		ap_buf_addf(&t, " The interval spans zero, but the most it could save, %s (the end of "
			    "the interval below zero), is less than %.0f%% of the program's time, and "
			    "its middle is a cost of %s, %.1f%% of it: keep malloc.",
			    b1, 100 * MIN_SAVE_SHARE, b2, 100 * -m->saved_ns / cpu);
	} else if (m->high_ns < MIN_SAVE_SHARE * cpu) {
		/* Across zero, and even its upper end too little: what a lower
		 * end above zero would make "little to gain" (a saving of
		 * 0.1-0.3 ms in 700: bench/twins' zsreq went from one to the
		 * other between advise runs of one trace). */
		s->verdict = AP_VERDICT_LITTLE_GAIN;
		ap_advise_format_duration(b1, sizeof(b1), m->high_ns);
		/* A cost's interval is said as a cost (measured_words): its
		 * upper end is then the most it costs, and the most it could
		 * save is the other end, said as a saving. */
		if (m->saved_ns >= 0)
			ap_buf_addf(&t, " The interval spans zero, and its upper end, %s, is less than "
				    "%.0f%% of the program's time: too little to be worth the risks of "
				    "pooling (stale data, use after return).", b1, 100 * MIN_SAVE_SHARE);
		else
			ap_buf_addf(&t, " The interval spans zero, and the most it could save, %s (the "
				    "end of the interval below zero), is less than %.0f%% of the "
				    "program's time: too little to be worth the risks of pooling (stale "
				    "data, use after return).", b1, 100 * MIN_SAVE_SHARE);
	} else {
		s->verdict = AP_VERDICT_NOISE;
		ap_buf_addf(&t, " The interval spans zero: a pool here changes nothing measurable "
			    "(%.0f%% of requests would hit).", 100 * r->hit_rate);
	}
	/* Objects handed between threads: the program's own waits move with
	 * the pool, by how much no replay can tell (WAIT_MOVE). */
	if (handed && s->verdict != AP_VERDICT_FAULTS) {
		ap_buf_addf(&t, " %.0f%% of its objects are freed on another thread than the one that "
			    "made them, and the program's own waits are outside this measurement: "
			    "how often its threads wait for each other (on their own queues and "
			    "locks) changes when a pool makes one of them faster or slower, and a "
			    "replay of the allocations cannot know by how much",
			    100 * s->cross_thread_share);
		if (waits > 0) {
			ap_advise_format_duration(b1, sizeof(b1), WAIT_MOVE * waits);
			ap_advise_format_duration(b2, sizeof(b2), a->base.switch_ns);
			ap_buf_addf(&t, " (up to ~%s either way, half of what the recorded run's %" PRIu64
				    " context switches cost at the %s one costs here%s%s)", b1,
				    a->program_switches, b2, at_cpu ? ", at most the program's CPU time" : "",
				    good(s) && m->low_ns < WAIT_MOVE * waits
					    ? ": more than the saving's lower end, so the program may gain more "
					      "than measured, or less, or lose (bench/twins: a producer whose "
					      "threads switched a quarter as often with the pool saved twice "
					      "what its replay did; a Rust channel whose threads switched more "
					      "often lost 4%)"
					    : "");
		}
		ap_buf_addstr(&t, "; ");
		try_hint(&t, s);
		ap_buf_addstr(&t, " measures the program itself, with the pool, its waits included.");
	}
	if (s->round_state == AP_FL_MEASURED && !s->round_up) {
		/* measured beside one pool with much larger blocks, and not
		 * the verdict's (advise_round_wins) */
		char d1[32], d2[32], d3[32];
		saving_words(&s->rm, d1, d2, d3);
		ap_buf_addstr(&t, " Beside it, a pool per size class with each request rounded up to its "
			      "class (");
		classes_words(&t, s->round_classes, s->nround_classes);
		ap_buf_addf(&t, "), handing out %.2g times the bytes asked for, measured %s %s (%s to %s)",
			    s->round_ratio, s->rm.saved_ns >= 0 ? "saving" : "costing", d1, d2, d3);
		if (s->round_whole) {
			saving_words(&s->rmw, d1, d2, d3);
			ap_buf_addf(&t, ", and with their blocks written and read whole %s %s (%s to %s)",
				    s->rmw.saved_ns >= 0 ? "saving" : "costing", d1, d2, d3);
		}
		ap_buf_addf(&t, "%s.", !pays(a, s->round_whole ? &s->rmw : &s->rm)
					       ? ": not a saving to build on"
				       : !s->round_whole && advise_round_may_win(a, s)
					       ? ": not measured with their blocks written and read whole, "
						 "which decides where one pool's blocks are much larger (a "
						 "longer --measure-time measures it)"
					       : "");
	}
	if (!kept)	/* (the model's reasons say it already) */
		by_copy_words(&t, s);
	growth_code_words(&t, s);
	if (m->saved_ns > 0)
		calloc_words(&t, s);
	aligned_words(&t, s);
	shrink_words(&t, s);
	via_words(&t, s);
	free(s->reasons);
	s->reasons = ap_buf_detach(&t, NULL);
	set_verdict_text(s);
}
