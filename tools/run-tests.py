#!/usr/bin/env python3
"""Runs meson's test suites of the given build directories and prints one
plain summary line, `tests: N passed, N failed`, as the last line. Exits
non-zero when any test failed or a suite could not run."""
import json
import os
import subprocess
import sys

def run(builddir):
    log = os.path.join(builddir, "meson-logs", "testlog.json")
    if os.path.exists(log):
        os.unlink(log)
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    rc = subprocess.call(["meson", "test", "-C", builddir, "--print-errorlogs",
                          "--num-processes", "2"], env=env)
    passed = failed = skipped = 0
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line).get("result")
                if r in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r == "SKIP":
                    skipped += 1
                else:
                    failed += 1
    elif rc != 0:
        failed += 1
    return passed, failed, skipped, rc

def main():
    dirs = sys.argv[1:] or ["build"]
    tp = tf = ts = 0
    bad = False
    for d in dirs:
        p, f, s, rc = run(d)
        print(f"{d}: {p} passed, {f} failed, {s} skipped", flush=True)
        tp, tf, ts = tp + p, tf + f, ts + s
        bad = bad or rc != 0
    if bad and tf == 0:
        tf = 1
    # the last line is the plain summary CI reads; the skipped (tests
    # that cannot run on this machine, each saying why) on the line before
    if ts:
        print(f"skipped: {ts}")
    print(f"tests: {tp} passed, {tf} failed")
    sys.exit(1 if tf else 0)

if __name__ == "__main__":
    main()
