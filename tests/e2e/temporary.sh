#!/bin/bash
# Temporary allocations (issue 11 §3): testdata/temporary makes 2500
# temporaries of 4500 allocations by construction (1000 in pairs(), 1500 in
# chains()), and none in handover(), which frees each block it held right
# after getting the next from the same stack. stats and top --temporary
# count them, top's header says what it counts (not heaptrack's rule), a
# sampled trace refuses the index, and heaptrack, when there, counts the
# same at pairs() and chains() and 999 more at handover(): it matches a
# free to the allocation just before it by stack and size, not by block.
# stats' temporary_heaptrack counts by heaptrack's rule and agrees.
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}
prog=$TESTDATA_BUILD/temporary
"$ALLOCPROF" record -q --all -o "$tmp/t.trace" -- "$prog" >/dev/null || fail "record"
"$ALLOCPROF" stats --json "$tmp/t.trace" >"$tmp/s.json" || fail "stats"
expect_eq "stats temporary" "$("$py" "$E2E_DIR/e2e.py" field "$tmp/s.json" temporary)" 2500
# heaptrack's rule, computed by stats too: 999 more in handover()
expect_eq "stats temporary_heaptrack" "$("$py" "$E2E_DIR/e2e.py" field "$tmp/s.json" temporary_heaptrack)" 3499
"$ALLOCPROF" top --json --temporary "$tmp/t.trace" >"$tmp/top.json" || fail "top --temporary"
flat() { "$py" -c 'import json,sys; print(int(next((r["flat"] for r in json.load(open(sys.argv[1]))["rows"] if r["name"] == sys.argv[2]), -1)))' "$tmp/top.json" "$1"; }
expect_eq "top --temporary pairs" "$(flat pairs)" 1000
expect_eq "top --temporary chains" "$(flat chains)" 1500
expect_eq "top --temporary handover" "$(flat handover_get)" -1
"$ALLOCPROF" top --temporary "$tmp/t.trace" >"$tmp/top.txt" || fail "top --temporary text"
grep -q "^Temporary: blocks freed by their own thread's next event (not heaptrack's count, which matches a free to the allocation just before it, in all threads' order, by stack and size)$" \
	"$tmp/top.txt" || { fail "top --temporary: no line saying what it counts"; cat "$tmp/top.txt"; }
"$ALLOCPROF" top -h | grep -q "not heaptrack's count" || fail "top -h: --temporary not told from heaptrack's"
"$ALLOCPROF" record -q -o "$tmp/s.trace" -- "$prog" >/dev/null || fail "record sampled"
"$ALLOCPROF" top --temporary "$tmp/s.trace" >/dev/null 2>"$tmp/err" && fail "a sampled trace gave temporaries"
grep -q "^allocprof: .*: temporary allocations need a trace recorded with --all" "$tmp/err" ||
	{ fail "sampled --temporary: no clear line"; cat "$tmp/err"; }
"$ALLOCPROF" stats "$tmp/s.trace" | grep -q '^temporary  *n/a' || fail "sampled stats: temporary not n/a"

HEAPTRACK=${HEAPTRACK:-$(command -v heaptrack || true)}
if [ -z "$HEAPTRACK" ] || ! command -v heaptrack_print >/dev/null; then
	echo "heaptrack not found: comparison left out"
	[ $failed = 0 ] && exit 77
	exit $failed
fi
(cd "$tmp" && "$HEAPTRACK" -o "$tmp/ht" "$prog" >/dev/null 2>&1) || fail "heaptrack"
# heaptrack_print's temporary sites in the program's own binary (its own
# preloaded library adds libstdc++'s emergency pool, one temporary more).
# heaptrack writes ht.zst, or ht.gz where zstd is not installed.
htfile=$(ls "$tmp"/ht.* 2>/dev/null | head -n 1)
ht=$(heaptrack_print "$htfile" 2>/dev/null | "$py" -c '
import re, sys
lines = sys.stdin.read().split("\n")
i = lines.index("MOST TEMPORARY ALLOCATIONS")
total = 0
for k in range(i + 1, len(lines)):
    if lines[k].startswith("MOST ") or lines[k].startswith("PEAK"):
        break
    m = re.match(r"(\d+) temporary allocations of \d+ allocations in total .* from$", lines[k])
    if m and k + 3 < len(lines) and lines[k + 3].strip() == "in " + sys.argv[1]:
        total += int(m.group(1))
print(total)' "$prog")
echo "heaptrack: $ht temporary allocations at the program's sites"
expect_eq "temporary vs heaptrack" "$ht" 3499
expect_eq "stats temporary_heaptrack vs heaptrack" \
	"$("$py" "$E2E_DIR/e2e.py" field "$tmp/s.json" temporary_heaptrack)" "$ht"
exit $failed
