#!/usr/bin/python3
"""dash_explain: every statement of the dashboard (src/repo/repo_dash.c) and of a
GET /metrics scrape (src/repo/repo_metrics.c; its oldest waiting execution's ORDER BY
id walked the primary key, or sorted every waiting execution of the route, after
sql/011) is served by an index: EXPLAIN of each, its parameters filled by kind (s 'x',
n 1, t NOW(3)), shows no full scan (type ALL, or index: all of an index) of
s2r_async_execution or s2r_webhook_delivery and a key for each of their rows (a capped
derived table, <derivedN>, is the LIMIT's own result).

usage: test_dash_explain.py DASH_SQL_TOOL   (ASYNCEXEC_TEST_CONFIG: the stack's database)
Closing line "N passed, N failed".
"""
import os
import subprocess
import sys

BIG = ("s2r_async_execution", "s2r_webhook_delivery")
VALUE = {"s": "'x'", "n": "1", "t": "NOW(3)"}


def conf():
    c = {}
    for line in open(os.environ["ASYNCEXEC_TEST_CONFIG"]):
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            c[k.strip()] = v.strip()
    return c


def explain(c, sql):
    args = ["mariadb", "--batch", "--raw", "-u", c.get("db_user", "asyncexec"),
            "-D", c.get("db_name", "asyncexec")]
    if c.get("db_socket"):
        args.append("--socket=" + c["db_socket"])
    else:
        args += ["-h", c.get("db_host", "127.0.0.1"), "-P", c.get("db_port", "3306")]
    pw = c.get("db_password")
    if c.get("db_password_file"):
        pw = open(c["db_password_file"]).read().strip()
    e = dict(os.environ, MYSQL_PWD=pw or "")
    p = subprocess.run(args, input="EXPLAIN " + sql, capture_output=True, text=True,
                       env=e, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    lines = p.stdout.strip().split("\n")
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def main():
    passed = failed = 0
    c = conf()
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
    for line in out.strip().split("\n"):
        name, kinds, sql = line.split("\t")
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
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
