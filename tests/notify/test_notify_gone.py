#!/usr/bin/env python3
"""notify_gone: a 410 whose endpoint row another session holds does not stall the
recording of other transfers, and the endpoint still ends up disabled.

Tenants G and O have one endpoint each. G's receiver holds its answer until the test
opens its gate, then answers 410 Gone.

1. An execution of G ends; its delivery is leased and sent; the receiver holds it.
2. A side session holds G's endpoint row (FOR UPDATE) for HOLD seconds (an admin
   command on the endpoint in its transaction), shorter than the sender's 10 s lock
   wait.
3. The gate opens (410), and an execution of O ends.

A sender whose disable waits for the session's lock wait records nothing else until
the hold ends: O's event is sent and recorded only after it. One that bounds the
wait (1 s) delivers and records O's event while G's row is still held, and writes
the disable again each pass until the hold has ended: G's endpoint is disabled, its
reason says 410, and G's delivery is dead after one attempt. G's other pending
deliveries (LATER, written here due in an hour) are then held out of the due range
(due beyond a year), so no lease pass reads through them while G is disabled.
"""
import sys
import time

import notify_env as ne
from test_notify_wait import HOLD, hold

LATER = 3


def later(eid, sfx):
    """LATER pending deliveries of endpoint eid, due in an hour."""
    ne.sql("INSERT INTO s2r_webhook_delivery (endpoint_id, execution_id, webhook_id, "
           "event, body, state, attempts, due_at, created_at, updated_at) VALUES " +
           ",".join("(%d, %d, 'msg_gone%s_%d', 'completed', '{}', 'pending', 0, "
                    "NOW(3) + INTERVAL 1 HOUR, NOW(3), NOW(3))"
                    % (eid, 900000000 + i, sfx[-12:], i) for i in range(LATER)))


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    rg = ne.Route("it/ngg%s/op" % sfx, "t-ngg-%s" % sfx)
    ro = ne.Route("it/ngo%s/op" % sfx, "t-ngo-%s" % sfx)
    rx = ne.Receiver()
    gate = "g%s" % sfx
    eg = ne.webhook_add(rg.tenant, rx.url("/gate?k=%s&status=410" % gate))[0]
    eo = ne.webhook_add(ro.tenant, rx.url("/ok?e=o"))[0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1, webhook_timeout=5,
                    webhook_allow_networks="127.0.0.1/32")
    state = lambda e: ne.sql("SELECT state, attempts FROM s2r_webhook_delivery "
                             "WHERE endpoint_id = %d AND execution_id < 900000000"
                             % e)
    later(eg, sfx)
    try:
        rg.submit("g-%s" % sfx)
        ro.submit("o-%s" % sfx)
        xg, xo = rg.claim(1), ro.claim(1)
        c.check("claimed", (len(xg), len(xo)) == (1, 1), (len(xg), len(xo)))
        snd.start()
        st, _ = rg.callback(xg[0], "complete", {"result": 1})
        c.check("G complete: 200", st == 200, st)
        c.check("G's request is in flight",
                len(rx.wait(lambda q: q["path"] == "/gate", 1, 10)) == 1)
        hg = hold("s2r_webhook_endpoint", eg)
        c.check("a side session holds G's endpoint", hg is not None)
        rx.open_gate(gate)
        st, _ = ro.callback(xo[0], "complete", {"result": 1})
        c.check("O complete: 200", st == 200, st)
        got = ne.until(lambda: state(eo) == [["delivered", "1"]], HOLD + 10)
        at = time.time()
        hg[0].wait(HOLD + 10)
        c.check("O's delivery recorded while G's row was held (%.1f s before "
                "the hold ended)" % (hg[1].get("commit", 0) - at),
                got and at < hg[1].get("commit", 0), state(eo))
        row = ne.until(lambda: ne.sql(
            "SELECT enabled, disabled_reason LIKE '%%410%%' FROM "
            "s2r_webhook_endpoint WHERE id = %d AND enabled = 0" % eg), 10)
        c.check("G's endpoint disabled after the hold, for the 410",
                row == [["0", "1"]], row)
        c.check("G's delivery dead after one attempt",
                state(eg) == [["dead", "1"]], state(eg))
        held = ne.sql("SELECT COUNT(*) FROM s2r_webhook_delivery WHERE "
                      "endpoint_id = %d AND execution_id >= 900000000 AND state = "
                      "'pending' AND attempts = 0 AND due_at > NOW(3) + INTERVAL 1 "
                      "YEAR" % eg)
        c.check("G's %d other pending deliveries held out of the due range"
                % LATER, held == [[str(LATER)]], held)
        c.check("G's receiver got one request",
                len(rx.matching(lambda q: q["path"] == "/gate")) == 1)
    finally:
        rx.open_gate(gate)
        rc_ = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc_ == 0, rc_)
    print("# the sender's log:\n" + snd.log_text()[-3000:])
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
