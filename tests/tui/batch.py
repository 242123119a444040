#!/usr/bin/env python3
"""`allocprof tui --batch`: the screens after key sequences, against what the
other views compute for the same trace. The top table must carry the numbers
of `top --json` (and be the lines `top` prints), the list screen the lines of
`list`, the call pages the lines of `peek`, the timeline the chart of
`timeline` and the peak of `stats`, the advise screen the verdicts of
`advise --json`; the keys must move,
filter, resize and go back as documented; bad use gets one clear line.

usage: batch.py ALLOCPROF MKTRACE"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

AP, MKTRACE = sys.argv[1], sys.argv[2]
os.environ.update(LC_ALL="C", ALLOCPROF_NO_PROGRESS="1")
failures = []

SI_CYCLE = ["alloc_space", "alloc_objects", "inuse_space", "inuse_objects", "peak_space", "peak_objects",
            "temporary"]
UNITS = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def fail(what, detail=""):
    failures.append(what)
    print("FAIL " + what)
    if detail:
        print(detail)


def check(cond, what, detail=""):
    if not cond:
        fail(what, detail)
    return cond


_views = {}


def run(*args, ok=(0,)):
    # The other views' outputs are asked for many times: run each once.
    if args[0] in ("top", "list", "advise") and args in _views:
        return _views[args]
    p = subprocess.run([AP] + list(args), capture_output=True, text=True)
    if p.returncode not in ok:
        fail("allocprof %s: exit %d" % (" ".join(args), p.returncode), p.stderr)
    if args[0] in ("top", "list", "advise"):
        _views[args] = p
    return p


def screen(trace, keys="", size="100x30", *opts, final=None):
    # the model's advice (--no-measure), which is the same run to run
    args = ["tui", "--batch", "--no-measure", "--size", size, "--keys", keys] + list(opts) + [trace]
    p = run(*args)
    lines = p.stdout.split("\n")
    assert lines[-1] == "", "no newline at the end"
    lines = lines[:-1]
    cols, rows = map(int, (final or size).split("x"))
    check(len(lines) == rows, "tui %s: %d lines, not %d" % (keys, len(lines), rows), p.stdout)
    check(all(len(l) <= cols for l in lines), "tui %s: a line wider than %d" % (keys, cols),
          p.stdout)
    return lines


def top_json(trace, *opts):
    return json.loads(run("top", "--json", *opts, trace).stdout)


def top_text_rows(trace, *opts):
    # the TUI shows every node: top without its default nodefraction
    out = run("top", "--nodefraction=0", *opts, trace).stdout.split("\n")
    i = next(k for k, l in enumerate(out) if l.startswith("      flat  flat%"))
    return [l for l in out[i + 1:] if l]


def screen_rows(trace, *opts):
    """top's rows as the screen shows them: each value in its own unit."""
    return [own_units(r) for r in top_text_rows(trace, *opts)]


def parse_value(text, unit):
    """A value as the screen shows it: bytes scaled as pprof, or a count."""
    if unit == "count":
        return int(text), 0.5
    if text == "0":
        return 0, 0.5
    m = re.fullmatch(r"(-?[0-9.]+)(B|kB|MB|GB|TB)", text)
    assert m, "not a byte value: %r" % text
    scale = UNITS[m.group(2)]
    return float(m.group(1)) * scale, 0.005 * scale + 0.5


def fmt_bytes(v):
    """A byte value in its own unit, as the screens show it (each value
    scaled on its own, not in the table's common unit as `top` prints)."""
    v = round(v)
    u = 0
    names = ["B", "kB", "MB", "GB", "TB", "PB"]
    while u + 1 < len(names) and abs(v) >= 1 << (10 * (u + 1)):
        u += 1
    num = "%.2f" % (v / (1 << (10 * u)))
    if num.endswith(".00"):
        num = num[:-3]
    return "0" if num in ("0", "-0") else num + names[u]


VALUE = re.compile(r"( *)(-?[0-9.]+)(B|kB|MB|GB|TB)(?= )")


def own_units(line):
    """A line of `top` or `peek` (pprof's text, one unit for the whole
    table) with each byte value before the name in its own unit, right-
    aligned in the same columns: what the screen shows for it."""
    bar = line.find("|")
    m = ROW.match(line)
    end = bar if bar >= 0 else (m.start(6) if m else len(line))
    def sub(v):
        text = fmt_bytes(float(v.group(2)) * UNITS[v.group(3)])
        return text.rjust(len(v.group(0)))
    return VALUE.sub(sub, line[:end]) + line[end:]


