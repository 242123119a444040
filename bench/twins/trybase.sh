#!/bin/bash
# bench/twins/trybase.sh: what `allocprof try` measures against, beside
# the program itself. try's saving is its pooled run less its baseline,
# both with its preloaded library doing the same bookkeeping (a lookup of
# the return address at each allocation, a tag test at each free, cycle
# pacing); this runs, in RUNS interleaved rounds on one CPU, the plain
# program, the plain program with the library preloaded and no config
# (the library stands aside), try's baseline and pooled runs (their
# configs as try writes them, caught from one `allocprof try --runs 1`),
# and the twin, and prints each one's medians (CPU, user, system, minor
# faults, context switches from wait4's rusage) and the paired
# differences: try's saving (base - pool), the twin's (plain - twin),
# and what the library's bookkeeping alone moves (plain - base).
# Not a test: nothing here asserts a time.
#
# Usage: bench/twins/trybase.sh [-n RUNS] [-b BUILD] [-c CPU] [-k DIR] PROGRAM
#   -n RUNS   rounds (default 9)
#   -b BUILD  the project's build directory (default build)
#   -c CPU    the CPU every run is pinned to (default 1)
#   -k DIR    build, record and keep everything there (default: a
#             temporary directory, removed)
#   PROGRAM   one program of bench/twins (C or C++; its `// site:` is
#             the site pooled)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=9 build=build cpu=1 keep=
while [ $# -gt 0 ]; do
	case $1 in
	-n) runs=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	-c) cpu=$2; shift 2 ;;
	-k) keep=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -eu/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -eu/d'; exit 0 ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { echo "usage: bench/twins/trybase.sh [-n RUNS] [-b BUILD] [-c CPU] [-k DIR] PROGRAM" >&2; exit 2; }
p=$1
bdir=$(cd "$root/$build" && pwd)
ap=$bdir/cli/allocprof
lib=$bdir/try/liballocprof-try.so
src=$here/$p.c
[ -f "$src" ] || src=$here/$p.cpp
[ -f "$src" ] || { echo "trybase.sh: no $p.c or $p.cpp in bench/twins" >&2; exit 2; }
site=$(sed -n 's|^// site: ||p' "$src")
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	out=$(cd "$keep" && pwd)
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
"$here/run.sh" -b "$build" --build-only -k "$out" "$p" >/dev/null
cc -O2 -o "$out/runstat" "$here/runstat.c"
cd "$out"
taskset -c "$cpu" "$ap" record --all -q -o "$p.trace" "./$p" >/dev/null
# try's two configs, as it writes them for its runs
rm -f cfg.*
taskset -c "$cpu" "$ap" try --no-measure --runs 1 --site "$site" "$p.trace" -- \
	sh -c 'cp "$ALLOCPROF_TRY" cfg.$$; exec "$0"' "./$p" >/dev/null 2>try.err ||
	{ cat try.err >&2; exit 1; }
for f in cfg.*; do
	m=$(sed -n 's/^mode //p' "$f")
	sed "s|^out .*|out $out/try.out|" "$f" >"cfg-$m"
	rm -f "$f"
done
[ -f cfg-base ] && [ -f cfg-pool ] || { echo "trybase.sh: try wrote no base and pool configs" >&2; exit 1; }
vars=(plain preload base pool twin)
rm -f ./*.rows
for ((r = 1; r <= runs; r++)); do
	# each round starts one further, so no variant always follows the same one
	for ((k = 0; k < ${#vars[@]}; k++)); do
		v=${vars[$(((r + k) % ${#vars[@]}))]}
		case $v in
		plain) ./runstat -s -c "$cpu" -o /dev/null -r one "./$p" ;;
		preload) LD_PRELOAD=$lib ./runstat -s -c "$cpu" -o /dev/null -r one "./$p" ;;
		base) LD_PRELOAD=$lib ALLOCPROF_TRY=$out/cfg-base ./runstat -s -c "$cpu" -o /dev/null -r one "./$p" ;;
		pool) LD_PRELOAD=$lib ALLOCPROF_TRY=$out/cfg-pool ./runstat -s -c "$cpu" -o /dev/null -r one "./$p" ;;
		twin) ./runstat -s -c "$cpu" -o /dev/null -r one "./$p.twin" ;;
		esac
		echo "$r $(cat one)" >>"$v.rows"
	done
done
/usr/bin/python3 - "$p" "$runs" "${vars[@]}" <<'PY'
import statistics as st, sys
p, runs, vars = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for v in vars:
    rows[v] = {}
    for line in open(v + ".rows"):
        f = line.split()
        r, u, s, flt, sw = int(f[0]), float(f[1]) / 1e3, float(f[2]) / 1e3, float(f[4]), int(f[7]) + int(f[8])
        rows[v][r] = (u + s, u, s, flt, sw)
print("%s, %d rounds, ms of CPU (medians):" % (p, runs))
print("%-8s %8s %8s %8s %9s %9s" % ("", "cpu", "user", "sys", "faults", "switches"))
for v in vars:
    c = list(rows[v].values())
    print("%-8s %8.1f %8.1f %8.1f %9.0f %9.0f" % (v, *(st.median(x[i] for x in c) for i in range(5))))
def diff(a, b, what):
    d = sorted(rows[a][r][0] - rows[b][r][0] for r in rows[a] if r in rows[b])
    print("%-44s %7.1f ms (from %.1f to %.1f)" % (what, st.median(d), d[0], d[-1]))
print("paired differences, median of the rounds':")
diff("base", "pool", "try's saving (base - pool)")
diff("plain", "twin", "the twin's saving (plain - twin)")
diff("plain", "base", "the library's bookkeeping alone (plain - base)")
diff("plain", "preload", "the library preloaded, standing aside")
diff("plain", "pool", "try's pooled run against the program")
PY
