#!/usr/bin/env python3
"""Compares allocprof's own numbers with what go tool pprof reads from the
exported profile.

  compare.py top TOP_JSON PPROF_TOP TOLERANCE LABEL
      `allocprof top --json` against `go tool pprof -top`: the total, the
      set of functions, and each function's flat and cum.
  compare.py folded FOLDED PPROF_TRACES TOP_JSON TOLERANCE LABEL
      `allocprof export --format=folded` against `go tool pprof -traces`
      (the samples as pprof sees them after drop_frames): the same stacks,
      root first, with the same values; one line per distinct stack; the
      values sum to allocprof's total. A frame without a name is
      "module+0xoff" in the folded stacks, where pprof shows an address of
      a mapping without symbols as "[module]": both sides are compared
      with every "module+0xoff" read as "[module]".

  compare.py pprofnames PPROF_RAW
      prints "SYSTEM_NAME<tab>NAME" for every function of `go tool pprof
      -raw`'s locations whose system name is mangled C++ (_Z...).
  compare.py relocal RAW_LOCAL RAW_GOOD MAPPING_FILE
      `go tool pprof -raw -symbolize=local` of an export made while the
      binary at MAPPING_FILE was a rebuilt one (its mapping unsymbolized)
      against `-raw` of the export made with the original binary: the same
      locations, and each one of that mapping named by pprof as allocprof
      names it (its outermost function: Go's pprof reports no inlined
      frames for C), except where Go finds no DWARF subprogram (_start).

TOLERANCE is the largest difference allowed per value (0 for traces
recorded with --all; sampled values are rounded per sample in the profile,
per node in top, so pprof.sh allows 0.5 per sample). Prints what differs
and exits 1 on a difference."""
import json
import re
import sys

INLINE = " (inline)"


def number(text):
    """A pprof value as printed with -unit=byte: 1600B, 159byte (a count:
    -unit=byte names counts so too), 0."""
    m = re.fullmatch(r"(-?[0-9.]+)(B|byte)?", text)
    if not m:
        raise ValueError("not a value: %r" % text)
    return float(m.group(1))


def parse_top(path):
    total = None
    rows = {}
    in_rows = False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"Showing nodes accounting for \S+, \S+ of (\S+) total", line)
        if m:
            total = number(m.group(1))
            continue
        if re.match(r"\s*flat\s+flat%\s+sum%\s+cum\s+cum%", line):
            in_rows = True
            continue
        if not in_rows or not line.strip():
            continue
        f = line.split(None, 5)
        name = f[5]
        if name.endswith(INLINE):
            name = name[: -len(INLINE)]
        if name in rows:
            raise ValueError("pprof printed %r twice" % name)
        rows[name] = (number(f[0]), number(f[3]))
    if total is None:
        raise ValueError("no total line in %s" % path)
    return total, rows


def pprof_names(path):
    """(system_name, name) of every location line of `pprof -raw`."""
    out = []
    in_locs = False
    for line in open(path):
        line = line.rstrip("\n")
        if line == "Locations":
            in_locs = True
            continue
        if line == "Mappings":
            break
        if not in_locs:
            continue
        m = re.match(r"^\s*(?:\d+: 0x[0-9a-f]+ M=\d+ )?(.*) (\S*):(\d+) s=\d+(?:\((.*)\))?$", line)
        if m and m.group(4) and m.group(4).startswith("_Z"):
            out.append((m.group(4), m.group(1)))
    return out


def raw_locations(path):
    """{id: (mapping file, [function names, innermost first])} of -raw."""
    locs, maps, cur = {}, {}, None
    section = None
    for line in open(path):
        line = line.rstrip("\n")
        if line in ("Locations", "Mappings"):
            section = line
            continue
        if section == "Locations":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=(\d+) ?(.*)$", line)
            if m:
                cur = int(m.group(1))
                locs[cur] = [m.group(2), []]
                rest = m.group(3)
            else:
                rest = line.strip()
            n = re.match(r"^(.*) (\S*):(\d+) s=\d+", rest)
            if n and cur is not None:
                locs[cur][1].append(n.group(1))
        elif section == "Mappings":
            m = re.match(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+)", line)
            if m:
                maps[m.group(1)] = m.group(2)
    return {k: (maps.get(v[0]), v[1]) for k, v in locs.items()}


def relocal(raw_local, raw_good, mapping_file):
    local, good = raw_locations(raw_local), raw_locations(raw_good)
    ok = True
    if set(local) != set(good):
        print("FAIL relocal: the two exports have different locations")
        return False
    named = 0
    for lid in sorted(good):
        gm, gnames = good[lid]
        if gm != mapping_file:
            continue
        want = gnames[-1] if gnames else None
        got = local[lid][1]
        if want == "_start" and not got:
            continue
        if len(got) != 1 or got[0] != want:
            print("FAIL relocal: location %d: pprof -symbolize=local says %r, allocprof %r" %
                  (lid, got, want))
            ok = False
        else:
            named += 1
    if not named:
        print("FAIL relocal: no location of %s" % mapping_file)
        return False
    if ok:
        print("ok relocal: %d locations of %s named by pprof as by allocprof" % (named, mapping_file))
    return ok


