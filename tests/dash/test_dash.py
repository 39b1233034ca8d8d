#!/usr/bin/python3
"""dash_pages: the operator dashboard (issue 21) on the test stack, in headless Chromium.

usage: test_dash.py SCREENSHOT_DIR   (the stack of scripts/test.sh: ASYNCEXEC_TEST_HTTP,
ASYNCEXEC_TEST_METRICS, ASYNCEXEC_TEST_CONFIG, ASYNCEXEC_ADMIN)

Seeds a route, a consumer key whose label holds <script>, '"' and '&', a backend key, and
executions: one completed (its request, result and tokens carry markers), one waiting and
claimed, one waiting, one scheduled an hour ahead, and rollup rows (this interval, two hours
and two days back) as asyncexec-expire writes them; on a second route (tenant dash-a...) a failure with an error code
and a message marker, one execution retried up to its last attempt, one whose 5 s lease
lapses; that tenant gets a quota and two webhook endpoints (added with asyncexec-admin
webhook add --json: a secret, a URL with a path and query marker; one disabled), the
enabled one two pending deliveries and a dead one (rows written directly). Then, on the
loopback server:

  - every page loads in Chromium with no console error, no log entry and no CSP issue
    (the detector itself is shown to catch an inline style first), its headings and
    figures present; a screenshot of each in SCREENSHOT_DIR; the Attention page of the
    second route, reached by its link on the routes page, lists each seeded execution
    in its list (linked to its page), never the error's code or message, on no page
    (dashboard_show_errors = 0: API.md, no payloads; fault_dash shows them with 1);
    the Tenants page the quota and open count; the Webhooks page disabled endpoints first, the receiver as scheme://host:port only,
    the pending, oldest pending and dead figures;
  - the headers: Content-Security-Policy exactly, Cache-Control no-store, text/html; the
    stylesheet is text/css; HEAD as GET without a body;
  - POST, PUT, DELETE, PATCH: 405 with Allow: GET, HEAD; a bad id or query: 404 / 400;
  - the label renders escaped (no raw <script>, the entities present);
  - no page holds a key, a token, a hash of one, a payload marker;
  - the public server answers 404 for every dashboard path;
  - a tenant whose full quota is above the open count's cap is not "accepting"; a page
    past the last (Attention ?page=1, Routes ?after=) says "No more ...";
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
    # a scheduled start an hour ahead: waiting, scheduled, not claimable
    st, h, data = req(pub, "POST", "/v1/executions/" + route, json.dumps({"later": 1}),
                       {"Authorization": "Bearer " + ak, "X-Delay-Seconds": "3600",
                        "Content-Type": "application/json",
                        "X-Correlation-Id": "dash-%s-later" % sfx})
    check(st == 202, "seed: a scheduled submit", "%d %r" % (st, data[:200]))
    # the rollup asyncexec-expire writes (sql/013), as it would: this interval, one two
    # hours back (the day, not the hour), one two days back (neither)
    env_, svc, op = route.split("/")
    now = int(time.time())
    cur = now - now % 300
    sql("INSERT INTO s2r_route_outcome VALUES ('%s', '%s', '%s', FROM_UNIXTIME(%d), "
        "'completed', 4), ('%s', '%s', '%s', FROM_UNIXTIME(%d), 'failed', 2), "
        "('%s', '%s', '%s', FROM_UNIXTIME(%d), 'expired', 9)"
        % (env_, svc, op, cur, env_, svc, op, cur - 7200, env_, svc, op, cur - 2 * 86400))
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


def max_attempts():
    for line in open(env("ASYNCEXEC_TEST_CONFIG")):
        if line.split("=")[0].strip() == "max_attempts":
            return int(line.split("=", 1)[1])
    return 5


def seed_attention():
    """A route of its own: A failed with a code, B on its last attempt, C's lease lapsing."""
    sfx = "%d%d" % (os.getpid(), int(time.time()))
    route = "dasha%s/svc/op" % sfx
    admin("route", "add", route)
    ak = admin("key", "create", "--tenant", "dash-a" + sfx).split()[0]
    bk = admin("backend-key", "create", "--route", route).split()[0]
    pub = env("ASYNCEXEC_TEST_HTTP")
    n = [0]

    def submit(prio):
        n[0] += 1
        st, h, data = req(pub, "POST", "/v1/executions/" + route,
                          json.dumps({"marker": "REQMARK%s%d" % (sfx, n[0])}),
                          {"Authorization": "Bearer " + ak, "X-Priority": str(prio),
                           "Content-Type": "application/json",
                           "X-Correlation-Id": "dasha-%s-%d" % (sfx, n[0])})
        if st != 202:
            print("submit: %d %r" % (st, data[:300]))
            sys.exit(1)
        return json.loads(data)

    def claim(lease=300):
        st, h, data = req(pub, "POST", "/v1/backend/%s/claim" % route,
                          json.dumps({"max": 1, "leaseSeconds": lease}),
                          {"Authorization": "Bearer " + bk,
                           "Content-Type": "application/json"})
        items = json.loads(data).get("executions", []) if st == 200 else []
        if not items:
            print("claim: %d %r" % (st, data[:300]))
            sys.exit(1)
        return items[0]

    def fail(item, error, retry=None):
        body = {"error": error}
        if retry is not None:
            body["retryAfterSeconds"] = retry
        st, h, data = req(pub, "POST", "/v1/callbacks/%s/fail" % item["id"],
                          json.dumps(body),
                          {"Authorization": "Bearer " + bk,
                           "X-Callback-Token": item["callbackToken"],
                           "Content-Type": "application/json"})
        check(st == 200, "seed: fail %s" % item["id"], "%d %r" % (st, data[:200]))

    out = {"route": route, "code": "E_DASH_" + sfx, "message": "ERRMSG" + sfx,
           "retry_code": "E_RETRY_" + sfx, "tokens": [], "max": max_attempts()}
    submit(0)
    a = claim()
    fail(a, {"code": out["code"], "message": out["message"] + " <b>&"})
    submit(0)
    for _ in range(out["max"] - 1):
        b = claim()
        out["tokens"].append(b["callbackToken"])
        fail(b, {"code": out["retry_code"], "message": out["message"] + " retry"}, 0)
    submit(9)
    c = claim(5)
    out["tokens"] += [a["callbackToken"], c["callbackToken"]]
    out["lapse_at"] = time.time() + 6
    out.update(a=str(a["id"]), b=str(b["id"]), c=str(c["id"]))
    return out


