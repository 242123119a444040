#!/bin/sh
# Replay speed of `allocprof advise`: a synthetic --all trace of 10 M events
# (or $1) replayed through the pool model, events per second printed.
# Target: >= 10 M events/s. usage: bench/replay.sh [BUILD_DIR] [EVENTS]
set -eu
build=${1:-build}
events=${2:-10000000}
root=$(cd "$(dirname "$0")/.." && pwd)
ninja -C "$build" report/libapadvise.a trace/libaptrace.a util/libaputil.a >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -D_GNU_SOURCE -std=gnu11 -I"$root/report" -I"$root/trace" -I"$root/util" \
	"$root/bench/replay-bench.c" -o "$out/replay-bench" \
	"$build/report/libapadvise.a" "$build/trace/libaptrace.a" "$build/util/libaputil.a" \
	$(pkg-config --libs jansson) -lm
"$out/replay-bench" "$events"
