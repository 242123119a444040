#!/bin/bash
# The program's time between its allocator calls (the gaps an --all trace
# carries, AP_CHUNK_F_GAPS) and the measured replay that stands it in
# (issue 22): testdata/gaps works a known time between its calls and
# prints what its own clock measured.
#  1. stats' between_calls of an --all trace is the program's measured
#     work, plus a little (the calls' own entry and exit outside the
#     timestamps), both without the stretches a preemption made longer
#     than 50 us (a loaded machine), one thread and three;
#  2. a sampled trace has none (null, no line), nor one recorded with
#     --all alone (gaps are record --gaps');
#  3. with ALLOCPROF_REPLAY_WORK=1 advise's measured baseline replay spins
#     that work: its CPU time is near the work (most of it: the work is
#     CPU); by default (the calls back to back) a small part.
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD,
# ALLOCPROF_TEST_COSTS, E2E_PYTHON.
. "$(dirname "$0")/../lib.sh"
tmp=$work
py=${E2E_PYTHON:-python3}
export ALLOCPROF_NO_PROGRESS=1
cd "$tmp" || exit 1

# 1. between_calls against the program's own measure
for t in 1 3; do
	"$ALLOCPROF" record -q --all --gaps -o g$t.trace "$TESTDATA_BUILD/gaps" 8000 2 $t >g$t.out ||
		fail "record gaps ($t threads)"
	worked=$(sed -n 's/^calls [0-9]* worked_ns \([0-9]*\) .*/\1/p' g$t.out)
	"$ALLOCPROF" stats --json g$t.trace >g$t.json || fail "stats g$t.trace"
	between=$(jq g$t.json 'j["between_calls_ns"]')
	echo "gaps, $t thread(s): the program measured ${worked} ns of work, the trace ${between} ns between calls"
	# (the calls' entry and exit outside the timestamps: tens of ns a call;
	# a gap in which the recording was preempted is past 50 us, not work,
	# and left out, as the program leaves out such a stretch of its work)
	ratio "$between" "$worked" 0.9 1.3 || fail "$t thread(s): between_calls $between ns, the program worked $worked ns"
	"$ALLOCPROF" stats g$t.trace | grep -q "^between_calls  *[0-9.]*ms (the threads' time in the program between their allocator calls" ||
		fail "stats' text: $("$ALLOCPROF" stats g$t.trace | grep between)"
done

# 2. sampled: no gaps
"$ALLOCPROF" record -q -o s.trace "$TESTDATA_BUILD/gaps" 2000 2 >/dev/null || fail "record sampled"
"$ALLOCPROF" stats --json s.trace >s.json || fail "stats s.trace"
[ "$(jq s.json 'j["between_calls_ns"]')" = None ] || fail "sampled: between_calls_ns $(jq s.json 'j["between_calls_ns"]')"
"$ALLOCPROF" stats s.trace | grep -q "^between_calls" && fail "sampled: a between_calls line"

# 2b. --all without --gaps: none (the clock is read once a call), and
# --gaps asks for --all
"$ALLOCPROF" record -q --all -o n.trace "$TESTDATA_BUILD/gaps" 2000 2 >/dev/null || fail "record --all"
"$ALLOCPROF" stats --json n.trace >n.json || fail "stats n.trace"
[ "$(jq n.json 'j["between_calls_ns"]')" = None ] || fail "--all without --gaps: between_calls_ns $(jq n.json 'j["between_calls_ns"]')"
"$ALLOCPROF" record -q --gaps -o x.trace "$TESTDATA_BUILD/gaps" 10 2 >/dev/null 2>x.err
[ $? = 2 ] && grep -q "^allocprof: record: --gaps goes with --all" x.err || fail "--gaps alone: $(cat x.err)"

# 3. the replay spins the work (one thread: its CPU time is the work's)
ALLOCPROF_REPLAY_WORK=1 "$ALLOCPROF" advise --json -n 1 --replay-cpus 1 g1.trace >a.json ||
	fail "advise g1.trace with the work"
"$ALLOCPROF" advise --json -n 1 --replay-cpus 1 g1.trace >a0.json || fail "advise g1.trace"
[ "$(jq a0.json 'j["measurement"]["work_ns"]')" = 0 ] || fail "work_ns $(jq a0.json 'j["measurement"]["work_ns"]') by default"
spun=$(jq a.json 'j["measurement"]["work_ns"]')
between=$(jq g1.json 'j["between_calls_ns"]')
# (what it spins is the trace's gaps of 50 us or less: between_calls)
ratio "$spun" "$between" 0.98 1.02 || fail "the replay spun $spun ns for $between ns between calls"
worked=$(sed -n 's/^calls [0-9]* worked_ns \([0-9]*\) .*/\1/p' g1.out)
cpu=$(jq a.json 'j["measurement"]["baseline"]["cpu_ns"]')
cpu0=$(jq a0.json 'j["measurement"]["baseline"]["cpu_ns"]')
echo "replay baseline: ${cpu} ns of CPU with the work, ${cpu0} ns without; the program worked ${worked} ns"
# (a gap the recording spent preempted is past 50 us and not spun: low
# bound loose on a loaded machine)
ratio "$cpu" "$worked" 0.4 1.5 || fail "the baseline replay took $cpu ns of CPU for $worked ns of work"
ratio "$cpu0" "$worked" 0 0.25 || fail "without the work the baseline replay took $cpu0 ns of CPU"
exit $failed
