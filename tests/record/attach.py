#!/usr/bin/env python3
"""allocprof record -p (issue 25, items 1 and 2): attach to a running
program, record, detach; the program none the wiser.

tests/record/attach_server (three worker threads, sites in the program,
in a shared library and in a plugin it dlopens while the sampler is
attached; blocks kept across rounds, so that frees of blocks allocated
before the attach come during it):

  window   record -p --all, then work, load the plugin, work again: the
           trace's allocations per site equal the program's own counts
           for the window, exactly; the trace says it was attached and
           ends "detached"; after the detach the program works on and
           ends with the same output and exit status as a run never
           attached
  jemalloc the same, the program's malloc jemalloc's (preloaded)
  cycles   N attach/detach cycles (default 200) with work between them:
           the process's mappings after the last equal those after the
           first, its descriptors after each those it had before the
           first attach (the same numbers, the same files), and it ends
           as a native run
  files    with its soft and hard RLIMIT_NOFILE equal (the sampler's
           descriptors then go to 700 and up, the program's range): an
           attach and detach leave exactly the descriptors it had; then
           the program opens 900 files (700 and up taken, where libunwind's
           pipe was) and maps 4 GiB where the attach's range was (the
           threads' libunwind caches of the first attach pointed there),
           a second attach records every allocation and detaches, and none
           of those files was read, written or closed
  exec     the program execs another while attached: record says so and
           ends by itself, the trace ends there (reason exec) with every
           allocation up to the exec; an exec that fails leaves the
           recording on
  fds      the program's view of its descriptors while attached: the
           trace's is the sampler's one (libunwind makes no pipe); closing
           it says EBADF (it is not open, as without the sampler) and
           closes nothing; a dup2 onto
           the trace's number gives the program that number and the trace
           goes on elsewhere: its counts exact, and after the detach the
           program has what it had plus that descriptor
  seccomp  the program installs, while attached, a seccomp filter that
           kills it for calls the sampler makes (through prctl, then
           through syscall(SYS_seccomp) as libseccomp does): the sampler
           keeps it and does without them; the program runs on, the
           counts exact, the detach clean
  shared   the program uses libunwind.so.8 itself (a plugin that unwinds
           at its site), loaded before the first attach (libunwind
           preloaded too), or while attached: three attaches, each with
           counts exact; libunwind's state is the program's and stays
           (a pipe of its own too), the program unwinds on through them, nothing
           grows after the first, and it runs on
  replaced the sampler's file replaced while attached (a rebuild, an
           upgrade: its mapping "(deleted)"): record records on and
           detaches as usual, counts exact, and a second attach is refused
           with one line (it would read the entry points from the new file)
  asleep   a process whose one thread sleeps: attached twice with
           --duration, each detach clean (its wait goes on through
           restart_syscall after the attach's calls), the sleep as long,
           its errno as it was; an attach that failed (the process could
           not make its trace) leaves it attachable
  ends     the sampler's handler under the fatal signals while attached:
           the program sees its own disposition (sigaction), and after the
           detach the caught signals (SigCgt) are those before the attach;
           a SIGSEGV while attached ends the trace (reason signal) with
           every allocation up to it, and the process dies of it; so does
           _exit (reason _exit, its status)
  fork     a child forked while attached: after the detach it has exactly
           the descriptors, mappings and caught signals its parent has (the
           attach undone in the child at the fork: no trace, no pipe, no
           range, no handler of ours), and
           record -p attaches to it and detaches
  mntns    a program in a mount namespace of its own whose plugin is on a
           tmpfs there, another library at its path here: the trace's
           symbols are the plugin's, read as the process sees it
  pidns    a program in a PID namespace of its own (unshare -p -f
           --mount-proc: its files the same as here): attached by its pid
           here, the trace at -o's path, its counts exact
  refuse   one line and exit 1 for: no such process, a zombie, a
           statically linked one, one that already has the sampler (preloaded, or
           attached by another record -p), another user's (as root, record
           run as nobody), one in another mount namespace where the
           sampler's directory is another file system (as root); usage
           errors exit 2
  scope    as root where /proc/sys/kernel/yama/ptrace_scope is writable:
           set to 1, then 2 (put back as it was whatever happens), record
           -p run without CAP_SYS_PTRACE is refused with one line that
           names ptrace_scope and its value (never 3: that setting cannot
           be undone until a reboot); skipped with the reason elsewhere
           (not in parallel with the other tests: they would see it)
  futex    a program whose every thread waits in a futex (the calls
           are made there after a second without a better place); it
           ends while attached: the trace ends with its exit, counts exact
  mainexit a process whose main thread exits (pthread_exit) while
           attached: record records on until Ctrl-C, the trace has every
           allocation of the other thread, and the detach leaves it
           running; one whose main thread had exited before the attach
           is attached through the other thread just the same
  comm     a process that names itself with escape sequences (prctl
           PR_SET_NAME): record -p without -o prints none of them, and the
           default trace's name holds none
  nginx    a real server (nginx from Debian) attached while it serves
           loopback requests, detached, and still serving
  python3  /usr/bin/python3 (not PIE; it takes malloc's and free's
           addresses: their symbols are canonical PLT entries, which
           dlsym returns and whose jumps go through the GOT entries the
           attach points at its thunks) attached while it allocates:
           it works on through the attach and the detach, ends as a
           native run, and the trace has its allocations

usage: attach.py ALLOCPROF SERVER PLUGIN TMPDIR MODE [ARG]
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reclib import env, fail, failures, fresh_dir, runner  # noqa: E402

allocprof, server, plugin, tmp, mode = sys.argv[1:6]
arg = sys.argv[6] if len(sys.argv) > 6 else None
tmp = fresh_dir(tmp, "attach-" + mode)
run = runner(allocprof)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


# jemalloc: the window's test with the program's malloc jemalloc's (the
# attached sampler must call the malloc the program used, not libc's)
server_env = dict(os.environ)
if mode == "jemalloc":
    jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    if not os.path.exists(jemalloc):
        skip("libjemalloc2 is not installed (make check installs it)")
    server_env["LD_PRELOAD"] = jemalloc


class Server:
    def __init__(self, nofile=None, under=(), plug=None, preload=None, wrap=()):
        """under: a command that runs the server as its only child (unshare -f);
        wrap: one that executes it (the same process: unshare -m, sh -c
        'exec ...'); plug: what "load" opens instead of the plugin;
        preload: LD_PRELOAD"""
        def limit():
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        senv = dict(server_env, LD_PRELOAD=preload) if preload else server_env
        self.p = subprocess.Popen([*under, *wrap, server, plug or plugin], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=senv,
                                  preexec_fn=limit if nofile else None)
        self.pid = self.p.pid
        if under:
            self.ask("work 1")  # started
            self.pid = int(subprocess.run(["pgrep", "-P", str(self.p.pid)], stdout=subprocess.PIPE,
                                          text=True).stdout.split()[0])
        # started: its C library loaded (record -p refuses a process still
        # in its dynamic loader), without asking the server anything
        for _ in range(500):
            try:
                if "libc.so" in open("/proc/%d/maps" % self.pid).read():
                    break
            except OSError:
                break
            time.sleep(0.01)

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().rstrip("\n")

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        out = self.p.stdout.read()
        return out, self.p.wait()


attached_once = False

SETPRIV = shutil.which("setpriv")
AS_NOBODY = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"] if SETPRIV else []


def nobody_cannot(run, read):
    """The first of `run` (to execute) and `read` (to read) that user 65534
    cannot use (a build tree closed to others, under /root, mode 700), or
    None; None without setpriv too (then nothing is run as nobody)."""
    for path, test in [(p, "-x") for p in run] + [(p, "-r") for p in read]:
        if SETPRIV and subprocess.run(AS_NOBODY + ["test", test, path]).returncode:
            return path
    return None



def attach(pid, trace, *opts):
    """record -p PID in the background, once it said it is attached. A
    machine that permits no ptrace skips the test; a refusal after an
    attach worked is a failure (the process may be dying)."""
    global attached_once
    r = subprocess.Popen([allocprof, "record", "-p", str(pid), "-o", trace, *opts],
                         stderr=subprocess.PIPE, text=True, env=env)
    line = r.stderr.readline()
    if "attached to %d" % pid not in line:
        rest = r.stderr.read()
        r.wait()
        if "ptrace not permitted" in line + rest and not attached_once:
            skip("ptrace is not permitted here: " + (line + rest).strip())
        fail("record -p said %r %r (exit %s)" % (line, rest, r.returncode))
        return None
    attached_once = True
    return r


def detach(r):
    r.send_signal(signal.SIGINT)
    err = r.stderr.read()
    rc = r.wait()
    if rc != 0 or "detached; wrote" not in err:
        fail("detach: exit %d, %r" % (rc, err))
    return err


def header_keys(trace):
    """The HEADER chunk's keys (docs/trace-format.md): {key: value}."""
    with open(trace, "rb") as f:
        d = f.read(1 << 16)
    ln = struct.unpack_from("<I", d, 16 + 12)[0]
    p, i, keys = d[48:48 + ln], 0, {}

    def uv():
        nonlocal i
        v, sh = 0, 0
        while True:
            c = p[i]
            i += 1
            v |= (c & 0x7f) << sh
            sh += 7
            if c < 0x80:
                return v
    while i < len(p):
        k, t = uv(), uv()
        if t == 0:
            keys[k] = uv()
        else:
            n = uv()
            keys[k] = p[i:i + n]
            i += n
    return keys


