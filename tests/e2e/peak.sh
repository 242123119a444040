#!/bin/bash
# The peak views (issue 11 §1): testdata/peak builds 64 MiB in build(),
# frees it, then leaks 488,000 bytes in leak(). top --peak_space lists
# build() first with the peak's bytes, equal to stats' peak_inuse_space
# and to massif's peak snapshot (mem_heap_B and build()'s own entry);
# --peak_objects counts its 64 blocks; --inuse_space is the leak alone.
# `peak realloc`: a peak a realloc reaches and the next realloc leaves.
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}
prog=$TESTDATA_BUILD/peak
"$ALLOCPROF" record -q --all -o "$tmp/p.trace" -- "$prog" >/dev/null || fail "record"
first_of() { # TRACE ARGS: first JSON row of top ARGS on TRACE, "name flat"
	local t=$1
	shift
	"$ALLOCPROF" top --json "$@" "$t" |
		"$py" -c 'import json,sys; r=json.load(sys.stdin)["rows"][0]; print(r["name"], int(r["flat"]))'
}
first() { first_of "$tmp/p.trace" "$@"; }
expect_eq "top --peak_space" "$(first --peak_space)" "build 67108864"
expect_eq "top --peak_objects" "$(first --peak_objects)" "build 64"
expect_eq "top --sample_index=peak_space" "$(first --sample_index=peak_space)" "build 67108864"
expect_eq "top --inuse_space" "$(first --inuse_space)" "leak 488000"
"$ALLOCPROF" stats --json "$tmp/p.trace" >"$tmp/s.json" || fail "stats"
expect_eq "stats peak_inuse_space" "$("$E2E_PYTHON" "$E2E_DIR/e2e.py" field "$tmp/s.json" peak_inuse_space)" 67108864
"$ALLOCPROF" export --format=folded --peak_space "$tmp/p.trace" >"$tmp/f" || fail "export --peak_space"
grep -q ';build 67108864$' "$tmp/f" || { fail "folded --peak_space: no build 67108864"; cat "$tmp/f"; }

# A peak one realloc reaches and the next leaves (massif 3.19 misses it:
# its peak snapshot holds 60 bytes): 1,000,000 bytes, swell()'s block.
"$ALLOCPROF" record -q --all -o "$tmp/r.trace" -- "$prog" realloc >/dev/null || fail "record realloc"
"$ALLOCPROF" stats --json "$tmp/r.trace" >"$tmp/r.json" || fail "stats realloc"
expect_eq "realloc peak_inuse_space" "$("$E2E_PYTHON" "$E2E_DIR/e2e.py" field "$tmp/r.json" peak_inuse_space)" 1000000
expect_eq "realloc top --peak_space" "$(first_of "$tmp/r.trace" --peak_space)" "swell 1000000"
expect_eq "realloc top --peak_objects" "$(first_of "$tmp/r.trace" --peak_objects)" "swell 1"

# Sampled (the default rate), the tables' peak is the samples' estimate at
# their own peak and stats prints the sampler's count: top --peak_space
# says so on a Peak: line with the estimate's error and the count beside
# it (as stats prints it), its JSON has both, and timeline's header gives
# the same estimate with the same error.
"$ALLOCPROF" record -q -o "$tmp/s.trace" -- "$prog" >/dev/null || fail "record sampled"
"$ALLOCPROF" stats --json "$tmp/s.trace" >"$tmp/ss.json" || fail "stats sampled"
"$ALLOCPROF" stats "$tmp/s.trace" >"$tmp/ss.txt" || fail "stats sampled text"
"$ALLOCPROF" top --peak_space "$tmp/s.trace" >"$tmp/st.txt" || fail "top --peak_space sampled"
"$ALLOCPROF" top --json --peak_space "$tmp/s.trace" >"$tmp/st.json" || fail "top --json --peak_space sampled"
"$ALLOCPROF" timeline --format=json "$tmp/s.trace" >"$tmp/tl.json" || fail "timeline sampled"
"$ALLOCPROF" timeline "$tmp/s.trace" >"$tmp/tl.txt" || fail "timeline text sampled"
"$py" - "$tmp" <<'PY' || fail "sampled peak: estimate and count"
import json, re, sys
d = sys.argv[1]
st, top, tl = (json.load(open(d + f)) for f in ("/ss.json", "/st.json", "/tl.json"))
assert st["peak_inuse_space_kind"] == "counted", st["peak_inuse_space_kind"]
pk = top["peak"]
assert pk["kind"] == "counted" and pk["bytes"] == st["peak_inuse_space"], (pk, st["peak_inuse_space"])
assert pk["within"] == st["peak_inuse_space_within"], pk
assert round(pk["estimate"]) == top["total"] == round(st["peak_inuse_space_estimate"]), (pk, top["total"])
assert abs(tl["peak_bytes"] - pk["estimate"]) <= 1 and abs(tl["peak_bytes_sd"] - pk["estimate_sd"]) <= 1, (tl, pk)
# the text: stats' counted peak as stats prints it, the estimate with its error
counted = re.search(r"^peak_inuse_space +(\S+) \(exact to within (\S+):", open(d + "/ss.txt").read(), re.M)
assert counted, "stats text"
text = open(d + "/st.txt").read()
m = re.search(r"^Peak: the values are the samples' estimate of the in-use bytes at their peak, (\S+) ± (\S+) "
              r"\(one standard deviation; the largest of many estimates, biased upward\); the sampler counted "
              r"the peak: (\S+) \(exact to within (\S+), blocks at their usable size\)$", text, re.M)
assert m, text
assert (m.group(3), m.group(4)) == counted.groups(), (m.groups(), counted.groups())
total = re.search(r"^Showing nodes accounting for \S+, \S+ of (\S+) total$", text, re.M).group(1)
assert m.group(1) == total, (m.group(1), total)
head = open(d + "/tl.txt").read().split("\n")[1]
assert ("(peak %s ± %s at " % (m.group(1), m.group(2))) in head and "estimates from samples" in head, head
assert ("the peak counted: %s " % m.group(3)) in head, head
print("sampled peak: estimate %s ± %s, counted %s" % (m.group(1), m.group(2), m.group(3)))
PY

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
expect_eq "peak total vs massif" "$("$ALLOCPROF" top --json --peak_space "$tmp/p.trace" |
	"$py" -c 'import json,sys; print(int(json.load(sys.stdin)["total"]))')" "$heap"
expect_eq "build() at the peak vs massif" "$(first --peak_space)" "build $build"
# A whole run of two peak processes one after the other (sh runs them):
# the run's peak is the most in use at one moment, where the first,
# ended, no longer counts (its 488,000 bytes left at exit counted on for
# the rest of the run before); in use at the end sums what each left.
"$ALLOCPROF" record -q --all -o "$tmp/two.trace" -- sh -c '"$0"; "$0"' "$prog" >/dev/null ||
	fail "record two in a row"
"$ALLOCPROF" stats --json "$tmp/two.trace" >"$tmp/two.json" || fail "stats two in a row"
"$py" - "$tmp/two.json" <<'PY' || fail "two in a row: the run's peak and in use"
import json, sys
d = json.load(open(sys.argv[1]))
peak, inuse = d["peak_inuse_space"], d["inuse_space"]
# 64 MiB of the second, and sh's own few kB: not the first's 488,000
ok = 67108864 <= peak < 67108864 + 488000 and inuse >= 2 * 488000
print("peak %d, in use at the end %d" % (peak, inuse))
sys.exit(0 if ok else 1)
PY
exit $failed
