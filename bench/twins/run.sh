#!/bin/bash
# bench/twins/run.sh: what a hand-pooled twin really saves, beside what
# `allocprof advise` says it would. Each program of bench/twins is built
# twice: plain, and its twin, whose `// site:` objects come from a pool.
# A C or C++ source is built with the system cc or c++ (-O2 -g; a line
# `// cc: clang` or `// cxx: clang++` names another compiler for that
# program), its twin with -DTWIN (pool/vpool.h); a Rust source (.rs) with
# `rustc -O -g`, its twin with `--cfg twin`. Plain and twin then run
# interleaved RUNS times (the order alternates: plain first in odd
# rounds, twin first in even ones), after one untimed run of each, pinned
# to CPU 0 unless the program says `// threaded` (-P pins every program,
# threaded or not, and its recordings); runstat (wait4's rusage)
# gives CPU time (user+sys), wall time, minor faults and peak RSS. The
# saving is the median of the paired differences (plain - twin, round by
# round), with a distribution-free 95% interval (order statistics of the
# sign test; with 7 runs: the smallest and largest difference, 98%
# coverage). Both programs' outputs must be identical on every run.
# Then the plain program is recorded (`allocprof record --all`, RECORDS
# times), and `allocprof advise --json -n 0` gives its verdict and time
# saved for the site (found by function name), and any `measured` object
# it has.
# Not a test: nothing here asserts a time.
#
# Usage: bench/twins/run.sh [-n RUNS] [-N MAXRUNS] [-r RECORDS] [-b BUILD]
#                           [-k DIR] [-P CPULIST] [--json FILE] [--no-advise]
#                           [PROGRAM...]
#   -n RUNS      timed runs of each of plain and twin (default 7)
#   -N MAXRUNS   after RUNS, more rounds (one at a time, up to MAXRUNS in
#                all) for a program whose CPU-time saving interval still
#                spans zero, or covers less than 95 % (under 6 rounds):
#                the twin's own measurement, without which its "within
#                35 %" cannot be judged (default MAXRUNS = RUNS: none);
#                the table names the programs that got more
#   -r RECORDS   recordings of the plain program, each advised (default 1):
#                do the verdicts hold from one recording to the next?
#   -b BUILD     the project's build directory (default build): uses
#                BUILD/cli/allocprof
#   -k DIR       build into DIR and keep it (programs, outputs, traces,
#                advise's JSON); default a temporary directory, removed
#   -P CPULIST   run every program, plain and twin, threaded or not, and
#                its `allocprof record` runs under `taskset -c CPULIST`
#                (e.g. 0, or 0-1): the trace then says how many CPUs the
#                program had, and advise's measured replay runs on as many.
#                Default: single-threaded programs on TWINS_CPU, threaded
#                ones and the recordings unpinned
#   --json FILE  also write the results as JSON to FILE (- : stdout, and
#                the text goes to stderr)
#   --no-advise  only the twins' timings
#   --build-only build the programs (into -k DIR) and stop
#   PROGRAM      names of programs (strbuild zstream ...; default all)
# Environment: CC (default cc), CXX (default c++), RUSTC (default rustc),
# TWINS_CPU (the CPU to pin to, default 0).
# Needs, besides the build's packages: zlib1g-dev (zstream), liblzma-dev
# (xzreq), clang (the programs whose `// cc:` or `// cxx:` names it), rustc
# (the .rs programs).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=7 maxruns= records=1 build=build keep= json= advise=1 only_build= cpulist=
usage() { sed -n '2,/^set -eu/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -eu/d' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	-n) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
	-N) [ $# -ge 2 ] || usage; maxruns=$2; shift 2 ;;
	-b) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	-r) [ $# -ge 2 ] || usage; records=$2; shift 2 ;;
	-k) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
	-P) [ $# -ge 2 ] || usage; cpulist=$2; shift 2 ;;
	--json) [ $# -ge 2 ] || usage; json=$2; shift 2 ;;
	--no-advise) advise=; shift ;;
	--build-only) only_build=1 advise=; shift ;;
	-h | --help) usage ;;
	--) shift; break ;;
	-*) echo "twins: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
