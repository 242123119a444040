#!/bin/bash
# bench/tui-views.sh: what each view switch of `allocprof tui` costs on a
# large --all trace (python3 with PYTHONMALLOC=malloc building and parsing
# a JSON document: ~8 M events at the default size). `tui --batch` applies
# a key sequence and prints the screen; the wall time of a sequence less
# that of opening the trace alone is how long its keys take. The
# timeline's and the advisor's replays run on a worker thread from the
# start: in --batch a `T` or `a` waits for it (in the terminal the other
# views stay usable meanwhile), so their number is how long that view
# takes to open when its key is the first one pressed. The minimum of
# ROUNDS runs, taken in turns, is reported (a busy machine only adds).
# Not a test: nothing here asserts a time.
#
# Usage: bench/tui-views.sh [BUILD] [ITEMS] [ROUNDS]
#        (defaults: build 160000 5)
set -eu
build=${1:-build}
n=${2:-160000}
rounds=${3:-5}
ap=$build/cli/allocprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONMALLOC=malloc "$ap" record -q --all -o "$tmp/big.trace" /usr/bin/python3 -c "
import json
d = [{'k%d' % i: [i, str(i)]} for i in range($n)]
e = json.loads(json.dumps(d))
"
ALLOCPROF_NO_PROGRESS=1 /usr/bin/python3 - "$ap" "$tmp/big.trace" "$rounds" <<'PY'
import json, os, subprocess, sys, time
ap, trace, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
events = json.loads(subprocess.run([ap, "stats", "--json", trace], capture_output=True,
                                   text=True, check=True).stdout)["events"]
print("trace: %d events, %d bytes" % (events, os.path.getsize(trace)))

def cpu(keys):
    t0 = time.monotonic()
    p = subprocess.Popen([ap, "tui", "--batch", "--keys", keys, trace],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, keys
    return time.monotonic() - t0

seqs = (("", "open the trace (no keys)"),
        ("s", "s: the next sample index, new"),
        ("ssssss", "s x6: every index, new"),
        ("sssssss", "s x7: back to the first, cached"),
        ("g", "g: lines granularity, new"),
        ("<enter>", "Enter: callers/callees"),
        ("<enter>j<enter><bs>", "Enter, to a callee, back"),
        ("<enter>s", "Enter, then s there"),
        ("T", "T: the timeline, first"),
        ("TqT", "T, back, T again: cached"),
        ("T<resize:120x30>", "T, then a resize (one replay)"),
        ("a", "a: the advisor, first"),
        ("aqa", "a, back, a again: cached"))
# Round-robin, so that a busy stretch of the machine hits every sequence.
best = {}
for _ in range(rounds):
    for keys, _what in seqs:
        t = cpu(keys)
        best[keys] = min(best.get(keys, t), t)
base = best[""]
print("%-34s %8.2f s" % (seqs[0][1], base))
for keys, what in seqs[1:]:
    print("%-34s %+8.2f s   (keys %s)" % (what, best[keys] - base, keys))
PY
