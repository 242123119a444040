#!/usr/bin/env python3
"""make check installs every tool a test looks up, so that a fresh Debian
machine skips no test.

usage: deps.py SRCDIR

The tools are those the tests and tools/ look up (`command -v NAME` in
shell, shutil.which("NAME") in Python, find_program('NAME') in meson);
each must be installed here, from a package that the Makefile's DEBS or
CHECK_DEBS names or that every Debian system has (Essential: yes, or
Priority: required, which debootstrap's minbase installs), or that one of
those depends on (python3 -> python3-minimal, which owns /usr/bin/python3).
The package of a tool is what dpkg -S says owns it.
"""
import os
import re
import shutil
import subprocess
import sys

LOOKUPS = [
    re.compile(r"command -v ([A-Za-z0-9_.+-]+)"),
    re.compile(r"shutil\.which\(\s*[\"']([A-Za-z0-9_.+-]+)[\"']"),
    re.compile(r"find_program\(\s*'([A-Za-z0-9_.+-]+)'"),
]
# Debian's PATH: a version manager's shims earlier in PATH are no package.
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def tools(src):
    """{tool: first file that looks it up}, leaving out the project's own
    scripts (find_program('e2e-callsites.sh'))."""
    found = {}
    for top in ("tests", "tools"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                if not (f.endswith((".sh", ".py")) or f == "meson.build"):
                    continue
                path = os.path.join(root, f)
                if os.path.samefile(path, __file__):
                    continue
                text = open(path, errors="replace").read()
                for rx in LOOKUPS:
                    for name in rx.findall(text):
                        if os.path.exists(os.path.join(root, name)):
                            continue
                        found.setdefault(name, os.path.relpath(path, src))
    return found


def make_lists(src):
    """The packages of the Makefile's DEBS and CHECK_DEBS, as make expands
    them (make -p prints the variables)."""
    out = subprocess.run(["make", "-C", src, "-pnq", "check-deps"], capture_output=True,
                         text=True).stdout
    lists = {}
    for line in out.splitlines():
        m = re.match(r"^(DEBS|CHECK_DEBS) :?= (.*)$", line)
        if m:
            lists[m.group(1)] = m.group(2).split()
    return lists


def owner(path):
    """The package that owns PATH (or its /usr-merged twin), or None."""
    cands = [path]
    if path.startswith("/usr/"):
        cands.append(path[4:])
    else:
        cands.append("/usr" + path)
    for p in cands:
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith("diversion "):
                continue
            pkgs, _, owned = line.partition(": ")
            if owned == p:
                return pkgs.split(",")[0].strip().split(":")[0]
    return None


def depended_on(pkgs):
    """The direct dependencies of the installed packages PKGS."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Pre-Depends}, ${Depends}\n"] + sorted(pkgs),
                       capture_output=True, text=True)
    return {re.split(r"[\s:(]", d.strip())[0]
            for d in re.split(r"[,|\n]", r.stdout) if d.strip()}


def everywhere(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Essential} ${Priority}", pkg],
                       capture_output=True, text=True)
    return r.stdout.split()[:1] == ["yes"] or r.stdout.endswith("required")


def main():
    src = sys.argv[1]
    lists = make_lists(src)
    if "DEBS" not in lists:
        sys.exit("FAIL the Makefile has no DEBS")
    listed = set(lists["DEBS"]) | set(lists.get("CHECK_DEBS", []))
    deps = depended_on(listed)
    fail = 0
    found = tools(src)
    for name, where in sorted(found.items()):
        path = shutil.which(name, path=SYSTEM_PATH)
        if not path:
            print(f"FAIL {name} (looked up in {where}) is not installed: "
                  "add its package to CHECK_DEBS")
            fail = 1
            continue
        pkg = owner(path)
        if pkg is None:
            print(f"FAIL {name}: no package owns {path}")
            fail = 1
        elif pkg in listed:
            print(f"ok {name}: {pkg}")
        elif pkg in deps:
            print(f"ok {name}: {pkg} (a dependency of a listed package)")
        elif everywhere(pkg):
            print(f"ok {name}: {pkg} (on every Debian system)")
        else:
            print(f"FAIL {name} (looked up in {where}) comes from {pkg}, "
                  "which neither DEBS nor CHECK_DEBS installs")
            fail = 1
    if len(found) < 5:
        print(f"FAIL only {len(found)} tools found: {sorted(found)}")
        fail = 1
    sys.exit(fail)


if __name__ == "__main__":
    main()
