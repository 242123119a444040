"""bench/twins/summarize.py: the statistics and tables of bench/twins/run.sh.

  summarize.py --one DIR PROGRAM SOURCE      one program's block of text
  summarize.py --table DIR RUNS PROGRAM...   the summary table
  summarize.py --json DIR RUNS PROGRAM...    everything, as JSON

DIR holds, per program, PROGRAM.times (lines "round plain|twin user_us
sys_us wall_us minflt maxrss_kb status", written by run.sh from runstat)
and PROGRAM.advise.json (allocprof advise --json -n 0 of its --all trace).
"""
import json
import math
import os
import re
import statistics
import sys

METRICS = (  # key, label, unit, from a runstat line
    ("cpu_ms", "CPU time", "ms", lambda u, s, w, f, m: (u + s) / 1000.0),
    ("wall_ms", "wall time", "ms", lambda u, s, w, f, m: w / 1000.0),
    ("minflt", "minor faults", "", lambda u, s, w, f, m: float(f)),
    ("maxrss_kib", "max RSS", "KiB", lambda u, s, w, f, m: float(m)),
)


def sign_interval(d):
    """A distribution-free interval for the median of d: the order
    statistics x[j] .. x[n-1-j] of the sign test, whose coverage is
    1 - 2 P(Bin(n, 1/2) <= j); the narrowest with at least 95%. With fewer
    than 6 values not even the range reaches 95%: then the range, with its
    coverage. Returns (low, high, coverage)."""
    x = sorted(d)
    n = len(x)

    def cover(j):
        return 1 - 2 * sum(math.comb(n, i) for i in range(j + 1)) / 2.0**n

    j = 0
    while j + 1 <= (n - 1) // 2 and cover(j + 1) >= 0.95:
        j += 1
    return x[j], x[n - 1 - j], cover(j)


