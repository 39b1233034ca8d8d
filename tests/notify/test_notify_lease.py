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
"""
import sys
import threading
import time

import notify_env as ne

HOLD = 9        # s the side session holds E2: > the 7 s lease, < the 10 s lock wait
SLOW_MS = 1500  # each receiver's answer time, under webhook_timeout


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
        end = time.monotonic() + 10
        while not holding(e2) and time.monotonic() < end:
            time.sleep(0.05)
        c.check("the side session holds E2", holding(e2))
        t0 = time.monotonic()
        st, _ = r.callback(items[0], "complete", {"result": 1})
        c.check("complete: 200", st == 200, st)
        done.wait(HOLD + 5)
        mine = lambda q: q["path"] == "/slow" and q["query"].get("e") in ends
        got = rx.wait(mine, 2, 30)
        # a second attempt of either would come within a lease's pass or two
        late = time.monotonic() + SLOW_MS / 1000 + 3
        while time.monotonic() < late and len(got) <= 2:
            time.sleep(0.05)
            got = rx.matching(mine)
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
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
