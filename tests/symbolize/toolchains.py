#!/usr/bin/env python3
"""Programs built by other toolchains than gcc (issue 26, item 1).

testdata/inline.c and testdata/cxx.cpp built with clang -O2 -g, as DWARF 4,
as DWARF 5 and as split DWARF 5 (Debian 12's clang 14 writes no
.debug_aranges, so libdwfl alone finds no compilation unit for their
addresses), recorded with --all:
- `top --lines` has the same call-site rows (flat, flat%, function,
  file:line) as the gcc build of the same source, and `list FUNC` the same
  annotated lines;
- every frame of every recorded PC in the program (function, inline chain,
  file:line) is what LLVM's `llvm-symbolizer --inlining` says, and for
  DWARF 4 binutils' `addr2line -i -f -C` too (elfutils 0.188's eu-addr2line
  finds no lines in these binaries; binutils 2.40 no inline frames in
  clang's DWARF 5); and every PC of the gcc builds is what addr2line says.

usage: toolchains.py ALLOCPROF CALLSITES GCC_INLINE GCC_CXX TESTDATA TMPDIR
"""
import os
import re
import shutil
import subprocess
import sys

allocprof, callsites, gcc_inline, gcc_cxx, src, tmp = sys.argv[1:7]
tmp = os.path.join(tmp, "toolchains")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
env = dict(os.environ, LC_ALL="C")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run(*args, **kw):
    return subprocess.run(args, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env,
                          **kw).stdout


def record(exe, name):
    trace = os.path.join(tmp, name + ".trace")
    run(allocprof, "record", "--all", "-q", "-o", trace, exe)
    return trace


def site_rows(trace, source):
    """The rows of top --lines with a flat value at a line of `source`:
    "flat flat% function file:line" (the file as its basename)."""
    out = run(allocprof, "top", "--lines", "-n", "50", trace)
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 7 or f[0] == "0" or "/" + source + ":" not in line:
            continue
        rows.append(" ".join([f[0], f[1], f[5], os.path.basename(f[6])] + f[7:]))
    return rows


def clean(path):
    return os.path.normpath(path) if path.startswith("/") else path


def addr2line(module, addrs):
    """{addr: [(func, file, line), ...]} from binutils' addr2line -a -i -f -C."""
    out = run("addr2line", "-a", "-i", "-f", "-C", "-e", module, *addrs)
    res, cur, lines = {}, None, out.splitlines()
    i = 0
    while i < len(lines):
        if re.fullmatch(r"0x[0-9a-f]+", lines[i]):
            cur = "0x%x" % int(lines[i], 16)
            res[cur] = []
            i += 1
            continue
        func, loc = lines[i], lines[i + 1]
        i += 2
        loc = re.sub(r" \(discriminator \d+\)$", "", loc)
        file, _, line = loc.rpartition(":")
        if file == "??":
            line = "0"
        res[cur].append((func, clean(file), int(line) if line.isdigit() else 0))
    return res


def llvm_symbolizer(module, addrs):
    """The same from llvm-symbolizer --inlining -f linkage -C (LLVM's
    own, for DWARF 5: binutils 2.40's addr2line shows none of the inline
    frames of clang 14's DWARF 5)."""
    out = run("llvm-symbolizer", "--obj=" + module, "--inlining", "--functions=linkage",
              "--demangle", *addrs, cwd=tmp)
    res = {}
    for addr, block in zip(addrs, out.strip("\n").split("\n\n")):
        lines = block.split("\n")
        frames = []
        for func, loc in zip(lines[0::2], lines[1::2]):
            file, line, _col = loc.rsplit(":", 2)
            frames.append((func, clean(file), int(line) if file != "??" else 0))
        res[addr] = frames
    return res


def ours_of(trace, exe):
    """{addr: [(func, file, line), ...]} of the program's PCs in the trace."""
    out = run(callsites, "--pcs", os.path.basename(exe), trace)
    ours = {}
    for block in out.strip().split("\n\n"):
        head, *frames = block.split("\n")
        module, addr = head.split(" ")
        ours[addr] = [tuple(fr.split("\t")) for fr in frames]
        ours[addr] = [(f, clean(fl), int(ln)) for f, fl, ln in ours[addr]]
    return ours


def check_pcs(ours, exe, oracles):
    """Every frame of the program's PCs, against the oracles."""
    if not ours:
        fail("%s: no PC of the program in the trace" % exe)
        return 0
    for oracle in oracles:
        want = oracle(exe, list(ours))
        for addr, frames in ours.items():
            if frames != want.get(addr):
                fail("%s %s: frames %s, %s %s" % (exe, addr, frames, oracle.__name__,
                                                  want.get(addr)))
    return len(ours), sum(len(frames) - 1 for frames in ours.values())


def build(compiler, source, out, *flags):
    # in tmp: -gsplit-dwarf writes the .dwo file there
    run(compiler, "-O2", "-g", *flags, "-o", out, os.path.join(src, source), cwd=tmp)


if not all(shutil.which(t) for t in ("clang", "addr2line", "llvm-symbolizer")):
    print("SKIP: clang, addr2line or llvm-symbolizer is missing (make check-deps installs them)")
    sys.exit(77)