def exact_units(line, jr):
    """A row of `top` with its flat and cum in their own units, from the
    row of top --json (`jr`), in the same columns."""
    m = ROW.match(line)
    return "%10s %s%% %s%% %10s %s%%  %s" % (fmt_bytes(jr["flat"]), m.group(2).rjust(5), m.group(3).rjust(5),
                                          fmt_bytes(jr["cum"]), m.group(5).rjust(5), m.group(6))


def table_rows(lines):
    """The rows of the top table on a screen (between the header and the
    status line)."""
    i = next(k for k, l in enumerate(lines) if l.startswith("      flat  flat%"))
    return [l for l in lines[i + 1:-1] if l and not l.startswith("  (")]


ROW = re.compile(r"^ *(\S+) +(\S+)% +(\S+)% +(\S+) +(\S+)%  (.*)$")


def compare_top(trace, keys, top_opts, what, size="200x40"):
    """The whole table (the screen must be tall enough) against top --json
    and top's text, for the same options."""
    lines = screen(trace, keys, size)
    rows = table_rows(lines)
    j = top_json(trace, *top_opts)
    check(j["nodes"] == len(rows), "%s: %d rows on screen, top has %d" % (what, len(rows), j["nodes"]),
          "\n".join(lines))
    check(("Type: %s " % j["sample_index"]) in lines[0], "%s: header without the index %s" %
          (what, j["sample_index"]), lines[0])
    total, tol = parse_value(re.search(r"Total: (\S+)", lines[0]).group(1), j["unit"])
    check(abs(total - j["total"]) <= tol, "%s: total %s, top --json %d" % (what, total, j["total"]))
    sum_pct = 0.0
    for k, (line, jr) in enumerate(zip(rows, j["rows"])):
        m = ROW.match(line)
        if not check(m, "%s: row %d unreadable: %r" % (what, k, line)):
            continue
        flat, ft = parse_value(m.group(1), j["unit"])
        cum, ct = parse_value(m.group(4), j["unit"])
        sum_pct += jr["flat_pct"]
        check(m.group(6) == jr["name"], "%s: row %d is %r, top says %r" % (what, k, m.group(6), jr["name"]))
        check(abs(flat - jr["flat"]) <= ft and abs(cum - jr["cum"]) <= ct,
              "%s: row %d %s: flat %s cum %s, top --json %d %d" %
              (what, k, jr["name"], m.group(1), m.group(4), jr["flat"], jr["cum"]))
        # each byte value in its own unit (20kB, not 20480B under 25.68kB)
        if j["unit"] == "bytes":
            check((m.group(1), m.group(4)) == (fmt_bytes(jr["flat"]), fmt_bytes(jr["cum"])),
                  "%s: row %d %s: flat %s cum %s on screen, in their own units %s %s" %
                  (what, k, jr["name"], m.group(1), m.group(4), fmt_bytes(jr["flat"]), fmt_bytes(jr["cum"])))
        for got, want in ((m.group(2), jr["flat_pct"]), (m.group(3), sum_pct), (m.group(5), jr["cum_pct"])):
            check(abs(float(got) - want) <= max(0.006, want * 0.006),
                  "%s: row %d %s: %s%% on screen, %.4f%% from top --json" % (what, k, jr["name"], got, want))
    if j["unit"] == "bytes":
        shown = re.search(r"^Showing nodes accounting for (\S+), ", lines[2])
        check(re.search(r"Total: (\S+)", lines[0]).group(1) == fmt_bytes(j["total"]) and shown and
              parse_value(shown.group(1), "bytes")[0] <= j["total"] + 0.5 and
              shown.group(1) == fmt_bytes(parse_value(shown.group(1), "bytes")[0]),
              "%s: total and Showing line in their own units" % what, "\n".join(lines[:3]))
    top_rows = top_text_rows(trace, *top_opts)
    if j["unit"] == "bytes":
        # top's columns, each value in its own unit (from top --json's
        # exact values: top's 0.88kB is 896B, or 901B)
        top_rows = [exact_units(r, jr) for r, jr in zip(top_rows, j["rows"])]
    check(rows == top_rows, "%s: rows differ from top's" % what,
          "\n".join(rows) + "\n--- top:\n" + "\n".join(top_rows))
    return lines


def position(lines, row=2):
    m = re.search(r"(\d+)/(\d+)$", lines[row])
    assert m, "no position on %r" % lines[row]
    return int(m.group(1)), int(m.group(2))


