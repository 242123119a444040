#!/usr/bin/env python3
"""The man pages against the commands they document.

usage: man.py ALLOCPROF MANDIR

groff is looked up in PATH when the test runs (make check installs it
after the build directory may have been configured).

- every command of `allocprof --help` has MANDIR/allocprof-CMD.1, and
  allocprof(1) lists every command;
- every option in `allocprof CMD --help` is an item of the OPTIONS section
  of allocprof-CMD(1), and every item there is an option of --help (a page
  neither misses an option nor keeps a removed one);
- every page renders with `groff -man -Tutf8 -ww` without a warning.
"""
import os
import re
import shutil
import subprocess
import sys

# An option as --help spells it in its first column: "-o", "--output",
# "--gc=gogc:" (the value's placeholder N left off), "--site=callsite".
OPT = re.compile(r"(?<![\w-])(-{1,2}[a-z][a-z0-9_-]*(?:=[a-z_]+:?)?)")


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def commands(ap):
    """The command names of `allocprof --help`, in its order."""
    out = run([ap, "--help"]).stdout
    names, inside = [], False
    for line in out.splitlines():
        if line == "commands:":
            inside = True
        elif inside and line.startswith("  ") and line.strip():
            names.append(line.split()[0])
        elif inside:
            break
    return names


def help_options(ap, cmd):
    """The options listed under "options:" in `allocprof CMD --help`."""
    p = run([ap, cmd, "--help"])
    if p.returncode != 0:
        sys.exit(f"FAIL allocprof {cmd} --help: exit {p.returncode}")
    opts, inside = set(), False
    for line in p.stdout.splitlines():
        if line == "options:":
            inside = True
            continue
        if not inside:
            continue
        if not line.strip():
            break
        # "  -o, --output PATH  text": the first column holds the options;
        # lines of continued text start with spaces and no dash.
        head = line.strip()
        if not head.startswith("-"):
            continue
        first = re.split(r"\s{2,}", head)[0]
        opts.update(OPT.findall(first))
    return opts


def render(groff, page):
    """(text, warnings) of PAGE rendered by groff as man(1) would, plain
    text without overstriking, wide enough that no tag wraps."""
    p = run([groff, "-man", "-Tutf8", "-ww", "-rLL=200n", "-P", "-cbou", page],
            env=dict(os.environ, LC_ALL="C.UTF-8"))
    text = p.stdout.replace("\u2212", "-").replace("\u2010", "-")
    return text, p.stderr.strip() + ("" if p.returncode == 0 else f" (exit {p.returncode})")


def section(text, name):
    """The lines of section NAME of a rendered page."""
    out, inside = [], False
    for line in text.splitlines():
        if line and not line[0].isspace():
            inside = line.strip() == name
            continue
        if inside:
            out.append(line)
    return out


def man_options(text):
    """The options that the OPTIONS section's items (tags) name. A tag sits
    at the section's first indentation; its text is indented further."""
    lines = [l for l in section(text, "OPTIONS") if l.strip()]
    if not lines:
        return set()
    indent = min(len(l) - len(l.lstrip()) for l in lines)
    deeper = [len(l) - len(l.lstrip()) for l in lines if len(l) - len(l.lstrip()) > indent]
    text_at = min(deeper) if deeper else 0
    opts = set()
    for l in lines:
        if len(l) - len(l.lstrip()) == indent and l.lstrip().startswith("-"):
            # "--all  Record every ...": a short tag shares its line with
            # the text, two spaces or more apart, or one where the tag
            # fills the room before the text's indentation ("--live Show":
            # groff spreads the line's spaces from either end in turn).
            head = re.split(r"\s{2,}", l.strip())[0]
            if text_at and len(l) > text_at and l[text_at - 1] == " " and l[text_at] != " ":
                head = min(head, l[:text_at].strip(), key=len)
            opts.update(OPT.findall(head))
    return opts


def main():
    ap, mandir = sys.argv[1:3]
    groff = shutil.which("groff")
    if not groff:
        sys.exit("FAIL groff not found: install groff-base (make check does)")
    fail = []
    cmds = commands(ap)
    if len(cmds) < 8:
        fail.append(f"allocprof --help lists {len(cmds)} commands: {cmds}")
    pages = {"allocprof": os.path.join(mandir, "allocprof.1")}
    for c in cmds:
        pages[c] = os.path.join(mandir, f"allocprof-{c}.1")
    texts = {}
    for c, page in pages.items():
        if not os.path.exists(page):
            fail.append(f"{c}: no man page {page}")
            continue
        text, warn = render(groff, page)
        if warn:
            fail.append(f"{os.path.basename(page)}: groff -ww: {warn}")
        if not text.strip():
            fail.append(f"{os.path.basename(page)}: renders empty")
        texts[c] = text

    if "allocprof" in texts:
        listed = {l.split()[0] for l in section(texts["allocprof"], "COMMANDS")
                  if l.strip() and len(l) - len(l.lstrip()) == 7}
        for c in cmds:
            if c not in listed:
                fail.append(f"allocprof.1: COMMANDS does not list '{c}'")
        for c in sorted(listed - set(cmds)):
            fail.append(f"allocprof.1: COMMANDS lists '{c}', which allocprof --help does not")

    checked = 0
    for c in cmds:
        if c not in texts:
            continue
        want = help_options(ap, c)
        have = man_options(texts[c])
        if not want:
            fail.append(f"allocprof {c} --help: no options found")
        for o in sorted(want - have):
            fail.append(f"allocprof-{c}.1: option {o} of 'allocprof {c} --help' is not in OPTIONS")
        for o in sorted(have - want):
            fail.append(f"allocprof-{c}.1: OPTIONS has {o}, which 'allocprof {c} --help' does not")
        checked += len(want)

    for f in fail:
        print("FAIL", f)
    if fail:
        sys.exit(1)
    print(f"ok: {len(pages)} pages render without warnings; "
          f"{checked} options of {len(cmds)} commands documented")


if __name__ == "__main__":
    main()
