#!/usr/bin/env python3
"""notify_many: every enabled endpoint is served, however many there are.

The sender once read at most 4,096 endpoints (its list of tenants to read the outbox
of) and at most 4,096 of a tenant's enabled endpoints (the deliveries an execution
becomes): an endpoint past either got nothing, its executions' marks cleared all the
same. Here the test's own endpoints alone number ENABLED = 4,100, all enabled, beyond
whatever other tests left:
  - tenant A: BULK route-filtered endpoints (written here in one INSERT ... SELECT,
    for a route that does not exist: they match nothing, nothing is sent to them),
    then E_A (every route), A's 4,099th enabled endpoint;
  - tenant B: E_B, the highest id of all.
An execution of A and one of B end: E_A and E_B each get its event, signed; the
route-filtered endpoints get nothing. Everything the test wrote is deleted after.
"""
import json
import sys
import time

import notify_env as ne

ENABLED = 4100
BULK = ENABLED - 2
WAIT = 30        # s a delivery may take (the sender re-reads its list every 2 s)


def bulk(tenant, svc, url):
    """BULK enabled endpoints of tenant for route it/svc/op (a dummy secret: nothing is
    ever signed for them), in one statement."""
    ne.sql("SET STATEMENT max_recursive_iterations = %d FOR "
           "INSERT INTO s2r_webhook_endpoint (tenant_id, environment, service_key, "
           "operation_key, url, events, enabled, secret_sealed, created_at, "
           "updated_at) WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 "
           "FROM s WHERE n < %d) SELECT '%s', 'it', '%s', 'op', '%s', 'completed', "
           "1, 'x', NOW(3), NOW(3) FROM s" % (BULK, BULK, tenant, svc, url))


def end_one(c, r, cid):
    """Submits, claims and completes one execution of route r."""
    r.submit(cid)
    items = r.claim(1)
    c.check("%s: claimed" % cid, len(items) == 1, len(items))
    for it in items:
        st, _ = r.callback(it, "complete", {"result": {"cid": cid}})
        c.check("%s: complete: 200" % cid, st == 200, st)


def got_event(c, rx, path, secret, cid):
    """The event of cid reached path once, signed with secret."""
    got = rx.wait(lambda q: q["path"] == path, 1, WAIT)
    cids = [json.loads(q["body"])["data"]["correlationId"] for q in got]
    c.check("%s got the event of %s" % (path, cid), cids == [cid], cids)
    c.check("%s: its signature verifies" % path,
            len(got) == 1 and ne.verify(secret, got[0]["headers"], got[0]["body"]) == "",
            [ne.verify(secret, q["headers"], q["body"]) for q in got])


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    a = ne.Route("it/nm%s/op" % sfx, "t-nm-a-%s" % sfx)
    b = ne.Route("it/nm%s/bop" % sfx, "t-nm-b-%s" % sfx)
    rx = ne.Receiver()
    snd = None
    try:
        bulk(a.tenant, "nmx" + sfx, rx.url("/ok/bulk"))
        e_a, s_a = ne.webhook_add(a.tenant, rx.url("/ok/a"))
        e_b, s_b = ne.webhook_add(b.tenant, rx.url("/ok/b"))
        rows = ne.sql("SELECT COUNT(*), MAX(id) FROM s2r_webhook_endpoint WHERE "
                      "tenant_id IN ('%s', '%s') AND enabled = 1" % (a.tenant, b.tenant))
        c.check("%d enabled endpoints of the test's, E_B the highest id" % ENABLED,
                rows == [[str(ENABLED), str(e_b)]], rows)
        top = ne.sql("SELECT MAX(id) FROM s2r_webhook_endpoint")
        c.check("E_B is the highest id of all", top == [[str(e_b)]], top)
        snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                        webhook_allow_networks="127.0.0.1/32")
        snd.start()
        end_one(c, a, "a-" + sfx)
        end_one(c, b, "b-" + sfx)
        got_event(c, rx, "/ok/a", s_a, "a-" + sfx)
        got_event(c, rx, "/ok/b", s_b, "b-" + sfx)
        c.check("the route-filtered endpoints got nothing",
                not rx.matching(lambda q: q["path"] == "/ok/bulk"))
    finally:
        rc = snd.stop() if snd else 0
        rx.close()
        ne.sql("DELETE d FROM s2r_webhook_delivery d JOIN s2r_webhook_endpoint w ON "
               "w.id = d.endpoint_id WHERE w.tenant_id IN ('%s', '%s')"
               % (a.tenant, b.tenant))
        ne.sql("DELETE FROM s2r_webhook_endpoint WHERE tenant_id IN ('%s', '%s')"
               % (a.tenant, b.tenant))
    return c.done_sender(rc, snd)


if __name__ == "__main__":
    sys.exit(main())
