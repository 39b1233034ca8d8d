"""tests/notify/notify_env.py - what the asyncexec-notify tests share.

The stack of scripts/test.sh (ASYNCEXEC_TEST_CONFIG, ASYNCEXEC_TEST_HTTP), the admin
binary (ASYNCEXEC_ADMIN), the sender (ASYNCEXEC_NOTIFY); a receiver on loopback that
answers by path (as tests/webhook/receiver.mjs does) and records every request; the
Standard Webhooks signature checked here with Python's hmac, independently of the C code.
Every wait has a deadline.
"""
import atexit
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse

ADMIN = os.environ.get("ASYNCEXEC_ADMIN", "")
NOTIFY = os.environ.get("ASYNCEXEC_NOTIFY", "")
CONFIG = os.environ.get("ASYNCEXEC_TEST_CONFIG", "")
HTTP = os.environ.get("ASYNCEXEC_TEST_HTTP", "")


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def check(self, what, ok, got=""):
        if ok:
            self.passed += 1
            print("ok   " + what)
        else:
            self.failed += 1
            print("FAIL " + what + (": %s" % (got,) if got != "" else ""))
        return ok

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 0 if self.failed == 0 and self.passed > 0 else 1

    def done_sender(self, rc, snd):
        """done() at the end of a test of one sender snd (None: it never started):
        its exit status on SIGTERM (rc, snd.stop()'s) checked, its log's tail
        printed."""
        self.check("SIGTERM: exit 0", rc == 0, rc)
        if snd:
            print("# the sender's log:\n" + snd.log_text()[-2000:])
        return self.done()


class ClockWatch:
    """Samples the wall clock against the monotonic one every 50 ms from start() to
    stop(): forward() is the largest step forward (s), backward() the largest back. A
    lease's expiry is a wall-clock time (the sender's): a step forward past the lease
    lets a live lease lapse, and another sender then sends that delivery again, as at
    least once allows."""

    def __init__(self):
        self.fwd = self.back = 0.0
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        last = time.time() - time.monotonic()
        while not self.halt.wait(0.05):
            off = time.time() - time.monotonic()
            self.fwd, self.back = max(self.fwd, off - last), max(self.back, last - off)
            last = off

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.halt.set()
        self.thread.join()

    def forward(self):
        return self.fwd

    def backward(self):
        return self.back


def until(pred, seconds, step=0.05):
    """pred() once it is true, or its last value at the deadline (seconds from now),
    asked every step seconds."""
    end = time.monotonic() + seconds
    while True:
        v = pred()
        if v or time.monotonic() > end:
            return v
        time.sleep(step)


def need_env():
    missing = [n for n, v in (("ASYNCEXEC_ADMIN", ADMIN), ("ASYNCEXEC_NOTIFY", NOTIFY),
                              ("ASYNCEXEC_TEST_CONFIG", CONFIG),
                              ("ASYNCEXEC_TEST_HTTP", HTTP)) if not v]
    if missing:
        raise SystemExit("FAIL the environment lacks %s (run through scripts/test.sh)"
                         % ", ".join(missing))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_KEYED = {}


