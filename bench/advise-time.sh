#!/bin/bash
# bench/advise-time.sh: the time advise predicts a pool saves, against the
# time a pool saves when measured. advise_win (a 32 KiB scratch buffer per
# request) is recorded with --all and advised with this machine's cost
# model (allocprof calibrate); then advise_win and advise_win_pooled (the
# same program with its buffers from pool/vpool.h, the pool the advice
# means) run natively, interleaved, and the difference of their times is
# the measured saving. Not a test: nothing here asserts a time.
#
# Usage: bench/advise-time.sh [BUILD] [REQUESTS] [ROUNDS]
#        (defaults: build 400000 15)
set -eu
build=${1:-build}
n=${2:-400000}
rounds=${3:-15}
ap=$build/cli/allocprof
td=$build/testdata
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ap" record -q --all -o "$tmp/w.trace" "$td/advise_win" "$n" >/dev/null
"$ap" advise --json -n 0 "$tmp/w.trace" >"$tmp/a.json"
out=$(bench/ab.sh "$rounds" plain "$td/advise_win $n" pooled "$td/advise_win_pooled $n")
echo "$out"
/usr/bin/python3 - "$tmp/a.json" "$n" "$out" <<'PY'
import json, re, sys
a = json.load(open(sys.argv[1]))
site = next(s for s in a["sites"] if s["function"] == "handle")
pred = site["time_saved_ns"] / 1e6
t = {}
for line in sys.argv[3].splitlines():
    m = re.match(r"(\S+)\s+min ([0-9.]+) s\s+median ([0-9.]+) s", line)
    t[m.group(1)] = (float(m.group(2)), float(m.group(3)))
dmin = (t["plain"][0] - t["pooled"][0]) * 1e3
dmed = (t["plain"][1] - t["pooled"][1]) * 1e3
print("requests %s: advise predicts %.2f ms saved (verdict %s, %d allocations avoided)"
      % (sys.argv[2], pred, site["verdict"], site["allocs_avoided"]))
print("measured: %.2f ms (min), %.2f ms (median); predicted/measured %.2f (min), %.2f (median)"
      % (dmin, dmed, pred / dmin if dmin else float("nan"), pred / dmed if dmed else float("nan")))
PY
