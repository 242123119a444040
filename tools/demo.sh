#!/bin/sh
# `make demo`: record the bundled demo program and show what allocprof says
# about it. Usage: tools/demo.sh BUILDDIR
set -eu
build=${1:-build}
ap="$build/cli/allocprof"
out="$build/demo.trace"

step() {
	printf '\n\033[1m$ %s\033[0m\n' "$*" 2>/dev/null || printf '\n$ %s\n' "$*"
	"$@"
}

step "$ap" record -o "$out" "$build/testdata/demo" 20000
step "$ap" stats "$out"
step "$ap" top --alloc_objects "$out"
step "$ap" top --alloc_space --lines -n 5 "$out"
step "$ap" list render_response "$out"
step "$ap" advise "$out"
