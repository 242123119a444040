#!/usr/bin/env python3
"""`allocprof flamegraph` against `top` on the same trace, and its script in
a real browser.

usage: flamegraph.py ALLOCPROF MKTRACE
       flamegraph.py ALLOCPROF --record VIEWS CXX ODDNAME

The first form (every build, the sanitized one too) takes the fixture
traces of tests/report (exact, and sampled): for each sample index the SVG
parses as XML, its root's value is `top --json`'s total, every box's value
is its self value plus its children's, the boxes sit where their values
put them, and every function's boxes (those not inside a box of the same
function) add up to `top --json`'s cum of it, their self values to its
flat; focus/ignore/show/hide give what top gives; --min-width leaves out
exactly the boxes under it; --json holds the same tree; -h and the errors.

The second form records testdata/views, testdata/cxx and testdata/oddname
with --all: the same checks, C++ names (< > &) escaped, a symbol that is
not UTF-8 replaced so that the SVG and the JSON stay well-formed; then
headless Chromium renders the SVG (a screenshot, kept in $FLAMEGRAPH_SHOTS
when set) and runs its script on a copy with a test harness: a click on a box zooms (its subtree fills
the width, its ancestors span it, the rest hidden), Reset zoom restores
the boxes, Ctrl-F with a regex highlights the matching boxes and prints
their share, Search again resets it.
"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from truncate import truncated_copy  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
INDEXES = ["alloc_space", "alloc_objects", "inuse_space", "inuse_objects", "peak_space",
           "peak_objects", "temporary"]
HIGHLIGHT = "rgb(230,0,230)"

failures = []
env = dict(os.environ, LC_ALL="C", ALLOCPROF_NO_PROGRESS="1")


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(ap, *args, want=0):
    p = subprocess.run([ap, *args], capture_output=True, env=env)
    if p.returncode != want:
        sys.exit("FAIL allocprof %s: exit %d, expected %d\n%s" %
                 (" ".join(args), p.returncode, want, p.stderr.decode(errors="replace")))
    return p


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


class Box:
    def __init__(self, g):
        self.g = g
        self.name = g.find(SVG + "title").text.split("\n")[0]
        self.x = float(g.get("data-x"))
        self.v = float(g.get("data-v"))
        self.self = float(g.get("data-s"))
        self.d = int(g.get("data-d"))
        r = g.find(SVG + "rect")
        self.px = float(r.get("x"))
        self.pw = float(r.get("width"))
        self.py = float(r.get("y"))
        self.fill = r.get("fill")
        self.label = g.find(SVG + "text").text or ""
        self.children = []
        self.parent = None

    def path(self):
        b, p = self, []
        while b:
            p.append(b.name)
            b = b.parent
        return tuple(reversed(p))


def parse_svg(data, what):
    """The root element and the boxes, parents linked (preorder)."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        sys.exit("FAIL %s: not XML: %s" % (what, e))
    frames = [e for e in root.iter(SVG + "g") if e.get("id") == "frames"]
    if not check(len(frames) == 1, "%s: no <g id=frames>" % what):
        return root, []
    boxes = [Box(g) for g in frames[0] if g.get("class") == "f"]
    stack = []
    for b in boxes:
        while stack and stack[-1].d >= b.d:
            stack.pop()
        if stack:
            check(stack[-1].d == b.d - 1, "%s: box %s skips a level" % (what, b.path()))
            b.parent = stack[-1]
            stack[-1].children.append(b)
        stack.append(b)
    return root, boxes


def top_json(ap, trace, *args):
    return json.loads(run(ap, "top", "--json", *args, trace).stdout)


def outermost(boxes, name):
    """The boxes of `name` that are not inside another box of it."""
    out = []
    for b in boxes:
        if b.name != name:
            continue
        p, inside = b.parent, False
        while p:
            inside |= p.name == name
            p = p.parent
        if not inside:
            out.append(b)
    return out


