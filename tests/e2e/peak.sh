#!/bin/bash
# The peak views (issue 11 §1): testdata/peak builds 64 MiB in build(),
# frees it, then leaks 488,000 bytes in leak(). top --peak_space lists
# build() first with the peak's bytes, equal to stats' peak_inuse_space
# and to massif's peak snapshot (mem_heap_B and build()'s own entry);
# --peak_objects counts its 64 blocks; --inuse_space is the leak alone.
# Environment as for e2e.sh.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-peak.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
failed=0
fail() { echo "FAIL: $*"; failed=1; }
py=${E2E_PYTHON:-python3}
prog=$TESTDATA_BUILD/peak
"$ALLOCPROF" record -q --all -o "$tmp/p.trace" -- "$prog" >/dev/null || fail "record"
first() { # first JSON row of top ARGS: "name flat"
	"$ALLOCPROF" top --json "$@" "$tmp/p.trace" |
		"$py" -c 'import json,sys; r=json.load(sys.stdin)["rows"][0]; print(r["name"], int(r["flat"]))'
}
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
expect "top --peak_space" "$(first --peak_space)" "build 67108864"
expect "top --peak_objects" "$(first --peak_objects)" "build 64"
expect "top --sample_index=peak_space" "$(first --sample_index=peak_space)" "build 67108864"
expect "top --inuse_space" "$(first --inuse_space)" "leak 488000"
"$ALLOCPROF" stats --json "$tmp/p.trace" >"$tmp/s.json" || fail "stats"
expect "stats peak_inuse_space" "$("$E2E_PYTHON" "$E2E_DIR/e2e.py" field "$tmp/s.json" peak_inuse_space)" 67108864
"$ALLOCPROF" export --format=folded --peak_space "$tmp/p.trace" >"$tmp/f" || fail "export --peak_space"
grep -q ';build 67108864$' "$tmp/f" || { fail "folded --peak_space: no build 67108864"; cat "$tmp/f"; }

VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
if [ -z "$VALGRIND" ]; then
	echo "valgrind not found: massif comparison left out"
	[ $failed = 0 ] && exit 77
	exit $failed
fi
"$VALGRIND" --tool=massif --peak-inaccuracy=0 --heap-admin=0 --massif-out-file="$tmp/ms.out" \
	"$prog" >/dev/null 2>&1 || fail "massif"
read -r heap build < <("$py" - "$tmp/ms.out" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
i = lines.index("heap_tree=peak")
heap = next(l for l in reversed(lines[:i]) if l.startswith("mem_heap_B=")).split("=")[1]
build = next(re.match(r" *n\d+: (\d+) ", l).group(1) for l in lines[i:] if ": build (" in l)
print(heap, build)
PY
)
echo "massif peak: mem_heap_B $heap, build() $build"
expect "peak total vs massif" "$("$ALLOCPROF" top --json --peak_space "$tmp/p.trace" |
	"$py" -c 'import json,sys; print(int(json.load(sys.stdin)["total"]))')" "$heap"
expect "build() at the peak vs massif" "$(first --peak_space)" "build $build"
exit $failed
