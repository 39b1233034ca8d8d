"""tests/proc/test_nginx_keep.py - kept FastCGI connections through a real nginx.

nginx/asyncexec.conf ships fastcgi_keep_conn on with a keepalive cache in upstream
asyncexec_app. This test takes that file as scripts/test.sh's stack rendered it (it fails
if either setting is gone) and puts a private nginx with it in front of a private
asyncexec-fcgi master (2 workers, its own socket beside the stack's, the stack's MariaDB).
Then:

  - load: client threads submit (POST, which nginx never sends twice) and poll over
    keep-alive HTTP connections, while the master is reloaded (SIGHUP) each time another
    RELOAD_EVERY answers have come, RELOADS times: every answer is 202 or 200, nginx logs
    no upstream error, and the workers were replaced;
  - kept: right after the load, connections nginx keeps to the application are still
    open (server side of the socket, /proc/net/unix), i.e. keep-alive is in effect;
  - stop: SIGTERM to the master with those connections open: it exits 0 once nginx has
    closed them (its keepalive_timeout), before the workers' retire window ends.

Every wait has a deadline. Needs ASYNCEXEC_TEST_CONFIG (scripts/test.sh, whose rendered
nginx configuration it starts from), ASYNCEXEC_FCGI and ASYNCEXEC_ADMIN.
"""
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "notify"))
from notify_env import Checks, free_port  # noqa: E402

FCGI = os.environ.get("ASYNCEXEC_FCGI", "")
ADMIN = os.environ.get("ASYNCEXEC_ADMIN", "")
CONFIG = os.environ.get("ASYNCEXEC_TEST_CONFIG", "")

CLIENTS = 8
RELOAD_EVERY = 300  # answers between two reloads
RELOADS = 4


