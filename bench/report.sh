#!/bin/bash
# bench/report.sh: how fast, and in how much memory, the reports read a
# long --all trace (issue 10): `allocprof stats`, `top` and `advise` on a
# trace of N malloc/free pairs (2N events) of bench/loop64.c, next to
# `heaptrack_print` on heaptrack's file of the very same workload.
#
# For each report: the fastest wall time and user time of RUNS runs, the
# events per second of user time (one core: the reports are single-
# threaded), and the largest peak RSS (/usr/bin/time -v). The memory must
# not grow with the trace: run it at two sizes (-a) and compare.
#
# Usage: bench/report.sh [-n RUNS] [-a PAIRS] [-t THREADS] [-w WORKLOAD] [-H] [BUILD_DIR]
#   -n RUNS      runs of each report (default 3)
#   -a PAIRS     malloc/free pairs in total (default 100000000: 200 M events)
#   -t THREADS   threads sharing them (default 1)
#   -w WORKLOAD  loop64 (default) or mixed (bench/mixed.c: PAIRS steps over
#                a window of 4096 live blocks of 16-527 bytes)
#   -H           leave heaptrack out
#   BUILD_DIR    the meson build directory with cli/allocprof (default build)
# Environment: CC (default cc), BENCH_OUT (scratch directory, default
# bench/out), HEAPTRACK, HEAPTRACK_PRINT (override the tools).
set -u
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1

runs=3 pairs=100000000 threads=1 workload=loop64 skip_heaptrack=
usage() { sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; }
while getopts "n:a:t:w:Hh" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	a) pairs=$OPTARG ;;
	t) threads=$OPTARG ;;
	w) workload=$OPTARG ;;
	H) skip_heaptrack=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
for v in "$runs" "$pairs" "$threads"; do
	case $v in '' | *[!0-9]* | 0) echo "bench/report: -n, -a and -t want positive numbers" >&2; exit 2 ;; esac
done
case $workload in loop64 | mixed) ;; *) echo "bench/report: -w: loop64 or mixed" >&2; exit 2 ;; esac

here=$(cd "$(dirname "$0")" && pwd)
. "$here/timev.sh"
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "bench/report: no build directory '${1:-build}'" >&2; exit 1; }
ap=$build/cli/allocprof
[ -x "$ap" ] || { echo "bench/report: no $ap (build first)" >&2; exit 1; }
out=${BENCH_OUT:-$here/out}
mkdir -p "$out"
heaptrack=${HEAPTRACK:-$(command -v heaptrack || true)}
heaptrack_print=${HEAPTRACK_PRINT:-$(command -v heaptrack_print || true)}
timer=/usr/bin/time
[ -x "$timer" ] || { echo "bench/report: needs GNU time at $timer" >&2; exit 1; }

prog=$out/$workload
${CC:-cc} -O2 -g -pthread -o "$prog" "$here/$workload.c" || exit 1
if [ "$workload" = loop64 ]; then
	args=("$pairs" "$threads")
else
	args=("$pairs")
fi

# measure LABEL CMD...: runs CMD $runs times (stdout to /dev/null); prints
# the fastest wall and user times, events per user second, the largest RSS.
measure() {
	label=$1
	shift
	best="" user="" rss=0
	for _ in $(seq "$runs"); do
		if ! "$timer" -v -o "$out/time.txt" "$@" >/dev/null 2>"$out/stderr.txt"; then
			echo "bench/report: $label failed:" >&2
			cat "$out/stderr.txt" "$out/time.txt" >&2
			return 1
		fi
		read -r t u r <<<"$(timev_fields "$out/time.txt")"
		if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$t
		fi
		if [ -z "$user" ] || awk -v a="$u" -v b="$user" 'BEGIN { exit !(a < b) }'; then
			user=$u
		fi
		[ "$r" -gt "$rss" ] && rss=$r
	done
	awk -v l="$label" -v w="$best" -v u="$user" -v r="$rss" -v e="$events" 'BEGIN {
		printf "%-22s %8.2f s %8.2f s %10.1f %9.0f MiB\n", l, w, u, (u > 0 ? e / u / 1e6 : 0), r / 1024 }'
}

echo "workload: $workload ${args[*]}"
trace=$out/report-$workload.trace
rm -f "$trace"
"$ap" record --all -q -o "$trace" "$prog" "${args[@]}" >/dev/null || exit 1
events=$("$ap" stats --json "$trace" 2>/dev/null |
	/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
echo "allocprof trace: $events events, $(stat -c %s "$trace") bytes"
printf '\n%-22s %10s %10s %10s %13s\n' "report" "wall" "user" "M ev/s" "peak RSS"
measure "allocprof stats" "$ap" stats "$trace"
measure "allocprof top" "$ap" top "$trace"
measure "allocprof advise" "$ap" advise "$trace"

if [ -n "$skip_heaptrack" ]; then
	:
elif [ -n "$heaptrack" ] && [ -n "$heaptrack_print" ]; then
	rm -f "$out"/report-$workload.heaptrack*
	"$heaptrack" -o "$out/report-$workload.heaptrack" "$prog" "${args[@]}" >/dev/null 2>&1
	htfile=$(ls "$out"/report-$workload.heaptrack* 2>/dev/null | head -1)
	if [ -n "$htfile" ] && [ -s "$htfile" ]; then
		echo "heaptrack file: $(stat -c %s "$htfile") bytes"
		measure "heaptrack_print" "$heaptrack_print" "$htfile"
	else
		echo "heaptrack_print        n/a (heaptrack wrote no file)"
	fi
else
	echo "heaptrack_print        n/a (heaptrack not installed)"
fi
