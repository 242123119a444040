#!/bin/bash
# End-to-end check of one testdata program (brief F, issue 2 "Done means"):
#  1. run it natively and under `allocprof record --all`: same stdout, same
#     exit status, and the status its expected file names;
#  2. `allocprof stats --json` of the trace equals the by-construction totals
#     in testdata/<name>.expected.json (alloc_objects, alloc_space,
#     free_objects, inuse_objects, inuse_space);
#  3. the same totals equal valgrind's heap summary for the same run
#     ("total heap usage: N allocs, M frees, B bytes allocated" and "in use
#     at exit: B bytes in N blocks"). Like is compared with like: the
#     programs print with write(2), so libc allocates nothing for them before
#     or after main; where libc's own allocations cannot be known in advance
#     (thread setup, dlopen), the expected file names a baseline run and
#     both sides are compared as differences.
# Usage: e2e.sh NAME. Environment (set by tests/e2e/meson.build): ALLOCPROF,
# TESTDATA_BUILD, TESTDATA_SRC, E2E_DIR, E2E_PYTHON; VALGRIND, else the
# valgrind in PATH when the test runs (without one, steps 1-2 run and the
# test is skipped, exit 77).
VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
name=$1
exp=$TESTDATA_SRC/$name.expected.json
prog=$TESTDATA_BUILD/$name
. "$(dirname "$0")/../lib.sh"
tmp=$work

py() { "${E2E_PYTHON:-python3}" "$E2E_DIR/e2e.py" "$@"; }
# Reads the arguments of section $1 ("" = main) of the expected file.
args_of() { mapfile -t args < <(py args "$exp" "$1" "$TESTDATA_BUILD"); }

# record_and_stats TAG SECTION [ARGS...]: native run and recorded run of the
# program with ARGS; compares stdout and status; leaves $tmp/TAG.trace and
# $tmp/TAG.json (stats --json). Returns non-zero if it could not get stats.
record_and_stats() {
	local tag=$1 sec=$2
	shift 2
	local want st_native st_rec
	want=$(py get "$exp" "${sec:+$sec.}status")
	(cd "$tmp" && "$prog" "$@" >"$tag.native.out" 2>"$tag.native.err")
	st_native=$?
	"$ALLOCPROF" record --all -o "$tmp/$tag.trace" -- "$prog" "$@" \
		>"$tmp/$tag.rec.out" 2>"$tmp/$tag.rec.err"
	st_rec=$?
	echo "$name${*:+ $*}: native status $st_native, recorded status $st_rec, expected ${want:-?}"
	[ -n "$want" ] && [ "$st_native" != "$want" ] &&
		fail "$name $*: native run exited $st_native, expected $want"
	[ "$st_native" != "$st_rec" ] &&
		fail "$name $*: exit status differs: native $st_native, under record $st_rec" &&
		sed 's/^/  record stderr: /' "$tmp/$tag.rec.err"
	if ! cmp -s "$tmp/$tag.native.out" "$tmp/$tag.rec.out"; then
		fail "$name $*: stdout differs under record"
		diff -u "$tmp/$tag.native.out" "$tmp/$tag.rec.out" | sed 's/^/  /'
	fi
	if [ ! -s "$tmp/$tag.trace" ]; then
		fail "$name $*: no trace written"
		sed 's/^/  record stderr: /' "$tmp/$tag.rec.err"
		return 1
	fi
	if ! "$ALLOCPROF" stats --json --no-children "$tmp/$tag.trace" >"$tmp/$tag.json" 2>"$tmp/$tag.stats.err"; then
		fail "$name $*: allocprof stats failed"
		sed 's/^/  /' "$tmp/$tag.stats.err"
		return 1
	fi
	return 0
}

# valgrind_log TAG [ARGS...]: valgrind's log of a native run in $tmp/TAG.vg.
valgrind_log() {
	local tag=$1
	shift
	(cd "$tmp" && "$VALGRIND" --trace-children=no "$prog" "$@" \
		>/dev/null 2>"$tag.vg")
	grep -q 'total heap usage' "$tmp/$tag.vg"
}

args_of ""
record_and_stats main "" "${args[@]}" || exit 1
base=-
if [ -n "$(py get "$exp" baseline_args)" ]; then
	mapfile -t bargs < <(py get "$exp" baseline_args | sed "s|@TESTDATA@|$TESTDATA_BUILD|")
	record_and_stats base "" "${bargs[@]}" || exit 1
	base=$tmp/base.json
fi
py totals "$tmp/main.json" "$base" "$exp" "" || fail "$name: totals differ from $exp"

case $name in
abort)
	# A process that dies of a signal must leave a readable trace: stats
	# succeeded above; it is either flagged truncated, or complete with an
	# END record saying the process died of signal 6 (SIGABRT).
	tr=$(py field "$tmp/main.json" truncated)
	reason=$(py field "$tmp/main.json" end_reason)
	sig=$(py field "$tmp/main.json" end_status)
	echo "abort: truncated=$tr end_reason=${reason:-none} end_status=${sig:-none}"
	if [ "$tr" != true ] && [ "$tr" != false ]; then
		fail "abort: stats --json has no boolean 'truncated'"
	elif [ "$tr" = false ] && { [ "$reason" != signal ] || [ "$sig" != 6 ]; }; then
		fail "abort: trace complete but its END does not say signal 6"
	fi
	;;
