#!/bin/bash
# END's unwind_ns is CPU time: bench/twins' jsonnodes (a recursive JSON
# parser, most of whose recorded time is the sampler unwinding its many
# stacks) recorded --all on one CPU that two busy loops share with it, so
# that it waits for the CPU about two thirds of its run, often in the
# middle of an unwind. The sampler times its unwinds by the TSC, which
# counts those waits; an unwind counts at most 16 times the thread's mean
# (sampler/stacks.h, unw_capped). Counted whole, the unwinding came to
# more than the run's whole CPU time (cppcheck: 1,479 ms in 790 ms), and
# advise's estimate of the program's own CPU time fell to its floor.
# And alone on its CPU, the same program's unwinding is about what it is
# with the busy loops (the cap does not cut real unwinds).
# Environment (tests/e2e/meson.build): ALLOCPROF, E2E_DIR.
. "$(dirname "$0")/../lib.sh"
src=$E2E_DIR/../../bench/twins
cc=${CC:-cc}
command -v "$cc" >/dev/null || skip "no C compiler ($cc)"
"$cc" -O2 -g -I"$src" -o "$work/jsonnodes" "$src/jsonnodes.c" || { fail "cannot build jsonnodes"; exit 1; }
cpu=$("$_lib_py" -c 'import os; print(min(os.sched_getaffinity(0)))')
hog= hog2=
trap 'kill $hog $hog2 2>/dev/null; rm -rf "$work"' EXIT
taskset -c "$cpu" sh -c 'while :; do :; done' &
hog=$!
taskset -c "$cpu" sh -c 'while :; do :; done' &
hog2=$!
taskset -c "$cpu" "$ALLOCPROF" record --all -q -o "$work/j.trace" -- "$work/jsonnodes" 800 >"$work/out" 2>&1
rc=$?
kill $hog $hog2
wait $hog $hog2 2>/dev/null
hog= hog2=
[ $rc = 0 ] || { fail "record failed: $(cat "$work/out")"; exit 1; }
"$ALLOCPROF" advise --no-measure --json -n 0 "$work/j.trace" >"$work/a.json" || { fail "advise failed"; exit 1; }
cpu_ns=$(jget "$work/a.json" program_cpu_ns)
unw_ns=$(jget "$work/a.json" program_unwind_ns)
echo "unwind-cpu: unwinding $((unw_ns / 1000000)) ms in a run of $((cpu_ns / 1000000)) ms of CPU time, sharing its CPU"
[ "$unw_ns" -gt 0 ] || fail "no unwinding said (END's unwind_ns $unw_ns)"
[ "$unw_ns" -le "$cpu_ns" ] || fail "unwinding ($unw_ns ns) above the run's CPU time ($cpu_ns ns): waits counted"
taskset -c "$cpu" "$ALLOCPROF" record --all -q -o "$work/alone.trace" -- "$work/jsonnodes" 800 >"$work/out" 2>&1 ||
	{ fail "record failed alone: $(cat "$work/out")"; exit 1; }
"$ALLOCPROF" advise --no-measure --json -n 0 "$work/alone.trace" >"$work/b.json" || { fail "advise failed"; exit 1; }
alone=$(jget "$work/b.json" program_unwind_ns)
echo "unwind-cpu: alone on its CPU, unwinding $((alone / 1000000)) ms"
ratio "$unw_ns" "$alone" 0.5 2 || fail "unwinding $unw_ns ns sharing the CPU, $alone ns alone: more than a factor of two apart"
exit $failed
