#!/usr/bin/env python3
"""JSON and arithmetic half of the end-to-end tests (tests/e2e/*.sh): reads
testdata/<name>.expected.json, `allocprof stats --json` output and valgrind
logs, and compares them. Every check prints what differed and exits 1.

  e2e.py args EXPECTED SECTION TESTDATA     the arguments of a run, one a line
  e2e.py get EXPECTED KEY                   a value (dotted path), or nothing
  e2e.py totals STATS BASE EXPECTED SECTION compare the five totals
  e2e.py valgrind LOG BASELOG STATS BASE EXPECTED SECTION
                                            valgrind's heap summary vs stats
  e2e.py sampled STATS EXPECTED RATE        sampled estimates within 4 SE
  e2e.py field STATS KEY                    a field of a stats --json object
  e2e.py pixels PNG R,G,B...                of a screenshot, the share of pixels
                                            within 40 of each colour given

BASE / BASELOG are "-" when the expectation is not a difference.
"""
import json
import math
import re
import struct
import sys
import zlib

KEYS = ("alloc_objects", "alloc_space", "free_objects", "inuse_objects",
        "inuse_space")


def load(path):
    with open(path) as f:
        return json.load(f)


def section(exp, path):
    d = exp
    for part in path.split(".") if path else []:
        d = d[part]
    return d


def exact(stats, path):
    """The five totals of a --all trace as integers; they must be whole."""
    out = {}
    for k in KEYS:
        if k not in stats:
            sys.exit(f"{path}: stats --json has no '{k}'")
        v = stats[k]
        if not isinstance(v, (int, float)) or abs(v - round(v)) > 1e-6:
            sys.exit(f"{path}: {k} = {v!r}, not a whole number (is the trace --all?)")
        out[k] = int(round(v))
    return out


def matched(stats, path):
    """In a --all trace every free has its allocation: a free the reader
    could not match means a lost or misordered event."""
    n = stats.get("unmatched_frees")
    if isinstance(n, (int, float)) and n:
        print(f"{path}: {n} unmatched frees in a --all trace")
        return False
    return True


def minus(a, b):
    return {k: a[k] - b[k] for k in KEYS}


def compare(what, got, want):
    bad = [k for k in KEYS if k in want and got[k] != want[k]]
    for k in bad:
        print(f"{what}: {k}: got {got[k]}, expected {want[k]} "
              f"(difference {got[k] - want[k]:+d})")
    if not bad:
        print(f"{what}: " + ", ".join(f"{k} {got[k]}" for k in KEYS if k in want))
    return not bad


def cmd_args(exp_path, sec, testdata):
    for a in section(load(exp_path), sec).get("args", []):
        print(a.replace("@TESTDATA@", testdata))


def cmd_get(exp_path, key):
    try:
        v = section(load(exp_path), key)
    except (KeyError, TypeError):
        return
    if isinstance(v, list):
        print("\n".join(str(x) for x in v))
    elif isinstance(v, bool):
        print("true" if v else "false")
    else:
        print(v)


def cmd_totals(stats_path, base_path, exp_path, sec):
    stats = load(stats_path)
    got = exact(stats, stats_path)
    ok = matched(stats, stats_path)
    what = "stats"
    if base_path != "-":
        got = minus(got, exact(load(base_path), base_path))
        what = "stats minus baseline"
    want = section(load(exp_path), sec)["totals"]
    return compare(f"{what} vs {exp_path} [{sec or 'main'}]", got, want) and ok


SUMMARY = re.compile(r"^==(\d+)==\s+total heap usage: ([\d,]+) allocs, "
                     r"([\d,]+) frees, ([\d,]+) bytes allocated")
INUSE = re.compile(r"^==(\d+)==\s+in use at exit: ([\d,]+) bytes in "
                   r"([\d,]+) blocks")


def valgrind_totals(path):
    """The heap summary of the first (top) process in a valgrind log."""
    first = None
    usage = inuse = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^==(\d+)==", line)
            if m and first is None:
                first = m.group(1)
            m = SUMMARY.match(line)
            if m and m.group(1) == first:
                usage = [int(x.replace(",", "")) for x in m.groups()[1:]]
            m = INUSE.match(line)
            if m and m.group(1) == first:
                inuse = [int(x.replace(",", "")) for x in m.groups()[1:]]
    if usage is None or inuse is None:
        sys.exit(f"{path}: no heap summary from valgrind")
    return {"alloc_objects": usage[0], "free_objects": usage[1],
            "alloc_space": usage[2], "inuse_space": inuse[0],
            "inuse_objects": inuse[1]}