forkexec)
	# The forked child writes its own trace, <trace>.<pid>, and its exec'd
	# image (same pid) is followed into another file next to it. Each
	# child trace is told apart by its command line (stats' argv): the
	# exec'd image runs `forkexec exec`. The parent's trace holds only the
	# parent's allocations (checked above).
	n=0
	for c in "$tmp"/main.trace.*; do
		[ -e "$c" ] || continue
		n=$((n + 1))
		if ! "$ALLOCPROF" stats --json --no-children "$c" >"$tmp/child$n.json" 2>"$tmp/child$n.err"; then
			fail "forkexec: stats failed on child trace ${c##*/}"
			sed 's/^/  /' "$tmp/child$n.err"
			continue
		fi
		last=$(py field "$tmp/child$n.json" argv | tail -n 1)
		if [ "$last" = exec ]; then
			cp "$tmp/child$n.json" "$tmp/exec.json"
			sec=exec_image
		else
			cp "$tmp/child$n.json" "$tmp/forked.json"
			sec=forked_child
		fi
		echo "child trace ${c##*/}: the $sec"
		py totals "$tmp/child$n.json" - "$exp" $sec || fail "forkexec: $sec: totals differ"
	done
	[ -e "$tmp/forked.json" ] || fail "forkexec: no trace of the forked child (<trace>.<pid>)"
	[ -e "$tmp/exec.json" ] || fail "forkexec: no trace of the exec'd child"
	# Read as a whole run (the default), the trace is the three processes'
	# sum, on one time line.
	"$ALLOCPROF" stats --json "$tmp/main.trace" >"$tmp/run.json" || fail "forkexec: stats of the run failed"
	"${E2E_PYTHON:-python3}" - "$tmp/run.json" "$tmp/main.json" "$tmp/forked.json" "$tmp/exec.json" <<'PY' || fail "forkexec: the whole run is not the sum of its processes"
import json, sys
run, *parts = [json.load(open(p)) for p in sys.argv[1:]]
ok = len(run.get("processes", [])) == 3
for k in ("alloc_objects", "alloc_space", "free_objects", "inuse_objects", "inuse_space", "calls", "bytes"):
    want = sum(p[k] for p in parts)
    print(f"whole run: {k} {run[k]}, sum of the processes {want}")
    ok = ok and run[k] == want
sys.exit(0 if ok else 1)
PY
	# A child given as well as its parent is read once, and the other
	# children still are.
	"$ALLOCPROF" stats --json "$(ls "$tmp"/main.trace.* | grep -v '\.exec[0-9]*$' | head -n 1)" "$tmp/main.trace" >"$tmp/run2.json" ||
		fail "forkexec: stats of a child and the run failed"
	[ "$(py field "$tmp/run2.json" alloc_objects)" = "$(py field "$tmp/run.json" alloc_objects)" ] ||
		fail "forkexec: a child given with its run: $(py field "$tmp/run2.json" alloc_objects) allocations, the run $(py field "$tmp/run.json" alloc_objects)"
	# The same path recorded again by a program without children: the
	# child traces left from the first run are older, and not read.
	"$ALLOCPROF" record -q --all -o "$tmp/main.trace" -- "$TESTDATA_BUILD/single" >/dev/null 2>&1 ||
		fail "forkexec: recording single over the trace failed"
	"$ALLOCPROF" stats --json "$tmp/main.trace" >"$tmp/again.json" || fail "forkexec: stats after the second record failed"
	[ -z "$(py field "$tmp/again.json" processes)" ] ||
		fail "forkexec: the second run's trace was read with the first run's children"
	;;
esac

# A program valgrind counts otherwise by design says why (no_valgrind in
# its expected file): the construction alone then.
novg=$(py get "$exp" no_valgrind)
if [ -n "$novg" ]; then
	echo "no valgrind comparison: $novg"
	exit $failed
fi
if [ -z "$VALGRIND" ]; then
	echo "SKIP: valgrind not found: no valgrind comparison (make check installs it)"
	[ $failed = 0 ] && exit 77
	exit $failed
fi
vsec=""
vstats=$tmp/main.json
if [ -n "$(py get "$exp" valgrind_variant.args)" ]; then
	# Valgrind cannot run the main variant as is (see the expected file):
	# record the variant too and compare that, with valgrind and with its
	# own by-construction totals.
	vsec=valgrind_variant
	args_of $vsec
	record_and_stats vvar $vsec "${args[@]}" || exit 1
	py totals "$tmp/vvar.json" - "$exp" $vsec || fail "$name ${args[*]}: totals differ"
	vstats=$tmp/vvar.json
else
	args_of ""
fi
valgrind_log main "${args[@]}" || { fail "$name: valgrind gave no heap summary"; exit 1; }
vbase=-
if [ "$base" != - ]; then
	valgrind_log base "${bargs[@]}" || { fail "$name: valgrind gave no heap summary"; exit 1; }
	vbase=$tmp/base.vg
fi
py valgrind "$tmp/main.vg" "$vbase" "$vstats" "$base" "$exp" "$vsec" ||
	fail "$name: allocprof and valgrind disagree"
if [ "$name" = forkexec ] && [ -e "$tmp/exec.json" ]; then
	# The exec'd image's trace against valgrind running `forkexec exec`.
	args_of exec_image
	valgrind_log exec "${args[@]}" && py valgrind "$tmp/exec.vg" - "$tmp/exec.json" - "$exp" exec_image ||
		fail "forkexec exec: allocprof and valgrind disagree"
fi
exit $failed
