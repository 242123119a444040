#!/bin/bash
# tools/same-compact.sh OLD_BUILD NEW_BUILD [DIR]: the compactor of two
# builds on the same raw traces, which must give the same bytes. Not a
# test (it needs two builds): run it after a change to trace/compact/
# that should not change what it writes, with OLD_BUILD a build of the
# commit before the change. (tools/same-output.sh compares the reports;
# this compares the compactor alone, on more kinds of traces.)
#
# 1. Raw traces (`record --compress-level 0`), recorded once by OLD_BUILD:
#    testdata programs (single, threads, handoff, realloc_chain, forkexec
#    with its children's traces, ownthreads: threads that free only their
#    own blocks, which the compactor plans without its replay), bench/mixed, python3 with
#    PYTHONMALLOC=malloc and threads handing dicts over, each --all and
#    sampled; and each --all trace cut inside its last chunk.
# 2. Each raw trace compacted by each build (a small driver linked to its
#    libaptrace.a): ap_trace_compact at levels 0 (its counts), 1, 3 and 10;
#    the stream calls (ap_compact_stream_*) fed the file as it grows, 1 MiB
#    at a time; the level-3 output compacted again (its chunks pass
#    through); and NEW_BUILD once more without writer threads
#    (ALLOCPROF_COMPACT_NO_THREAD=1) and once with its plan for several
#    threads made by the replay (ALLOCPROF_TEST_REPLAY_PLAN=1; else a
#    trace of threads that keep to their own addresses is planned
#    without it). Every output and the counts the
#    calls return are compared with `cmp`.
# Prints one line per difference and a summary; exit 1 on any difference.
set -u
old=$(cd "${1:?usage: same-compact.sh OLD_BUILD NEW_BUILD [DIR]}" && pwd)
new=$(cd "${2:?usage: same-compact.sh OLD_BUILD NEW_BUILD [DIR]}" && pwd)
dir=${3:-$(mktemp -d "${TMPDIR:-/tmp}/same-compact.XXXXXX")}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir/raw" "$dir/out" || exit 1
export LC_ALL=C
fails=0 checks=0
differ() { echo "DIFFERENT: $*"; fails=$((fails + 1)); }

# 1. raw traces, recorded by the old build
cc -O2 -o "$dir/mixed" "$src/bench/mixed.c" || exit 1
cat >"$dir/handoff.py" <<'EOF'
import queue, threading
q = queue.Queue(64)
def make(n):
    for i in range(n):
        q.put({"k%d" % j: [j] * (i % 17) for j in range(40)})
    q.put(None)
def take():
    while q.get() is not None:
        pass
ts = [threading.Thread(target=make, args=(4000,)), threading.Thread(target=take)]
for t in ts:
    t.start()
for t in ts:
    t.join()
EOF
# (gaps only with --gaps since e9f5a32: an old build without it records
# them with every --all trace)
gaps=
"$old/cli/allocprof" record --help 2>/dev/null | grep -q -- --gaps && gaps=--gaps
record() { # NAME CMD...: NAME-all.raw, NAME-gaps.raw and NAME-rate.raw (and their children's)
	local name=$1
	shift
	(cd "$dir/raw" &&
		"$old/cli/allocprof" record -q --all --compress-level 0 -o "$name-all.raw" "$@" \
			>/dev/null 2>&1
		[ -z "$gaps" ] || "$old/cli/allocprof" record -q --all $gaps --compress-level 0 \
			-o "$name-gaps.raw" "$@" >/dev/null 2>&1
		"$old/cli/allocprof" record -q --compress-level 0 -o "$name-rate.raw" "$@" \
			>/dev/null 2>&1) || true
}
# (ownthreads: the new build's program where the old build has none)
for p in single threads handoff realloc_chain forkexec ownthreads; do
	exe=$old/testdata/$p
	[ -x "$exe" ] || exe=$new/testdata/$p
	if [ -x "$exe" ]; then record "$p" "$exe"; else echo "skip $p"; fi
done
record mixed "$dir/mixed" 2000000
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3)
if [ -n "$py" ]; then
	PYTHONMALLOC=malloc record python3 "$py" "$dir/handoff.py"
fi
# a trace cut inside its last chunk (kept as it was, after the rest)
for t in "$dir"/raw/*-all.raw "$dir"/raw/*-all.raw.*; do
	[ -e "$t" ] || continue
	size=$(stat -c %s "$t")
	head -c $((size - 7)) "$t" >"$dir/raw/cut-$(basename "$t")"
done

# 2. the compactor of both builds
cat >"$dir/compact.c" <<'EOF'
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ap_trace_compact.h"
/* compact IN OUT LEVEL [stream]: IN compacted into OUT (a copy), the
 * stats on stdout; with `stream`, OUT written 1 MiB at a time and fed. */
