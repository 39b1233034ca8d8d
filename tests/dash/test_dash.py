#!/usr/bin/python3
"""dash_pages: the operator dashboard (issue 21) on the test stack, in headless Chromium.

usage: test_dash.py SCREENSHOT_DIR   (the stack of scripts/test.sh: ASYNCEXEC_TEST_HTTP,
ASYNCEXEC_TEST_METRICS, ASYNCEXEC_TEST_CONFIG, ASYNCEXEC_ADMIN)

Seeds a route, a consumer key whose label holds <script>, '"' and '&', a backend key, and
executions: one completed (its request, result and tokens carry markers), one waiting and
claimed, one waiting. Then, on the loopback server:

  - every page loads in Chromium with no console error, no log entry and no CSP issue
    (the detector itself is shown to catch an inline style first), its headings and
    figures present; a screenshot of each in SCREENSHOT_DIR;
  - the headers: Content-Security-Policy exactly, Cache-Control no-store, text/html; the
    stylesheet is text/css; HEAD as GET without a body;
  - POST, PUT, DELETE, PATCH: 405 with Allow: GET, HEAD; a bad id or query: 404 / 400;
  - the label renders escaped (no raw <script>, the entities present);
  - no page holds a key, a token, a hash of one, a payload marker;
  - the public server answers 404 for every dashboard path;
  - page timings (50 GETs each): p50 and p99, printed.
Closing line "N passed, N failed".
"""
import hashlib
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import http.server

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

PASSED = FAILED = 0
CSP = "default-src 'none'; style-src 'self'"
LABEL = 'ops <script>alert("x")</script> & "co"'
# as sent (dash_esc) and as Chromium serialises the parsed text node (" unescaped)
LABEL_ESC = "ops &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;co&quot;"
LABEL_DOM = 'ops &lt;script&gt;alert("x")&lt;/script&gt; &amp; "co"'