gcc = {"inline.c": gcc_inline, "cxx.cpp": gcc_cxx}
lists = {"inline.c": ["make_node", "build_labels", "main"],
         "cxx.cpp": ["make_point", "Cloud.*::add", "make_label"]}
for source, compiler in (("inline.c", "clang"), ("cxx.cpp", "clang++")):
    base = source.split(".")[0]
    ref = record(gcc[source], base + "-gcc")
    want = site_rows(ref, source)
    if not want:
        fail("%s (gcc): no call-site rows in top --lines" % source)
    for variant, flags in (("dwarf4", ["-gdwarf-4"]), ("dwarf5", ["-gdwarf-5"]),
                           ("split", ["-gdwarf-5", "-gsplit-dwarf"])):
        exe = os.path.join(tmp, "%s-clang-%s" % (base, variant))
        build(compiler, source, exe, *flags)
        sections = run("readelf", "-S", "-W", exe)
        if ".debug_aranges" in sections:
            print("note: %s has .debug_aranges" % exe)
        trace = record(exe, os.path.basename(exe))
        got = site_rows(trace, source)
        if got != want:
            fail("%s: top --lines call sites\n  clang: %s\n  gcc:   %s" % (exe, got, want))
        for func in lists[source]:
            a = run(allocprof, "list", func, ref)
            b = run(allocprof, "list", func, trace)
            if a != b:
                fail("%s: list %s differs from the gcc build's:\n%s\n---\n%s" % (exe, func, b, a))
        ours = ours_of(trace, exe)
        if variant == "dwarf5":
            dwarf5 = (exe, ours)
        if variant == "split":
            # llvm-symbolizer 14 shows a split CU's inline frames only
            # where the skeleton repeats them: the code is the DWARF 5
            # build's, so must be the frames (checked above).
            def dwarf5_build(module, addrs):
                return dwarf5[1]
            text = [run("objdump", "-d", "--no-show-raw-insn", e).split("\n", 3)[3]
                    for e in (dwarf5[0], exe)]
            if text[0] != text[1]:
                fail("%s: not the code of %s" % (exe, dwarf5[0]))
            oracles = [dwarf5_build]
        else:
            oracles = [llvm_symbolizer] + ([addr2line] if variant == "dwarf4" else [])
        n, inl = check_pcs(ours, exe, oracles)
        print("%s: %d call-site rows as gcc's; %d PCs (%d inlined frames) as %s's"
              % (os.path.basename(exe), len(got), n, inl,
                 " and ".join(o.__name__ for o in oracles)))

# The gcc builds too, against binutils' addr2line: every PC, _start's
# among them. startgap.cpp's main, in .text.startup before crt1.o's
# _start, ends its line sequence with a row of no length: libdwfl gives
# _start's PCs (in no CU) to main's CU and that row's line to them, where
# addr2line says ??:? (eu-addr2line shows the wrong line: checked, so
# that the program still shows what it is here for).
startgap = os.path.join(tmp, "startgap-gcc")
run("g++", "-O2", "-g", "-o", startgap,
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "startgap.cpp"))
syms = {f[2]: f[0] for f in map(str.split, run("nm", startgap).splitlines())
        if len(f) == 3}
start_pc = "0x%x" % (int(syms["_start"], 16) + 0x20)
if run("eu-addr2line", "-e", startgap, start_pc).startswith("??"):
    fail("%s: eu-addr2line finds no line at _start+0x20: not the case the test is for"
         % startgap)
for exe in (gcc["inline.c"], gcc["cxx.cpp"], startgap):
    trace = record(exe, os.path.basename(exe) + "-pcs")
    ours = ours_of(trace, exe)
    if not any(fr and fr[-1][0] == "_start" for fr in ours.values()):
        fail("%s: no PC in _start" % exe)
    if exe == startgap:
        # its _start PCs alone: binutils names the thread constructor
        # inlined in main "main", llvm-symbolizer names the .cold parts
        ours = {a: fr for a, fr in ours.items() if fr[-1][0] == "_start"}
    n, inl = check_pcs(ours, exe, [addr2line])
    print("%s (gcc): %d PCs (%d inlined frames) as addr2line's"
          % (os.path.basename(exe), n, inl))

# A program built without -g: one note says why its sites have no lines.
exe = os.path.join(tmp, "inline-clang-nog")
run("clang", "-O2", "-o", exe, os.path.join(src, "inline.c"))
trace = record(exe, "inline-clang-nog")
for t, want in ((trace, 1), (record(gcc_inline, "inline-gcc-again"), 0)):
    err = subprocess.run([allocprof, "top", t], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env).stderr
    notes = [l for l in err.splitlines() if "no line information" in l]
    note = ("allocprof: warning: %s: no line information (built without -g, and no "
            "separate debug file found): its call sites have no file:line" % exe)
    if len(notes) != want or (want and notes[0] != note):
        fail("%s: top's notes of no line information: %s" % (t, notes))

if failures:
    sys.exit(1)
print("clang builds: lines and inline frames as the gcc builds and addr2line")
