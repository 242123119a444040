#!/bin/bash
# allocprof export against go tool pprof (Debian golang-go): every exported
# profile must be valid (`go tool pprof -raw` exits 0), pprof's -top must
# show the same total, functions, flat and cum as `allocprof top --json` for
# all four sample indexes (drop_frames leaves each call site as the leaf),
# and the folded stacks must be the stacks pprof's -traces shows (for
# alloc_space and inuse_objects: one count index, one byte index).
#
# usage: pprof.sh ALLOCPROF SRCDIR fixture|inline|record ARGS...
#   fixture MKTRACE        tests/report's fixture trace, exact and sampled
#   inline MKTRACE_INLINE  real inlined stacks of testdata/inline.c
#   record DEMO INLINE CXX record the programs with --all (needs the sampler)
set -u
ap=$1 src=$2 mode=$3
shift 3
if ! command -v go >/dev/null 2>&1; then
	echo "SKIP: go not found (install golang-go to compare with go tool pprof)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE="$tmp/gocache" HOME="$tmp" GOFLAGS= LC_ALL=C ALLOCPROF_NO_PROGRESS=1
fail=0

pprof() {
	go tool pprof -symbolize=none -unit=byte "$@"
}

# same WHAT: $tmp/ap.txt (allocprof's) is not empty and equals
# $tmp/pprof.txt (go tool pprof's); WHAT names the two commands.
same() {
	if ! [ -s "$tmp/ap.txt" ] || ! diff -u "$tmp/pprof.txt" "$tmp/ap.txt"; then
		echo "FAIL $name: $1 differ"
		cat "$tmp/err"
		fail=1
		return 1
	fi
}

# text NAME TRACE PB ARGS...: `allocprof top ARGS` and `go tool pprof -top
# ARGS` on the export print the same table: the same nodes after pprof's
# default nodefraction, the same "Dropped" and "Showing top" lines, the
# same (inline) marks. Each flag is passed to both in pprof's spelling.
text() {
	name=$1 trace=$2 pb=$3
	shift 3
	"$ap" top "$@" "$trace" 2>"$tmp/err" | sed -n '/^Active filters:\|^Showing nodes/,$p' \
		>"$tmp/ap.txt" || fail=1
	go tool pprof -symbolize=none -top "$@" "$pb" 2>"$tmp/err" |
		sed -n '/^Active filters:\|^Showing nodes/,$p' >"$tmp/pprof.txt"
	same "allocprof top $* and go tool pprof -top $*" || return
	echo "ok $name: top $* = pprof -top ($(grep -c '%' "$tmp/ap.txt") rows)"
	grep -q '^Dropped [0-9]* nodes\? (cum <= ' "$tmp/ap.txt" && dropped=$((dropped + 1))
}
dropped=0

# peek NAME TRACE PB REGEX [ARGS...]: allocprof peek prints what
# go tool pprof -peek prints on the export, from "Showing nodes" on; a
# REGEX that matches no node fails both with pprof's words.
peek() {
	name=$1 trace=$2 pb=$3 re=$4
	shift 4
	if ! go tool pprof -symbolize=none -peek "$re" "$@" "$pb" >"$tmp/pprof.out" 2>"$tmp/pprof.err"; then
		nomatch "$name" "$re" "$tmp/pprof.out" "$tmp/pprof.err" peek "$@" "$re" "$trace"
		return
	fi
	sed -n '/^Showing nodes/,$p' "$tmp/pprof.out" >"$tmp/pprof.txt"
	"$ap" peek "$@" "$re" "$trace" 2>"$tmp/err" | sed -n '/^Showing nodes/,$p' >"$tmp/ap.txt" || fail=1
	same "allocprof peek $re $* and go tool pprof -peek" || return
	echo "ok $name: peek $re $* = pprof -peek ($(grep -c '| ' "$tmp/ap.txt") lines)"
}

