"""webhook_env.py - what the webhook tests share (Python 3, stdlib only).

  install(dir)        the pinned npm package standardwebhooks (package-lock.json)
                      installed with `npm ci` into dir, with receiver.mjs and sign.mjs
                      copied beside it; dir is returned. Serialised by a lock file, and
                      skipped when dir already holds this package-lock.json's install.
  Receiver(dir, ...)  receiver.mjs running (a context manager): .port, .records()
  c_sign / npm_sign   a webhook-signature value by webhook_sign_tool / the package
  post(...)           one HTTP request: (status, headers, body), or the exception
  Checks              counts checks, prints "N passed, N failed"

Every wait has a deadline; a missing node, npm or php is a failure with its reason.
"""
import base64
import fcntl
import hashlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NPM_FILES = ("package.json", "package-lock.json")
SCRIPTS = ("receiver.mjs", "sign.mjs")
NPM_TIMEOUT = 90


class Fatal(Exception):
    """A test cannot go on (a tool missing, a process that did not start)."""


def need(cmd, package):
    """The path of command cmd, or Fatal naming the Debian package."""
    path = shutil.which(cmd)
    if path is None:
        raise Fatal("%s is not installed (Debian package %s; scripts/lib/stack.sh "
                    "installs it)" % (cmd, package))
    return path


def install(dest):
    """npm ci of tests/webhook's lock file into dest (once per lock); dest."""
    node, npm = need("node", "nodejs"), need("npm", "npm")
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, ".lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        for f in NPM_FILES + SCRIPTS:
            shutil.copyfile(os.path.join(HERE, f), os.path.join(dest, f))
        with open(os.path.join(HERE, "package-lock.json"), "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        stamp = os.path.join(dest, ".installed")
        pkg = os.path.join(dest, "node_modules", "standardwebhooks", "package.json")
        try:
            with open(stamp) as f:
                have = f.read().strip()
        except OSError:
            have = ""
        if have == want and os.path.exists(pkg):
            return dest
        env = dict(os.environ)
        if not os.access(env.get("HOME", "/nonexistent"), os.W_OK):
            env["npm_config_cache"] = os.path.join(dest, ".npm-cache")
        try:
            p = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                               cwd=dest, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=NPM_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Fatal("npm ci in %s: no end within %d s (registry unreachable?)"
                        % (dest, NPM_TIMEOUT))
        if p.returncode != 0:
            raise Fatal("npm ci in %s failed (exit %d):\n%s%s"
                        % (dest, p.returncode, p.stdout, p.stderr))
        with open(pkg) as f:
            got = json.load(f)["version"]
        if got != "1.1.1":
            raise Fatal("npm ci installed standardwebhooks %s, not 1.1.1" % got)
        with open(stamp, "w") as f:
            f.write(want + "\n")
        print("installed standardwebhooks 1.1.1 with %s (node %s) in %s"
              % (npm, subprocess.run([node, "--version"], capture_output=True,
                                     text=True).stdout.strip(), dest))
    return dest


def secret_new(nbytes=32):
    """A fresh whsec_ secret of nbytes random key bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(nbytes)).decode()


def msg_id():
    """A fresh webhook-id."""
    return "msg_" + secrets.token_hex(12)


def _run_sign(argv, body):
    """argv + [a file holding body]: its one line of output, or Fatal."""
    with tempfile.NamedTemporaryFile(prefix="webhook-body.") as f:
        f.write(body)
        f.flush()
        p = subprocess.run(argv + [f.name], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise Fatal("%s: exit %d: %s" % (argv[0], p.returncode, p.stderr.strip()))
    return p.stdout.strip()


def c_sign(tool, secret, mid, ts, body):
    """The signature of body (bytes) by webhook_sign_tool (src/lib/webhook.c)."""
    return _run_sign([tool, secret, mid, str(ts)], body)


def npm_sign(dest, secret, mid, ts, body):
    """The signature of body (bytes) by the npm package's Webhook.sign."""
    return _run_sign([need("node", "nodejs"), os.path.join(dest, "sign.mjs"), secret,
                      mid, str(ts)], body)


def free_port():
    """A port of 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, seconds, what, proc=None):
    """Polls pred() every 50 ms until it is true; Fatal after seconds, or at once
    when proc (a Popen) has exited."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            raise Fatal("%s: the process exited (status %d) first" % (what, proc.returncode))
        time.sleep(0.05)
    raise Fatal("%s: not within %g s" % (what, seconds))


def stop(proc, seconds=5):
    """SIGTERM to proc, then its exit status (SIGKILL and None past seconds)."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


class Receiver:
    """receiver.mjs on a free port of 127.0.0.1 (installed in dest), logging to
    a file of tmp; .port once started, .records() the log's lines so far."""

    def __init__(self, dest, secret, tmp):
        self.dest, self.secret, self.tmp = dest, secret, tmp
        self.log = os.path.join(tmp, "receiver.log")
        self.ready = os.path.join(tmp, "receiver.ready")
        self.proc, self.port = None, None

    def __enter__(self):
        self.err = open(os.path.join(self.tmp, "receiver.err"), "w")
        self.proc = subprocess.Popen(
            [need("node", "nodejs"), os.path.join(self.dest, "receiver.mjs"), "--port",
             "0", "--secret", self.secret, "--log", self.log, "--ready", self.ready],
            stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err)
        try:
            wait_until(lambda: os.path.exists(self.ready), 15, "receiver.mjs ready",
                       self.proc)
        except Fatal:
            self.__exit__()
            raise
        with open(self.ready) as f:
            self.port = int(f.read())
        return self

    def stop(self):
        """SIGTERM: the exit status (None when it did not end within 5 s)."""
        return stop(self.proc)

    def __exit__(self, *exc):
        self.stop()
        self.err.close()

    def records(self):
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []


def post(port, path, body=b"", headers=None, method="POST", timeout=10):
    """One request to 127.0.0.1:port: (status, {lowercase header: value}, body), or
    (None, None, the exception) when it failed or timed out."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    except (OSError, http.client.HTTPException) as e:
        return None, None, e
    finally:
        c.close()


def signed_headers(mid, ts, sig):
    """The three Standard Webhooks headers and the content type."""
    return {"Content-Type": "application/json", "webhook-id": mid,
            "webhook-timestamp": str(ts), "webhook-signature": sig}


def event(cid="order-1", status="completed"):
    """A completion notification's body (bytes), as the daemon will send it."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return json.dumps({
        "type": "execution.completed", "timestamp": now,
        "data": {"environment": "prod", "service": "shop", "operation": "order",
                 "correlationId": cid, "status": status, "completedAt": now,
                 "statusUrl": "https://api.example.com/v1/executions/prod/shop/order/" + cid},
    }, separators=(",", ":")).encode()


class Checks:
    """Named checks: a failure prints FAILED and what was seen; done() prints the
    counts and is the exit status."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def check(self, what, ok, seen=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAILED: %s%s" % (what, ": %s" % (seen,) if seen != "" else ""),
                  file=sys.stderr)
        return ok

    def done(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        return 0 if self.failed == 0 and self.passed > 0 else 1


def main(name, body):
    """Runs body(checks) and exits with its outcome; Fatal is one failure more."""
    checks = Checks(name)
    try:
        body(checks)
    except Fatal as e:
        checks.check("FATAL", False, e)
    sys.exit(checks.done())
