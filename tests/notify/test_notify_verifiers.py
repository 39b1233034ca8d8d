#!/usr/bin/env python3
"""notify_verifiers: what asyncexec-notify really sends verifies with code nobody here
wrote, also during a secret rotation.

usage: test_notify_verifiers.py NPM_DIR EXAMPLE

Endpoint N goes to tests/webhook/receiver.mjs, which verifies with the pinned npm
package `standardwebhooks`; its secret is rotated before anything ends, and the receiver
knows only the NEW secret: every delivery carries two signatures (new and old), the
package accepts each request, and the old secret verifies them too (Python's hmac).
Endpoint P goes to scripts/examples/webhook-receiver.php under `php -S`: it logs each
event once. Four executions end (3 completed, 1 failed): four verified deliveries at each.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "webhook"))
import notify_env as ne  # noqa: E402
import test_example_php as php  # noqa: E402
import webhook_env as W  # noqa: E402


def main(npm_dir, example):
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), os.getpid())
    W.install(npm_dir)
    r = ne.Route("it/nv%s/op" % sfx, "t-nv-%s" % sfx)
    # the receivers need the secrets at start, the endpoints print them when added:
    # added first, pointed at the receivers' ports once they listen
    e_node, old = ne.webhook_add(r.tenant, "http://127.0.0.1:1/")
    new = json.loads(ne.admin("webhook", "rotate-secret", str(e_node), "--json")
                     .stdout)["secret"]
    e_php, s_php = ne.webhook_add(r.tenant, "http://127.0.0.1:1/")
    with W.Receiver(npm_dir, new, tmp) as rcv, php.Php(example, tmp, "php", s_php) as ph:
        for e, port, path in ((e_node, rcv.port, "/ok"), (e_php, ph.port, "/")):
            ne.sql("UPDATE s2r_webhook_endpoint SET url = 'http://127.0.0.1:%d%s' "
                   "WHERE id = %d" % (port, path, e))
        snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                        webhook_allow_networks="127.0.0.1/32")
        snd.start()
        try:
            for i in range(4):
                r.submit("v%d-%s" % (i, sfx))
            for k, it in enumerate(r.claim(10)):
                if k == 3:
                    r.callback(it, "fail", {"error": {"message": "no"}})
                else:
                    r.callback(it, "complete", {"result": k})
            W.wait_until(lambda: len(rcv.records()) >= 4 and len(ph.events()) >= 4,
                         30, "4 deliveries at each receiver")
            time.sleep(0.5)
        finally:
            rc = snd.stop()
        recs, evs = rcv.records(), ph.events()
    c.check("the npm package verified all 4 (new secret)",
            len(recs) == 4 and all(x["verified"] is True for x in recs),
            [(x.get("verified"), x.get("error")) for x in recs])
    c.check("each carried two signatures (the rotation's grace)",
            all(len(x["signature"].split(" ")) == 2 for x in recs),
            [x.get("signature") for x in recs])
    c.check("the old secret verifies them too", all(
        ne.verify(old, {"webhook-id": x["webhookId"], "webhook-timestamp":
                        str(x["timestamp"]), "webhook-signature": x["signature"]},
                  x["body"].encode()) == "" for x in recs))
    statuses = sorted(json.loads(x["body"])["data"]["status"] for x in recs)
    c.check("3 completed, 1 failed", statuses == ["completed"] * 3 + ["failed"], statuses)
    c.check("the PHP example logged the 4 events once each",
            len(evs) == 4 and len({json.dumps(e, sort_keys=True) for e in evs}) == 4, evs)
    c.check("SIGTERM: exit 0", rc == 0, rc)
    return c.done()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
