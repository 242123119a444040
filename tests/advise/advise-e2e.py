#!/usr/bin/env python3
"""End-to-end checks of `allocprof advise` on the advise_* testdata programs.

usage: advise-e2e.py verdict PROGRAM EXPECTED [ADVISE OPTIONS...] [-- RECORD OPTIONS]
       advise-e2e.py pooled PROGRAM POOLED_PROGRAM
       advise-e2e.py capheld PROGRAM MAX_BYTES
       advise-e2e.py rare PROGRAM
       advise-e2e.py repeat PROGRAM

verdict: records PROGRAM with --all and in the default sampled mode (or
with the record options after --, e.g. a smaller --rate), runs advise --json
with the fixed cost table, and checks that the site marked `/* SITE: ... */`
in the program's source gets the EXPECTED verdict in both, and that the
sampled run saw at least 50 samples there. In the sampled run a growing
buffer may be judged where it grows, the line marked `/* GROWS: ... */`:
one of the two sites must get the verdict, with its 50 samples. With the
record options `-- none` only the --all run is made.

capheld: advise with --all finds a cap by itself, and the pool's peak held
bytes after it stay within MAX_BYTES (the steady load's needs, times 2).

rare: advise with --all says no: too rare, with a hit rate under 10%.

repeat: three --all recordings of PROGRAM get identical gets, hits,
misses and verdicts at every site.

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


def site_line(prog, marker="SITE"):
    with open(os.path.join(SRC, prog + ".c")) as f:
        for n, line in enumerate(f, 1):
            if re.search(r"/\* " + marker + ": " + re.escape(prog) + r" \*/", line):
                return n
    if marker != "SITE":
        return None
    sys.exit("FAIL: no SITE marker in %s.c" % prog)


def find_site(advice, prog, line):
    for s in advice["sites"]:
        if s["file"] and s["file"].endswith("/" + prog + ".c") and s["line"] == line:
            return s
    return None


def the_site(advice, prog):
    line = site_line(prog)
    s = find_site(advice, prog, line)
    if s:
        return s
    names = ", ".join(s["site"] for s in advice["sites"])
    sys.exit("FAIL: %s: no site at %s.c:%d among: %s" % (prog, prog, line, names))


def advise(trace, opts, measure=False):
    """The model's advice (--no-measure: the verdicts these tests hold the
    model to), or with measure the measured replay's."""
    return json.loads(run([A, "advise", "--json", "-n", "0"] + ([] if measure else ["--no-measure"])
                          + opts + [trace]))


def verdict(prog, expected, rest):
    if "--" in rest:
        i = rest.index("--")
        aopts, ropts = rest[:i], rest[i + 1:]
    else:
        aopts, ropts = rest, []
    fails = []
    runs = [("all", ["--all"])]
    if ropts != ["none"]:
        runs.append(("sampled", ropts))
    with tempfile.TemporaryDirectory() as tmp:
        for tag, opts in runs:
            adv = advise(record(tmp, prog, tag, opts), aopts)
            grows = site_line(prog, "GROWS")
            if tag == "sampled" and grows:
                s = find_site(adv, prog, site_line(prog))
                if not s or s["verdict"] != expected or s["samples"] < 50:
                    print("%s sampled: birth site %s; judged where it grows"
                          % (prog, "%s, %d samples" % (s["verdict_text"], s["samples"]) if s else "not seen"))
                    s = find_site(adv, prog, grows) or the_site(adv, prog)
            else:
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


def capheld(prog, max_bytes):
    with tempfile.TemporaryDirectory() as tmp:
        s = the_site(advise(record(tmp, prog, "all", ["--all"]), []), prog)
    print("%s: %s; held peak %d without the cap" % (prog, s["verdict_text"], s["peak_held_bytes"]))
    if s["verdict"] != "pool with cap" or "with_cap" not in s:
        sys.exit("FAIL: %s: verdict %r, want 'pool with cap' by default" % (prog, s["verdict"]))
    held = s["with_cap"]["peak_held_bytes"]
    print("%s: with cap %d: held peak %d, hit rate %.3f" % (prog, s["cap"], held, s["with_cap"]["hit_rate"]))
    if held > max_bytes:
        sys.exit("FAIL: %s: the pool holds %d bytes after the cap, want at most %d" % (prog, held, max_bytes))


def rare(prog):
    with tempfile.TemporaryDirectory() as tmp:
        s = the_site(advise(record(tmp, prog, "all", ["--all"]), []), prog)
    print("%s: %s, hit rate %.3f: %s" % (prog, s["verdict"], s["hit_rate"], s["reasons"]))
    if s["verdict"] != "no: too rare" or s["hit_rate"] >= 0.1:
        sys.exit("FAIL: %s: want no: too rare with a hit rate under 10%%" % prog)


