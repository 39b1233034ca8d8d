#!/usr/bin/env python3
"""notify_faults: what asyncexec-notify does with receivers that misbehave.

One tenant, one completed execution, one endpoint per receiver behaviour, so the one
event goes to all of them at once (webhook_retry_schedule = 1,1: three attempts,
webhook_timeout = 2 s). Each delivery must end as the contract says:
  500 -> three attempts with one webhook-id, then dead with its last status;
  410 -> one attempt, dead, and the endpoint disabled;
  429 with Retry-After: 2 -> the retry waits the 2 s (not the schedule's 1 s);
  a redirect -> not followed (the target never sees it), retried, dead;
  no answer -> timed out after webhook_timeout, dead;
  a reset connection -> retried, dead;
  a 1 MiB 200 answer -> delivered (64 KiB of it read);
  a 200 whose headers pass 64 KiB -> failed (the headers count toward the 64 KiB),
  retried, dead with a reason that says so;
  500 once, then 204 -> delivered at the second attempt, same webhook-id;
  an address outside the allow list (127.0.0.2) -> refused without a connection, dead at once;
  a name with a refused address and an allowed one that refuses the connection
  (localhost: ::1 and 127.0.0.1, nothing listening) -> a connection failure, retried, dead;
  https with a self-signed certificate -> the certificate is verified and refused, dead;
  a name that does not resolve -> retried, dead.
Then SIGHUP with the allow list removed: a URL whose name resolves to loopback
(localhost) is refused, dead with a clear error, and the receiver never sees it. The
sender's log names no URL and no host name (libcurl's error texts name the host).
"""
import json
import signal
import sys
import time

import notify_env as ne

FINAL = ("delivered", "dead")