def check_tree(what, root, boxes, total):
    """Values, self values and geometry of the boxes."""
    if not check(boxes and boxes[0].name == "all" and boxes[0].d == 0,
                 "%s: the first box is not the root 'all'" % what):
        return
    rootbox = boxes[0]
    check(close(rootbox.v, total), "%s: root %r, total %r" % (what, rootbox.v, total))
    pad, width = float(root.get("data-pad")), float(root.get("data-width"))
    cw = float(root.get("data-cw"))
    fills = {}
    for b in boxes:
        # a warm colour per name (grey without symbols), a label that fits
        m = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", b.fill or "")
        check(m and (b.fill == "rgb(190,190,190)" or
                     (int(m.group(1)) >= 205 and int(m.group(2)) <= 230 and int(m.group(3)) <= 55)),
              "%s: %s: fill %r is not warm" % (what, b.path(), b.fill))
        check(fills.setdefault(b.name, b.fill) == b.fill,
              "%s: %s: fill %r, another box of it %r" % (what, b.path(), b.fill, fills[b.name]))
        check(b.label == fit(b.name, b.pw, cw) and
              (not b.label or len(b.label) * cw <= b.pw - 6 + 1e-9),
              "%s: %s: label %r in %r px" % (what, b.path(), b.label, b.pw))
        kids = sum(c.v for c in b.children)
        check(close(b.v, b.self + kids),
              "%s: %s: value %r != self %r + children %r" % (what, b.path(), b.v, b.self, kids))
        x = b.x
        for c in b.children:
            check(close(c.x, x), "%s: %s at %r, expected %r" % (what, c.path(), c.x, x))
            x += c.v
        check(sorted(c.name for c in b.children) == [c.name for c in b.children] and
              len({c.name for c in b.children}) == len(b.children),
              "%s: %s: children not one per name in name order" % (what, b.path()))
        if rootbox.v > 0:
            check(abs(b.px - (pad + b.x / rootbox.v * width)) < 0.011 and
                  abs(b.pw - b.v / rootbox.v * width) < 0.011,
                  "%s: %s drawn at %r+%r" % (what, b.path(), b.px, b.pw))
        if b.parent:
            check(close(b.py, b.parent.py - 16), "%s: %s not above its parent" % (what, b.path()))


def check_index(ap, trace, si, what):
    """One sample index of one trace, everything drawn (--min-width 0)."""
    what = "%s --%s" % (what, si)
    svg = run(ap, "flamegraph", "--" + si, "--min-width", "0", trace).stdout
    root, boxes = parse_svg(svg, what)
    top = top_json(ap, trace, "--" + si)
    if top["total"] == 0:
        check(not boxes, "%s: boxes for a zero total" % what)
        return
    check(round(boxes[0].v) == top["total"], "%s: root %r, top's total %r" %
          (what, boxes[0].v, top["total"]))
    check_tree(what, root, boxes, boxes[0].v)
    title = [e for e in root.iter(SVG + "text") if e.get("id") == "title"][0].text
    check(si in title and "total" in title, "%s: title %r" % (what, title))
    for row in top["rows"]:
        bs = outermost(boxes, row["name"])
        cum = sum(b.v for b in bs)
        flat = sum(b.self for b in boxes if b.name == row["name"])
        check(round(cum) == row["cum"], "%s: %s: boxes %r, top's cum %r" %
              (what, row["name"], cum, row["cum"]))
        check(round(flat) == row["flat"], "%s: %s: self %r, top's flat %r" %
              (what, row["name"], flat, row["flat"]))
    check({b.name for b in boxes} - {"all"} == {r["name"] for r in top["rows"]},
          "%s: the boxes' functions are not top's" % what)
    # The JSON tree is the same tree.
    tree = json.loads(run(ap, "flamegraph", "--json", "--" + si, trace).stdout)
    flat = []

    def walk(n, d):
        flat.append((n["name"], n["value"], n["self"], d))
        for c in n["children"]:
            walk(c, d + 1)
    walk(tree["root"], 0)
    check(flat == [(b.name, round(b.v), round(b.self), b.d) for b in boxes],
          "%s: --json is another tree" % what)
    check(tree["total"] == top["total"] and tree["sample_index"] == si,
          "%s: --json head %r" % (what, {k: tree[k] for k in tree if k != "root"}))
    return boxes


