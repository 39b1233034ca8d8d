#!/usr/bin/env python3
"""notify_wait: the transfers in flight are driven while the outbox step waits for a
lock, so an answer is recorded within its lease and nothing is sent twice; a tenant
whose outbox cannot get its lock holds up no other tenant and loses no event.

A lease lasts webhook_timeout + 5 s (here 2 + 5). Tenants A, B and C have one endpoint
each (B's added before C's: the outbox step takes the tenants in that order). A's
receiver holds its answer until the test opens its gate.

1. A side session holds B's endpoint row (FOR UPDATE) for HOLD seconds: longer than a
   lease, shorter than the sender's 10 s lock wait.
2. An execution of A ends; its delivery is leased and sent; the receiver holds it.
3. An execution of B ends: the sender's outbox reads B's marks, then B's endpoints
   share-locked, which waits for the side session (seen in the process list).
4. An execution of C ends, and A's receiver answers.

A sender that waits out the side session (the statement's lock wait) reads A's answer
only after the lease lapsed: it sends A's delivery again (two requests, attempts 2,
a lease_lost attempt), and C's event waits for the hold too. One that bounds the wait
records A's answer at once (one request, delivered at the first attempt, no lease
lost), delivers C's event while B's row is still held, and B's event once the side
session has ended (the marks stay until a batch commits).
"""
import json
import sys
import threading
import time

import notify_env as ne

HOLD = 9        # s the side session holds B's endpoint: > the 7 s lease, < 10 s


def hold_row(table, rid, out, done):
    """Holds row rid of table FOR UPDATE for HOLD s; out["end"]: when the client saw
    it end (at or after the release), out["commit"]: when the server began its COMMIT
    (at or before the release; the client's own end can come later than an event the
    release let through)."""
    try:
        rows = ne.sql("START TRANSACTION; SELECT id FROM %s WHERE id = %d FOR UPDATE; "
                      "DO SLEEP(%d); SELECT UNIX_TIMESTAMP(SYSDATE(6)); COMMIT" %
                      (table, rid, HOLD))
        out["commit"] = float(rows[-1][0])
    finally:
        out["end"] = time.time()
        done.set()


def holding(table, rid):
    """Whether another session holds row rid (a locking read NOWAIT fails)."""
    try:
        ne.sql("SELECT id FROM %s WHERE id = %d FOR UPDATE NOWAIT" % (table, rid))
    except RuntimeError as e:
        return "lock" in str(e).lower()     # 1205 at once (NOWAIT)
    return False


def hold(table, rid):
    """(done event, {"end": time}) of a side session holding row rid, once it holds
    it (None when it did not within 10 s)."""
    done, out = threading.Event(), {}
    threading.Thread(target=hold_row, args=(table, rid, out, done),
                     daemon=True).start()
    return (done, out) if ne.until(lambda: holding(table, rid), 10) else None