def sql(q):
    """Runs q with the mariadb client on the stack's database; its output."""
    c = {}
    for line in open(env("ASYNCEXEC_TEST_CONFIG")):
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            c[k.strip()] = v.strip()
    # READ COMMITTED, as every fixture connection (tests/util/side.h)
    args = ["mariadb", "--batch", "--raw", "--skip-column-names",
            "--init-command=SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "-u",
            c.get("db_user", "asyncexec"), "-D", c.get("db_name", "asyncexec")]
    if c.get("db_socket"):
        args.append("--socket=" + c["db_socket"])
    else:
        args += ["-h", c.get("db_host", "127.0.0.1"), "-P", c.get("db_port", "3306")]
    pw = c.get("db_password")
    if c.get("db_password_file"):
        pw = open(c["db_password_file"]).read().strip()
    p = subprocess.run(args, input=q, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MYSQL_PWD=pw or ""))
    if p.returncode != 0:
        print("mariadb: %s" % p.stderr.strip())
        sys.exit(1)
    return p.stdout


def seed_tenant_webhooks(att):
    """att's tenant: a quota of 3, an endpoint with 2 pending and 1 dead delivery, a
    disabled one. The secrets and URL markers join att["tokens"]."""
    tenant = "dash-a" + att["route"][5:].split("/")[0]
    admin("tenant", "set", tenant, "--max-open", "3")
    url = "https://dash-wh.example.net:8443/hook/PATHMARK%s?token=QSMARK%s" % (
        tenant, tenant)
    on = json.loads(admin("webhook", "add", "--tenant", tenant, "--url", url, "--json"))
    off = json.loads(admin("webhook", "add", "--tenant", tenant, "--url",
                           "https://dash-off.example.net/x?QSMARK" + tenant, "--json"))
    admin("webhook", "disable", str(off["id"]))
    rows = []
    for i, (state, ago) in enumerate((("pending", 30), ("pending", 3), ("dead", 90))):
        rows.append("(%d, %d, 'msg_dash%s%d', 'failed', '{}', '%s', 1, UTC_TIMESTAMP(3), "
                    "UTC_TIMESTAMP(3) - INTERVAL %d MINUTE, UTC_TIMESTAMP(3))"
                    % (on["id"], 990000000000 + int(att["a"]) * 10 + i, tenant, i, state,
                       ago))
    sql("INSERT INTO s2r_webhook_delivery (endpoint_id, execution_id, webhook_id, event, "
        "body, state, attempts, due_at, created_at, updated_at) VALUES %s;" % ", ".join(rows))
    att.update(tenant=tenant, wh_on=str(on["id"]), wh_off=str(off["id"]))
    att["tokens"] += [on["secret"], off["secret"], "PATHMARK" + tenant, "QSMARK" + tenant]


