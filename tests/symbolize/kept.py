#!/usr/bin/env python3
"""Symbols kept with the trace (issue 26, items 3 and 4).

A program and its shared library, built here with gcc and with clang
(-O2 -g: inlined frames), recorded with --all: every view (top by
functions and by lines, peek, tree, the folded export, the flame graph,
list) prints the same after the program and the library are deleted, and
after they are rebuilt from other code, with no warning: the trace keeps
their names, files and lines. A trace recorded with --no-symbols names
the frames by address once the files are gone (and says why), until
`allocprof symbols` adds them while the files are there. testdata/jit's
code is in no file: the perf map it writes names it, in the trace once
recorded (the map removed after), and by the map itself for a trace
without symbols while the map is there. A stripped program's trace keeps
what its files had, and `--debug-dir` adds the debug file's lines.

usage: kept.py ALLOCPROF JIT TMPDIR
"""
import glob
import os
import shutil
import subprocess
import sys

allocprof, jit, tmp = sys.argv[1:4]
tmp = os.path.join(tmp, "kept")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
env = dict(os.environ, LC_ALL="C", NO_COLOR="1")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


LIB = r"""
#include <stdlib.h>
#include <string.h>
static inline char *fill(size_t n) { char *p = malloc(n); if (p) memset(p, 7, n); return p; }
__attribute__((noinline)) char *lib_make(size_t n) { return fill(n + 1) + 0; }
__attribute__((noinline)) void lib_drop(char *p) { free(p); }
"""
MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
char *lib_make(size_t n);
void lib_drop(char *p);
static inline int *numbers(int n) { int *v = calloc((size_t)n, sizeof(int)); if (v) v[0] = n; return v; }
__attribute__((noinline)) long work(int i) {
	char *a = lib_make((size_t)(16 + i % 7));
	int *b = numbers(4 + i % 3);
	long r = a[0] + b[0];
	lib_drop(a);
	if (i % 4) free(b);
	return r;
}
int main(void) {
	long s = 0;
	for (int i = 0; i < 200; i++) s += work(i);
	printf("%ld\n", s);
	return 0;
}
"""
OTHER = "int main(void) { return 3; }\n"


def build(cc, d, main_src=MAIN):
    os.makedirs(d, exist_ok=True)
    for name, text in (("lib.c", LIB), ("main.c", main_src)):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    flags = ["-O2", "-g", "-fno-builtin-malloc", "-fno-builtin-calloc", "-fno-builtin-free"]
    subprocess.run([cc] + flags + ["-shared", "-fPIC", "-o", os.path.join(d, "libkept.so"),
                    os.path.join(d, "lib.c")], check=True)
    subprocess.run([cc] + flags + ["-o", os.path.join(d, "prog"), os.path.join(d, "main.c"),
                    "-L" + d, "-lkept", "-Wl,-rpath," + d], check=True)


BINS = ("prog", "libkept.so")


def hide(d):
    for b in BINS:
        shutil.move(os.path.join(d, b), os.path.join(d, b + ".gone"))


def unhide(d):
    for b in BINS:
        shutil.move(os.path.join(d, b + ".gone"), os.path.join(d, b))


def record(d, trace, *extra):
    subprocess.run([allocprof, "record", "--all", "-q", *extra, "-o", trace,
                    os.path.join(d, "prog")], check=True, stdout=subprocess.DEVNULL, env=env)


VIEWS = [["top", "--alloc_objects"], ["top", "--alloc_space", "--lines"],
         ["peek", "work|lib_make"], ["tree"], ["export", "--format=folded"],
         ["flamegraph"], ["list", "lib_make"], ["list", "work"]]


def views(trace):
    """{view: (stdout, stderr)} of every view of trace."""
    out = {}
    for v in VIEWS:
        cmd = [allocprof] + v + [trace]
        svg = os.path.join(tmp, "fg.svg")
        if v[0] == "flamegraph":
            cmd[2:2] = ["-o", svg]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
        if r.returncode != 0:
            fail("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr))
        text = r.stdout
        if v[0] == "flamegraph":
            with open(svg) as f:
                text = f.read()
        out[" ".join(v)] = (text, r.stderr)
    return out


def same(a, b, what):
    for k in a:
        if a[k][0] != b[k][0]:
            fail("%s: %s differs" % (what, k))
            print("--- before\n%s\n--- after\n%s" % (a[k][0][:1500], b[k][0][:1500]))
        if b[k][1] != a[k][1]:
            fail("%s: %s says: %s" % (what, k, b[k][1]))


for cc in ("gcc", "clang"):
    if not shutil.which(cc):
        print("SKIP %s: not installed" % cc)
        continue
    d = os.path.join(tmp, cc)
    build(cc, d)
    trace = os.path.join(tmp, cc + ".trace")
    record(d, trace)
    before = views(trace)
    top = before["top --alloc_objects"][0]
    for want in ("lib_make", "work", "numbers (inline)", "fill (inline)"):
        if want not in top:
            fail("%s: top names no %s:\n%s" % (cc, want, top))
    if "lib.c:" not in before["top --alloc_space --lines"][0]:
        fail("%s: top --lines has no lib.c line" % cc)
    # the program and its library gone (the sources stay: list reads them)
    hide(d)
    same(before, views(trace), cc + ", files deleted")
    # rebuilt from other code at the same paths (other build-ids)
    build(cc, d + ".other", OTHER)
    for b in BINS:
        shutil.copy(os.path.join(d + ".other", b), os.path.join(d, b))
    same(before, views(trace), cc + ", files rebuilt")
    unhide(d)

    # --no-symbols: the files are needed; `allocprof symbols` adds them
    bare = os.path.join(tmp, cc + ".bare.trace")
    record(d, bare, "--no-symbols")
    hide(d)
    r = subprocess.run([allocprof, "top", "--alloc_objects", bare], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    if "[prog]" not in r.stdout or "[libkept.so]" not in r.stdout:
        fail("%s --no-symbols, files deleted: frames not by address:\n%s" % (cc, r.stdout))
    if os.path.join(d, "prog") not in r.stderr:
        fail("%s --no-symbols, files deleted: no warning naming the file: %r" % (cc, r.stderr))
    unhide(d)
    # what record's helper does: the modules opened ahead of `go` (the
    # trace finished already, so before it), the same bytes written; at
    # the end of its fd without `go`, the trace left as it is
    ahead = os.path.join(tmp, cc + ".ahead.trace")
    left = os.path.join(tmp, cc + ".left.trace")
    shutil.copy(bare, ahead)
    shutil.copy(bare, left)
    for path, say in ((ahead, b"g"), (left, b"")):
        rfd, wfd = os.pipe()
        os.write(wfd, say)
        os.close(wfd)
        r = subprocess.run([allocprof, "symbols", "-q", "--ready-fd", str(rfd), path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(env, ALLOCPROF_TEST_AHEAD="1"), pass_fds=(rfd,))
        os.close(rfd)
        got = r.stderr.split()
        if r.returncode != 0 or (say and (len(got) < 7 or not got[2].isdigit() or
                                          int(got[2]) < 2 or got[6] != "0")):
            fail("symbols --ready-fd (%r): exit %d, %r" % (say, r.returncode, r.stderr))
    with open(bare, "rb") as f:
        bare_bytes = f.read()
    with open(left, "rb") as f:
        if f.read() != bare_bytes:
            fail("symbols --ready-fd without go changed the trace")
    r = subprocess.run([allocprof, "symbols", bare], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0 or r.stderr != "allocprof: %s keeps its symbols now\n" % bare:
        fail("allocprof symbols: exit %d, %r" % (r.returncode, r.stderr))
    with open(bare, "rb") as f, open(ahead, "rb") as g:
        if f.read() != g.read():
            fail("symbols --ready-fd wrote other bytes than symbols")
    size = os.path.getsize(bare)
    r = subprocess.run([allocprof, "symbols", bare], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0 or r.stderr != "allocprof: %s keeps its symbols already\n" % bare:
        fail("allocprof symbols twice: exit %d, %r" % (r.returncode, r.stderr))
    if os.path.getsize(bare) != size:
        fail("allocprof symbols twice changed the trace")
    hide(d)
    after = views(bare)
    for k in ("top --alloc_objects", "top --alloc_space --lines", "tree", "list lib_make"):
        if after[k][0] != before[k][0]:
            fail("%s: %s of the --no-symbols trace given its symbols later differs" % (cc, k))
    unhide(d)


# code in no file, named by a perf map
def perf_maps():
    return set(glob.glob("/tmp/perf-*.map"))


def top_first(trace):
    r = subprocess.run([allocprof, "top", "--alloc_objects", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    lines = r.stdout.splitlines()
    return lines[5].split() if len(lines) > 5 else []


for extra, named_after in (((), True), (("--no-symbols",), False)):
    trace = os.path.join(tmp, "jit%s.trace" % "".join(extra))
    had = perf_maps()
    subprocess.run([allocprof, "record", "--all", "-q", *extra, "-o", trace, jit], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    new = perf_maps() - had
    if len(new) != 1:
        fail("jit wrote %d perf maps" % len(new))
        continue
    row = top_first(trace)
    if row[:1] != ["300"] or row[-1:] != ["jit_make_buffer"]:
        fail("jit %s, the map there: top's first row %s" % (extra, row))
    for m in new:
        os.unlink(m)
    row = top_first(trace)
    want = "jit_make_buffer" if named_after else "0x"
    if row[:1] != ["300"] or not row[-1:] or not row[-1].startswith(want):
        fail("jit %s, the map removed: top's first row %s" % (extra, row))

# a program stripped, its debug file apart (by build-id, in a directory
# of its own): the trace keeps its symbols without lines (and names
# without the symbol table), and the note on frames without symbols
# advises --debug-dir: with it the views read the debug file, as they
# would a -dbgsym package installed since recording
d = os.path.join(tmp, "stripped")
build("gcc", d)
dbg = os.path.join(tmp, "debugdir")
for b in BINS:
    path = os.path.join(d, b)
    notes = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, text=True,
                           check=True).stdout
    bid = [l.split()[-1] for l in notes.splitlines() if "Build ID" in l][0]
    os.makedirs(os.path.join(dbg, ".build-id", bid[:2]), exist_ok=True)
    subprocess.run(["objcopy", "--only-keep-debug", path,
                    os.path.join(dbg, ".build-id", bid[:2], bid[2:] + ".debug")], check=True)
    subprocess.run(["strip", path], check=True)
trace = os.path.join(tmp, "stripped.trace")
record(d, trace)
ref = os.path.join(tmp, "unstripped.trace")
build("gcc", os.path.join(tmp, "unstripped"))
record(os.path.join(tmp, "unstripped"), ref)
cmd = [allocprof, "top", "--lines", "--alloc_objects"]
r = subprocess.run(cmd + [trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   env=env)
if "--debug-dir" not in r.stderr or "work" in r.stdout:
    fail("stripped: no note advising --debug-dir, or names without it: %s%s"
         % (r.stderr, r.stdout))
r = subprocess.run(cmd + ["--debug-dir", dbg, trace], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, env=env)
want = subprocess.run(cmd + [ref], stdout=subprocess.PIPE, text=True, env=env).stdout
sites = lambda out: [l.split()[:2] + [os.path.basename(w) for w in l.split()[5:]]
                     for l in out.splitlines() if l.split()[:1] != ["0"] and ".c:" in l]
if r.returncode or r.stderr or not sites(want) or sites(r.stdout) != sites(want):
    fail("stripped, --debug-dir: exit %d, %r, sites %s, want %s"
         % (r.returncode, r.stderr, sites(r.stdout), sites(want)))

# ...and `symbols --debug-dir` keeps the debug file's lines in a trace
# recorded without symbols: the views need neither after
kept = os.path.join(tmp, "stripped-kept.trace")
record(d, kept, "--no-symbols")
r = subprocess.run([allocprof, "symbols", "-q", "--debug-dir", dbg, kept],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
if r.returncode or r.stderr:
    fail("symbols --debug-dir: exit %d, %r" % (r.returncode, r.stderr))
os.rename(dbg, dbg + ".gone")
r = subprocess.run(cmd + [kept], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   env=env)
os.rename(dbg + ".gone", dbg)
if r.returncode or not sites(want) or sites(r.stdout) != sites(want):
    fail("symbols --debug-dir, the directory gone: exit %d, %r, sites %s, want %s"
         % (r.returncode, r.stderr, sites(r.stdout), sites(want)))

# bad input: one line, a non-zero exit
for args, code in ((["symbols"], 2), (["symbols", "--compress-level", "99", "x"], 2),
                   (["symbols", "--ready-fd", "99", "x"], 2),
                   (["symbols", "--ready-fd", "0", "x", "y"], 2),
                   (["symbols", "--debug-dir", os.path.join(tmp, "none"), "x"], 2),
                   (["symbols", os.path.join(tmp, "none.trace")], 1)):
    r = subprocess.run([allocprof] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if r.returncode != code or len(r.stderr.splitlines()) != 1 or \
            not r.stderr.startswith("allocprof"):
        fail("%s: exit %d, %r" % (args, r.returncode, r.stderr))

# a symbolic link to a trace without its symbols: the trace is not
# written through it (O_NOFOLLOW), and the line says so, not ELOOP's text
link = os.path.join(tmp, "link.trace")
os.symlink(os.path.join(tmp, "jit--no-symbols.trace"), link)
r = subprocess.run([allocprof, "symbols", link], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, env=env)
if r.returncode != 1 or r.stderr != ("allocprof: %s: cannot add the symbols: a symbolic link "
                                     "(give the trace's own path)\n" % link):
    fail("symbols through a link: exit %d, %r" % (r.returncode, r.stderr))

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("symbols kept with the trace: views the same without the files, perf maps kept")
