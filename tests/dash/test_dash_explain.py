#!/usr/bin/python3
"""dash_explain: every statement of the dashboard (src/repo/repo_dash.c) and of a
GET /metrics scrape (src/repo/repo_metrics.c; its oldest waiting execution's ORDER BY
id walked the primary key, or sorted every waiting execution of the route, after
sql/011) is served by an index: EXPLAIN of each, its parameters filled by kind (s 'x',
n 1, t NOW(3)), shows no full scan (type ALL, or index: all of an index) of
s2r_async_execution or s2r_webhook_delivery and a key for each of their rows (a capped
derived table, <derivedN>, is the LIMIT's own result).

Then the Attention page's "On their last attempt" list on 50,000 finished executions
with attempts = max_attempts - 1 (its range of ix_exec_abandon held every one of them,
read row by row): its statement reads at most LAST_CAP index entries (the session's
Handler_read_next), and the page says the list is of the first LAST_CAP entries. The
rows are deleted again.

usage: test_dash_explain.py DASH_SQL_TOOL   (ASYNCEXEC_TEST_CONFIG: the stack's database)
Closing line "N passed, N failed".
"""
import http.client
import os
import subprocess
import sys
import time

BIG = ("s2r_async_execution", "s2r_webhook_delivery")
VALUE = {"s": "'x'", "n": "1", "t": "NOW(3)"}


def conf():
    c = {}
    for line in open(os.environ["ASYNCEXEC_TEST_CONFIG"]):
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            c[k.strip()] = v.strip()
    return c


def client(c):
    """The mariadb client's arguments and environment for the stack's database."""
    args = ["mariadb", "--batch", "--raw", "-u", c.get("db_user", "asyncexec"),
            "-D", c.get("db_name", "asyncexec")]
    if c.get("db_socket"):
        args.append("--socket=" + c["db_socket"])
    else:
        args += ["-h", c.get("db_host", "127.0.0.1"), "-P", c.get("db_port", "3306")]
    pw = c.get("db_password")
    if c.get("db_password_file"):
        pw = open(c["db_password_file"]).read().strip()
    return args, dict(os.environ, MYSQL_PWD=pw or "")


