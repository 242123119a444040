#!/bin/bash
# bench/ab-builds.sh: the default mode's cost in two builds of allocprof
# (main's and a branch's, say), paired and interleaved: each round runs
# every workload natively and under `record` of each build, in turn, and
# the CPU time of each (perf stat's task-clock, the program and record
# with their children: less moved by other load on a shared machine than
# the wall time) goes into medians. Not a test: nothing asserts a time.
# With -a, `record --all` of each build against heaptrack instead: each
# round runs the workload natively, under heaptrack and under `record
# --all` of each build (sync before each), and it prints the median wall
# times (what the user waits for, record's compaction included), the
# median CPU times and the last run's file sizes.
#
# Usage: bench/ab-builds.sh [-a] [-n ROUNDS] [-w LIST] BUILD_A BUILD_B
#   -a          record --all against heaptrack (workloads: also mixed, realloc,
#               and cppcheck where installed)
#   -n ROUNDS   rounds (default 11)
#   -w LIST     comma-separated workloads (default loop64,loop64x2,python3,sqlite3;
#               with -a loop64,loop64x2,mixed,realloc,python3,sqlite3,cppcheck;
#               cppcheck: a C++ program of deep stacks, checking trace/order.c)
# Environment: CC (default cc), BENCH_OUT (scratch directory, default
# bench/out). Needs perf.
set -u
export LC_ALL=C
rounds=11
only=
all=false
usage() { sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; }
while getopts "an:w:h" opt; do
	case $opt in
	a) all=true ;;
	n) rounds=$OPTARG ;;
	w) only=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 2 ] || { usage >&2; exit 2; }
case $rounds in '' | *[!0-9]* | 0) echo "ab-builds: -n wants a positive number" >&2; exit 2 ;; esac
command -v perf >/dev/null || { echo "ab-builds: needs perf" >&2; exit 1; }
heaptrack=$(command -v heaptrack || true)
$all && [ -z "$heaptrack" ] && { echo "ab-builds: -a needs heaptrack" >&2; exit 1; }
if [ -z "$only" ]; then
	only=loop64,loop64x2,python3,sqlite3
	$all && only=loop64,loop64x2,mixed,realloc,python3,sqlite3
	$all && command -v cppcheck >/dev/null && only+=,cppcheck
fi
here=$(cd "$(dirname "$0")" && pwd)
builds=()
for b in "$1" "$2"; do
	d=$(cd "$b" 2>/dev/null && pwd) && [ -x "$d/cli/allocprof" ] ||
		{ echo "ab-builds: no cli/allocprof in '$b'" >&2; exit 1; }
	builds+=("$d")
done
out=${BENCH_OUT:-$here/out}
mkdir -p "$out" || exit 1
for p in loop64 mixed realloc; do
	"${CC:-cc}" -O2 -g -Wall -o "$out/$p" "$here/$p.c" -lpthread ||
		{ echo "ab-builds: cannot build $p" >&2; exit 1; }
done
# bench/run.sh's SQL at full size
sql=$out/alloc_heavy.sql
cat >"$sql" <<EOF
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT);
CREATE INDEX t_k ON t(k);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
INSERT INTO t(k, s) SELECT (x * 7919) % 100003, printf('%08x-row-%d', (x * 2654435761) % 4294967296, x) FROM c;
SELECT count(*), sum(length(s)) FROM (SELECT s FROM t ORDER BY s);
SELECT k % 97, count(*), length(group_concat(id % 10, '')) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 2;
EOF

