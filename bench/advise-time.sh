#!/bin/bash
# bench/advise-time.sh: the time advise predicts a pool saves, against the
# time a pool saves when measured. advise_win (a 32 KiB scratch buffer per
# request) is recorded with --all and advised with this machine's cost
# model (allocprof calibrate); then advise_win and advise_win_pooled (the
# same program with its buffers from pool/vpool.h, the pool the advice
# means) run natively, interleaved, and the difference of their times is
# the measured saving: CPU time (perf stat's task-clock, which a busy
# machine disturbs less) when perf is there, and wall time. Both programs
# run pinned to one CPU (taskset -c 0, BENCH_CPU to choose): the CPUs of
# this VM run the same loop at different speeds. Not a test: nothing here
# asserts a time.
#
# Usage: bench/advise-time.sh [BUILD] [REQUESTS] [ROUNDS]
#        (defaults: build 400000 15)
set -eu
build=${1:-build}
n=${2:-400000}
rounds=${3:-15}
ap=$build/cli/allocprof
td=$build/testdata
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ap" record -q --all -o "$tmp/w.trace" "$td/advise_win" "$n" >/dev/null
"$ap" advise --json -n 0 "$tmp/w.trace" >"$tmp/a.json"
/usr/bin/python3 - "$tmp/a.json" "$n" "$rounds" "$td/advise_win" "$td/advise_win_pooled" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
adv, n, rounds, plain, pooled = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
site = next(s for s in json.load(open(adv))["sites"] if s["function"] == "handle")
pred = site["time_saved_ns"] / 1e6
perf = shutil.which("perf")
pin = ["taskset", "-c", os.environ.get("BENCH_CPU", "0")] if shutil.which("taskset") else []
cpu = {plain: [], pooled: []}
wall = {plain: [], pooled: []}
for _ in range(rounds):
    for prog in (plain, pooled):
        if perf:
            t0 = time.perf_counter()
            p = subprocess.run(pin + [perf, "stat", "-x,", "-e", "task-clock", prog, n],
                               capture_output=True, text=True, check=True)
            wall[prog].append(time.perf_counter() - t0)
            cpu[prog].append(float(p.stderr.strip().splitlines()[-1].split(",")[0]) / 1e3)
        else:
            t0 = time.perf_counter()
            subprocess.run(pin + [prog, n], stdout=subprocess.DEVNULL, check=True)
            wall[prog].append(time.perf_counter() - t0)
print("requests %s: advise predicts %.2f ms saved (verdict %s, %d allocations avoided)"
      % (n, pred, site["verdict"], site["allocs_avoided"]))
for what, t in (("cpu time", cpu), ("wall time", wall)):
    if not t[plain]:
        continue
    dmin = (min(t[plain]) - min(t[pooled])) * 1e3
    dmed = (statistics.median(t[plain]) - statistics.median(t[pooled])) * 1e3
    print("%s over %d rounds: plain min %.2f ms, pooled min %.2f ms; measured saving %.2f ms (min), "
          "%.2f ms (median); predicted/measured %.2f (min), %.2f (median)"
          % (what, rounds, min(t[plain]) * 1e3, min(t[pooled]) * 1e3, dmin, dmed,
             pred / dmin if dmin else float("nan"), pred / dmed if dmed else float("nan")))
PY
