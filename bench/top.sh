#!/bin/bash
# bench/top.sh: how long `allocprof top` takes (and flamegraph, and the
# folded export it draws), and how much memory, on a
# trace of >= 10 M events from >= 10 k distinct stacks (issue 3), next to
# `heaptrack_print` on the heaptrack file of the very same workload.
#
# The workload is bench/top-stacks.c: N mallocs (and as many frees) from
# 2^DEPTH distinct call stacks (default 5 M and 2^14 = 16384). It is
# recorded once with `allocprof record --all` and once with heaptrack; then
# each report is run RUNS times and the fastest wall time and the largest
# peak RSS (from /usr/bin/time -v) are printed.
#
# Usage: bench/top.sh [-n RUNS] [-a NALLOCS] [-d DEPTH] [-H] [BUILD_DIR]
#   -n RUNS      runs of each report (default 3)
#   -H           leave heaptrack out
#   -a NALLOCS   allocations of the workload (default 5000000: 10 M events)
#   -d DEPTH     2^DEPTH distinct stacks (default 14)
#   BUILD_DIR    the meson build directory with cli/allocprof (default build)
# Environment: CC (default cc), BENCH_OUT (scratch directory, default
# bench/out), HEAPTRACK, HEAPTRACK_PRINT (override the tools),
# HEAPTRACK_TIMEOUT (seconds heaptrack may take to record, default 300;
# see top-stacks.c for a workload on which heaptrack 1.4 does not finish).
set -u
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1

runs=3 nallocs=5000000 depth=14 skip_heaptrack=
usage() { sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; }
while getopts "n:a:d:Hh" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	a) nallocs=$OPTARG ;;
	d) depth=$OPTARG ;;
	H) skip_heaptrack=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
for v in "$runs" "$nallocs" "$depth"; do
	case $v in '' | *[!0-9]* | 0) echo "bench/top: -n, -a and -d want positive numbers" >&2; exit 2 ;; esac
done

here=$(cd "$(dirname "$0")" && pwd)
. "$here/timev.sh"
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "bench/top: no build directory '${1:-build}'" >&2; exit 1; }
ap=$build/cli/allocprof
[ -x "$ap" ] || { echo "bench/top: no $ap (build first)" >&2; exit 1; }
out=${BENCH_OUT:-$here/out}
mkdir -p "$out"
heaptrack=${HEAPTRACK:-$(command -v heaptrack || true)}
heaptrack_print=${HEAPTRACK_PRINT:-$(command -v heaptrack_print || true)}
timer=/usr/bin/time
[ -x "$timer" ] || { echo "bench/top: needs GNU time at $timer" >&2; exit 1; }

prog=$out/top-stacks
${CC:-cc} -O0 -g -o "$prog" "$here/top-stacks.c" || exit 1

# measure LABEL CMD...: runs CMD $runs times (stdout to /dev/null); prints
# the fastest wall time and the largest peak RSS.
measure() {
	label=$1
	shift
	best="" rss=0
	for _ in $(seq "$runs"); do
		if ! "$timer" -v -o "$out/time.txt" "$@" >/dev/null 2>"$out/stderr.txt"; then
			echo "bench/top: $label failed:" >&2
			cat "$out/stderr.txt" "$out/time.txt" >&2
			return 1
		fi
		read -r t _ r <<<"$(timev_fields "$out/time.txt")"
		if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$t
		fi
		[ "$r" -gt "$rss" ] && rss=$r
	done
	printf '%-28s %8.2f s %8.0f MiB\n' "$label" "$best" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')"
}

echo "workload: $nallocs allocations from 2^$depth stacks (bench/top-stacks.c)"
trace=$out/top-stacks.trace
rm -f "$trace"
"$ap" record --all -q -o "$trace" "$prog" "$nallocs" "$depth" >/dev/null || exit 1
"$ap" stats --json "$trace" >"$out/stats.json" 2>/dev/null
python3 - "$out/stats.json" "$trace" <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
print("allocprof trace: %d events, %.1f MB" % (s["events"], os.path.getsize(sys.argv[2]) / 1e6))
EOF
printf '\n%-28s %10s %12s\n' "report" "wall" "peak RSS"
measure "allocprof top" "$ap" top "$trace"
measure "allocprof top --lines" "$ap" top --lines "$trace"
measure "allocprof top --inuse_space" "$ap" top --inuse_space "$trace"
measure "allocprof flamegraph" "$ap" flamegraph "$trace"
measure "allocprof export folded" "$ap" export --format=folded "$trace"

if [ -n "$skip_heaptrack" ]; then
	:
elif [ -n "$heaptrack" ] && [ -n "$heaptrack_print" ]; then
	rm -f "$out"/top-stacks.heaptrack*
	limit=${HEAPTRACK_TIMEOUT:-300}
	timeout -k 5 "$limit" "$heaptrack" -o "$out/top-stacks.heaptrack" "$prog" "$nallocs" "$depth" >/dev/null 2>&1
	htfile=$(ls "$out"/top-stacks.heaptrack* 2>/dev/null | head -1)
	if [ -n "$htfile" ] && [ -s "$htfile" ]; then
		measure "heaptrack_print" "$heaptrack_print" "$htfile"
	else
		echo "heaptrack_print              n/a (heaptrack did not finish recording in ${limit} s)"
	fi
else
	echo "heaptrack_print              n/a (heaptrack not installed)"
fi
