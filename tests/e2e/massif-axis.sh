#!/bin/bash
# timeline --time-unit=B against massif (review27): testdata/massif_axis
# under valgrind --tool=massif --time-unit=B, its options left as they
# are (8 bytes of heap admin a block, its 1% peak inaccuracy). massif's
# peak snapshot is where the clock stood at timeline's peak, and holds
# the same heap: the clock counts each block as massif does (rounded up
# to 16 bytes, and its admin), a realloc that moves a block by how much
# it grew, one in place not at all, and a block shrunk in place at the
# size it kept when it is freed. The text chart's header says the same
# place. VALGRIND, else the valgrind in PATH (none: skip).
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}
need_valgrind
prog=$TESTDATA_BUILD/massif_axis
"$VALGRIND" --tool=massif --time-unit=B --massif-out-file="$tmp/ms.out" "$prog" \
	>/dev/null 2>"$tmp/vg.err" || { fail "massif: $(tail -3 "$tmp/vg.err")"; exit 1; }
"$ALLOCPROF" record -q --all -o "$tmp/a.trace" -- "$prog" >/dev/null || fail "record"
"$ALLOCPROF" timeline --time-unit=B --format=json "$tmp/a.trace" >"$tmp/t.json" ||
	fail "timeline --format=json"
"$ALLOCPROF" timeline --time-unit=B "$tmp/a.trace" >"$tmp/t.txt" || fail "timeline text"
read -r ms_at ms_heap <<<"$("$py" - "$tmp/ms.out" <<'PY'
import re, sys
cur = {}
for l in open(sys.argv[1]):
    m = re.match(r"(time|mem_heap_B|heap_tree)=(\w+)", l)
    if m:
        cur[m.group(1)] = m.group(2)
        if m.group(1) == "heap_tree" and m.group(2) == "peak":
            print(cur["time"], cur["mem_heap_B"])
PY
)"
[ -n "${ms_at:-}" ] || { fail "no peak snapshot in massif's output"; exit 1; }
expect_eq "the peak's heap, timeline's and massif's" \
	"$(jget "$tmp/t.json" peak_bytes)" "$ms_heap.0"
expect_eq "the peak's place on massif's clock, timeline's and massif's" \
	"$(jget "$tmp/t.json" peak_bytes_allocated_and_freed)" "$ms_at.0"
# the text header: "(peak 1015.43kB at 2.19MB allocated and freed, '@')",
# in pprof's units (MB: 2^20 bytes)
want=$("$py" -c 'import sys; print("%.2fMB" % (int(sys.argv[1]) / 2**20))' "$ms_at")
grep -q "^In use over bytes allocated and freed (peak .* at $want allocated and freed" "$tmp/t.txt" ||
	fail "the text header does not put the peak at $want: $(head -2 "$tmp/t.txt")"
echo "massif and timeline: peak of $ms_heap bytes at $ms_at bytes allocated and freed"
exit $failed
