#!/usr/bin/env python3
"""End-to-end checks of `allocprof advise` on the advise_* testdata programs.

usage: advise-e2e.py verdict PROGRAM EXPECTED [ADVISE OPTIONS...] [-- RECORD OPTIONS]
       advise-e2e.py pooled PROGRAM POOLED_PROGRAM

verdict: records PROGRAM with --all and in the default sampled mode (or
with the record options after --, e.g. a smaller --rate), runs advise --json
with the fixed cost table, and checks that the site marked `/* SITE: ... */`
in the program's source gets the EXPECTED verdict in both, and that the
sampled run saw at least 50 samples there.

pooled: the reduction in allocation calls and bytes that advise predicts for
PROGRAM (recorded with --all) must match, within 10%, what `stats --json`
measures between PROGRAM and its hand-pooled twin.

Environment: ALLOCPROF, TESTDATA_BUILD, TESTDATA_SRC, ALLOCPROF_TEST_COSTS.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

A = os.environ["ALLOCPROF"]
BUILD = os.environ["TESTDATA_BUILD"]
SRC = os.environ["TESTDATA_SRC"]


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d:\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def record(tmp, prog, tag, opts):
    out = os.path.join(tmp, "%s.%s.trace" % (prog, tag))
    run([A, "record", "-q", "-o", out] + opts + ["--", os.path.join(BUILD, prog)])
    return out


def site_line(prog):
    with open(os.path.join(SRC, prog + ".c")) as f:
        for n, line in enumerate(f, 1):
            if re.search(r"/\* SITE: " + re.escape(prog) + r" \*/", line):
                return n
    sys.exit("FAIL: no SITE marker in %s.c" % prog)


def the_site(advice, prog):
    line = site_line(prog)
    for s in advice["sites"]:
        if s["file"] and s["file"].endswith("/" + prog + ".c") and s["line"] == line:
            return s
    names = ", ".join(s["site"] for s in advice["sites"])
    sys.exit("FAIL: %s: no site at %s.c:%d among: %s" % (prog, prog, line, names))


def advise(trace, opts):
    return json.loads(run([A, "advise", "--json", "-n", "0"] + opts + [trace]))


def verdict(prog, expected, rest):
    if "--" in rest:
        i = rest.index("--")
        aopts, ropts = rest[:i], rest[i + 1:]
    else:
        aopts, ropts = rest, []
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        for tag, opts in (("all", ["--all"]), ("sampled", ropts)):
            adv = advise(record(tmp, prog, tag, opts), aopts)
            s = the_site(adv, prog)
            print("%s %s: %s (%s) gets %d hit_rate %.3f samples %d: %s" %
                  (prog, tag, s["verdict_text"], s["verdict"], s["gets"], s["hit_rate"],
                   s["samples"], s["reasons"]))
            if s["verdict"] != expected:
                fails.append("%s %s: verdict %r, want %r" % (prog, tag, s["verdict"], expected))
            if tag == "sampled":
                if not adv["estimates"]:
                    fails.append("%s sampled: results not marked as estimates" % prog)
                if s["samples"] < 50:
                    fails.append("%s sampled: only %d samples at the site" % (prog, s["samples"]))
            elif adv["estimates"] or s["rel_error"] != 0:
                fails.append("%s --all: results marked as estimates" % prog)
    if fails:
        sys.exit("FAIL: " + "; ".join(fails))


def stats(trace):
    return json.loads(run([A, "stats", "--json", trace]))


def pooled(prog, twin):
    with tempfile.TemporaryDirectory() as tmp:
        t = record(tmp, prog, "all", ["--all"])
        tt = record(tmp, twin, "all", ["--all"])
        s = the_site(advise(t, []), prog)
        a, b = stats(t), stats(tt)
    pred_calls = s["allocs_avoided"] + s["reallocs_avoided"]
    pred_bytes = s["bytes_avoided"]
    got_calls = a["alloc_objects"] - b["alloc_objects"]
    got_bytes = a["alloc_space"] - b["alloc_space"]
    print("%s: advise predicts %d calls, %d bytes avoided; %s measures %d calls, %d bytes fewer"
          % (prog, pred_calls, pred_bytes, twin, got_calls, got_bytes))
    fails = []
    for what, pred, got in (("calls", pred_calls, got_calls), ("bytes", pred_bytes, got_bytes)):
        if got <= 0 or abs(pred - got) > 0.1 * got:
            fails.append("%s: predicted %d, measured %d (more than 10%% apart)" % (what, pred, got))
    if fails:
        sys.exit("FAIL: " + "; ".join(fails))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "verdict":
        verdict(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "pooled":
        pooled(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


main()
