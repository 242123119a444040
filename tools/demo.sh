#!/bin/sh
# `make demo`: record the bundled demo program (testdata/demo.c, a toy
# request server) and show what allocprof says about it.
# Usage: tools/demo.sh BUILDDIR
set -eu
build=${1:-build}
ap="$build/cli/allocprof"
out="$build/demo.trace"

if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); else bold= plain=; fi
step() {
	printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"
	"$@"
}

# --all records every allocation, so the numbers below are exact; without
# it allocprof samples (one sample per 512 KiB on average) and estimates.
step "$ap" record --all -o "$out" "$build/testdata/demo" 20000
step "$ap" stats "$out"
step "$ap" top --alloc_objects "$out"
step "$ap" top --alloc_space --lines -n 5 "$out"
step "$ap" list render_response "$out"
step "$ap" advise "$out"
