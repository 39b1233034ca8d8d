#!/usr/bin/env python3
"""notify_delivery: asyncexec-notify delivers one signed event per terminal execution and
matching endpoint, and nothing to others.

Two tenants on two routes of the real stack. Tenant A has an endpoint for everything, one
for failures only, and one for the other route; tenant B has one for everything. A's
executions end every way a consumer or backend ends them (complete, fail, cancel before
a claim, cancelled after a cancel request, operator fail): the everything-endpoint gets
exactly one delivery per execution with the right type and data, the failures-only one
only the failures, the other-route one and tenant B's nothing. Every signature verifies
(Python's hmac, not the C code), every webhook-id is distinct, and the deliveries show
as delivered in `asyncexec-admin webhook deliveries`; the sender's /metrics counts them. asyncexec-expire then deletes the deliveries that
ended more than purge_grace_days ago, and only those.
"""
import json
import sys
import time

import notify_env as ne


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    a = ne.Route("it/nd%s/op" % sfx, "t-nd-a-%s" % sfx)
    other = "it/nd%s/other" % sfx
    ne.admin("route", "add", other)
    b = ne.Route("it/nd%s/bop" % sfx, "t-nd-b-%s" % sfx)
    rx = ne.Receiver()
    e_all, s_all = ne.webhook_add(a.tenant, rx.url("/ok/all"))
    e_fail, s_fail = ne.webhook_add(a.tenant, rx.url("/ok/fail"), events="failed")
    e_other, _ = ne.webhook_add(a.tenant, rx.url("/ok/other"), route=other)
    e_b, _ = ne.webhook_add(b.tenant, rx.url("/ok/b"))
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                    webhook_allow_networks="127.0.0.1/32")
    check_config(c, tmp, snd)
    snd.start()
    want = {}
    try:
        for i in range(6):
            want["done-%d-%s" % (i, sfx)] = "completed"
            a.submit("done-%d-%s" % (i, sfx))
        for i in range(3):
            want["fail-%d-%s" % (i, sfx)] = "failed"
            a.submit("fail-%d-%s" % (i, sfx))
        want["cx-" + sfx] = "cancelled"
        doc = a.submit("cx-" + sfx)
        a.cancel("cx-" + sfx, doc["pollToken"])      # unclaimed: cancelled at once
        want["cxd-" + sfx] = "cancelled"
        doc2 = a.submit("cxd-" + sfx)
        want["op-" + sfx] = "failed"
        doc3 = a.submit("op-" + sfx)
        items = {it["correlationId"]: it for it in a.claim(100)}
        c.check("claimed what was submitted (%d)" % (len(want) - 1),
                len(items) == len(want) - 1, len(items))
        for cid, it in items.items():
            if cid.startswith("done-"):
                st, _ = a.callback(it, "complete", {"result": {"cid": cid}})
            elif cid.startswith("fail-"):
                st, _ = a.callback(it, "fail", {"error": {"message": "no"}})
            elif cid.startswith("cxd-"):
                a.cancel(cid, doc2["pollToken"])     # claimed: a cancel request
                st, _ = a.callback(it, "cancelled", {})
            else:
                continue
            c.check("callback of %s: 200" % cid, st == 200, st)
        r = ne.admin("execution", "fail", "--tenant", a.tenant, a.route, "op-" + sfx,
                     "--message", "operator", check=False)
        c.check("operator fail of op-%s" % sfx, r.returncode == 0, r.stderr.strip())
        del doc3
        # a B execution too: B's endpoint gets it, A's do not
        b.submit("b-" + sfx)
        bi = b.claim(1)[0]
        b.callback(bi, "complete", {"result": 1})
        got = rx.wait(lambda q: q["path"] == "/ok/all", len(want), 30)
        check_all(c, got, want, s_all)
        fails = rx.wait(lambda q: q["path"] == "/ok/fail", 4, 15)
        c.check("the failures-only endpoint got the 4 failures",
                sorted(json.loads(q["body"])["data"]["correlationId"] for q in fails) ==
                sorted(k for k, v in want.items() if v == "failed"),
                [json.loads(q["body"])["data"]["status"] for q in fails])
        c.check("its signatures verify with its own secret",
                all(ne.verify(s_fail, q["headers"], q["body"]) == "" for q in fails))
        bs = rx.wait(lambda q: q["path"] == "/ok/b", 1, 15)
        c.check("tenant B's endpoint got B's one execution",
                [json.loads(q["body"])["data"]["correlationId"] for q in bs] == ["b-" + sfx],
                [q["body"] for q in bs])
        # the marks are all cleared once the last one arrived: nothing more may come
        time.sleep(1.0)
        c.check("the other route's endpoint got nothing",
                rx.matching(lambda q: q["path"] == "/ok/other") == [])
        c.check("no endpoint got a repeat", len(rx.matching(lambda q: True)) ==
                len(want) + 4 + 1, len(rx.matching(lambda q: True)))
        rows = ne.deliveries(e_all)
        c.check("admin lists %d deliveries of the endpoint, all delivered" % len(want),
                len(rows) == len(want) and all(r.get("state", r.get("status")) ==
                                               "delivered" for r in rows),
                [r.get("state", r.get("status")) for r in rows])
        time.sleep(0)
        text = snd.get("/metrics")[1]
        c.check("/metrics counts the delivered attempts",
                'asyncexec_webhook_attempts_total{result="delivered"} %d' %
                (len(want) + 5) in text, text[:600])
        c.check("/healthz 200", snd.get("/healthz")[0] == 200)
        purge(c, e_all, e_fail)
        del e_other, e_b
    finally:
        rc = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc == 0, rc)
    log = snd.log_text()
    c.check("the log names no secret", s_all not in log and s_all[6:] not in log)
    return c.done()