def check(ok, what, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
    else:
        FAILED += 1
        print("FAIL %s%s" % (what, (": " + detail) if detail else ""))
    return ok


def env(name):
    v = os.environ.get(name)
    if not v:
        print("%s is not set (run through scripts/test.sh)" % name)
        sys.exit(1)
    return v


def admin(*args):
    p = subprocess.run([env("ASYNCEXEC_ADMIN"), "--config", env("ASYNCEXEC_TEST_CONFIG")]
                       + list(args), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print("asyncexec-admin %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
        sys.exit(1)
    return p.stdout


def req(hostport, method, path, body=None, headers=None):
    host, port = hostport.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=35)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def seed():
    """The stack's data for the pages; the secrets and markers no page may show."""
    sfx = "%d%d" % (os.getpid(), int(time.time()))
    route = "dash%s/svc/op" % sfx
    admin("route", "add", route)
    ak = admin("key", "create", "--tenant", "dash-t" + sfx, "--label", LABEL).split()[0]
    bk = admin("backend-key", "create", "--route", route, "--label", "dash-backend").split()[0]
    pub = env("ASYNCEXEC_TEST_HTTP")
    marks = {"ak": ak, "bk": bk}
    polls = []
    for i in range(3):
        body = json.dumps({"marker": "REQMARK%s%d" % (sfx, i)})
        st, h, data = req(pub, "POST", "/v1/executions/" + route, body,
                           {"Authorization": "Bearer " + ak,
                            "Content-Type": "application/json",
                            "X-Correlation-Id": "dash-%s-%d" % (sfx, i)})
        if st != 202:
            print("submit: %d %r" % (st, data[:300]))
            sys.exit(1)
        polls.append(json.loads(data)["pollToken"])
    claimed = []
    for i in range(2):
        st, h, data = req(pub, "POST", "/v1/backend/%s/claim" % route,
                           json.dumps({"max": 1, "leaseSeconds": 300}),
                           {"Authorization": "Bearer " + bk,
                            "Content-Type": "application/json"})
        items = json.loads(data).get("executions", []) if st == 200 else []
        if not items:
            print("claim: %d %r" % (st, data[:300]))
            sys.exit(1)
        claimed.append(items[0])
    first = claimed[0]
    st, h, data = req(pub, "POST", "/v1/callbacks/%s/complete" % first["id"],
                       json.dumps({"result": {"marker": "RESMARK" + sfx}}),
                       {"Authorization": "Bearer " + bk,
                        "X-Callback-Token": first["callbackToken"],
                        "Content-Type": "application/json"})
    check(st == 200, "seed: complete", "%d %r" % (st, data[:200]))
    for i, p in enumerate(polls):
        marks["poll%d" % i] = p
    for i, c in enumerate(claimed):
        marks["cbt%d" % i] = c["callbackToken"]
    for k in list(marks):
        marks[k + "_sha256"] = hashlib.sha256(marks[k].encode()).hexdigest()
    marks["request"] = "REQMARK" + sfx
    marks["result"] = "RESMARK" + sfx
    return route, str(first["id"]), str(claimed[1]["id"]), marks


def detector_catches_inline_style(workdir):
    """The harness can fail: an inline style under the same CSP is reported."""
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            b = b'<!DOCTYPE html><html><head><title>t</title></head><body>' \
                b'<p style="color:red">x</p></body></html>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def log_message(self, *a):
            pass
    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with cdp.Browser(workdir) as b:
            p = b.load("http://127.0.0.1:%d/" % srv.server_address[1])
    finally:
        srv.shutdown()
    check(any("CSP violation" in t for t in p.problems),
          "the detector reports an inline style's CSP violation", repr(p.problems))


def routes_page(metrics, route):
    """The routes page (50 routes a page, by id) that lists route: the suite's other
    tests add routes of their own, so it is found by following the pages' links."""
    path = "/dashboard/routes"
    for _ in range(200):
        st, h, body = req(metrics, "GET", path)
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        if st != 200 or "<td>%s</td>" % route in text:
            return path
        m = re.search(r'href="routes\?after=(\d+)"', text)
        if m is None:
            return path
        path = "/dashboard/routes?after=" + m.group(1)
    return path


def pages(route, done_id, waiting_id, routes_path="/dashboard/routes"):
    """(path, screenshot name, [texts the page must hold])."""
    return [
        ("/dashboard/", "index", ["<h1>Health</h1>", "Service", "Database", "Schema",
                                  "Last expiry run", "Workers"]),
        ("/dashboard/health", "health", ["<h1>Health</h1>", "Ready", "Writer failovers",
                                         "Database errors", "Worker restarts"]),
        (routes_path, "routes", ["<h1>Routes</h1>", route, "Leased now",
                                         "Claimable now", "Callback refusals"]),
        ("/dashboard/keys", "keys", ["<h1>Keys</h1>", LABEL_DOM, "dash-backend", route,
                                     "consumer", "backend"]),
        ("/dashboard/execution/" + done_id, "execution",
         ["<h1>Execution %s</h1>" % done_id, "completed", route, "Result (bytes)"]),
        ("/dashboard/execution/" + waiting_id, "execution-waiting",
         ["<h1>Execution %s</h1>" % waiting_id, "waiting_callback", "Lease expires"]),
    ]


def route_row_figures(html, route):
    """The routes page's row of route: waiting 2, leased 1, claimable 1."""
    m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(route), html)
    if not check(m is not None, "routes: a row for " + route):
        return
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))
    # enabled, retention, waiting, leased, retrying, claimable, cancel requested, oldest
    check(cells[:7] == ["yes", "7", "2", "1", "0", "1", "0"], "routes: the figures",
          repr(cells))


def browser_pages(metrics, shots, route, done_id, waiting_id, marks):
    with cdp.Browser(shots) as b:
        for path, name, want in pages(route, done_id, waiting_id,
                                      routes_page(metrics, route)):
            png = os.path.join(shots, "dashboard-%s.png" % name)
            p = b.load("http://%s%s" % (metrics, path), png)
            check(not p.problems, "%s: no console error, log entry or CSP issue" % path,
                  "\n  ".join(p.problems))
            for w in want:
                check(w in p.html, "%s: holds %r" % (path, w),
                      re.sub(r"(?s).*<main>|</main>.*", "", p.html)[:1500])
            check("<script" not in p.html.lower(), "%s: no script element" % path)
            check(os.path.getsize(png) > 1000, "%s: screenshot %s" % (path, png))
            for k, v in marks.items():
                check(v not in p.html, "%s: no %s on the page" % (path, k))
            if name == "routes":
                route_row_figures(p.html, route)
            print("ok   %s in Chromium: %.0f ms, %d bytes, %s" %
                  (path, p.seconds * 1000, len(p.html), png))


