#!/bin/bash
# Blocks handed between threads (testdata/handoff.cpp): addresses reused
# across threads within microseconds, the case the reader's merge has to
# order right. Checks, for a recording with --all:
#  1. the program prints the same and exits the same with and without
#     record;
#  2. (almost) every free finds its block, and what stays in use at exit
#     is libc's own (thread vectors, stdout's buffer): the merge's order
#     within a quantum can still be wrong where one thread frees a block
#     another freed and reallocated at the same address in the same 10 us
#     (0 unmatched frees in 25 runs of 30, 1-3 in the others, of 154,018);
#     the merge before the fix left 38 or so, and as many blocks in use;
#  3. allocations and bytes equal valgrind's, compared as differences to a
#     run of the same threads with no iterations (thread setup inside libc
#     differs under valgrind).
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD; VALGRIND,
# else the valgrind in PATH when the test runs (without one, step 3 is left
# out and the test skipped, exit 77).
VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
. "$(dirname "$0")/../lib.sh"
tmp=$work
prog=$TESTDATA_BUILD/handoff

# rec N: record `handoff N`; stats in $tmp/N.json
rec() {
	"$prog" "$1" >"$tmp/$1.native" 2>&1
	local st_native=$?
	"$ALLOCPROF" record -q --all -o "$tmp/$1.trace" "$prog" "$1" >"$tmp/$1.out" 2>"$tmp/$1.err"
	local st=$?
	[ "$st" = "$st_native" ] || fail "handoff $1: exit status $st under record, $st_native without"
	cmp -s "$tmp/$1.native" "$tmp/$1.out" || fail "handoff $1: output differs under record"
	"$ALLOCPROF" stats --json "$tmp/$1.trace" >"$tmp/$1.json" || fail "handoff $1: stats failed"
}
rec 0
rec 5000
j=$tmp/5000.json
echo "handoff 5000: $(jget "$j" alloc_objects) allocations, $(jget "$j" free_objects) frees, $(jget "$j" unmatched_frees) unmatched, $(jget "$j" inuse_objects) in use at exit"
[ "$(jget "$j" unmatched_frees)" -le 5 ] || fail "frees that found no block: $(jget "$j" unmatched_frees)"
[ "$(jget "$j" inuse_objects)" -le "$(($(jget "$tmp/0.json" inuse_objects) + 5))" ] ||
	fail "in use at exit: $(jget "$j" inuse_objects), the run without iterations: $(jget "$tmp/0.json" inuse_objects)"

# 4. advise: the recorded run's switches, the runner's price of one, and
#    each measured site handed between threads judged by its saving, what
#    the switches cost said beside it (half of it, at most the program's
#    CPU time: report/advise_verdict.c), never "unsure: threads wait"
"$ALLOCPROF" advise --json -n 0 --measure-time 3s "$tmp/5000.trace" >"$tmp/adv.json" 2>"$tmp/adv.err" ||
	fail "advise handoff 5000: $(tail -1 "$tmp/adv.err")"
"$_lib_py" - "$tmp/adv.json" <<'PY' || fail "advise's verdicts at sites handed between threads (above)"
import json, sys
a = json.load(open(sys.argv[1]))
sw, ns = a["program_switches"], a["measurement"].get("switch_ns")
print("handoff 5000: %s switches recorded, %s ns a switch" % (sw, ns))
bad = sw is None or sw <= 0 or not ns or ns <= 0
cpu = a["program_cpu_est_ns"] or a["program_cpu_ns"]
bound = 0.5 * min((sw or 0) * (ns or 0), cpu)
for s in a["sites"]:
    if not s.get("measured") or s["cross_thread_share"] < 0.1:
        continue
    low = s["time_saved_low_ns"]
    print("  %s: %s, lower end %d ns, half the switches' cost %d ns" % (s["site"], s["verdict"], low, bound))
    if s["verdict"].startswith("unsure: threads"):
        bad = True
    if s["verdict"] in ("pool", "size classes") or s["verdict"].startswith("pool with cap"):
        bad = bad or low <= 0
    if "context switches cost" not in s["reasons"] or "either way" not in s["reasons"]:
        print("  the text does not say what the switches cost: " + s["reasons"])
        bad = True
sys.exit(1 if bad else 0)
PY

if [ -n "$VALGRIND" ]; then
	vg() { # N -> "allocs bytes"
		"$VALGRIND" "$prog" "$1" 2>&1 >/dev/null |
			sed -n 's/.*total heap usage: \([0-9,]*\) allocs, [0-9,]* frees, \([0-9,]*\) bytes allocated.*/\1 \2/p' | tr -d ,
	}
	read -r va0 vb0 < <(vg 0)
	read -r va vb < <(vg 5000)
	ga=$(($(jget "$j" alloc_objects) - $(jget "$tmp/0.json" alloc_objects)))
	gb=$(($(jget "$j" alloc_space) - $(jget "$tmp/0.json" alloc_space)))
	echo "over the baseline: allocprof $ga allocations, $gb bytes; valgrind $((va - va0)), $((vb - vb0))"
	[ "$ga" = "$((va - va0))" ] || fail "allocations: $ga, valgrind $((va - va0))"
	[ "$gb" = "$((vb - vb0))" ] || fail "bytes: $gb, valgrind $((vb - vb0))"
else
	echo "SKIP: valgrind comparison (no valgrind; make check installs it)"
	[ $failed = 0 ] && exit 77
fi
exit $failed
