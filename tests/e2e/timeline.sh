#!/bin/bash
# allocprof timeline (issue 11 §2) on testdata/peak (64 MiB built and
# freed, 488,000 bytes leaked): the CSV's highest total is stats'
# peak_inuse_space, its last row the leak; the split names build(); the
# JSON agrees; the SVG is well-formed XML and shows in Chromium (build()'s
# area in its colour over a good part of the picture, and dark text);
# the text chart marks the peak.
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}
"$ALLOCPROF" record -q --all -o "$tmp/p.trace" -- "$TESTDATA_BUILD/peak" >/dev/null || fail "record"
"$ALLOCPROF" stats --json "$tmp/p.trace" >"$tmp/s.json" || fail "stats"
"$ALLOCPROF" timeline --format=csv "$tmp/p.trace" >"$tmp/t.csv" || fail "timeline csv"
"$ALLOCPROF" timeline --format=json "$tmp/p.trace" >"$tmp/t.json" || fail "timeline json"
"$ALLOCPROF" timeline --format=svg -o "$tmp/t.svg" "$tmp/p.trace" 2>/dev/null || fail "timeline svg"
"$ALLOCPROF" timeline "$tmp/p.trace" >"$tmp/t.txt" || fail "timeline text"
"$py" - "$tmp" <<'PY' || fail "timeline values"
import csv, json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
peak = json.load(open(d + "/s.json"))["peak_inuse_space"]
rows = list(csv.reader(open(d + "/t.csv")))
head, rows = rows[0], rows[1:]
assert head[:2] == ["time_s", "total"] and head[-1] == "other", head
assert any(h.startswith("build ") for h in head), head
totals = [float(r[1]) for r in rows]
assert max(totals) == peak, (max(totals), peak)
assert float(rows[-1][1]) == 488000, rows[-1]
for r in rows:
    assert sum(float(x) for x in r[2:]) == float(r[1]), r
j = json.load(open(d + "/t.json"))
assert j["peak_bytes"] == peak and len(j["buckets"]) == len(rows), j["peak_bytes"]
root = ET.parse(d + "/t.svg").getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
assert len(root.findall("{http://www.w3.org/2000/svg}polygon")) == len(head) - 2
txt = open(d + "/t.txt").read()
assert "peak 64MB" in txt and "@" in txt and "build peak.c:" in txt, txt
PY
# Chromium draws the SVG: a screenshot holds build()'s area in its colour
# (the first polygon's fill over white at its opacity) and the labels.
if command -v chromium >/dev/null; then
	chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/chromium" \
		--screenshot="$tmp/t.png" --window-size=1000,600 "file://$tmp/t.svg" >/dev/null 2>&1 ||
		fail "chromium could not draw the SVG"
	rgb=$("$py" - "$tmp/t.svg" <<'PY'
import re, sys
svg = open(sys.argv[1]).read()
m = re.search(r'<polygon fill="#([0-9a-f]{6})" fill-opacity="([0-9.]+)"', svg)
c, a = m.group(1), float(m.group(2))
print(",".join(str(round(a * int(c[i:i + 2], 16) + (1 - a) * 255)) for i in (0, 2, 4)))
PY
)
	read -r area text < <("$py" "$E2E_DIR/e2e.py" pixels "$tmp/t.png" "$rgb" 0,0,0 | tr '\n' ' ')
	echo "screenshot: build()'s colour $rgb on $area of the pixels, dark text on $text"
	awk -v a="$area" -v t="$text" 'BEGIN { exit !(a > 0.05 && t > 0.0002) }' ||
		fail "the screenshot does not show the chart (colour $rgb on $area, text on $text)"
else
	fail "chromium is not installed (make check installs it)"
