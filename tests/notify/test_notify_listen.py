#!/usr/bin/env python3
"""notify_listen: one slow client on notify_listen does not stop the sender.

A client connects to the sender's /metrics listener and sends its request one byte
every 0.9 s, never ending the head. The sender answers its listener from its loop;
when it reads a client's request until the head ends, each read waiting up to 1 s,
the whole loop waits for this client for minutes (2047 bytes), and no delivery goes
out meanwhile. With one deadline for the whole request (1 s from the accept):
  - the slow client's connection is closed within a few seconds;
  - an execution that ends while the slow client trickles is delivered promptly;
  - /healthz answers another client meanwhile.
"""
import socket
import sys
import threading
import time

import notify_env as ne

TRICKLE = 0.9    # s between the slow client's bytes (under the 1 s per read)
LIMIT = 30       # s the slow client trickles at most
PROMPT = 5       # s a delivery or an answer may take while it trickles


class Trickler:
    """A client sending "GET /metrics HTTP/1.1\\r\\nX: " and then one byte every
    TRICKLE s; .closed is the time (monotonic) the sender closed it, or None."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sent, self.closed, self.start = 0, None, time.monotonic()
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        data = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 4096
        self.sock.setblocking(False)
        end = self.start + LIMIT
        while not self.halt.is_set() and time.monotonic() < end:
            try:
                if self.sock.recv(1) == b"":
                    break
            except BlockingIOError:
                pass
            except OSError:
                break
            try:
                self.sock.send(data[self.sent:self.sent + 1])
                self.sent += 1
            except OSError:
                break
            self.halt.wait(TRICKLE)
        else:
            self.sock.close()
            return
        self.closed = time.monotonic()
        self.sock.close()

    def stop(self):
        self.halt.set()
        self.thread.join()


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    r = ne.Route("it/nli%s/op" % sfx, "t-nli-%s" % sfx)
    rx = ne.Receiver()
    e = ne.webhook_add(r.tenant, rx.url("/ok?e=listen"))[0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1, webhook_timeout=5,
                    webhook_allow_networks="127.0.0.1/32")
    r.submit("li-%s" % sfx)
    item = r.claim(1)[0]
    snd.start()
    t = None
    try:
        t = Trickler(snd.port)
        ne.until(lambda: t.sent >= 2 or t.closed is not None, 10)
        c.check("the slow client is sending", t.sent >= 1, t.sent)
        at = time.monotonic()
        st, _ = r.callback(item, "complete", {"result": 1})
        c.check("complete: 200", st == 200, st)
        got = rx.wait(lambda q: q["path"] == "/ok", 1, LIMIT + 10)
        took = time.monotonic() - at
        c.check("the delivery arrived within %d s while a client trickled (%.1f s)"
                % (PROMPT, took), len(got) == 1 and took < PROMPT, took)
        at = time.monotonic()
        st, body = snd.get("/healthz")
        c.check("/healthz answered another client (%d, %.1f s)"
                % (st, time.monotonic() - at), st == 200 and
                time.monotonic() - at < PROMPT, st)
        t.thread.join(LIMIT + 5)
        life = (t.closed - t.start) if t.closed is not None else None
        c.check("the slow client was closed within 3 s of connecting (%s s, %d bytes)"
                % ("%.1f" % life if life is not None else "never", t.sent),
                life is not None and life < 3, life)
        rows = ne.deliveries(e)
        c.check("the delivery is recorded delivered", len(rows) == 1 and
                rows[0]["state"] == "delivered", rows)
    finally:
        if t is not None:
            t.stop()
        rc = snd.stop()
        rx.close()
    c.check("SIGTERM: exit 0", rc == 0, rc)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
