"""What the Python tests of allocprof record share: a fresh directory, the
environment reports are run in, failures collected, allocprof run."""
import os
import shutil
import subprocess

env = dict(os.environ, LC_ALL="C", NO_COLOR="1", ALLOCPROF_NO_PROGRESS="1")
failures = []


def fresh_dir(parent, name):
    d = os.path.join(parent, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def runner(allocprof):
    """run(*args, **kw): allocprof with args, its output captured as text."""
    def run(*args, **kw):
        return subprocess.run([allocprof, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, **kw)
    return run
