#!/usr/bin/env python3
"""notify_held: the deliveries of a disabled endpoint wait untouched, and go out at
once when it is enabled again.

Tenant D's endpoint is disabled with N pending deliveries, all due (written here, due
a day ago); tenant O's endpoint is enabled. A sender that leases them and puts each
back for a minute ("held") churns through the backlog: every one is leased and written
twice, the held counter grows by N, and O's event waits behind them. The lease must
skip them in SQL:
  - the held counter stays 0 and D's rows are not written (attempts 0, updated_at as
    written here, pending);
  - O's event is delivered within a few seconds;
  - once D's endpoint is enabled (`webhook enable`), all N arrive, none held;
  - D disabled again, its N deliveries replayed (`webhook replay --endpoint`) are
    held out of the due range as well.
The lease's statement (notify_due, its text read from src/repo/repo_notify.c, not a
copy) is EXPLAINed: the due range of ix_delivery_due, in its order (no filesort, no
temporary table), the endpoint read by primary key (eq_ref), nothing scanned. Run in
a side transaction while D is still enabled, it locks D's deliveries, not D's
endpoint row (a subquery's rows are not locked by the outer FOR UPDATE).

A disabled endpoint's deliveries must also leave the due range: tenant B's endpoint,
disabled with BIG pending deliveries due a day ago, is not read through by every lease
pass (5 a second idle). The server's Handler_read_next is sampled every SAMPLE s
while the sender idles; the median growth (the gauges, every 5 s, read the pending
range too, in at most one sample) stays far below BIG, where a lease that filters
the due range row by row reads BIG per pass.
"""
import os
import re
import sys
import threading
import time

import notify_env as ne

N = 600          # D's backlog
BIG = 20000      # B's backlog, held while B stays disabled
SAMPLE = 0.5     # s between reads of Handler_read_next
SAMPLES = 6
PROMPT = 5       # s O's event may take
HELD = 'asyncexec_webhook_attempts_total{result="held"}'


def backlog(eid, n, sfx):
    """n pending deliveries of endpoint eid, due and updated a day ago."""
    for at in range(0, n, 500):   # an argument of the client
        rows = ",".join(
            "(%d, %d, 'msg_held%s_%d', 'completed', '{\"n\":%d}', 'pending', 0, "
            "NOW(3) - INTERVAL 1 DAY, NOW(3) - INTERVAL 1 DAY, "
            "NOW(3) - INTERVAL 1 DAY)" % (eid, 900000000 + i, sfx[-12:], i, i)
            for i in range(at, min(n, at + 500)))
        ne.sql("INSERT INTO s2r_webhook_delivery (endpoint_id, execution_id, "
               "webhook_id, event, body, state, attempts, due_at, created_at, "
               "updated_at) VALUES " + rows)


def reads_next():
    """The server's Handler_read_next."""
    return int(ne.sql("SHOW GLOBAL STATUS LIKE 'Handler_read_next'")[0][1])


def idle_reads():
    """The median growth of Handler_read_next over SAMPLES periods of SAMPLE s."""
    last, grew = reads_next(), []
    for _ in range(SAMPLES):
        time.sleep(SAMPLE)      # a measuring period, not a wait for an event
        now = reads_next()
        grew.append(now - last)
        last = now
    return sorted(grew)[len(grew) // 2], grew


def stmt_text(name):
    """The text of repo_notify.c's statement NSTMT_<name>, its macros expanded."""
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                            "src", "repo", "repo_notify.c"), encoding="utf-8").read()
    macros = {m.group(1): m.group(2) for m in re.finditer(
        r'(?m)^#define (\w+)\s+((?:.*\\\n)*.*)$', src)}

    def expand(text):
        out = []
        for lit, ident in re.findall(r'"((?:[^"\\]|\\.)*)"|\b([A-Z_][A-Z0-9_]*)\b',
                                     text):
            if ident:
                out.append(expand(macros[ident].replace("\\\n", " ")))
            else:
                out.append(lit.replace('\\"', '"'))
        return "".join(out)

    m = re.search(r'\[NSTMT_%s\] = \{(.*?),\s*\d+,\s*"notify_' % name, src, re.S)
    return expand(m.group(1))


def bound(q):
    """q with its values: due_at <= NOW(3), no endpoint at its cap ('', the
    NOT_CAPPED list), LIMIT 8."""
    parts = q.split("?")
    vals = ["NOW(3)"] + ["''"] * (len(parts) - 3) + ["8"]
    return "".join(p + v for p, v in zip(parts, vals)) + parts[-1]


def check_plan(c, q):
    """EXPLAIN of the lease's select of due deliveries (see the top)."""
    rows = ne.sql("EXPLAIN " + bound(q))
    print("# notify_due: %s" % q)
    for r in rows:     # id select_type table type possible_keys key key_len ref rows Extra
        print("# plan: %s" % " | ".join(r))
    by = {r[2]: r for r in rows}
    d, w = by.get("d"), by.get("w")
    c.check("notify_due: the due range of ix_delivery_due",
            d is not None and d[3] == "range" and d[5] == "ix_delivery_due", d)
    c.check("notify_due: the endpoint by primary key",
            w is not None and w[3] == "eq_ref" and w[5] == "PRIMARY", w)
    c.check("notify_due: no scan, no sort, no temporary table",
            all(r[3] != "ALL" and "filesort" not in r[9] and "temporary" not in r[9]
                for r in rows), rows)


