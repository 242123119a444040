#!/bin/bash
# Exact counts against valgrind (issue 9): `record --all` of testdata/NAME
# must give valgrind's totals (allocs, frees, bytes allocated, in use at
# exit) with no unmatched frees, and the END counts (`calls`, `bytes`) must
# be the same successful calls in --all and in a sampled recording.
# Both run `NAME ARGS...`; valgrind's run gets one more argument with
# --vg-arg (to leave out what valgrind itself counts differently), and
# --run-libc-freeres=no: libc's exit-time frees come after the trace ends.
# With --preload, valgrind's run has the sampler (inactive) and libunwind
# preloaded, as the recording has: each library with thread-local storage
# makes glibc's per-thread DTV, which the program's thread creation
# allocates, 16 bytes longer.
# With --children, NAME runs other programs (through sh -c): valgrind's
# heap summaries, one per process image that exits, are summed, and `stats`
# reads the whole run (the trace and its child traces). A shell's
# allocations depend on its environment, and valgrind's variables are not
# record's: such a program gives its shell only those variables
# (testdata/shkids.c), and each run gets the ones the other adds.
# Usage: exact.sh [--preload] [--children] [--vg-arg ARG] NAME [ARGS...]. Environment
# (tests/e2e/meson.build): ALLOCPROF, SAMPLER, TESTDATA_BUILD, E2E_PYTHON,
# VALGRIND, else the valgrind in PATH when the test runs (none: skip).
preload= vg_arg=() children=
while :; do
	case $1 in
	--preload) preload="$SAMPLER libunwind.so.8"; shift ;;
	--children) children=1; shift ;;
	--vg-arg) vg_arg=("$2"); shift 2 ;;
	*) break ;;
	esac
done
name=$1
shift
prog=$TESTDATA_BUILD/$name
. "$(dirname "$0")/../lib.sh"
tmp=$work

VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
if [ -z "$VALGRIND" ]; then
	echo "valgrind not found: skipping"
	exit 77
fi
vg_env=() rec_env=()
if [ -n "$children" ]; then
	vg_env=(ALLOCPROF=1 ALLOCPROF_TEST_SEED=7)
	rec_env=(VALGRIND_LIB=1 LD_LIBRARY_PATH=1 GLIBCPP_FORCE_NEW=1 GLIBCXX_FORCE_NEW=1)
fi
env "${vg_env[@]}" "$VALGRIND" --run-libc-freeres=no --run-cxx-freeres=no --trace-children=yes \
	env ${preload:+LD_PRELOAD="$preload"} "$prog" "$@" "${vg_arg[@]}" >/dev/null 2>"$tmp/vg" ||
	fail "$name: failed under valgrind"
# the first summary (the program's), or with --children the sum of all
sum=1
[ -n "$children" ] && sum=1000000
read -r v_allocs v_frees v_bytes < <(sed -n 's/.*total heap usage: \([0-9,]*\) allocs, \([0-9,]*\) frees, \([0-9,]*\) bytes allocated.*/\1 \2 \3/p' "$tmp/vg" | tr -d , |
	awk -v n=$sum 'NR <= n { a += $1; f += $2; b += $3 } END { if (NR) print a, f, b }')
read -r v_inuse v_blocks < <(sed -n 's/.*in use at exit: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1 \2/p' "$tmp/vg" | tr -d , |
	awk -v n=$sum 'NR <= n { u += $1; k += $2 } END { if (NR) print u, k }')
[ -n "${v_allocs:-}" ] && [ -n "${v_blocks:-}" ] || { fail "$name: no heap summary from valgrind"; cat "$tmp/vg"; exit 1; }
echo "valgrind: $v_allocs allocs, $v_frees frees, $v_bytes bytes; in use at exit $v_inuse bytes in $v_blocks blocks"

"$prog" "$@" >"$tmp/native.out" 2>&1
st_native=$?
# check TAG KEY WANT: stats field KEY of TAG's trace is WANT
check() {
	local got
	got=$(jget "$tmp/$1.json" "$2")
	[ "$got" = "$3" ] || fail "$name $1: $2 is $got, valgrind $3"
}
for mode in all sampled; do
	if [ $mode = all ]; then opt=--all; else opt="--rate 4096"; fi
	env "${rec_env[@]}" ALLOCPROF_TEST_SEED=7 "$ALLOCPROF" record -q $opt -o "$tmp/$mode.trace" -- "$prog" "$@" >"$tmp/$mode.out" 2>&1
	st=$?
	[ "$st" = "$st_native" ] || fail "$name $mode: exit status $st, natively $st_native"
	cmp -s "$tmp/native.out" "$tmp/$mode.out" || fail "$name $mode: output differs under record"
	"$ALLOCPROF" stats --json "$tmp/$mode.trace" >"$tmp/$mode.json" || { fail "$name $mode: stats failed"; continue; }
	echo "$name $mode: calls $(jget "$tmp/$mode.json" calls), bytes $(jget "$tmp/$mode.json" bytes)," \
		"alloc_objects $(jget "$tmp/$mode.json" alloc_objects), free_objects $(jget "$tmp/$mode.json" free_objects)," \
		"unmatched_frees $(jget "$tmp/$mode.json" unmatched_frees)"
	check $mode calls "$v_allocs"
	check $mode bytes "$v_bytes"
	[ $mode = all ] || continue
	check all alloc_objects "$v_allocs"
	check all free_objects "$v_frees"
	check all alloc_space "$v_bytes"
	check all inuse_objects "$v_blocks"
	check all inuse_space "$v_inuse"
	check all unmatched_frees 0
	if [ -n "$children" ]; then
		for si in alloc_objects:$v_allocs alloc_space:$v_bytes inuse_objects:$v_blocks inuse_space:$v_inuse; do
			got=$("$ALLOCPROF" top --json --${si%%:*} "$tmp/all.trace" |
				"${E2E_PYTHON:-python3}" -c 'import json,sys; print(int(json.load(sys.stdin)["total"]))')
			[ "$got" = "${si#*:}" ] || fail "$name: top --${si%%:*} total is $got, valgrind ${si#*:}"
		done
	fi
done
exit $failed