def check_config(c, tmp, snd):
    """--check-config: ok with the key file; an error naming it without one."""
    p = ne.subprocess.run([ne.NOTIFY, "--config", snd.conf, "--check-config"],
                          capture_output=True, text=True, timeout=60)
    c.check("--check-config: exit 0, the key file and the privileges ok",
            p.returncode == 0 and ne.re.search(r"(?m)^ok.*webhook_key_file", p.stdout) and
            ne.re.search(r"(?m)^ok.*grants", p.stdout), p.stdout + p.stderr)
    bad = ne.Sender(tmp, "nokey", webhook_key_file=ne.os.path.join(tmp, "missing.key"))
    p = ne.subprocess.run([ne.NOTIFY, "--config", bad.conf, "--check-config"],
                          capture_output=True, text=True, timeout=60)
    c.check("--check-config without the key file: exit 1, an error with what to do",
            p.returncode == 1 and ne.re.search(r"(?m)^error.*webhook_key_file.*head -c 32",
                                               p.stdout), p.stdout + p.stderr)
    p = ne.subprocess.run([ne.NOTIFY, "--config", bad.conf], capture_output=True,
                          text=True, timeout=60)
    c.check("started without the key file: exit 2, the reason logged",
            p.returncode == 2 and "webhook_key_file" in p.stderr + p.stdout,
            (p.returncode, p.stderr[-300:]))


def purge(c, e_old, e_recent):
    """asyncexec-expire deletes deliveries that ended more than purge_grace_days ago."""
    grace = int(ne.config_values().get("purge_grace_days", "7"))
    ne.sql("UPDATE s2r_webhook_delivery SET due_at = NOW(3) - INTERVAL %d DAY - "
           "INTERVAL 1 MINUTE WHERE endpoint_id = %d" % (grace, e_old))
    ne.sql("UPDATE s2r_webhook_delivery SET due_at = NOW(3) - INTERVAL %d DAY + "
           "INTERVAL 1 MINUTE WHERE endpoint_id = %d" % (grace, e_recent))
    p = ne.subprocess.run([ne.os.environ["ASYNCEXEC_EXPIRE"], "--config", ne.CONFIG],
                          capture_output=True, text=True, timeout=120)
    m = ne.re.search(r"purged_deliveries=(\d+)", p.stdout)
    c.check("asyncexec-expire: exit 0, purged_deliveries counted",
            p.returncode == 0 and m and int(m.group(1)) >= 1, p.stdout + p.stderr)
    left = ne.sql("SELECT endpoint_id, COUNT(*) FROM s2r_webhook_delivery WHERE "
                  "endpoint_id IN (%d, %d) GROUP BY endpoint_id" % (e_old, e_recent))
    c.check("ended past the grace: deleted; within it: kept",
            left == [[str(e_recent), "4"]], left)


def check_all(c, got, want, secret):
    c.check("the everything-endpoint got %d deliveries" % len(want), len(got) == len(want),
            len(got))
    bad = [q for q in got if ne.verify(secret, q["headers"], q["body"]) != ""]
    c.check("every signature verifies", not bad,
            [ne.verify(secret, q["headers"], q["body"]) for q in bad][:3])
    ids = [q["headers"].get("webhook-id") for q in got]
    c.check("every webhook-id distinct", len(set(ids)) == len(ids), ids)
    c.check("Content-Type: application/json",
            all(q["headers"].get("content-type") == "application/json" for q in got))
    seen = {}
    for q in got:
        d = json.loads(q["body"])
        seen[d["data"]["correlationId"]] = (d["type"], d["data"]["status"], d)
    c.check("one per execution, each with its terminal status",
            {k: v[1] for k, v in seen.items()} == want, {k: v[1] for k, v in seen.items()})
    c.check("type is execution.<status>",
            all(v[0] == "execution." + v[1] for v in seen.values()))
    d = next(iter(seen.values()))[2]
    c.check("data has environment, service, operation, completedAt, statusUrl",
            all(k in d["data"] for k in ("environment", "service", "operation",
                                         "completedAt", "statusUrl")) and
            d["data"]["statusUrl"].endswith("/" + d["data"]["correlationId"]), d)


if __name__ == "__main__":
    sys.exit(main())
