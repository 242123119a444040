#!/bin/sh
# Golden tests of `allocprof top` and `list`: the fixture trace (real call
# chains of fixture.c, allocation counts fixed by fixture.h) through each
# view, text and JSON, compared with expected/<case> by `diff -u`. Source
# paths are machine-specific and are rewritten to @SRC@ first.
# usage: golden.sh ALLOCPROF MKTRACE MKTRACE_MOVED SRCDIR
# ALLOCPROF_UPDATE_GOLDEN=1 rewrites the expected files instead.
set -u
ap=$1 mktrace=$2 mktrace_moved=$3 src=$4
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$mktrace" "$tmp/fx.trace" || exit 1
"$mktrace" "$tmp/fx-sampled.trace" 4096 || exit 1
"$mktrace_moved" "$tmp/fx-moved.trace" || exit 1

# golden NAME ARGS...: runs allocprof ARGS, compares stdout with expected/NAME
golden() {
	name=$1
	shift
	if ! "$ap" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL $name: allocprof $* exited non-zero:"
		cat "$tmp/err"
		fail=1
		return
	fi
	sed -E 's#[^ "]*tests/report/#@SRC@/#g' "$tmp/out" >"$tmp/$name"
	if [ "${ALLOCPROF_UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$tmp/$name" "$src/expected/$name"
	elif ! diff -u "$src/expected/$name" "$tmp/$name"; then
		echo "FAIL $name: allocprof $*"
		fail=1
	fi
}

golden top.txt top "$tmp/fx.trace"
golden top-cum-n3.txt top --cum -n 3 "$tmp/fx.trace"
golden top-objects-lines.txt top --alloc_objects --lines "$tmp/fx.trace"
golden top-files.txt top --files "$tmp/fx.trace"
golden top-inuse-space.txt top --inuse_space "$tmp/fx.trace"
golden top-inuse-objects.txt top --inuse_objects "$tmp/fx.trace"
golden top-focus.txt top --focus '^parse$' --ignore make_token "$tmp/fx.trace"
golden top-drop-frames.txt top --drop-frames '^wrap_alloc$' "$tmp/fx.trace"
golden top-sampled.txt top --alloc_objects "$tmp/fx-sampled.trace"
# the peak of a sampled trace: the estimate with its error, on a Peak: line
golden top-peak-sampled.txt top --peak_space "$tmp/fx-sampled.trace"
# pprof's spellings, its regex dialect, show/hide, nodefraction
golden top-pprof-flags.txt top -nodecount=3 -sample_index=alloc_objects --focus '(?i)PARSE|WALK' "$tmp/fx.trace"
golden top-hide.txt top --alloc_objects -hide=make_token --show '^(main|parse|make_token|walk|alloc_small)$' "$tmp/fx.trace"
golden top-nodefraction.txt top -nodefraction=0.05 "$tmp/fx.trace"
golden top-trim-false.txt top --alloc_objects -trim=false -n 2 "$tmp/fx-sampled.trace"
golden top.json top --json "$tmp/fx.trace"
golden top-lines.json top --json --lines --alloc_objects -n 4 "$tmp/fx.trace"
golden top-files.json top --json --files "$tmp/fx.trace"
golden list-walk.txt list '^walk$' "$tmp/fx.trace"
golden list-parse.txt list --alloc_objects 'parse|make_token' "$tmp/fx.trace"
golden list-grow.json list --json '^grow$' "$tmp/fx.trace"
golden list-moved.txt list '^walk$' "$tmp/fx-moved.trace"
golden list-moved.json list --json '^walk$' "$tmp/fx-moved.trace"
golden list-source-path.txt list --source-path "/nonexistent:$src" '^walk$' "$tmp/fx-moved.trace"

exit $fail
