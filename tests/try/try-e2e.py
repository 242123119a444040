#!/usr/bin/env python3
"""End-to-end checks of `allocprof try`.

usage: try-e2e.py semantics SEMANTICS
       try-e2e.py libmoves LIBMOVES
       try-e2e.py unreached SEMANTICS
       try-e2e.py twin PLAIN TWIN SITE ARG
       try-e2e.py twin-cxx SRCDIR
       try-e2e.py dlopen DLOPEN_MAIN LIBDLALLOC
       try-e2e.py refuse-asan SEMANTICS SANITIZED
       try-e2e.py refuse-preload SEMANTICS FAKEMALLOC_SO
       try-e2e.py refuse-own SEMANTICS OWNMALLOC
       try-e2e.py refuse-static SEMANTICS STATIC
       try-e2e.py python3
       try-e2e.py python3-threads
       try-e2e.py python3-exit
       try-e2e.py sqlite3

semantics: SEMANTICS (tests/try/semantics.c) recorded with --all, then
run by try with its five sites pooled: every run's output is the
baseline's (the program checks sizes, alignment, calloc zeroing after a
dirty reuse, realloc in place and beyond the capacity, cross-thread frees
and fork from a thread while others churn, and prints FAIL otherwise; run
with `vfork`, after a vfork child that ends by _exit),
and every site really was served from the pool (hits > 0); the counts of
the sites whose requests do not depend on alignment or size classes equal
advise's.

libmoves: LIBMOVES (tests/try/libmoves.c) does its work only when try's
library is not loaded, as bench/twins' chan runs cheaper with the
library alone: try runs the program as it is beside its baseline and
pooled runs (each round once: the program's log of its runs says which
had the library), gives the library's effect (the baseline less the
program, here the work's: below zero) and the pooled run against the
program, says that the baseline does not stand for the program (the
library's effect is half the saving against it or more) and takes its
verdict from what the two savings agree on; the text says so.
In every test that reads try's JSON, its verdict follows that rule from
its own figures.

unreached: a site the run never reaches (SEMANTICS noalign skips
align_site) is reported, one line, exit status 1.

twin-cxx: the same for bench/twins/packets.cpp (built here with g++):
its site is a C++ `new`, which try finds by interposing operator new.

dlopen: a site in a library the program loads after start
(testdata/dlopen_main and libdlalloc.so) is found once it is loaded.

twin: PLAIN recorded with --all, try pools SITE: the allocations and bytes
it avoided equal, within 1%, what the hand-pooled TWIN avoids (allocprof
stats --json of PLAIN's and TWIN's --all traces); output identical.

refuse-*: one line `allocprof: try: ...: <why>` and exit status 1 for a
sanitizer build, another malloc preloaded (jemalloc, and FAKEMALLOC_SO),
a program with its own malloc, a static program.

python3: /usr/bin/python3 (PYTHONMALLOC=malloc) on a small script: output
identical, and each pooled site's requests, hits, allocations and bytes
avoided equal advise's (held peak within 1%). Where counts must equal
advise's (semantics, python3, python3-exit, sqlite3), the recording and
try's runs are on one CPU (one_cpu).

python3-exit: the same script ending by os._exit(0): the counts come all
the same (the library writes them in _exit).

python3-threads: the same, four threads allocating at once: output
identical, requests equal advise's, hits within 30% (which thread runs
when, and on which CPU, decides hits; the model replays the recorded
order).

sqlite3: /usr/bin/sqlite3 on an in-memory database: its sites are all
reached through libsqlite3 (the library walks the stack); output
identical, requests and hits equal advise's.

Environment: ALLOCPROF (the allocprof binary), ALLOCPROF_TEST_COSTS.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ALLOCPROF = os.environ["ALLOCPROF"]
TMP = tempfile.mkdtemp(prefix="try-e2e-")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(trace, argv, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    r = subprocess.run([ALLOCPROF, "record", "--all", "-q", "--no-children", "-o", trace] + argv,
                       env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail("record %s: %s" % (argv, r.stderr))


def run_try(args, env=None, expect=0):
    e = dict(os.environ)
    if env:
        e.update(env)
    r = subprocess.run([ALLOCPROF, "try", "--no-measure"] + args, env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect is not None and r.returncode != expect:
        fail("try %s: exit %d, wanted %d\nstdout: %s\nstderr: %s" %
             (args, r.returncode, expect, r.stdout, r.stderr))
    return r


def one_cpu():
    """This process and its children on one CPU. The pool's P is the CPU a
    call runs on: try's at the call (sched_getcpu), advise's the CPU the
    trace recorded for it. A thread moved to the other CPU at another
    moment of the run under try than of the recorded one finds other
    objects in its P (a steal gives another's): the same hits, but one
    of them too small under try and big enough in the replay (python3:
    20,052 allocations avoided, advise 20,053, once on a loaded machine).
    On one CPU both runs have the same Ps, and the counts are equal."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def advise(trace, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    r = subprocess.run([ALLOCPROF, "advise", "--no-measure", "--json", "-n", "0", trace], env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    return {s["site"]: s for s in json.loads(r.stdout)["sites"]}


def stats(trace):
    r = subprocess.run([ALLOCPROF, "stats", "--json", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=True)
    return json.loads(r.stdout)


def within(a, b, rel):
    return abs(a - b) <= rel * max(abs(b), 1)


def sign(lo, hi, conf=1.0):
    # (an interval under 90 % confidence, 2 to 4 rounds: no verdict)
    if conf < 0.9:
        return "no verdict"
    return "saves" if lo > 0 else "costs more" if hi < 0 else "within noise"


def check_verdict(j, s):
    """s's measured verdict follows try's rule from the JSON's own figures:
    the baseline stands for the program while the library alone moves it
    by less than half the saving against the baseline; then the verdict
    is that saving's, else what it and the saving against the program
    agree on (within noise when they do not)."""
    lib = j["library_alone"]["cpu_ns"]
    p = s["against_program"]
    for o in (s, p):
        if not o["time_saved_low_ns"] <= o["time_saved_ns"] <= o["time_saved_high_ns"]:
            fail("a saving outside its interval: %r" % o)
    lo, hi = j["library_alone"]["cpu_low_ns"], j["library_alone"]["cpu_high_ns"]
    if not lo <= lib <= hi:
        fail("the library's effect outside its interval: %r" % j["library_alone"])
    stands = abs(lib) < abs(s["time_saved_ns"]) / 2
    if s["baseline_stands_for_program"] != stands:
        fail("baseline_stands_for_program %r, but the library alone moves the program by %d ns "
             "and the saving is %d ns" % (s["baseline_stands_for_program"], lib, s["time_saved_ns"]))
    vb = sign(s["time_saved_low_ns"], s["time_saved_high_ns"], s["confidence"])
    vp = sign(p["time_saved_low_ns"], p["time_saved_high_ns"], p["confidence"])
    want = vb if stands or vb == vp or vb == "no verdict" else "within noise"
    if j["rounds"] < 2:
        want = "no verdict"
    if s["measured_verdict"] != want:
        fail("measured_verdict %r, the rule says %r: %r" % (s["measured_verdict"], want, s))
    if s["within_noise"] != (want == "within noise"):
        fail("within_noise disagrees with the verdict: %r" % s)
    if s["verdict_from"] != ("baseline" if stands else "baseline and program"):
        fail("verdict_from %r, the baseline %s" % (s["verdict_from"], "stands" if stands else "does not stand"))
    return stands


def libmoves(prog):
    trace = os.path.join(TMP, "lm.trace")
    log = os.path.join(TMP, "lm.log")
    record(trace, [prog])
    env = {"LIBMOVES_LOG": log}
    j = json.loads(run_try(["--runs", "3", "--json", "--site", "item_new", trace], env).stdout)
    runs = open(log).read().split()
    # 3 rounds: the program as it is 3 times, the baseline and the pooled run 3 times each
    if runs.count("program") != 3 or runs.count("library") != 6:
        fail("runs without the library %d, with %d; wanted 3 and 6" %
             (runs.count("program"), runs.count("library")))
    if j["output_identical"] is not True:
        fail("output changed: %s" % j.get("output_difference"))
    for k in ("cpu_ns", "wall_ns", "minor_faults"):
        if not isinstance(j["program"].get(k), int) or j["program"][k] <= 0:
            fail("program: %s %r" % (k, j["program"].get(k)))
    if "allocator_calls" in j["program"] or j["program"]["peak_rss_bytes"] is not None:
        fail("program: figures only the library gives: %r" % j["program"])
    s = j["sites"][0]
    lib = j["library_alone"]["cpu_ns"]
    print("the library alone %d ns [%d, %d]; saved %d ns against the baseline, %d against the program: %s" %
          (lib, j["library_alone"]["cpu_low_ns"], j["library_alone"]["cpu_high_ns"], s["time_saved_ns"],
           s["against_program"]["time_saved_ns"], s["measured_verdict"]))
    # the program's work is not done where the library is: the baseline
    # is the cheaper, by the work (a hundred million adds)
    if lib >= 0:
        fail("the library alone: %d ns, the work the program does without it not seen" % lib)
    if check_verdict(j, s):
        fail("the baseline said to stand for the program: %r" % s)
    if s["hits"] <= 0:
        fail("no hits: %r" % s)
    r = run_try(["--runs", "2", "--site", "item_new", trace])
    out = r.stdout.splitlines()
    for w in ("Runs: 2 rounds of the program, the baseline and 1 pooled variant, interleaved (6 runs)",
              "Program without the library (medians): CPU "):
        if not any(l.startswith(w) for l in out):
            fail("text: no line %r in %r" % (w, r.stdout))
    said = [l for l in out if l.startswith("  the library alone moves the program by as much as the saving")]
    if len(said) != 1 or "less than the program's" not in said[0]:
        fail("text: not said that the library alone moves the program: %r" % r.stdout)
    if not any(l.startswith("  against the program ") for l in out) or \
            not any(l.startswith("  => ") for l in out):
        fail("text: no saving against the program, or no verdict: %r" % r.stdout)
    print("ok: the baseline does not stand for the program; verdict %s" % s["measured_verdict"])


def semantics(prog):
    one_cpu()
    trace = os.path.join(TMP, "sem.trace")
    record(trace, [prog, "all"])
    names = ["buf_site", "zero_site", "align_site", "memalign_site", "node_site"]
    args = ["--runs", "2", "--json"]
    for n in names:
        args += ["--site", n]
    # run after a vfork child's _exit: the counts must still be the parent's
    r = run_try(args + [trace, "--", prog, "vfork"])
    j = json.loads(r.stdout)
    if j["output_identical"] is not True:
        fail("output changed under the pool: %s" % j.get("output_difference"))
    # every run looks up and counts every site tried, pooled or not (the
    # same bookkeeping, stack walks included): each pooled run's other
    # sites make the baseline's requests
    if j["same_requests"] is not True:
        fail("a pooled run's other sites did not count the baseline's requests")
    ad = advise(trace)
    for s in j["sites"]:
        if s["hits"] <= 0 or s["allocs_avoided"] <= 0:
            fail("%s: no hits (%d) under the pool" % (s["site"], s["hits"]))
        # zero_site, node_site: requests whatever the pool holds
        fn = s["site"].split()[0]
        if fn in ("zero_site",):
            a = ad[s["site"]]
            for k in ("hits", "allocs_avoided", "bytes_avoided"):
                if s[k] != a[k]:
                    fail("%s: %s %d, advise %d" % (s["site"], k, s[k], a[k]))
        if fn == "buf_site" and s["reallocs"] != 300:
            fail("buf_site: %d reallocs, wanted 300" % s["reallocs"])
        if fn == "buf_site" and s["reallocs_avoided"] != 100:
            fail("buf_site: %d reallocs in place, wanted 100 (the shrinks)" % s["reallocs_avoided"])
    # the text: a section per site, measured beside predicted, a verdict line
    r = run_try(["--runs", "1", "--site", "zero_site", trace])
    out = r.stdout.splitlines()
    z = next(x for x in j["sites"] if x["site"].startswith("zero_site"))
    want = ["Output: identical in every run (standard output, standard error, exit status)", z["site"]]
    for w in want:
        if w not in out:
            fail("text: no line %r in %r" % (w, r.stdout))
    rows = {l.split()[0] + " " + l.split()[1]: l.split()[2:] for l in out if l.startswith("  allocations avoided")}
    if rows.get("allocations avoided") != ["{:,}".format(z["allocs_avoided"])] * 2:
        fail("text: allocations avoided row %r, want %d twice" % (rows, z["allocs_avoided"]))
    if not any(l.startswith("  => ") for l in out):
        fail("text: no verdict line in %r" % r.stdout)
    # one round gives no interval ([x, x], 0% confidence): no saving or
    # cost is claimed from it
    if any(l.startswith("  => the pool ") for l in out) or \
            "  => one round, no interval: no verdict (--runs 6 or more give a 95% interval)" not in out:
        fail("text: one round, and a verdict: %r" % r.stdout)
    # two rounds: a 50% interval, too few for a verdict (it gave one)
    r = run_try(["--runs", "2", "--site", "zero_site", trace])
    out = r.stdout.splitlines()
    if any(l.startswith("  => the pool ") or l.startswith("  => within noise") for l in out) or \
            "  => 2 rounds, a 50% interval: too few for a verdict (--runs 6 or more give a 95% interval)" not in out:
        fail("text: two rounds, and a verdict: %r" % r.stdout)
    print("ok: %d sites pooled, output identical" % len(j["sites"]))


def unreached(prog):
    trace = os.path.join(TMP, "sem.trace")
    record(trace, [prog, "all"])
    r = run_try(["--runs", "1", "--site", "align_site", "--site", "buf_site", trace, "--", prog, "noalign"],
                expect=1)
    lines = [l for l in r.stderr.splitlines() if l.startswith("allocprof: try:")]
    if len(lines) != 1 or "align_site" not in lines[0] or "never reached" not in lines[0]:
        fail("wanted one line saying align_site was never reached, got: %r" % r.stderr)
    if "buf_site" in r.stderr:
        fail("buf_site was reached: %r" % r.stderr)
    print("ok:", lines[0])


def twin(plain, tw, site, arg):
    trace = os.path.join(TMP, "plain.trace")
    ttrace = os.path.join(TMP, "twin.trace")
    record(trace, [plain, arg])
    record(ttrace, [tw, arg])
    r = run_try(["--runs", "2", "--json", "--site", site, trace])
    j = json.loads(r.stdout)
    if j["output_identical"] is not True:
        fail("output changed under the pool: %s" % j.get("output_difference"))
    s = j["sites"][0]
    a, b = stats(trace), stats(ttrace)
    calls = a["alloc_objects"] - b["alloc_objects"]
    space = a["alloc_space"] - b["alloc_space"]
    print("try avoided %d allocations, %d bytes; the twin %d, %d" %
          (s["allocs_avoided"], s["bytes_avoided"], calls, space))
    if not within(s["allocs_avoided"], calls, 0.01):
        fail("allocations avoided %d, the twin's %d" % (s["allocs_avoided"], calls))
    if not within(s["bytes_avoided"], space, 0.01):
        fail("bytes avoided %d, the twin's %d" % (s["bytes_avoided"], space))
    # the keys issue 23 names; times are timing-dependent: types and order only
    for k in ("time_saved_ns", "time_saved_low_ns", "time_saved_high_ns", "predicted_time_saved_ns",
              "allocs_avoided", "bytes_avoided"):
        if not isinstance(s[k], int):
            fail("%s: not an integer: %r" % (k, s[k]))
    check_verdict(j, s)
    if not isinstance(s["site"], str) or s["output_identical"] is not True:
        fail("site or output_identical: %r" % s)
    print("ok")


def twin_cxx(src):
    # bench/twins/packets.cpp: C++ `new` at the site (try's operator new)
    gxx, gcc = shutil.which("g++"), shutil.which("gcc")
    if not gxx or not gcc:
        fail("g++ and gcc are needed (make deps installs them)")
    tw = os.path.join(src, "bench", "twins")
    inc = ["-I" + tw, "-I" + os.path.join(src, "pool"), "-D_GNU_SOURCE", "-O2", "-g"]
    plain, twin_exe = os.path.join(TMP, "packets"), os.path.join(TMP, "packets.twin")
    shim = os.path.join(TMP, "cxxshim.o")
    for argv in ([gxx, "-std=c++17"] + inc + ["-o", plain, os.path.join(tw, "packets.cpp")],
                 [gcc, "-std=c11"] + inc + ["-DTWIN", "-c", "-o", shim, os.path.join(tw, "cxxshim.c")],
                 [gxx, "-std=c++17"] + inc + ["-DTWIN", "-o", twin_exe, os.path.join(tw, "packets.cpp"),
                                              shim, "-pthread"]):
        subprocess.run(argv, check=True)
    twin(plain, twin_exe, "handle", "20000")


def cxx_growth(src):
    # bench/twins/strcat.cpp: std::string grown by appends, whose blocks
    # libstdc++ allocates (its operator new, from _M_create): the site is
    # the program's line above, reached by walking the stack from
    # libstdc++'s call of operator new, which try interposes
    gxx = shutil.which("g++")
    if not gxx:
        fail("g++ is needed (make deps installs it)")
    tw = os.path.join(src, "bench", "twins")
    prog = os.path.join(TMP, "strcat")
    subprocess.run([gxx, "-std=c++17", "-O2", "-g", "-I" + tw, "-o", prog,
                    os.path.join(tw, "strcat.cpp")], check=True)
    trace = os.path.join(TMP, "strcat.trace")
    record(trace, [prog, "3000"])
    sites = advise(trace).values()
    top = max((s for s in sites if s["function"] == "format_line"), key=lambda s: s["gets"])
    r = run_try(["--runs", "1", "--no-measure", "--json", "--site", str(top["site_id"]), trace])
    s = json.loads(r.stdout)["sites"][0]
    print("%s: try %d requests, %d allocations avoided; advise %d gets, %d avoided" %
          (top["site"], s["requests"], s["allocs_avoided"], top["gets"], s["predicted_allocs_avoided"]))
    if s["requests"] != top["gets"] or not within(s["allocs_avoided"], s["predicted_allocs_avoided"], 0.02):
        fail("the site's requests or allocations avoided differ from advise's: %r" % s)
    # the strings grow by copy: advise's pool is of the strings, which
    # try cannot make: named, tried with a note; by default, not tried
    if top["growth_by_copy_share"] != 1 or "grow by copy" not in r.stderr:
        fail("no note that %s's objects grow by copy: share %s, stderr %r" % (
            top["site"], top["growth_by_copy_share"], r.stderr))
    r = run_try(["--runs", "1", trace], expect=1)
    if "not tried" not in r.stderr or "grow by copy" not in r.stderr or r.stdout:
        fail("by default: %r, %r" % (r.stdout, r.stderr))
    print("ok")


def dlopen(main, lib):
    # the site is in a library loaded after start: found after the dlopen
    trace = os.path.join(TMP, "dl.trace")
    record(trace, [main, lib, "1000"])
    j = json.loads(run_try(["--runs", "1", "--json", "--site", "lib_make_item", trace]).stdout)
    s = j["sites"][0]
    if j["output_identical"] is not True or s["requests"] != 1000:
        fail("lib_make_item: %d requests (wanted 1000), output identical %s" %
             (s["requests"], j["output_identical"]))
    print("ok: 1000 requests in a library dlopened after start")


def one_refusal(r, want):
    lines = r.stderr.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("allocprof: try: ") or want not in lines[0]:
        fail("wanted one line with %r, got %r" % (want, r.stderr))
    if r.stdout:
        fail("a refusal printed a report: %r" % r.stdout)
    print("ok:", lines[0])


def refuse_asan(sem, asan):
    trace = os.path.join(TMP, "sem.trace")
    record(trace, [sem, "all"])
    one_refusal(run_try(["--site", "buf_site", trace, "--", asan], expect=1), "built with a sanitizer")


def refuse_preload(sem, so):
    trace = os.path.join(TMP, "sem.trace")
    record(trace, [sem, "all"])
    # jemalloc (libjemalloc2, which make check installs), and a malloc of
    # our own that forwards to glibc's
    jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    if not os.path.exists(jemalloc):
        fail("%s: not installed (make check installs libjemalloc2)" % jemalloc)
    for lib in (jemalloc, so):
        one_refusal(run_try(["--site", "buf_site", trace], env={"LD_PRELOAD": lib}, expect=1),
                    "another allocator is preloaded")


def refuse_own(sem, own):
    # try cannot see it before the run (the program's malloc is in the
    # program): the library finds it at start and stands aside
    trace = os.path.join(TMP, "sem.trace")
    record(trace, [sem, "all"])
    one_refusal(run_try(["--site", "buf_site", trace, "--", own], expect=1), "its malloc is")


def refuse_static(sem, static):
    trace = os.path.join(TMP, "sem.trace")
    record(trace, [sem, "all"])
    one_refusal(run_try(["--site", "buf_site", trace, "--", static], expect=1), "statically linked")


PY_SCRIPT = """
d = {}
for i in range(20000):
    d[str(i)] = [i] * 3
    if i % 3 == 0:
        del d[str(i // 2)]
print(len(d), sum(len(v) for v in d.values()))
"""


def try_top(trace, env=None):
    """try on the three sites of trace with the most requests: advise's
    sites, and try's JSON (its output identical, or a failure)."""
    ad = advise(trace, env)
    top = sorted(ad.values(), key=lambda s: -s["gets"])[:3]
    args = ["--runs", "2", "--json"]
    for s in top:
        args += ["--site", str(s["site_id"])]
    j = json.loads(run_try(args + [trace], env).stdout)
    if j["output_identical"] is not True:
        fail("the output changed under the pool: %s" % j.get("output_difference"))
    return ad, j


def python3():
    one_cpu()
    env = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}
    trace = os.path.join(TMP, "py.trace")
    record(trace, ["/usr/bin/python3", "-c", PY_SCRIPT], env)
    ad, j = try_top(trace, env)
    for s in j["sites"]:
        a = ad[s["site"]]
        for k in ("requests", "hits", "allocs_avoided", "bytes_avoided"):
            ak = "gets" if k == "requests" else k
            if s[k] != a[ak]:
                fail("%s: %s %d, advise %d" % (s["site"], k, s[k], a[ak]))
        if not within(s["held_peak_bytes"], a["peak_held_bytes"], 0.01):
            fail("%s: held peak %d, advise %d" % (s["site"], s["held_peak_bytes"], a["peak_held_bytes"]))
        print("ok: %s: %d hits, %d allocations avoided, as advise" % (s["site"], s["hits"], s["allocs_avoided"]))


SQL = ("create table t(a, b); with recursive c(x) as (select 1 union all select x + 1 from c "
       "where x < 5000) insert into t select x, hex(randomblob(20)) from c; "
       "select count(*), sum(length(b)) from t; create index i on t(b); "
       "select count(*) from t where a % 7 = 3;")


def python3_exit():
    one_cpu()
    # os._exit: no destructor runs; the library writes its counts in _exit
    env = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}
    trace = os.path.join(TMP, "pyx.trace")
    script = PY_SCRIPT + "import os, sys\nsys.stdout.flush()\nos._exit(0)\n"
    record(trace, ["/usr/bin/python3", "-c", script], env)
    ad, j = try_top(trace, env)
    for s in j["sites"]:
        if s["requests"] != ad[s["site"]]["gets"]:
            fail("%s: %d requests, advise %d" % (s["site"], s["requests"], ad[s["site"]]["gets"]))
    print("ok: counts from a program that ends by _exit")


