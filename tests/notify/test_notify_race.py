#!/usr/bin/env python3
"""notify_race: exactly one delivery per terminal execution and matching endpoint, however
the execution ended and whatever raced to end it.

N executions (ASYNCEXEC_TEST_SCALE scales the default 2000) of tenant A's route R are
claimed; then each gets 8 racing callbacks (complete and fail with two callers each,
cancelled after a cancel request on every fourth, a retryable fail; every sixteenth gets
a cancel request and 8 racing acknowledgements) while
asyncexec-expire runs in a loop and every eighth execution is made overdue under it, so
executions end completed, failed, cancelled or expired, each decided by exactly one
winner. The sender runs throughout. Endpoint E (tenant A, route R) must get exactly one
delivery per execution, whose status is the execution's final status in the database;
endpoint E2 (tenant A, route R2 only) gets exactly R2's executions; tenant B's endpoint
gets nothing. No delivery is left pending, none is dead, no outbox mark is left.
"""
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import notify_env as ne

EXPIRE = os.environ.get("ASYNCEXEC_EXPIRE", "")


def race(r, item, poll_token, k, codes):
    """The 8 racing callbacks of one claimed execution (k: its index)."""
    cid = item["correlationId"]
    calls = [("complete", {"result": {"cid": cid}})] * 2 + \
        [("fail", {"error": {"message": "no"}})] * 2 + \
        [("fail", {"error": {"message": "again"}, "retryAfterSeconds": 0})] + \
        [("heartbeat", {"leaseSeconds": 300})]
    if k % 16 == 8:     # 8 failures race: a failed outcome every time
        calls = [("fail", {"error": {"message": "no"}})] * 8
    elif k % 16 == 0:     # a cancel request, then 8 acknowledgements race
        r.cancel(cid, poll_token)
        calls = [("cancelled", {})] * 8
    elif k % 4 == 0:
        r.cancel(cid, poll_token)
        calls += [("cancelled", {})] * 2
    else:
        calls += [("complete", {"result": {"cid": cid}})] * 2
    with ThreadPoolExecutor(8) as ex:
        for st, _ in ex.map(lambda c: r.callback(item, c[0], c[1]), calls):
            codes[st] = codes.get(st, 0) + 1


def expire_loop(stop, runs):
    while not stop.is_set():
        p = subprocess.run([EXPIRE, "--config", ne.CONFIG], capture_output=True, text=True,
                           timeout=120)
        runs.append(p.returncode)
        if p.returncode != 0:
            print("     asyncexec-expire exit %d: %s" % (p.returncode, p.stderr.strip()[-600:]))