case $runs in '' | *[!0-9]* | 0 | 1) echo "twins: -n wants a number of runs of 2 or more" >&2; exit 2 ;; esac
case $records in '' | *[!0-9]* | 0) echo "twins: -r wants a positive number of recordings" >&2; exit 2 ;; esac
maxruns=${maxruns:-$runs}
case $maxruns in '' | *[!0-9]*) echo "twins: -N wants a number of runs" >&2; exit 2 ;; esac
((maxruns >= runs)) || { echo "twins: -N $maxruns is fewer than -n $runs" >&2; exit 2; }
# -P: taskset says what is wrong with a list (no such CPU, not allowed).
tset=()
if [ -n "$cpulist" ]; then
	taskset -c "$cpulist" true || { echo "twins: -P $cpulist: not a list of CPUs taskset can pin to" >&2; exit 2; }
	tset=(taskset -c "$cpulist")
fi
# A relative BUILD is taken from the current directory, else from the
# project's top (bench/twins/../..).
case $build in /*) ;; *) [ -d "$build" ] || [ ! -d "$root/$build" ] || build=$root/$build ;; esac
ap=$build/cli/allocprof
case $ap in /*) ;; *) ap=$PWD/$ap ;; esac
if [ -n "$advise" ] && [ ! -x "$ap" ]; then
	echo "twins: $ap: not found (build the project: meson setup $build && ninja -C $build; or -b BUILD)" >&2
	exit 1
fi
cc=${CC:-cc} cxx=${CXX:-c++} rustc=${RUSTC:-rustc} cpu=${TWINS_CPU:-0}

# The programs: every .c, .cpp and .rs here with a `// site:` line.
all=()
for f in "$here"/*.c "$here"/*.cpp "$here"/*.rs; do
	[ -f "$f" ] && grep -q '^// site: ' "$f" && all+=("$(basename "${f%.*}")")
done
# src_of PROGRAM: its source file.
src_of() {
	local e
	for e in c cpp rs; do
		[ -f "$here/$1.$e" ] && { echo "$here/$1.$e"; return; }
	done
}
if [ $# -gt 0 ]; then progs=("$@"); else progs=("${all[@]}"); fi
for p in "${progs[@]}"; do
	[[ " ${all[*]} " == *" $p "* ]] || { echo "twins: $p: no such program (have: ${all[*]})" >&2; exit 2; }
done

if [ -n "$keep" ]; then
	out=$keep
	mkdir -p "$out"
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/twins.XXXXXX")
	trap 'rm -rf "$out"' EXIT
fi
out=$(cd "$out" && pwd)
# The text goes to fd 3: stdout, or stderr when the JSON takes stdout.
if [ "$json" = - ]; then exec 3>&2; else exec 3>&1; fi
say() { echo "$@" >&3; }

# Build.
cflags=(-O2 -g -D_GNU_SOURCE -I"$here" -I"$root/pool")
$cc -O2 -g -o "$out/runstat" "$here/runstat.c"
for p in "${progs[@]}"; do
	src=$(src_of "$p")
	libs=$(sed -n 's|^// libs: ||p' "$src")
	# `// cc: COMPILER` / `// cxx: COMPILER`: this program's compilers
	# (the C one also builds cxxshim.c for a C++ twin).
	pcc=$(sed -n 's|^// cc: *||p' "$src" | head -1) pcxx=$(sed -n 's|^// cxx: *||p' "$src" | head -1)
	pcc=${pcc:-$cc} pcxx=${pcxx:-$cxx}
	case $src in
	*.rs)
		# rsframes.rs is crate `rsframes`: its functions are rsframes::NAME.
		$rustc -O -g --edition 2021 --crate-name "$p" -o "$out/$p" "$src"
		$rustc -O -g --edition 2021 --crate-name "$p" --cfg twin -o "$out/$p.twin" "$src"
		;;
	*.cpp)
		$pcxx -std=c++17 "${cflags[@]}" -o "$out/$p" "$src" $libs
		$pcc -std=c11 "${cflags[@]}" -DTWIN -c -o "$out/cxxshim.o" "$here/cxxshim.c"
		$pcxx -std=c++17 "${cflags[@]}" -DTWIN -o "$out/$p.twin" "$src" "$out/cxxshim.o" $libs -pthread
		;;
	*)
		$pcc -std=c11 "${cflags[@]}" -o "$out/$p" "$src" $libs -pthread
		$pcc -std=c11 "${cflags[@]}" -DTWIN -o "$out/$p.twin" "$src" $libs -pthread
		;;
	esac
done

[ -z "$only_build" ] || exit 0

# Time: interleaved, alternating which goes first.
fail=0
for p in "${progs[@]}"; do
	src=$(src_of "$p")
	pin=(-c "$cpu") where="pinned to CPU $cpu"
	grep -q '^// threaded' "$src" && pin=() where="unpinned (threaded)"
	[ -z "$cpulist" ] || pin=() where="pinned to CPUs $cpulist (-P), recordings too"
	say "== $p: $runs runs of plain and twin, $where"
	for v in "$p" "$p.twin"; do	# warm-up: page cache, CPU frequency
		"${tset[@]}" "$out/runstat" "${pin[@]}" -o /dev/null -r /dev/null "$out/$v" || true
	done
	rm -f "$out/$p.expect"
	: >"$out/$p.times"
	for ((r = 1; r <= maxruns; r++)); do
		if ((r > runs)) && ! /usr/bin/python3 "$here/summarize.py" --spans-zero "$out" "$p"; then
			break
		fi
		((r <= runs)) || say "   round $r: the saving's interval still spans zero, or is short of 95 %"
		if ((r % 2)); then order=("$p" "$p.twin"); else order=("$p.twin" "$p"); fi
		for v in "${order[@]}"; do
			kind=plain
			[ "$v" = "$p.twin" ] && kind=twin
			if ! "${tset[@]}" "$out/runstat" "${pin[@]}" -o "$out/$v.out" -r "$out/$v.rus" "$out/$v"; then
				say "twins: $v failed (run $r): $(cat "$out/$v.rus" 2>/dev/null)"
				fail=1
			fi
			echo "$r $kind $(cat "$out/$v.rus")" >>"$out/$p.times"
			if [ ! -f "$out/$p.expect" ]; then
				cp "$out/$v.out" "$out/$p.expect"
			elif ! cmp -s "$out/$v.out" "$out/$p.expect"; then
				say "twins: $v: output differs from the first run's (run $r):"
				diff "$out/$p.expect" "$out/$v.out" | head -4 >&3 || true
				echo "$r $kind output-differs" >>"$out/$p.times"
				fail=1
			fi
		done
	done
	# The twin's vpool_cycle count, beside the cycles advise's model puts in the plain trace.
	TWIN_VERBOSE=1 "$out/$p.twin" 2>&1 >/dev/null | sed -n 's/^twin: \([0-9]*\) cycles$/\1/p' >"$out/$p.cycles" || true
	if [ -n "$advise" ]; then
		# Recording i (1..RECORDS): PROGRAM.trace and PROGRAM.advise.json
		# for the first, PROGRAM.<i>.trace and PROGRAM.advise.<i>.json after.
		for ((i = 1; i <= records; i++)); do
			t=$p.trace j=$p.advise.json
			((i == 1)) || t=$p.$i.trace j=$p.advise.$i.json
			rm -f "$out/$t" "$out/$t".* "$out/$j"
			if ! (cd "$out" && "${tset[@]}" "$ap" record --all -q -o "$t" "./$p" >/dev/null); then
				say "twins: $p: allocprof record failed"
				fail=1
				continue
			fi
			if ! "$ap" advise --json -n 0 "$out/$t" >"$out/$j" 2>"$out/$p.advise.err"; then
				say "twins: $p: allocprof advise failed: $(tail -1 "$out/$p.advise.err")"
				rm -f "$out/$j"
				fail=1
			fi
		done
	fi

	/usr/bin/python3 "$here/summarize.py" --one "$out" "$p" "$src" >&3
done

/usr/bin/python3 "$here/summarize.py" --table "$out" "$runs" "${progs[@]}" >&3
if [ -n "$json" ]; then
	if [ "$json" = - ]; then
		/usr/bin/python3 "$here/summarize.py" --json "$out" "$runs" "${progs[@]}"
	else
		/usr/bin/python3 "$here/summarize.py" --json "$out" "$runs" "${progs[@]}" >"$json"
	fi
fi
exit $fail
