#!/bin/bash
# bench/ab-builds.sh: the default mode's cost in two builds of allocprof
# (main's and a branch's, say), paired and interleaved: each round runs
# every workload natively and under `record` of each build, in turn, and
# the CPU time of each (perf stat's task-clock, the program and record
# with their children: less moved by other load on a shared machine than
# the wall time) goes into medians. Not a test: nothing asserts a time.
#
# Usage: bench/ab-builds.sh [-n ROUNDS] [-w LIST] BUILD_A BUILD_B
#   -n ROUNDS   rounds (default 11)
#   -w LIST     comma-separated workloads (default loop64,loop64x2,python3,sqlite3)
# Environment: CC (default cc), BENCH_OUT (scratch directory, default
# bench/out). Needs perf.
set -u
export LC_ALL=C
rounds=11
only=loop64,loop64x2,python3,sqlite3
usage() { sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; }
while getopts "n:w:h" opt; do
	case $opt in
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
here=$(cd "$(dirname "$0")" && pwd)
builds=()
for b in "$1" "$2"; do
	d=$(cd "$b" 2>/dev/null && pwd) && [ -x "$d/cli/allocprof" ] ||
		{ echo "ab-builds: no cli/allocprof in '$b'" >&2; exit 1; }
	builds+=("$d")
done
out=${BENCH_OUT:-$here/out}
mkdir -p "$out" || exit 1
"${CC:-cc}" -O2 -g -Wall -o "$out/loop64" "$here/loop64.c" -lpthread ||
	{ echo "ab-builds: cannot build loop64" >&2; exit 1; }
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
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
	END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "A: ${builds[0]}"
echo "B: ${builds[1]}"
printf '%-10s %10s %10s %10s %8s %8s\n' workload native A B A/nat B/nat
for w in ${only//,/ }; do
	case $w in
	loop64) cmd=("$out/loop64" 100000000 1) ;;
	loop64x2) cmd=("$out/loop64" 100000000 2) ;;
	python3) cmd=(/usr/bin/python3 "$here/alloc_heavy.py" 60000) ;;
	sqlite3) cmd=(sqlite3 :memory: ".read $sql") ;;
	*) echo "ab-builds: no workload $w" >&2; exit 2 ;;
	esac
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
