#!/usr/bin/env python3
"""webhook_verify_node: the project's own signatures (src/lib/webhook.c, through
webhook_sign_tool) verify with code nobody here wrote, the npm package
standardwebhooks 1.1.1 (its Webhook class, in receiver.mjs).

usage: test_verify_node.py NPM_DIR SIGN_TOOL

  1. webhook_sign_tool and the package's Webhook.sign give the same value, for
     several secrets (24, 32 and 64 key bytes) and bodies (empty, UTF-8, 64 KiB);
  2. a notification signed by the tool, posted to the receiver, verifies;
  3. one byte changed in the id, the timestamp or the body, another secret, or
     a timestamp 6 minutes old: it does not;
  4. two space-separated signatures, the first under another secret and only
     the second valid, verify; two invalid ones do not;
  5. the receiver logged each request once, with its headers and body as sent.
"""
import sys
import tempfile
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
import webhook_env as W  # noqa: E402


def same_as_npm(t, dest, tool):
    """1: the tool's value is the package's."""
    bodies = [b"", W.event(), "caf\u00e9 \u2603 \U0001f600".encode(), b"x" * 65536]
    for n in (24, 32, 64):
        s = W.secret_new(n)
        for body in bodies:
            mid, ts = W.msg_id(), int(time.time())
            c = W.c_sign(tool, s, mid, ts, body)
            j = W.npm_sign(dest, s, mid, ts, body)
            t.check("the tool and the package agree (%d key bytes, %d body bytes)"
                    % (n, len(body)), c == j and c.startswith("v1,"), "%s != %s" % (c, j))


def flip(s, i=-2):
    """s with its character i changed."""
    i %= len(s)
    return s[:i] + ("b" if s[i] != "b" else "c") + s[i + 1:]


def deliveries(t, rcv, tool, secret):
    """2..4: what the receiver made of each; each request's id is its own."""
    other = W.secret_new()
    body = W.event("verify-1")
    cases = []   # (description, id sent, ts sent, body sent, signature, verified)

    def add(what, mid, ts, sent_body, sig, want):
        cases.append((what, mid, ts, sent_body, sig, want))

    now = int(time.time())
    mid = W.msg_id()
    good = W.c_sign(tool, secret, mid, now, body)
    add("signed by the tool", mid, now, body, good, True)
    m2 = W.msg_id()
    add("one byte of the id changed", flip(m2), now, body,
        W.c_sign(tool, secret, m2, now, body), False)
    m3 = W.msg_id()
    add("the timestamp one second off", m3, now + 1, body,
        W.c_sign(tool, secret, m3, now, body), False)
    m4 = W.msg_id()
    bad_body = body.replace(b"verify-1", b"verify-2")
    add("one byte of the body changed", m4, now, bad_body,
        W.c_sign(tool, secret, m4, now, body), False)
    m8 = W.msg_id()
    add("signed 6 minutes ago (the tolerance is 5)", m8, now - 360, body,
        W.c_sign(tool, secret, m8, now - 360, body), False)
    m5 = W.msg_id()
    add("signed under another secret", m5, now, body,
        W.c_sign(tool, other, m5, now, body), False)
    m6 = W.msg_id()
    add("two signatures, only the second valid", m6, now, body,
        W.c_sign(tool, other, m6, now, body) + " " + W.c_sign(tool, secret, m6, now, body),
        True)
    m7 = W.msg_id()
    add("two signatures, neither valid", m7, now, body,
        W.c_sign(tool, other, m7, now, body) + " " +
        flip(W.c_sign(tool, secret, m7, now, body), -3), False)

    for what, mid, ts, sent, sig, want in cases:
        st, _, err = W.post(rcv.port, "/ok", sent, W.signed_headers(mid, ts, sig))
        t.check("%s: answered 204" % what, st == 204, err if st is None else st)
    recs = {r["webhookId"]: r for r in rcv.records()}
    t.check("one log line per request", len(rcv.records()) == len(cases),
            len(rcv.records()))
    for what, mid, ts, sent, sig, want in cases:
        r = recs.get(mid)
        if not t.check("%s: logged" % what, r is not None):
            continue
        t.check("%s: verified is %s" % (what, want), r["verified"] is want,
                "%s (%s)" % (r["verified"], r["error"]))
        t.check("%s: error only when not verified" % what,
                (r["error"] is None) == want, r["error"])
        t.check("%s: logged as sent" % what,
                r["body"] == sent.decode() and r["signature"] == sig and
                r["timestamp"] == str(ts) and r["path"] == "/ok", r)


def run(t):
    if len(sys.argv) != 3:
        raise W.Fatal("usage: test_verify_node.py NPM_DIR SIGN_TOOL")
    dest, tool = W.install(sys.argv[1]), sys.argv[2]
    same_as_npm(t, dest, tool)
    secret = W.secret_new()
    with tempfile.TemporaryDirectory(prefix="webhook-verify.") as tmp:
        with W.Receiver(dest, secret, tmp) as rcv:
            deliveries(t, rcv, tool, secret)
            t.check("SIGTERM: the receiver exits 0", rcv.stop() == 0)


if __name__ == "__main__":
    W.main("webhook_verify_node", run)