int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	FILE *in = fopen(argv[1], "rb");
	int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!in || out < 0)
		return 2;
	struct ap_compact_stats st;
	struct ap_error err;
	static char buf[1 << 20];
	size_t n;
	int rc, level = atoi(argv[3]);
	if (argc > 4 && !strcmp(argv[4], "stream")) {
		struct ap_compact_stream *s = NULL;
		int started = 0;
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
			if (write(out, buf, n) != (ssize_t)n)
				return 2;
			if (!started++)
				s = ap_compact_stream_start(argv[2], level);
			if (s && ap_compact_stream_feed(s) < 0) {
				printf("abandoned\n");
				ap_compact_stream_abandon(s);
				s = NULL;
			}
		}
		close(out);
		rc = s ? ap_compact_stream_finish(s, &st, &err)
		       : ap_trace_compact(argv[2], level, &st, &err);
	} else {
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			if (write(out, buf, n) != (ssize_t)n)
				return 2;
		close(out);
		rc = ap_trace_compact(argv[2], level, &st, &err);
	}
	if (rc < 0) {
		printf("error: %s\n", err.msg);
		return 1;
	}
	printf("events %" PRIu64 " threads %zu end %d cut %d at %" PRIu64 " in %" PRIu64
	       " out %" PRIu64 "\n", st.events, st.nthreads, st.has_end, st.cut, st.cut_at,
	       st.bytes_in, st.bytes_out);
	return 0;
}
EOF
for b in old new; do
	bd=${!b}
	bsrc=$(cd "$bd/.." && pwd)
	[ $b = new ] && bsrc=$src
	cc -O1 -D_GNU_SOURCE -I"$bsrc/trace" -I"$bsrc/util" "$dir/compact.c" \
		"$bd/trace/libaptrace.a" "$bd/util/libaputil.a" -lzstd -lm -lpthread \
		-o "$dir/compact-$b" || { echo "cannot build the $b compactor driver"; exit 1; }
done
# the runs of one trace: label|driver arguments|environment
runs='l0|0|
l1|1|
l3|3|
l10|10|
stream|3 stream|
nothread|3|ALLOCPROF_COMPACT_NO_THREAD=1
replayplan|3|ALLOCPROF_TEST_REPLAY_PLAN=1'
compared=() nchild=0
for raw in "$dir"/raw/*.raw "$dir"/raw/*.raw.*; do
	[ -e "$raw" ] || continue
	n=$(basename "$raw")
	case $n in *.raw) compared+=("${n%.raw}") ;; *) nchild=$((nchild + 1)) ;; esac
	while IFS='|' read -r label args envs; do
		for b in old new; do
			# the runs without writer threads, and with the plan made by
			# the replay even where it need not be: the new build's,
			# against the old one's level 3
			case $label in nothread | replayplan) [ $b = old ] && {
				cp "$dir/out/$n.l3.old" "$dir/out/$n.$label.old"
				cp "$dir/out/$n.l3.old.st" "$dir/out/$n.$label.old.st"
				continue
			} ;; esac
			# shellcheck disable=SC2086
			env $envs "$dir/compact-$b" "$raw" "$dir/out/$n.$label.$b" $args \
				>"$dir/out/$n.$label.$b.st" 2>&1
		done
		checks=$((checks + 1))
		if ! cmp -s "$dir/out/$n.$label.old.st" "$dir/out/$n.$label.new.st"; then
			differ "$label of $n: the counts ($(head -c 200 "$dir/out/$n.$label.new.st"))"
		elif ! cmp -s "$dir/out/$n.$label.old" "$dir/out/$n.$label.new"; then
			differ "$label of $n: the bytes"
		fi
	done <<<"$runs"
	# a compacted trace compacted again
	for b in old new; do
		"$dir/compact-$b" "$dir/out/$n.l3.$b" "$dir/out/$n.again.$b" 3 >"$dir/out/$n.again.$b.st" 2>&1
	done
	checks=$((checks + 1))
	cmp -s "$dir/out/$n.again.old" "$dir/out/$n.again.new" &&
		cmp -s "$dir/out/$n.again.old.st" "$dir/out/$n.again.new.st" ||
		differ "again of $n"
done
nerr=$(grep -l '^error' "$dir"/out/*.new.st 2>/dev/null | wc -l)
echo "same-compact: $((${#compared[@]} + nchild)) raw traces (${compared[*]}" \
	"and $nchild traces of children), $checks comparisons," \
	"$fails different, $nerr runs that fail in the new build (files in $dir)"
[ $fails = 0 ]