# list NAME TRACE PB REGEX: allocprof list prints what go tool pprof
# -list prints on the export, except for a routine whose source file is
# not found: pprof prints an error there, allocprof a note and the lines
# with allocations (both are left out of the comparison).
list() {
	name=$1 trace=$2 pb=$3 re=$4
	"$ap" list "$re" "$trace" 2>"$tmp/err" |
		awk '/^ note: source file not found/ { skip = 1; next } /^ROUTINE|^No source/ { skip = 0 } !skip' \
			>"$tmp/ap.txt" || fail=1
	go tool pprof -symbolize=none -list "$re" "$pb" 2>"$tmp/err" |
		grep -v '^ Error: could not find file ' >"$tmp/pprof.txt"
	same "allocprof list $re and go tool pprof -list" || return
	echo "ok $name: list $re = pprof -list ($(grep -c '^ROUTINE' "$tmp/ap.txt") routines," \
		"$(grep -c '^No source' "$tmp/ap.txt") without a file)"
}

# nomatch NAME REGEX PPROF_STDOUT PPROF_STDERR ARGS...: go tool pprof
# failed on REGEX, printing nothing and "no matches found for regexp:
# REGEX"; `allocprof ARGS` must fail the same way (exit 1, stdout empty,
# that line with our prefix; and the symbolizer's warning about a program
# built without -g, which pprof has no counterpart of).
nomatch() {
	name=$1 re=$2 pout=$3 perr=$4
	shift 4
	want="no matches found for regexp: $re"
	if [ -s "$pout" ] || [ "$(cat "$perr")" != "$want" ]; then
		echo "FAIL $name: go tool pprof failed otherwise than '$want':"
		cat "$pout" "$perr"
		fail=1
		return
	fi
	"$ap" "$@" >"$tmp/ap.out" 2>"$tmp/ap.err"
	rc=$?
	if [ $rc != 1 ] || [ -s "$tmp/ap.out" ] ||
		[ "$(grep -v '^allocprof: warning: .*: no line information (built without -g' \
			"$tmp/ap.err")" != "allocprof: $want" ]; then
		echo "FAIL $name: allocprof $* exited $rc, not 1 with 'allocprof: $want' alone:"
		cat "$tmp/ap.out" "$tmp/ap.err"
		fail=1
		return
	fi
	echo "ok $name: $1 $re fails as pprof -$1 does"
}

# tree NAME TRACE PB [ARGS...]: allocprof tree prints what go tool pprof
# -tree prints on the export, from "Showing nodes" on.
tree() {
	name=$1 trace=$2 pb=$3
	shift 3
	"$ap" tree "$@" "$trace" 2>"$tmp/err" | sed -n '/^Showing nodes/,$p' >"$tmp/ap.txt" || fail=1
	go tool pprof -symbolize=none -tree "$@" "$pb" 2>"$tmp/err" |
		sed -n '/^Showing nodes/,$p' >"$tmp/pprof.txt"
	same "allocprof tree $* and go tool pprof -tree" || return
	echo "ok $name: tree $* = pprof -tree ($(grep -c '| ' "$tmp/ap.txt") lines)"
}

# cxxnames NAME TRACE PB: the C++ functions of the export are named as
# Go's pprof names them (its default demangling of system_name, run with
# the demangle package of Go's own tree); the views name their nodes so.
cxxnames() {
	name=$1 trace=$2 pb=$3
	pprof -raw "$pb" >"$tmp/raw" 2>&1 || { cat "$tmp/raw"; fail=1; return; }
	python3 "$src/compare.py" pprofnames "$tmp/raw" | sort -u >"$tmp/names"
	if ! [ -s "$tmp/names" ]; then
		echo "FAIL $name: no C++ function in the export"
		fail=1
		return
	fi
	gopath="$tmp/gopath/src/github.com/ianlancetaylor"
	mkdir -p "$gopath"
	ln -sfn "$(go env GOROOT)/src/cmd/vendor/github.com/ianlancetaylor/demangle" "$gopath/demangle"
	cut -f1 "$tmp/names" | (cd "$src" && GO111MODULE=off GOPATH="$tmp/gopath" \
		go run demangle_ref.go) >"$tmp/ref" || { fail=1; return; }
	if ! diff -u <(cut -f1 "$tmp/names" | paste - "$tmp/ref") "$tmp/names"; then
		echo "FAIL $name: Function.name is not what Go's pprof demangles system_name to"
		fail=1
	else
		echo "ok $name: $(wc -l <"$tmp/names") C++ functions named as Go's pprof names them"
	fi
}