def define(path, name):
    """The number #defined as name in path (under src/)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", path)
    m = re.search(r"#define\s+%s\s+(\d+)" % name, open(src, encoding="utf-8").read())
    if not m:
        raise SystemExit("FAIL src/%s defines no %s" % (path, name))
    return int(m.group(1))


def retire_s():
    """How long after SIGTERM a stopping worker serves its kept connections at most, in
    seconds (retire_window, src/serve/worker.c): STOP_KILL_SECONDS less the longest
    database wait of a request (DB_IO_TIMEOUT_SECONDS and one db_connect_timeout, the
    default 2 s: the stack has one server) and RETIRE_SLACK_MS, RETIRE_MS at most."""
    w = define("serve/worker.h", "STOP_KILL_SECONDS") * 1000 - \
        define("serve/worker.c", "RETIRE_SLACK_MS") - \
        (define("db/db_io.h", "DB_IO_TIMEOUT_SECONDS") + 2) * 1000
    return min(w, define("serve/worker.c", "RETIRE_MS")) / 1000.0


# a stop ends when nginx closes its kept connections (keepalive_timeout, 2 s), not at
# the end of the retire window
STOP_BOUND_S = retire_s() - 1


def wait_for(pred, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise SystemExit("FAIL timed out after %.0f s waiting for %s" % (seconds, what))


def config_value(text, key):
    m = re.search(r"(?m)^\s*%s\s*=\s*(.*?)\s*$" % re.escape(key), text)
    return m.group(1) if m else None


def keep_directives(site):
    """The keepalive directives of upstream asyncexec_app in nginx/asyncexec.conf, after
    checking that fastcgi_keep_conn is on for the API server."""
    m = re.search(r"(?ms)^upstream asyncexec_app \{\n(.*?)^\}", site)
    found = re.findall(r"(?m)^\s*(keepalive(?:_timeout|_requests)?\s+[^;]+;)", m.group(1)) \
        if m else []
    if not any(d.startswith("keepalive ") for d in found):
        raise SystemExit("FAIL nginx/asyncexec.conf: upstream asyncexec_app has no "
                         "'keepalive N;' (the shipped keep-alive cache)")
    if not re.search(r"(?m)^    fastcgi_keep_conn on;", site):
        raise SystemExit("FAIL nginx/asyncexec.conf: the API server does not set "
                         "'fastcgi_keep_conn on;'")
    return " ".join(found)


def render_nginx(tmp, stack_dir, stack_sock, sock, port):
    """nginx.conf and site.conf in tmp: the stack's, with this test's port, socket and
    files, keep-alive as shipped. Returns (conf, directives)."""
    nconf = open(os.path.join(stack_dir, "nginx", "nginx.conf"), encoding="utf-8").read()
    site = open(os.path.join(stack_dir, "nginx", "site.conf"), encoding="utf-8").read()
    directives = keep_directives(site)
    site = site.replace("unix:%s;" % stack_sock, "unix:%s;" % sock)
    ports = iter([port])

    def relisten(m):  # the first server's listen is the API port, the others free ones
        return "%slisten 127.0.0.1:%d;" % (m.group(1), next(ports, None) or free_port())
    site = re.sub(r"(?m)^(\s*)listen 127\.0\.0\.1:\d+;", relisten, site)
    site = site.replace(os.path.join(stack_dir, "nginx", "access.log"),
                        os.path.join(tmp, "access.log"))
    nd = os.path.join(stack_dir, "nginx") + "/"
    for name in ("nginx.pid", "error.log", "access.log", "site.conf"):
        nconf = nconf.replace(nd + name, os.path.join(tmp, name))
    open(os.path.join(tmp, "site.conf"), "w", encoding="utf-8").write(site)
    conf = os.path.join(tmp, "nginx.conf")
    open(conf, "w", encoding="utf-8").write(nconf)
    return conf, directives


def children(pid):
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open("/proc/%s/stat" % d).read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d))
    return out


def kept(sock):
    """Connections accepted on sock and still open (state 03, connected)."""
    n = 0
    with open("/proc/net/unix") as f:
        for line in f.readlines()[1:]:
            p = line.split()
            if len(p) >= 8 and p[7] == sock and p[5] == "03":
                n += 1
    return n


class Load:
    """CLIENTS threads, each on one keep-alive HTTP connection to nginx, alternating a
    submit and a poll of it; counts answers by status; stops when told."""

    def __init__(self, port, route, key):
        self.port, self.route, self.key = port, route, key
        self.cv = threading.Condition()
        self.answers, self.bad, self.stop = 0, [], False
        self.by = {}

    def one(self, c, method, path, body, headers):
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        raw = r.read()
        return r.status, raw

    def client(self, k):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        auth = {"Authorization": "Bearer " + self.key, "Content-Type": "application/json"}
        i = 0
        while True:
            with self.cv:
                if self.stop:
                    break
            cid = "nk-%d-%d-%d" % (os.getpid(), k, i)
            i += 1
            try:
                st, raw = self.one(c, "POST", "/v1/executions/" + self.route,
                                   b'{"n":1}', dict(auth, **{"X-Correlation-Id": cid}))
                res = [("submit", st, raw)]
                if st == 202:
                    tok = json.loads(raw)["pollToken"]
                    st2, raw2 = self.one(c, "GET", "/v1/executions/%s/%s" % (self.route, cid),
                                         None, dict(auth, **{"X-Poll-Token": tok}))
                    res.append(("poll", st2, raw2))
            except (OSError, http.client.HTTPException) as e:
                res = [("transport", 0, repr(e).encode())]
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            with self.cv:
                for what, st, raw in res:
                    self.by[(what, st)] = self.by.get((what, st), 0) + 1
                    if (what, st) not in (("submit", 202), ("poll", 200)):
                        self.bad.append((what, st, raw[:200]))
                    self.answers += 1
                self.cv.notify_all()
        c.close()

    @contextlib.contextmanager
    def running(self):
        """The clients run inside the with block and are joined at its end."""
        threads = [threading.Thread(target=self.client, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        try:
            yield self
        finally:
            with self.cv:
                self.stop = True
            for t in threads:
                t.join(60)

    def wait_answers(self, n, seconds):
        end = time.monotonic() + seconds
        with self.cv:
            while self.answers < n:
                left = end - time.monotonic()
                if left <= 0:
                    raise SystemExit("FAIL only %d of %d answers in %.0f s"
                                     % (self.answers, n, seconds))
                self.cv.wait(left)


def main():
    c = Checks()
    missing = [n for n, v in (("ASYNCEXEC_FCGI", FCGI), ("ASYNCEXEC_ADMIN", ADMIN),
                              ("ASYNCEXEC_TEST_CONFIG", CONFIG)) if not v]
    if missing:
        raise SystemExit("FAIL the environment lacks %s (run through scripts/test.sh)"
                         % ", ".join(missing))
    base = open(CONFIG, encoding="utf-8").read()
    stack_dir = os.path.dirname(CONFIG)
    stack_sock = config_value(base, "listen")
    tmp = tempfile.mkdtemp(prefix="test-nginx-keep.")
    # the socket lives beside the stack's, where nginx's workers can reach it
    sock = os.path.join(os.path.dirname(stack_sock), "keep-%d.sock" % os.getpid())
    cfg = os.path.join(tmp, "asyncexec.conf")
    text = re.sub(r"(?m)^\s*(listen|workers)\s*=.*$", "", base)
    open(cfg, "w", encoding="utf-8").write(text + "\nlisten = %s\nworkers = 2\n" % sock)

    sfx = "%d%d" % (os.getpid(), int(time.time()))
    route = "it/nk%s/op" % sfx
    adm = lambda *a: subprocess.run([ADMIN, "--config", cfg] + list(a), check=True,
                                    capture_output=True, text=True, timeout=60).stdout.strip()
    adm("route", "add", route)
    key = adm("key", "create", "--tenant", "t-nk-" + sfx)

    port = free_port()
    nconf, directives = render_nginx(tmp, stack_dir, stack_sock, sock, port)
    print("     keep-alive as nginx/asyncexec.conf ships it: %s" % directives)
    app = ngx = None
    try:
        app = subprocess.Popen([FCGI, "--config", cfg], stdin=subprocess.DEVNULL,
                               stdout=open(os.path.join(tmp, "app.log"), "w"),
                               stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(sock) and len(children(app.pid)) == 2, 30,
                 "the application's socket and its 2 workers")
        ngx = subprocess.Popen(["nginx", "-p", tmp + "/", "-c", nconf, "-g", "daemon off;"],
                               stdin=subprocess.DEVNULL,
                               stdout=open(os.path.join(tmp, "nginx.out"), "w"),
                               stderr=subprocess.STDOUT)

        def healthy():
            try:
                h = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                h.request("GET", "/healthz")
                ok = h.getresponse().status == 200
                h.close()
                return ok
            except OSError:
                return False
        wait_for(healthy, 30, "nginx's /healthz")
        first = children(app.pid)

        load = Load(port, route, key)
        with load.running():
            for r in range(RELOADS):
                load.wait_answers((r + 1) * RELOAD_EVERY, 120)
                os.kill(app.pid, signal.SIGHUP)
            load.wait_answers((RELOADS + 1) * RELOAD_EVERY, 120)
        n_kept = kept(sock)
        c.check("load: %d answers over keep-alive with %d reloads, every submit 202 and "
                "every poll 200" % (load.answers, RELOADS), not load.bad,
                (load.by, load.bad[:3]))
        c.check("kept: connections nginx keeps to the application stay open after the "
                "load (%d)" % n_kept, n_kept >= 1, n_kept)
        now = wait_for(lambda: (lambda w: w if len(w) == 2 else None)(children(app.pid)),
                       60, "2 workers after the reloads")
        c.check("load: the reloads replaced the workers", not (now & first), (first, now))
        log = open(os.path.join(tmp, "error.log"), encoding="utf-8",
                   errors="replace").read()
        up = [l for l in log.splitlines() if "upstream" in l]
        c.check("load: nginx logged no upstream error", not up, up[:3])

        # the retired workers are gone, and their connections with them: a burst opens
        # new ones for the stop
        burst = Load(port, route, key)
        with burst.running():
            burst.wait_answers(4 * CLIENTS, 60)
        c.check("stop: every answer of the burst before it 202 or 200", not burst.bad,
                burst.bad[:3])
        t0 = time.monotonic()
        n_stop = kept(sock)
        app.send_signal(signal.SIGTERM)
        try:
            rc = app.wait(STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        c.check("stop: SIGTERM with %d kept connections (at least 1): exit 0 in %.1f s "
                "(< %.0f s)" % (n_stop, took, STOP_BOUND_S), rc == 0 and n_stop >= 1,
                (rc, n_stop))
    finally:
        for p in (app, ngx):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if os.path.exists(sock):
            os.unlink(sock)
    if c.failed:
        for name in ("app.log", "error.log"):
            p = os.path.join(tmp, name)
            if os.path.exists(p):
                print("---- %s (last lines)" % name)
                print("".join(open(p, errors="replace").readlines()[-20:]))
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
