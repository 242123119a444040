#!/bin/bash
# The program's time between its allocator calls (the gaps an --all trace
# carries, AP_CHUNK_F_GAPS) and the measured replay that stands it in
# (issue 22): testdata/gaps works a known time between its calls and
# prints what its own clock measured.
#  1. stats' between_calls of an --all trace is the program's measured
#     work, plus a little (the calls' own entry and exit outside the
#     timestamps), both without the stretches a preemption made longer
#     than 50 us (a loaded machine), one thread and three;
#  2. a sampled trace has none (null, no line);
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD,
# ALLOCPROF_TEST_COSTS, E2E_PYTHON.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-gaps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
py=${E2E_PYTHON:-python3}
jq() { "$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# ratio A B LOW HIGH: is A/B within [LOW, HIGH]?
ratio() { "$py" -c 'import sys; a, b, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if b > 0 and lo <= a / b <= hi else 1)' "$@"; }
export ALLOCPROF_NO_PROGRESS=1
cd "$tmp" || exit 1

# 1. between_calls against the program's own measure
for t in 1 3; do
	"$ALLOCPROF" record -q --all -o g$t.trace "$TESTDATA_BUILD/gaps" 8000 2 $t >g$t.out ||
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

exit $failed
