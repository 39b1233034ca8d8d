#!/usr/bin/env python3
"""webhook_example_php: scripts/examples/webhook-receiver.php under `php -S`, fed
notifications signed by the npm package standardwebhooks (Webhook.sign) and by
webhook_sign_tool (src/lib/webhook.c).

usage: test_example_php.py NPM_DIR SIGN_TOOL EXAMPLE

With ASYNCEXEC_WEBHOOK_SECRET "OLD NEW" (a rotation):
  accepted (204, the event logged once, as sent): signed by the package, by the
  tool, under NEW alone, "v1,<other> v1,<NEW>", "v1a,... v1,<OLD>", a timestamp
  4 minutes old; the same notification again: 204 and not logged twice;
  refused (4xx with a plain reason, nothing logged): another secret (401), the
  valid value under another version "v2," (401), the body changed after signing
  (401), a timestamp 6 minutes old or ahead (401), each of the three headers
  missing (400), a timestamp that is not digits (400), a signed body that is not
  JSON or not an object (400), a body over 1 MiB (413), GET and PUT (405).
With NEW alone (the rotation over): OLD refused (401), NEW accepted.
With no secret: 500, nothing logged.
The seen-id directory: made with mode 0700; one owned by another user, or one that
group and others may enter, is refused (500 with a plain reason, why in PHP's log,
nothing logged as an event). The order: a PHP that dies where it stores the event
(file_put_contents disabled) answers no 204; the same notification again, to a PHP
that can store it, is then stored (the id was not marked seen before its event was).
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
import webhook_env as W  # noqa: E402


class Php:
    """php -S 127.0.0.1:PORT EXAMPLE with environment env, a port picked free and
    readiness polled (GET answers the example's 405); .port, .log (the events)."""

    def __init__(self, example, tmp, name, secret, seen=None, php_args=()):
        self.example, self.name, self.php_args = example, name, list(php_args)
        self.log = os.path.join(tmp, name + ".events")
        self.err = os.path.join(tmp, name + ".err")
        self.seen = seen or os.path.join(tmp, name + ".seen")
        self.env = dict(os.environ, ASYNCEXEC_WEBHOOK_LOG=self.log,
                        ASYNCEXEC_WEBHOOK_SEEN_DIR=self.seen)
        self.env.pop("ASYNCEXEC_WEBHOOK_SECRET", None)
        if secret is not None:
            self.env["ASYNCEXEC_WEBHOOK_SECRET"] = secret
        self.tmp, self.proc = tmp, None

    def __enter__(self):
        php = W.need("php", "php-cli")
        for attempt in range(3):    # a free port can be taken before php binds it
            self.port = W.free_port()
            with open(self.err, "a") as err:
                self.proc = subprocess.Popen(
                    [php] + self.php_args + ["-S", "127.0.0.1:%d" % self.port,
                                             self.example], cwd=self.tmp,
                    env=self.env, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
            try:
                W.wait_until(lambda: W.post(self.port, "/", method="GET", timeout=1)[0]
                             == 405, 10, "php -S (%s) ready" % self.name, self.proc)
                return self
            except W.Fatal:
                W.stop(self.proc)
                if attempt == 2:
                    with open(self.err) as f:
                        raise W.Fatal("php -S did not start:\n" + f.read())

    def __exit__(self, *exc):
        W.stop(self.proc)

    def events(self):
        """The log's lines so far, parsed."""
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []


def deliver(t, srv, what, want, body, mid, ts, sig, drop=None, method="POST"):
    """Posts one notification (without header drop, if given); checks the status and,
    for a refusal, a short plain reason. The seconds it took."""
    h = W.signed_headers(mid, ts, sig)
    if drop:
        del h[drop]
    t0 = time.monotonic()
    st, hdr, data = W.post(srv.port, "/hooks/asyncexec", body, h, method=method)
    dt = time.monotonic() - t0
    t.check("%s: %d" % (what, want), st == want,
            data if st is None else "%s %r" % (st, data[:200]))
    if st is not None and st >= 400:
        t.check("%s: a plain reason" % what,
                hdr.get("content-type", "").startswith("text/plain") and
                0 < len(data.strip()) < 200, (hdr.get("content-type"), data[:200]))
    if st == 204:
        t.check("%s: no body on 204" % what, data == b"", data[:200])
    return dt


def rotation(t, srv, dest, tool, old, new):
    """The accepted and refused cases under "OLD NEW"."""
    other = W.secret_new()
    now = int(time.time())
    accepted, refused, slowest = [], [], 0.0

    def ok(what, body, mid, ts, sig):
        nonlocal slowest
        slowest = max(slowest, deliver(t, srv, what, 204, body, mid, ts, sig))
        accepted.append((what, mid, body))

    def no(what, want, body, mid, ts, sig, **kw):
        deliver(t, srv, what, want, body, mid, ts, sig, **kw)
        refused.append((what, mid))

    def case(cid):
        return W.event(cid), W.msg_id()

    b, m = case("php-npm")
    ok("signed by the package", b, m, now, W.npm_sign(dest, old, m, now, b))
    first = (b, m, W.npm_sign(dest, old, m, now, b))
    b, m = case("php-c")
    ok("signed by the tool", b, m, now, W.c_sign(tool, old, m, now, b))
    b, m = case("php-new")
    ok("signed under NEW alone", b, m, now, W.c_sign(tool, new, m, now, b))
    b, m = case("php-two")
    ok("v1,<other> v1,<NEW>", b, m, now,
       W.npm_sign(dest, other, m, now, b) + " " + W.npm_sign(dest, new, m, now, b))
    b, m = case("php-v1a")
    ok("v1a,... v1,<OLD>", b, m, now, "v1a,AAAA " + W.c_sign(tool, old, m, now, b))
    b, m = case("php-4min")
    b = b.replace(b'"data":{', b'"data":{"meta":{},')   # logged as {}, not []
    ok("a timestamp 4 minutes old", b, m, now - 240, W.c_sign(tool, old, m, now - 240, b))
    deliver(t, srv, "the first notification again", 204, *first[:2], now, first[2])

    b, m = case("php-other")
    no("another secret", 401, b, m, now, W.npm_sign(dest, other, m, now, b))
    b, m = case("php-v2")
    no("v2,<the valid value> (another version)", 401, b, m, now,
       "v2," + W.c_sign(tool, old, m, now, b)[3:])
    b, m = case("php-changed")
    no("the body changed after signing", 401, b.replace(b"php-changed", b"php-chanGed"),
       m, now, W.c_sign(tool, old, m, now, b))
    for label, ts in (("6 minutes old", now - 360), ("6 minutes ahead", now + 360)):
        b, m = case("php-stale")
        no("a timestamp " + label, 401, b, m, ts, W.npm_sign(dest, old, m, ts, b))
    for hdr in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        b, m = case("php-missing")
        no("no " + hdr, 400, b, m, now, W.c_sign(tool, old, m, now, b), drop=hdr)
    b, m = case("php-ts")
    no("a timestamp that is not digits", 400, b, m, "1e9", W.c_sign(tool, old, m, now, b))
    for label, body in (("not JSON", b"completed!"), ("a JSON array", b"[1,2]")):
        m = W.msg_id()
        no("a signed body " + label, 400, body, m, now, W.npm_sign(dest, old, m, now, body))
    m, big = W.msg_id(), b'{"type":"x","pad":"' + b"x" * (1 << 20) + b'"}'
    no("a body over 1 MiB", 413, big, m, now, W.c_sign(tool, old, m, now, big))
    for method in ("GET", "PUT"):
        b, m = case("php-" + method)
        no(method, 405, b, m, now, W.c_sign(tool, old, m, now, b), method=method)

    ev = {e["webhookId"]: e for e in srv.events()}
    t.check("one event line per accepted notification (the repeat not again)",
            len(srv.events()) == len(accepted), len(srv.events()))
    for what, mid, body in accepted:
        e = ev.get(mid)
        t.check("%s: the event logged as sent" % what,
                e is not None and e["event"] == json.loads(body), e)
    for what, mid in refused:
        t.check("%s: not logged" % what, mid not in ev)
    print("figure: slowest 204 of the example %.3f s" % slowest)
    t.check("every 204 within 2 s", slowest < 2, slowest)


def after_rotation(t, srv, tool, old, new):
    now = int(time.time())
    b, m = W.event("php-after-old"), W.msg_id()
    deliver(t, srv, "after the rotation, OLD", 401, b, m, now, W.c_sign(tool, old, m, now, b))
    b2, m2 = W.event("php-after-new"), W.msg_id()
    deliver(t, srv, "after the rotation, NEW", 204, b2, m2, now,
            W.c_sign(tool, new, m2, now, b2))
    t.check("after the rotation: only NEW's event logged",
            [e["webhookId"] for e in srv.events()] == [m2], srv.events())


def unconfigured(t, srv, tool):
    now, key = int(time.time()), W.secret_new()
    b, m = W.event("php-unset"), W.msg_id()
    deliver(t, srv, "no secret configured", 500, b, m, now, W.c_sign(tool, key, m, now, b))
    t.check("no secret configured: nothing logged", srv.events() == [])


def seen_dir(t, tmp, tool, key):
    """The seen-id directory's mode, owner and permissions."""
    now = int(time.time())
    with Php(example_path(), tmp, "mode", key) as srv:
        b, m = W.event("php-mode"), W.msg_id()
        deliver(t, srv, "a fresh seen-id directory", 204, b, m, now,
                W.c_sign(tool, key, m, now, b))
        mode = stat.S_IMODE(os.lstat(srv.seen).st_mode)
        t.check("the seen-id directory is made with mode 0700", mode == 0o700, oct(mode))
    other = os.path.join(tmp, "other.seen")
    os.mkdir(other, 0o700)
    if os.geteuid() == 0:
        os.chown(other, 65534, 65534)
    else:
        other = "/"      # root's; not this user's
    open_dir = os.path.join(tmp, "open.seen")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o755)
    for name, d, why in (("owner", other, "is owned by uid"),
                         ("open", open_dir, "has mode 755")):
        with Php(example_path(), tmp, name, key, seen=d) as srv:
            b, m = W.event("php-" + name), W.msg_id()
            deliver(t, srv, "seen-id directory refused (%s)" % name, 500, b, m, now,
                    W.c_sign(tool, key, m, now, b))
            t.check("seen-id directory refused (%s): nothing logged" % name,
                    srv.events() == [], srv.events())
            with open(srv.err) as f:
                err = f.read()
            t.check("seen-id directory refused (%s): why in PHP's log" % name,
                    ("the seen-id directory %s %s" % (d, why)) in err, err[-600:])


def stored_before_marked(t, tmp, tool, key):
    """A PHP that dies storing the event, then the same notification to one that
    stores it: stored once, as the id was not marked before."""
    now, seen = int(time.time()), os.path.join(tmp, "crash.seen")
    b, m = W.event("php-crash"), W.msg_id()
    sig = W.c_sign(tool, key, m, now, b)
    with Php(example_path(), tmp, "crash", key, seen=seen,
             php_args=("-d", "disable_functions=file_put_contents")) as srv:
        st, _, data = W.post(srv.port, "/hooks/asyncexec", b,
                             W.signed_headers(m, now, sig))
        t.check("a PHP that dies storing the event: no 204", st != 204, (st, data[:200]))
    with Php(example_path(), tmp, "crash", key, seen=seen) as srv:
        deliver(t, srv, "the same notification again, storable", 204, b, m, now, sig)
        t.check("the event of the crash is stored on its retry",
                [e["webhookId"] for e in srv.events()] == [m], srv.events())


def example_path():
    return sys.argv[3]


def run(t):
    if len(sys.argv) != 4:
        raise W.Fatal("usage: test_example_php.py NPM_DIR SIGN_TOOL EXAMPLE")
    W.need("php", "php-cli")
    dest, tool, example = W.install(sys.argv[1]), sys.argv[2], sys.argv[3]
    old, new = W.secret_new(), W.secret_new(24)
    with tempfile.TemporaryDirectory(prefix="webhook-php.") as tmp:
        with Php(example, tmp, "rotation", old + " " + new) as srv:
            rotation(t, srv, dest, tool, old, new)
        with Php(example, tmp, "new", new) as srv:
            after_rotation(t, srv, tool, old, new)
        with Php(example, tmp, "unset", None) as srv:
            unconfigured(t, srv, tool)
        seen_dir(t, tmp, tool, new)
        stored_before_marked(t, tmp, tool, new)


if __name__ == "__main__":
    W.main("webhook_example_php", run)