def run(c, sql):
    """sql's output (tab-separated, no column names)."""
    args, e = client(c)
    p = subprocess.run(args + ["--skip-column-names"], input=sql, capture_output=True,
                       text=True, env=e, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    return p.stdout


def explain(c, sql):
    args, e = client(c)
    p = subprocess.run(args, input="EXPLAIN " + sql, capture_output=True, text=True,
                       env=e, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    lines = p.stdout.strip().split("\n")
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


LAST_CAP = 5000         # DASH_LAST_CAP of src/repo/repo_dash.h
SEEDED = 50000


def max_attempts(c):
    return int(c.get("max_attempts", "5"))


def read_next(c, sql):
    """Handler_read_next of one run of sql in a session of its own."""
    q = ("SHOW SESSION STATUS LIKE 'Handler_read_next';\n%s;\n"
         "SHOW SESSION STATUS LIKE 'Handler_read_next';\n" % sql)
    vals = [int(l.split("\t")[1]) for l in run(c, q).strip().split("\n")
            if l.startswith("Handler_read_next")]
    return vals[1] - vals[0]


def last_attempt_capped(c, stmts):
    """(passed, failed) of the capped "On their last attempt" list."""
    ok = bad = 0
    m = max_attempts(c)
    if m < 2:
        print("skip last attempt cap: max_attempts %d" % m)
        return 0, 0
    sfx = "%d%d" % (os.getpid(), int(time.time()))
    run(c, "INSERT INTO s2r_async_execution (correlation_id, environment, service_key, "
        "operation_key, status, request_payload, request_sha256, initiator_tenant_id, "
        "initiator_key_hash, poll_token_hash, attempts, created_at, updated_at, due_at, "
        "expires_at, completed_at) SELECT CONCAT('last-', seq), 'dashlast%s', 'svc', "
        "'op', 'completed', '{}', UNHEX(SHA2('last', 256)), 'dash-last', "
        "UNHEX(SHA2('last-key', 256)), UNHEX(SHA2('last-token', 256)), %d, "
        "UTC_TIMESTAMP(3) - INTERVAL 1 DAY, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), "
        "UTC_TIMESTAMP(3) + INTERVAL 1 DAY, UTC_TIMESTAMP(3) - INTERVAL 1 DAY "
        "FROM seq_1_to_%d" % (sfx, m - 1, SEEDED))
    try:
        kinds, sql = stmts["dash_att_last"]
        vals = {"n": iter([0, 0, m - 1, m, m - 1, m, 0, 21]), "t": None, "s": None}
        parts = sql.split("?")
        filled = parts[0]
        for k, p in zip(kinds, parts[1:]):
            v = str(next(vals["n"])) if k == "n" else "NOW(3)" if k == "t" else "''"
            filled += v + p
        n = read_next(c, filled)
        if n <= LAST_CAP + 100:
            ok += 1
            print("ok   dash_att_last: %d index entries read (cap %d, %d seeded)"
                  % (n, LAST_CAP, SEEDED))
        else:
            bad += 1
            print("FAIL dash_att_last: %d index entries read, over the cap %d (%d "
                  "seeded)" % (n, LAST_CAP, SEEDED))
        host, port = os.environ["ASYNCEXEC_TEST_METRICS"].rsplit(":", 1)
        h = http.client.HTTPConnection(host, int(port), timeout=35)
        h.request("GET", "/dashboard/attention")
        r = h.getresponse()
        page = r.read().decode("utf-8", "replace")
        h.close()
        sec = page.split("<h2>On their last attempt</h2>", 1)[-1].split("<h2>", 1)[0]
        note = "first %d entries examined" % LAST_CAP
        if r.status == 200 and note in sec:
            ok += 1
            print("ok   attention: the last-attempt list says %r" % note)
        else:
            bad += 1
            print("FAIL attention: %d, the last-attempt list does not say %r: %s"
                  % (r.status, note, sec[:600]))
    finally:
        run(c, "DELETE FROM s2r_async_execution WHERE environment = 'dashlast%s'" % sfx)
    return ok, bad


def main():
    passed = failed = 0
    c = conf()
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
    stmts = {}
    for line in out.strip().split("\n"):
        name, kinds, sql = line.split("\t")
        stmts[name] = (kinds, sql)
        parts = sql.split("?")
        if len(parts) - 1 != len(kinds):
            print("FAIL %s: %d placeholders, %d kinds" % (name, len(parts) - 1, len(kinds)))
            failed += 1
            continue
        filled = parts[0] + "".join(VALUE[k] + p for k, p in zip(kinds, parts[1:]))
        try:
            rows = explain(c, filled)
        except RuntimeError as e:
            print("FAIL %s: EXPLAIN: %s" % (name, e))
            failed += 1
            continue
        # a full scan: of the table (ALL) or of a whole index (index; metrics_oldest's
        # ORDER BY id walked the primary key, or sorted the route's backlog)
        bad = [r for r in rows if r.get("table") in BIG and
               (r.get("type") in ("ALL", "index") or
                r.get("key") in (None, "", "NULL"))]
        # a sort of the big table's rows (not of a capped derived table's): every row
        # of the range read before the first is returned (the Routes page sorted all
        # of a route's waiting executions so after sql/011)
        bad += [r for r in rows if r.get("table") in BIG and
                "filesort" in r.get("Extra", "")]
        plan = "; ".join("%s %s key=%s rows=%s %s" % (r.get("table"), r.get("type"),
                                                     r.get("key"), r.get("rows"),
                                                     r.get("Extra", "")) for r in rows)
        if bad:
            print("FAIL %s: a full scan or a sort of the big table: %s" % (name, plan))
            failed += 1
        else:
            print("ok   %s: %s" % (name, plan))
            passed += 1
    ok, bad = last_attempt_capped(c, stmts)
    passed, failed = passed + ok, failed + bad
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