# ms COMMAND...: the CPU time of a command and its children, in ms
ms() { perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ { print $1 }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk -v d="${1:-1}" '{ v[NR] = $1 }
	END { printf "%.*f", d, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# wall COMMAND...: after sync, the command's CPU time (ms, as ms) into
# $cpu and its wall time (s) into $wall
wall() {
	sync
	local t0=$EPOCHREALTIME
	cpu=$(ms "$@")
	wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')
}

# -a: one row per workload: median wall times (s) of native, heaptrack,
# record --all of A and B, B's over heaptrack's; then the median CPU
# times (s) and the last run's sizes (bytes)
ab_all() {
	local k tw tc
	declare -A tw tc
	for ((r = 1; r <= rounds; r++)); do
		wall "${cmd[@]}"
		tw[n]+="$wall " tc[n]+="$cpu "
		rm -f "$out"/ab-ht.*
		wall "$heaptrack" -o "$out/ab-ht" "${cmd[@]}"
		tw[h]+="$wall " tc[h]+="$cpu "
		for k in 0 1; do
			rm -f "$out/ab$k.trace"*
			wall "${builds[$k]}/cli/allocprof" record -q --all -o "$out/ab$k.trace" "${cmd[@]}"
			tw[$k]+="$wall " tc[$k]+="$cpu "
		done
	done
	local f sh
	f=$(ls "$out"/ab-ht.* 2>/dev/null | head -n 1)
	sh=$([ -n "$f" ] && stat -c %s "$f" || echo 0)
	awk -v w="$w" -v n="$(median <<<"${tw[n]}" 4)" -v h="$(median <<<"${tw[h]}" 4)" \
		-v a="$(median <<<"${tw[0]}" 4)" -v b="$(median <<<"${tw[1]}" 4)" \
		-v cn="$(median <<<"${tc[n]}")" -v ch="$(median <<<"${tc[h]}")" \
		-v ca="$(median <<<"${tc[0]}")" -v cb="$(median <<<"${tc[1]}")" \
		-v sa="$(stat -c %s "$out/ab0.trace")" -v sb="$(stat -c %s "$out/ab1.trace")" -v sh="$sh" \
		'BEGIN { printf "%-9s %7.3f %8.3f %7.3f %7.3f %6.2f | %6.2f %6.2f %6.2f %6.2f | %10d %10d %10d\n",
			 w, n, h, a, b, b / h, cn / 1000, ch / 1000, ca / 1000, cb / 1000, sa, sb, sh }'
	rm -f "$out"/ab-ht.* "$out"/ab0.trace* "$out"/ab1.trace*
}

echo "A: ${builds[0]}"
echo "B: ${builds[1]}"
if $all; then
	printf '%-9s %-41s | %-27s | %s\n' "" "wall (s)" "CPU (s)" "size (bytes)"
	printf '%-9s %7s %8s %7s %7s %6s | %6s %6s %6s %6s | %10s %10s %10s\n' workload native \
		heaptrk A B B/ht native heaptrk A B A B heaptrack
else
	printf '%-10s %10s %10s %10s %8s %8s\n' workload native A B A/nat B/nat
fi
for w in ${only//,/ }; do
	case $w in
	loop64) cmd=("$out/loop64" 100000000 1) ;;
	loop64x2) cmd=("$out/loop64" 100000000 2) ;;
	mixed) cmd=("$out/mixed" 10000000) ;;
	realloc) cmd=("$out/realloc" 300000) ;;
	python3) cmd=(/usr/bin/python3 "$here/alloc_heavy.py" 60000) ;;
	sqlite3) cmd=(sqlite3 :memory: ".read $sql") ;;
	cppcheck)
		command -v cppcheck >/dev/null || { echo "ab-builds: cppcheck is not installed" >&2; exit 1; }
		cmd=(cppcheck -q "$here/../trace/order.c") ;;
	*) echo "ab-builds: no workload $w" >&2; exit 2 ;;
	esac
	if $all; then
		ab_all
		continue
	fi
	tn="" ta="" tb=""
	for ((r = 1; r <= rounds; r++)); do
		tn+="$(ms "${cmd[@]}") "
		rm -f "$out/ab.trace"*
		ta+="$(ms "${builds[0]}/cli/allocprof" record -q -o "$out/ab.trace" "${cmd[@]}") "
		rm -f "$out/ab.trace"*
		tb+="$(ms "${builds[1]}/cli/allocprof" record -q -o "$out/ab.trace" "${cmd[@]}") "
	done
	rm -f "$out/ab.trace"*
	n=$(median <<<"$tn") a=$(median <<<"$ta") b=$(median <<<"$tb")
	awk -v w="$w" -v n="$n" -v a="$a" -v b="$b" \
		'BEGIN { printf "%-10s %10.1f %10.1f %10.1f %7.3fx %7.3fx\n", w, n, a, b, a / n, b / n }'
done
