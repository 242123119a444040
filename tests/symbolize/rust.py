#!/usr/bin/env python3
"""Rust programs (issue 26, item 2).

testdata/rustapp.rs built with Debian's rustc -O -g, with the legacy and
with the v0 symbol mangling, recorded with --all: every allocation's call
site is the user's SITE: line, named crate::module::function (no hash, no
$LT$ escapes, no generic arguments), never one of Rust's allocation layers
(__rust_alloc, alloc::alloc, RawVec growth, format!, hashbrown); the counts
are the program's by construction (1000 format!, 100 with_capacity, at
least one growth of the Vec and of the HashMap); both manglings give the
same top; timeline and advise name the sites alike.

Every frame of every recorded PC in the program (the inline chain and its
file:line) is what LLVM's llvm-symbolizer --inlining says (the names are
compared by the unit test of tests/export/test-pb.c: LLVM 14 leaves legacy
Rust names with their hashes).

usage: rust.py ALLOCPROF CALLSITES TESTDATA TMPDIR
"""
import os
import re
import shutil
import subprocess
import sys

allocprof, callsites, src, tmp = sys.argv[1:5]
tmp = os.path.join(tmp, "rust")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
env = dict(os.environ, LC_ALL="C", NO_COLOR="1")
failures = []

# Debian's rustc (make check-deps installs it), not a rustup toolchain
# that may be earlier in PATH: the CI machine has only Debian's.
rustc = shutil.which("rustc", path="/usr/bin:/bin")
if not rustc:
    print("SKIP: /usr/bin/rustc is missing (make check-deps installs Debian's rustc)")
    sys.exit(77)


def run(*args):
    return subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env).stdout


source = os.path.join(src, "rustapp.rs")
sites = {}
for n, line in enumerate(open(source), 1):
    m = re.search(r"// SITE:(\w+)", line)
    if m:
        sites[m.group(1)] = n
FUNC = {"format": "rustapp::store::Registry::add", "push": "rustapp::store::Registry::add",
        "insert": "rustapp::store::Registry::add",
        "with_capacity": "rustapp::store::make_buffer"}


def site_rows(trace):
    """{(function, line): flat allocations} of top --alloc_objects --lines;
    `main` (the C entry rustc writes, where the runtime's own allocations
    before the user's main end) as ("main", 0)."""
    out = run(allocprof, "top", "--alloc_objects", "--lines", trace)
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 6 or not re.fullmatch(r"\d+", f[0]) or f[0] == "0":
            continue
        name = f[5]
        where = f[6] if len(f) > 6 else ""
        lineno = int(where.rsplit(":", 1)[1]) if where.endswith(tuple("0123456789")) else 0
        if where and not where.startswith(source + ":"):
            failures.append("%s: a call site outside the program's source: %s" % (trace, line))
        rows[(name, lineno)] = int(f[0])
    return rows, out


def clean(path):
    return os.path.normpath(path) if path.startswith("/") else path


def check_pcs(trace, exe):
    """The file:line of every frame of the program's PCs against
    llvm-symbolizer; returns the number of PCs."""
    ours = {}
    for block in run(callsites, "--pcs", os.path.basename(exe), trace).strip().split("\n\n"):
        head, *frames = block.split("\n")
        ours[head.split(" ")[1]] = [(clean(f.split("\t")[1]), int(f.split("\t")[2]))
                                    for f in frames]
    out = run("llvm-symbolizer", "--obj=" + exe, "--inlining", *ours)
    for addr, block in zip(ours, out.strip("\n").split("\n\n")):
        lines = block.split("\n")[1::2]
        want = [(clean(l.rsplit(":", 2)[0]), int(l.rsplit(":", 2)[1])) for l in lines]
        if ours[addr] != want:
            failures.append("%s %s: frames %s, llvm-symbolizer %s" % (exe, addr, ours[addr], want))
    return len(ours)


tops = {}
for mangling in ("legacy", "v0"):
    exe = os.path.join(tmp, "rustapp-" + mangling)
    # legacy is rustc 1.63's default (and -C symbol-mangling-version=legacy
    # needs -Z unstable-options); v0 is stable since 1.59
    flags = ["-C", "symbol-mangling-version=v0"] if mangling == "v0" else []
    run(rustc, "-O", "-g", *flags, "-o", exe, source)
    syms = run("nm", exe)
    want = r" _R\S*7rustapp5store" if mangling == "v0" else r" _ZN7rustapp5store\S*17h[0-9a-f]{16}E"
    if not re.search(want, syms):
        failures.append("%s: no %s symbol of the program (nm)" % (exe, mangling))
    trace = os.path.join(tmp, mangling + ".trace")
    run(allocprof, "record", "--all", "-q", "-o", trace, exe)
    rows, out = site_rows(trace)
    for name, _ in rows:
        if re.search(r"\$|::h[0-9a-f]{16}|^_R|^_ZN|<", name):
            failures.append("%s: a name not demangled or not short: %s" % (mangling, name))
    for site, lineno in sites.items():
        n = rows.pop((FUNC[site], lineno), 0)
        want = {"format": 1000, "with_capacity": 100}.get(site)
        if (want is not None and n != want) or n == 0:
            failures.append("%s: %s at line %d: %d allocations, want %s\n%s"
                            % (mangling, FUNC[site], lineno, n, want or "some", out))
    # what is left: the runtime's own, before the user's main
    for (name, lineno), n in rows.items():
        if name != "main":
            failures.append("%s: call site %s:%d (%d allocations) is not the program's"
                            % (mangling, name, lineno, n))
    # the call-site rows (the std frames above main are named from
    # what each mangling encodes: legacy has no {closure#0}, no "<fn() as")
    tops[mangling] = [l for l in out.splitlines()[1:] if not l.lstrip().startswith("0 ")]
    # timeline names the sites live at the peak: the Registry's
    for cmd, funcs in ((["timeline"], [FUNC["push"]]),
                       (["advise", "--no-measure"], set(FUNC.values()))):
        text = run(allocprof, *cmd, trace)
        for func in funcs:
            if func + " rustapp.rs:" not in text:
                failures.append("%s: %s does not name %s:\n%s" % (mangling, cmd[0], func, text))
    npcs = check_pcs(trace, exe) if shutil.which("llvm-symbolizer") else 0
    print("%s: %d call sites, the program's lines; %d PCs' frames as llvm-symbolizer's"
          % (mangling, len(sites), npcs))

if tops["legacy"] != tops["v0"]:
    failures.append("legacy and v0 call sites differ:\n%s\n---\n%s"
                    % ("\n".join(tops["legacy"]), "\n".join(tops["v0"])))

for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