def keyed_config():
    """The test configuration plus a webhook_key_file of this test's own (0640)."""
    if "conf" not in _KEYED:
        d = tmpdir("test-notify-key.")
        key = os.path.join(d, "webhook.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
        os.write(fd, base64.b64encode(os.urandom(32)) + b"\n")
        os.close(fd)
        conf = os.path.join(d, "asyncexec.conf")
        base = re.sub(r"(?m)^\s*webhook_key_file\s*=.*$", "",
                      open(CONFIG, encoding="utf-8").read())
        with open(conf, "w", encoding="utf-8") as f:
            f.write(base + "\nwebhook_key_file = %s\n" % key)
        _KEYED["conf"] = conf
    return _KEYED["conf"]


def admin(*args, check=True):
    r = subprocess.run([ADMIN, "--config", keyed_config()] + list(args), capture_output=True,
                       text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError("asyncexec-admin %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                               r.stderr.strip()))
    return r


def webhook_add(tenant, url, route=None, events=None):
    """(endpoint id, secret text) of a new endpoint."""
    args = ["webhook", "add", "--tenant", tenant, "--url", url, "--json"]
    if route:
        args += ["--route", route]
    if events:
        args += ["--events", events]
    doc = json.loads(admin(*args).stdout)
    return int(doc["id"]), doc["secret"]


def api(method, path, body=None, headers=None, timeout=30):
    """(status, parsed JSON or None, headers) of one request to the stack's nginx."""
    host, port = HTTP.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    data = None if body is None else (body if isinstance(body, bytes)
                                      else json.dumps(body).encode())
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    raw = r.read()
    c.close()
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = None
    return r.status, doc, dict(r.getheaders())


class Route:
    """A fresh route with a consumer key of tenant and a backend key."""

    def __init__(self, route, tenant):
        self.route, self.tenant = route, tenant
        admin("route", "add", route)
        self.ckey = admin("key", "create", "--tenant", tenant).stdout.strip()
        self.bkey = admin("backend-key", "create", "--route", route).stdout.strip()

    def submit(self, cid, body=None):
        st, doc, _ = api("POST", "/v1/executions/" + self.route, body or {"n": 1},
                         {"Authorization": "Bearer " + self.ckey, "X-Correlation-Id": cid})
        assert st == 202, (st, doc)
        return doc

    def cancel(self, cid, poll_token):
        st, doc, _ = api("POST", "/v1/executions/%s/%s/cancel" % (self.route, cid), {},
                         {"Authorization": "Bearer " + self.ckey, "X-Poll-Token": poll_token})
        return st, doc

    def claim(self, n):
        st, doc, _ = api("POST", "/v1/backend/%s/claim" % self.route,
                         {"max": n, "leaseSeconds": 300},
                         {"Authorization": "Bearer " + self.bkey})
        assert st == 200, (st, doc)
        return doc["executions"]

    def callback(self, item, verb, body):
        st, doc, _ = api("POST", "/v1/callbacks/%s/%s" % (item["id"], verb), body,
                         {"Authorization": "Bearer " + self.bkey,
                          "X-Callback-Token": item["callbackToken"]})
        return st, doc


def verify(secret, headers, body):
    """'' when the Standard Webhooks signature of (headers, body) is right, else why."""
    key = base64.b64decode(secret[len("whsec_"):])
    mid, ts = headers.get("webhook-id"), headers.get("webhook-timestamp")
    sigs = headers.get("webhook-signature", "")
    if not mid or not ts or not sigs:
        return "missing webhook headers"
    if abs(int(ts) - time.time()) > 300:
        return "timestamp %s too far from now" % ts
    want = base64.b64encode(hmac.new(key, b"%s.%s.%s" % (mid.encode(), ts.encode(), body),
                                     hashlib.sha256).digest()).decode()
    for s in sigs.split(" "):
        v, _, sig = s.partition(",")
        if v == "v1" and hmac.compare_digest(sig, want):
            return ""
    return "no signature matches"


class Receiver:
    """An HTTP receiver on 127.0.0.1 answering by path; every request recorded."""

    def __init__(self, tls=None):
        """tls: (certificate file, key file) to answer HTTPS instead of HTTP."""
        self.requests, self.lock, self.seen = [], threading.Lock(), {}
        self.gates = {}
        self.scheme = "https" if tls else "http"
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                u = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(u.query))
                rec = {"path": u.path, "query": q, "body": body, "at": time.time(),
                       "headers": {k.lower(): v for k, v in self.headers.items()}}
                with outer.lock:
                    outer.requests.append(rec)
                    mid = rec["headers"].get("webhook-id", "")
                    outer.seen[mid] = outer.seen.get(mid, 0) + 1
                    seen = outer.seen[mid]
                outer.answer(self, u.path, q, seen)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None     # /reset's broken pipe, on purpose
        self.port = self.server.server_address[1]
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def send(h, status, headers=None, body=b""):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def answer(self, h, path, q, seen):
        m = re.match(r"^/status/(\d+)$", path)
        if path.startswith("/ok"):
            self.send(h, 204)
        elif m:
            extra = {"Retry-After": q["retry_after"]} if "retry_after" in q else {}
            self.send(h, int(m.group(1)), extra, b"no")
        elif path == "/redirect":
            self.send(h, 302, {"Location": "/ok"})
        elif path == "/slow":
            time.sleep(int(q.get("ms", "1000")) / 1000)
            self.send(h, 204)
        elif path == "/gate":
            self.gate(q.get("k", "")).wait(int(q.get("ms", "30000")) / 1000)
            self.send(h, int(q.get("status", "204")))
        elif path == "/hang":
            time.sleep(int(q.get("ms", "10000")) / 1000)
        elif path == "/reset":
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    b"\x01\x00\x00\x00\x00\x00\x00\x00")
            h.close_connection = True
            h.connection.close()
        elif path == "/big":
            self.send(h, 200, {}, b"x" * (1 << 20))
        elif path == "/bighead":     # 200 with 100 KiB of headers, a short body
            self.send(h, 200, {"X-Pad-%d" % i: "h" * 1000 for i in range(100)}, b"ok")
        elif path == "/flaky":
            self.send(h, 500 if seen <= int(q.get("fail", "1")) else 204)
        else:
            self.send(h, 404)

    def gate(self, name):
        """The event a /gate?k=name request waits on (at most its ms) to answer 204
        (or its status=)."""
        with self.lock:
            return self.gates.setdefault(name, threading.Event())

    def open_gate(self, name):
        self.gate(name).set()

    def url(self, path, host="127.0.0.1"):
        return "%s://%s:%d%s" % (self.scheme, host, self.port, path)

    def matching(self, pred):
        with self.lock:
            return [r for r in self.requests if pred(r)]

    def wait(self, pred, count, seconds):
        """The requests matching pred once there are count of them (or at the deadline)."""
        until(lambda: len(self.matching(pred)) >= count, seconds)
        return self.matching(pred)

    def close(self):
        self.server.shutdown()


class Sender:
    """asyncexec-notify on a copy of the test configuration with extra keys."""

    def __init__(self, tmp, name, **keys):
        self.tmp, self.name = tmp, name
        self.port = free_port()
        self.conf = os.path.join(tmp, name + ".conf")
        self.log = os.path.join(tmp, name + ".log")
        text = open(keyed_config(), encoding="utf-8").read()
        keys.setdefault("notify_listen", "127.0.0.1:%d" % self.port)
        for k, v in keys.items():      # a key already there is replaced (None: dropped)
            line = "" if v is None else "%s = %s" % (k, v)
            pat = r"(?m)^\s*%s\s*=.*$" % re.escape(k)
            if re.search(pat, text):
                text = re.sub(pat, lambda m: line, text)
            elif v is not None:
                text += "\n" + line + "\n"
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write(text)
        self.proc = None

    def start(self):
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen([NOTIFY, "--config", self.conf], stdout=self.logf,
                                     stderr=self.logf)
        if not until(self._ready, 20):
            raise RuntimeError("%s: /readyz not 200 within 20 s" % self.name)

    def _ready(self):
        """Whether /readyz answers 200; raises when the sender exited."""
        if self.proc.poll() is not None:
            raise RuntimeError("%s exited %d: %s" % (self.name, self.proc.returncode,
                                                     self.log_text()[-2000:]))
        return self.get("/readyz")[0] == 200

    def get(self, path):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            c.request("GET", path)
            r = c.getresponse()
            body = r.read().decode()
            c.close()
            return r.status, body
        except OSError:
            return 0, ""

    def metric(self, name):
        _, text = self.get("/metrics")
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, seconds=30):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.logf.close()

    def log_text(self):
        try:
            return open(self.log, encoding="utf-8", errors="replace").read()
        except OSError:
            return ""


