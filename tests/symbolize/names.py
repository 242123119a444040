#!/usr/bin/env python3
"""One name per function in every view (issue 26, item 6).

testdata/cxx recorded with --all: its site geo::Cloud<float>::add(float)
is named by its short name, geo::Cloud::add, in top, list, peek, timeline,
advise (text and JSON), flamegraph and the folded and JSON exports; with
--full-names (or pprof's -symbolize=demangle=full) each of them names it
by the whole demangled name instead, and never by the short one; with
-symbolize=demangle=none by the linkage name, at the same call site.

usage: names.py ALLOCPROF CXX TMPDIR
"""
import os
import shutil
import subprocess
import sys

allocprof, cxx, tmp = sys.argv[1:4]
tmp = os.path.join(tmp, "names")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
env = dict(os.environ, LC_ALL="C", NO_COLOR="1")
SHORT = "geo::Cloud::add"
FULL = "geo::Cloud<float>::add(float)"
failures = []

trace = os.path.join(tmp, "cxx.trace")
subprocess.run([allocprof, "record", "--all", "-q", "-o", trace, cxx], check=True,
               stdout=subprocess.DEVNULL, env=env)


def view(args, names):
    """The output of `allocprof ARGS... [NAMES] TRACE` (or the file it
    wrote for flamegraph)."""
    out = os.path.join(tmp, "out")
    cmd = [allocprof] + args + names + [trace]
    if args[0] == "flamegraph":
        cmd[2:2] = ["-o", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        failures.append("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr))
        return ""
    return open(out).read() if args[0] == "flamegraph" else r.stdout


views = [
    ["top"],
    ["top", "--lines"],
    ["list", "Cloud"],
    ["peek", "Cloud"],
    ["timeline"],
    ["advise", "--no-measure"],
    ["advise", "--no-measure", "--json"],
    ["export", "--format=folded", "-o", "-"],
    ["export", "--format=json", "-o", "-"],
    ["flamegraph"],
]
for args in views:
    for names, want, not_want in (([], SHORT, FULL), (["--full-names"], FULL, SHORT),
                                  (["-symbolize=demangle=full"], FULL, SHORT)):
        if args[0] == "advise" and names and names[0].startswith("-symbolize"):
            continue  # advise takes --full-names only
        if args[0] == "flamegraph" and names:
            continue  # the SVG escapes '<': the short name's check is enough
        out = view(args, names)
        what = " ".join(args + names)
        if want not in out:
            failures.append("%s: no %r in:\n%s" % (what, want, out[:3000]))
        elif not_want in out:
            failures.append("%s: %r in:\n%s" % (what, not_want, out[:3000]))
        else:
            print("ok %s: %s" % (what, want))

# pprof's -symbolize=demangle=none: linkage names, the same call sites
out = view(["top", "--lines"], ["-symbolize=demangle=none"])
if "_ZN3geo5CloudIfE3addEf " not in out or "cxx.cpp:" not in out or SHORT in out:
    failures.append("top --lines -symbolize=demangle=none:\n" + out)
else:
    print("ok top --lines -symbolize=demangle=none: _ZN3geo5CloudIfE3addEf")
for line in out.splitlines():
    if "_ZN3geo5CloudIfE3addEf" in line and line.split()[0] == "0":
        failures.append("demangle=none: Cloud::add is no call site: " + line)

for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