def site_counts(trace):
    r = run("top", "--json", "--alloc_objects", trace)
    if r.returncode:
        fail("top %s: %s" % (trace, r.stderr))
        return {}
    return {row["name"]: row["flat"] for row in json.loads(r.stdout)["rows"]}


def native_run(script):
    s = Server()
    for c in script:
        s.ask(c)
    return s.quit()


def mappings(pid):
    with open("/proc/%d/maps" % pid) as f:
        return f.read().splitlines()


def fds(pid):
    """the process's descriptors: number -> what it is"""
    d = "/proc/%d/fd" % pid
    out = {}
    for fd in os.listdir(d):
        try:
            out[int(fd)] = os.readlink(os.path.join(d, fd))
        except FileNotFoundError:
            pass
    return out


def caught(pid):
    """the signals the process catches (a handler installed), as a line"""
    return [l for l in open("/proc/%d/status" % pid).read().splitlines()
            if l.startswith("SigCgt:")][0]


def fds_diff(now, then):
    """what differs between two fds() as text, '' if nothing"""
    lines = []
    for fd in sorted(set(now) | set(then)):
        if now.get(fd) != then.get(fd):
            lines.append("  %d: %s, was %s" % (fd, now.get(fd, "closed"),
                                               then.get(fd, "closed")))
    return "\n".join(lines)


SITES = (("exe_site", "exe"), ("attach_lib_site", "lib"), ("attach_plugin_site", "plugin"))


def check_counts(trace, counts, what="", keys=("exe", "lib", "plugin")):
    """the trace's allocations per site (those of keys) against the
    program's own counts (its answer to "count")"""
    if "exe=" not in counts:
        fail("%sthe program did not answer with its counts: %r" % (what, counts))
        return
    want = dict(kv.split("=") for kv in counts.split())
    got = site_counts(trace)
    for fn, key in SITES:
        if key in keys and got.get(fn) != int(want[key]):
            fail("%s%s: the trace has %s allocations, the program made %s" %
                 (what, fn, got.get(fn), want[key]))


def attached(trace):
    """a server that has worked, attached with --all into trace, its
    counts reset (r None if the attach failed), and its descriptors
    before the attach"""
    s = Server()
    s.ask("work 10")
    before = fds(s.pid)
    r = attach(s.pid, trace, "--all")
    if r:
        s.ask("reset")
    return s, r, before


def runs_on(s, what=""):
    """the server works on and ends as it should"""
    try:
        s.ask("work 10")
        out, rc = s.quit()
    except BrokenPipeError:
        out, rc = "", s.p.wait()
    if rc != 3 or not out.startswith("total exe="):
        fail("%sthe program ended with %r, exit %d" % (what, out, rc))


def window(s, r, trace, more, what=""):
    """reset the counts, work, load the plugin (code never unwound
    before), work `more` again, detach r: the trace's allocations per site
    equal the program's own counts"""
    s.ask("reset")
    s.ask("work 500")
    if s.ask("load") != "ok":
        fail("the plugin did not load")
    s.ask("work %d" % more)
    counts = s.ask("count")
    detach(r)
    check_counts(trace, counts, what)