def tmpdir(prefix="test-notify."):
    """A temporary directory, removed when the test exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def deliveries(endpoint_id, status=None):
    args = ["webhook", "deliveries", str(endpoint_id), "--json"]
    if status:
        args += ["--status", status]
    doc = json.loads(admin(*args).stdout)
    return doc if isinstance(doc, list) else doc.get("deliveries", doc.get("items", []))


def config_values(path=None):
    vals = {}
    for line in open(path or CONFIG, encoding="utf-8"):
        m = re.match(r"\s*([a-z_]+)\s*=\s*(.*?)\s*$", line)
        if m:
            vals[m.group(1)] = m.group(2)
    return vals


SIDE_INIT = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"


def sql(query):
    """Rows (lists of strings) of one statement run as the service's database user."""
    v = config_values()
    env = dict(os.environ)
    if v.get("db_password_file"):
        env["MYSQL_PWD"] = open(v["db_password_file"], encoding="utf-8").readline().strip()
    elif v.get("db_password"):
        env["MYSQL_PWD"] = v["db_password"]
    # READ COMMITTED, as every fixture connection (tests/util/side.h)
    args = ["mariadb", "-N", "-B", "--init-command=" + SIDE_INIT, "-u",
            v.get("db_user", "asyncexec")]
    if v.get("db_socket"):
        args.append("--socket=" + v["db_socket"])
    else:
        args += ["-h", v.get("db_host", "127.0.0.1"), "-P", v.get("db_port", "3306")]
    args += ["-e", query, v.get("db_name", "asyncexec")]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("mariadb: %s" % r.stderr.strip())
    return [line.split("\t") for line in r.stdout.splitlines()]


def self_signed(tmp):
    """(certificate, key) files of a fresh self-signed certificate for 127.0.0.1."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                    "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True,
                   timeout=60)
    return cert, key
