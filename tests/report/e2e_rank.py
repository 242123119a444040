#!/usr/bin/env python3
"""End to end: `top` on a sampled trace of testdata/bigalloc (> 1 GiB from
three sites) ranks the same sites as on its --all trace, by alloc_space and
by alloc_objects; and on the --all trace each site's flat equals the count
and bytes bigalloc.expected.json gives by construction.

The sites' totals differ by 3x or more per index while the sampling error at
the default rate is at most ~10% (51 MB at 512 KiB: ~100 samples) for the
smallest one, so the order is stable; the seed is fixed besides
(ALLOCPROF_TEST_SEED), so the test is deterministic.

usage: e2e_rank.py ALLOCPROF BIGALLOC_EXE EXPECTED_JSON"""
import json
import os
import subprocess
import sys
import tempfile

ap, exe, expected = sys.argv[1:4]
env = dict(os.environ, LC_ALL="C", ALLOCPROF_NO_PROGRESS="1",
           ALLOCPROF_TEST_SEED=os.environ.get("ALLOCPROF_TEST_SEED", "20240611"))
sites = {s["function"]: s for s in json.load(open(expected))["sites"]}
failures = []


def top(trace, index):
    p = subprocess.run([ap, "top", "--json", "--" + index, trace],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("top %s: %s" % (index, p.stderr))
    return [r for r in json.loads(p.stdout)["rows"] if r["flat"] > 0]


with tempfile.TemporaryDirectory() as tmp:
    traces = {}
    for mode in ("all", "sampled"):
        traces[mode] = os.path.join(tmp, mode + ".trace")
        args = [ap, "record", "-q", "-o", traces[mode]] + (["--all"] if mode == "all" else [])
        p = subprocess.run(args + [exe], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            sys.exit("record %s: exit %d\n%s" % (mode, p.returncode, p.stderr))

    for index, key in (("alloc_space", None), ("alloc_objects", "count")):
        exact = top(traces["all"], index)
        sampled = top(traces["sampled"], index)
        names = [r["name"] for r in exact if r["name"] in sites]
        want = sorted(sites, key=lambda f: -(sites[f]["count"] * (1 if key else sites[f]["size"])))
        if names[:3] != want:
            failures.append("--all %s ranks %s, expected %s" % (index, names[:3], want))
        for r in exact:
            if r["name"] in sites:
                s = sites[r["name"]]
                v = s["count"] * (1 if key else s["size"])
                if r["flat"] != v:
                    failures.append("--all %s %s: %d, expected %d" % (index, r["name"], r["flat"], v))
        got = [r["name"] for r in sampled if r["name"] in sites][:3]
        if got != names[:3]:
            failures.append("sampled %s ranks %s, --all ranks %s" % (index, got, names[:3]))
        # The three sites are the top three rows in both.
        if [r["name"] for r in exact[:3]] != names[:3] or [r["name"] for r in sampled[:3]] != got:
            failures.append("%s: the top rows are not the three sites: %s / %s" % (
                index, [r["name"] for r in exact[:3]], [r["name"] for r in sampled[:3]]))

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
