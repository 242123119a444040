#!/bin/sh
# Replay speed of `allocprof advise`: a synthetic --all trace of 10 M events
# (or EVENTS) replayed through the pool model, events per second printed.
# Target: >= 10 M events/s.
#
# The machine is shared, so wall time moves with the load: REPS=N runs the
# timing N times (best and median printed), and CALLGRIND=1 instead counts
# the instructions ap_advise_run executes per event under callgrind (2 M
# events unless EVENTS is given), which the load does not change.
#
# usage: [REPS=N] [CALLGRIND=1] bench/replay.sh [BUILD_DIR] [EVENTS]
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-1}
ninja -C "$build" report/libapadvise.a trace/libaptrace.a util/libaputil.a >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -g -D_GNU_SOURCE -std=gnu11 -I"$root/report" -I"$root/trace" -I"$root/util" \
	"$root/bench/replay-bench.c" -o "$out/replay-bench" \
	"$build/report/libapadvise.a" "$build/trace/libaptrace.a" "$build/util/libaputil.a" \
	$(pkg-config --libs jansson libzstd) -lm
if [ "${CALLGRIND:-0}" = 1 ]; then
	events=${2:-2000000}
	valgrind --tool=callgrind --toggle-collect=ap_advise_run \
		--callgrind-out-file="$out/cg" "$out/replay-bench" "$events" >/dev/null 2>"$out/log"
	ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log")
	echo "$ir $events" | awk '{ printf "ap_advise_run: %d instructions for %d events: %.1f per event\n", $1, $2, $1 / $2 }'
	exit 0
fi
events=${2:-10000000}
i=0
while [ "$i" -lt "$reps" ]; do
	"$out/replay-bench" "$events"
	i=$((i + 1))
done | tee "$out/runs"
if [ "$reps" -gt 1 ]; then
	awk '{ print $(NF - 2) }' "$out/runs" | sort -n | awk '{ v[NR] = $1 }
		END { printf "best %.1f, median %.1f M events/s over %d runs\n", v[NR], v[int((NR + 1) / 2)], NR }'
fi