def check_trace(ap, trace, what, focus_func, hide_func):
    for si in INDEXES:
        if si == "temporary" and json.loads(run(ap, "stats", "--json", trace).stdout)["rate"] > 1:
            continue
        check_index(ap, trace, si, what)

    # The default --min-width: the boxes of 0.1% of the total and more.
    _, every = parse_svg(run(ap, "flamegraph", "--min-width=0", trace).stdout, what)
    root, shown = parse_svg(run(ap, "flamegraph", trace).stdout, what)
    want = [b.path() for b in every if b.v >= every[0].v * 0.001]
    check([b.path() for b in shown] == want, "%s: default min-width: %r, expected %r" %
          (what, [b.path() for b in shown], want))
    sub = [e for e in root.iter(SVG + "text") if e.get("id") == "subtitle"][0].text
    omitted = len(every) - len(want)
    check(("%d box" % omitted in sub) if omitted else "omitted" not in sub,
          "%s: subtitle %r, %d omitted" % (what, sub, omitted))
    _, some = parse_svg(run(ap, "flamegraph", "--min-width", "5", trace).stdout, what)
    check([b.path() for b in some] == [b.path() for b in every if b.v >= every[0].v * 0.05],
          "%s: --min-width 5" % what)

    # Filters, as top applies them.
    total = top_json(ap, trace)["total"]
    cum = {r["name"]: r["cum"] for r in top_json(ap, trace)["rows"]}
    _, fb = parse_svg(run(ap, "flamegraph", "--min-width=0", "--focus", "^%s$" % focus_func,
                          trace).stdout, what)
    check(fb and round(fb[0].v) == cum[focus_func], "%s: --focus: root %r, cum %r" %
          (what, fb and fb[0].v, cum[focus_func]))
    _, ib = parse_svg(run(ap, "flamegraph", "--min-width=0", "--ignore", "^%s$" % focus_func,
                          trace).stdout, what)
    check(ib and round(ib[0].v) == total - cum[focus_func], "%s: --ignore" % what)
    _, hb = parse_svg(run(ap, "flamegraph", "--min-width=0", "-hide=^%s$" % hide_func,
                          trace).stdout, what)
    check(hb and round(hb[0].v) == total and hide_func not in {b.name for b in hb},
          "%s: --hide" % what)
    hidden = {r["name"]: r for r in top_json(ap, trace, "--hide", "^%s$" % hide_func)["rows"]}
    for name, row in hidden.items():
        check(round(sum(b.v for b in outermost(hb, name))) == row["cum"],
              "%s: --hide: %s against top --hide" % (what, name))
    # The icicle: the root on top, callees below.
    _, inv = parse_svg(run(ap, "flamegraph", "--inverted", trace).stdout, what)
    check(inv and all(b.py == inv[0].py + 16 * b.d for b in inv), "%s: --inverted" % what)


