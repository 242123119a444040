#!/bin/bash
# allocprof timeline (issue 11 §2) on testdata/peak (64 MiB built and
# freed, 488,000 bytes leaked): the CSV's highest total is stats'
# peak_inuse_space, its last row the leak; the split names build(); the
# JSON agrees; the SVG is well-formed XML; the text chart marks the peak.
# Environment as for e2e.sh.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-timeline.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
failed=0
fail() { echo "FAIL: $*"; failed=1; }
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
"$ALLOCPROF" timeline --format=bogus "$tmp/p.trace" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "^allocprof: timeline: --format wants" "$tmp/err" || fail "bad --format"
exit $failed