# check NAME TRACE TOLERANCE [OPTIONS...]: export TRACE with OPTIONS
# (--drop-frames), compare with top run with the same OPTIONS; TOLERANCE
# is the rounding error allowed per sample (0 for exact traces)
check() {
	name=$1 trace=$2 tol=$3
	shift 3
	pb="$tmp/$name.pb.gz"
	if ! "$ap" export "$@" -o "$pb" "$trace" 2>"$tmp/err"; then
		echo "FAIL $name: allocprof export exited non-zero:"
		cat "$tmp/err"
		fail=1
		return
	fi
	if ! pprof -raw "$pb" >"$tmp/raw" 2>&1; then
		echo "FAIL $name: go tool pprof -raw rejects the profile:"
		cat "$tmp/raw"
		fail=1
		return
	fi
	# sampled values are rounded once per sample in the profile: a sum of
	# n samples may differ from top's rounded sum by n * tol
	if [ "$tol" = 0 ] && [ $# = 0 ]; then
		text "$name" "$trace" "$pb"
		text "$name" "$trace" "$pb" -sample_index=alloc_objects -nodecount=3
		text "$name" "$trace" "$pb" -sample_index=inuse_space -nodefraction=0.05
		text "$name" "$trace" "$pb" --focus='(?i)MAIN' -hide=main
		peek "$name" "$trace" "$pb" '.'
		peek "$name" "$trace" "$pb" '^main$|build' -sample_index=alloc_objects
		peek "$name" "$trace" "$pb" 'NOMATCH'
		if go tool pprof -symbolize=none -list NOMATCH "$pb" >"$tmp/pprof.out" 2>"$tmp/pprof.err"; then
			echo "FAIL $name: go tool pprof -list NOMATCH succeeded"
			fail=1
		else
			nomatch "$name" NOMATCH "$tmp/pprof.out" "$tmp/pprof.err" list NOMATCH "$trace"
		fi
		text "$name" "$trace" "$pb" -lines
		text "$name" "$trace" "$pb" -files
		list "$name" "$trace" "$pb" .
		text "$name" "$trace" "$pb" -nodefraction=0
		text "$name" "$trace" "$pb" -files -nodefraction=0 -edgefraction=0.01
		tree "$name" "$trace" "$pb"
		tree "$name" "$trace" "$pb" -sample_index=alloc_objects -nodecount=4 -edgefraction=0.05
		tree "$name" "$trace" "$pb" -sample_index=inuse_space -nodefraction=0 -edgefraction=0
	fi
	n=$(grep -cE '^ *-?[0-9]+( +-?[0-9]+){3,}: ' "$tmp/raw")
	tol=$(python3 -c "print($tol * $n)")
	for si in alloc_objects alloc_space inuse_objects inuse_space; do
		"$ap" top --json --nodefraction=0 --$si "$@" "$trace" >"$tmp/top.json" || fail=1
		pprof -top -nodefraction=0 -nodecount=1000000 -sample_index=$si "$pb" \
			>"$tmp/top.txt" 2>"$tmp/err" || { cat "$tmp/err"; fail=1; }
		python3 "$src/compare.py" top "$tmp/top.json" "$tmp/top.txt" "$tol" "$name $si" ||
			fail=1
		case $si in alloc_objects | inuse_space) continue ;; esac
		"$ap" export --format=folded --sample-index=$si "$@" "$trace" >"$tmp/folded" || fail=1
		pprof -traces -sample_index=$si "$pb" >"$tmp/traces" 2>"$tmp/err" ||
			{ cat "$tmp/err"; fail=1; }
		python3 "$src/compare.py" folded "$tmp/folded" "$tmp/traces" "$tmp/top.json" "$tol" \
			"$name $si folded" || fail=1
	done
}

