#!/bin/bash
# The CPUs a recorded process could use (HEADER allowed_cpus), and the
# measured replay that runs on as many (issue 22):
#  1. `taskset -c 0 record` of a threaded program (testdata/handoff):
#     stats --json says allowed_cpus 1; unpinned, nproc's count (nproc
#     counts the CPUs this test may use, as the sampler does);
#  2. forkexec's forked child and exec'd image write their own, pinned or
#     not;
#  3. advise --json of the pinned trace replays on 1 CPU, as recorded, and
#     its runner finds itself on 1; --replay-cpus all on nproc's count;
#     --replay-cpus 1 on an unpinned trace on 1; bad values of
#     --replay-cpus (advise's and try's) get one line and exit 2.
# Times are not compared: only the CPUs.
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD,
# ALLOCPROF_TEST_COSTS.
. "$(dirname "$0")/../lib.sh"
tmp=$work
py=${E2E_PYTHON:-python3}
n=$(nproc)
export ALLOCPROF_NO_PROGRESS=1
cd "$tmp" || exit 1

# 1. pinned and unpinned recordings of a threaded program
taskset -c 0 "$ALLOCPROF" record -q --all -o one.trace "$TESTDATA_BUILD/handoff" 300 >/dev/null ||
	fail "record under taskset -c 0 failed"
"$ALLOCPROF" record -q --all -o all.trace "$TESTDATA_BUILD/handoff" 300 >/dev/null ||
	fail "record failed"
"$ALLOCPROF" stats --json one.trace >one.json || fail "stats one.trace"
"$ALLOCPROF" stats --json all.trace >all.json || fail "stats all.trace"
[ "$(jq one.json 'j["allowed_cpus"]')" = 1 ] || fail "pinned: allowed_cpus $(jq one.json 'j["allowed_cpus"]'), want 1"
[ "$(jq all.json 'j["allowed_cpus"]')" = "$n" ] || fail "unpinned: allowed_cpus $(jq all.json 'j["allowed_cpus"]'), nproc $n"
[ "$(jq one.json 'j["threads"] > 1')" = True ] || fail "handoff recorded $(jq one.json 'j["threads"]') thread(s)"
"$ALLOCPROF" stats one.trace | grep -qx "cpus  *1 of the machine's [0-9]* (its CPU affinity; advise replays on as many)" ||
	fail "stats' text: $(grep '^cpus' <("$ALLOCPROF" stats one.trace))"

# 2. each process of a run writes its own
for pin in 0 all; do
	if [ $pin = 0 ]; then want=1 run=(taskset -c 0); else want=$n run=(); fi
	mkdir "fe$pin"
	(cd "fe$pin" && "${run[@]}" "$ALLOCPROF" record -q --all -o main.trace "$TESTDATA_BUILD/forkexec" >/dev/null)
	k=0
	for t in "fe$pin"/main.trace "fe$pin"/main.trace.*; do
		[ -e "$t" ] || continue
		k=$((k + 1))
		"$ALLOCPROF" stats --json --no-children "$t" >"$t.json" || fail "stats $t"
		got=$(jq "$t.json" 'j["allowed_cpus"]')
		[ "$got" = "$want" ] || fail "forkexec ($pin): ${t##*/}: allowed_cpus $got, want $want"
	done
	[ $k = 3 ] || fail "forkexec ($pin): $k traces, want 3 (parent, forked child, exec'd image)"
done

# 3. advise's measured replay
adv() { # OUT ARGS...
	local out=$1
	shift
	"$ALLOCPROF" advise --json --measure-time 1s --measure-sites 1 "$@" >"$out" 2>"$out.err" ||
		fail "advise $*: $(tail -1 "$out.err")"
}
mcheck() { # FILE REPLAY FROM RECORDED
	local m='j["measurement"]'
	[ "$(jq "$1" "$m[\"sites\"]")" -ge 1 ] 2>/dev/null || { fail "$1: nothing measured: $(jq "$1" "$m.get('why_not')")"; return; }
	local got
	got=$(jq "$1" "($m['replay_cpus'], $m['replay_cpus_from'], $m['recorded_cpus'], $m['runner_cpus'], $m['cpus_allowed'])")
	[ "$got" = "($2, '$3', $4, $2, $n)" ] || fail "$1: (replay, from, recorded, runner, allowed) = $got, want ($2, '$3', $4, $2, $n)"
}
adv one-advise.json one.trace
mcheck one-advise.json 1 recorded 1
adv all-advise.json all.trace
mcheck all-advise.json "$n" recorded "$n"
adv one-all.json --replay-cpus all one.trace
mcheck one-all.json "$n" all 1
adv all-one.json --replay-cpus 1 all.trace
mcheck all-one.json 1 option "$n"
"$ALLOCPROF" advise --measure-time 1s --measure-sites 1 one.trace >one-advise.txt 2>&1
grep -q "^Measured: .*, replayed on 1 CPU, as recorded$" one-advise.txt ||
	fail "advise's header: $(grep '^Measured' one-advise.txt || tail -1 one-advise.txt)"

for cmd in advise try; do
	for v in 0 -1 x 65537 1x ""; do
		"$ALLOCPROF" $cmd --replay-cpus "$v" one.trace >out 2>err
		rc=$?
		[ $rc = 2 ] || fail "$cmd --replay-cpus '$v': exit $rc, want 2"
		[ -s out ] && fail "$cmd --replay-cpus '$v': stdout not empty"
		[ "$(cat err)" = "allocprof: $cmd: --replay-cpus wants a number of CPUs from 1 to 65536, or all, not '$v' (see 'allocprof $cmd -h')" ] ||
			fail "$cmd --replay-cpus '$v': $(cat err)"
	done
done
exit $failed
