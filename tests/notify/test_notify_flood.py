#!/usr/bin/env python3
"""notify_flood: many silent clients on notify_listen do not stall the sender.

SILENT clients connect to the sender's /metrics listener and send nothing; each one
connects again as soon as the sender closes it, for the whole check. When the sender
answers its listener one client at a time from its loop, waiting up to 1 s for each
client's request, every pass of its loop takes a second or two: the transfers are not
driven, no lease is taken, deliveries crawl. With the clients kept in a table and read
as their bytes arrive, a sender running one transfer at a time (webhook_concurrency =
1, so that every delivery needs passes of its own):
  - delivers EXECUTIONS executions completed during the flood within PROMPT s;
  - answers /healthz within PROMPT s;
  - closes every silent connection within LIFE s of its connecting (1 s deadline).
Then the same with MORE silent clients than the sender keeps connections at once (a
newer one closes the oldest once that had 100 ms): /healthz and the deliveries still
go through.
"""
import socket
import sys
import threading
import time

import notify_env as ne

SILENT = 16      # clients sending nothing, each reconnecting when closed
MORE = 48        # then more than the sender keeps at once (LISTEN_CLIENTS_MAX 32)
EXECUTIONS = 10  # completed at once, and delivered, while they connect (each time)
PROMPT = 4       # s the deliveries, or /healthz, may take during the flood
LIFE = 3         # s a silent connection may stay open (the deadline is 1 s)


class Flood:
    """clients threads, each connecting, waiting for the sender to close it (or
    reset it), and connecting again until stop(). lives() lists (connected at,
    seconds open) of every connection the sender closed."""

    def __init__(self, port, clients):
        self.port, self.lock, self.halt = port, threading.Lock(), threading.Event()
        self.closed, self.connects, self.errors = [], 0, 0
        self.threads = [threading.Thread(target=self._run, daemon=True)
                        for _ in range(clients)]
        for t in self.threads:
            t.start()

    def _one(self):
        """One connection: open until the sender closes it or stop()."""
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            with self.lock:
                self.errors += 1
            self.halt.wait(0.05)
            return
        at = time.monotonic()
        with self.lock:
            self.connects += 1
        s.settimeout(0.2)
        try:
            while not self.halt.is_set():
                try:
                    if s.recv(4096) == b"":
                        break
                except socket.timeout:
                    continue
            else:
                return
        except OSError:
            pass
        finally:
            s.close()
        with self.lock:
            self.closed.append((at, time.monotonic() - at))

    def _run(self):
        while not self.halt.is_set():
            self._one()

    def lives(self, since=0.0):
        with self.lock:
            return [life for at, life in self.closed if at >= since]

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(10)


def flood(c, snd, r, rx, items, clients):
    """Completes items while clients silent clients connect to snd, checks that
    their deliveries (the first ones to rx) and /healthz are prompt and that every
    silent connection was closed within LIFE s."""
    f = Flood(snd.port, clients)
    try:
        # the flood is on once the sender has closed as many connections as there
        # are clients (each at its deadline, or for a newer one)
        ne.until(lambda: len(f.lives()) >= clients, 60)
        c.check("%d silent clients are connecting (%d closed)"
                % (clients, len(f.lives())), len(f.lives()) >= clients,
                len(f.lives()))
        start = time.monotonic()
        want = len(rx.matching(lambda q: q["path"] == "/ok")) + len(items)
        for item in items:
            st, _ = r.callback(item, "complete", {"result": 1})
            c.check("complete: 200", st == 200, st)
        got = rx.wait(lambda q: q["path"] == "/ok", want, 120)
        took = time.monotonic() - start
        c.check("%d deliveries arrived within %d s while %d clients flood (%.2f s)"
                % (len(items), PROMPT, clients, took), len(got) == want and
                took < PROMPT, (len(got), took))
        at = time.monotonic()
        st, body = snd.get("/healthz")
        hz = time.monotonic() - at
        c.check("/healthz answered within %d s while %d clients flood (%d, %.2f s)"
                % (PROMPT, clients, st, hz), st == 200 and body == "ok\n" and
                hz < PROMPT, (st, body))
        # the connections opened since the check began, once as many closed
        ne.until(lambda: len(f.lives(start)) >= clients, 60)
        lives = f.lives(start)
        worst = max(lives) if lives else None
        c.check("the %d silent connections since were closed within %d s "
                "(worst %s s)" % (len(lives), LIFE, "%.2f" % worst
                                  if worst is not None else "-"),
                len(lives) >= clients and worst < LIFE, (len(lives), worst))
    finally:
        f.stop()
    print("# %d connections, %d connect errors" % (f.connects, f.errors))


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), ne.os.getpid())
    r = ne.Route("it/nfl%s/op" % sfx, "t-nfl-%s" % sfx)
    rx = ne.Receiver()
    e = ne.webhook_add(r.tenant, rx.url("/ok?e=flood"))[0]
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1, webhook_timeout=15,
                    webhook_concurrency=1, webhook_allow_networks="127.0.0.1/32")
    for i in range(2 * EXECUTIONS):
        r.submit("fl-%s-%d" % (sfx, i))
    items = r.claim(2 * EXECUTIONS)
    c.check("%d executions claimed" % (2 * EXECUTIONS),
            len(items) == 2 * EXECUTIONS, len(items))
    snd.start()
    rc = None
    try:
        flood(c, snd, r, rx, items[:EXECUTIONS], SILENT)
        flood(c, snd, r, rx, items[EXECUTIONS:], MORE)
        rows = ne.deliveries(e)
        c.check("the deliveries are recorded delivered",
                len(rows) == 2 * EXECUTIONS and
                all(x["state"] == "delivered" for x in rows), rows)
    finally:
        rc = snd.stop()
        rx.close()
    return c.done_sender(rc, snd)


if __name__ == "__main__":
    sys.exit(main())