def follow(metrics, first, want, nxt):
    """The pages from first on, by the link matching the regex nxt, until one holds
    want (the suite's other tests add rows of their own); [(path, html)] read."""
    out, path = [], first
    for _ in range(200):
        st, h, body = req(metrics, "GET", path)
        text = body.decode("utf-8", "replace")
        out.append((path, text))
        if st != 200 or want in text:
            break
        m = re.search(nxt, text)
        if m is None:
            break
        path = "/dashboard/" + m.group(1).replace("&amp;", "&")
    return out


def tenants_and_webhooks(metrics, b, shots, att):
    seen = follow(metrics, "/dashboard/tenants", "<td>%s</td>" % att["tenant"],
                  r'href="(tenants\?after=[^"]+)"')
    path = seen[-1][0]
    p = b.load("http://%s%s" % (metrics, path), os.path.join(shots, "dashboard-tenants.png"))
    check(not p.problems, "%s: no console error, log entry or CSP issue" % path,
          "\n  ".join(p.problems))
    m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(att["tenant"]), p.html)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1)) if m else None
    # quota 3; open: B and C wait (A failed)
    check(cells is not None and cells[:2] == ["3", "2"], "tenants: quota 3, open 2",
          repr(cells))
    check("<h1>Tenants</h1>" in p.html and "Answers 429" in p.html, "tenants: headings")
    print("ok   %s in Chromium: %.0f ms, %d bytes" % (path, p.seconds * 1000, len(p.html)))

    want = '<td class="n">%s</td>' % att["wh_on"]
    seen = follow(metrics, "/dashboard/webhooks", want, r'href="(webhooks\?[^"]+)"')
    order = [en for _, t in seen for en in re.findall(
        r'<td class="(?:ok|bad)">(yes|no)</td>', t)]
    check(order == sorted(order, key=lambda v: v == "yes"),
          "webhooks: disabled endpoints first", repr(order[:20]))
    path = seen[-1][0]
    p = b.load("http://%s%s" % (metrics, path), os.path.join(shots, "dashboard-webhooks.png"))
    check(not p.problems, "%s: no console error, log entry or CSP issue" % path,
          "\n  ".join(p.problems))

    def row(eid):
        m = re.search(r'<tr><td class="n">%s</td>(.*?)</tr>' % eid, p.html)
        return re.findall(r"<td[^>]*>(.*?)</td>", m.group(1)) if m else None
    r = row(att["wh_on"])
    # tenant, route, receiver, enabled, reason, pending, oldest pending, dead
    check(r is not None and r[0] == att["tenant"] and r[1] == "every route" and
          r[2] == "https://dash-wh.example.net:8443" and r[3] == "yes" and
          r[5] == "2" and r[6].startswith("30 m") and r[7] == "1",
          "webhooks: the endpoint's figures", repr(r))
    hit = [t for _, t in seen if '<td class="n">%s</td>' % att["wh_off"] in t]
    m = re.search(r'<tr><td class="n">%s</td>(.*?)</tr>' % att["wh_off"],
                  hit[0] if hit else "")
    r = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1)) if m else None
    check(r is not None and r[2] == "https://dash-off.example.net" and r[3] == "no" and
          "disabled by the operator" in r[4], "webhooks: the disabled endpoint", repr(r))
    check("<h1>Webhooks</h1>" in p.html, "webhooks: heading")
    for t in att["tokens"]:
        check(t not in p.html and all(t not in x for _, x in seen),
              "webhooks: no secret or URL path/query marker")
    print("ok   %s in Chromium: %.0f ms, %d bytes" % (path, p.seconds * 1000, len(p.html)))


