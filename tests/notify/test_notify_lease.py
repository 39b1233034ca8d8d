#!/usr/bin/env python3
"""notify_lease: a delivery's lease runs from when it is taken, so a pass whose outbox
step took long leases nothing that is already lapsed, and no delivery is sent twice at
once.

A lease lasts webhook_timeout + 5 s (here 2 + 5). Tenant T has two endpoints, both
answering after 1.5 s. A side session holds endpoint E2's row (FOR UPDATE) for HOLD
seconds, longer than a lease and shorter than the sender's lock wait (10 s); then an
execution of T completes. The sender's next pass reads T's marks and then T's endpoints
share-locked, which waits for the side session; then it makes the two deliveries and
leases them. A lease counted from the pass's start would end before it was taken: the
next pass (200 ms later, while the first attempts wait for their answers) would lease
and send the same deliveries again. Each endpoint must get exactly one request.

Then fairness (webhook_concurrency = 8, so at most max(1, 8 / 4) = 2 transfers of one
endpoint at once): endpoint A of tenant TA, whose receiver accepts and does not answer,
gets 10 due deliveries; once its first requests came, one execution of tenant TB ends.
TB's endpoint must get its event within FAIR_S seconds, not after A's attempts time out
(webhook_timeout = 10 s here); A must have had no more than 2 requests meanwhile. When
A's receiver answers, A's other deliveries go out as well, 2 at a time.
"""
import sys
import threading
import time

import notify_env as ne

HOLD = 9        # s the side session holds E2: > the 7 s lease, < the 10 s lock wait
SLOW_MS = 1500  # each receiver's answer time, under webhook_timeout
FAIR_N = 10     # due deliveries of the endpoint that does not answer
FAIR_CAP = 2    # max(1, webhook_concurrency / 4) with webhook_concurrency = 8
FAIR_S = 2.5    # s in which the other tenant's event must arrive


def hold_row(eid, done):
    """Holds endpoint eid's row FOR UPDATE for HOLD seconds in a side session."""
    try:
        ne.sql("START TRANSACTION; SELECT id FROM s2r_webhook_endpoint WHERE id = %d "
               "FOR UPDATE; DO SLEEP(%d); COMMIT" % (eid, HOLD))
    finally:
        done.set()


def holding(eid):
    """Whether another session holds eid's row (a locking read NOWAIT fails)."""
    try:
        ne.sql("SELECT id FROM s2r_webhook_endpoint WHERE id = %d FOR UPDATE NOWAIT"
               % eid)
    except RuntimeError as e:
        return "lock" in str(e).lower()     # 1205 at once (NOWAIT)
    return False


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    r = ne.Route("it/nl%s/op" % sfx, "t-nl-%s" % sfx)
    rx = ne.Receiver()
    ends = ["1", "2"]      # /slow?e=N: endpoint N
    e1 = ne.webhook_add(r.tenant, rx.url("/slow?ms=%d&e=1" % SLOW_MS))[0]
    e2 = ne.webhook_add(r.tenant, rx.url("/slow?ms=%d&e=2" % SLOW_MS))[0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1, webhook_timeout=2,
                    webhook_allow_networks="127.0.0.1/32")
    snd.start()
    done = threading.Event()
    try:
        r.submit("lease-%s" % sfx)
        items = r.claim(1)
        c.check("claimed", len(items) == 1, len(items))
        threading.Thread(target=hold_row, args=(e2, done), daemon=True).start()
        ne.until(lambda: holding(e2), 10)
        c.check("the side session holds E2", holding(e2))
        t0 = time.monotonic()
        st, _ = r.callback(items[0], "complete", {"result": 1})
        c.check("complete: 200", st == 200, st)
        done.wait(HOLD + 5)
        mine = lambda q: q["path"] == "/slow" and q["query"].get("e") in ends
        rx.wait(mine, 2, 30)
        # a second attempt of either would come within a lease's pass or two
        got = rx.wait(mine, 3, SLOW_MS / 1000 + 3)
        for e in ends:
            mq = [q for q in got if q["query"].get("e") == e]
            ids = sorted({q["headers"].get("webhook-id") for q in mq})
            c.check("endpoint %s: one request (%d, webhook-ids %s)" % (e, len(mq), ids),
                    len(mq) == 1)
        print("# the deliveries came %.1f s after the complete (the hold: %d s)" %
              (time.monotonic() - t0, HOLD))
        rows = ne.sql("SELECT state, attempts FROM s2r_webhook_delivery WHERE "
                      "endpoint_id IN (%d, %d)" % (e1, e2))
        c.check("both delivered at the first attempt", sorted(rows) ==
                [["delivered", "1"], ["delivered", "1"]], rows)
    finally:
        rc = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc == 0, rc)
    fairness(c, tmp, sfx)
    return c.done()


def ended(route, n, tag):
    """Submits, claims and completes n executions of route."""
    for i in range(n):
        route.submit("%s-%d" % (tag, i))
    items = route.claim(n)
    for it in items:
        route.callback(it, "complete", {"result": 1})
    return len(items)


def fairness(c, tmp, sfx):
    """A receiver that does not answer holds at most FAIR_CAP transfer slots."""
    ra = ne.Route("it/nfair%s/a" % sfx, "t-nfa-%s" % sfx)
    rb = ne.Route("it/nfair%s/b" % sfx, "t-nfb-%s" % sfx)
    rx = ne.Receiver()
    gate = "fair-" + sfx
    ne.webhook_add(ra.tenant, rx.url("/gate?k=%s&ms=20000&e=a" % gate))
    ne.webhook_add(rb.tenant, rx.url("/ok/fair-b"))
    snd = ne.Sender(tmp, "fair", webhook_allow_http=1, webhook_timeout=10,
                    webhook_concurrency=8, webhook_allow_networks="127.0.0.1/32")
    snd.start()
    is_a = lambda q: q["path"] == "/gate" and q["query"].get("k") == gate
    try:
        c.check("A: %d executions ended" % FAIR_N,
                ended(ra, FAIR_N, "fa-" + sfx) == FAIR_N)
        got = rx.wait(is_a, 1, 15)
        c.check("A's receiver got its first request", len(got) >= 1, len(got))
        t0 = time.monotonic()
        c.check("B: one execution ended", ended(rb, 1, "fb-" + sfx) == 1)
        bs = rx.wait(lambda q: q["path"] == "/ok/fair-b", 1, 15)
        took = time.monotonic() - t0
        print("# B's event came %.2f s after its complete" % took)
        c.check("B's event within %.1f s while A does not answer (%.2f s)" %
                (FAIR_S, took), len(bs) == 1 and took <= FAIR_S, len(bs))
        na = len(rx.matching(is_a))
        c.check("A had at most %d requests at once (%d)" % (FAIR_CAP, na),
                na <= FAIR_CAP)
        rx.open_gate(gate)
        got = rx.wait(is_a, FAIR_N, 30)
        c.check("A's %d events all came once its receiver answered (%d)" %
                (FAIR_N, len(got)), len(got) == FAIR_N)
    finally:
        rx.open_gate(gate)
        rc = snd.stop()
        rx.close()
    c.check("fairness sender, SIGTERM: exit 0", rc == 0, rc)


if __name__ == "__main__":
    sys.exit(main())
