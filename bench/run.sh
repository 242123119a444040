#!/bin/bash
# bench/run.sh: the overhead of `allocprof record` side by side with a bare
# forwarding shim and heaptrack, in one run (issue 2 item 7). For each
# workload it runs every variant N times, interleaved (run 1 of every
# variant, then run 2, ...), and prints the median wall time of the native
# run and the median ratios of the others to it; then the trace bytes per
# recorded event of `record --all` against heaptrack's file for the same run.
# See bench/README.md.
#
# Usage: bench/run.sh [-n RUNS] [-m STAT] [-s SCALE] [-w WORKLOADS] [BUILD_DIR]
#   -n RUNS       runs per variant (default 5); the median is reported
#   -m STAT       median (default) or min: the fastest run of each variant,
#                 for machines whose CPUs differ in speed from run to run
#                 (a shared vCPU: see bench/README.md)
#   -s SCALE      multiplies every workload's size (default 1, or $BENCH_SCALE;
#                 0.05 makes a smoke run of a few seconds)
#   -w LIST       comma-separated workloads (default: all):
#                 loop64,loop64x2,mixed,realloc,python3,python3m,sqlite3
#                 (python3m: python3 with PYTHONMALLOC=malloc)
#   BUILD_DIR     the meson build directory with cli/allocprof (default build)
# Environment: CC (default cc), BENCH_OUT (scratch directory, default
# bench/out), HEAPTRACK, PYTHON3, SQLITE3 (override the tools).
set -u
export LC_ALL=C

runs=5
scale=${BENCH_SCALE:-1}
only=""
usage() { sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; }
stat=median
while getopts "n:m:s:w:h" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	m) stat=$OPTARG ;;
	s) scale=$OPTARG ;;
	w) only=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $runs in '' | *[!0-9]* | 0) echo "bench: -n wants a positive number" >&2; exit 2 ;; esac
case $stat in median | min) ;; *) echo "bench: -m wants median or min" >&2; exit 2 ;; esac
awk -v s="$scale" 'BEGIN { exit !(s + 0 > 0) }' || { echo "bench: -s wants a positive number" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "bench: no build directory '${1:-build}'" >&2; exit 1; }
out=${BENCH_OUT:-$here/out}
mkdir -p "$out" || exit 1
ap=$build/cli/allocprof
cc=${CC:-cc}

# Tools: a missing one makes its column "n/a", never a failure.
have() { [ -n "$1" ] && [ -x "$1" ]; }
heaptrack=${HEAPTRACK:-$(command -v heaptrack || true)}
# Debian's interpreter, not a version manager's wrapper script in PATH.
python3=${PYTHON3:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)}
sqlite3=${SQLITE3:-$(command -v sqlite3 || true)}
have "$ap" && [ -e "$build/sampler/liballocprof.so" ] || ap=""

# Build the helpers with the same flags every time.
shim=$out/shim.so
build_helpers() {
	"$cc" -O2 -g -Wall -shared -fPIC -o "$shim" "$here/shim.c" -ldl || return 1
	for p in loop64 mixed realloc; do
		"$cc" -O2 -g -Wall -o "$out/$p" "$here/$p.c" -lpthread || return 1
	done
}
build_helpers || { echo "bench: cannot build the helpers with $cc" >&2; exit 1; }

sz() { awk -v n="$1" -v s="$scale" 'BEGIN { v = int(n * s); print (v < 1 ? 1 : v) }'; }

sql=$out/alloc_heavy.sql
cat >"$sql" <<EOF
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT);
CREATE INDEX t_k ON t(k);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $(sz 300000))
INSERT INTO t(k, s) SELECT (x * 7919) % 100003, printf('%08x-row-%d', (x * 2654435761) % 4294967296, x) FROM c;
SELECT count(*), sum(length(s)) FROM (SELECT s FROM t ORDER BY s);
SELECT k % 97, count(*), length(group_concat(id % 10, '')) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 2;
EOF

