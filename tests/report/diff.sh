#!/bin/sh
# allocprof diff: testdata/diffsite recorded with FACTOR 1 (twice) and 2;
# the only change is site_b's 500 blocks of 256 bytes. diff names site_b
# with that delta (objects and bytes), --fail-above exits 1 naming it and 0
# on two runs of the same program, and the JSON has every sample index.
# The gate: a relative limit with an absolute floor (AND), sizes with
# units, limits on the total and on the peak (against the report
# fixture's trace, whose peak is far higher), several limits OR'ed; exit
# 2, not 1, when a trace cannot be read; a note when a limit passed on a
# sampled trace's estimates.
# usage: diff.sh ALLOCPROF DIFFSITE MKTRACE
set -u
ap=$1 prog=$2 mktrace=$3
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
[ $? = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || { bad "missing trace: not exit 2 with one line"; cat "$tmp/err"; }
"$ap" diff --fail-above alloc_space=+10% "$tmp/missing.trace" "$tmp/c.trace" >/dev/null 2>&1
[ $? = 2 ] || bad "a gate on a missing trace: not exit 2"

# gate ARGS... -> "EXIT|stderr lines" of diff a c with those limits
gate() {
	"$ap" diff "$@" "$tmp/a.trace" "$tmp/c.trace" >/dev/null 2>"$tmp/err"
	echo "$?|$(tr '\n' '|' <"$tmp/err")"
}
# expect_gate WANT ARGS...
expect_gate() {
	want=$1
	shift
	got=$(gate "$@")
	[ "$got" = "$want" ] || bad "diff $*: got '$got', expected '$want'"
}
# site_b: 125kB -> 250kB (+128,000 bytes, +100%); the total 1500 -> 2000
# objects (+33.3%), 187.50kB -> 312.50kB.
expect_gate "1|allocprof: diff: site_b: alloc_space rose from 125kB to 250kB (+100%), above alloc_space=+10%,+100kB|" \
	--fail-above alloc_space=+10%,+100kB
expect_gate "0|" --fail-above alloc_space=+10%,+200kB
expect_gate "0|" --fail-above alloc_space=+200%,+1kB
expect_gate "1|allocprof: diff: site_b: alloc_space rose from 125kB to 250kB (+100%), above alloc_space=+64KiB|" \
	--fail-above alloc_space=+64KiB
expect_gate "0|" --fail-above alloc_space=+1MB
expect_gate "1|allocprof: diff: total: alloc_objects rose from 1500 to 2000 (+33.3%), above total.alloc_objects=+30%|" \
	--fail-above total.alloc_objects=+30%
expect_gate "0|" --fail-above total.alloc_objects=+40%
expect_gate "1|allocprof: diff: total: alloc_space rose from 187.50kB to 312.50kB (+66.7%), above total.alloc_space=+100kB|" \
	--fail-above total.alloc_space=+100kB --fail-above alloc_space=+1MB
expect_gate "0|" --fail-above peak=+1%
for bad_limit in alloc_objects=+1MB alloc_space=+10%, alloc_space=10% total.bogus=+1% peak=+1%,-2 total=+1%; do
	"$ap" diff --fail-above "$bad_limit" "$tmp/a.trace" "$tmp/c.trace" >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q "^allocprof: diff: --fail-above wants" "$tmp/err" || bad "--fail-above $bad_limit accepted"
done
# the peak: diffsite holds one block at a time, the fixture 21.42kB
"$mktrace" "$tmp/fx.trace" || bad "mktrace"
peak=$("$ap" stats --json "$tmp/fx.trace" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_inuse_space"])')
"$ap" diff --fail-above peak=+10%,+16kB "$tmp/a.trace" "$tmp/fx.trace" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -qx "allocprof: diff: the run: peak in-use bytes rose from 256B to .* above peak=+10%,+16kB" "$tmp/err" ||
	{ bad "peak gate (fixture peak $peak)"; cat "$tmp/err"; }
"$ap" diff --fail-above peak=+10%,+32kB "$tmp/a.trace" "$tmp/fx.trace" >/dev/null 2>&1 || bad "peak gate with a 32kB floor"
# a limit passed on a sampled trace's values says that they are estimates
# (a gate on them trips by chance); none is said for --all traces above
"$ap" record -q --rate 4K -o "$tmp/s.trace" "$prog" 2 >/dev/null || bad "record sampled"
"$ap" diff --fail-above alloc_space=+10%,+1kB "$tmp/a.trace" "$tmp/s.trace" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && [ "$(grep -c '^allocprof: note: diff: ' "$tmp/err")" = 1 ] &&
	tail -n 1 "$tmp/err" | grep -q "^allocprof: note: diff: $tmp/s.trace is sampled: its values are estimates .* record both with --all for a gate$" ||
	{ bad "a limit passed on a sampled trace: no note that it is sampled"; cat "$tmp/err"; }
exit $fail