before = ["work 300"]
after = ["work 200", "count"]

if mode in ("window", "jemalloc"):
    s = Server()
    for c in before:
        s.ask(c)
    trace = os.path.join(tmp, "w.trace")
    fds_before = fds(s.pid)
    r = attach(s.pid, trace, "--all")
    if r:
        window(s, r, trace, 400)
        st = run("stats", "--json", trace)
        if st.returncode:
            fail("stats: " + st.stderr)
        else:
            js = json.loads(st.stdout)
            if not js.get("attached"):
                fail("stats --json does not say the trace was attached: %r" % js.get("attached"))
            if js.get("end_reason") != "detached":
                fail("stats --json: end_reason %r, not detached" % js.get("end_reason"))
            # the blocks the workers kept from before the attach, freed in it
            if js.get("pre_attach_frees") != 3 * 300 or js.get("unmatched_frees") != 0:
                fail("stats --json: pre_attach_frees %r (want 900), unmatched_frees %r" %
                     (js.get("pre_attach_frees"), js.get("unmatched_frees")))
        txt = run("stats", trace).stdout
        if "attached" not in txt:
            fail("stats does not say the trace starts mid-run:\n" + txt)
        # nothing stays open: not the trace, not libunwind's pipe
        d = fds_diff(fds(s.pid), fds_before)
        if d:
            fail("after the detach the descriptors differ from before the attach:\n" + d)
        maps = open("/proc/%d/maps" % s.pid).read()
        if "[allocprof" in maps:
            fail("a mapping of the attach is left")
    # the program goes on as if never attached
    for c in after:
        s.ask(c)
    out, rc = s.quit()
    nout, nrc = native_run(before + ["reset", "work 500", "load", "work 400", "count"] + after)
    if (out, rc) != (nout, nrc):
        fail("after the detach: %r exit %d; a native run: %r exit %d" % (out, rc, nout, nrc))

elif mode == "cycles":
    n = int(arg or 200)
    s = Server()
    s.ask("work 5000")  # the workers' heaps as they stay: every kept block there
    first = None
    never = fds(s.pid)
    for i in range(n):
        # --all: every thread unwinds in the first cycle (libunwind keeps a
        # cache per thread that unwound, for the thread's life)
        r = attach(s.pid, "/dev/null", "--all")
        if not r:
            break
        s.ask("work 20")
        if i % 3 == 0 and s.ask("load") != "ok":
            fail("the plugin did not load")
        r.send_signal(signal.SIGINT)
        err = r.stderr.read()
        if r.wait() != 0:
            fail("cycle %d: record -p exit %d: %r" % (i, r.returncode, err))
            break
        s.ask("work 20")
        maps = mappings(s.pid)
        d = fds_diff(fds(s.pid), never)
        if d:
            fail("cycle %d: the descriptors differ from before the first attach:\n%s" % (i, d))
            break
        if first is None:
            first = maps
        elif len(maps) != len(first):
            fail("cycle %d: %d mappings, %d after the first; mappings now not then:\n%s" %
                 (i, len(maps), len(first), "\n".join(m for m in maps if m not in first)))
            break
    out, rc = s.quit()
    if rc != 3 or not out.startswith("total exe="):
        fail("after %d cycles the program ended with %r, exit %d" % (n, out, rc))

elif mode == "files":
    s = Server(nofile=1024)
    script = ["work 300"]
    s.ask("work 300")
    never = fds(s.pid)
    r = attach(s.pid, os.path.join(tmp, "one.trace"), "--all")
    if r:
        s.ask("work 100")
        ours = set(fds(s.pid)) - set(never)
        if not any(fd >= 700 for fd in ours):
            fail("attached, no descriptor of the sampler's at 700 or up: %r" % sorted(ours))
        detach(r)
        d = fds_diff(fds(s.pid), never)
        if d:
            fail("after the detach the descriptors differ from before the attach:\n" + d)
        if s.ask("files 900") != "ok":
            fail("the program could not open 900 files")
        if s.ask("reserve") != "ok":
            fail("the program could not map 4 GiB of nothing")
        taken = fds(s.pid)
        if not all(fd in taken for fd in ours):
            fail("the sampler's old numbers %r are not the program's now" % sorted(ours))
        trace = os.path.join(tmp, "two.trace")
        r = attach(s.pid, trace, "--all")
        if r:
            # libunwind steps through the plugin's frames: it validates
            # addresses through its pipe
            window(s, r, trace, 500, "second attach: ")
            st = run("stats", "--json", trace)
            if st.returncode or json.loads(st.stdout).get("end_reason") != "detached":
                fail("second attach: stats %s %s" % (st.stdout[:300], st.stderr))
            c = s.ask("check")
            if c != "ok 900":
                fail("the program's files after the second attach: %s" % c)
            d = fds_diff(fds(s.pid), taken)
            if d:
                fail("after the second detach the descriptors differ:\n" + d)
    script += ["work 100", "files 900", "reserve", "reset", "work 500", "load", "work 500",
               "count", "check"]
    s.ask("work 50")
    out, rc = s.quit()
    nout, nrc = native_run(script + ["work 50"])
    if (out, rc) != (nout, nrc):
        fail("after the detach: %r exit %d; a native run: %r exit %d" % (out, rc, nout, nrc))

elif mode == "exec":
    s = Server()
    s.ask("work 100")
    trace = os.path.join(tmp, "x.trace")
    r = attach(s.pid, trace, "--all")
    if r:
        s.ask("reset")
        s.ask("work 300")
        if s.ask("exec /nonexistent x") != "exec failed":
            fail("an exec that fails did not fail")
        s.ask("work 200")
        counts = s.ask("count")
        # the next image lives on: record must end by itself, seeing the exec
        s.p.stdin.write("exec /bin/sleep 60\n")
        s.p.stdin.flush()
        err = r.stderr.read()
        if r.wait() != 0 or "exec'd another program: the trace ends at the exec" not in err:
            fail("record -p at the exec: exit %d, %r" % (r.returncode, err))
        if s.p.poll() is not None:
            fail("the exec'd program ended: exit %d" % s.p.returncode)
        s.p.kill()
        s.p.wait()
        check_counts(trace, counts, "", ("exe", "lib"))
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("end_reason") != "exec":
            fail("the trace of a process that exec'd: %s %s" % (st.stdout[:400], st.stderr))
        txt = run("stats", trace).stdout
        if not any(l.split()[:2] == ["ended", "exec"] for l in txt.splitlines()):
            fail("stats does not say the trace ended at an exec:\n" + txt)

