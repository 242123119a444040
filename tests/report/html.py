#!/usr/bin/env python3
"""`allocprof html`: the page in headless Chromium (the DevTools protocol
over a pipe, tests/report/cdp.py), its numbers against the CLI's.

usage: html.py ALLOCPROF MKTRACE
       html.py ALLOCPROF --record PEAK

The first form (every build) takes the fixture traces of tests/report,
exact and sampled, and checks the page against the CLI on them: for every
sample index and granularity the table's rows are `top --json`'s (names,
flat and cum), sorting by a column sorts; the flame graph's boxes are
`flamegraph --json`'s nodes, a click on a box zooms on it, Reset zoom goes
back; the callers and callees view of a function holds its cum; search
with (?i) matches what `top --focus` keeps; hovering the timeline shows
`timeline --format=json`'s values of the bucket under the pointer;
dragging across the whole run makes the table and the flame graph the
whole run's again; the advice section is `advise --no-measure --json`'s
sites and verdicts; the diff is `diff --json`'s. No console errors, no
exceptions. Then the usage errors, -h, and the output file's name.

The second form records testdata/peak with --all (64 MiB made and freed
by build(), then 488 blocks of 1000 bytes kept by leak()), makes its page
with the timeline by bytes allocated and freed (--time-unit=B: its events
share a few clock ticks) and picks stretches of it: what is live at the
end of the peak's stretch is build()'s 1 MiB blocks, at the end of the
last one leak()'s 488,000 bytes; after the peak, leak()'s 488 calls are
allocated, and before it the rest of the run's; the table and the flame
graph follow each pick.

Screenshots are left in $HTML_SHOTS when set (else in a temporary
directory that goes away). Without chromium: SKIP (exit 77).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from truncate import truncated_copy  # noqa: E402

INDEXES = ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "peak_objects",
           "peak_space", "temporary"]
GRANS = ["functions", "lines", "files"]
failures = []
env = dict(os.environ, LC_ALL="C", ALLOCPROF_NO_PROGRESS="1")


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(ap, *args, want=0, cwd=None):
    p = subprocess.run([ap, *args], capture_output=True, env=env, cwd=cwd)
    if p.returncode != want:
        sys.exit("FAIL allocprof %s: exit %d, expected %d\n%s" %
                 (" ".join(args), p.returncode, want, p.stderr.decode(errors="replace")))
    return p


def cli_json(ap, *args):
    return json.loads(run(ap, *args).stdout)


def page_of(ap, tmp, name, *args):
    out = os.path.join(tmp, name)
    p = run(ap, "html", "-o", out, *args)
    err = p.stderr.decode()
    check(re.search(r"^allocprof: wrote file://%s \(\d+ bytes\)$" % re.escape(os.path.realpath(out)),
                    err, re.M), "html: no 'wrote file://' line on stderr: %r" % err)
    return out


class Page:
    """The page loaded in the browser, with what a test reads of it."""

    def __init__(self, browser, path, shots, tag):
        self.b = browser
        self.shots = shots
        self.tag = tag
        self.b.events.clear()
        self.b.navigate("file://" + path)
        check(self.b.eval("document.body.getAttribute('data-ready')") == "1",
              "%s: the page's script did not finish" % tag)

    def js(self, expr):
        return self.b.eval(expr)

    def set_select(self, id_, value):
        self.js("(() => { const s = document.getElementById(%s); s.value = %s; "
                "s.dispatchEvent(new Event('change')); })()" % (json.dumps(id_), json.dumps(str(value))))

    def set_index(self, name):
        self.set_select("si", INDEXES.index(name))

    def table(self):
        return self.js("""Array.from(document.querySelectorAll('#top-table tbody tr')).map(tr =>
            [tr.getAttribute('data-name'), +tr.querySelector('td.flat').getAttribute('data-v'),
             +tr.querySelector('td.cum').getAttribute('data-v')])""")

    def boxes(self, svg="fg-svg"):
        return self.js("""Array.from(document.querySelectorAll('#%s g.node')).map(g => {
            const r = g.querySelector('rect').getBoundingClientRect();
            return [g.getAttribute('data-name'), +g.getAttribute('data-v'), +g.getAttribute('data-d'),
                    r.left + window.scrollX, r.top + window.scrollY, r.width, r.height,
                    g.classList.contains('match')]; })""" % svg)

    def center(self, selector):
        """The centre of an element in the viewport, after scrolling it into view."""
        return self.js("""(() => { const e = document.querySelector(%s); e.scrollIntoView({block: 'center'});
            const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"""
                       % json.dumps(selector))

    def shot(self, name):
        if self.shots:
            self.b.screenshot(os.path.join(self.shots, "%s-%s.png" % (self.tag, name)))

    def errors(self):
        return self.b.errors()


def near(a, b):
    return abs(a - b) <= 0.5 + 1e-9 * abs(b)


def flame_nodes(tree):
    """(depth, name) -> values, of the flamegraph --json tree."""
    out = {}
    def walk(n, d):
        out.setdefault((d, n["name"]), []).append(n["value"])
        for c in n["children"]:
            walk(c, d + 1)
    walk(tree, 0)
    return out


def check_numbers(ap, pg, trace, tag, *filt):
    """Table and flame graph against top and flamegraph, every index."""
    # the peak, as stats prints it, and what kind of number it is
    stats = cli_json(ap, "stats", "--json", trace)
    peak = pg.js("[+document.getElementById('peak').getAttribute('data-v'), "
                 "document.getElementById('peak').textContent]")
    check(near(peak[0], stats["peak_inuse_space"]) and
          ("(exact)" in peak[1]) == (stats["peak_inuse_space_kind"] == "exact"),
          "%s: the page's peak %s, stats' %s (%s)" % (tag, peak, stats["peak_inuse_space"],
                                                      stats["peak_inuse_space_kind"]))
    sampled = "sampled" in tag
    for si in INDEXES:
        if si == "temporary" and sampled:
            check(pg.js("document.querySelector('#si option[value=\"6\"]').disabled") is True,
                  "%s: temporary offered for a sampled trace" % tag)
            continue
        pg.set_index(si)
        # what the CLI notes of the index (stderr), the page says by it
        if si == "inuse_objects" and not filt:
            note = [l for l in run(ap, "top", "--" + si, trace).stderr.decode().splitlines()
                    if l.startswith("allocprof: note: inuse_objects")]
            says = pg.js("document.getElementById('index-note').textContent")
            check(note == (["allocprof: note: " + says] if sampled else []),
                  "%s: the page's inuse_objects note %r, top's %r" % (tag, says, note))
        for g in GRANS:
            pg.set_select("gran", g)
            want = cli_json(ap, "top", "--json", "--" + si, "--" + g, *filt, trace)
            rows = pg.table()
            more = pg.js("!!document.getElementById('top-more')")
            check(not more or len(rows) == 300, "%s %s %s: rows cut short" % (tag, si, g))
            got = sorted((n, round(f), round(c)) for n, f, c in rows)
            exp = sorted((r["name"], r["flat"], r["cum"]) for r in want["rows"])
            check(got == exp, "%s: table %s %s is not top's:\n  page %s\n  top  %s" %
                  (tag, si, g, got, exp))
            total = pg.js("+document.getElementById('top-total').getAttribute('data-v')")
            check(near(total, want["total"]), "%s: table %s total %s, top %s" % (tag, si, total, want["total"]))
            # the table's own order: flat descending, ties by name
            check([r[0] for r in rows] == [r[0] for r in sorted(rows, key=lambda r: (-round(r[1], 6), r[0]))],
                  "%s: table %s %s not sorted by flat" % (tag, si, g))
        fg = cli_json(ap, "flamegraph", "--json", "--" + si, *filt, trace)
        nodes = flame_nodes(fg["root"])
        boxes = pg.boxes()
        if fg["root"]["value"] == 0:
            check(not boxes, "%s: flame %s: boxes for a total of 0" % (tag, si))
            continue
        check(boxes and boxes[0][0] == "all" and round(boxes[0][1]) == fg["root"]["value"],
              "%s: flame %s root %s, flamegraph's %s" % (tag, si, boxes[:1], fg["root"]["value"]))
        for name, v, d, *_ in boxes:
            check(any(near(v, x) for x in nodes.get((d, name), [])),
                  "%s: flame %s: box %s at depth %d of %s is not flamegraph's %s" %
                  (tag, si, name, d, v, nodes.get((d, name))))
        # boxes under half a pixel are not drawn
        width, root = boxes[0][5], fg["root"]["value"]
        wide = sum(1 for v in nodes.values() for x in v if x / root * width >= 0.5)
        check(len(boxes) == wide, "%s: flame %s: %d boxes, flamegraph has %d nodes of half a "
              "pixel or more" % (tag, si, len(boxes), wide))


def check_interactions(ap, pg, trace, tag, zoom_on, search_re, search_focus):
    # sort by cum, then by name, ascending
    pg.set_index("alloc_space")
    pg.set_select("gran", "functions")
    pg.b.click(*pg.center("#top-table th[data-sort=cum]"))
    rows = pg.table()
    check([r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True),
          "%s: a click on 'cum' did not sort by cum: %s" % (tag, rows))
    pg.b.click(*pg.center("#top-table th[data-sort=name]"))
    rows = pg.table()
    check([r[0] for r in rows] == sorted(r[0] for r in rows),
          "%s: a click on 'name' did not sort by name: %s" % (tag, rows))

    # zoom: click the box, it fills the width, Reset zoom goes back
    boxes = pg.boxes()
    width = boxes[0][5]
    z = [b for b in boxes if b[0] == zoom_on][0]
    check(z[5] < width * 0.99, "%s: %s is full width before the zoom" % (tag, zoom_on))
    pg.b.click(*pg.center('#fg-svg g.node[data-name="%s"] rect' % zoom_on))
    after = pg.boxes()
    zb = [b for b in after if b[0] == zoom_on][0]
    check(abs(zb[5] - width) < 1, "%s: zoomed %s is %.1f px wide, not %.1f" % (tag, zoom_on, zb[5], width))
    check(len(after) < len(boxes), "%s: the zoom hid nothing (%d boxes, %d)" % (tag, len(after), len(boxes)))
    check(pg.js("document.getElementById('zoom-reset').style.display") == "",
          "%s: no Reset zoom after a zoom" % tag)
    pg.shot("zoom")

    # the sandwich of the zoomed function: its cum, as top's
    pg.b.click(*pg.center("#sw-pick"))
    check(pg.js("document.getElementById('sandwich').style.display") == "",
          "%s: the callers and callees view did not open" % tag)
    top = cli_json(ap, "top", "--json", "--alloc_space", trace)
    cum = [r["cum"] for r in top["rows"] if r["name"] == zoom_on][0]
    sw = pg.js("+document.getElementById('sandwich').getAttribute('data-v')")
    check(near(sw, cum), "%s: sandwich of %s holds %s, top's cum %s" % (tag, zoom_on, sw, cum))
    callers, callees = pg.boxes("sw-callers"), pg.boxes("sw-callees")
    check(callers and callers[0][0] == zoom_on and near(callers[0][1], cum),
          "%s: the callers' root is %s, not %s" % (tag, callers[:1], zoom_on))
    check(callees and callees[0][0] == zoom_on and near(callees[0][1], cum),
          "%s: the callees' root is %s, not %s" % (tag, callees[:1], zoom_on))
    check(all(b[2] > 0 for b in callers[1:]) and len(callers) >= 2,
          "%s: %s has no callers drawn: %s" % (tag, zoom_on, callers))
    pg.shot("sandwich")
    # a recursive function's, from the table: each stack once
    pg.b.click(*pg.center('#top-table tr[data-name="walk"] td.name'))
    walk = [r["cum"] for r in top["rows"] if r["name"] == "walk"][0]
    sw = pg.js("+document.getElementById('sandwich').getAttribute('data-v')")
    callees = pg.boxes("sw-callees")
    check(near(sw, walk) and callees[0][0] == "walk" and near(callees[0][1], walk) and
          max(b[2] for b in callees) >= 2, "%s: sandwich of walk %s (callees %s), top's cum %s" %
          (tag, sw, callees, walk))
    pg.b.click(*pg.center("#zoom-reset"))
    check(len(pg.boxes()) == len(boxes), "%s: Reset zoom did not restore the boxes" % tag)

    # search in the CLI's dialect: (?i) works, the share is top --focus's
    pg.js("(() => { const i = document.getElementById('search'); i.value = %s; "
          "i.dispatchEvent(new Event('change')); })()" % json.dumps(search_re))
    matched = pg.js("+document.getElementById('search-status').getAttribute('data-v')")
    kept = cli_json(ap, "top", "--json", "--alloc_space", "--focus", search_focus, trace)
    kept_total = sum(r["flat"] for r in kept["rows"])
    check(near(matched, kept_total), "%s: search %s matched %s, top --focus %s keeps %s" %
          (tag, search_re, matched, search_focus, kept_total))
    check(any(b[7] for b in pg.boxes()), "%s: search %s highlighted nothing" % (tag, search_re))
    check(pg.js("document.getElementById('search-error').textContent") == "",
          "%s: search error for %s" % (tag, search_re))
    pg.shot("search")
    pg.js("(() => { const i = document.getElementById('search'); i.value = '(unclosed'; "
          "i.dispatchEvent(new Event('change')); })()")
    check("bad regex" in pg.js("document.getElementById('search-error').textContent"),
          "%s: a bad regex is not reported" % tag)
    pg.js("(() => { const i = document.getElementById('search'); i.value = ''; "
          "i.dispatchEvent(new Event('change')); })()")


def timeline_x(pg, bucket, nb):
    """The viewport x of the middle of bucket `bucket`, and the chart's y."""
    r = pg.js("""(() => { const c = document.getElementById('tl-catch'); c.scrollIntoView({block: 'center'});
        const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()""")
    return r[0] + r[2] * (bucket + 0.5) / nb, r[1] + r[3] / 2


def check_hover(ap, pg, trace, tag, buckets, *unit):
    tl = cli_json(ap, "timeline", "--format=json", "--buckets", "200", *unit, trace)
    # real axes: ticks with units on both, the top tick under the peak
    yt = pg.js("Array.from(document.querySelectorAll('#tl-svg .ytick')).map(t => t.textContent)")
    xt = pg.js("Array.from(document.querySelectorAll('#tl-svg .xtick')).map(t => t.textContent)")
    unit = "B" if unit else "s"
    check(len(yt) >= 3 and yt[0] == "0" and all(re.fullmatch(r"[\d.]+[kMG]?B", t) for t in yt[1:]),
          "%s: y ticks %s" % (tag, yt))
    check(len(xt) >= 3 and xt[0] == "0" and all(t.endswith(unit) for t in xt[1:]),
          "%s: x ticks %s" % (tag, xt))
    for k in buckets:
        x, y = timeline_x(pg, k, 200)
        pg.b.mouse("mouseMoved", x, y)
        got = pg.js("""(() => { const t = document.getElementById('tl-tip');
            return [t.style.display, +t.getAttribute('data-bucket'),
                    Array.from(t.querySelectorAll('tr')).map(r => [+r.children[1].getAttribute('data-v'),
                        r.children[2].textContent])]; })()""")
        want = tl["buckets"][k]
        check(got[0] == "block" and got[1] == k, "%s: hover on bucket %d shows %s" % (tag, k, got[:2]))
        rows = got[2]
        check(rows and near(rows[0][0], want["total"]),
              "%s: hover bucket %d total %s, timeline's %s" % (tag, k, rows[:1], want["total"]))
        names = tl["sites"] + ["(other sites)"]
        check([r[1] for r in rows[1:]] == names, "%s: hover sites %s, timeline's %s" %
              (tag, [r[1] for r in rows[1:]], names))
        check(all(near(a[0], b) for a, b in zip(rows[1:], want["sites"])),
              "%s: hover bucket %d sites %s, timeline's %s" % (tag, k, rows[1:], want["sites"]))
    pg.shot("hover")


def select_range(pg, b0, b1):
    x0, y = timeline_x(pg, b0, 200)
    x1, _ = timeline_x(pg, b1, 200)
    pg.b.drag(x0, y, x1, y)
    return pg.js("document.getElementById('range-status').textContent")


def view_totals(pg):
    """The table's total and the flame graph's root, as drawn now."""
    t = pg.js("+document.getElementById('top-total').getAttribute('data-v')")
    b = pg.boxes()
    return t, (b[0][1] if b else 0)


def check_range_whole(ap, pg, trace, tag):
    # the whole run picked: the table and the graph are the run's again
    status = select_range(pg, 0, 199)
    check(status.startswith("Showing alloc_space: allocated from 0 to"),
          "%s: range status %r" % (tag, status))
    top = cli_json(ap, "top", "--json", "--alloc_space", trace)
    got = sorted((n, round(f), round(c)) for n, f, c in pg.table())
    exp = sorted((r["name"], r["flat"], r["cum"]) for r in top["rows"])
    check(got == exp, "%s: the whole run picked is not top's alloc_space:\n %s\n %s" % (tag, got, exp))
    t, root = view_totals(pg)
    check(near(t, top["total"]) and near(root, top["total"]),
          "%s: whole range: table %s, flame %s, top %s" % (tag, t, root, top["total"]))
    # an index the range has no values of is offered no more
    check(pg.js("document.querySelector('#si option[value=\"5\"]').disabled") is True,
          "%s: peak_space still offered with a range" % tag)
    pg.shot("range")
    pg.b.click(*pg.center("#range-clear"))
    check(pg.js("document.getElementById('range-status').textContent") == "whole run",
          "%s: Whole run did not clear the range" % tag)


def check_advise(ap, pg, trace, tag):
    want = cli_json(ap, "advise", "--no-measure", "--json", "-n", "0", trace)
    got = pg.js("""Array.from(document.querySelectorAll('#advise-table tbody tr')).map(tr =>
        [tr.getAttribute('data-site'), tr.querySelector('.verdict').getAttribute('data-verdict'),
         +tr.children[2].getAttribute('data-v'), +tr.children[3].getAttribute('data-v'),
         tr.querySelector('.reasons').textContent])""")
    exp = [[s["site"], s["verdict"], s["alloc_objects"], s["alloc_space"], s["reasons"]]
           for s in want["sites"]]
    check(got == exp, "%s: advice is not advise's:\n page   %s\n advise %s" % (tag, got, exp))
    check(len(got) > 0, "%s: no advice rows" % tag)


def check_diff(ap, pg, base, trace, tag):
    want = cli_json(ap, "diff", "--json", base, trace)
    for si in ["alloc_space", "inuse_objects"]:
        pg.set_index(si)
        got = pg.js("""Array.from(document.querySelectorAll('#diff-table tbody tr')).map(tr =>
            [tr.getAttribute('data-name'), +tr.children[0].getAttribute('data-v'),
             +tr.children[1].getAttribute('data-v')])""")
        exp = [[r["name"], r["base_flat"], r["new_flat"]] for r in want[si]["rows"]
               if r["base_flat"] != r["new_flat"]]
        check(got == exp, "%s: diff %s is not diff's:\n page %s\n diff %s" % (tag, si, got, exp))
        check(len(exp) > 0, "%s: diff %s: nothing changed to compare" % (tag, si))
        # as diff prints them: base, new, delta, delta%, name
        text = run(ap, "diff", "--" + si, base, trace).stdout.decode().splitlines()
        head = [i for i, l in enumerate(text) if l.split()[:4] == ["base", "new", "delta", "delta%"]][0]
        want_text = [l.split(None, 4) for l in text[head + 1:]]
        got_text = pg.js("""Array.from(document.querySelectorAll('#diff-table tbody tr')).map(tr =>
            Array.from(tr.children).map(td => td.textContent))""")
        check(got_text == want_text, "%s: diff %s as the page prints it:\n %s\n diff prints\n %s" %
              (tag, si, got_text, want_text))
    pg.shot("diff")


def check_cli(ap, trace, tmp):
    out = run(ap, "html", "-h").stdout.decode()
    check(out.startswith("usage: allocprof html"), "html -h: %r" % out[:80])
    for args, msg in [([], "no trace given"), (["--json", trace], "--json"),
                      (["--buckets", "0", trace], "--buckets"),
                      (["--time-unit", "h", trace], "--time-unit"),
                      (["--by-process", trace], "--by-process")]:
        p = run(ap, "html", *args, want=2)
        check(msg in p.stderr.decode(), "html %s: %r" % (args, p.stderr.decode()))
    p = run(ap, "html", tmp + "/nonexistent", want=1)
    check(re.match(r"allocprof: .*nonexistent.*: ", p.stderr.decode()),
          "html of no trace: %r" % p.stderr.decode())
    # no -o: a new report001.html, then report002.html, never the terminal
    d = tempfile.mkdtemp(dir=tmp)
    for name in ["report001.html", "report002.html"]:
        p = run(ap, "html", "--no-advise", os.path.abspath(trace), cwd=d)
        check(os.path.exists(os.path.join(d, name)) and "wrote file://%s/%s" % (os.path.realpath(d), name)
              in p.stderr.decode(), "html without -o: %r, %s" % (p.stderr.decode(), os.listdir(d)))
    check(run(ap, "html", "--no-advise", "-o", "-", trace).stdout.startswith(b"<!DOCTYPE html>"),
          "html -o - to a pipe: no page")
    # a name that would end the data block or open an HTML comment in it
    odd = "</script><!--<script>x"
    pg_path = page_of(ap, tmp, "odd.html", "--no-advise", "--focus", odd, trace)
    odd_page = open(pg_path).read()
    check("<!--" not in odd_page and "</script><!--" not in odd_page,
          "a filter's '<' is in the page as is")
    page = open(os.path.join(d, "report001.html")).read()
    check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "fetch(" not in page
          and "XMLHttpRequest" not in page, "the page refers to the network")


def start_browser(tmp):
    try:
        return Browser(tmp)
    except FileNotFoundError:
        print("SKIP: chromium is not installed (make check installs it)")
        sys.exit(77)


def fixture_mode(ap, mktrace, shots):
    with tempfile.TemporaryDirectory() as tmp:
        exact, sampled = tmp + "/fx.trace", tmp + "/fx-sampled.trace"
        subprocess.run([mktrace, exact], check=True)
        subprocess.run([mktrace, sampled, "4096"], check=True)
        check_cli(ap, exact, tmp)
        br = start_browser(tmp)
        try:
            for trace, tag in [(exact, "fixture"), (sampled, "fixture-sampled")]:
                path = page_of(ap, tmp, tag + ".html", "--diff-base",
                               sampled if trace == exact else exact, trace)
                pg = Page(br, path, shots, tag)
                pg.shot("page")
                check_numbers(ap, pg, trace, tag)
                check_interactions(ap, pg, trace, tag, "parse", "(?i)^MAKE_TOKEN$", "^make_token$")
                # the filters as top and flamegraph apply them
                filt = ["--focus", "walk|parse", "--hide", "^make_token$", "--ignore", "grow"]
                fpage = Page(br, page_of(ap, tmp, tag + "-filtered.html", "--no-advise", *filt, trace),
                             shots, tag + "-filtered")
                check_numbers(ap, fpage, trace, tag + " filtered", *filt)
                check(not fpage.errors(), "%s filtered: errors: %s" % (tag, fpage.errors()))
                pg = Page(br, path, shots, tag)
                if trace == exact:
                    odd = Page(br, tmp + "/odd.html", shots, "odd")
                    check("Filters: focus=</script><!--<script>x" in
                          odd.js("(document.getElementById('head') || {}).textContent || ''"),
                          "the page of --focus '</script><!--<script>x' does not show it")
                    check(not odd.errors(), "odd: the page reported errors: %s" % odd.errors())
                    pg = Page(br, path, shots, tag)
                check_hover(ap, pg, trace, tag, [0, 60, 130, 199])
                check_range_whole(ap, pg, trace, tag)
                check_advise(ap, pg, trace, tag)
                check_diff(ap, pg, sampled if trace == exact else exact, trace, tag)
                errs = pg.errors()
                check(not errs, "%s: the page reported errors: %s" % (tag, errs))
                check(pg.js("document.getElementById('truncated')") is None,
                      "%s: a whole trace's page says it is truncated" % tag)
            # A run of two processes (two TRACEs): the advice is one
            # process's, as advise of its trace gives it, and says which.
            exact2 = tmp + "/fx2.trace"
            shutil.copy(exact, exact2)
            pg = Page(br, page_of(ap, tmp, "two.html", exact, exact2), shots, "two")
            check_advise(ap, pg, exact, "two processes")
            pid = cli_json(ap, "stats", "--json", exact)["pid"]
            says = pg.js("(document.getElementById('advised-process') || {}).textContent || ''")
            check(says.startswith("A run of 2 processes: advised is pid %d (" % pid),
                  "two processes: the page says %r of the process advised" % says)
            check(not pg.errors(), "two: the page reported errors: %s" % pg.errors())
            # a truncated trace's page says so (stats does; the page
            # outlives the command's warning on stderr)
            cut = truncated_copy(ap, exact, tmp + "/cut.trace", env)
            pg = Page(br, page_of(ap, tmp, "cut.html", cut), shots, "cut")
            says = pg.js("(document.getElementById('truncated') || {}).textContent || ''")
            check(says.startswith("Truncated trace (") and says.endswith("): the page shows its complete part"),
                  "cut: the page of a truncated trace says %r" % says)
            check(not pg.errors(), "cut: the page reported errors: %s" % pg.errors())
        finally:
            br.close()


def record_mode(ap, peak, shots):
    with tempfile.TemporaryDirectory() as tmp:
        trace = tmp + "/peak.trace"
        p = subprocess.run([ap, "record", "--all", "-o", trace, peak], capture_output=True, env=env)
        if p.returncode:
            sys.exit("FAIL record: %s" % p.stderr.decode())
        br = start_browser(tmp)
        try:
            # its events share a few clock ticks: the axis of bytes
            # allocated and freed spreads them (build, release, leak)
            path = page_of(ap, tmp, "peak.html", "--time-unit", "B", trace)
            pg = Page(br, path, shots, "peak")
            tl = cli_json(ap, "timeline", "--format=json", "--buckets", "200", "--time-unit", "B", trace)
            kpk = tl_peak_bucket(tl)
            check(80 < kpk < 120, "peak: the peak is in bucket %d of 200, not in the middle" % kpk)
            check_hover(ap, pg, trace, "peak", [kpk, 150, 199], "--time-unit", "B")
            # the peak's stretch: what is live at its end is at most its
            # highest, and build()'s 1 MiB blocks
            select_range(pg, kpk, kpk)
            pg.set_index("inuse_space")
            t, root = view_totals(pg)
            check(t <= tl["buckets"][kpk]["total"] and near(t, root) and t % (1 << 20) == 0 and t > 0,
                  "peak: live at the end of the peak's stretch %s (flame %s), the stretch's highest %s"
                  % (t, root, tl["buckets"][kpk]["total"]))
            check([r[0] for r in pg.table() if r[1]] == ["build"],
                  "peak: live at the peak's stretch is not build()'s: %s" % pg.table())
            pg.shot("range-peak")
            # the last stretch: leak()'s blocks live
            select_range(pg, 199, 199)
            pg.set_index("inuse_space")
            t, root = view_totals(pg)
            check(near(t, 488000) and near(root, 488000), "peak: live at the end %s (flame %s), not 488000"
                  % (t, root))
            check([r[0] for r in pg.table() if r[1]] == ["leak"], "peak: live at the end: %s" % pg.table())
            rs = pg.js("document.getElementById('range-sum').textContent")
            check("live at its end: 488 blocks, 476.56kB)" in rs, "peak: the last stretch's sums: %r" % rs)
            # from after the peak to the end: leak()'s 488 blocks allocated
            # (release() frees in the stretches between)
            select_range(pg, kpk + 1, 199)
            pg.set_index("alloc_objects")
            rows = {r[0]: r[1] for r in pg.table()}
            check(rows.get("leak") == 488, "peak: leak()'s allocations after the peak: %s" % rows)
            t, root = view_totals(pg)
            check(near(t, root), "peak: the table's %s and the flame graph's %s differ" % (t, root))
            # allocated before and after add up to the run's
            before = select_range(pg, 0, kpk) and view_totals(pg)[0]
            top = cli_json(ap, "top", "--json", "--alloc_objects", trace)
            check(near(before + t, top["total"]), "peak: %s + %s allocations, top says %s" %
                  (before, t, top["total"]))
            pg.shot("range-after")
            errs = pg.errors()
            check(not errs, "peak: the page reported errors: %s" % errs)
            # a program that allocates nothing: the timeline's axis has
            # no ticks of fractions of a byte (0 0 0 1B 1B 1B)
            empty = tmp + "/true.trace"
            p = subprocess.run([ap, "record", "--all", "-o", empty, "/bin/true"], capture_output=True, env=env)
            if p.returncode:
                sys.exit("FAIL record /bin/true: %s" % p.stderr.decode())
            pg = Page(br, page_of(ap, tmp, "true.html", empty), shots, "true")
            yt = pg.js("Array.from(document.querySelectorAll('#tl-svg text.ytick')).map(t => t.textContent)")
            check(yt and len(set(yt)) == len(yt), "true: the timeline's y ticks %s" % yt)
            check(not pg.errors(), "true: the page reported errors: %s" % pg.errors())
        finally:
            br.close()


def tl_peak_bucket(tl):
    return max(range(len(tl["buckets"])), key=lambda k: (tl["buckets"][k]["total"], -k))


def main():
    ap = os.path.abspath(sys.argv[1])
    shots = os.environ.get("HTML_SHOTS")
    if shots:
        os.makedirs(shots, exist_ok=True)
    if len(sys.argv) == 4 and sys.argv[2] == "--record":
        record_mode(ap, sys.argv[3], shots)
    else:
        fixture_mode(ap, os.path.abspath(sys.argv[2]), shots)
    if failures:
        for f in failures:
            print("FAIL", f)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