def wait_final(endpoints, seconds):
    """{endpoint id: [delivery rows]} once every endpoint's deliveries are final."""
    got = {}

    def final():
        got.update((e, ne.deliveries(e)) for e in endpoints)
        return all(r and all(d["state"] in FINAL for d in r) for r in got.values())
    ne.until(final, seconds, 0.2)
    return got


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    r = ne.Route("it/nf%s/op" % sfx, "t-nf-%s" % sfx)
    rx = ne.Receiver()
    paths = {"500": "/status/500", "410": "/status/410",
             "429": "/status/429?retry_after=2", "redirect": "/redirect",
             "hang": "/hang?ms=6000", "reset": "/reset", "big": "/big",
             "bighead": "/bighead",
             "flaky": "/flaky?fail=1"}
    ep = {k: ne.webhook_add(r.tenant, rx.url(p))[0] for k, p in paths.items()}
    ep["refused"] = ne.webhook_add(r.tenant, rx.url("/ok/refused", host="127.0.0.2"))[0]
    # curl resolves localhost to 127.0.0.1 and ::1 itself; ::1 is outside the list
    ep["mixed"] = ne.webhook_add(r.tenant, "http://localhost:%d/ok/mixed" %
                                 ne.free_port())[0]
    nohost = "nohost-%s.invalid" % sfx
    ep["nohost"] = ne.webhook_add(r.tenant, "http://%s/ok/nohost" % nohost)[0]
    tls = ne.Receiver(tls=ne.self_signed(tmp))
    ep["selfsigned"] = ne.webhook_add(r.tenant, tls.url("/ok/tls"))[0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                    webhook_allow_networks="127.0.0.1/32", webhook_retry_schedule="1,1",
                    webhook_timeout=2, webhook_connect_timeout=1, webhook_concurrency=4)
    snd.start()
    try:
        r.submit("x-" + sfx)
        it = r.claim(1)[0]
        r.callback(it, "complete", {"result": {"ok": True}})
        rows = wait_final(list(ep.values()), 90)
        by = {k: rows[e] for k, e in ep.items()}
        c.check("every endpoint has one delivery, final",
                all(len(v) == 1 and v[0]["state"] in FINAL for v in by.values()),
                {k: [d["state"] for d in v] for k, v in by.items()})
        one = {k: v[0] for k, v in by.items() if v}
        seen = lambda p: rx.matching(lambda q: q["path"] == p)   # noqa: E731
        d = one.get("500", {})
        got = seen("/status/500")
        c.check("500: dead after 3 attempts, last status 500",
                d.get("state") == "dead" and d.get("attempts") == 3 and
                d.get("last_status") == 500, d)
        c.check("500: the receiver saw 3 attempts with one webhook-id",
                len(got) == 3 and len({q["headers"]["webhook-id"] for q in got}) == 1 and
                got[0]["headers"]["webhook-id"] == d.get("webhook_id"),
                [q["headers"].get("webhook-id") for q in got])
        c.check("500: every attempt signed afresh (its own timestamp in the signature)",
                all(q["headers"].get("webhook-signature", "").startswith("v1,")
                    for q in got))
        d = one.get("410", {})
        c.check("410: dead after 1 attempt", d.get("state") == "dead" and
                d.get("attempts") == 1 and len(seen("/status/410")) == 1, d)
        lst = {e["id"]: e for e in json.loads(ne.admin("webhook", "list", "--tenant",
                                                       r.tenant, "--json").stdout)}
        c.check("410: the endpoint is disabled", lst.get(ep["410"], {}).get("enabled")
                is False, lst.get(ep["410"]))
        got = seen("/status/429")
        gaps = [b["at"] - a["at"] for a, b in zip(got, got[1:])]
        c.check("429 Retry-After: 2: three attempts, each retry >= 1.9 s later",
                len(got) == 3 and all(g >= 1.9 for g in gaps), gaps)
        d = one.get("redirect", {})
        c.check("redirect: not followed, dead after 3",
                d.get("state") == "dead" and d.get("attempts") == 3 and
                d.get("last_status") == 302 and not seen("/ok"), d)
        d = one.get("hang", {})
        c.check("no answer: timed out, dead after 3",
                d.get("state") == "dead" and d.get("attempts") == 3 and
                "timed out" in (d.get("last_error") or "").lower(), d)
        d = one.get("reset", {})
        c.check("reset: dead after 3 with an error", d.get("state") == "dead" and
                d.get("attempts") == 3 and d.get("last_error"), d)
        d = one.get("big", {})
        c.check("1 MiB answer: delivered at once", d.get("state") == "delivered" and
                d.get("attempts") == 1 and d.get("last_status") == 200, d)
        d = one.get("bighead", {})
        c.check("200 with 100 KiB of headers: failed, dead after 3, the headers named",
                d.get("state") == "dead" and d.get("attempts") == 3 and
                "header" in (d.get("last_error") or "").lower() and
                len(seen("/bighead")) == 3, d)
        d = one.get("flaky", {})
        got = seen("/flaky")
        c.check("500 then 204: delivered at attempt 2, same webhook-id",
                d.get("state") == "delivered" and d.get("attempts") == 2 and
                len(got) == 2 and got[0]["headers"]["webhook-id"] ==
                got[1]["headers"]["webhook-id"], d)
        d = one.get("refused", {})
        c.check("127.0.0.2 outside the allow list: dead at once, refused",
                d.get("state") == "dead" and d.get("attempts") == 1 and
                "refused to connect to 127.0.0.2 (loopback" in (d.get("last_error") or ""),
                d)
        c.check("nothing reached the receiver for it", not seen("/ok/refused"))
        d = one.get("mixed", {})
        c.check("::1 refused, 127.0.0.1 not listening: a connection failure, retried, "
                "dead after 3", d.get("state") == "dead" and d.get("attempts") == 3 and
                "refused to connect" not in (d.get("last_error") or "") and
                "connect" in (d.get("last_error") or "").lower(), d)
        d = one.get("nohost", {})
        c.check("a name that does not resolve: dead after 3, an error without the name",
                d.get("state") == "dead" and d.get("attempts") == 3 and
                d.get("last_error") and nohost not in d.get("last_error"), d)
        d = one.get("selfsigned", {})
        c.check("https with a self-signed certificate: not delivered (verified), dead "
                "after 3", d.get("state") == "dead" and d.get("attempts") == 3 and
                "certificate" in (d.get("last_error") or "").lower() and
                not tls.matching(lambda q: True), d)
        reload_phase(c, snd, rx, sfx)
    finally:
        rc = snd.stop()
        rx.close()
        tls.close()
    c.check("SIGTERM: exit 0", rc == 0, rc)
    log = snd.log_text()
    c.check("the log names no URL", "127.0.0.1:%d" % rx.port not in log and
            "/status/" not in log, log[-500:])
    c.check("the log names no host name", nohost not in log and "localhost" not in log,
            [x for x in log.splitlines() if nohost in x or "localhost" in x][:3])
    return c.done()


def reload_phase(c, snd, rx, sfx):
    """SIGHUP without the allow list: a name resolving to loopback is refused."""
    conf = open(snd.conf, encoding="utf-8").read()
    with open(snd.conf, "w", encoding="utf-8") as f:
        f.write(conf.replace("webhook_allow_networks = 127.0.0.1/32\n", ""))
    snd.send_signal(signal.SIGHUP)
    ne.until(lambda: "configuration reloaded" in snd.log_text(), 10)
    c.check("SIGHUP: reloaded", "configuration reloaded" in snd.log_text())
    r2 = ne.Route("it/nf%s/two" % sfx, "t-nf2-%s" % sfx)
    e = ne.webhook_add(r2.tenant, "http://localhost:%d/ok/rebind" % rx.port)[0]
    r2.submit("y-" + sfx)
    r2.callback(r2.claim(1)[0], "complete", {"result": 1})
    rows = wait_final([e], 30)[e]
    d = rows[0] if rows else {}
    c.check("localhost without the allow list: dead at once, refused as loopback",
            d.get("state") == "dead" and d.get("attempts") == 1 and
            "(loopback" in (d.get("last_error") or "") and
            "allow it with webhook_allow_networks" in (d.get("last_error") or ""), d)
    c.check("the receiver never saw it", not rx.matching(lambda q: q["path"] ==
                                                         "/ok/rebind"))


if __name__ == "__main__":
    sys.exit(main())
