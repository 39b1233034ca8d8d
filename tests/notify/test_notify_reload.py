#!/usr/bin/env python3
"""notify_reload: a SIGHUP keeps the running database settings, as asyncexec-notify(8)
says ("The database settings and notify_listen take effect at the next start").

The sender runs as a database user of its own (U, created here as root, ALL on the
schema, as the service's user) so that its connections can be told apart from every
other. Its file is changed to db_user = a user that does not exist and reloaded (SIGHUP;
the log says "configuration reloaded" and names db_user as kept). Then U's connections
are killed (as root), so the sender must connect again: it connects as U, and an
execution that ends then is delivered. A sender that took the new db_user into its
running configuration connected with it at its next connect (any lost connection,
however long after the reload): refused, nothing delivered, /readyz 503.
Then a reload that changes no database setting logs no such line. The user is dropped
after.
"""
import os
import signal
import subprocess
import sys
import time

import notify_env as ne

WAIT = 20        # s an event may take, the reconnect included


def root_sql(query):
    """Rows of one statement run as the stack's MariaDB root (its private socket)."""
    sock = ne.config_values()["db_socket"]
    r = subprocess.run(["mariadb", "--no-defaults", "-N", "-B", "-u", "root",
                        "--socket=" + sock, "-e", query], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise RuntimeError("mariadb (root): %s" % r.stderr.strip())
    return [line.split("\t") for line in r.stdout.splitlines()]


def own_user(user, tmp):
    """Creates user@localhost and @127.0.0.1 with ALL on the schema; its password file."""
    pw = os.urandom(12).hex()
    db = ne.config_values().get("db_name", "asyncexec")
    root_sql("CREATE USER '{u}'@'localhost' IDENTIFIED BY '{p}', '{u}'@'127.0.0.1' "
             "IDENTIFIED BY '{p}'; GRANT ALL PRIVILEGES ON `{d}`.* TO '{u}'@'localhost', "
             "'{u}'@'127.0.0.1'".format(u=user, p=pw, d=db))
    path = os.path.join(tmp, "db.pw")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (pw + "\n").encode())
    os.close(fd)
    return path


def connections(user):
    return [r[0] for r in root_sql("SELECT ID FROM information_schema.PROCESSLIST "
                                   "WHERE USER = '%s'" % user)]


def reload(c, snd, what):
    """SIGHUP; True once the log says the reload happened."""
    before = snd.log_text().count("configuration reloaded")
    snd.send_signal(signal.SIGHUP)
    end = time.monotonic() + 10
    while snd.log_text().count("configuration reloaded") == before and \
            time.monotonic() < end:
        time.sleep(0.05)
    return c.check("%s: reloaded" % what,
                   snd.log_text().count("configuration reloaded") > before)


def set_key(path, key, value):
    text = open(path, encoding="utf-8").read()
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith(key + " ")
             and not ln.strip().startswith(key + "=")]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines + ["%s = %s" % (key, value)]) + "\n")


def end_one(c, r, cid):
    r.submit(cid)
    items = r.claim(1)
    c.check("%s: claimed" % cid, len(items) == 1, len(items))
    for it in items:
        st, _ = r.callback(it, "complete", {"result": 1})
        c.check("%s: complete: 200" % cid, st == 200, st)


def main():
    ne.need_env()
    c = ne.Checks()
    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), os.getpid())
    user, bogus = "nrl%d" % os.getpid(), "nrlx%d" % os.getpid()
    r = ne.Route("it/nrl%s/op" % sfx, "t-nrl-%s" % sfx)
    rx = ne.Receiver()
    ne.webhook_add(r.tenant, rx.url("/ok/r"))
    snd = None
    try:
        pwf = own_user(user, tmp)
        snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                        webhook_allow_networks="127.0.0.1/32", db_user=user,
                        db_password=None, db_password_file=pwf)
        snd.start()
        end_one(c, r, "before-" + sfx)
        got = rx.wait(lambda q: q["path"] == "/ok/r", 1, WAIT)
        c.check("as its own user: delivered", len(got) == 1, len(got))
        c.check("its connection is %s's" % user, connections(user) != [])
        set_key(snd.conf, "db_user", bogus)
        if reload(c, snd, "db_user changed"):
            c.check("the log says db_user is kept until the next start",
                    "db_user changed" in snd.log_text(), snd.log_text()[-600:])
        killed = connections(user)
        for cid in killed:
            root_sql("KILL CONNECTION %s" % cid)
        # The sender may connect again at once: what must be gone are the killed ones.
        end = time.monotonic() + WAIT
        while set(killed) & set(connections(user)) and time.monotonic() < end:
            time.sleep(0.05)
        left = set(killed) & set(connections(user))
        c.check("%s's connections killed" % user, killed != [] and not left,
                "killed %s, still there %s" % (killed, sorted(left)))
        end_one(c, r, "after-" + sfx)
        got = rx.wait(lambda q: q["path"] == "/ok/r", 2, WAIT)
        c.check("after the kill: delivered (connected again as %s, not %s)"
                % (user, bogus), len(got) == 2, len(got))
        c.check("connected again as %s" % user, connections(user) != [])
        st, _ = snd.get("/readyz")
        c.check("/readyz: 200", st == 200, st)
        set_key(snd.conf, "db_user", user)
        before = snd.log_text().count("changed: the database settings")
        if reload(c, snd, "db_user as it runs"):
            c.check("no database setting changed: no such line",
                    snd.log_text().count("changed: the database settings") == before)
    finally:
        rc = snd.stop() if snd else 0
        rx.close()
        root_sql("DROP USER IF EXISTS '{u}'@'localhost', '{u}'@'127.0.0.1'"
                 .format(u=user))
    return c.done_sender(rc, snd)


if __name__ == "__main__":
    sys.exit(main())
