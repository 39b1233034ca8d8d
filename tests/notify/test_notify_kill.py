#!/usr/bin/env python3
"""notify_kill: killing the sender or the database loses no delivery, and a repeat keeps
its webhook-id.

1. A sender is SIGKILLed while its transfers to a slow receiver are in flight; a second
   sender (another process, as on another app host) takes the lapsed leases over
   (webhook_timeout 2 s + 5 s) and delivers them: every execution's event arrives, the
   repeats carry the webhook-id of the first attempt, and all end delivered.
2. The database is stopped while the sender works (ASYNCEXEC_TEST_DBCTL) and started
   again: the sender stays up, /readyz says 503 while the database is away, and every
   event completed before and during the outage is delivered once it is back.
"""
import json
import os
import signal
import subprocess
import sys
import time

import notify_env as ne

DBCTL = os.environ.get("ASYNCEXEC_TEST_DBCTL", "")


def complete_all(r, prefix, n):
    for i in range(n):
        r.submit("%s%d" % (prefix, i))
    items = r.claim(100)
    for it in items:
        r.callback(it, "complete", {"result": 1})
    return [it["correlationId"] for it in items]


def by_cid(reqs):
    out = {}
    for q in reqs:
        out.setdefault(json.loads(q["body"])["data"]["correlationId"], []).append(
            q["headers"]["webhook-id"])
    return out


def kill_phase(c, tmp, sfx):
    r = ne.Route("it/nk%s/op" % sfx, "t-nk-%s" % sfx)
    rx = ne.Receiver()
    ne.webhook_add(r.tenant, rx.url("/slow?ms=1500"))
    # 8: two transfers of the one endpoint at once (its cap, 8 / 4), so the two first
    # requests are both in flight at the kill and both sent again (with 4 the cap is 1:
    # the first is answered before the second starts, and the wait below runs out)
    keys = dict(webhook_allow_http=1, webhook_allow_networks="127.0.0.1/32",
                webhook_timeout=2, webhook_concurrency=8)
    a = ne.Sender(tmp, "notify-a", **keys)
    b = ne.Sender(tmp, "notify-b", **keys)
    a.start()
    try:
        cids = complete_all(r, "k-%s-" % sfx, 12)
        first = rx.wait(lambda q: True, 2, 20)
        c.check("the first sender's transfers are in flight", len(first) >= 2, len(first))
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        b.start()
        rx.wait(lambda q: True, len(cids) + len(first), 60)
        states = lambda: ne.sql("SELECT state, COUNT(*) FROM s2r_webhook_delivery d "
                                "JOIN s2r_webhook_endpoint w ON w.id = d.endpoint_id "
                                "WHERE w.tenant_id = '%s' GROUP BY state" % r.tenant)
        ne.until(lambda: states() == [["delivered", str(len(cids))]], 60, 0.2)
        rows = states()
        c.check("all %d delivered after the kill" % len(cids),
                rows == [["delivered", str(len(cids))]], rows)
        seen = by_cid(rx.matching(lambda q: True))
        c.check("every execution's event arrived", sorted(seen) == sorted(cids),
                len(seen))
        c.check("repeats carry one webhook-id per delivery",
                all(len(set(v)) == 1 for v in seen.values()),
                {k: v for k, v in seen.items() if len(set(v)) > 1})
        rep = sum(len(v) - 1 for v in seen.values())
        c.check("the killed sender's transfers were sent again (%d repeats)" % rep,
                rep >= 1, rep)
    finally:
        b.stop()
        rx.close()


def db_phase(c, tmp, sfx):
    r = ne.Route("it/nk%s/db" % sfx, "t-nkd-%s" % sfx)
    rx = ne.Receiver()
    ne.webhook_add(r.tenant, rx.url("/ok"))
    s = ne.Sender(tmp, "notify-db", webhook_allow_http=1,
                  webhook_allow_networks="127.0.0.1/32", webhook_retry_schedule="1,1,1,1,1")
    s.start()
    try:
        before = complete_all(r, "b-%s-" % sfx, 5)
        subprocess.run([DBCTL, "stop"], check=True, timeout=120)
        st = ne.until(lambda: (lambda v: None if v == 200 else v)(
            s.get("/readyz")[0]), 30, 0.2)
        c.check("/readyz 503 while the database is away", st == 503, st)
        c.check("the sender stays up", s.proc.poll() is None, s.proc.returncode)
        subprocess.run([DBCTL, "start"], check=True, timeout=120)
        after = complete_all(r, "a-%s-" % sfx, 5)
        got = rx.wait(lambda q: True, len(before) + len(after), 60)
        seen = by_cid(got)
        c.check("every event before and after the outage delivered",
                sorted(seen) == sorted(before + after), sorted(seen))
        ne.until(lambda: s.get("/readyz")[0] == 200, 20, 0.2)
        c.check("/readyz 200 again", s.get("/readyz")[0] == 200)
    finally:
        rc = s.stop()
        rx.close()
    c.check("SIGTERM after the outage: exit 0", rc == 0, rc)


def main():
    ne.need_env()
    if not DBCTL:
        raise SystemExit("FAIL ASYNCEXEC_TEST_DBCTL is not set (run through scripts/test.sh)")
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), os.getpid())
    kill_phase(c, tmp, sfx)
    db_phase(c, tmp, sfx)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
