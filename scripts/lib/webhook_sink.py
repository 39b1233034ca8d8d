#!/usr/bin/env python3
"""scripts/lib/webhook_sink.py PORT SECRET_FILE EVENTS_FILE - a webhook receiver for the
container tests (scripts/test-backup.sh starts it on the host, whose network the container
shares, and ends it by pid).
scripts/lib/webhook_sink.py --events EVENTS_FILE CORRELATION_ID - what it received for one
execution: one line per POST, "WEBHOOK-ID verified|unverified TYPE", in arrival order.

Listens on 127.0.0.1:PORT. A POST is checked as asyncexec-notify(8) tells a receiver to:
the Standard Webhooks signature (HMAC-SHA256 keyed with the base64 after "whsec_" in
SECRET_FILE, over webhook-id "." webhook-timestamp "." body, compared in constant time
with each "v1," value of webhook-signature). Every POST appends one JSON line to
EVENTS_FILE, {"id": webhook-id, "verified": true|false, "event": the body as JSON or
null}, flushed before the answer: 204 when verified, else 401. Any GET is 405, which
tells the caller it is up. Runs until SIGTERM.
"""
import base64
import hashlib
import hmac
import http.server
import json
import signal
import sys


def verified(key, headers, body):
    """The signature of headers and body is one of webhook-signature's v1 values."""
    wid = headers.get("webhook-id", "")
    ts = headers.get("webhook-timestamp", "")
    mac = hmac.new(key, ("%s.%s." % (wid, ts)).encode() + body, hashlib.sha256).digest()
    want = base64.b64encode(mac).decode()
    return any(hmac.compare_digest(s[3:], want)
               for s in headers.get("webhook-signature", "").split() if s.startswith("v1,"))


def events_of(path, cid):
    """The lines of --events."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            ev = r["event"] if isinstance(r["event"], dict) else {}
            if (ev.get("data") or {}).get("correlationId") == cid:
                print(r["id"], "verified" if r["verified"] else "unverified", ev.get("type"))


def main(argv):
    if len(argv) == 4 and argv[1] == "--events":
        events_of(argv[2], argv[3])
        return 0
    if len(argv) != 4:
        sys.stderr.write("usage: webhook_sink.py PORT SECRET_FILE EVENTS_FILE | --events EVENTS_FILE CID\n")
        return 2
    port, events = int(argv[1]), argv[3]
    with open(argv[2], encoding="ascii") as f:
        key = base64.b64decode(f.read().strip().removeprefix("whsec_"))

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            ok = verified(key, self.headers, body)
            try:
                event = json.loads(body)
            except ValueError:
                event = None
            with open(events, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": self.headers.get("webhook-id"), "verified": ok,
                                    "event": event}) + "\n")
            self.send_response(204 if ok else 401)
            self.send_header("Content-Length", "0")
            self.end_headers()

    srv = http.server.HTTPServer(("127.0.0.1", port), H)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
