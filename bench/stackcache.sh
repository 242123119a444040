#!/bin/bash
# bench/stackcache.sh: what the sampler's stack cache costs or saves under
# `record --all` (issue 9): each workload recorded with the cache and with
# ALLOCPROF_STACK_CACHE=0, interleaved by bench/ab.sh (min and median wall
# time). The cache must never be more than 10% slower than without it.
#   sckeys   bench/sckeys.c: one leaf reached with 400 (return address,
#            stack pointer) keys in turn (20 leaves x 20 depths), 2 M calls
#   sckeys60 the same with 3 depths (60 keys), 300 k calls
#   loop64   bench/loop64.c, 20 M pairs: the loop the cache wins on
#   cppcheck `cppcheck -q sampler/` (the sampler's sources) (if installed)
#   clang    `clang++ -O1 -c testdata/handoff.cpp` (if installed)
# Usage: bench/stackcache.sh [-n ROUNDS] [-w LIST] [BUILD_DIR]
#   -n ROUNDS  interleaved rounds (default 5)
#   -w LIST    workloads, comma-separated (default all of the above)
# Environment: CC (default cc), BENCH_OUT (default bench/out).
set -u
rounds=5 only=sckeys,sckeys60,loop64,cppcheck,clang
while getopts "n:w:h" opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	w) only=$OPTARG ;;
	*) sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "stackcache: no build directory '${1:-build}'" >&2; exit 1; }
ap=$build/cli/allocprof
out=${BENCH_OUT:-$here/out}
mkdir -p "$out" || exit 1
cc=${CC:-cc}
# sckeys: every leaf its own function and every call a frame
"$cc" -O2 -g -fno-inline -fno-ipa-icf -fno-optimize-sibling-calls -o "$out/sckeys" "$here/sckeys.c" &&
	"$cc" -O2 -g -o "$out/loop64" "$here/loop64.c" -lpthread ||
	{ echo "stackcache: cannot build the helpers with $cc" >&2; exit 1; }

declare -A cmd=(
	[sckeys]="$out/sckeys 5000"
	[sckeys60]="$out/sckeys 5000 3"
	[loop64]="$out/loop64 20000000"
	[cppcheck]="cppcheck -q $src/sampler/"
	[clang]="clang++ -O1 -c $src/testdata/handoff.cpp -o $out/handoff.o"
)
for w in ${only//,/ }; do
	[ -n "${cmd[$w]:-}" ] || { echo "stackcache: no workload '$w'" >&2; exit 2; }
	command -v "${cmd[$w]%% *}" >/dev/null || { echo "$w: not installed, skipped"; continue; }
	echo "== $w: ${cmd[$w]}"
	rec="$ap record -q --all -o $out/sc.trace -- ${cmd[$w]}"
	"$here/ab.sh" "$rounds" cache "$rec" nocache "ALLOCPROF_STACK_CACHE=0 $rec"
done