def load_times(d, p):
    runs = {}
    bad = []
    with open(os.path.join(d, p + ".times")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[2] == "output-differs":
                bad.append((int(w[0]), w[1]))
                continue
            if len(w) < 8:
                continue
            r, kind = int(w[0]), w[1]
            u, s, wall, flt, rss, code = (int(v) for v in w[2:8])
            runs.setdefault(r, {})[kind] = {
                "values": {k: fn(u, s, wall, flt, rss) for k, _, _, fn in METRICS},
                "status": code,
            }
    return runs, bad


def stats(d, p):
    runs, bad = load_times(d, p)
    rounds = sorted(r for r in runs if "plain" in runs[r] and "twin" in runs[r])
    res = {"rounds": len(rounds), "outputs_identical": not bad,
           "failed_runs": sum(1 for r in runs for k in runs[r] if runs[r][k]["status"])}
    for key, _, _, _ in METRICS:
        pl = [runs[r]["plain"]["values"][key] for r in rounds]
        tw = [runs[r]["twin"]["values"][key] for r in rounds]
        diff = [a - b for a, b in zip(pl, tw)]
        m = {"plain": pl, "twin": tw}
        if rounds:
            lo, hi, cov = sign_interval(diff)
            m.update(plain_median=statistics.median(pl), twin_median=statistics.median(tw),
                     saving_median=statistics.median(diff), saving_low=lo, saving_high=hi,
                     coverage=cov)
            if len(diff) >= 2:  # for reference: the t interval of the mean difference
                sd = statistics.stdev(diff)
                m["saving_mean"] = statistics.mean(diff)
                m["saving_mean_sd"] = sd
        res[key] = m
    c = res["cpu_ms"]
    if rounds and c["plain_median"] > 0:
        res["saving_pct_of_cpu"] = 100.0 * c["saving_median"] / c["plain_median"]
    return res


def site_name(src):
    with open(src) as f:
        for line in f:
            m = re.match(r"// site: (\S+)", line)
            if m:
                return m.group(1)
    return None


def advise_recordings(d, p, fn):
    """The site's verdict and time saved in every recording's advise
    (PROGRAM.advise.json, PROGRAM.advise.2.json, ...)."""
    out = []
    i = 1
    while True:
        path = os.path.join(d, p + (".advise.json" if i == 1 else ".advise.%d.json" % i))
        if not os.path.exists(path):
            return out
        a = advise_for(d, p, fn, path)
        if a and a["found"]:
            r = {"verdict_text": a["verdict_text"], "time_saved_ns": a["time_saved_ns"],
                 "time_source": a.get("time_source")}
            if "measured" in a:
                r["measured"] = a["measured"]
                fl = freelist_of(a)
                if fl is not None:
                    r["freelist" if beside_label(a) == "free list" else "vpool_beside"] = fl
            out.append(r)
        else:
            out.append(None)
        i += 1


def advise_for(d, p, fn, path=None):
    path = path or os.path.join(d, p + ".advise.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        a = json.load(f)
    # A C++ function returning a std::string (or a type holding one) has
    # an ABI tag in its name (split_line[abi:cxx11]): the `// site:` line
    # names the function as its source does.
    sites = [s for s in a.get("sites", []) if re.sub(r"\[abi:[^]]*\]", "", s.get("function") or "") == fn]
    out = {"found": bool(sites), "sites_in_trace": len(a.get("sites", []))}
    if not sites:
        return out
    # The call site where the function's objects are born first (a function
    # may allocate at several lines; where its objects grow by realloc or
    # by copy, those lines are not where they are born), then the biggest.
    sites.sort(key=lambda s: (-(s.get("gets") or 0), -s.get("alloc_space", 0)))
    s = sites[0]
    out.update({k: s.get(k) for k in ("site", "verdict", "verdict_text", "time_saved_ns", "gets",
                                         "hits", "hit_rate", "allocs_avoided", "peak_held_bytes",
                                         "alloc_objects", "alloc_space", "reallocs",
                                         "reasons", "time_source", "time_saved_low_ns",
                                         "time_saved_high_ns", "model_time_saved_ns")})
    if "measured" in s:
        out["measured"] = s["measured"]
        fl = freelist_of(s)
        if fl is not None:
            # (saving, low, high) in ms, or why not measured: the
            # free list beside vpool, or vpool beside a Rust site's list
            out["freelist" if beside_label(s) == "free list" else "vpool_beside"] = fl
    if len(sites) > 1:
        out["other_sites"] = [{"site": x.get("site"), "verdict": x.get("verdict"),
                               "time_saved_ns": x.get("time_saved_ns")} for x in sites[1:]]
    # An object graph rooted in the function, measured pooled whole
    # (advise's `graphs`): what a twin that pools the function's objects
    # whole (ctxgraph) is beside.
    for g in a.get("graphs") or []:
        root = re.sub(r"\[abi:[^]]*\]", "", (g.get("root") or "").split(" ")[0])
        if root == fn and g.get("time_saved_ns") is not None:
            out["graph"] = {"root": g["root"], "verdict": g.get("verdict"),
                            "members": len(g.get("members") or []),
                            "time_saved_ns": g["time_saved_ns"],
                            "time_saved_low_ns": g.get("time_saved_low_ns"),
                            "time_saved_high_ns": g.get("time_saved_high_ns")}
            break
    for k in ("gc", "procs", "one_p", "total_alloc_objects", "program_cpu_ns",
              "program_cpu_est_ns", "measurement"):
        if k in a:
            out["trace_" + k] = a[k]
    return out


def measured_saved_ms(m):
    """The measured saving in ms, if the `measured` object has a number
    under a key with "saved" in its name (ns unless the key ends in _ms
    or _us), else None."""
    if not isinstance(m, dict):
        return None
    for k in sorted(m):
        v = m[k]
        if "saved" in k and isinstance(v, (int, float)) and not isinstance(v, bool):
            if k.endswith("_ms"):
                return float(v)
            if k.endswith("_us"):
                return v / 1e3
            return v / 1e6
    return None


def beside_label(a):
    """What advise measured beside the site's verdict: a free list of
    each thread's own, or at a Rust site (`measured.pool` "free list",
    whose verdict is the list's) vpool."""
    m = (a or {}).get("measured")
    return "vpool" if isinstance(m, dict) and m.get("pool") == "free list" else "free list"


def freelist_of(a):
    """advise's measurement beside the site's verdict (beside_label): a
    free list of each thread's own (`measured.freelist`), or at a Rust
    site vpool (`measured.vpool`): (saving, low, high) in ms, or the
    reason it was not measured (`measured.freelist_why`, `vpool_why`:
    crosses threads, budget, not measured), or None from an advise
    before it."""
    m = (a or {}).get("measured")
    key = "vpool" if beside_label(a) == "vpool" else "freelist"
    if not isinstance(m, dict) or key not in m:
        return None
    f = m[key]
    if not isinstance(f, dict):
        return m.get(key + "_why") or "not measured"
    return (f["time_saved_ns"] / 1e6, f["time_saved_low_ns"] / 1e6, f["time_saved_high_ns"] / 1e6)


def program(d, p, src):
    r = {"program": p, "site": site_name(src), "threaded": False}
    with open(src) as f:
        r["threaded"] = any(line.startswith("// threaded") for line in f)
    r.update(stats(d, p))
    try:
        with open(os.path.join(d, p + ".cycles")) as f:
            r["twin_cycles"] = int(f.read().strip())
    except (OSError, ValueError):
        r["twin_cycles"] = None
    r["advise"] = advise_for(d, p, r["site"])
    r["recordings"] = advise_recordings(d, p, r["site"])
    return r


def fmt(v, unit):
    if unit == "ms":
        return "%.1f" % v
    return "%.0f" % v


def one(d, p, src):
    r = program(d, p, src)
    print("%-14s %12s %12s %12s  %s" % ("", "plain median", "twin median", "saving",
                                        "[95% interval] (coverage)"))
    for key, label, unit, _ in METRICS:
        m = r[key]
        if "plain_median" not in m:
            continue
        print("%-14s %12s %12s %12s  [%s, %s] (%.1f%%)" % (
            label + (" " + unit if unit else ""), fmt(m["plain_median"], unit),
            fmt(m["twin_median"], unit), fmt(m["saving_median"], unit),
            fmt(m["saving_low"], unit), fmt(m["saving_high"], unit), 100 * m["coverage"]))
    if not r["outputs_identical"]:
        print("OUTPUTS DIFFER between runs: see the .out files")
    c = r["cpu_ms"]
    if "saving_median" in c:
        print("twin saves %.1f ms of CPU [%.1f, %.1f], %.1f%% of plain's %.1f ms (site %s)" % (
            c["saving_median"], c["saving_low"], c["saving_high"], r.get("saving_pct_of_cpu", 0),
            c["plain_median"], r["site"]))
    a = r["advise"]
    if a is None:
        print("advise: not run")
    elif not a["found"]:
        print("advise: no site in function %s among %d sites" % (r["site"], a["sites_in_trace"]))
    else:
        ts = a["time_saved_ns"] or 0
        ratio = ""
        if "saving_median" in c and c["saving_median"] != 0:
            ratio = ", %.3gx the twin's" % (ts / 1e6 / c["saving_median"])
        src = a.get("time_source") or "model"
        iv = ""
        if a.get("time_saved_low_ns") is not None and a.get("time_saved_high_ns") is not None:
            iv = " [%.3f, %.3f]" % (a["time_saved_low_ns"] / 1e6, a["time_saved_high_ns"] / 1e6)
        print("advise: %s: %s, time saved %.3f ms%s (%s)%s; hit rate %.1f%%" % (
            a["site"], a["verdict_text"], ts / 1e6, iv, src, ratio, 100 * (a["hit_rate"] or 0)))
        if a.get("model_time_saved_ns") is not None and src != "model":
            print("advise's cost model alone: %.3f ms" % (a["model_time_saved_ns"] / 1e6))
        meas = a.get("trace_measurement")
        if isinstance(meas, dict):
            if meas.get("why_not"):
                print("advise measured no site: %s" % meas["why_not"])
            elif meas.get("wall_ns") is not None:
                print("advise's measured replay: %d sites in %.1f s" % (
                    meas.get("sites", 0), meas["wall_ns"] / 1e9))
        print("advise counts: %d gets, %d reallocs, %d allocations (%.1f MiB) at the site" % (
            a["gets"] or 0, a["reallocs"] or 0, a["alloc_objects"] or 0,
            (a["alloc_space"] or 0) / 1048576.0))
        gc = a.get("trace_gc") or {}
        print("cycles: the twin's vpool_cycle %s, advise's model of the plain trace %s" % (
            r["twin_cycles"], gc.get("cycles")))
        if "measured" in a:
            print("advise measured: " + json.dumps(a["measured"], sort_keys=True))
            ms = measured_saved_ms(a["measured"])
            if ms is not None and c.get("saving_median"):
                print("advise measured saving %.3f ms: %.3gx the twin's" % (ms, ms / c["saving_median"]))
        fl = freelist_of(a)
        if isinstance(fl, tuple):
            what = ("vpool (beside a Rust site's own free list, the verdict's)"
                    if beside_label(a) == "vpool" else
                    "free list of each thread's own (beside the pool, not the verdict)")
            print("advise's %s: saves %.3f ms [%.3f, %.3f]%s; the verdict's %.3f ms" % (
                      what, fl[0], fl[1], fl[2], ", %.3gx the twin's" % (fl[0] / c["saving_median"])
                      if c.get("saving_median") else "", ts / 1e6))
        elif fl:
            print("advise's %s beside the verdict's: not measured (%s)" % (beside_label(a), fl))
        g = a.get("graph")
        if g:
            gs = g["time_saved_ns"] / 1e6
            print("advise, the object graph %s (%d member sites) pooled whole: %s, time saved "
                  "%.3f ms [%.3f, %.3f]%s" % (
                      g["root"], g["members"], g["verdict"], gs, (g["time_saved_low_ns"] or 0) / 1e6,
                      (g["time_saved_high_ns"] or 0) / 1e6,
                      ", %.3gx the twin's" % (gs / c["saving_median"]) if c.get("saving_median") else ""))
        if len(r["recordings"]) > 1:
            print("advise over %d recordings: %s" % (len(r["recordings"]), "; ".join(
                "%s %.3f ms (%s)" % (x["verdict_text"], (x["time_saved_ns"] or 0) / 1e6,
                                     x.get("time_source") or "model") if x else "site not found"
                for x in r["recordings"])))
        for o in a.get("other_sites", []):
            print("advise, another site in %s: %s: %s, time saved %.3f ms" % (
                r["site"], o["site"], o["verdict"], (o["time_saved_ns"] or 0) / 1e6))
        if a.get("other_sites"):
            # A twin that pools the function's objects whole (toksplit's
            # lines, a vector and its strings) is beside every line's pool.
            tot = (ts + sum(o["time_saved_ns"] or 0 for o in a["other_sites"])) / 1e6
            print("advise, the function's sites together: %.3f ms%s" % (
                tot, ", %.3gx the twin's" % (tot / c["saving_median"])
                if c.get("saving_median") else ""))
    print()


def table(d, runs, progs):
    rows = []
    for p in progs:
        base = os.path.join(os.path.dirname(os.path.abspath(__file__)), p)
        src = next((base + e for e in (".c", ".cpp", ".rs") if os.path.exists(base + e)),
                   base + ".c")
        rows.append(program(d, p, src))
    return rows


def print_table(rows, runs):
    print("summary (%s runs each; saving = median of paired plain-twin CPU time differences, "
          "95%% distribution-free interval)" % runs)
    more = ["%s %d" % (r["program"], r["rounds"]) for r in rows
            if r.get("rounds") and str(r["rounds"]) != str(runs)]
    if more:
        print("rounds added (-N) while the interval spanned zero or covered < 95%: " +
              ", ".join(more))
    h = ("program", "site", "plain CPU", "twin saves [95% interval]", "% CPU", "faults p/t",
         "advise verdict", "advise saves [interval] (source)", "ratio", "model")
    print("%-10s %-12s %9s %-28s %7s %-15s %-22s %-36s %8s  %s" % h)
    for r in rows:
        c = r["cpu_ms"]
        a = r["advise"] or {}
        if "plain_median" in c:
            sav = "%.1f [%.1f, %.1f] ms" % (c["saving_median"], c["saving_low"], c["saving_high"])
            pct = "%.1f%%" % r.get("saving_pct_of_cpu", 0)
            cpu = "%.0f ms" % c["plain_median"]
            fl = "%.0f/%.0f" % (r["minflt"]["plain_median"], r["minflt"]["twin_median"])
        else:
            sav = pct = cpu = fl = "-"
        if a.get("found"):
            v = a["verdict_text"]
            ts = (a["time_saved_ns"] or 0) / 1e6
            asv = "%.3f ms" % ts
            if a.get("time_saved_low_ns") is not None and a.get("time_saved_high_ns") is not None:
                asv += " [%.1f, %.1f]" % (a["time_saved_low_ns"] / 1e6,
                                          a["time_saved_high_ns"] / 1e6)
            asv += " (%s)" % (a.get("time_source") or "model")
            ratio = "%.3gx" % (ts / c["saving_median"]) if c.get("saving_median") else "-"
            mod = a.get("model_time_saved_ns")
            meas = "%.3f ms" % (mod / 1e6) if mod is not None else "-"
            if "measured" in a:
                ms = measured_saved_ms(a["measured"])
                if ms is not None and c.get("saving_median"):
                    meas += "; measured %.3gx of twin" % (ms / c["saving_median"])
            fli = freelist_of(a)
            if isinstance(fli, tuple):
                meas += "; %s %.3f ms [%.1f, %.1f]%s" % (
                    beside_label(a), fli[0], fli[1], fli[2], " %.3gx" % (fli[0] / c["saving_median"])
                    if c.get("saving_median") else "")
            elif fli:
                meas += "; %s: %s" % (beside_label(a), fli)
            g = a.get("graph")
            if g:
                gs = g["time_saved_ns"] / 1e6
                meas += "; graph whole %s %.1f ms [%.1f, %.1f]%s" % (
                    g["verdict"], gs, (g["time_saved_low_ns"] or 0) / 1e6,
                    (g["time_saved_high_ns"] or 0) / 1e6,
                    " %.3gx" % (gs / c["saving_median"]) if c.get("saving_median") else "")
        else:
            v = "not run" if not a else "site not found"
            asv = ratio = meas = "-"
        recs = [x["verdict_text"] if x else "?" for x in r.get("recordings", [])]
        if len(set(recs)) > 1:
            v = "/".join(recs)
        if not r["outputs_identical"]:
            v = "OUTPUTS DIFFER; " + v
        print("%-10s %-12s %9s %-28s %7s %-15s %-22s %-36s %8s  %s" % (
            r["program"], r["site"], cpu, sav, pct, fl, v[:22], asv, ratio, meas))


def main():
    mode = sys.argv[1]
    if mode == "--one":
        one(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "--table":
        print_table(table(sys.argv[2], sys.argv[3], sys.argv[4:]), sys.argv[3])
    elif mode == "--spans-zero":
        # exit status 0 when the CPU-time saving's interval spans zero,
        # or covers less than 95 % (fewer than 6 rounds: the range)
        c = stats(sys.argv[2], sys.argv[3])["cpu_ms"]
        sys.exit(0 if "saving_low" in c and (c["saving_low"] <= 0 <= c["saving_high"] or
                                             c["coverage"] < 0.95) else 1)
    elif mode == "--json":
        rows = table(sys.argv[2], sys.argv[3], sys.argv[4:])
        json.dump({"runs": int(sys.argv[3]), "programs": rows}, sys.stdout, indent=1)
        print()
    else:
        sys.exit("usage: summarize.py --one|--table|--json|--spans-zero ...")


if __name__ == "__main__":
    try:
        main()
    except OSError as e:
        # a directory without the program's runs (.times): one line, and
        # a status run.sh reads as "no more rounds"
        sys.exit("summarize.py: %s: %s" % (e.filename, e.strerror))