def sections(html):
    """{h2 heading: the html up to the next one}."""
    parts = re.split(r"<h2>(.*?)</h2>", html)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def attention_page(metrics, b, shots, att, routes_path):
    """The second route's Attention page, by the link of its row on the routes page."""
    path = routes_page(metrics, att["route"])
    st, h, body = req(metrics, "GET", path)
    m = re.search(r'<a href="(attention\?route=%s)">' % re.escape(att["route"]),
                  body.decode())
    if not check(m is not None, "routes: the route links to its Attention page"):
        return
    time.sleep(max(0, att["lapse_at"] - time.time()))
    png = os.path.join(shots, "dashboard-attention-route.png")
    p = b.load("http://%s/dashboard/%s" % (metrics, m.group(1)), png)
    check(not p.problems, "attention (route): no console error, log entry or CSP issue",
          "\n  ".join(p.problems))
    sec = sections(p.html)
    main = re.sub(r"(?s).*<main>|</main>.*", "", p.html)[:3000]
    for t in ("Oldest waiting", "On their last attempt", "Lapsed leases", "Recent failures",
              "Recent expiries", "Recent abandonments"):
        check(t in sec, "attention (route): the list %r" % t, main)

    def row(title, eid):
        m = re.search(r'<tr><td class="n"><a href="execution/%s">%s</a></td>(.*?)</tr>'
                      % (eid, eid), sec.get(title, ""))
        return re.findall(r"<td[^>]*>(.*?)</td>", m.group(1)) if m else None
    r = row("Recent failures", att["a"])
    check(r is not None and att["code"] not in r,
          "attention: A failed, without its code (dashboard_show_errors = 0)", repr(r))
    if att["max"] >= 2:
        r = row("On their last attempt", att["b"])
        check(r is not None and str(att["max"] - 1) in r,
              "attention: B on its last attempt (%d claims)" % (att["max"] - 1), repr(r))
    r = row("Lapsed leases", att["c"])
    check(r is not None, "attention: C's lease lapsed", main)
    for e in ("b", "c"):
        check(row("Oldest waiting", att[e]) is not None, "attention: %s waiting" % e, main)
    check(att["message"] not in p.html and "Error message" not in p.html,
          "attention: no error message (dashboard_show_errors = 0)")
    check(att["code"] not in p.html and att["retry_code"] not in p.html and
          "Error code" not in p.html,
          "attention: no error code, nor its column (dashboard_show_errors = 0)")
    for t in att["tokens"]:
        check(t not in p.html, "attention: no callback token")
    check(os.path.getsize(png) > 1000, "attention (route): screenshot " + png)
    p2 = b.load("http://%s/dashboard/execution/%s" % (metrics, att["a"]))
    check(not p2.problems and "<h1>Execution %s</h1>" % att["a"] in p2.html and
          "attention?route=%s" % att["route"] in p2.html,
          "attention -> execution %s -> its route's attention" % att["a"])
    check(att["code"] not in p2.html and
          "<tr><th>Error code</th><td class=\"muted\">hidden (dashboard_show_errors = 0)"
          "</td></tr>" in p2.html,
          "execution %s: its error code hidden (dashboard_show_errors = 0)" % att["a"],
          re.sub(r"(?s).*<main>|</main>.*", "", p2.html)[:1500])
    print("ok   %s in Chromium: %.0f ms, %d bytes, %s" % (m.group(1), p.seconds * 1000,
                                                          len(p.html), png))


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
        if st != 200 or ">%s</a></td>" % route in text:
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
                                         "Scheduled (not yet due)", "Claimable now",
                                         "Ended (last hour / last day)",
                                         "Callback refusals"]),
        ("/dashboard/attention", "attention", ["<h1>Attention</h1>", "Oldest waiting",
                                               "On their last attempt", "Lapsed leases",
                                               "Recent failures", "Recent expiries",
                                               "Recent abandonments"]),
        ("/dashboard/tenants", "tenants-first", ["<h1>Tenants</h1>", "Open now"]),
        ("/dashboard/webhooks", "webhooks-first", ["<h1>Webhooks</h1>", "Receiver",
                                                   "Dead"]),
        ("/dashboard/keys", "keys", ["<h1>Keys</h1>", LABEL_DOM, "dash-backend", route,
                                     "consumer", "backend"]),
        ("/dashboard/execution/" + done_id, "execution",
         ["<h1>Execution %s</h1>" % done_id, "completed", route, "Result (bytes)"]),
        ("/dashboard/execution/" + waiting_id, "execution-waiting",
         ["<h1>Execution %s</h1>" % waiting_id, "waiting_callback", "Lease expires"]),
    ]


