"""Headless Chromium driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on fd 3, replies and events on fd 4,
each message JSON ending in a NUL byte). The standard library only: no
npm, no websocket. For tests/report/html.py."""
import base64
import json
import os
import shutil
import subprocess


class Browser:
    def __init__(self, tmp, width=1300, height=900):
        exe = shutil.which("chromium")
        if not exe:
            raise FileNotFoundError("chromium")
        to_child_r, self.w = os.pipe()
        self.r, from_child_w = os.pipe()
        # the child's fd 3 reads our commands, its fd 4 writes to us
        # (through high fds first: either may be 3 or 4 already)
        def setup():
            a, b = os.dup2(to_child_r, 100), os.dup2(from_child_w, 101)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--user-data-dir=" + tmp + "/chromium-profile",
             "--window-size=%d,%d" % (width, height), "about:blank"],
            pass_fds=(3, 4), preexec_fn=setup,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        t = self.send("Target.createTarget", url="about:blank")
        a = self.send("Target.attachToTarget", targetId=t["targetId"], flatten=True)
        self.session = a["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read_message(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read_message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method):
        for i, e in enumerate(self.events):
            if e["method"] == method:
                return self.events.pop(i)
        while True:
            m = self._read_message()
            if m.get("method") == method:
                return m
            if "method" in m:
                self.events.append(m)

    def navigate(self, url):
        self.send("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def eval(self, expr):
        r = self.send("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr[:80], r["exceptionDetails"]))
        return r["result"].get("value")

    def mouse(self, kind, x, y, button="none", buttons=0):
        self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button,
                  buttons=buttons, clickCount=1 if kind != "mouseMoved" else 0)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, "left", 1)
        self.mouse("mouseReleased", x, y, "left", 0)

    def drag(self, x0, y0, x1, y1, steps=5):
        self.mouse("mouseMoved", x0, y0)
        self.mouse("mousePressed", x0, y0, "left", 1)
        for k in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps,
                       "left", 1)
        self.mouse("mouseReleased", x1, y1, "left", 0)

    def screenshot(self, path, full=True):
        params = {"format": "png"}
        if full:
            m = self.send("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        r = self.send("Page.captureScreenshot", **params)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def errors(self):
        """What the page said was wrong: exceptions, console errors and
        warnings, log entries of level error."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append("exception: %s" % p["exceptionDetails"])
            elif e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "warning", "assert"):
                out.append("console.%s: %s" % (p["type"], [a.get("value") for a in p["args"]]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("log: %s" % p["entry"]["text"])
        return out

    def close(self):
        try:
            self.send("Browser.close")
        except (EOFError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)
