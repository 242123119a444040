#!/usr/bin/env python3
"""allocprof snapshot (issue 25, item 4): a finished copy of the trace of a
program that runs on under `record`, with what its threads hold in their
buffers, and the program none the wiser.

tests/record/snapserver: three workers allocate 1000 blocks each in
worker_alloc and free 400, then wait with those events in their buffers;
at "ready" the snapshot must count exactly 3000 calls of worker_alloc,
1800 of them in use, none of worker_more, end "snapshot" and not be
truncated. The program then goes on, prints "done" and exits 0 as it does
natively, and its own trace counts worker_more too. A second snapshot
replaces the first; a finished trace, a missing one, a file that is not a
trace in the way of -o and bad options each get one line and exit 1 or 2.

usage: snapshot.py ALLOCPROF SNAPSERVER TMPDIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reclib import env, fail, failures, fresh_dir, runner  # noqa: E402

allocprof, server, tmp = sys.argv[1:4]
tmp = fresh_dir(tmp, "snapshot")
run = runner(allocprof)


def site_counts(trace, index):
    """{function: value} of top's rows for sample index `index`."""
    r = run("top", "--json", "--" + index, trace)
    if r.returncode:
        fail("top %s %s: %s" % (index, trace, r.stderr))
        return {}
    return {row["name"]: row["flat"] for row in json.loads(r.stdout)["rows"]}


native = subprocess.run([server], input="go\n", stdout=subprocess.PIPE, text=True)
trace = os.path.join(tmp, "s.trace")
p = subprocess.Popen([allocprof, "record", "--all", "-q", "-o", trace, server],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
line = p.stdout.readline()
if line != "ready\n":
    fail("the program said %r" % line)
snap = trace + ".snapshot"
for attempt in range(2):  # the second replaces the first
    r = run("snapshot", trace)
    if r.returncode or not r.stderr.startswith("allocprof: wrote %s (" % snap):
        fail("snapshot: exit %d, %r" % (r.returncode, r.stderr))
    s = json.loads(run("stats", "--json", snap).stdout or "{}")
    if s.get("end_reason") != "snapshot" or s.get("truncated") is not False:
        fail("snapshot's end %r, truncated %r" % (s.get("end_reason"), s.get("truncated")))
    objects = site_counts(snap, "alloc_objects")
    inuse = site_counts(snap, "inuse_objects")
    if objects.get("worker_alloc") != 3000 or inuse.get("worker_alloc") != 1800:
        fail("snapshot %d: worker_alloc %r allocated, %r in use (3000, 1800 wanted)" %
             (attempt, objects.get("worker_alloc"), inuse.get("worker_alloc")))
    if "worker_more" in objects:
        fail("snapshot %d: worker_more before it ran: %r" % (attempt, objects["worker_more"]))
    if not s.get("symbols_kept"):
        fail("the snapshot keeps no symbols")
# -o - is standard output to the other commands: refused while the program
# runs, not a file named "-" in the current directory
r = run("snapshot", "-o", "-", trace, cwd=tmp)
if (r.returncode != 1 or r.stdout or len(r.stderr.splitlines()) != 1 or "standard output" not in r.stderr
        or os.path.exists(os.path.join(tmp, "-"))):
    fail("snapshot -o -: exit %d, %r, a file '-': %s" %
         (r.returncode, r.stderr, os.path.exists(os.path.join(tmp, "-"))))
# the program goes on as it would have
out, _ = p.communicate("go\n")
if out != "done\n" or p.returncode != native.returncode or native.stdout != "ready\ndone\n":
    fail("the program after the snapshot: %r, exit %d (natively %r, %d)" %
         (out, p.returncode, native.stdout, native.returncode))
objects = site_counts(trace, "alloc_objects")
if objects.get("worker_alloc") != 3000 or objects.get("worker_more") != 1500:
    fail("the program's own trace: %r" % objects)

# refusals: one line each
other = os.path.join(tmp, "notes.txt")
with open(other, "w") as f:
    f.write("mine\n")
for args, code, says in (
        (["snapshot", trace], 1, "no buffers file"),
        (["snapshot", os.path.join(tmp, "none.trace")], 1, "No such file"),
        (["snapshot", "-o", other, snap], 1, "is not a trace"),
        (["snapshot", other], 1, "not an allocprof trace"),
        (["snapshot", tmp], 1, "Is a directory"),
        (["snapshot"], 2, "a TRACE is needed"),
        (["snapshot", "--compress-level", "20", trace], 2, "--compress-level"),
        (["snapshot", "-bogus", trace], 2, "unknown option '-bogus'")):
    r = run(*args)
    if r.returncode != code or len(r.stderr.splitlines()) != 1 or says not in r.stderr:
        fail("%s: exit %d, %r" % (args, r.returncode, r.stderr))
with open(other) as f:
    if f.read() != "mine\n":
        fail("snapshot -o wrote over a file that is not a trace")

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("snapshot: a running program's trace up to now, the program none the wiser")
