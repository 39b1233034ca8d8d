#!/usr/bin/env python3
"""notify_added: an endpoint added (or enabled again) while the sender runs gets the
event of every execution that ends after `asyncexec-admin webhook add` (or `enable`)
returned, as asyncexec-admin(8) promises.

Tenant T has endpoint E1 when the sender starts. The sender keeps a list of the
endpoints that it re-reads every 2 s; add and enable return 1.25 s after their commit.
The test puts the sender's re-read right before the command: SIGHUP makes the next pass
reload and re-read, and the command starts once the log says "configuration reloaded".
So its list is older than the command's commit until about 0.7 s after the command
returned; the executions (claimed before) are all completed right after it returned,
inside that window. E1 and E2 must each get one delivery of every one of them: a sender
that made the deliveries from its list made them for E1 only and cleared the marks.
Then the same with E2 disabled (and the sender's list re-read) and enabled again.
Last, `webhook remove` E2 right after a re-read (the list still has E2 for 2 s) and end
N more: E1 gets them all, E2 has no delivery of them (a sender that made deliveries
from its list made them for E2 too, and sent them to its URL).
"""
import json
import signal
import sys
import time

import notify_env as ne

N = 20      # executions ended right after each command


def reread(c, snd, what):
    """SIGHUP and wait for its reload (the endpoints are re-read in the same pass)."""
    before = snd.log_text().count("configuration reloaded")
    snd.send_signal(signal.SIGHUP)
    ne.until(lambda: snd.log_text().count("configuration reloaded") > before, 10,
             0.01)
    return c.check("%s: SIGHUP reloaded" % what,
                   snd.log_text().count("configuration reloaded") > before)


def end_all(c, r, items, what):
    """Completes every claimed item at once; the correlation ids."""
    t0 = time.monotonic()
    for it in items:
        st, _ = r.callback(it, "complete", {"result": {"cid": it["correlationId"]}})
        if st != 200:
            c.check("%s: callback of %s: 200" % (what, it["correlationId"]), False, st)
    print("# %s: %d completed in %.2f s after the command returned" %
          (what, len(items), time.monotonic() - t0))
    return sorted(it["correlationId"] for it in items)


def cids(rx, path):
    return sorted(json.loads(q["body"])["data"]["correlationId"]
                  for q in rx.matching(lambda q: q["path"] == path))


def phase(c, r, rx, what, command, sfx):
    """Claims N executions, re-reads, runs command, completes them; both endpoints must
    get all N."""
    for i in range(N):
        r.submit("%s-%d-%s" % (what, i, sfx))
    items = r.claim(N)
    c.check("%s: %d claimed" % (what, N), len(items) == N, len(items))
    if not reread(c, r.snd, what):
        return
    t0 = time.monotonic()
    command()
    print("# %s: the command took %.2f s" % (what, time.monotonic() - t0))
    want = end_all(c, r, items, what)
    pre = what + "-"
    for path in ("/ok/e1", "/ok/e2"):
        rx.wait(lambda q, p=path: q["path"] == p and
                json.loads(q["body"])["data"]["correlationId"].startswith(pre), N, 30)
        got = [x for x in cids(rx, path) if x.startswith(pre)]
        c.check("%s: %s got each of the %d events once" % (what, path, N), got == want,
                "%d of %d" % (len(got), N))


def removed(c, r, rx, e2, sfx):
    """webhook remove E2 right after a re-read, then N executions end: none of them
    becomes a delivery for E2 (each execution's deliveries commit together: once E1
    has all N, E2's would exist)."""
    what = "remove"
    for i in range(N):
        r.submit("%s-%d-%s" % (what, i, sfx))
    items = r.claim(N)
    c.check("%s: %d claimed" % (what, N), len(items) == N, len(items))
    if not reread(c, r.snd, what):
        return
    ne.admin("webhook", "remove", str(e2))
    want = end_all(c, r, items, what)
    pre = what + "-"
    rx.wait(lambda q: q["path"] == "/ok/e1" and
            json.loads(q["body"])["data"]["correlationId"].startswith(pre), N, 30)
    got = [x for x in cids(rx, "/ok/e1") if x.startswith(pre)]
    c.check("%s: /ok/e1 got each of the %d events once" % (what, N), got == want,
            "%d of %d" % (len(got), N))
    rows = ne.sql("SELECT COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id = %d"
                  % e2)
    c.check("%s: no delivery for the removed endpoint" % what, rows == [["0"]], rows)
    got = [x for x in cids(rx, "/ok/e2") if x.startswith(pre)]
    c.check("%s: /ok/e2 got none of them" % what, got == [], got)


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    r = ne.Route("it/na%s/op" % sfx, "t-na-%s" % sfx)
    rx = ne.Receiver()
    ne.webhook_add(r.tenant, rx.url("/ok/e1"))
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                    webhook_allow_networks="127.0.0.1/32")
    snd.start()
    r.snd = snd
    e2 = []
    try:
        phase(c, r, rx, "add", lambda: e2.append(ne.webhook_add(r.tenant,
                                                                 rx.url("/ok/e2"))[0]),
              sfx)
        if e2:
            ne.admin("webhook", "disable", str(e2[0]))
            phase(c, r, rx, "enable",
                  lambda: ne.admin("webhook", "enable", str(e2[0])), sfx)
            removed(c, r, rx, e2[0], sfx)
    finally:
        rc = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc == 0, rc)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
