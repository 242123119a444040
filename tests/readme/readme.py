#!/usr/bin/env python3
"""README.md's demo excerpt is what the commands print.

usage: readme.py README ALLOCPROF DEMO_PROGRAM SOURCE_ROOT

Records DEMO_PROGRAM 20000 with --all as `make demo` does, then runs every
`$ allocprof ...` command of the block between <!-- demo:begin --> and
<!-- demo:end --> (build/demo.trace is the fresh trace) and checks that the
lines under it are its output: in order, `...` standing for any number of
lines left out, and without one the lines adjacent. Durations are
machine-dependent (the test runs with ALLOCPROF_TEST_COSTS, but lifetimes,
request spacing and held means are times), so every duration and a held
mean compare as placeholders, and so does every number of the lines that
say what advise measured, and a verdict a measurement decided (on a loaded
machine a margin can move), and with it the rank of every site below it
(a site at the margin is a pool, ranked 2, on one run and too little to
gain, ranked 3, on the next): a site's rank compares as a placeholder,
the order of the sites shown still as printed; /path/to/allocprof stands
for SOURCE_ROOT. advise's line that the run was off its CPU (a loaded
machine's) is left out of what it printed.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

DUR = re.compile(r"(?<![\w.])[0-9]+(?:\.[0-9]+)?(?:ns|us|ms|s)\b")
MEAN = re.compile(r"mean [0-9.]+(?:[kMGT]?B)")
RANK = re.compile(r"^[0-9]+\. (?=\S)")
NUM = re.compile(r"(?<![\w.<])[-+]?[0-9][0-9.]*(?:[kMGT]?B|%)?")


def norm(line, root):
    line = line.replace(root, "/path/to/allocprof")
    line = DUR.sub("<t>", line)
    line = RANK.sub("<rank>. ", line)
    # What advise measured (its lines say so) differs from run to run.
    if "easured" in line:
        # (and "replayed on 1 CPU" where the test may use one)
        line = NUM.sub("<n>", line).replace("<n> CPU,", "<n> CPUs,")
    return MEAN.sub("mean <b>", line).rstrip()


def measured_verdicts(lines):
    """A verdict that a measurement decided (the line after it says what
    was measured) moves with the machine's load and with the machine at
    the margins (a saving of 1.5% of the program's time is a pool on one
    machine and too little to gain on another): the verdict and the two
    lines that say what was measured compare as placeholders, words and
    all, since their words follow the verdict ("saves"/"costs", "Less than
    1%..."), and so does the free list's line measured beside the pool. The model's verdicts do not move: they compare as printed."""
    out = list(lines)
    for i in range(len(out) - 1):
        if out[i].startswith("   verdict: ") and out[i + 1].startswith("   Measured ("):
            out[i] = "   verdict: <measured>"
    for i, l in enumerate(out):
        if l.startswith("   Measured ("):
            out[i] = "   Measured (...)"
        elif l.startswith("   measured: "):
            out[i] = "   measured: ..."
        elif l.startswith("   a free list kept by each thread: "):
            out[i] = "   a free list kept by each thread: ..."
    return out


def first_difference(seg, got):
    """The first line of `seg` that `got` does not have where it should,
    for a failure that says where (a CI log shows only so much)."""
    for k, w in enumerate(seg):
        g = got[k] if k < len(got) else "<end of output>"
        if w != g:
            return "\nfirst difference, line %d:\n  want: %s\n  got:  %s" % (k + 1, w, g)
    return ""


def blocks(readme):
    text = open(readme).read()
    m = re.search(r"<!-- demo:begin -->\n```\n(.*?)```\n<!-- demo:end -->", text, re.S)
    if not m:
        sys.exit("FAIL: no demo block in %s" % readme)
    cmd, want = None, []
    for line in m.group(1).split("\n"):
        if line.startswith("$ allocprof "):
            if cmd:
                yield cmd, want
            cmd, want = line[2:], []
        elif cmd is not None:
            want.append(line)
    if cmd:
        yield cmd, want


def matches(want, got):
    """Segments of `want` between `...` lines appear in `got` in order; the
    first at the start unless `want` starts with `...`."""
    while want and want[-1] == "":
        want = want[:-1]
    segs, cur = [], []
    for w in want:
        if w == "...":
            segs.append(cur)
            cur = []
        else:
            cur.append(w)
    segs.append(cur)
    pos = 0
    for k, seg in enumerate(segs):
        if not seg:
            continue
        if k == 0:
            if got[:len(seg)] != seg:
                return (first_difference(seg, got) + "\nthe output does not start with:\n  " +
                        "\n  ".join(seg))
            pos = len(seg)
            continue
        for j in range(pos, len(got) - len(seg) + 1):
            if got[j:j + len(seg)] == seg:
                pos = j + len(seg)
                break
        else:
            return "not found in order:\n  " + "\n  ".join(seg)
    return None


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    readme, ap, demo, root = sys.argv[1:]
    root = os.path.realpath(root)
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "demo.trace")
        subprocess.run([ap, "record", "-q", "--all", "-o", trace, demo, "20000"], check=True,
                       stdout=subprocess.DEVNULL)
        n = 0
        for cmd, want in blocks(readme):
            n += 1
            args = [a if a != "build/demo.trace" else trace for a in shlex.split(cmd)]
            p = subprocess.run([ap] + args[1:], capture_output=True, text=True)
            if p.returncode:
                print("FAIL: %s exited %d: %s" % (cmd, p.returncode, p.stderr))
                fails += 1
                continue
            # The line that says the recorded run was off its CPU a
            # millisecond or more (advise then sleeps that at its longest
            # gaps) comes with the machine: the demo only computes, and
            # was 1.48 ms off its CPU once in a fresh clone's suite on a
            # loaded machine (11 us alone). The README shows the run
            # without it.
            got = measured_verdicts([norm(l, root) for l in p.stdout.split("\n")
                                     if not l.startswith("  with the program's time off its CPU")])
            why = matches(measured_verdicts([norm(l, root) for l in want]), got)
            if why:
                print("FAIL: %s: %s\n--- it printed:\n%s" % (cmd, why, p.stdout))
                fails += 1
            else:
                print("ok: %s" % cmd)
    if not n:
        sys.exit("FAIL: no commands in the demo block")
    sys.exit(1 if fails else 0)


main()