def parse_traces(path):
    """Samples of `pprof -traces`: {(root, ..., leaf): [summed value, samples]}."""
    stacks = {}
    cur, value = None, None

    def flush():
        if cur is not None:
            key = tuple(reversed(cur))
            acc = stacks.setdefault(key, [0, 0])
            acc[0] += value
            acc[1] += 1

    started = False  # the header (File:, Type:, comments...) comes first
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("-----------+"):
            flush()
            cur, value = None, None
            started = True
            continue
        if not started or not line.strip():
            continue
        if line.startswith(" " * 13):  # a caller
            if cur is not None:
                cur.append(line.strip())
            continue
        head, _, rest = line.strip().partition(" ")
        if head.endswith(":"):
            continue  # a label line ("bytes:  8B")
        if cur is not None:
            flush()
        value = number(head)
        cur = [rest.strip()]
    flush()
    return {tuple(f[: -len(INLINE)] if f.endswith(INLINE) else f for f in k): v
            for k, v in stacks.items()}


def close(a, b, tol):
    return abs(a - b) <= tol + 1e-9


def cmp_top(top_json, pprof_top, tol, label):
    top = json.load(open(top_json))
    total, rows = parse_top(pprof_top)
    ours = {r["name"]: (r["flat"], r["cum"]) for r in top["rows"]}
    bad = []
    # pprof's total is the sum of per-sample values, each rounded
    if not close(top["total"], total, tol):
        bad.append("total: allocprof %s, pprof %s" % (top["total"], total))
    for name in sorted(set(ours) | set(rows)):
        a, p = ours.get(name), rows.get(name)
        if a is None or p is None:
            bad.append("%s: only in %s (%s)" % (name, "allocprof" if p is None else "pprof",
                                              a if p is None else p))
        elif not close(a[0], p[0], tol) or not close(a[1], p[1], tol):
            bad.append("%s: allocprof flat %s cum %s, pprof flat %s cum %s"
                       % (name, a[0], a[1], p[0], p[1]))
    if bad:
        print("FAIL %s: allocprof top vs go tool pprof -top:" % label)
        for b in bad:
            print("  " + b)
        return False
    print("ok %s: %d functions, total %s" % (label, len(ours), top["total"]))
    return True


ADDRESS = re.compile(r"^(.+)\+0x[0-9a-f]+$")


def as_module(stack):
    """The stack with each "module+0xoff" frame read as "[module]"."""
    return tuple(re.sub(ADDRESS, r"[\1]", f) for f in stack)


def cmp_folded(folded, pprof_traces, top_json, tol, label):
    lines = [l.rstrip("\n") for l in open(folded) if l.strip()]
    ours, seen = {}, set()
    for l in lines:
        stack, _, v = l.rpartition(" ")
        key = tuple(stack.split(";"))
        if key in seen:
            print("FAIL %s: folded line for %s twice" % (label, stack))
            return False
        seen.add(key)
        ours[as_module(key)] = ours.get(as_module(key), 0) + float(v)
    theirs = {}
    for k, v in parse_traces(pprof_traces).items():
        acc = theirs.setdefault(as_module(k), [0, 0])
        acc[0] += v[0]
        acc[1] += v[1]
    theirs = {k: v for k, v in theirs.items() if round(v[0]) != 0}
    total = json.load(open(top_json))["total"]
    bad = []
    for k in sorted(set(ours) | set(theirs)):
        a, p = ours.get(k), theirs.get(k)
        if a is None or p is None or not close(a, p[0], tol):
            bad.append("%s: folded %s, pprof %s" % (";".join(k), a, p and p[0]))
    if not close(sum(ours.values()), total, tol):
        bad.append("folded values sum to %s, allocprof's total is %s"
                   % (sum(ours.values()), total))
    if bad:
        print("FAIL %s: folded vs go tool pprof -traces:" % label)
        for b in bad:
            print("  " + b)
        return False
    print("ok %s: %d folded lines = distinct pprof stacks, sum %s" % (label, len(lines), total))
    return True


def main(argv):
    if len(argv) == 6 and argv[1] == "top":
        return cmp_top(argv[2], argv[3], float(argv[4]), argv[5])
    if len(argv) == 7 and argv[1] == "folded":
        return cmp_folded(argv[2], argv[3], argv[4], float(argv[5]), argv[6])
    if len(argv) == 5 and argv[1] == "relocal":
        return relocal(argv[2], argv[3], argv[4])
    if len(argv) == 3 and argv[1] == "pprofnames":
        for system, name in pprof_names(argv[2]):
            print("%s\t%s" % (system, name))
        return True
    sys.stderr.write(__doc__)
    return False


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv) else 1)