# workload NAME -> the command line in $cmd (an array) and a variable
# NAME=VALUE its every variant runs with in $wvar (or none); returns 1 if a
# tool it needs is missing.
workload() {
	wvar=
	case $1 in
	loop64) cmd=("$out/loop64" "$(sz 100000000)" 1) ;;
	loop64x2) cmd=("$out/loop64" "$(sz 100000000)" 2) ;;
	mixed) cmd=("$out/mixed" "$(sz 10000000)") ;;
	realloc) cmd=("$out/realloc" "$(sz 300000)") ;;
	python3) have "$python3" || return 1; cmd=("$python3" "$here/alloc_heavy.py" "$(sz 60000)") ;;
	# the same script with every object from malloc (pymalloc off): 34 M
	# allocations instead of 0.65 M
	# (in the environment, not through env(1): heaptrack follows no exec)
	python3m) have "$python3" || return 1; wvar=PYTHONMALLOC=malloc; cmd=("$python3" "$here/alloc_heavy.py" "$(sz 60000)") ;;
	sqlite3) have "$sqlite3" || return 1; cmd=("$sqlite3" :memory: ".read $sql") ;;
	*) echo "bench: unknown workload '$1'" >&2; exit 2 ;;
	esac
}

variants=(native shim default all heaptrack)

# run_variant VARIANT: runs "${cmd[@]}" under VARIANT, prints its wall time
# in seconds, or "fail" (non-zero exit) or "n/a" (tool missing).
run_variant() {
	local t0 t1 rc
	rm -f "$out"/run.trace "$out"/run.trace.* "$out"/ht.*
	case $1 in
	shim | native) ;;
	default | all) [ -n "$ap" ] || { echo n/a; return; } ;;
	heaptrack) have "$heaptrack" || { echo n/a; return; } ;;
	esac
	# the previous variant's files must not be written back while this one
	# runs (tens of MB of page cache: the kernel's writeback then competes
	# for the CPU; medians of native runs moved by half without this)
	sync
	t0=$EPOCHREALTIME
	case $1 in
	native) "${cmd[@]}" >/dev/null 2>"$out/err" ;;
	shim) LD_PRELOAD=$shim "${cmd[@]}" >/dev/null 2>"$out/err" ;;
	default) "$ap" record -q -o "$out/run.trace" -- "${cmd[@]}" >/dev/null 2>"$out/err" ;;
	all) "$ap" record --all -o "$out/run.trace" -- "${cmd[@]}" >/dev/null 2>"$out/err" ;;
	heaptrack) "$heaptrack" -o "$out/ht" "${cmd[@]}" >/dev/null 2>"$out/err" ;;
	esac
	rc=$?
	t1=$EPOCHREALTIME
	if [ $rc -ne 0 ]; then
		echo "bench: $1 ${cmd[*]} exited $rc:" >&2
		tail -n 3 "$out/err" | sed 's/^/  /' >&2
		echo fail
		return
	fi
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
	# Sizes of the last --all trace and heaptrack file, for the size table.
	case $1 in
	all)
		# the event count from record's summary line ('stats' would read
		# the whole trace: 200 M events of loop64 are 8 GB in memory)
		local ev
		ev=$(sed -n 's/^allocprof: wrote .* (\([0-9]*\) events*, .*/\1/p' "$out/err" | head -n 1)
		# heaptrack compresses its output with zstd while it runs; the
		# same compression of our trace, for a like-for-like size.
		local z=n/a
		command -v zstd >/dev/null && z=$(zstd -q -3 -c "$out/run.trace" | wc -c)
		echo "$(stat -c %s "$out/run.trace") ${ev:-0} $z" >"$out/all.size" ;;
	heaptrack)
		local f
		f=$(ls "$out"/ht.* 2>/dev/null | head -n 1)
		[ -n "$f" ] && stat -c %s "$f" >"$out/ht.size" ;;
	esac
}

