#!/bin/bash
# bench/twins/try.sh: what `allocprof try` measures on the plain programs
# of bench/twins, beside what their hand-pooled twins save. For each
# PROGRAM (C, C++ or Rust, built by run.sh with the compiler it names):
# run.sh times plain against twin (RUNS interleaved rounds, CPU time,
# sign-test interval: the yardstick) and keeps the build; the plain
# program is recorded (--all), and `allocprof try --site SITE` (the
# program's `// site:`, RUNS rounds, advise's model as the prediction)
# runs it with the pool. Prints per program the twin's saving and try's,
# each with its interval, whether they agree (the two intervals
# overlap), and the counts try measured. try's saving is the one its
# verdict stands on: against its baseline, or, where the library alone
# moves the program by half that saving or more, against the program as
# it is (then `base` gives the other, `lib` the library's own effect,
# and try's verdict is what the two agree on).
# Not a test: nothing here asserts a time.
#
# Usage: bench/twins/try.sh [-n RUNS] [-b BUILD] [-P CPULIST] [PROGRAM...]
#   -n RUNS      rounds of each (default 7)
#   -b BUILD     the project's build directory (default build)
#   -P CPULIST   run everything (run.sh's runs with its -P, the recordings,
#                `allocprof try` and so every run it makes) under
#                `taskset -c CPULIST`; default: run.sh's own pinning, the
#                rest unpinned
#   PROGRAM      names of programs of bench/twins (default: all)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=7 build=build cpulist=
while [ $# -gt 0 ]; do
	case $1 in
	-n) runs=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	-P) cpulist=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -eu/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -eu/d'; exit 0 ;;
	*) break ;;
	esac
done
ap=$(cd "$root/$build" && pwd)/cli/allocprof
progs=("$@")
[ ${#progs[@]} -gt 0 ] || progs=(bursty zstream cache huge idle tinynodes strbuild scratch arena prodcons packets)
tset=() pin=()
if [ -n "$cpulist" ]; then
	taskset -c "$cpulist" true || { echo "try.sh: -P $cpulist: not a list of CPUs taskset can pin to" >&2; exit 2; }
	tset=(taskset -c "$cpulist") pin=(-P "$cpulist")
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$here/run.sh" -n "$runs" -b "$build" -k "$out" "${pin[@]}" --no-advise --json "$out/twins.json" "${progs[@]}" >/dev/null
for p in "${progs[@]}"; do
	src=$here/$p.c
	[ -f "$src" ] || src=$here/$p.cpp
	[ -f "$src" ] || src=$here/$p.rs
	site=$(sed -n 's|^// site: ||p' "$src")
	"${tset[@]}" "$ap" record --all -q -o "$out/$p.trace" "$out/$p" >/dev/null
	# A function that allocates at several lines (strcat's appends) names
	# several sites, and try wants one: the biggest, as run.sh takes it
	# (the model's counts; no measured replay).
	n=$("${tset[@]}" "$ap" advise --json --no-measure -n 0 "$out/$p.trace" 2>/dev/null |
		/usr/bin/python3 -c 'import json, sys
s = [x for x in json.load(sys.stdin)["sites"] if x.get("function") == sys.argv[1]]
if len(s) > 1:
    print(max(s, key=lambda x: x.get("gets", 0))["site"])' "$site") || n=
	[ -z "$n" ] || { echo "$p: $site names several sites; trying the biggest, $n" >&2; site=$n; }
	"${tset[@]}" "$ap" try --no-measure --runs "$runs" --json --site "$site" "$out/$p.trace" >"$out/$p.try.json" \
		2>"$out/$p.try.err" || true
	/usr/bin/python3 - "$out/twins.json" "$out/$p.try.json" "$p" "$out/$p.try.err" <<'PY'
import json, sys
tw = json.load(open(sys.argv[1]))
p = sys.argv[3]
t = next((x for x in (tw.get("programs") or tw) if isinstance(x, dict) and x.get("program") == p), None) \
    if isinstance(tw, (list, dict)) else None
if t is None and isinstance(tw, dict):
    t = tw.get(p)
try:
    j = json.load(open(sys.argv[2]))
except ValueError:
    print("%-10s try failed: %s" % (p, open(sys.argv[4]).read().strip()))
    sys.exit(0)
s = j["sites"][0]
c = (t or {}).get("cpu_ms", {})
tm, tl, th = c.get("saving_median"), c.get("saving_low"), c.get("saving_high")
f = s if s["baseline_stands_for_program"] else s["against_program"]
ym, yl, yh = f["time_saved_ns"] / 1e6, f["time_saved_low_ns"] / 1e6, f["time_saved_high_ns"] / 1e6
base = j["program"]["cpu_ns"] / 1e6
agree = "?"
if tm is not None:
    agree = "yes" if yl <= th and tl <= yh else "no"	# the intervals overlap
print("%-10s twin %8.1f ms [%8.1f, %8.1f]  try %8.1f ms [%8.1f, %8.1f] of %7.1f ms  agree: %-3s  "
      "try says %s%s  avoided %d, hits %d, output identical %s" %
      (p, tm or 0, tl or 0, th or 0, ym, yl, yh, base, agree, s["measured_verdict"],
       "" if s["baseline_stands_for_program"] else
       " (against the program; base %.1f ms, lib %.1f ms)" % (s["time_saved_ns"] / 1e6,
                                                            j["library_alone"]["cpu_ns"] / 1e6),
       s["allocs_avoided"], s["hits"], j["output_identical"]))
PY
done