fi
# --time-unit=B: the x axis in bytes allocated and freed (massif's).
# build() makes 64 MiB in 1 MiB blocks before anything is freed, so the
# in-use bytes climb with the clock: each bucket's total is its x less at
# most one block, and the peak is at 64 MiB. release() then frees the 64
# MiB, which moves massif's clock as much again: the axis ends at
# stats' alloc_space plus the bytes freed (alloc_space - inuse_space),
# plus what massif counts besides: 8 bytes of heap admin for each of the
# 128 allocations and frees of the 1 MiB blocks, and for each of the 488
# leaked blocks of 1000 bytes its 8 and the 8 that round it up to 16
# (1008), and the peak sits near its middle, not at its end.
"$ALLOCPROF" timeline --time-unit=B --format=csv --buckets 32 "$tmp/p.trace" >"$tmp/b.csv" || fail "timeline --time-unit=B"
"$py" - "$tmp" <<'PY' || fail "timeline --time-unit=B values"
import csv, json, sys
d = sys.argv[1]
st = json.load(open(d + "/s.json"))
rows = list(csv.reader(open(d + "/b.csv")))
assert rows[0][0] == "bytes_allocated_and_freed", rows[0]
xs = [float(r[0]) for r in rows[1:]]
tot = [float(r[1]) for r in rows[1:]]
axis = 2 * st["alloc_space"] - st["inuse_space"] + 8 * 128 + 16 * 488
assert abs(xs[-1] - axis) <= 1, (xs[-1], axis)
assert max(tot) == st["peak_inuse_space"], (max(tot), st["peak_inuse_space"])
peak_at = xs[tot.index(max(tot))]
assert 64 << 20 <= peak_at < (64 << 20) + xs[0] + 1, peak_at
for x, t in zip(xs, tot):
    if x < 64 << 20:
        assert x - (1 << 20) <= t <= x, (x, t)
print("--time-unit=B: peak at %d bytes allocated and freed, axis to %d" % (peak_at, xs[-1]))
PY
# The same axis as massif's: valgrind --tool=massif --time-unit=B on the
# same program. Each of massif's snapshots (its clock, its heap) lies on
# allocprof's chart: the bucket holding that clock peaked at the
# snapshot's heap, give or take one 1 MiB block; and ms_print's chart has
# its peak column ('#') where allocprof's text chart has its '@', as a
# share of the axis (a column either way).
VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
if [ -n "$VALGRIND" ] && command -v ms_print >/dev/null; then
	"$VALGRIND" --tool=massif --time-unit=B --peak-inaccuracy=0 \
		--massif-out-file="$tmp/ms.out" "$TESTDATA_BUILD/peak" >/dev/null 2>&1 || fail "massif"
	ms_print --x=60 "$tmp/ms.out" >"$tmp/ms.txt" || fail "ms_print"
	"$ALLOCPROF" timeline --time-unit=B --format=json --buckets 1024 "$tmp/p.trace" >"$tmp/b.json" ||
		fail "timeline --time-unit=B json"
	"$ALLOCPROF" timeline --time-unit=B "$tmp/p.trace" >"$tmp/b.txt" || fail "timeline --time-unit=B text"
	"$py" - "$tmp" <<'PY' || fail "timeline --time-unit=B against massif"
import json, re, sys
d = sys.argv[1]
snaps, cur = [], {}
for l in open(d + "/ms.out"):
    m = re.match(r"(time|mem_heap_B|mem_heap_extra_B)=(\d+)", l)
    if m:
        cur[m.group(1)] = int(m.group(2))
        if m.group(1) == "mem_heap_extra_B":
            snaps.append((cur["time"], cur["mem_heap_B"] + cur["mem_heap_extra_B"]))
j = json.load(open(d + "/b.json"))
xs = [b["bytes_allocated_and_freed"] for b in j["buckets"]]
assert len(snaps) > 10 and snaps[-1][0] >= 100 << 20, snaps[-3:]
for t, heap in snaps:
    b = next((k for k, x in enumerate(xs) if x >= t), None)
    assert b is not None, "massif's clock %d is past allocprof's axis (%d)" % (t, xs[-1])
    got = j["buckets"][b]["total"]
    assert abs(got - heap) <= (1 << 20) + (64 << 10), (t, heap, got)
# the peak's column, as a share of the axis, in the two text charts
def share(path, mark, axis_mark):
    rows = [l for l in open(path) if mark in l and "|" in l]
    axis = next(l for l in open(path) if axis_mark in l)
    width = len(re.match(r"-*", axis[axis.index("+") + 1:]).group(0))
    start = rows[0].index("|") + 1
    return (rows[0].index(mark) - start + 0.5) / width, 1.5 / width
ms, tol = share(d + "/ms.txt", "#", "+---")
ap, tol2 = share(d + "/b.txt", "@", "+---")
assert abs(ms - ap) <= tol + tol2, (ms, ap)
print("massif: %d snapshots on allocprof's B axis; the peak at %.0f%% of ms_print's axis, %.0f%% of allocprof's"
      % (len(snaps), 100 * ms, 100 * ap))
PY
else
	echo "valgrind or ms_print not found: the massif comparison is left out"
fi
"$ALLOCPROF" timeline --time-unit=i "$tmp/p.trace" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "^allocprof: timeline: --time-unit wants" "$tmp/err" || fail "bad --time-unit"
"$ALLOCPROF" timeline --format=bogus "$tmp/p.trace" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "^allocprof: timeline: --format wants" "$tmp/err" || fail "bad --format"
exit $failed