case $mode in
fixture)
	mktrace=$1
	"$mktrace" "$tmp/fx.trace" || exit 1
	"$mktrace" "$tmp/fx-sampled.trace" 4096 || exit 1
	check fixture "$tmp/fx.trace" 0
	# an allocator wrapper; recursion through allocator frames; a
	# function that is an allocator frame in one stack and a caller in
	# another (its stack goes without allocator frames)
	check fixture-wrap "$tmp/fx.trace" 0 --drop-frames wrap_alloc
	check fixture-walk "$tmp/fx.trace" 0 --drop-frames walk
	check fixture-conflict "$tmp/fx.trace" 0 --drop-frames 'wrap_alloc|parse'
	# sampled: values are weighted estimates, rounded per sample in the
	# profile and per node in top
	check fixture-sampled "$tmp/fx-sampled.trace" 0.5 --drop-frames wrap_alloc
	;;
inline)
	mkinline=$1
	"$mkinline" "$tmp/inline.trace" >/dev/null || exit 1
	check inline "$tmp/inline.trace" 0
	# allocator frames inlined into the call site's own return address:
	# pprof trims the location's lines instead of dropping it
	check inline-zeroed "$tmp/inline.trace" 0 --drop-frames zeroed
	check inline-table "$tmp/inline.trace" 0 --drop-frames 'zeroed|table|copy_name'
	;;
record)
	for prog in "$@"; do
		name=$(basename "$prog")
		if ! "$ap" record --all -o "$tmp/$name.trace" "$prog" >/dev/null 2>"$tmp/err"; then
			echo "FAIL $name: allocprof record --all exited non-zero:"
			cat "$tmp/err"
			fail=1
			continue
		fi
		check "record-$name" "$tmp/$name.trace" 0
		# C++ functions by their short names, as pprof shows them
		# (make_point<int> and make_point<double> are one node)
		[ "$name" = cxx ] && cxxnames record-cxx "$tmp/cxx.trace" "$tmp/record-cxx.pb.gz"
	done
	# Names DWARF gives without a linkage name (an inlined template
	# constructor: "thread<main()::<lambda()> >"): the export's name and
	# system_name were both that, and pprof's default symbolization
	# (not -symbolize=none) then shortens it as demangled C++ ("thread")
	# where the views did not.
	if command -v g++ >/dev/null; then
		printf '%s\n' '#include <thread>' '#include <vector>' 'void *volatile sink;' \
			'int main() { std::vector<std::thread> ts;' \
			'for (int i = 0; i < 2; i++) ts.emplace_back([i] { std::vector<int> v(100 + i); sink = v.data(); });' \
			'for (auto &t : ts) t.join(); }' >"$tmp/threads.cpp"
		g++ -O2 -g -o "$tmp/threads" "$tmp/threads.cpp" || fail=1
		"$ap" record --all -q -o "$tmp/threads.trace" "$tmp/threads" >/dev/null 2>&1 || fail=1
		"$ap" export -o "$tmp/threads.pb.gz" "$tmp/threads.trace" 2>/dev/null || fail=1
		for lines in "" -lines; do
			"$ap" top $lines "$tmp/threads.trace" 2>/dev/null |
				sed -n '/^Showing nodes/,$p' >"$tmp/ap.txt"
			go tool pprof -top $lines "$tmp/threads.pb.gz" 2>"$tmp/err" |
				sed -n '/^Showing nodes/,$p' >"$tmp/pprof.txt"
			name=threads
			same "allocprof top $lines and go tool pprof -top $lines (its default symbolization)" &&
				echo "ok threads: top $lines = pprof -top $lines, pprof's own demangling"
		done
		grep -qE '%  thread /[^ ]*std_thread.h:[0-9]+ \(inline\)$' "$tmp/ap.txt" ||
			{ echo "FAIL threads: no node of the thread constructor"; fail=1; }
	fi
	# a focus on a small site: the edge fraction is of what focus kept
	tree record-demo "$tmp/demo.trace" "$tmp/record-demo.pb.gz" --focus=cache_result
	# The demo without symbols (pprof shows every address of a mapping
	# without any name as one node, [demo-stripped]) and without debug
	# info (its functions have no file: pprof -files names them by
	# their module, [demo-nodebug]).
	demo=$1
	objcopy --strip-all "$demo" "$tmp/demo-stripped" || fail=1
	objcopy --strip-debug "$demo" "$tmp/demo-nodebug" || fail=1
	for prog in demo-stripped demo-nodebug; do
		"$ap" record --all -o "$tmp/$prog.trace" "$tmp/$prog" >/dev/null 2>"$tmp/err" ||
			{ echo "FAIL $prog: allocprof record --all exited non-zero:"; cat "$tmp/err"; fail=1; }
		check "record-$prog" "$tmp/$prog.trace" 0
	done
	# (what the comparisons above compared: those nodes are there)
	"$ap" top "$tmp/demo-stripped.trace" 2>/dev/null | grep -q '%  \[demo-stripped\]$' ||
		{ echo "FAIL demo-stripped: top has no [demo-stripped] node"; fail=1; }
	"$ap" top --files "$tmp/demo-nodebug.trace" 2>/dev/null | grep -q '%  \[demo-nodebug\]$' ||
		{ echo "FAIL demo-nodebug: top --files has no [demo-nodebug] node"; fail=1; }
	# The folded stacks and the flame graph name that mapping's frames
	# as top and pprof do, [demo-stripped], not by their addresses: a
	# search or a callers-and-callees view of top's node finds them.
	"$ap" export --format=folded "$tmp/demo-stripped.trace" >"$tmp/stripped.folded" 2>/dev/null || fail=1
	"$ap" flamegraph --json "$tmp/demo-stripped.trace" >"$tmp/stripped.flame" 2>/dev/null || fail=1
	if ! grep -q '\[demo-stripped\]' "$tmp/stripped.folded" || grep -q 'demo-stripped+0x' "$tmp/stripped.folded" ||
		! grep -q '"name": "\[demo-stripped\]"' "$tmp/stripped.flame" || grep -q 'demo-stripped+0x' "$tmp/stripped.flame"; then
		echo "FAIL demo-stripped: folded stacks or flame graph not named [demo-stripped]:"
		head -5 "$tmp/stripped.folded"
		fail=1
	fi
	# Stacks cut at --max-depth end in the [truncated] marker in every
	# view and export (and the checks above compare them with pprof);
	# whole stacks (they reach _start) never do.
	"$ap" record --all --max-depth 3 -o "$tmp/cut.trace" "$demo" >/dev/null 2>&1 || fail=1
	check record-max-depth-3 "$tmp/cut.trace" 0
	"$ap" export --format=folded "$tmp/cut.trace" >"$tmp/cut.folded" || fail=1
	"$ap" export --format=folded "$tmp/demo.trace" >"$tmp/whole.folded" || fail=1
	if grep -qv '^\[truncated\];' "$tmp/cut.folded" || grep -q 'truncated' "$tmp/whole.folded"; then
		echo "FAIL max-depth: folded stacks without the marker (or a whole one with it):"
		cat "$tmp/cut.folded" "$tmp/whole.folded"
		fail=1
	fi
	"$ap" export --format=json "$tmp/cut.trace" >"$tmp/cut.json" || fail=1
	python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["stacks"]