def cmd_valgrind(log, baselog, stats_path, base_path, exp_path, sec):
    vg = valgrind_totals(log)
    got = exact(load(stats_path), stats_path)
    ok = True
    if baselog == "-":
        ok &= compare("stats vs valgrind", got, vg)
    else:
        # The program's own allocations, by difference, must agree with
        # valgrind's difference and with the construction.
        vgd = minus(vg, valgrind_totals(baselog))
        ok &= compare("valgrind minus baseline vs expected", vgd,
                      section(load(exp_path), sec)["totals"])
        ok &= compare("stats minus baseline vs valgrind minus baseline",
                      minus(got, exact(load(base_path), base_path)), vgd)
        # Absolute numbers: the same calls are seen, so alloc_objects agree.
        # Frees and bytes may not: valgrind runs glibc's __libc_freeres at
        # exit, which frees what glibc keeps (cached thread stacks' thread
        # vectors, dlopen's data) and the program never frees; and a thread
        # vector has a slot per module with TLS, which the preloaded
        # sampler adds to.
        ok &= compare("stats vs valgrind, allocation calls", got,
                      {"alloc_objects": vg["alloc_objects"]})
    return ok


def cmd_sampled(stats_path, exp_path, rate):
    """Sampled estimates against the truth, within 4 standard errors.

    The sampler marks each allocated byte (counting s+1 per allocation) with
    probability 1/R, memorylessly: an allocation of size s is sampled
    independently with p = 1 - exp(-(s+1)/R) and stands for 1/p objects and
    s/p bytes (Horvitz-Thompson). The variance of the estimates is therefore
    exactly sum (1-p)/p over all allocations for objects and sum s^2 (1-p)/p
    for bytes; the sites in the expected file give every allocation's size.
    For bytes this is about total_bytes * R, i.e. a relative standard error
    of about 1/sqrt(total_bytes / R) = 1/sqrt(expected samples). We assert
    |estimate - truth| <= 4 SE: a normal deviate exceeds 4 sigma with
    probability 6.3e-5, so a correct sampler with a random seed would fail
    this about once in 16000 runs; the test fixes the seed
    (ALLOCPROF_TEST_SEED), so its outcome is deterministic."""
    stats = load(stats_path)
    exp = load(exp_path)
    R = float(rate)
    var_n = var_b = 0.0
    expected_samples = 0.0
    for s in exp["sites"]:
        size, count = s["size"], s["count"]
        p = -math.expm1(-(size + 1) / R)
        var_n += count * (1 - p) / p
        var_b += count * size * size * (1 - p) / p
        expected_samples += count * p
    truth = exp["totals"]
    ok = True
    total_bytes = truth["alloc_space"]
    print(f"rate {int(R)}: {total_bytes} bytes allocated, "
          f"~{expected_samples:.0f} samples expected, rough relative SE "
          f"1/sqrt(bytes/R) = {1 / math.sqrt(total_bytes / R):.2%}")
    for key, var in (("alloc_space", var_b), ("alloc_objects", var_n)):
        se = math.sqrt(var)
        est = stats.get(key)
        if not isinstance(est, (int, float)):
            print(f"{key}: missing from stats")
            ok = False
            continue
        dev = (est - truth[key]) / se
        verdict = "ok" if abs(dev) <= 4 else "OUT OF BOUND"
        print(f"{key}: estimate {est:.0f}, truth {truth[key]}, SE {se:.0f} "
              f"({se / truth[key]:.2%}), deviation {dev:+.2f} SE, "
              f"bound 4 SE: {verdict}")
        ok &= abs(dev) <= 4
    samples = stats.get("samples")
    if isinstance(samples, (int, float)):
        # The number of samples is a sum of independent Bernoullis.
        sd = math.sqrt(sum(s["count"] * (p := -math.expm1(-(s["size"] + 1) / R)) * (1 - p)
                           for s in exp["sites"]))
        dev = (samples - expected_samples) / sd
        print(f"samples: {samples}, expected {expected_samples:.0f} +- {sd:.0f}, "
              f"deviation {dev:+.2f} SD")
        ok &= abs(dev) <= 4
    return ok


def cmd_field(stats_path, key):
    v = load(stats_path).get(key)
    if isinstance(v, list):
        print("\n".join(str(x) for x in v))
    elif isinstance(v, bool):
        print("true" if v else "false")
    elif v is not None:
        print(v)


def png_pixels(path):
    """The (r, g, b) of every pixel of an 8-bit RGB or RGBA PNG, as
    Chromium writes its screenshots (no interlace)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("PNG not 8-bit RGB(A) non-interlaced")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    out = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        out.extend(tuple(line[x:x + 3]) for x in range(0, stride, bpp))
        prev = line
    return out


def cmd_pixels(png, *colours):
    px = png_pixels(png)
    for col in colours:
        want = [int(v) for v in col.split(",")]
        near = sum(1 for p in px if all(abs(p[k] - want[k]) <= 40 for k in range(3)))
        print("%.4f" % (near / len(px)))


def main(argv):
    cmd, rest = argv[1], argv[2:]
    if cmd == "args":
        cmd_args(*rest)
    elif cmd == "get":
        cmd_get(*rest)
    elif cmd == "field":
        cmd_field(*rest)
    elif cmd == "pixels":
        cmd_pixels(*rest)
    elif cmd == "totals":
        return 0 if cmd_totals(*rest) else 1
    elif cmd == "valgrind":
        return 0 if cmd_valgrind(*rest) else 1
    elif cmd == "sampled":
        return 0 if cmd_sampled(*rest) else 1
    else:
        sys.exit(f"e2e.py: unknown command {cmd}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
