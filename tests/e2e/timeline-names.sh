#!/bin/bash
# Two instances of a template allocating at one line are two sites (two
# pools, of two types) named apart: testdata/twins allocates at one line
# from make_array<double> and make_array<int>. The advisor names them with
# their template arguments (it named both `geo::make_array twins.cpp:12`),
# and the timeline's series are the same two names: a CSV column each (a
# duplicate header breaks csv readers that key by it), one line each in
# the text chart and the JSON, 80,000 and 40,000 bytes, together top's one
# node (top names functions as pprof does, without template arguments).
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
"$ALLOCPROF" advise --no-measure --json -n 0 "$tmp/t.trace" >"$tmp/advise.json" || fail "advise"
"$py" - "$tmp" <<'PY' || fail "timeline series by name"
import csv, json, sys
d = sys.argv[1]
head = next(csv.reader(open(d + "/t.csv")))
assert len(head) == len(set(head)), "duplicate CSV columns: %s" % head
j = json.load(open(d + "/t.json"))
want = ["geo::make_array<double> twins.cpp:12", "geo::make_array<int> twins.cpp:12"]
names = [n for n in j["sites"] if n.startswith("geo::make_array")]
assert names == want, j["sites"]
last = [j["buckets"][-1]["sites"][j["sites"].index(n)] for n in names]
top = {r["name"]: r["flat"] for r in json.load(open(d + "/top.json"))["rows"]}
assert last == [80000, 40000] and sum(last) == top.get("geo::make_array"), (last, top)
for n in names:
    lines = [l for l in open(d + "/t.txt") if l.rstrip().endswith(n)]
    assert len(lines) == 1, (n, lines)
adv = [s["site"] for s in json.load(open(d + "/advise.json"))["sites"] if s["function"] == "geo::make_array"]
assert sorted(adv) == want, adv
PY
exit $failed