def route_row_figures(html, route):
    """The routes page's row of route: waiting 3, leased 1, scheduled 1, claimable 1; its
    ended row: completed 4 in the hour and day, failed 2 in the day only, expired none."""
    m = re.search(r"<tr><td><a [^>]*>%s</a></td>(.*?)</tr>" % re.escape(route), html)
    if not check(m is not None, "routes: a row for " + route):
        return
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))
    # enabled, retention, waiting, leased, retrying, scheduled, claimable, cancel requested
    check(cells[:8] == ["yes", "7", "3", "1", "0", "1", "1", "0"], "routes: the figures",
          repr(cells))
    m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(route), html)
    if not check(m is not None, "routes: an ended row for " + route):
        return
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))
    # completed, failed, expired, cancelled: last hour / last day
    check(cells == ["4 / 4", "0 / 2", "0 / 0", "0 / 0"], "routes: the ended figures",
          repr(cells))


def big_route(metrics):
    """A route with 1,500 waiting executions (rows written as submit writes them): 1..1000
    due and unclaimed, 1001..1500 leased for an hour, 1496..1500 of them cancel-requested
    (a live lease: no expiry run of the suite's other tests cancels them), the first two
    hours old. The page counts waiting and cancel requested among the first DASH_OPEN_CAP in
    claim order, the rest among the first DASH_DETAIL_CAP (1000): leased 0, claimable
    1000; the oldest is the first one."""
    sfx = "%d%d" % (os.getpid(), int(time.time()))
    route = "dashbig%s/svc/op" % sfx
    admin("route", "add", route)
    e, s_, o = route.split("/")
    sql("INSERT INTO s2r_async_execution (correlation_id, environment, service_key, "
        "operation_key, status, request_payload, request_sha256, initiator_tenant_id, "
        "initiator_key_hash, poll_token_hash, attempts, lease_expires_at, "
        "cancel_requested, created_at, updated_at, due_at, expires_at) "
        "SELECT CONCAT('big-', seq), '%s', '%s', '%s', 'waiting_callback', '{}', "
        "UNHEX(SHA2('big', 256)), 'dash-big', UNHEX(SHA2('big-key', 256)), "
        "UNHEX(SHA2('big-token', 256)), seq > 1000, "
        "IF(seq > 1000, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, NULL), "
        "seq > 1495, UTC_TIMESTAMP(3) - INTERVAL (7200 - seq) SECOND, UTC_TIMESTAMP(3), "
        "UTC_TIMESTAMP(3) - INTERVAL (7200 - seq) SECOND, UTC_TIMESTAMP(3) + INTERVAL 1 DAY "
        "FROM seq_1_to_1500" % (e, s_, o))
    st, h, body = req(metrics, "GET", routes_page(metrics, route))
    html = body.decode("utf-8", "replace")
    m = re.search(r"<tr><td><a [^>]*>%s</a></td>(.*?)</tr>" % re.escape(route), html)
    if not check(st == 200 and m is not None, "routes: a row for " + route):
        return
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))
    # enabled, retention, waiting, leased, retrying, scheduled, claimable, cancel, oldest
    check(cells[2:8] == ["1500", "0", "0", "0", "1000", "5"],
          "routes: 1,500 waiting: leased and claimable among the first 1000", repr(cells))
    check(cells[8] in ("1 h 59 m", "2 h 0 m"), "routes: the oldest of 1,500", repr(cells))
    check("first 1000" in html and "first 10000" in html, "routes: the caps are stated")