def outbox_waiting():
    """Whether a session (the sender's: same user) is in the outbox's share-locked read
    of a tenant's endpoints."""
    rows = ne.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> "
                  "CONNECTION_ID() AND INFO LIKE '%FROM s2r_webhook_endpoint FORCE "
                  "INDEX (ix_endpoint_tenant)%'")
    return rows[0][0] != "0"


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    ra = ne.Route("it/nwa%s/op" % sfx, "t-nwa-%s" % sfx)
    rb = ne.Route("it/nwb%s/op" % sfx, "t-nwb-%s" % sfx)
    rc = ne.Route("it/nwc%s/op" % sfx, "t-nwc-%s" % sfx)
    rx = ne.Receiver()
    gate = "a%s" % sfx
    ea = ne.webhook_add(ra.tenant, rx.url("/gate?k=%s&e=a" % gate))[0]
    eb = ne.webhook_add(rb.tenant, rx.url("/ok?e=b"))[0]
    ec = ne.webhook_add(rc.tenant, rx.url("/ok?e=c"))[0]
    c.check("B's endpoint comes before C's", eb < ec, (eb, ec))
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1, webhook_timeout=2,
                    webhook_allow_networks="127.0.0.1/32")
    of = lambda e, x=None: (lambda q: q["query"].get("e") == e and (
        x is None or json.loads(q["body"])["data"]["correlationId"] == x))
    try:
        for r in (ra, rb):
            r.submit("wait-%s" % sfx)
        rc.submit("wait-%s" % sfx)
        rc.submit("early-%s" % sfx)
        xa, xb, xc = ra.claim(1), rb.claim(1), rc.claim(2)
        c.check("claimed", (len(xa), len(xb), len(xc)) == (1, 1, 2),
                (len(xa), len(xb), len(xc)))
        xd = [x for x in xc if x["correlationId"] == "early-%s" % sfx]
        xc = [x for x in xc if x["correlationId"] != "early-%s" % sfx]
        # D: C's execution that ended before the sender started, its row held
        st, _ = rc.callback(xd[0], "complete", {"result": 1})
        c.check("D complete: 200", st == 200, st)
        d_id = int(ne.sql("SELECT id FROM s2r_async_execution WHERE correlation_id "
                          "= 'early-%s' AND notify = 1" % sfx)[0][0])
        hd = hold("s2r_async_execution", d_id)
        hb = hold("s2r_webhook_endpoint", eb)
        c.check("side sessions hold D's row and B's endpoint", hd and hb)
        snd.start()
        t0 = time.time()
        st, _ = ra.callback(xa[0], "complete", {"result": 1})
        c.check("A complete: 200", st == 200, st)
        c.check("A's request is in flight", len(rx.wait(of("a"), 1, 10)) == 1)
        st, _ = rb.callback(xb[0], "complete", {"result": 1})
        c.check("B complete: 200", st == 200, st)
        c.check("the outbox waits for B's endpoint row", ne.until(outbox_waiting, 5))
        st, _ = rc.callback(xc[0], "complete", {"result": 1})
        c.check("C complete: 200", st == 200, st)
        rx.open_gate(gate)
        gc = rx.wait(of("c", "wait-%s" % sfx), 1, HOLD + 10)
        hb[0].wait(HOLD + 10)
        hd[0].wait(HOLD + 10)
        c.check("C's event came while B's row was held (%.1f s after A's end, the "
                "hold ended at %.1f s)" % ((gc[0]["at"] - t0) if gc else -1,
                                          hb[1].get("commit", 0) - t0),
                len(gc) == 1 and gc[0]["at"] < hb[1].get("commit", 0))
        gb = rx.wait(of("b"), 1, 15)
        c.check("B's event came after its hold", len(gb) == 1 and
                gb[0]["at"] >= hb[1].get("commit", time.time()))
        gd = rx.wait(of("c", "early-%s" % sfx), 1, 15)
        c.check("D's event came after its hold", len(gd) == 1 and
                gd[0]["at"] >= hd[1].get("commit", time.time()))
        # a second attempt of A would be leased in the pass that makes B's delivery
        c.check("no transfer left", ne.until(
            lambda: snd.metric("asyncexec_webhook_inflight") == 0, 10))
        ga = rx.matching(of("a"))
        ids = sorted({q["headers"].get("webhook-id") for q in ga})
        c.check("A: one request (%d, webhook-ids %s)" % (len(ga), ids), len(ga) == 1)
        rows = ne.sql("SELECT endpoint_id, state, attempts FROM s2r_webhook_delivery "
                      "WHERE endpoint_id IN (%d, %d, %d) ORDER BY endpoint_id, id" %
                      (ea, eb, ec))
        want = [[str(e), "delivered", "1"] for e in (ea, eb, ec, ec)]
        c.check("each delivered at its first attempt", rows == want, rows)
        lost = snd.metric('asyncexec_webhook_attempts_total{result="lease_lost"}')
        c.check("no lease lost", lost == 0, lost)
        left = ne.sql("SELECT COUNT(*) FROM s2r_async_execution WHERE notify = 1 AND "
                      "initiator_tenant_id IN ('%s', '%s', '%s')" %
                      (ra.tenant, rb.tenant, rc.tenant))
        c.check("no mark left", left == [["0"]], left)
    finally:
        rx.open_gate(gate)
        rc_ = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc_ == 0, rc_)
    log = snd.log_text()
    c.check("every failed fetch logged with its error text",
            "lock wait timeout" in log.lower() and 'msg="db: fetch: "' not in log)
    print("# the sender's log:\n" + log[-3000:])
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