def list_body(trace, regex, *opts):
    """`list`'s lines after its Total line, tabs expanded in the source as
    the screen shows them."""
    out = run("list", *opts, regex, trace).stdout.split("\n")[1:]
    body = []
    for l in out:
        m = re.match(r"^( *\S+ +\S+ +\d+:)(.*)$", l)
        if m and not l.startswith("ROUTINE"):
            l = m.group(1) + m.group(2).expandtabs(8)
        body.append(l.rstrip())
    while body and not body[-1]:
        body.pop()
    return body


def page_lines(lines):
    return [l for l in lines[1:-1]]


def peek_block(trace, name, *opts):
    """The lines `peek '^NAME$'` prints for NAME: its callers, its own
    line, its callees (between the rules)."""
    out = run("peek", *opts, "^%s$" % re.escape(name), trace).stdout.split("\n")
    rules = [k for k, l in enumerate(out) if l.startswith("-------")]
    return [own_units(l.rstrip()) for l in out[rules[-2] + 1:rules[-1]]]


def peek_screen(lines):
    """A call page: (callers, node line, callees) as the lines peek prints,
    after checking its headings."""
    body = page_lines(lines)[1:]
    while body and not body[-1]:
        body.pop()
    if not check(len(body) >= 4 and body[0] == "callers" and "callees" in body,
                 "call page without callers/callees headings", "\n".join(lines)):
        return [], "", []
    k = body.index("callees")
    callers, callees = body[1:k - 1], body[k + 1:]
    return ([] if callers == ["  (none)"] else callers), body[k - 1], ([] if callees == ["  (none)"] else callees)


def stats_peak(trace):
    return json.loads(run("stats", "--json", trace).stdout)["peak_inuse_space"]


def timeline_text(trace, buckets):
    """`timeline --buckets N`'s chart, without its File line."""
    return [l.rstrip() for l in run("timeline", "--buckets", str(buckets), trace).stdout.rstrip("\n").split("\n")[1:]]


