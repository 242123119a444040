#!/bin/bash
# Sampled accuracy (issue 2 "Done means"): bigalloc allocates 1.06 GiB from
# three sites of known sizes; recorded at the default rate (512 KiB) and at
# --rate 64K, `allocprof stats --json` must estimate alloc_space and
# alloc_objects within 4 standard errors of the truth. e2e.py's `sampled`
# derives the standard errors exactly from the sizes (Horvitz-Thompson
# variance; about 1/sqrt(total_bytes / R) relative for bytes) and explains
# the bound: a 4-sigma miss has probability ~6e-5 for a random seed, and the
# seed is fixed here (ALLOCPROF_TEST_SEED), so the test is deterministic.
# Also: same stdout and status as the native run, and the trace's rate.
# Usage: sampled.sh EXPECTED_RATE [RECORD-OPTION...], e.g. `sampled.sh 65536
# --rate 64K`; environment as for e2e.sh.
want_rate=$1
shift
name=bigalloc
exp=$TESTDATA_SRC/$name.expected.json
prog=$TESTDATA_BUILD/$name
. "$(dirname "$0")/../lib.sh"
tmp=$work

"$prog" >"$tmp/native.out"
st_native=$?
ALLOCPROF_TEST_SEED=${ALLOCPROF_TEST_SEED:-20240611} \
	"$ALLOCPROF" record "$@" -o "$tmp/t.trace" -- "$prog" >"$tmp/rec.out" 2>"$tmp/rec.err"
st_rec=$?
[ "$st_native" = "$st_rec" ] || fail "exit status: native $st_native, under record $st_rec"
cmp -s "$tmp/native.out" "$tmp/rec.out" || fail "stdout differs under record"
if ! "$ALLOCPROF" stats --json "$tmp/t.trace" >"$tmp/t.json" 2>"$tmp/stats.err"; then
	fail "allocprof stats failed"
	cat "$tmp/rec.err" "$tmp/stats.err"
	exit 1
fi
rate=$("${E2E_PYTHON:-python3}" "$E2E_DIR/e2e.py" field "$tmp/t.json" rate)
echo "trace rate: $rate (expected $want_rate); $("${E2E_PYTHON:-python3}" "$E2E_DIR/e2e.py" field "$tmp/t.json" samples) samples, $(stat -c %s "$tmp/t.trace") bytes"
[ "$rate" = "$want_rate" ] || fail "trace says rate $rate, expected $want_rate"
"${E2E_PYTHON:-python3}" "$E2E_DIR/e2e.py" sampled "$tmp/t.json" "$exp" "$rate" || fail "estimates outside 4 standard errors"
exit $failed