def repeat(prog):
    seen = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(3):
            adv = advise(record(tmp, prog, "all%d" % k, ["--all"]), [])
            seen.append(sorted((s["site"], s["gets"], s["hits"], s["misses"], s["verdict_text"])
                               for s in adv["sites"]))
    for k in (1, 2):
        if seen[k] != seen[0]:
            sys.exit("FAIL: %s: run %d differs from run 1:\n%s\n%s" % (prog, k + 1, seen[k], seen[0]))
    print("%s: 3 runs, %d sites, identical" % (prog, len(seen[0])))


def measured(prog, want):
    """The measured replay on an --all trace: the baseline replays every
    allocator call of the trace (stats' records, less unmatched frees); a
    single-threaded run's pooled replay hits where the model hits, Get for
    Get; each saving lies in its interval; and `want`: "faults" (prog's
    site saves page faults: pool, the interval above zero, a tenth of the
    faults), "costs:FUNC" (FUNC's pool costs more), "sampled" (a sampled
    trace is not measured), "bigheap" (a run that held more than half the
    memory available is not replayed) or "any"."""
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        t = record(tmp, prog, "all" if want != "sampled" else "sampled",
                   ["--all"] if want != "sampled" else [])
        adv = advise(t, ["--measure-time", "20s"], measure=True)
        st = stats(t)
        if want == "bigheap":
            # more than half the memory available: not replayed
            os.environ["ALLOCPROF_TEST_MEMAVAIL"] = "100000"
            adv = advise(t, [], measure=True)
            del os.environ["ALLOCPROF_TEST_MEMAVAIL"]
            why = adv["measurement"].get("why_not", "")
            print("%s with 100 kB available: %s" % (prog, why))
            if adv["measurement"]["sites"] or "more than half the 97.66kB of memory available" not in why:
                fails.append("measured a run bigger than the memory: %s" % adv["measurement"])
        if want == "bigheap":
            if fails:
                sys.exit("FAIL: " + "; ".join(fails))
            return
    m = adv["measurement"]
    if want == "sampled":
        print("%s sampled: %s" % (prog, m))
        if m["sites"] or "sampled" not in m.get("why_not", ""):
            fails.append("a sampled trace was measured: %s" % m)
        fails += ["%s: time from %s" % (s["site"], s["time_source"]) for s in adv["sites"]
                  if s["time_source"] != "model"]
        if fails:
            sys.exit("FAIL: " + "; ".join(fails))
        return
    if not m["sites"]:
        sys.exit("FAIL: %s: nothing measured: %s" % (prog, m.get("why_not")))
    base = m["baseline"]
    calls = st["events"] - st["unmatched_frees"]
    print("%s: %d sites measured, baseline %d calls (trace: %d), %d faults, %.2fms CPU"
          % (prog, m["sites"], base["allocator_calls"], calls, base["minor_faults"], base["cpu_ns"] / 1e6))
    if base["allocator_calls"] != calls:
        fails.append("the baseline replayed %d allocator calls, the trace has %d"
                     % (base["allocator_calls"], calls))
    for s in adv["sites"]:
        if s["time_source"] != "measured":
            continue
        me = s["measured"]
        print("  %s: %s: saved %d ns [%d, %d] over %d rounds; hits %d (model %d); faults %d"
              % (s["site"], s["verdict"], s["time_saved_ns"], s["time_saved_low_ns"],
                 s["time_saved_high_ns"], me["rounds"], me["pooled"]["pool_hits"], s["hits"],
                 me["pooled"]["minor_faults"]))
        if not s["time_saved_low_ns"] <= s["time_saved_ns"] <= s["time_saved_high_ns"]:
            fails.append("%s: saving outside its interval" % s["site"])
        if st["threads"] == 1 and me["pooled"]["pool_hits"] != s["hits"]:
            fails.append("%s: the pooled replay hit %d times, the model %d"
                         % (s["site"], me["pooled"]["pool_hits"], s["hits"]))
    if want == "faults":
        s = the_site(adv, prog)
        pf = s.get("measured", {}).get("pooled", {}).get("minor_faults", 0)
        if s["verdict"] != "pool" or s["time_saved_low_ns"] <= 0 or pf * 10 > base["minor_faults"]:
            fails.append("%s: want pool with a saving above zero and a tenth of the %d faults: %s, "
                         "[%d, %d], %d faults" % (prog, base["minor_faults"], s["verdict"],
                                                  s["time_saved_low_ns"], s["time_saved_high_ns"], pf))
    elif want.startswith("costs:"):
        fn = want[6:]
        s = next((s for s in adv["sites"] if s["function"] == fn), None)
        if not s or s["verdict"] != "no: costs more" or s["time_saved_high_ns"] >= 0:
            fails.append("%s: want no: costs more, got %s" % (fn, s and (s["verdict"], s["time_saved_high_ns"])))
    if fails:
        sys.exit("FAIL: " + "; ".join(fails))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "verdict":
        verdict(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "pooled":
        pooled(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "capheld":
        capheld(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "rare":
        rare(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "measured":
        measured(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "repeat":
        repeat(sys.argv[2])
    else:
        sys.exit(__doc__)


main()
