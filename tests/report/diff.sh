#!/bin/sh
# allocprof diff: testdata/diffsite recorded with FACTOR 1 (twice) and 2;
# the only change is site_b's 500 blocks of 256 bytes. diff names site_b
# with that delta (objects and bytes), --fail-above exits 1 naming it and 0
# on two runs of the same program, and the JSON has every sample index.
# usage: diff.sh ALLOCPROF DIFFSITE
set -u
ap=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1
fail=0
bad() { echo "FAIL $*"; fail=1; }
"$ap" record -q --all -o "$tmp/a.trace" "$prog" 1 >/dev/null || bad "record a"
"$ap" record -q --all -o "$tmp/b.trace" "$prog" 1 >/dev/null || bad "record b"
"$ap" record -q --all -o "$tmp/c.trace" "$prog" 2 >/dev/null || bad "record c"

"$ap" diff --alloc_objects "$tmp/a.trace" "$tmp/c.trace" >"$tmp/out" || bad "diff exit $?"
line=$(grep ' site_b$' "$tmp/out")
[ "$(echo $line)" = "500 1000 +500 +100% site_b" ] || { bad "alloc_objects row: '$line'"; cat "$tmp/out"; }
grep -q '^Total: 1500 -> 2000 (+500, +33.3%)$' "$tmp/out" || { bad "total line"; cat "$tmp/out"; }
[ "$(grep -c '%  ' "$tmp/out")" = 2 ] || { bad "more than site_b changed"; cat "$tmp/out"; }
"$ap" diff --json "$tmp/a.trace" "$tmp/c.trace" >"$tmp/j" || bad "diff --json"
/usr/bin/python3 - "$tmp/j" <<'PY' || bad "json"
import json, sys
d = json.load(open(sys.argv[1]))
for si in ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "peak_objects",
           "peak_space", "temporary"):
    assert si in d, si
rows = {r["name"]: r for r in d["alloc_space"]["rows"]}
assert rows["site_b"]["delta_flat"] == 128000, rows["site_b"]
assert rows["site_a"]["delta_flat"] == 0, rows["site_a"]
assert d["alloc_objects"]["rows"][0]["name"] == "site_b", d["alloc_objects"]["rows"][0]
PY

"$ap" diff --fail-above alloc_objects=+10% "$tmp/a.trace" "$tmp/c.trace" >/dev/null 2>"$tmp/err"
[ $? = 1 ] || bad "--fail-above over the limit: exit not 1"
grep -qx 'allocprof: diff: site_b: alloc_objects rose from 500 to 1000 (+100%), above alloc_objects=+10%' "$tmp/err" ||
	{ bad "--fail-above: no line naming site_b"; cat "$tmp/err"; }
[ "$(wc -l <"$tmp/err")" = 1 ] || { bad "--fail-above named more than site_b"; cat "$tmp/err"; }
"$ap" diff --fail-above alloc_space=+200000 "$tmp/a.trace" "$tmp/c.trace" >/dev/null 2>&1 ||
	bad "--fail-above +200000 bytes: 128000 more is under it"
"$ap" diff --fail-above alloc_objects=+10% --fail-above alloc_space=+1% "$tmp/a.trace" "$tmp/b.trace" \
	>/dev/null 2>"$tmp/err" || { bad "two runs of the same program failed the gate"; cat "$tmp/err"; }
"$ap" diff --fail-above bogus "$tmp/a.trace" "$tmp/c.trace" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "^allocprof: diff: --fail-above wants" "$tmp/err" || bad "bad --fail-above"
"$ap" diff "$tmp/a.trace" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "^allocprof: diff: two traces are needed" "$tmp/err" || bad "one trace"
"$ap" diff "$tmp/a.trace" "$tmp/missing.trace" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || { bad "missing trace"; cat "$tmp/err"; }
exit $fail