def headers_and_methods(metrics, done_id):
    for path in ("/dashboard/", "/dashboard/health", "/dashboard/routes",
                 "/dashboard/keys", "/dashboard/execution/" + done_id):
        st, h, body = req(metrics, "GET", path)
        check(st == 200, "GET %s: 200" % path, str(st))
        check(h.get("content-security-policy") == CSP, "GET %s: the CSP" % path,
              repr(h.get("content-security-policy")))
        check(h.get("cache-control") == "no-store", "GET %s: no-store" % path)
        check(h.get("content-type", "").startswith("text/html"), "GET %s: HTML" % path)
        check(h.get("x-frame-options") == "DENY", "GET %s: no framing" % path)
        check(b"=&quot;" not in body and b"=&#39;" not in body,
              "GET %s: no markup escaped as text (an attribute's quotes)" % path)
        check(b'class="on"' in body or "execution" in path,
              "GET %s: the navigation marks the page" % path)
        st, h2, hb = req(metrics, "HEAD", path)
        check(st == 200 and hb == b"", "HEAD %s: 200 without a body" % path, str(st))
        for m in ("POST", "PUT", "DELETE", "PATCH"):
            st, h, body = req(metrics, m, path, b"{}", {"Content-Type": "application/json"})
            check(st == 405 and h.get("allow") == "GET, HEAD",
                  "%s %s: 405 Allow: GET, HEAD" % (m, path), "%d %r" % (st, h.get("allow")))
    st, h, body = req(metrics, "GET", "/dashboard/keys")
    check(LABEL_ESC.encode() in body and b"<script>" not in body,
          "GET /dashboard/keys: the label escaped as sent", body[-1500:].decode())
    st, h, body = req(metrics, "GET", "/dashboard/style.css")
    check(st == 200 and h.get("content-type", "").startswith("text/css") and
          b"body{" in body, "GET /dashboard/style.css: the stylesheet", str(st))
    for path, want in (("/dashboard/execution/99999999999", 404),
                       ("/dashboard/execution/abc", 404), ("/dashboard/nope", 404),
                       ("/dashboard/routes?after=x", 400), ("/dashboard/keys?before=", 400)):
        st, h, body = req(metrics, "GET", path)
        check(st == want, "GET %s: %d" % (path, want), str(st))


def public_refuses(pub):
    for path in ("/dashboard/", "/dashboard/health", "/dashboard/style.css",
                 "/dashboard/keys", "/dashboard/execution/1"):
        st, h, body = req(pub, "GET", path)
        check(st == 404 and b"Content-Security" not in body and b"<html" not in body,
              "public server: GET %s is 404" % path, str(st))


def timings(metrics, done_id, n=50):
    for path in ("/dashboard/health", "/dashboard/routes", "/dashboard/keys",
                 "/dashboard/execution/" + done_id):
        t = []
        for _ in range(n):
            t0 = time.perf_counter()
            st, h, body = req(metrics, "GET", path)
            t.append(time.perf_counter() - t0)
        t.sort()
        p99 = t[min(len(t) - 1, int(len(t) * 0.99))]
        check(p99 < 0.5, "%s: p99 %.1f ms under 500 ms" % (path, p99 * 1000))
        print("ok   timing %s: p50 %.1f ms, p99 %.1f ms (%d GETs)"
              % (path, t[len(t) // 2] * 1000, p99 * 1000, n))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    shots = sys.argv[1]
    os.makedirs(shots, exist_ok=True)
    metrics, pub = env("ASYNCEXEC_TEST_METRICS"), env("ASYNCEXEC_TEST_HTTP")
    try:
        cdp.chromium()
        route, done_id, waiting_id, marks = seed()
        detector_catches_inline_style(shots)
        headers_and_methods(metrics, done_id)
        public_refuses(pub)
        browser_pages(metrics, shots, route, done_id, waiting_id, marks)
        timings(metrics, done_id)
    except cdp.Fatal as e:
        check(False, "chromium", str(e))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED or PASSED == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