# median (or min, with -m min; or $1 if given) of the times on stdin
median() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g | awk -v stat="${1:-$stat}" '
	{ v[NR] = $1 } END { if (!NR) { print "n/a"; exit }
	  if (stat == "min") { print v[1]; exit }
	  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# row STAT WORKLOAD: the table row of the times in ${times[@]}
row() {
	local st=$1 nat m cell out
	nat=$(echo "${times[native]}" | median "$st")
	out=$(printf '%-10s %10s' "$2" "$nat")
	for v in shim default all heaptrack; do
		m=$(echo "${times[$v]}" | median "$st")
		if [ "$m" = n/a ] || [ "$nat" = n/a ]; then
			case ${times[$v]} in *fail*) m=fail ;; esac
			cell=$m
		else
			cell=$(awk -v a="$m" -v b="$nat" 'BEGIN { printf "%.2fx", a / b }')
		fi
		[ $v = heaptrack ] && out+=$(printf ' %10s' "$cell") || out+=$(printf ' %8s' "$cell")
	done
	echo "$out"
}
other=$([ "$stat" = min ] && echo median || echo min)

all_workloads=(loop64 loop64x2 mixed realloc python3 python3m sqlite3)
[ -n "$only" ] && IFS=, read -r -a all_workloads <<<"$only"

echo "allocprof bench: $runs run(s) per variant, scale $scale, $(nproc) CPU(s), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "allocprof: ${ap:-n/a}; heaptrack: ${heaptrack:-n/a}; python3: ${python3:-n/a}; sqlite3: ${sqlite3:-n/a}"
echo "wall time: $stat native seconds, then $stat of each variant's time / native"
echo
printf '%-10s %10s %8s %8s %8s %10s\n' workload native shim default --all heaptrack
sizes=()
others=()
for w in "${all_workloads[@]}"; do
	if ! workload "$w"; then
		printf '%-10s %10s %8s %8s %8s %10s\n' "$w" n/a n/a n/a n/a n/a
		continue
	fi
	declare -A times=()
	rm -f "$out/all.size" "$out/ht.size"
	[ -n "$wvar" ] && export "${wvar?}"
	for ((r = 1; r <= runs; r++)); do
		for v in "${variants[@]}"; do
			times[$v]+="$(run_variant "$v") "
		done
	done
	[ -n "$wvar" ] && unset "${wvar%%=*}"
	row "$stat" "$w"
	others+=("$(row "$other" "$w")")
	read -r tb ev zb 2>/dev/null <"$out/all.size" || { tb=""; ev=""; zb=""; }
	hb=$(cat "$out/ht.size" 2>/dev/null || true)
	sizes+=("$w ${tb:-n/a} ${ev:-n/a} ${zb:-n/a} ${hb:-n/a}")
	unset times
done

echo
echo "the same runs, $other:"
for r in "${others[@]}"; do echo "$r"; done

echo
echo "trace size of the last run: allocprof --all (bytes, events, bytes/event, zstd -3 of it)"
echo "vs heaptrack's file (zstd-compressed by heaptrack itself), and the ratio allocprof/heaptrack"
printf '%-10s %12s %10s %8s %12s %12s %8s\n' workload allocprof events B/event "(zstd)" heaptrack ratio
for s in "${sizes[@]}"; do
	read -r w tb ev zb hb <<<"$s"
	bpe=n/a
	ratio=n/a
	[[ $tb =~ ^[0-9]+$ && $ev =~ ^[0-9]+$ && $ev -gt 0 ]] &&
		bpe=$(awk -v a="$tb" -v b="$ev" 'BEGIN { printf "%.2f", a / b }')
	[[ $tb =~ ^[0-9]+$ && $hb =~ ^[0-9]+$ && $hb -gt 0 ]] &&
		ratio=$(awk -v a="$tb" -v b="$hb" 'BEGIN { printf "%.2f", a / b }')
	printf '%-10s %12s %10s %8s %12s %12s %8s\n' "$w" "$tb" "$ev" "$bpe" "$zb" "$hb" "$ratio"
done
rm -f "$out"/run.trace "$out"/run.trace.* "$out"/ht.* "$out/err"