PY_THREADS = """
import threading
out = [0] * 4
def work(k):
    d = {}
    for i in range(15000):
        d[str(i * 7 + k)] = [i, k]
        if i % 2:
            del d[str((i // 2) * 7 + k)]
    out[k] = len(d)
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(out)
"""


def python3_threads():
    env = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}
    trace = os.path.join(TMP, "pyt.trace")
    record(trace, ["/usr/bin/python3", "-c", PY_THREADS], env)
    ad, j = try_top(trace, env)
    for s in j["sites"]:
        a = ad[s["site"]]
        # which thread runs when decides hits: requests are the work's
        if s["requests"] != a["gets"]:
            fail("%s: %d requests, advise %d" % (s["site"], s["requests"], a["gets"]))
        if a["hits"] > 100 and not within(s["hits"], a["hits"], 0.3):
            fail("%s: %d hits, advise %d" % (s["site"], s["hits"], a["hits"]))
        print("ok: %s: %d requests, %d hits (advise %d)" % (s["site"], s["requests"], s["hits"], a["hits"]))


def sqlite3():
    one_cpu()
    if not shutil.which("sqlite3"):
        fail("sqlite3: not installed (make check installs it)")
    trace = os.path.join(TMP, "sq.trace")
    record(trace, ["/usr/bin/sqlite3", ":memory:", SQL])
    ad, j = try_top(trace)
    for s in j["sites"]:
        a = ad[s["site"]]
        if s["requests"] != a["gets"]:
            fail("%s: %d requests, advise %d" % (s["site"], s["requests"], a["gets"]))
        if s["hits"] != a["hits"]:
            fail("%s: %d hits, advise %d" % (s["site"], s["hits"], a["hits"]))
        print("ok: %s: %d requests, %d hits (advise %d)" % (s["site"], s["requests"], s["hits"], a["hits"]))
    # sites reached through the library are found by walking the stack
    # (libunwind), whose signal masks try's library does not make: each
    # unmask let the thread take a signal meant for another (1,988 calls
    # for these three sites and one round, 28 now, try's own included)
    strace = shutil.which("strace")
    if not strace:
        fail("strace: not installed (make check installs it)")
    walked = [s for s in ad.values() if "(via " in s["site"]]
    if not walked:
        fail("sqlite3: no site reached through a library: %r" % list(ad))
    st = os.path.join(TMP, "st.txt")
    args = ["--runs", "1", "--no-measure"]
    for s in sorted(ad.values(), key=lambda s: -s["gets"])[:3] + walked[:1]:
        args += ["--site", str(s["site_id"])]
    subprocess.run([strace, "-f", "-qq", "-o", st, "-e", "trace=rt_sigprocmask", ALLOCPROF,
                    "try"] + args + [trace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    with open(st) as f:
        masks = sum("rt_sigprocmask(SIG_" in line for line in f)
    if masks > 200:
        fail("try's runs set the signal mask %d times (libunwind's masks)" % masks)
    print("ok: %d signal-mask calls in try's runs, walks included" % masks)


def stopped():
    """SIGTERM or SIGINT sent to try alone while the program runs: the
    program gets it too, try waits for it, removes its scratch directory
    and dies of the same signal."""
    import signal
    import time
    script = ("import os, time\nx = [str(i) * 3 for i in range(50000)]\nm = os.environ.get('MARK')\n"
              "if m:\n    open(m, 'w').write(str(os.getpid()))\n    time.sleep(60)\n")
    trace = os.path.join(TMP, "stop.trace")
    env = {"PYTHONMALLOC": "malloc"}
    record(trace, ["/usr/bin/python3", "-c", script], env)
    site = max(advise(trace, env).values(), key=lambda s: s["gets"])["site"]
    for sig in (signal.SIGTERM, signal.SIGINT):
        scratch = os.path.join(TMP, "scratch-%d" % sig)
        os.mkdir(scratch)
        mark = os.path.join(TMP, "mark-%d" % sig)
        e = dict(os.environ, TMPDIR=scratch, MARK=mark, **env)
        p = subprocess.Popen([ALLOCPROF, "try", "--no-measure", "--runs", "3", "--site", site, trace],
                             env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        for _ in range(600):
            if os.path.exists(mark) and os.path.getsize(mark):
                break
            time.sleep(0.05)
        else:
            p.kill()
            fail("the program never ran under try: %s" % p.communicate()[1])
        child = int(open(mark).read())
        t0 = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
        if p.returncode != -sig:
            fail("try after %s: exit %d, wanted death by the signal\n%s" % (sig.name, p.returncode, err))
        if os.path.exists("/proc/%d" % child):
            fail("%s: the program (pid %d) outlived try" % (sig.name, child))
        left = os.listdir(scratch)
        if left:
            fail("%s: try left %s in TMPDIR" % (sig.name, left))
        print("ok: %s: try died of it in %.1fs, the program with it, nothing left" % (sig.name, took))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    try:
        {
            "semantics": semantics,
            "libmoves": libmoves,
            "unreached": unreached,
            "dlopen": dlopen,
            "twin": twin,
            "twin-cxx": twin_cxx,
            "cxx-growth": cxx_growth,
            "refuse-asan": refuse_asan,
            "refuse-preload": refuse_preload,
            "refuse-own": refuse_own,
            "refuse-static": refuse_static,
            "python3": python3,
            "sqlite3": sqlite3,
            "python3-threads": python3_threads,
            "python3-exit": python3_exit,
            "stopped": stopped,
        }[cmd](*args)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
