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
           the process's mappings and descriptors after the last equal
           those after the first, and it ends as a native run
  refuse   one line and exit 1 for: no such process, a statically
           linked one, one that already has the sampler (preloaded, or
           attached by another record -p), another user's (as root, record
           run as nobody), one in another mount namespace where the
           sampler's directory is another file system (as root); usage
           errors exit 2
  futex    a program whose every thread waits in a futex (the calls
           are made there after a second without a better place); it
           ends while attached: the trace ends with its exit, counts exact
  nginx    a real server (nginx from Debian) attached while it serves
           loopback requests, detached, and still serving

usage: attach.py ALLOCPROF SERVER PLUGIN TMPDIR MODE [ARG]
"""
import json
import os
import shutil
import signal
import socket
import subprocess
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
    def __init__(self):
        self.p = subprocess.Popen([server, plugin], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=server_env)
        self.pid = self.p.pid

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().rstrip("\n")

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        out = self.p.stdout.read()
        return out, self.p.wait()


def attach(pid, trace, *opts):
    """record -p PID in the background, once it said it is attached."""
    r = subprocess.Popen([allocprof, "record", "-p", str(pid), "-o", trace, *opts],
                         stderr=subprocess.PIPE, text=True, env=env)
    line = r.stderr.readline()
    if "attached to %d" % pid not in line:
        rest = r.stderr.read()
        r.wait()
        if "ptrace not permitted" in line + rest:
            skip("ptrace is not permitted here: " + (line + rest).strip())
        fail("record -p said %r %r (exit %s)" % (line, rest, r.returncode))
        return None
    return r


def detach(r):
    r.send_signal(signal.SIGINT)
    err = r.stderr.read()
    rc = r.wait()
    if rc != 0 or "detached; wrote" not in err:
        fail("detach: exit %d, %r" % (rc, err))
    return err


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
    return len(os.listdir("/proc/%d/fd" % pid))


before = ["work 300"]
after = ["work 200", "count"]

if mode in ("window", "jemalloc"):
    s = Server()
    for c in before:
        s.ask(c)
    trace = os.path.join(tmp, "w.trace")
    fds_before = set(os.listdir("/proc/%d/fd" % s.pid))
    r = attach(s.pid, trace, "--all")
    if r:
        s.ask("reset")
        s.ask("work 500")
        if s.ask("load") != "ok":
            fail("the plugin did not load")
        s.ask("work 400")
        counts = s.ask("count")
        detach(r)
        want = dict(kv.split("=") for kv in counts.split())
        got = site_counts(trace)
        for fn, key in (("exe_site", "exe"), ("attach_lib_site", "lib"),
                        ("attach_plugin_site", "plugin")):
            if got.get(fn) != int(want[key]):
                fail("%s: the trace has %s allocations, the program made %s" %
                     (fn, got.get(fn), want[key]))
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
        # what stays open: libunwind's pipe, past the program's descriptors
        for fd in set(os.listdir("/proc/%d/fd" % s.pid)) - fds_before:
            what = os.readlink("/proc/%d/fd/%s" % (s.pid, fd))
            if int(fd) < 700 or not what.startswith("pipe:"):
                fail("descriptor %s (%s) left open in the program's range" % (fd, what))
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
        now = (len(maps), fds(s.pid))
        if first is None:
            first, first_maps = now, maps
        elif now != first:
            fail("cycle %d: %d mappings and %d descriptors, %d and %d after the first; "
                 "mappings now not then:\n%s" %
                 (i, now[0], now[1], first[0], first[1],
                  "\n".join(m for m in maps if m not in first_maps)))
            break
    out, rc = s.quit()
    if rc != 3 or not out.startswith("total exe="):
        fail("after %d cycles the program ended with %r, exit %d" % (n, out, rc))

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
    refused(["-p", "1", "--duration", "x"], 2, "not a number of seconds")
    # another user's process (as root, allocprof run as nobody)
    setpriv = shutil.which("setpriv")
    nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] if setpriv else []
    # (a build tree closed to others, under /root, cannot be run by nobody)
    lib = os.path.realpath(os.environ.get("SAMPLER", allocprof))
    if os.geteuid() == 0 and setpriv and subprocess.run(
            nobody + ["sh", "-c", 'test -x "$1" && test -r "$2"', "sh", allocprof, lib]).returncode:
        print("not tried: record -p as another user (user 65534 cannot run %s)" % allocprof)
    elif os.geteuid() == 0 and setpriv:
        s = Server()
        r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                            allocprof, "record", "-p", str(s.pid), "-o", "/dev/null"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if r.returncode != 1 or "belongs to another user (uid 0)" not in r.stderr or \
                len(r.stderr.strip().split("\n")) != 1:
            fail("record -p as another user: exit %d, %r" % (r.returncode, r.stderr))
        s.quit()
    # a process in another mount namespace, where the sampler's directory
    # is another file system (unshare needs CAP_SYS_ADMIN: else not tried)
    sodir = os.path.dirname(os.path.realpath(os.environ.get("SAMPLER", "/")))
    unshare = shutil.which("unshare")
    if os.geteuid() == 0 and unshare and os.environ.get("SAMPLER"):
        pidfile = os.path.join(tmp, "ns.pid")
        ns = subprocess.Popen([unshare, "-m", "--propagation", "private", "sh", "-c",
                               'mount -t tmpfs none "$1" && echo $$ >"$2" && exec sleep 60',
                               "sh", sodir, pidfile], stderr=subprocess.PIPE)
        for _ in range(100):
            if os.path.exists(pidfile) and open(pidfile).read().strip():
                break
            if ns.poll() is not None:
                break
            time.sleep(0.05)
        if ns.poll() is None:
            nspid = int(open(pidfile).read())
            refused(["-p", str(nspid), "-o", os.path.join(tmp, "x.trace")], 1,
                    "another mount namespace")
            ns.kill()
        else:
            print("not tried: a mount namespace (%s)" % ns.stderr.read().strip())
        ns.wait()
    # a second record -p while one is attached
    s = Server()
    r = attach(s.pid, os.path.join(tmp, "one.trace"))
    if r:
        refused(["-p", str(s.pid), "-o", os.path.join(tmp, "two.trace")], 1,
                "already has the sampler")
        detach(r)
    s.quit()

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

else:
    sys.exit("unknown mode " + mode)

if failures:
    sys.exit(1)
print("ok")
