#!/bin/bash
# bench/measure.sh: what advise's measured replay costs. Each workload is
# recorded with --all, then advised with a fixed number of rounds (the
# budget set high, the rounds capped by the tightness rule or 50); the
# figures are the replay's own: events in the trace, ops in the script,
# one baseline run's CPU and wall time, and the wall time of the whole
# measurement per round and per measured site (a round runs the baseline
# and every site once, each in a fresh process). Not a test: nothing here
# asserts a time.
#
# Usage: bench/measure.sh [BUILD] [SITES]   (defaults: build 6)
set -eu
build=${1:-build}
sites=${2:-6}
ap=$build/cli/allocprof
here=$(cd "$(dirname "$0")" && pwd)
out=${BENCH_OUT:-$here/out}
mkdir -p "$out"
cc=${CC:-cc}
$cc -O2 -o "$out/mixed" "$here/mixed.c"
$cc -O2 -o "$out/realloc" "$here/realloc.c"
run() {	# name, command...
	local name=$1
	shift
	"$ap" record -q --all -o "$out/m-$name.trace" -- "$@" >/dev/null
	"$ap" advise --json -n 0 --measure-sites "$sites" --measure-time 60s "$out/m-$name.trace" \
		>"$out/m-$name.json"
	/usr/bin/python3 - "$name" "$out/m-$name.json" "$out/m-$name.trace" "$ap" <<'PY'
import json, subprocess, sys
name, js, trace, ap = sys.argv[1:5]
a = json.load(open(js))
st = json.loads(subprocess.run([ap, "stats", "--json", trace], capture_output=True, text=True).stdout)
m = a["measurement"]
if not m["sites"]:
    print("%-10s %10d events: not measured (%s)" % (name, st["events"], m.get("why_not")))
    sys.exit(0)
rounds = max(s["measured"]["rounds"] for s in a["sites"] if s["time_source"] == "measured")
b = m["baseline"]
runs = rounds * (m["sites"] + 1)
print("%-10s %10d events %10d ops  base run %7.1f ms CPU %7.1f ms wall  %2d sites x %2d rounds in %6.2f s:"
      " %6.1f ms a run, %6.1f ms a run per M ops"
      % (name, st["events"], m["replay_ops"], b["cpu_ns"] / 1e6, b["wall_ns"] / 1e6, m["sites"],
         rounds, m["wall_ns"] / 1e9, m["wall_ns"] / 1e6 / runs, m["wall_ns"] / 1e6 / runs / (m["replay_ops"] / 1e6)))
PY
}
run demo "$build/testdata/demo" 20000
run mixed "$out/mixed" 2000000
run realloc "$out/realloc" 100000
run burst "$build/testdata/advise_burst" 1000
PYTHONMALLOC=malloc run python3 /usr/bin/python3 "$here/alloc_heavy.py" 20000