def main():
    tmp = tempfile.mkdtemp()
    exact = os.path.join(tmp, "fx.trace")
    sampled = os.path.join(tmp, "fx-sampled.trace")
    subprocess.run([MKTRACE, exact], check=True)
    subprocess.run([MKTRACE, sampled, "4096"], check=True)

    # -h
    p = run("tui", "-h")
    check(p.stdout.startswith("usage: allocprof tui [OPTIONS] TRACE") and "--batch" in p.stdout
          and not p.stderr, "tui -h", p.stdout + p.stderr)

    # The top table for every sample index (s cycles them), granularity (g)
    # and sort (c), on an exact and a sampled trace.
    for trace, name in ((exact, "exact"), (sampled, "sampled")):
        # a sampled trace has no temporaries: s skips them
        cycle = SI_CYCLE if trace == exact else [si for si in SI_CYCLE if si != "temporary"]
        for n, si in enumerate(cycle):
            compare_top(trace, "s" * n, ["--" + si], "%s %s" % (name, si))
        compare_top(trace, "sgc", ["--alloc_objects", "--lines", "--cum"], name + " objects lines cum")
    compare_top(exact, "s" * len(SI_CYCLE), [], "s cycles back to alloc_space")
    compare_top(exact, "g", ["--lines"], "lines")
    compare_top(exact, "gg", ["--files"], "files")
    compare_top(exact, "ggg", [], "g cycles back to functions")
    compare_top(exact, "c", ["--cum"], "cum")
    compare_top(exact, "cc", [], "c toggles back")

    # focus and ignore, typed at the prompt
    compare_top(exact, "/pars<enter>", ["--focus", "pars"], "focus")
    compare_top(exact, "\\make_tok<enter>", ["--ignore", "make_tok"], "ignore")
    compare_top(exact, "/pars<enter>\\make<enter>", ["--focus", "pars", "--ignore", "make"], "focus+ignore")
    compare_top(exact, "/pars<enter>/<enter>", [], "an empty focus clears it")
    compare_top(exact, "/parx<bs>s<enter>", ["--focus", "pars"], "backspace in the prompt")
    compare_top(exact, "/walk<esc>", [], "esc cancels the prompt")
    l = screen(exact, "/walk")
    check(l[-1] == "focus regex (empty clears): walk", "prompt shown while typing", l[-1])
    l = compare_top(exact, "/pars<enter>/(<enter>", ["--focus", "pars"], "a bad regex keeps the focus")
    check(l[-1].startswith("focus: bad regex '(': "), "bad regex on the status line", l[-1])
    check("Focus: pars " in l[1], "focus shown in the header", l[1])
    l = screen(exact, "/zzz<enter>")
    check(l[4] == "  (no stack matches the focus and ignore regexes)", "empty focus result", "\n".join(l))
    lines = screen(exact, "", "100x30", "--alloc_objects", "--focus", "walk")
    j = top_json(exact, "--alloc_objects", "--focus", "walk")
    check([ROW.match(r).group(6) for r in table_rows(lines)] == [r["name"] for r in j["rows"]],
          "--alloc_objects --focus walk at the start", "\n".join(lines))

    # Moving: the position counter and what Enter opens follow the cursor.
    j = top_json(exact)
    n = j["nodes"]
    check(position(screen(exact)) == (1, n), "starts on row 1")
    check(position(screen(exact, "jj<down>")) == (4, n), "j j down")
    check(position(screen(exact, "jjjk<up>")) == (2, n), "k up")
    check(position(screen(exact, "<end>")) == (n, n), "end")
    check(position(screen(exact, "<end>j")) == (n, n), "down at the end stays")
    check(position(screen(exact, "<end><home>")) == (1, n), "home")
    check(position(screen(exact, "k")) == (1, n), "up at the top stays")
    # 80x9: four table rows on screen; PgDn moves a page; the rows shown
    # after scrolling are top's rows at that place, sum% counted from row 1.
    small = screen(exact, "<pgdn>", "80x9")
    check(position(small) == (5, n), "pgdn moves 4 rows in 80x9", "\n".join(small))
    top_rows = screen_rows(exact)
    check(table_rows(small) == [r[:80] for r in top_rows[1:5]], "scrolled rows in 80x9",
          "\n".join(small) + "\n---\n" + "\n".join(top_rows))
    small = screen(exact, "<end>", "80x9")
    check(table_rows(small) == [r[:80] for r in top_rows[n - 4:]], "end shows the last rows",
          "\n".join(small))
    check(position(screen(exact, "<end><pgup>", "80x9")) == (n - 4, n), "pgup")

    # Right scrolls the names sideways by 8 columns, the numbers stay; left
    # comes back.
    lines = screen(exact, "<right>", "200x40")
    check([(r[:44] + r[52:]).rstrip() for r in top_rows] == table_rows(lines), "right on top",
          "\n".join(lines))
    check(screen(exact, "<right><left>") == screen(exact), "left after right")

    # L: the list of the selected function, the lines `list` prints.
    for k, row in enumerate(j["rows"]):
        lines = screen(exact, "j" * k + "L", "200x60")
        body = list_body(exact, "^%s$" % re.escape(row["name"]))
        check(lines[0].startswith("list: %s " % row["name"]), "list title for %s" % row["name"], lines[0])
        got = page_lines(lines)[:len(body)]
        check(got == body, "list screen of %s" % row["name"], "\n".join(got) + "\n--- list:\n" + "\n".join(body))
        check(lines[-1].startswith("q/Esc back"), "list status line", lines[-1])
    # The same on the objects index: the list follows the sample index.
    jo = top_json(exact, "--alloc_objects")
    names_o = [r["name"] for r in jo["rows"]]
    lines = screen(exact, "s<home>" + "j" * names_o.index("parse") + "L", "200x60")
    body = list_body(exact, "^parse$", "--alloc_objects")
    check(page_lines(lines)[:len(body)] == body, "list of parse by alloc_objects", "\n".join(lines))
    # s, g and c keep the cursor on the same node where it still exists.
    names = [r["name"] for r in j["rows"]]
    k = names.index("wrap_alloc")
    check(position(screen(exact, "j" * k + "s")) == (names_o.index("wrap_alloc") + 1, n),
          "s keeps the cursor on wrap_alloc")
    names_c = [r["name"] for r in top_json(exact, "--cum")["rows"]]
    check(position(screen(exact, "j" * k + "c")) == (names_c.index("wrap_alloc") + 1, n),
          "c keeps the cursor on wrap_alloc")
    # Esc and q go back to the table where it was.
    check(position(screen(exact, "jjL<esc>")) == (3, n), "esc back from list")
    check(position(screen(exact, "jjLq")) == (3, n), "q back from list")
    # A list longer than the screen scrolls.
    parse_row = [r["name"] for r in j["rows"]].index("parse")
    lines = screen(exact, "j" * parse_row + "L", "80x9")
    body = list_body(exact, "^parse$")
    check(page_lines(lines) == [b[:80] for b in body[:7]], "list in 80x9", "\n".join(lines))
    lines = screen(exact, "j" * parse_row + "Ljj", "80x9")
    check(page_lines(lines) == [b[:80] for b in body[2:9]], "list scrolled 2", "\n".join(lines))
    lines = screen(exact, "j" * parse_row + "L<end>", "80x9")
    check(page_lines(lines) == [b[:80] for b in body[-7:]], "list end", "\n".join(lines))
    # Right scrolls the source sideways, the numbers stay.
    lines = screen(exact, "j" * parse_row + "L<right>", "200x60")
    src = [l for l in page_lines(lines) if re.match(r"^ +\S+ +\S+ +83:", l)]
    check(len(src) == 1 and src[0].endswith(":uint32_t st = grab(); /* L:parse_self */"),
          "right scrolls the source 8 columns", "\n".join(lines))
    # With lines granularity, L lists the row's function.
    jl = top_json(exact, "--lines")
    k = [r["name"] for r in jl["rows"]].index(next(r["name"] for r in jl["rows"] if r["name"].startswith("make_token")))
    lines = screen(exact, "g" + "j" * k + "L", "200x60")
    body = list_body(exact, "^make_token$")
    check(page_lines(lines)[:len(body)] == body, "lines granularity: list of make_token", "\n".join(lines))
    # With files granularity, L lists every function of the file.
    lines = screen(exact, "ggL", "200x200")
    body = list_body(exact, ".*")
    check(page_lines(lines)[:len(body)] == body, "files granularity: all functions of fixture.c",
          "\n".join(lines))

    # The advisor: the same verdicts, in the same order, as advise --json.
    for trace, name in ((exact, "exact"), (sampled, "sampled")):
        adv = json.loads(run("advise", "-n", "0", "--no-measure", "--json", trace).stdout)
        sites = adv["sites"]
        lines = screen(trace, "a", "200x60")
        check(lines[0].startswith("advise: fixture "), "advise title", lines[0])
        rows = [l for l in lines[3:3 + len(sites)] if l]
        check(len(rows) == len(sites), "%s advise: %d rows, advise has %d" % (name, len(rows), len(sites)),
              "\n".join(lines))
        for k, (line, s) in enumerate(zip(rows, sites)):
            check(line.startswith("%3d %-22.22s " % (k + 1, s["verdict_text"])) and line.endswith("  " + s["site"]),
                  "%s advise row %d: want %s / %s" % (name, k + 1, s["verdict_text"], s["site"]), line)
            hit = float(re.search(r" ([0-9.]+)% ", line).group(1))
            check(abs(hit - 100 * s["hit_rate"]) <= 0.05, "%s advise row %d hit rate" % (name, k + 1), line)
            # the time saved, as advise's JSON has it (measured or the model's)
            m = re.match(r"\s*\d+ .{22} +(-?[0-9.]+)(ns|us|ms|s) ", line)
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
            saved = float(m.group(1)) * scale[m.group(2)] if m else None
            want = s["time_saved_ns"]
            check(saved is not None and abs(saved - want) <= 0.01 * abs(want) + 1,
                  "%s advise row %d time saved: want %d ns" % (name, k + 1, want), line)
        # Under the table, the selected site's verdict and reasons.
        for k, s in enumerate(sites[:3]):
            lines = screen(trace, "a" + "j" * k, "200x60")
            check(lines[-5] == "verdict: " + s["verdict_text"] and
                  " ".join(" ".join(lines[-4:-1]).split()) == " ".join(s["reasons"].split()),
                  "%s advise pane of site %d" % (name, k + 1), "\n".join(lines[-6:]))
        # Enter on a site: its verdict and reasons in full (every site of
        # the exact trace, the first three of the sampled one).
        for k, s in enumerate(sites if trace == exact else sites[:3]):
            lines = screen(trace, "a" + "j" * k + "<enter>", "100x40")
            text = "\n".join(lines)
            check(lines[1] == "%d. %s" % (k + 1, s["site"]), "%s site %d title" % (name, k + 1), text)
            check("   verdict: %s" % s["verdict_text"] in lines, "%s site %d verdict" % (name, k + 1), text)
            i = lines.index("   verdict: %s" % s["verdict_text"])
            reasons = []
            for l in lines[i + 1:]:
                if not l:
                    break
                reasons.append(l.strip())
            check(" ".join(reasons) == " ".join(s["reasons"].split()), "%s site %d reasons" % (name, k + 1),
                  text + "\n--- advise: " + s["reasons"])
            # The same renderer as `advise`: its gets line, as advise prints it.
            if s["gets"]:
                gets = [l for l in lines if l.startswith("   gets %d: hits %d, " % (s["gets"], s["hits"]))]
                check(len(gets) == 1 and (" misses %d, hit rate %.1f%%" % (s["misses"], 100 * s["hit_rate"]))
                      in gets[0], "%s site %d gets/hits/misses" % (name, k + 1), text)
        back = screen(trace, "ajj<enter>q", "200x60")
        check(position(back, 1) == (3, len(sites)), "q from a site back to the sites", "\n".join(back))
        check(position(screen(trace, "ajj<enter>qq")) == (1, top_json(trace)["nodes"]), "q q back to top")

    # A run of two processes (two TRACEs): the advisor advises one, as
    # `advise` does each (a pool does not cross processes), not the two
    # merged (which doubled every count: one pool, one heap for both).
    exact2 = os.path.join(tmp, "fx2.trace")
    shutil.copy(exact, exact2)
    pid = json.loads(run("stats", "--json", exact).stdout)["pid"]
    adv = json.loads(run("advise", "-n", "0", "--no-measure", "--json", exact).stdout)
    lines = screen(exact, "a", "200x60", exact2)
    check(lines[0].startswith("advise: fixture (pid %d, 1 of 2 processes) " % pid),
          "two processes: advise title names the process", lines[0])
    rows = [l for l in lines[3:] if l][:len(adv["sites"])]
    check(len(rows) == len(adv["sites"]) and
          all(r.startswith("%3d %-22.22s " % (k + 1, s["verdict_text"])) and
              r.endswith(" %s  %s" % (fmt_bytes(s["alloc_space"]), s["site"]))
              for k, (r, s) in enumerate(zip(rows, adv["sites"]))),
          "two processes: advise rows are one process's, as advise of its trace", "\n".join(lines))
    check("a run of 2 processes: advised is pid %d" % pid in lines[-1],
          "two processes: the status line says which is advised", lines[-1])


    # Enter on a top row: the node between its callers and callees, the
    # lines `peek` prints for it, in the current sample index.
    for trace, name in ((exact, "exact"), (sampled, "sampled")):
        for opts, keys in (([], ""), (["--alloc_objects"], "s<home>")):
            jr = top_json(trace, *opts)["rows"]
            for k, row in enumerate(jr):
                lines = screen(trace, keys + "j" * k + "<enter>", "200x60")
                check(lines[0].startswith("peek: %s " % row["name"]) and
                      (" Type: %s " % (opts[0][2:] if opts else "alloc_space")) in lines[0],
                      "%s %s: call page title of %s" % (name, opts, row["name"]), lines[0])
                callers, node, callees = peek_screen(lines)
                want = peek_block(trace, row["name"], *opts)
                check(callers + [node] + callees == want, "%s %s: call page of %s" % (name, opts, row["name"]),
                      "\n".join(lines) + "\n--- peek:\n" + "\n".join(want))
                check(lines[-1].startswith("Enter: go to caller/callee"), "call page status line", lines[-1])
    # s on a call page recomputes it in the next sample index.
    names = [r["name"] for r in j["rows"]]
    k = names.index("parse")
    callers, node, callees = peek_screen(screen(exact, "j" * k + "<enter>s", "200x60"))
    check(callers + [node] + callees == peek_block(exact, "parse", "--alloc_objects"),
          "s on the call page of parse", "\n".join([node] + callees))
    # Enter on a callee goes to it, Enter on a caller too; Backspace, Esc
    # and q come back through the history, to the same line.
    fb = names.index("fx_build")
    first_callee = peek_block(exact, "fx_build")[1].split("|   ")[1]
    start = "j" * fb + "<enter>"
    lines = screen(exact, start + "j<enter>", "200x60")
    check(lines[0].startswith("peek: %s " % first_callee), "Enter on the first callee of fx_build goes to "
          + first_callee, lines[0])
    callers, node, callees = peek_screen(lines)
    check(callers + [node] + callees == peek_block(exact, first_callee), "the callee's call page",
          "\n".join(lines))
    for back in ("<bs>", "<esc>", "q"):
        check(screen(exact, start + "j<enter>" + back, "200x60") == screen(exact, start + "j", "200x60"),
              back + " from the callee back to fx_build's page")
    # two steps in and out: fx_build -> its second callee -> its caller (fx_build)
    second = peek_block(exact, "fx_build")[2].split("|   ")[1]
    lines = screen(exact, start + "jj<enter>k<enter>", "200x60")
    check(lines[0].startswith("peek: fx_build "), "Enter on a caller goes to it", lines[0])
    check(screen(exact, start + "jj<enter>k<enter><bs>", "200x60") == screen(exact, start + "jj<enter>k", "200x60")
          and screen(exact, start + "jj<enter>k", "200x60")[0].startswith("peek: %s " % second),
          "back one step", "")
    check(screen(exact, start + "jj<enter>k<enter><bs><bs>", "200x60") == screen(exact, start + "jj", "200x60"),
          "back two steps")
    check(position(screen(exact, start + "jj<enter>k<enter><bs><bs><bs>")) == (fb + 1, n),
          "back three steps: the table, on fx_build")
    # The cursor skips the headings: k from fx_build's own line (no
    # callers) stays, so Enter lists fx_build.
    lines = screen(exact, start + "k<enter>", "200x60")
    check(lines[0].startswith("list: fx_build "), "Enter on the node itself lists it", lines[0])
    check(screen(exact, "j" * fb + "L", "200x60") == lines, "L on top lists too")
    # A page longer than the screen scrolls with the cursor (100x8: five
    # lines under the column header).
    block = peek_block(exact, "fx_build")
    lines = screen(exact, start + "jjjjj", "100x8")
    check(page_lines(lines)[1:] == block[1:6], "call page scrolled to the fifth callee",
          "\n".join(lines) + "\n--- peek:\n" + "\n".join(block))
    check(screen(exact, start + "jjjjj<enter>", "100x8")[0].startswith("peek: %s " % block[5].split("|   ")[1]),
          "Enter on the fifth callee after scrolling")
    lines = screen(exact, start + "jjjjj<home>", "100x8")
    check(page_lines(lines)[1:4] == ["callers", "  (none)", block[0]], "home: back to the page's head",
          "\n".join(lines))

    # T: the timeline, its peak stats' peak_inuse_space, its chart
    # `timeline`'s for the window's width (a column per bucket, 23 columns
    # for the axes) and what the height leaves (title, status, five lines
    # and the sites': 16 rows, as `timeline`, at 23 rows plus the sites'),
    # and after a resize.
    for trace, name in ((exact, "exact"), (sampled, "sampled")):
        peak = stats_peak(trace)
        nsites = len(timeline_text(trace, 77)) - 16 - 5
        h = 23 + nsites
        for keys, size, final, buckets in (("T", "100x%d" % h, None, 77),
                                           ("T<resize:80x40>", "100x%d" % h, "80x40", 57),
                                           ("<enter>T", "100x%d" % h, None, 77)):
            lines = screen(trace, keys, size, final=final)
            m = re.match(r"^timeline: fixture   Peak: \S+ \((\d+) B\) at (\S+)s ", lines[0])
            check(m and int(m.group(1)) == peak, "%s %s: timeline peak, stats says %d" % (name, keys, peak),
                  lines[0])
            # the peak's time is the event's, as timeline's JSON and
            # chart say it, whatever the width (not its column's end)
            tj = json.loads(run("timeline", "--format=json", trace).stdout)
            check(m and m.group(2) == "%.3g" % tj["peak_time_s"] and
                  all(" at %.3gs, '@')" % tj["peak_time_s"] in timeline_text(trace, nb)[0] or
                      " at %.3gs;" % tj["peak_time_s"] in timeline_text(trace, nb)[0] for nb in (buckets, 13)),
                  "%s %s: the peak's time, timeline --format=json's %.3g" % (name, keys, tj["peak_time_s"]),
                  lines[0] + "\n" + timeline_text(trace, buckets)[0] + "\n" + timeline_text(trace, 13)[0])
            check(m and "'@'" in lines[1] and sum("@" in l for l in lines[3:]) >= 1,
                  "%s %s: the peak marked" % (name, keys), "\n".join(lines))
            # the screen cuts a line at its width (the header of a sampled
            # trace, with the peak's error, is longer)
            want = [l[:int((final or size).split("x")[0])] for l in timeline_text(trace, buckets)]
            got = page_lines(lines)
            while got and not got[-1]:
                got.pop()
            if final:
                rows = 40 - 7 - nsites
                check(len(got) == rows + 5 + nsites and got[:2] == want[:2] and got[rows + 2:] == want[18:]
                      and got[2].startswith(want[2][:11]),
                      "%s %s: resized timeline, %d rows" % (name, keys, rows),
                      "\n".join(got) + "\n---\n" + "\n".join(want))
            else:
                check(got == want, "%s %s: timeline screen is timeline --buckets %d" % (name, keys, buckets),
                      "\n".join(got) + "\n--- timeline:\n" + "\n".join(want))
    check(position(screen(exact, "jjTq")) == (3, n), "q from the timeline back to the table")
    check(screen(exact, "<enter>T<esc>") == screen(exact, "<enter>"), "esc from the timeline back to the call page")
    check(any(l.startswith("  T ") for l in screen(exact, "?", "100x60")), "T in the help")

    # Help, and back.
    lines = screen(exact, "?")
    check(lines[0].startswith("allocprof tui: help") and any("focus" in l for l in lines), "help", "\n".join(lines))
    check(screen(exact, "??") == screen(exact), "? closes help")
    check(screen(exact, "?<esc>") == screen(exact), "esc closes help")

    # Resizing: the screen takes the new size, the cursor stays visible.
    lines = screen(exact, "<end><resize:80x6>", "100x30", final="80x6")
    check(len(lines) == 6 and all(len(l) <= 80 for l in lines), "resize to 80x6", "\n".join(lines))
    check(table_rows(lines) == [top_rows[-1][:80]], "resize keeps the cursor row on screen", "\n".join(lines))
    lines = screen(exact, "<resize:30x5>", "100x30", final="30x5")
    check(lines[0] == "too small (30x5); q quits" and len(lines) == 5, "too small", "\n".join(lines))
    check(screen(exact, "<resize:30x5><resize:100x30>") == screen(exact), "resize back")

    # q quits: later keys are not applied.
    check(screen(exact, "qj") == screen(exact), "q quits")

    # Bad use: one line, the right status.
    def expect(status, pattern, *args, stdin=None):
        p = subprocess.run([AP] + list(args), capture_output=True, text=True, stdin=stdin)
        err = p.stderr.splitlines()
        check(p.returncode == status and len(err) == 1 and re.search(pattern, err[0]),
              "allocprof %s: want exit %d and /%s/, got %d %r" % (" ".join(args), status, pattern, p.returncode, p.stderr))

    expect(1, r"^allocprof: tui: standard output is not a terminal \(use top/list/advise, or --batch\)$",
           "tui", exact)
    expect(2, r"^allocprof: tui: --keys goes with --batch", "tui", "--keys", "j", exact)
    expect(2, r"^allocprof: tui: --keys: unknown key '<foo>'", "tui", "--batch", "--keys", "j<foo>", exact)
    expect(2, r"^allocprof: tui: --keys: unknown key '<down'", "tui", "--batch", "--keys", "<down", exact)
    expect(2, r"^allocprof: tui: --keys: '<resize:10x3>': a size is COLSxROWS, at least 20x5",
           "tui", "--batch", "--keys", "j<resize:10x3>", exact)
    expect(2, r"^allocprof: tui: --size wants COLSxROWS", "tui", "--batch", "--size", "100", exact)
    expect(2, r"^allocprof: tui: --json is for top, list and advise", "tui", "--json", exact)
    expect(2, r"^allocprof: tui: unknown option '--bogus'", "tui", "--bogus", exact)
    expect(2, r"^allocprof: tui: no trace given", "tui", "--batch")
    expect(2, r"^allocprof: tui: --focus: bad regex '\(': ", "tui", "--batch", "--focus", "(", exact)
    expect(1, r"^allocprof: .*missing.trace: ", "tui", "--batch", os.path.join(tmp, "missing.trace"))
    # A binary rebuilt since recording: the symbolizer's warning on stderr
    # and, since a terminal's screen would hide stderr, on the status line.
    rebuilt = os.path.join(tmp, "rebuilt.trace")
    subprocess.run([MKTRACE, rebuilt, "1", "rebuilt"], check=True)
    p = run("tui", "--batch", rebuilt)
    last = p.stdout.splitlines()[-1]
    check(re.match(r"^allocprof: warning: .*build-id differs", p.stderr) and len(p.stderr.splitlines()) == 1
          and last.startswith("warning: ") and last[9:] in p.stderr, "rebuilt binary warning", p.stdout + p.stderr)
    l = screen(exact, "<lt>")
    check(l == screen(exact), "<lt> is a key that does nothing on top")
    # On a narrow screen the position counter covers the end of its row's
    # text, a blank before it (not "...25.68kB tot1/9").
    l = screen(exact, "", "40x10")
    check(re.search(r"[^ ] 1/\d+$", l[2]), "the position counter set apart on a narrow screen", l[2])
    # A truncated trace: its warning on stderr is hidden by the screen, so
    # the status line says it too (as top's stderr and stats say it).
    cut = os.path.join(tmp, "cut.trace")
    data = open(exact, "rb").read()
    for n in range(len(data) - 1, len(data) // 2, -1):
        with open(cut, "wb") as f:
            f.write(data[:n])
        st = run("stats", cut, ok=(0, 1))
        if st.returncode == 0 and "truncated          yes" in st.stdout:
            break
    p = run("tui", "--batch", cut)
    last = p.stdout.splitlines()[-1]
    check("truncated trace" in p.stderr and last.startswith("warning: truncated trace (")
          and last.endswith("): showing its complete part"), "truncated trace on the status line",
          p.stdout + p.stderr)

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