def nowait(table, eid):
    """Whether another session holds row eid of table (a NOWAIT locking read)."""
    try:
        ne.sql("SELECT id FROM %s WHERE id = %d FOR UPDATE NOWAIT" % (table, eid))
    except RuntimeError as e:
        return "lock" in str(e).lower()
    return False


def check_locks(c, q, ed):
    """notify_due in a side transaction locks deliveries, not their endpoint."""
    first = ne.sql("SELECT id FROM s2r_webhook_delivery WHERE endpoint_id = %d "
                   "ORDER BY due_at, id LIMIT 1" % ed)[0][0]
    t = threading.Thread(target=ne.sql, args=(
        "START TRANSACTION; %s; DO SLEEP(4); COMMIT" %
        bound(q),), daemon=True)
    t.start()
    held = ne.until(lambda: nowait("s2r_webhook_delivery", int(first)), 3, 0.1)
    c.check("notify_due in a side transaction locks D's first delivery", held)
    c.check("and not D's endpoint row", held and
            not nowait("s2r_webhook_endpoint", ed))
    t.join(10)


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    rd = ne.Route("it/nhd%s/op" % sfx, "t-nhd-%s" % sfx)
    ro = ne.Route("it/nho%s/op" % sfx, "t-nho-%s" % sfx)
    rx = ne.Receiver()
    ed = ne.webhook_add(rd.tenant, rx.url("/ok/d"))[0]
    eo = ne.webhook_add(ro.tenant, rx.url("/ok/o"))[0]
    rb = ne.Route("it/nhb%s/op" % sfx, "t-nhb-%s" % sfx)
    eb = ne.webhook_add(rb.tenant, rx.url("/ok/b"))[0]
    backlog(ed, N, sfx)
    backlog(eb, BIG, "b" + sfx)
    q = stmt_text("DUE")
    check_plan(c, q)
    check_locks(c, q, ed)
    ne.admin("webhook", "disable", str(ed))
    ne.admin("webhook", "disable", str(eb))
    touched = lambda: ne.sql(   # noqa: E731
        "SELECT COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id = %d AND "
        "(state <> 'pending' OR attempts <> 0 OR updated_at > NOW(3) - INTERVAL 30 "
        "SECOND)" % ed)[0][0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1, webhook_timeout=5,
                    webhook_concurrency=8, webhook_allow_networks="127.0.0.1/32")
    ro.submit("o-%s" % sfx)
    item = ro.claim(1)[0]
    snd.start()
    try:
        at = time.monotonic()
        st, _ = ro.callback(item, "complete", {"result": 1})
        c.check("O complete: 200", st == 200, st)
        got = rx.wait(lambda q: q["path"] == "/ok/o", 1, 60)
        took = time.monotonic() - at
        c.check("O's event delivered within %d s beside D's %d held deliveries "
                "(%.1f s)" % (PROMPT, N, took), len(got) == 1 and took < PROMPT, took)
        # O's event was due after all of D's: a sender that leases D's rows had
        # leased (and held) every one of them before it
        c.check("the held counter stayed 0", snd.metric(HELD) == 0, snd.metric(HELD))
        c.check("none of D's %d rows was written" % N, touched() == "0", touched())
        c.check("D's receiver saw nothing", not rx.matching(
            lambda q: q["path"] in ("/ok/d", "/ok/b")))
        med, grew = idle_reads()
        c.check("idle beside B's %d held deliveries: Handler_read_next grows by "
                "%d per %.1f s (median of %s), far below %d"
                % (BIG, med, SAMPLE, grew, BIG), med < BIG // 10, grew)
        t0 = time.time()
        ne.admin("webhook", "enable", str(ed))
        got = rx.wait(lambda q: q["path"] == "/ok/d", N, 60)
        c.check("D enabled: its %d deliveries arrive (%d, %.1f s)"
                % (N, len(got), time.time() - t0), len(got) >= N, len(got))
        first = min(q["at"] for q in got) - t0 if got else None
        c.check("D enabled: the first within %d s (%s)" % (PROMPT, first),
                first is not None and first < PROMPT, first)
        done = ne.until(lambda: ne.sql(
            "SELECT COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id = %d AND "
            "state = 'delivered' AND attempts = 1" % ed)[0][0] == str(N), 30, 0.1)
        c.check("D's deliveries recorded delivered at attempt 1", done)
        c.check("none held after the enable", snd.metric(HELD) == 0,
                snd.metric(HELD))
        # a replay of a disabled endpoint's deliveries holds them as well
        ne.admin("webhook", "disable", str(ed))
        ne.admin("webhook", "replay", "--endpoint", str(ed), "--since",
                 "2000-01-01T00:00:00Z")
        held = ne.sql(
            "SELECT COUNT(*) FROM s2r_webhook_delivery WHERE endpoint_id = %d AND "
            "state = 'pending' AND due_at > NOW(3) + INTERVAL 1 YEAR" % ed)
        c.check("D disabled, its %d deliveries replayed: held out of the due range"
                % N, held == [[str(N)]], held)
    finally:
        rc = snd.stop()
        rx.close()
        # the backlogs would cap other tests' counts (the dashboard's webhooks page)
        ne.sql("DELETE FROM s2r_webhook_delivery WHERE endpoint_id IN (%d, %d)"
               % (ed, eb))
    c.check("SIGTERM: exit 0", rc == 0, rc)
    print("# the sender's log:\n" + snd.log_text()[-2000:])
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
