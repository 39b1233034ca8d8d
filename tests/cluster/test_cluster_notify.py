#!/usr/bin/env python3
"""cluster_notify: two webhook senders on the two app hosts of the Galera cluster, one
writing through node 1 and the other through node 2, never send one delivery at the
same time, and lose none.

Both run while 300 executions of one tenant are completed through nginx (round robin
over both hosts); the receiver answers after 100 ms so that transfers overlap. SKIP
LOCKED is local to a node, so the two senders can pick the same rows on two nodes: the
lease is a compare-and-set whose COMMIT loses certification on one of them, and only the
winner sends. Checked: every execution's event arrived; no webhook-id arrived twice
(no lease lapsed: both senders stayed up); both senders delivered some; all delivered in
the database (read through node 3).

A lease ends at a wall-clock time, so the test watches the wall clock against the
monotonic one (.ci/run once saw two webhook-ids twice, each logged by the loser as "the
lease lapsed before the answer came", within a 4 s run with 20 s leases, on a VM whose
wall clock has been seen to step): when it steps forward by LEASE_S or more, leases
lapse as they must, and the repeats are checked instead to be at most the lapses the
senders logged. It prints the largest steps either way.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "notify"))
import notify_env as ne  # noqa: E402

N = 300
LEASE_S = 15 + 5        # webhook_timeout's default + the sender's LEASE_MARGIN_MS


def node2_first(path):
    """db_hosts of the configuration at path, its second node first."""
    m = re.search(r"(?m)^\s*db_hosts\s*=\s*(.*)$", open(path, encoding="utf-8").read())
    hosts = [h.strip() for h in m.group(1).split(",")]
    return ", ".join(hosts[1:2] + hosts[:1] + hosts[2:])


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), os.getpid())
    r = ne.Route("it/cn%s/op" % sfx, "t-cn-%s" % sfx)
    rx = ne.Receiver()
    ne.webhook_add(r.tenant, rx.url("/slow?ms=100"))
    keys = dict(webhook_allow_http=1, webhook_allow_networks="127.0.0.1/32",
                webhook_concurrency=8, db_pin_file=None)
    a = ne.Sender(tmp, "notify-a", **keys)
    b = ne.Sender(tmp, "notify-b", db_hosts=node2_first(ne.CONFIG), **keys)
    a.start()
    b.start()
    clock = ne.ClockWatch().start()
    try:
        for i in range(N):
            r.submit("c%d-%s" % (i, sfx))
        items = []
        while len(items) < N:
            got = r.claim(100)
            if not got:
                break
            items += got
        for it in items:
            st, _ = r.callback(it, "complete", {"result": 1})
        got = rx.wait(lambda q: True, N, 120)
        time.sleep(1.0)
        got = rx.matching(lambda q: True)
        ids = [q["headers"]["webhook-id"] for q in got]
        cids = {ne.json.loads(q["body"])["data"]["correlationId"] for q in got}
        c.check("every execution's event arrived (%d)" % N, len(cids) == N, len(cids))
        clock.stop()
        dups = len(ids) - len(set(ids))
        print("     the wall clock stepped at most %.3f s forward and %.3f s back"
              % (clock.forward(), clock.backward()))
        if clock.forward() < LEASE_S:
            c.check("no webhook-id arrived twice", dups == 0, dups)
        else:
            lapsed = sum(t.count("the lease lapsed before the answer came")
                         for t in (a.log_text(), b.log_text()))
            c.check("the wall clock stepped past the lease: repeats (%d) at most the "
                    "lapsed leases logged (%d)" % (dups, lapsed), dups <= lapsed,
                    (dups, lapsed))
        da = a.metric('asyncexec_webhook_attempts_total{result="delivered"}') or 0
        db = b.metric('asyncexec_webhook_attempts_total{result="delivered"}') or 0
        print("     sender A (node 1) delivered %d, sender B (node 2) %d" % (da, db))
        c.check("both senders delivered some", da > 0 and db > 0, (da, db))
        c.check("their counts add up to the deliveries", da + db == N, (da, db))
        end = time.monotonic() + 20
        while True:
            rows = ne.sql("SELECT state, COUNT(*) FROM s2r_webhook_delivery d JOIN "
                          "s2r_webhook_endpoint w ON w.id = d.endpoint_id WHERE "
                          "w.tenant_id = '%s' GROUP BY state" % r.tenant)
            if rows == [["delivered", str(N)]] or time.monotonic() > end:
                break
            time.sleep(0.2)
        c.check("all delivered in the database", rows == [["delivered", str(N)]], rows)
    finally:
        ra, rb = a.stop(), b.stop()
        rx.close()
    c.check("both stop on SIGTERM with exit 0", ra == 0 and rb == 0, (ra, rb))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