elif mode == "scope":
    knob = "/proc/sys/kernel/yama/ptrace_scope"
    setpriv = shutil.which("setpriv")
    if not os.path.exists(knob):
        skip("no Yama here (%s does not exist)" % knob)
    if os.geteuid() != 0 or not os.access(knob, os.W_OK) or not setpriv:
        skip("%s cannot be set here (it takes root and setpriv(1))" % knob)
    old = open(knob).read().strip()

    def put_back(*_):
        with open(knob, "w") as f:
            f.write(old)
        if _:
            sys.exit(1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, put_back)
    s = Server()
    try:
        for scope in ("1", "2"):
            with open(knob, "w") as f:
                f.write(scope)
            r = subprocess.run([setpriv, "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace",
                                allocprof, "record", "-p", str(s.pid), "-o", "/dev/null"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            lines = r.stderr.strip().split("\n")
            if r.returncode != 1 or len(lines) != 1 or \
                    "ptrace_scope is %s" % scope not in lines[0]:
                fail("ptrace_scope %s, no CAP_SYS_PTRACE: exit %d, %r" %
                     (scope, r.returncode, r.stderr))
    finally:
        put_back()
    out, rc = s.quit()
    if rc != 3:
        fail("the server after the refusals: %r exit %d" % (out, rc))

elif mode == "fds":
    trace = os.path.join(tmp, "d.trace")
    s, r, never = attached(trace)
    if r:
        # every thread unwinds: libunwind is set up, and checks
        # addresses without the pipe it would open (tracefile.c)
        s.ask("work 100")
        ours = {fd: what for fd, what in fds(s.pid).items() if fd not in never}
        tfd = [fd for fd, what in ours.items() if what == os.path.realpath(trace)]
        if len(tfd) != 1 or len(ours) != 1:
            fail("attached, the sampler's descriptors are not the trace's alone: %r" % ours)
        else:
            for fd in tfd:
                if s.ask("close %d" % fd) != "EBADF":
                    fail("the program's close(%d) of the sampler's %s did not say EBADF" %
                         (fd, ours[fd]))
            if fds(s.pid) != {**never, **ours}:
                fail("the program's close closed the sampler's descriptors: %r" % fds(s.pid))
            if s.ask("dup2 %d" % tfd[0]) != "ok":
                fail("the program's dup2 onto %d failed" % tfd[0])
            now = fds(s.pid)
            if now.get(tfd[0]) != never.get(2) or \
                    os.path.realpath(trace) not in [w for fd, w in now.items() if fd != tfd[0]]:
                fail("after the program's dup2 onto the trace's number: %r" % now)
        s.ask("work 200")
        counts = s.ask("count")
        detach(r)
        check_counts(trace, counts, "", ("exe", "lib"))
        if tfd:
            d = fds_diff(fds(s.pid), {**never, tfd[0]: never.get(2)})
            if d:
                fail("after the detach the descriptors are not the program's:\n" + d)
            if s.ask("close %d" % tfd[0]) != "ok":
                fail("the program could not close its own %d" % tfd[0])
    runs_on(s)

elif mode == "seccomp":
    for how in ("P", "S"):
        trace = os.path.join(tmp, "s.trace")
        s, r, _ = attached(trace)
        if not r:
            break
        s.ask("work 100")
        if s.ask("seccomp " + how) != "ok":
            fail("seccomp %s: the filter could not be installed" % how)
        s.ask("work 400")
        counts = s.ask("count")
        detach(r)
        check_counts(trace, counts, "seccomp %s: " % how, ("exe", "lib"))
        runs_on(s, "seccomp %s: " % how)

elif mode == "shared":
    unw = "/usr/lib/x86_64-linux-gnu/libunwind.so.8"
    for how in ("preloaded", "loaded while attached"):
        s = Server(plug=os.environ["ATTACH_UNWPLUGIN"],
                   preload=unw if how == "preloaded" else None)
        if how == "preloaded" and s.ask("load") != "ok":
            fail("the plugin that unwinds did not load")
        s.ask("work 10")
        first = None
        for i in range(3):
            trace = os.path.join(tmp, "u%d.trace" % i)
            r = attach(s.pid, trace, "--all")
            if not r:
                break
            s.ask("reset")
            s.ask("work 100")
            if i == 0 and how != "preloaded" and s.ask("load") != "ok":
                fail("%s: the plugin that unwinds did not load" % how)
            s.ask("work 100")
            counts = s.ask("count")
            detach(r)
            check_counts(trace, counts, "%s, attach %d: " % (how, i))
            s.ask("work 50")  # the program unwinds, detached
            now = (len(mappings(s.pid)), fds(s.pid))
            if first is None:
                first = now
            elif now != first:
                fail("%s, attach %d: %d mappings and descriptors %r; after the first %d and %r" %
                     (how, i, now[0], sorted(now[1]), first[0], sorted(first[1])))
        runs_on(s, how + ": ")

elif mode == "replaced":
    so = os.path.realpath(os.environ["SAMPLER"])
    copy = os.path.join(tmp, "liballocprof.so")
    shutil.copy(so, copy)
    env["ALLOCPROF_PRELOAD"] = copy
    trace = os.path.join(tmp, "x.trace")
    s, r, _ = attached(trace)
    if r:
        s.ask("work 100")
        os.unlink(copy)
        shutil.copy(so, copy)
        time.sleep(1.5)  # record looks at the process's maps every second
        s.ask("work 100")
        counts = s.ask("count")
        detach(r)
        check_counts(trace, counts, "", ("exe", "lib"))
        two = subprocess.run([allocprof, "record", "-p", str(s.pid), "-o", trace],
                             stderr=subprocess.PIPE, text=True, env=env)
        lines = two.stderr.strip().split("\n")
        if two.returncode != 1 or len(lines) != 1 or "was replaced since" not in lines[0]:
            fail("a second attach after the sampler was replaced: exit %d, %r" %
                 (two.returncode, two.stderr))
    runs_on(s)

elif mode == "ends":
    s = Server()
    s.ask("work 10")
    cgt = caught(s.pid)
    r = attach(s.pid, os.path.join(tmp, "v.trace"))
    if r:
        if caught(s.pid) == cgt:
            fail("attached, the sampler's handler is under no fatal signal: %s" % cgt)
        if s.ask("sigview") != "dfl":
            fail("attached, the program does not see its own disposition of SIGSEGV")
        detach(r)
        if caught(s.pid) != cgt:
            fail("after the detach %s, before the attach %s" % (caught(s.pid), cgt))
        # --duration with a unit ends the attach by itself; the trace has
        # the run's number, as a launched run's has (HEADER key 19)
        trace = os.path.join(tmp, "d.trace")
        r = attach(s.pid, trace, "--duration", "300ms")
        if r:
            err = r.stderr.read()
            rc = r.wait(timeout=60)
            if rc != 0 or "detached; wrote" not in err:
                fail("--duration 300ms: exit %d, %r" % (rc, err))
            elif not header_keys(trace).get(19):
                fail("an attached trace without run_id: %r" % header_keys(trace))
    s.quit()
    for how, end, status in (("crash", "signal", -signal.SIGSEGV), ("_exit 7", "_exit", 7)):
        trace = os.path.join(tmp, "e.trace")
        s, r, _ = attached(trace)
        if not r:
            break
        s.ask("work 300")
        counts = s.ask("count")
        s.p.stdin.write(how + "\n")
        s.p.stdin.flush()
        # record ends while the process is a zombie, not reaped: an end,
        # not an exec (its maps are empty)
        err = r.stderr.read()
        if r.wait() != 0 or "is gone" not in err:
            fail("%s: record -p: exit %d, %r" % (how, r.returncode, err))
        s.p.stdout.read()
        if s.p.wait() != status:
            fail("%s: the process ended with %d, not %d" % (how, s.p.returncode, status))
        check_counts(trace, counts, how + ": ", ("exe", "lib"))
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("end_reason") != end:
            fail("%s: the trace's end: %s %s" % (how, st.stdout[:400], st.stderr))

elif mode == "fork":
    s = Server()
    s.ask("work 100")
    never, cgt = fds(s.pid), caught(s.pid)
    r = attach(s.pid, os.path.join(tmp, "p.trace"), "--all")
    if r:
        s.ask("work 100")
        child = int(s.ask("fork").split()[1])
        s.ask("work 100")
        detach(r)
        d = fds_diff(fds(child), never)
        if d:
            fail("the child forked while attached: its descriptors differ from its parent's "
                 "before the attach:\n" + d)
        if caught(child) != cgt:
            fail("the child catches %s, its parent before the attach %s" % (caught(child), cgt))
        # the parent's other threads' stacks stay in the child: the same mappings
        pm, cm = set(mappings(s.pid)), set(mappings(child))
        if pm != cm:
            fail("the child's mappings are not its parent's: the child's alone:\n%s\n"
                 "the parent's alone:\n%s" % ("\n".join(sorted(cm - pm)),
                                              "\n".join(sorted(pm - cm))))
        rc = attach(child, os.path.join(tmp, "c.trace"))
        if rc:
            detach(rc)
            st = run("stats", "--json", os.path.join(tmp, "c.trace"))
            if st.returncode or json.loads(st.stdout).get("end_reason") != "detached":
                fail("the child's own trace: %s %s" % (st.stdout[:300], st.stderr))
        os.kill(child, signal.SIGKILL)
    out, rc = s.quit()
    if rc != 3 or not out.startswith("total exe="):
        fail("the parent ended with %r, exit %d" % (out, rc))

elif mode == "pidns":
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        skip("a PID namespace takes root and unshare(1)")
    # (--mount-proc needs a mount namespace, which a chroot whose root is
    # no mount point cannot make)
    probe = subprocess.run([unshare, "-p", "-f", "--mount-proc", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    if probe.returncode:
        skip("unshare -p -f --mount-proc cannot run here: %s" % probe.stderr.strip())
    s = Server(under=(unshare, "-p", "-f", "--mount-proc"))
    inside = open("/proc/%d/status" % s.pid).read().split("NSpid:")[1].split()
    if len(inside) < 2 or inside[-1] == str(s.pid):
        fail("the server is not in a PID namespace of its own: NSpid %r" % inside)
    trace = os.path.join(tmp, "ns.trace")
    r = attach(s.pid, trace, "--all")
    if r:
        window(s, r, trace, 300)
        if os.path.exists(trace + "." + inside[-1]):
            fail("the trace went to %s.%s" % (trace, inside[-1]))
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("end_reason") != "detached":
            fail("stats of the namespaced process's trace: %s %s" % (st.stdout[:300], st.stderr))
    s.ask("work 10")
    out, rc = s.quit()
    if rc != 3 or not out.startswith("total exe="):
        fail("after the detach the namespaced program ended with %r, exit %d" % (out, rc))

elif mode == "mntns":
    # A process in a mount namespace of its own, whose plugin is a file of
    # a tmpfs mounted there: here its path names another library (another
    # build-id). The trace's symbols are the plugin's, read as the process
    # sees it (/proc/PID/root), not the file at that path here.
    unshare = shutil.which("unshare")
    decoy = os.environ.get("ATTACH_UNWPLUGIN")
    if os.geteuid() != 0 or not unshare or not decoy:
        skip("a mount namespace takes root and unshare(1)")
    probe = subprocess.run([unshare, "-m", "--propagation", "private", "mount", "-t", "tmpfs",
                            "none", tmp], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    if probe.returncode:
        skip("unshare -m cannot mount a tmpfs here: %s" % probe.stderr.strip())
    d = os.path.join(tmp, "plug")
    os.makedirs(d)
    shutil.copy(decoy, os.path.join(d, "plugin.so"))
    inside = os.path.join(d, "plugin.so")
    s = Server(plug=inside, wrap=(unshare, "-m", "--propagation", "private", "sh", "-c",
                                  'mount -t tmpfs none "$0" && cp "$1" "$0/plugin.so" && '
                                  'shift && exec "$@"', d, plugin))
    if s.ask("load") != "ok":
        fail("the server in its namespace did not load its plugin")
    ns_here, ns_there = os.readlink("/proc/self/ns/mnt"), os.readlink("/proc/%d/ns/mnt" % s.pid)
    if ns_here == ns_there:
        fail("the server is in this mount namespace")
    trace = os.path.join(tmp, "mnt.trace")
    r = attach(s.pid, trace, "--all")
    if r:
        s.ask("reset")
        s.ask("work 20")
        counts = s.ask("count")
        detach(r)
        check_counts(trace, counts, "another mount namespace: ")
    out, rc = s.quit()
    if rc != 3 or not out.startswith("total exe="):
        fail("the namespaced program ended with %r, exit %d" % (out, rc))

elif mode == "refuse":
    def refused(args, code, text):
        r = run("record", *args)
        lines = r.stderr.strip().split("\n")
        if r.returncode != code or len(lines) != 1 or text not in lines[0]:
            fail("record %s: exit %d, %r (wanted %d and %r)" %
                 (" ".join(args), r.returncode, r.stderr, code, text))
    dead = subprocess.Popen(["true"])
    dead.wait()
    refused(["-p", str(dead.pid), "-o", os.path.join(tmp, "x.trace")], 1, "no such process")
    # a zombie (not reaped yet): it cannot be traced, and that is no
    # refusal of ptrace's
    zombie = subprocess.Popen(["true"])
    for _ in range(500):
        with open("/proc/%d/stat" % zombie.pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    refused(["-p", str(zombie.pid), "-o", os.path.join(tmp, "x.trace")], 1,
            "it has ended (a zombie its parent has not reaped yet)")
    zombie.wait()
    # a process still in its dynamic loader: stopped at its exec by
    # PTRACE_TRACEME, before ld.so has loaded the C library
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    loading = subprocess.Popen(["/bin/sleep", "30"], preexec_fn=lambda: libc.ptrace(0, 0, 0, 0))
    for _ in range(500):
        with open("/proc/%d/stat" % loading.pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "t":
                break
        time.sleep(0.01)
    with open("/proc/%d/maps" % loading.pid) as f:
        maps = f.read()
    if "ld-linux" in maps and "libc.so" not in maps:
        refused(["-p", str(loading.pid), "-o", os.path.join(tmp, "x.trace")], 1,
                "still starting")
    else:
        fail("the process stopped at its exec has maps %r" % maps[:400])
    # (Popen.kill would see the ptrace stop as an exit and send nothing)
    os.kill(loading.pid, signal.SIGKILL)
    os.waitpid(loading.pid, 0)
    static = os.environ.get("STATIC_HELLO")
    if static:
        sp = subprocess.Popen([static, "--wait"], stdin=subprocess.PIPE)
        time.sleep(0.2)
        refused(["-p", str(sp.pid), "-o", os.path.join(tmp, "x.trace")], 1,
                "statically linked")
        sp.kill()
        sp.wait()
    pre = subprocess.Popen([allocprof, "record", "-q", "-o", os.path.join(tmp, "pre.trace"),
                            server, plugin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, env=env)
    pre.stdin.write("work 1\n")
    pre.stdin.flush()
    pre.stdout.readline()
    child = int(subprocess.run(["pgrep", "-P", str(pre.pid), "-x", "attach_server"],
                               stdout=subprocess.PIPE,
                               text=True).stdout.split()[0])
    refused(["-p", str(child), "-o", os.path.join(tmp, "x.trace")], 1,
            "already has the sampler")
    pre.stdin.write("quit\n")
    pre.stdin.flush()
    pre.wait()
    refused(["-p", "12", "true"], 2, "no program to run with it")
    refused(["--duration", "3", "true"], 2, "--duration goes with -p")
    refused(["-p", "1", "--duration", "x"], 2, "not a time from 1ms")
    refused(["-p", "1", "--duration", "0.5ms"], 2, "not a time from 1ms")
    # another user's process (as root, allocprof run as nobody)
    lib = os.path.realpath(os.environ.get("SAMPLER", allocprof))
    closed = nobody_cannot([allocprof], [lib]) if os.geteuid() == 0 else None
    if closed:
        print("not tried: record -p as another user (user 65534 cannot use %s)" % closed)
    elif os.geteuid() == 0 and SETPRIV:
        s = Server()
        r = subprocess.run(AS_NOBODY + [allocprof, "record", "-p", str(s.pid), "-o", "/dev/null"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if r.returncode != 1 or "belongs to another user (uid 0)" not in r.stderr or \
                len(r.stderr.strip().split("\n")) != 1:
            fail("record -p as another user: exit %d, %r" % (r.returncode, r.stderr))
        s.quit()
    # a process in another mount namespace, where the sampler's directory
    # is another file system, alone and with a PID namespace of its own
    # (unshare needs CAP_SYS_ADMIN: else not tried)
    sodir = os.path.dirname(os.path.realpath(os.environ.get("SAMPLER", "/")))
    unshare = shutil.which("unshare")
    for how in (["-m"], ["-p", "-f", "-m", "--mount-proc"]):
        if os.geteuid() != 0 or not unshare or not os.environ.get("SAMPLER"):
            break
        pidfile = os.path.join(tmp, "ns.pid")
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        ns = subprocess.Popen([unshare, *how, "--propagation", "private", "sh", "-c",
                               'mount -t tmpfs none "$1" && echo $$ >"$2" && exec sleep 60',
                               "sh", sodir, pidfile], stderr=subprocess.PIPE)
        for _ in range(100):
            if os.path.exists(pidfile) and open(pidfile).read().strip():
                break
            if ns.poll() is not None:
                break
            time.sleep(0.05)
        if ns.poll() is None:
            # with -f the program is unshare's child, its pid here another
            nspid = ns.pid if "-f" not in how else int(subprocess.run(
                ["pgrep", "-P", str(ns.pid)], stdout=subprocess.PIPE, text=True).stdout.split()[0])
            refused(["-p", str(nspid), "-o", os.path.join(tmp, "x.trace")], 1,
                    "another mount namespace")
            os.kill(nspid, signal.SIGKILL)
            ns.kill()
        else:
            print("not tried: unshare %s (%s)" % (" ".join(how), ns.stderr.read().strip()))
        ns.wait()
    # a second record -p while one is attached
    s = Server()
    r = attach(s.pid, os.path.join(tmp, "one.trace"))
    if r:
        refused(["-p", str(s.pid), "-o", os.path.join(tmp, "two.trace")], 1,
                "already has the sampler")
        detach(r)
    s.quit()

elif mode == "mainexit":
    prog = os.environ["ATTACH_MAIN_EXITS"]

    def ask(p, line):
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return p.stdout.readline()

    for late in (True, False):
        what = "main thread exited %s the attach: " % ("after" if late else "before")
        mx = subprocess.Popen([prog] + (["late"] if late else []), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
        if late and mx.stdout.readline() != "ready\n":
            fail(what + "main_exits did not start")
        if not late and mx.stdout.readline() != "gone\n":
            fail(what + "main_exits did not start")
        trace = os.path.join(tmp, "m%d.trace" % late)
        r = attach(mx.pid, trace, "--all")
        if not r:
            mx.kill()
            mx.wait()
            continue
        if late and ask(mx, "go") != "gone\n":
            fail(what + "the main thread did not exit")
        if ask(mx, "1000") != "ok 1000\n":
            fail(what + "the worker did not answer")
        # record looks at the process once a second: it is still there
        time.sleep(2.5)
        if r.poll() is not None:
            fail(what + "record ended by itself: exit %d, %r" % (r.returncode, r.stderr.read()))
            continue
        if ask(mx, "500") != "ok 500\n":
            fail(what + "the worker did not answer")
        detach(r)
        got = site_counts(trace).get("worker_site")
        if got != 1500:
            fail(what + "worker_site: the trace has %s allocations, the program made 1500" %
                 got)
        st = run("stats", "--json", trace)
        js = json.loads(st.stdout) if not st.returncode else {}
        if js.get("end_reason") != "detached":
            fail(what + "stats: %s %s" % (st.stdout[:300], st.stderr))
        # the executable and command line read through a live thread
        if js.get("program") != prog or js.get("argv", [""])[0] != prog:
            fail(what + "the trace names the program %r, %r" % (js.get("program"),
                                                                js.get("argv")))
        # the sampler inert, the process runs on and ends as it would
        if ask(mx, "10") != "ok 10\n":
            fail(what + "after the detach the worker did not answer")
        mx.stdin.close()
        if mx.wait() != 0:
            fail(what + "main_exits: exit %d" % mx.returncode)

elif mode == "nginx":
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        skip("nginx is not installed (apt-get install nginx; make check installs it)")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    root = os.path.join(tmp, "www")
    os.makedirs(root)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello from nginx\n")
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""daemon off; master_process off; worker_processes 1;
error_log %(t)s/error.log; pid %(t)s/nginx.pid;
events { worker_connections 64; }
http { access_log %(t)s/access.log; client_body_temp_path %(t)s/body;
  proxy_temp_path %(t)s/proxy; fastcgi_temp_path %(t)s/fcgi;
  uwsgi_temp_path %(t)s/uwsgi; scgi_temp_path %(t)s/scgi;
  server { listen 127.0.0.1:%(p)d; root %(r)s; } }
""" % {"t": tmp, "p": port, "r": root})
    ng = subprocess.Popen([nginx, "-c", conf, "-p", tmp], stderr=subprocess.PIPE)

    def get():
        for _ in range(100):
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                time.sleep(0.05)
        c.sendall(b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            b = c.recv(4096)
            if not b:
                break
            data += b
        c.close()
        return data.decode(errors="replace")

    if "hello from nginx" not in get():
        fail("nginx does not serve before the attach")
    trace = os.path.join(tmp, "nginx.trace")
    r = attach(ng.pid, trace, "--all")
    if r:
        for i in range(50):
            if "hello from nginx" not in get():
                fail("nginx did not serve request %d while attached" % i)
                break
        detach(r)
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("calls", 0) < 50:
            fail("the trace of nginx counts too few calls: %s %s" % (st.stdout[:300],
                                                                   st.stderr))
    for i in range(50):
        if "hello from nginx" not in get():
            fail("nginx did not serve request %d after the detach" % i)
            break
    if ng.poll() is not None:
        fail("nginx ended: %r" % ng.stderr.read())
    ng.terminate()
    ng.wait()

elif mode == "python3":
    script = ("import sys\n"
              "print('ready', flush=True)\n"
              "for line in sys.stdin:\n"
              "    d = {}\n"
              "    for i in range(int(line)):\n"
              "        d[str(i)] = [i] * 3\n"
              "    print(len(d), flush=True)\n")
    # PYTHONMALLOC=malloc: its objects from malloc, not from its own arenas
    py = subprocess.Popen(["/usr/bin/python3", "-c", script], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True,
                          env=dict(env, PYTHONMALLOC="malloc"))
    if py.stdout.readline() != "ready\n":
        fail("python3 did not start")
    trace = os.path.join(tmp, "py.trace")
    r = attach(py.pid, trace, "--all")
    outs = []
    if r:
        for n in (20000, 30000):
            py.stdin.write("%d\n" % n)
            py.stdin.flush()
            outs.append(py.stdout.readline())
        detach(r)
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("calls", 0) < 100000:
            fail("the trace of python3 counts too few calls: %s %s" % (st.stdout[:300],
                                                                     st.stderr))
    py.stdin.write("1000\n")
    py.stdin.close()
    outs += py.stdout.readlines()
    if py.wait() != 0 or outs != ["20000\n", "30000\n", "1000\n"]:
        fail("python3 attached: exit %d, output %r" % (py.returncode, outs))

elif mode == "comm":
    script = ("import ctypes, sys\n"
              "ctypes.CDLL(None).prctl(15, b'\\x1b]0;pwn\\x07\\x1b[2J', 0, 0, 0)\n"
              "print('ready', flush=True)\n"
              "for line in sys.stdin:\n"
              "    print(len([str(i) for i in range(int(line))]), flush=True)\n")
    py = subprocess.Popen(["/usr/bin/python3", "-c", script], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    if py.stdout.readline() != "ready\n":
        fail("python3 did not start")
    with open("/proc/%d/comm" % py.pid) as f:
        if "\x1b" not in f.read():
            fail("the process could not name itself")
    r = subprocess.Popen([allocprof, "record", "-p", str(py.pid)], cwd=tmp,
                         stderr=subprocess.PIPE, env=env)
    first = r.stderr.readline()
    py.stdin.write("1000\n")
    py.stdin.flush()
    py.stdout.readline()
    r.send_signal(signal.SIGINT)
    err = first + r.stderr.read()
    if r.wait() != 0 or b"attached to" not in err:
        fail("record -p: exit %d, %r" % (r.returncode, err))
    if any(c < 0x20 and c != 0x0a for c in err):
        fail("record -p printed control characters: %r" % err)
    names = os.listdir(tmp)
    if len(names) != 1 or not names[0].startswith("allocprof.") or \
            any(ord(c) < 0x20 or ord(c) == 0x7f for c in names[0]):
        fail("the default trace's name: %r" % names)
    py.stdin.close()
    py.wait()

elif mode == "futex":
    # every thread in a futex wait; the process ends while attached
    prog = os.environ["ATTACH_FUTEX"]
    native = subprocess.run(["sh", "-c", 'sleep 0.2 & "$0" 5000 & p=$!; wait %1; '
                             'kill -USR1 $p; wait $p', prog],
                            stdout=subprocess.PIPE, text=True)
    fp = subprocess.Popen([prog, "5000"], stdout=subprocess.PIPE, text=True)
    if fp.stdout.readline() != "ready\n":
        fail("attach_futex did not start")
    trace = os.path.join(tmp, "f.trace")
    r = attach(fp.pid, trace, "--all")
    if r:
        fp.send_signal(signal.SIGUSR1)
        out = fp.stdout.read()
        if fp.wait() != 0 or out != "worker 5000\njoined\n":
            fail("attach_futex attached: exit %d, %r" % (fp.returncode, out))
        err = r.stderr.read()
        if r.wait() != 0 or "is gone" not in err:
            fail("record -p as the process ended: exit %d, %r" % (r.returncode, err))
        got = site_counts(trace)
        if got.get("worker_site") != 5000:
            fail("worker_site: the trace has %s allocations, the program made 5000" %
                 got.get("worker_site"))
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("end_reason") != "exit":
            fail("the trace of a process that exited while attached: %s %s" %
                 (st.stdout[:400], st.stderr))
    if native.stdout != "ready\nworker 5000\njoined\n":
        fail("attach_futex natively: %r" % native.stdout)

elif mode == "asleep":
    # a process whose only thread sleeps (clock_nanosleep): after the
    # attach's calls its sleep goes on through restart_syscall, where the
    # detach must find it too; twice, and the sleep keeps its length
    t0 = time.monotonic()
    sl = subprocess.Popen([os.environ["ATTACH_SLEEPER"], "1", "7000"], stdout=subprocess.PIPE,
                          text=True)
    if sl.stdout.readline() != "ready\n":
        fail("attach_sleeper did not start")
    time.sleep(0.3)
    before = fds(sl.pid)
    # an attach that fails (the process, another user now, cannot make its
    # trace in a directory it may not write) leaves it attachable
    lib = os.path.realpath(os.environ.get("SAMPLER", allocprof))
    closed = nobody_cannot([os.environ["ATTACH_SLEEPER"]], [lib]) if os.getuid() == 0 else None
    if closed or (os.getuid() == 0 and not SETPRIV):
        print("not tried: an attach that failed, then one that did, to another user's "
              "process (user 65534 cannot use %s)" % (closed or "setpriv: not found"))
    elif os.getuid() == 0:
        ro = os.path.join(tmp, "ro")
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, 0o755)
        nb = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                               os.environ["ATTACH_SLEEPER"], "1", "3000"],
                              stdout=subprocess.PIPE, text=True)
        if nb.stdout.readline() == "ready\n":
            r1 = subprocess.run([allocprof, "record", "-p", str(nb.pid), "--duration", "200ms",
                                 "-o", os.path.join(ro, "n.trace")], capture_output=True,
                                text=True, env=env)
            wr = os.path.join(tmp, "rw")
            os.makedirs(wr, exist_ok=True)
            os.chmod(wr, 0o1777)
            r2 = subprocess.run([allocprof, "record", "-p", str(nb.pid), "--duration", "200ms",
                                 "-o", os.path.join(wr, "n.trace")], capture_output=True,
                                text=True, env=env)
            if "ptrace not permitted" not in r1.stderr and (
                    r1.returncode == 0 or r2.returncode != 0 or "detached; wrote" not in r2.stderr):
                fail("an attach after one that failed: %r, then %r" % (r1.stderr, r2.stderr))
        out = nb.communicate()[0]
        if nb.returncode != 0 or "errno 0" not in out:
            fail("the sleeper whose attach failed: exit %d, %r" % (nb.returncode, out))
    for i in range(2):
        trace = os.path.join(tmp, "s%d.trace" % i)
        r = subprocess.run([allocprof, "record", "-p", str(sl.pid), "--duration", "400ms",
                            "-o", trace], capture_output=True, text=True, env=env)
        if "ptrace not permitted" in r.stderr and not attached_once:
            sl.kill()
            skip("ptrace is not permitted here: " + r.stderr.strip())
        attached_once = True
        if r.returncode != 0 or "detached; wrote" not in r.stderr:
            fail("attach %d to a sleeping process: exit %d, %r" % (i, r.returncode, r.stderr))
        st = run("stats", "--json", trace)
        if st.returncode or json.loads(st.stdout).get("end_reason") != "detached":
            fail("attach %d: stats %s %s" % (i, st.stdout[:300], st.stderr))
        d = fds_diff(fds(sl.pid), before)
        if d:
            fail("after detach %d the descriptors differ from before:\n%s" % (i, d))
    out = sl.communicate()[0]
    took = time.monotonic() - t0
    if sl.returncode != 0 or not 6.9 <= took < 11:
        fail("a sleep of 7 s attached twice: exit %d after %.1f s" % (sl.returncode, took))
    # the thread's errno as it was before record's calls in it
    if out != "sleep 0: rc 0 errno 0\n":
        fail("the sleeper said %r, natively 'sleep 0: rc 0 errno 0'" % out)

else:
    sys.exit("unknown mode " + mode)

if failures:
    sys.exit(1)
print("ok")
