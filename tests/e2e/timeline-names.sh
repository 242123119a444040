#!/bin/bash
# allocprof timeline's series are named call sites, one series per name:
# testdata/twins allocates at one line from two instances of a template
# (make_array<double>, make_array<int>), which the advisor keeps apart under
# one name. The CSV has one column per name (a duplicate header breaks
# csv readers that key by it), the text chart and the JSON one line and one
# name, holding both instances' 120,000 bytes, as top's one node does.
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}
"$ALLOCPROF" record -q --all -o "$tmp/t.trace" -- "$TESTDATA_BUILD/twins" >/dev/null || fail "record"
"$ALLOCPROF" timeline --format=csv "$tmp/t.trace" >"$tmp/t.csv" || fail "timeline csv"
"$ALLOCPROF" timeline --format=json "$tmp/t.trace" >"$tmp/t.json" || fail "timeline json"
"$ALLOCPROF" timeline "$tmp/t.trace" >"$tmp/t.txt" || fail "timeline text"
"$ALLOCPROF" top --json --inuse_space "$tmp/t.trace" >"$tmp/top.json" || fail "top"
"$py" - "$tmp" <<'PY' || fail "timeline series by name"
import csv, json, sys
d = sys.argv[1]
head = next(csv.reader(open(d + "/t.csv")))
assert len(head) == len(set(head)), "duplicate CSV columns: %s" % head
j = json.load(open(d + "/t.json"))
names = [n for n in j["sites"] if n.startswith("geo::make_array ")]
assert names == ["geo::make_array twins.cpp:12"], j["sites"]
k = j["sites"].index(names[0])
last = j["buckets"][-1]["sites"][k]
top = {r["name"]: r["flat"] for r in json.load(open(d + "/top.json"))["rows"]}
assert last == 120000 == top.get("geo::make_array"), (last, top)
lines = [l for l in open(d + "/t.txt") if "geo::make_array twins.cpp:12" in l]
assert len(lines) == 1, lines
PY
exit $failed