def run_on_tty(argv, cwd):
    """Runs argv with its standard output a pseudo-terminal; returns its
    exit status, its stderr and what reached the terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, cwd=cwd,
                            env=dict(os.environ, ALLOCPROF_NO_PROGRESS="1"))
    os.close(slave)
    on_tty = b""
    while True:  # read what reaches the terminal, so that it never blocks
        if select.select([master], [], [], 0.1)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                chunk = b""
            on_tty += chunk
            if chunk:
                continue
        if proc.poll() is not None:
            break
    os.close(master)
    err = proc.stderr.read()
    proc.stderr.close()
    return proc.returncode, err, on_tty


def check_cli(ap, trace, tmp):
    p = run(ap, "flamegraph", "-h")
    out = p.stdout.decode()
    check(out.startswith("usage: allocprof flamegraph [OPTIONS] TRACE"), "-h: usage line")
    for opt in ["--output", "--inverted", "--min-width", "--width", "--alloc_objects",
                "--peak_space", "--temporary", "--focus", "--hide", "--json"]:
        check(opt in out, "-h: no %s" % opt)
    check(b"flamegraph" in run(ap, "--help").stdout, "allocprof --help does not list flamegraph")

    def err(want, pat, *args):
        p = run(ap, "flamegraph", *args, want=want)
        e = p.stderr.decode()
        check(e.count("\n") == 1 and re.search(pat, e),
              "flamegraph %s: stderr %r, expected one line matching %r" % (args, e, pat))
        check(not p.stdout, "flamegraph %s: wrote to stdout" % (args,))
    err(2, r"^allocprof: flamegraph: no trace given", "--inverted")
    err(2, r"^allocprof: flamegraph: --by-process: ", "--by-process", trace)
    err(2, r"^allocprof: flamegraph: unknown option '--bogus'", "--bogus", trace)
    err(2, r"^allocprof: flamegraph: bad --min-width 'x'", "--min-width", "x", trace)
    err(2, r"^allocprof: flamegraph: bad --width '5'", "--width=5", trace)
    err(2, r"^allocprof: flamegraph: unknown sample index 'bytes'", "-sample_index=bytes", trace)
    err(2, r"^allocprof: flamegraph: --focus: bad regex '\(': ", "--focus", "(", trace)
    err(1, r"^allocprof: %s: " % re.escape(tmp + "/missing"), tmp + "/missing")
    err(1, r"^allocprof: %s: " % re.escape(tmp + "/no/such.svg"), "-o", tmp + "/no/such.svg", trace)
    # nothing kept: no box, a line that says why
    root, boxes = parse_svg(run(ap, "flamegraph", "--focus", "^nomatch$", trace).stdout, "empty")
    empty = [e.text for e in root.iter(SVG + "text") if e.get("id") == "empty"]
    check(not boxes and empty == ["nothing to draw: no stack passes the filters"],
          "--focus matching nothing: %d boxes, %r" % (len(boxes), empty))
    # -o: the file, and one line saying so
    p = run(ap, "flamegraph", "-o", tmp + "/out.svg", trace)
    check(p.stderr.decode() == "allocprof: wrote %s/out.svg\n" % tmp and not p.stdout,
          "-o: %r" % p.stderr)
    check(open(tmp + "/out.svg", "rb").read() == run(ap, "flamegraph", trace).stdout,
          "-o FILE and stdout differ")
    # Standard output a terminal (a pty): no SVG on it; as pprof -svg, a new
    # flamegraph001.svg, then 002, in the current directory, each named on
    # stderr, each the SVG that goes to a pipe. timeline --format=svg too.
    cwd = tmp + "/tty"
    os.makedirs(cwd, exist_ok=True)
    for args, prefix in ((["flamegraph"], "flamegraph"), (["timeline", "--format=svg"], "timeline")):
        for n in (1, 2):
            rc, err, on_tty = run_on_tty([os.path.abspath(ap)] + args + [trace], cwd)
            name = "%s%03d.svg" % (prefix, n)
            check(rc == 0 and err.decode() == "allocprof: wrote %s\n" % name,
                  "%s, stdout a terminal: exit %d, stderr %r, expected 'wrote %s'" % (prefix, rc, err, name))
            check(b"<svg" not in on_tty and len(on_tty) < 100, "%s, stdout a terminal: %d bytes written to it"
                  % (prefix, len(on_tty)))
            check(os.path.exists(cwd + "/" + name) and open(cwd + "/" + name, "rb").read()
                  == run(ap, *args, trace).stdout, "%s, stdout a terminal: %s is not the SVG" % (prefix, name))
    # -o - is still standard output (not a terminal here)
    check(run(ap, "flamegraph", "-o", "-", trace).stdout.startswith(b"<?xml"), "-o - to a pipe")


def fixture_mode(ap, mktrace):
    with tempfile.TemporaryDirectory() as tmp:
        exact, sampled = tmp + "/fx.trace", tmp + "/fx-sampled.trace"
        subprocess.run([mktrace, exact], check=True)
        subprocess.run([mktrace, sampled, "4096"], check=True)
        check_trace(ap, exact, "fixture", "parse", "walk")
        check_trace(ap, sampled, "fixture (sampled)", "alloc_big", "fx_build")
        check_cli(ap, exact, tmp)
        # a truncated trace's picture says so in its subtitle (the SVG
        # outlives the command's warning on stderr); a whole one's does not
        cut = truncated_copy(ap, exact, tmp + "/cut.trace", env)
        for trace, want in ((cut, True), (exact, False)):
            root, _ = parse_svg(run(ap, "flamegraph", trace).stdout, trace)
            sub = [e for e in root.iter(SVG + "text") if e.get("id") == "subtitle"][0].text
            check(("; a truncated trace: its complete part" in sub) == want,
                  "%s: subtitle %r" % (trace, sub))


def chromium(tmp, *args):
    exe = shutil.which("chromium")
    if not exe:
        sys.exit("FAIL chromium is not installed (make check installs it)")
    p = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                        "--user-data-dir=" + tmp + "/chromium", *args],
                       capture_output=True, timeout=120)
    if p.returncode != 0:
        sys.exit("FAIL chromium %s: exit %d\n%s" % (args, p.returncode, p.stderr.decode()))
    return p.stdout.decode()


# Run after the flame graph's own script has set up (load listeners run
# in order): drive it as a user would, and leave what it did in the DOM.
HARNESS = r"""<script type="text/ecmascript"><![CDATA[
window.addEventListener("load", function () {
	function snap() {
		return Array.prototype.map.call(document.querySelectorAll("#frames g.f"), function (g) {
			var r = g.querySelector("rect");
			return [g.style.display, parseFloat(r.getAttribute("x")),
				parseFloat(r.getAttribute("width")), r.getAttribute("fill"),
				g.querySelector("text").textContent, g.style.opacity];
		});
	}
	function click(el) {
		el.dispatchEvent(new MouseEvent("click", { bubbles: true }));
	}
	var out = {};
	var target = document.querySelectorAll("#frames g.f")[@TARGET@];
	click(target.querySelector("rect"));
	out.zoom = snap();
	out.unzoom_display = document.getElementById("unzoom").style.display;
	click(document.getElementById("unzoom"));
	out.reset = snap();
	out.unzoom_after = document.getElementById("unzoom").style.display;
	target.querySelector("rect").dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
	out.details = document.getElementById("details").textContent;
	window.prompt = function () { return "@REGEX@"; };
	window.dispatchEvent(new KeyboardEvent("keydown", { key: "f", ctrlKey: true }));
	out.search = snap();
	out.matched = document.getElementById("matched").textContent;
	out.button = document.getElementById("search").textContent;
	click(document.getElementById("search"));
	out.cleared = snap();
	out.matched_after = document.getElementById("matched").textContent;
	var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
	t.setAttribute("id", "ap-test");
	t.textContent = JSON.stringify(out);
	document.documentElement.appendChild(t);
});
]]></script>
"""


def fit(name, w, cw):
    n = int((w - 6) // cw)
    if n < 3:
        return ""
    return name if len(name) <= n else name[:n - 2] + ".."


def check_script(svgfile, tmp, target_name, regex):
    data = open(svgfile).read()
    root, boxes = parse_svg(data, svgfile)
    pad, width, cw = (float(root.get(k)) for k in ("data-pad", "data-width", "data-cw"))
    z = [i for i, b in enumerate(boxes) if b.name == target_name][0]
    zb = boxes[z]
    check(zb.d >= 2 and zb.children and zb.v < boxes[0].v,
          "script: %s is no box to zoom on (depth %d)" % (target_name, zb.d))
    harness = HARNESS.replace("@TARGET@", str(z)).replace("@REGEX@", regex)
    with open(tmp + "/harness.svg", "w") as f:
        f.write(data.replace("</svg>", harness + "</svg>"))
    dom = chromium(tmp, "--virtual-time-budget=5000", "--dump-dom", "file://" + tmp + "/harness.svg")
    m = re.search(r'<text id="ap-test">(.*?)</text>', dom, re.S)
    if not check(m, "script: the harness left no result (a script error?):\n" + dom[-2000:]):
        return
    out = json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
                     .replace("&quot;", '"'))
    # zoom
    for b, (disp, x, w, fill, label, opacity) in zip(boxes, out["zoom"]):
        inside = b.d >= zb.d and b.x >= zb.x - 1e-9 and b.x + b.v <= zb.x + zb.v + 1e-9
        above = b.d < zb.d and b.x <= zb.x + 1e-9 and zb.x + zb.v <= b.x + b.v + 1e-9
        if inside:
            ex, ew = pad + (b.x - zb.x) / zb.v * width, b.v / zb.v * width
            check(disp == "" and abs(x - ex) < 0.011 and abs(w - ew) < 0.011 and
                  label == fit(b.name, ew, cw) and opacity == "",
                  "zoom: %s at %r+%r %r, expected %r+%r %r" % (b.path(), x, w, label, ex, ew,
                                                                 fit(b.name, ew, cw)))
        elif above:
            check(disp == "" and abs(x - pad) < 0.011 and abs(w - width) < 0.011 and
                  opacity == "0.6",
                  "zoom: ancestor %s at %r+%r opacity %r, expected the full width, faded" %
                  (b.path(), x, w, opacity))
        else:
            check(disp == "none", "zoom: %s still shown" % (b.path(),))
    check(len(out["zoom"]) == len(boxes), "zoom: %d boxes, expected %d" % (len(out["zoom"]), len(boxes)))
    check(out["unzoom_display"] == "" and out["unzoom_after"] == "none",
          "zoom: Reset zoom shown %r, after it %r" % (out["unzoom_display"], out["unzoom_after"]))
    # reset zoom: every box where it was drawn
    for b, (disp, x, w, fill, label, opacity) in zip(boxes, out["reset"]):
        check(disp == "" and abs(x - b.px) < 0.011 and abs(w - b.pw) < 0.011 and
              label == b.label and opacity == "",
              "reset zoom: %s at %r+%r %r, drawn at %r+%r %r" % (b.path(), x, w, label, b.px, b.pw,
                                                                 b.label))
    # hover: the box's title on the details line
    title = zb.g.find(SVG + "title").text
    check(out["details"] == title.replace("\n", " \u2014 "),
          "hover: details %r, title %r" % (out["details"], title))
    # search
    rx = re.compile(regex)
    hits = [b for b in boxes if rx.search(b.name)]
    check(hits, "search: nothing matches %r" % regex)
    share, outer = 0.0, None
    for b in hits:
        if outer and b.x >= outer.x and b.x + b.v <= outer.x + outer.v and b.d > outer.d:
            continue
        outer = b
        share += b.v
    want = "Matched: %.2f%% (%d box%s)" % (100 * share / boxes[0].v, len(hits),
                                          "" if len(hits) == 1 else "es")
    check(out["matched"] == want, "search: %r, expected %r" % (out["matched"], want))
    check(out["button"] == "Reset search", "search: button %r" % out["button"])
    for b, (disp, x, w, fill, label, opacity) in zip(boxes, out["search"]):
        check(fill == (HIGHLIGHT if b in hits else b.fill),
              "search: %s filled %r" % (b.path(), fill))
    for b, (disp, x, w, fill, label, opacity) in zip(boxes, out["cleared"]):
        check(fill == b.fill, "search reset: %s filled %r" % (b.path(), fill))
    check(out["matched_after"].strip() == "", "search reset: %r" % out["matched_after"])


def record_mode(ap, views, cxx, odd):
    with tempfile.TemporaryDirectory() as tmp:
        trace = tmp + "/views.trace"
        run(ap, "record", "--all", "-o", trace, views)
        check_trace(ap, trace, "views", "make_names", "recurse")
        # C++ names: as top and pprof show them, a function by its short
        # name (one box for make_point<int> and make_point<double>);
        # markup in names is oddname's check below
        ctrace = tmp + "/cxx.trace"
        run(ap, "record", "--all", "-o", ctrace, cxx)
        data = run(ap, "flamegraph", "--min-width=0", ctrace).stdout
        _, cboxes = parse_svg(data, "cxx")
        check(any(b.name == "geo::detail::make_point" for b in cboxes),
              "cxx: no geo::detail::make_point among %r" % [b.name for b in cboxes])
        check_index(ap, ctrace, "alloc_space", "cxx")
        # A symbol with a byte that is not UTF-8, a control character and
        # markup: well-formed XML and JSON, U+FFFD for what XML cannot hold.
        otrace = tmp + "/odd.trace"
        run(ap, "record", "--all", "-o", otrace, odd)
        _, oboxes = parse_svg(run(ap, "flamegraph", otrace).stdout, "oddname")
        odd_name = "odd\ufffd<&>\ufffdname"  # (the debug info quotes it)
        check([b.v for b in oboxes if odd_name in b.name] == [100.0],
              "oddname: boxes %r" % [(b.name, b.v) for b in oboxes])
        names = []

        def walk(n):
            names.append(n["name"])
            for c in n["children"]:
                walk(c)
        walk(json.loads(run(ap, "flamegraph", "--json", otrace).stdout)["root"])
        check(any(odd_name in n for n in names), "oddname: --json names %r" % names)

        svg = tmp + "/views.svg"
        run(ap, "flamegraph", "--min-width=0", "-o", svg, trace)
        shot = tmp + "/views.png"
        chromium(tmp, "--screenshot=" + shot, "--window-size=1200,800", "file://" + svg)
        png = open(shot, "rb").read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000,
              "chromium: no screenshot (%d bytes)" % len(png))
        if os.environ.get("FLAMEGRAPH_SHOTS"):
            shutil.copy(shot, os.environ["FLAMEGRAPH_SHOTS"])
        check_script(svg, tmp, "recurse", "^make_")


def main():
    ap = sys.argv[1]
    if sys.argv[2] == "--record":
        record_mode(ap, *sys.argv[3:6])
    else:
        fixture_mode(ap, sys.argv[2])
    for f in failures[:40]:
        print("FAIL", f)
    if len(failures) > 40:
        print("... and %d more" % (len(failures) - 40))
    sys.exit(1 if failures else 0)


main()