def tenant_over_cap(metrics):
    """A tenant whose quota (10,001) is above the count's cap (10,000) and full: 10,001
    waiting executions (rows written as submit writes them). The count stops at the cap,
    so the page cannot say "accepting": the state is unknown. The rows are deleted."""
    sfx = "%d%d" % (os.getpid(), int(time.time()))
    tenant = "dash-q" + sfx
    admin("tenant", "set", tenant, "--max-open", "10001")
    sql("INSERT INTO s2r_async_execution (correlation_id, environment, service_key, "
        "operation_key, status, request_payload, request_sha256, initiator_tenant_id, "
        "initiator_key_hash, poll_token_hash, attempts, created_at, updated_at, due_at, "
        "expires_at) SELECT CONCAT('q-', seq), 'dashq%s', 'svc', 'op', "
        "'waiting_callback', '{}', UNHEX(SHA2('q', 256)), '%s', UNHEX(SHA2('q-key', 256)), "
        "UNHEX(SHA2('q-token', 256)), 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), "
        "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 7 DAY FROM seq_1_to_10001"
        % (sfx, tenant))
    try:
        seen = follow(metrics, "/dashboard/tenants", "<td>%s</td>" % tenant,
                      r'href="(tenants\?after=[^"]+)"')
        m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(tenant), seen[-1][1])
        cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1)) if m else None
        # quota, open (capped), state
        check(cells is not None and cells[:2] == ["10001", "10000+"] and
              "accepting" not in cells[2] and "unknown" in cells[2],
              "tenants: a full quota above the count's cap is not \"accepting\"",
              repr(cells))
    finally:
        sql("DELETE FROM s2r_async_execution WHERE environment = 'dashq%s'" % sfx)


def later_pages(metrics, att):
    """A page past the last says "No more ...", not that there are none."""
    st, h, body = req(metrics, "GET", "/dashboard/attention?route=%s&page=1" % att["route"])
    html = body.decode("utf-8", "replace")
    sec = sections(html)
    check(st == 200 and "No recent failure." not in html and
          "No more recent failures." in sec.get("Recent failures", ""),
          "attention page 1 of a route with one failure: \"No more recent failures.\"",
          re.sub(r"(?s).*<main>|</main>.*", "", html)[:1500])
    st, h, body = req(metrics, "GET", "/dashboard/routes?after=999999999999")
    html = body.decode("utf-8", "replace")
    check(st == 200 and "No routes (asyncexec-admin" not in html and
          "No more routes." in html, "routes past the last: \"No more routes.\"",
          re.sub(r"(?s).*<main>|</main>.*", "", html)[:1500])


