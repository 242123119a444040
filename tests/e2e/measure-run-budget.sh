#!/bin/bash
# A run of several processes is measured within one budget of the
# measured replay (--measure-time), for the whole run, its processes in
# their order, each given a share of what is left by its events
# (cli/views.c, ap_view_measure_run): a shell that runs
# testdata/demo twice, advised with a budget of 1ms, spends it on the
# first demo (the making of its script, or its first round: a run starts
# while the budget is ahead when nothing says how long it takes; one
# round is no measurement, and the first says so) and leaves none to
# the second, which says why and how to measure it alone (each saying
# its budget was this process's share of --measure-time); the
# shell's own site (a block reused once, by Debian 12's dash here; none
# in a chroot's) is under the floor. It measured each process in a budget
# of its own (fifty compilers of a build: minutes).
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD.
. "$(dirname "$0")/../lib.sh"
demo=$TESTDATA_BUILD/demo
"$ALLOCPROF" record --all -q -o "$work/r.trace" -- sh -c "$demo 2000 >/dev/null; $demo 2000 >/dev/null" ||
	{ fail "record failed"; exit 1; }
"$ALLOCPROF" advise -n 1 --measure-time 1ms "$work/r.trace" >"$work/out" 2>&1 ||
	{ fail "advise failed: $(cat "$work/out")"; exit 1; }
grep '^==> \|^Measured\|^Not measured' "$work/out" >"$work/heads"
n=$(grep -c '^==> ' "$work/heads")
expect_eq "processes" "$n" 3
# each process's heading, then its measured line
mapfile -t lines <"$work/heads"
# (the shell's own reason: its block under the floor, or no site at all,
# as its build allocates; never the budget, which it did not use)
case ${lines[1]} in
"Not measured: this process's share of --measure-time"*) fail "the shell: ${lines[1]}" ;;
"Not measured: "*) ;;
*) fail "the shell: ${lines[1]}" ;;
esac
case ${lines[3]} in
"Not measured: this process's share of --measure-time ("*" of 1ms) spent "*": a longer --measure-time measures it") ;;
*) fail "the first demo: ${lines[3]}" ;;
esac
expect_eq "the second demo" "${lines[5]}" "Not measured: the measured replay's budget for the whole run (--measure-time 1ms) went to the processes before this one; advise --no-children with this process's trace measures it alone"
# alone, with a budget that holds rounds of it, it is measured
second=$(sed -n 's/^==> \([^:]*\): .*/\1/p' "$work/out" | sed -n 3p)
"$ALLOCPROF" advise -n 1 --measure-time 2s --no-children "$second" >"$work/alone" 2>&1 ||
	fail "advise of the second alone failed: $(cat "$work/alone")"
grep -q '^Measured: ' "$work/alone" || fail "the second alone is not measured: $(head -6 "$work/alone")"

# The budget is shared by the processes as their events are, not taken
# by the first: a demo of 6000 requests (72 K calls) then one of 20000
# (240 K), in 800ms, measures both: the first in about a quarter of it,
# its 6 rounds taking some 100ms on an idle CPU (400ms left its ~92ms
# share one round beside a load of 8), not in 30 rounds until none was left
# for the second (git gc's own process took all 15 s of it, and the
# pack-objects it ran was not measured).
"$ALLOCPROF" record --all -q -o "$work/s.trace" -- sh -c "$demo 6000 >/dev/null; $demo 20000 >/dev/null" ||
	{ fail "record failed"; exit 1; }
"$ALLOCPROF" advise -n 1 --measure-time 800ms "$work/s.trace" >"$work/out" 2>&1 ||
	{ fail "advise failed: $(cat "$work/out")"; exit 1; }
mapfile -t lines < <(grep '^Measured\|^Not measured' "$work/out")
case ${lines[1]} in
"Measured: "*) ;;
*) fail "the first demo is not measured: ${lines[1]}" ;;
esac
case ${lines[2]} in
"Measured: "*) ;;
*) fail "the second demo is not measured: ${lines[2]}" ;;
esac
# Its JSON says each process's share and the run's --measure-time, and
# the shares fit in it; the text names the share as a share, never as
# "--measure-time" itself
"$ALLOCPROF" advise --json -n 1 --measure-time 800ms "$work/s.trace" >"$work/out.json" 2>"$work/err" ||
	{ fail "advise --json failed: $(cat "$work/err")"; exit 1; }
got=$(jq "$work/out.json" "' '.join('%s/%s' % (p['measurement'].get('budget_run_ns'), 0 < (p['measurement'].get('budget_ns') or 0) < 800e6) for p in j[1:])")
expect_eq "the demos' budget_run_ns / a share below it" "$got" "800000000/True 800000000/True"
if grep -q -- "--measure-time [0-9.]*m\?s was spent\|in --measure-time [0-9.]*m\?s\b" "$work/out"; then
	fail "a share called --measure-time: $(grep -- '--measure-time' "$work/out")"
fi
exit $failed