def main():
    ne.need_env()
    if not EXPIRE:
        raise SystemExit("FAIL ASYNCEXEC_EXPIRE is not set (run through scripts/test.sh)")
    c = ne.Checks()
    n = max(40, int(2000 * float(os.environ.get("ASYNCEXEC_TEST_SCALE", "1"))))
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), os.getpid())
    r = ne.Route("it/nr%s/op" % sfx, "t-nr-a-%s" % sfx)
    r2 = ne.Route("it/nr%s/two" % sfx, r.tenant)
    b = ne.Route("it/nr%s/bop" % sfx, "t-nr-b-%s" % sfx)
    rx = ne.Receiver()
    e1 = ne.webhook_add(r.tenant, rx.url("/ok/e1"), route=r.route)[0]
    e2 = ne.webhook_add(r.tenant, rx.url("/ok/e2"), route=r2.route)[0]
    eb = ne.webhook_add(b.tenant, rx.url("/ok/b"))[0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                    webhook_allow_networks="127.0.0.1/32", webhook_concurrency=16)
    snd.start()
    try:
        t0 = time.monotonic()
        with ThreadPoolExecutor(8) as ex:
            docs = dict(ex.map(lambda i: ("c%d-%s" % (i, sfx),
                                          r.submit("c%d-%s" % (i, sfx))), range(n)))
            list(ex.map(lambda i: r2.submit("d%d-%s" % (i, sfx)), range(n // 20)))
        items = []
        while len(items) < n:
            got = r.claim(100)
            if not got:
                break
            items += got
        c.check("claimed all %d" % n, len(items) == n, len(items))
        # every eighth overdue while the callbacks race: the expiry decides some
        overdue = [it["id"] for k, it in enumerate(items) if k % 8 == 7]
        stop, runs, codes = threading.Event(), [], {}
        th = threading.Thread(target=expire_loop, args=(stop, runs))
        th.start()
        ne.sql("UPDATE s2r_async_execution SET expires_at = NOW(3) - INTERVAL 1 SECOND "
               "WHERE id IN (%s)" % ",".join(str(i) for i in overdue))
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda kv: race(r, kv[1], docs[kv[1]["correlationId"]]["pollToken"],
                                        kv[0], codes), enumerate(items)))
        # what the races left waiting (a retryable fail that won, then nothing): fail it
        left = ne.sql("SELECT id FROM s2r_async_execution WHERE environment = '%s' AND "
                      "service_key = '%s' AND operation_key = 'op' AND "
                      "status = 'waiting_callback'" % tuple(r.route.split("/")[:2]))
        for (i,) in left:
            ne.admin("execution", "fail", i, "--message", "left over")
        time.sleep(0.5)
        stop.set()
        th.join()
        c.check("asyncexec-expire ran %d times, every run exit 0" % len(runs),
                runs and all(x == 0 for x in runs), runs[:20])
        print("     callbacks by status: %s; %d left waiting; %.1f s" %
              (json.dumps(codes), len(left), time.monotonic() - t0))
        final = dict(ne.sql("SELECT correlation_id, status FROM s2r_async_execution WHERE "
                            "environment = '%s' AND service_key = '%s' AND "
                            "operation_key = 'op'" % tuple(r.route.split("/")[:2])))
        c.check("every execution ended", len(final) == n and
                all(s != "waiting_callback" for s in final.values()),
                sorted(set(final.values())))
        got = rx.wait(lambda q: q["path"] == "/ok/e1", n, 120)
        time.sleep(1.5)
        got = rx.matching(lambda q: q["path"] == "/ok/e1")
        seen, ids = {}, {}
        for q in got:
            d = json.loads(q["body"])["data"]
            seen.setdefault(d["correlationId"], []).append(d["status"])
            ids.setdefault(d["correlationId"], set()).add(q["headers"]["webhook-id"])
        # delivery is at least once: a repeat (a lease that lapsed under load before
        # its answer was recorded) must be the same delivery, with its webhook-id
        c.check("E got every execution's event, one delivery each (one webhook-id)",
                len(seen) == n and all(len(v) == 1 for v in ids.values()),
                (len(got), len(seen), sum(len(v) > 1 for v in ids.values())))
        print("     %d requests for %d deliveries (%d repeats of a delivery)" %
              (len(got), n, len(got) - n))
        wrong = [(k, v, final.get(k)) for k, v in seen.items() if v[0] != final.get(k)]
        c.check("each with the execution's final status", not wrong, wrong[:5])
        by = {}
        for s in final.values():
            by[s] = by.get(s, 0) + 1
        print("     final statuses: %s" % json.dumps(by))
        c.check("the races ended executions every way (completed, failed, cancelled, "
                "expired)", all(by.get(s, 0) > 0 for s in
                                ("completed", "failed", "cancelled", "expired")), by)
        e2got = rx.matching(lambda q: q["path"] == "/ok/e2")
        c.check("E2 got nothing yet from R2 (still waiting) and nothing of R",
                e2got == [], len(e2got))
        r2items = r2.claim(100)
        for it in r2items:
            r2.callback(it, "complete", {"result": 2})
        e2got = rx.wait(lambda q: q["path"] == "/ok/e2", n // 20, 30)
        time.sleep(0.5)
        e2got = rx.matching(lambda q: q["path"] == "/ok/e2")
        c.check("E2 then got exactly R2's %d" % (n // 20), len(r2items) == n // 20 and
                sorted(json.loads(q["body"])["data"]["correlationId"] for q in e2got) ==
                sorted(it["correlationId"] for it in r2items), len(e2got))
        c.check("tenant B's endpoint got nothing", not rx.matching(
            lambda q: q["path"] == "/ok/b"))
        rows = ne.sql("SELECT state, COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id "
                      "IN (%d, %d, %d) GROUP BY state" % (e1, e2, eb))
        c.check("the database holds %d deliveries, all delivered" % (n + n // 20),
                rows == [["delivered", str(n + n // 20)]], rows)
        marks = ne.sql("SELECT COUNT(*) FROM s2r_async_execution WHERE "
                       "initiator_tenant_id IN ('%s', '%s') AND notify = 1"
                       % (r.tenant, b.tenant))
        c.check("no outbox mark left", marks == [["0"]], marks)
    finally:
        rc = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc == 0, rc)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
