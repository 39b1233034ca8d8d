#!/usr/bin/env python3
"""webhook_receiver: tests/webhook/receiver.mjs answers as its comment says, so that
the sender's integration tests can rely on it for every fault case.

usage: test_receiver.py NPM_DIR

/ok 204; /status/500 and /status/410 that status; /status/429 and /status/503 with
?retry_after=7 also Retry-After: 7 (and /status/500?retry_after=7 none); /redirect
302 to /ok; /slow?ms=400 204 after at least 400 ms; /hang no answer within 1 s;
/reset the connection closed without an answer; /big 200 with 1 MiB; /flaky?fail=2
500, 500, 204 for one webhook-id and 500 again for another; an unknown path 404.
Each request is logged once with verified true (all are signed), and SIGTERM ends
the receiver with exit 0 while the /hang connection is still open.
"""
import socket
import sys
import tempfile
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
import webhook_env as W  # noqa: E402


def signed(secret, body):
    """Headers of body signed by the package's Webhook.sign, and the id."""
    mid, ts = W.msg_id(), int(time.time())
    return W.signed_headers(mid, ts, W.npm_sign(DEST, secret, mid, ts, body)), mid


def answers(t, rcv, secret):
    body = W.event("rcv-1")
    plain = [("/ok", 204), ("/status/500", 500), ("/status/410", 410),
             ("/status/429?retry_after=7", 429), ("/status/503?retry_after=7", 503),
             ("/status/500?retry_after=7", 500), ("/nothing", 404)]
    for path, want in plain:
        h, _ = signed(secret, body)
        st, hdr, data = W.post(rcv.port, path, body, h)
        t.check("%s: %d" % (path, want), st == want, data if st is None else st)
        if st is None:
            continue
        ra = "7" if "retry_after" in path and want in (429, 503) else None
        t.check("%s: Retry-After %s" % (path, ra), hdr.get("retry-after") == ra,
                hdr.get("retry-after"))
    h, _ = signed(secret, body)
    st, hdr, _ = W.post(rcv.port, "/redirect", body, h)
    t.check("/redirect: 302 to /ok", st == 302 and hdr.get("location") == "/ok",
            (st, hdr))
    h, _ = signed(secret, body)
    t0 = time.monotonic()
    st, _, _ = W.post(rcv.port, "/slow?ms=400", body, h)
    dt = time.monotonic() - t0
    t.check("/slow?ms=400: 204 after >= 0.4 s", st == 204 and 0.4 <= dt < 5, (st, dt))
    h, _ = signed(secret, body)
    st, _, err = W.post(rcv.port, "/reset", body, h)
    t.check("/reset: no answer, the connection closed", st is None and
            not isinstance(err, socket.timeout), err)
    h, _ = signed(secret, body)
    st, _, data = W.post(rcv.port, "/big", body, h)
    t.check("/big: 200 with 1 MiB", st == 200 and len(data) == 1 << 20,
            (st, len(data) if st else data))
    for mid_label in ("first id", "second id"):
        h, mid = signed(secret, body)
        got = [W.post(rcv.port, "/flaky?fail=2", body, h)[0] for _ in range(3)]
        t.check("/flaky?fail=2, %s: 500, 500, 204" % mid_label, got == [500, 500, 204],
                got)
    return len(plain) + 4 + 6


def hang(t, rcv, secret):
    """/hang: nothing within 1 s; returns the connection, still open."""
    body = W.event("rcv-hang")
    h, _ = signed(secret, body)
    st, _, err = W.post(rcv.port, "/hang", body, h, timeout=1)
    t.check("/hang: no answer within 1 s", st is None and isinstance(err, socket.timeout),
            err)
    # a second one kept open across the SIGTERM
    s = socket.create_connection(("127.0.0.1", rcv.port), timeout=5)
    h, _ = signed(secret, body)
    s.sendall(("POST /hang HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % len(body) +
               "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() + body)
    return s


def run(t):
    global DEST
    if len(sys.argv) != 2:
        raise W.Fatal("usage: test_receiver.py NPM_DIR")
    DEST = W.install(sys.argv[1])
    secret = W.secret_new()
    with tempfile.TemporaryDirectory(prefix="webhook-receiver.") as tmp:
        with W.Receiver(DEST, secret, tmp) as rcv:
            n = answers(t, rcv, secret) + 2
            s = hang(t, rcv, secret)
            W.wait_until(lambda: len(rcv.records()) >= n, 5, "the /hang requests logged")
            recs = rcv.records()
            t.check("every request logged once, verified", len(recs) == n and
                    all(r["verified"] is True and r["error"] is None for r in recs),
                    [(r["path"], r["error"]) for r in recs if not r["verified"]])
            t0 = time.monotonic()
            rc = rcv.stop()
            t.check("SIGTERM with /hang open: exit 0 within 5 s", rc == 0, rc)
            s.settimeout(2)
            try:
                closed = s.recv(1) == b""
            except OSError:
                closed = True
            t.check("SIGTERM closed the /hang connection", closed)
            s.close()
            print("figure: receiver stop %.3f s" % (time.monotonic() - t0))


DEST = None
if __name__ == "__main__":
    W.main("webhook_receiver", run)
