"""cdp.py - headless Chromium driven over the DevTools protocol, with the standard library
only: a minimal WebSocket client (RFC 6455: the client's masked text frames, the server's
unmasked ones, fragments, ping) and the few protocol calls the dashboard tests need.

    with Browser(workdir) as b:
        page = b.load("http://127.0.0.1:PORT/dashboard/health", "health.png")
        page.html, page.problems, page.seconds

problems lists every console message of level error or warning, every exception, every
log entry (Log domain: network failures, CSP refusals, which Chromium reports there) and
every Content-Security-Policy issue (Audits domain) seen while the page loaded.
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

LOAD_TIMEOUT = 30


class Fatal(Exception):
    pass


def chromium():
    """The chromium binary (Debian's package), or Fatal."""
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    raise Fatal("chromium not found: apt-get install chromium (scripts/lib/stack.sh "
                "STACK_COMMANDS installs it for scripts/test.sh)")


class WebSocket:
    """A text-only WebSocket client over one TCP connection."""

    def __init__(self, url, timeout=LOAD_TIMEOUT):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n"
                           % (u.path, u.hostname, u.port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise Fatal("websocket: connection closed during the handshake")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise Fatal("websocket: no 101: %r" % head[:200])

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise Fatal("websocket: connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _frame(self, opcode, data):
        head = bytes([0x80 | opcode])
        n = len(data)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def send(self, text):
        self._frame(0x1, text.encode())

    def recv(self):
        """The next text message (fragments joined; pings answered)."""
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 0x9:
                self._frame(0xA, data)
                continue
            if op == 0x8:
                raise Fatal("websocket: closed by the browser")
            if op in (0x0, 0x1, 0x2):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Page:
    def __init__(self, url):
        self.url = url
        self.html = ""
        self.problems = []
        self.seconds = 0.0


class Browser:
    """One headless Chromium with one tab, for the life of a with block."""

    def __init__(self, workdir):
        self.dir = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
        self.proc = None
        self.ws = None
        self.seq = 0
        self.events = []

    def __enter__(self):
        self.proc = subprocess.Popen(
            [chromium(), "--headless=new", "--disable-gpu", "--no-sandbox",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync",
             "--remote-debugging-port=0", "--user-data-dir=" + self.dir,
             "--window-size=1280,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "chromium.log"), "w"))
        port = self._port()
        deadline = time.time() + LOAD_TIMEOUT
        while True:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port,
                                        timeout=10) as r:
                tabs = [t for t in json.load(r) if t.get("type") == "page"]
            if tabs or time.time() > deadline:
                break
            time.sleep(0.1)
        if not tabs:
            raise Fatal("chromium opened no tab")
        self.ws = WebSocket(tabs[0]["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log", "Audits"):
            self.call(domain + ".enable")
        return self

    def _port(self):
        f = os.path.join(self.dir, "DevToolsActivePort")
        deadline = time.time() + LOAD_TIMEOUT
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Fatal("chromium exited (%d); see %s/chromium.log"
                            % (self.proc.returncode, self.dir))
            try:
                with open(f) as fh:
                    line = fh.readline().strip()
                if line:
                    return int(line)
            except OSError:
                pass
            time.sleep(0.1)
        raise Fatal("chromium wrote no DevToolsActivePort within %d s" % LOAD_TIMEOUT)

    def __exit__(self, *exc):
        if self.ws:
            self.ws.close()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def call(self, method, **params):
        """Sends one command; returns its result (events meanwhile kept)."""
        self.seq += 1
        me = self.seq
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == me:
                if "error" in m:
                    raise Fatal("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def _wait_load(self, deadline):
        while True:
            for i, m in enumerate(self.events):
                if m["method"] == "Page.loadEventFired":
                    del self.events[i]
                    return
            if time.time() > deadline:
                raise Fatal("no load event within %d s" % LOAD_TIMEOUT)
            self.events.append(json.loads(self.ws.recv()))

    @staticmethod
    def problem(m):
        """The text of event m when it is a problem, else None."""
        p = m.get("params", {})
        if m["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error",
                                                                         "warning"):
            return "console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        if m["method"] == "Runtime.exceptionThrown":
            return "exception: %s" % p.get("exceptionDetails", {}).get("text")
        if m["method"] == "Log.entryAdded":
            e = p.get("entry", {})
            return "log %s/%s: %s %s" % (e.get("source"), e.get("level"), e.get("text"),
                                         e.get("url", ""))
        if m["method"] == "Audits.issueAdded":
            i = p.get("issue", {})
            if i.get("code") == "ContentSecurityPolicyIssue":
                return "CSP violation: %s" % json.dumps(i.get("details", {}))[:400]
        return None

    def load(self, url, screenshot=None):
        """Loads url; the Page with its HTML, problems, load time (s)."""
        page = Page(url)
        self.events = []
        t0 = time.time()
        self.call("Page.navigate", url=url)
        self._wait_load(t0 + LOAD_TIMEOUT)
        page.seconds = time.time() - t0
        # late reports (CSP, the favicon) arrive after the load event
        time.sleep(0.3)
        r = self.call("Runtime.evaluate", expression="document.documentElement.outerHTML",
                      returnByValue=True)
        page.html = r.get("result", {}).get("value", "")
        if screenshot:
            shot = self.call("Page.captureScreenshot", format="png",
                             captureBeyondViewport=True)
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        page.problems = [t for t in map(self.problem, self.events) if t]
        return page