def browser_pages(metrics, shots, route, done_id, waiting_id, marks, att):
    with cdp.Browser(shots) as b:
        attention_page(metrics, b, shots, att, routes_page(metrics, att["route"]))
        tenants_and_webhooks(metrics, b, shots, att)
        marks = dict(marks, errmsg=att["message"], errcode=att["code"],
                     retrycode=att["retry_code"])
        for i, t in enumerate(att["tokens"]):
            marks["secret%d" % i] = t
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
                 "/dashboard/attention", "/dashboard/tenants", "/dashboard/webhooks",
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
                       ("/dashboard/routes?after=x", 400), ("/dashboard/keys?before=", 400),
                       ("/dashboard/attention?route=x", 400),
                       ("/dashboard/attention?route=a/b/%3Cc", 400),
                       ("/dashboard/attention?page=x", 400),
                       ("/dashboard/attention?page=100", 400),
                       ("/dashboard/attention?page=1", 200),
                       ("/dashboard/tenants?after=a%3Cb", 400),
                       ("/dashboard/tenants?after=zzzz", 200),
                       ("/dashboard/webhooks?enabled=2", 400),
                       ("/dashboard/webhooks?enabled=1&after=1", 200),
                       ("/dashboard/attention?route=no/such/route", 200)):
        st, h, body = req(metrics, "GET", path)
        check(st == want, "GET %s: %d" % (path, want), str(st))


def public_refuses(pub):
    for method, path in (("GET", p) for p in (
            "/dashboard", "/dashboard?x=1", "/dashboard/", "/dashboard/health",
            "/dashboard/style.css", "/dashboard/keys", "/dashboard/attention",
            "/dashboard/tenants", "/dashboard/webhooks", "/dashboard/execution/1")):
        st, h, body = req(pub, method, path)
        check(st == 404 and b"Content-Security" not in body and b"<html" not in body,
              "public server: %s %s is 404" % (method, path), str(st))
    st, h, body = req(pub, "HEAD", "/dashboard")
    check(st == 404 and "content-security-policy" not in h,
          "public server: HEAD /dashboard is 404", str(st))


def loopback_names(metrics):
    """DNS rebinding: a page whose name resolves to 127.0.0.1 reads nothing here."""
    port = metrics.rsplit(":", 1)[1]
    for path in ("/dashboard/health", "/dashboard/keys", "/metrics", "/readyz/detail"):
        st, h, body = req(metrics, "GET", path, headers={"Host": "evil.example:" + port})
        check(st == 421 and b"asyncexec" not in body,
              "loopback server: GET %s with Host evil.example is 421" % path, str(st))
    for host in ("localhost:" + port, "LOCALHOST", "127.0.0.1"):
        st, h, body = req(metrics, "GET", "/dashboard/health", headers={"Host": host})
        check(st == 200 and b"<h1>Health</h1>" in body,
              "loopback server: GET /dashboard/health with Host %s is 200" % host, str(st))


def timings(metrics, done_id, att, n=50):
    for path in ("/dashboard/health", "/dashboard/routes", "/dashboard/keys",
                 "/dashboard/attention", "/dashboard/attention?route=" + att["route"],
                 "/dashboard/tenants", "/dashboard/webhooks",
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
        att = seed_attention()
        seed_tenant_webhooks(att)
        big_route(metrics)
        tenant_over_cap(metrics)
        later_pages(metrics, att)
        detector_catches_inline_style(shots)
        headers_and_methods(metrics, done_id)
        public_refuses(pub)
        loopback_names(metrics)
        browser_pages(metrics, shots, route, done_id, waiting_id, marks, att)
        timings(metrics, done_id, att)
    except cdp.Fatal as e:
        check(False, "chromium", str(e))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED or PASSED == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
