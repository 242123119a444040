#!/usr/bin/env python3
"""Leak views without the runtimes' own memory (issue 26, item 5).

testdata/leak (C++, one real leak) recorded with --all:
- `top --inuse_space` starts with the real leak (app::leaky_cache at its
  SITE:leak line), and its in-use totals are valgrind's "in use at exit"
  for the same program (valgrind runs the runtimes' freeres hooks, so it
  does not count libstdc++'s emergency pool nor stdout's buffer); a note
  says how much was suppressed;
- --no-suppressions shows the runtimes' memory again (libstdc++'s pool);
- a --suppressions file of LeakSanitizer's "leak:PATTERN" lines leaves out
  the stacks it matches; a bad line and a missing file are clear errors.

usage: suppress.py ALLOCPROF LEAK TESTDATA TMPDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

allocprof, leak, src, tmp = sys.argv[1:5]
tmp = os.path.join(tmp, "suppress")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
env = dict(os.environ, LC_ALL="C", NO_COLOR="1")
failures = []


def run(*args, rc=0):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != rc:
        failures.append("%s: exit %d, not %d: %s" % (" ".join(args), r.returncode, rc, r.stderr))
    return r.stdout, r.stderr


site = [n for n, l in enumerate(open(os.path.join(src, "leak.cpp")), 1)
        if l.rstrip().endswith("// SITE:leak")][0]
trace = os.path.join(tmp, "leak.trace")
run(allocprof, "record", "--all", "-q", "-o", trace, leak)

# 1. the default: the real leak first, valgrind's totals, a note
out, err = run(allocprof, "top", "--inuse_space", "--lines", trace)
rows = [l for l in out.splitlines() if re.match(r"^\s*[0-9.]+[kMG]?B\s", l)]
if not rows or not re.search(r" app::leaky_cache \S*/leak\.cpp:%d$" % site, rows[0]):
    failures.append("top --inuse_space does not start with the leak at line %d:\n%s" % (site, out))
note = [l for l in err.splitlines() if "suppressed" in l]
if len(note) != 1 or not re.fullmatch(
        r"allocprof: note: [0-9.]+[kM]?B in use in \d+ allocations? suppressed: memory the C "
        r"and C\+\+ runtimes keep by design; --no-suppressions shows (it|them)", note[0]):
    failures.append("the note of what was suppressed: %s" % err)

if shutil.which("valgrind"):
    vg = subprocess.run(["valgrind", leak], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True).stderr
    m = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", vg)
    want = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    got = tuple(json.loads(run(allocprof, "top", "--json", "--" + si, trace)[0])["total"]
                for si in ("inuse_space", "inuse_objects"))
    if got != want:
        failures.append("in use (bytes, blocks) %s, valgrind's %s" % (got, want))
    else:
        print("ok: in use %d bytes in %d blocks, as valgrind says" % got)
else:
    failures.append("valgrind is missing (make check-deps installs it)")

# 2. --no-suppressions: the runtime's memory is back
out, err = run(allocprof, "top", "--inuse_space", "--no-suppressions", trace)
if "libstdc++.so" not in out or "suppressed" in err:
    failures.append("--no-suppressions:\n%s%s" % (out, err))

# 3. a suppressions file
supp = os.path.join(tmp, "leaks.supp")
with open(supp, "w") as f:
    f.write("# the cache lives as long as the program\n\nleak:^app::leaky_*$\n")
out, err = run(allocprof, "top", "--inuse_space", "--suppressions", supp, trace)
if "leaky_cache" in out or "the rules of %s" % supp not in err:
    failures.append("--suppressions %s:\n%s%s" % (supp, out, err))
# the other views stay as they were
out, _ = run(allocprof, "top", "--alloc_space", "--suppressions", supp, trace)
if "app::leaky_cache" not in out:
    failures.append("--suppressions changed alloc_space:\n" + out)

with open(supp, "w") as f:
    f.write("leak:main\nfun:malloc\n")
out, err = run(allocprof, "top", "--suppressions", supp, trace, rc=1)
if err != "allocprof: %s:2: not a suppression 'leak:PATTERN': 'fun:malloc'\n" % supp or out:
    failures.append("a bad line: %r" % err)
out, err = run(allocprof, "top", "--suppressions", supp + ".none", trace, rc=1)
if err != "allocprof: %s.none: No such file or directory\n" % supp:
    failures.append("a missing file: %r" % err)

for f in failures:
    print("FAIL: " + f)
if not failures:
    print("ok: leak views start with the real leak; suppressions files work")
sys.exit(1 if failures else 0)