bad = [s["id"] for s in st if s["frames"][-1]["function"] != "[truncated]"]
sys.exit(1 if bad or not st else 0)' "$tmp/cut.json" || { echo "FAIL max-depth: JSON stacks without the marker"; fail=1; }
	"$ap" top "$tmp/cut.trace" >"$tmp/cut.top" 2>/dev/null || fail=1
	grep -q '   100%  \[truncated\]$' "$tmp/cut.top" ||
		{ echo "FAIL max-depth: top has no [truncated] node at 100%:"; cat "$tmp/cut.top"; fail=1; }
	go tool pprof -symbolize=none -traces "$tmp/record-max-depth-3.pb.gz" 2>/dev/null >"$tmp/cut.traces"
	[ "$(grep -c '^             \[truncated\]$' "$tmp/cut.traces")" = "$(grep -c '^-----------+-' "$tmp/cut.traces" | awk '{print $1 - 1}')" ] ||
		{ echo "FAIL max-depth: pprof -traces: not every sample ends in [truncated]"; cat "$tmp/cut.traces"; fail=1; }
	;;
*)
	echo "pprof.sh: unknown mode '$mode'" >&2
	exit 2
	;;
esac
# the default nodefraction must have dropped nodes somewhere, or the
# "Dropped" line was never compared
if [ "$dropped" = 0 ]; then
	echo "FAIL $mode: no table compared had a Dropped line"
	fail=1
fi
exit $fail
