#!/usr/bin/env python3
"""End to end: record testdata/views with --all, then check `top` and `list`
against the counts its source declares on each allocating line
(`VIEWS func=F flat=N [cum=N] [live=N]`, see testdata/views.c).

usage: e2e_views.py ALLOCPROF VIEWS_EXE VIEWS_SRC"""
import json
import os
import re
import subprocess
import sys
import tempfile

ap, exe, src = sys.argv[1:4]
env = dict(os.environ, LC_ALL="C", ALLOCPROF_NO_PROGRESS="1")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    p = subprocess.run([ap, *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("allocprof %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


# The markers: line -> (func, flat, cum, live)
marks = {}
recursive = set()
with open(src) as f:
    for n, line in enumerate(f, 1):
        m = re.search(r"/\* VIEWS (.*?) \*/", line)
        if not m:
            continue
        kv = dict(x.split("=") for x in m.group(1).split())
        flat = int(kv["flat"])
        marks[n] = (kv["func"], flat, int(kv.get("cum", flat)), int(kv.get("live", 0)))
        if kv.get("self") == "1":
            recursive.add(n)
check(len(marks) >= 10, "found only %d markers in %s" % (len(marks), src))

# Per function: flat is the sum of its lines' flat; cum of a function is its
# flat plus what its call lines pass through (each callee's calls are
# distinct stacks here, so they add up), except a recursive call line, whose
# stacks are the function's own.
funcs = {}
for func, flat, cum, live in marks.values():
    f = funcs.setdefault(func, [0, 0, 0])
    f[0] += flat
    f[2] += live
for func, f in funcs.items():
    f[1] = f[0] + sum(m[2] for n, m in marks.items()
                      if m[0] == func and m[1] == 0 and n not in recursive)
total = sum(f[0] for f in funcs.values())

with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "views.trace")
    p = subprocess.run([ap, "record", "--all", "-q", "-o", trace, exe],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0 or p.stdout != "views done\n":
        sys.exit("record failed: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))

    # --functions: exact counts per function, live ones for inuse.
    top = json.loads(run("top", "--alloc_objects", "--json", trace))
    rows = {r["name"]: r for r in top["rows"]}
    check(top["sample_index"] == "alloc_objects" and top["rate"] == 1, "top header %s" % top)
    for func, (flat, cum, live) in funcs.items():
        r = rows.get(func)
        check(r is not None and (r["flat"], r["cum"]) == (flat, cum),
              "top --alloc_objects %s: %s, expected flat %d cum %d" % (func, r, flat, cum))
    # stdio and the loader allocate nothing here (write(2)), so this
    # program's call sites are the whole total.
    check(top["total"] == total, "total %d, expected %d" % (top["total"], total))

    inuse = json.loads(run("top", "--inuse_objects", "--json", trace))
    rows = {r["name"]: r for r in inuse["rows"]}
    for func, (flat, cum, live) in funcs.items():
        got = rows[func]["flat"] if func in rows else 0
        check(got == live, "top --inuse_objects %s: %d, expected %d" % (func, got, live))

    space = json.loads(run("top", "--alloc_space", "--json", trace))
    rows = {r["name"]: r for r in space["rows"]}
    for func, want in (("make_nodes", 1000 * 48), ("make_table", 200 * 64),
                       ("recurse", 50 * 24), ("grow_buffer", 16 * (2 ** 10 - 1)),
                       ("make_names", 150 * len("odd name\0") + 150 * len("even name\0"))):
        got = rows.get(func, {}).get("flat")
        check(got == want, "top --alloc_space %s: %s, expected %d" % (func, got, want))

    # --lines: every marked line, with its file.
    lines = json.loads(run("top", "--alloc_objects", "--lines", "--json", trace))
    for n, (func, flat, cum, live) in marks.items():
        r = [r for r in lines["rows"]
             if r["line"] == n and r["file"] and r["file"].endswith("testdata/views.c")
             and r["name"].startswith(func + " ")]
        check(len(r) == 1 and (r[0]["flat"], r[0]["cum"]) == (flat, cum),
              "top --lines %s:%d: %s, expected flat %d cum %d" % (func, n, r, flat, cum))

    # list: the lines of recurse() with their counts and source.
    lst = json.loads(run("list", "--alloc_objects", "--json", "^recurse$", trace))
    check(len(lst["functions"]) == 1, "list recurse: %d functions" % len(lst["functions"]))
    fn = lst["functions"][0]
    check((fn["flat"], fn["cum"]) == tuple(funcs["recurse"][:2]), "list recurse totals %s" % fn)
    got = {l["line"]: l for l in fn["lines"]}
    for n, (func, flat, cum, live) in marks.items():
        if func != "recurse":
            continue
        l = got.get(n)
        check(l is not None and (l["flat"], l["cum"]) == (flat, cum) and "VIEWS" in l["source"],
              "list recurse line %d: %s" % (n, l))
    text = run("list", "--alloc_objects", "^recurse$", trace)
    n = [n for n, m in marks.items() if m[0] == "recurse" and m[1] > 0][0]
    check(re.search(r"^\s+50\s+50\s+%d:\t\tdeep\[i\] = malloc" % n, text, re.M) is not None,
          "list text has no '50 50 %d:' line:\n%s" % (n, text))

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
